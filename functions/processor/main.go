// Command processor is the processor Lambda: SQS batch → claimed, applied,
// committed events, with only the records to retry reported back.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/processorfn"
)

func main() {
	cfg, aws, log, err := app.Load(context.Background(), os.Getenv, app.ProcessorNeeds)
	if err != nil {
		fail(err)
	}
	p, err := processorfn.New(cfg, aws, log)
	if err != nil {
		fail(err)
	}
	lambda.Start(p.Handle)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "processor:", err)
	os.Exit(1)
}
