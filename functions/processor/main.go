// Command processor is the processor Lambda: SQS batch → claimed, applied,
// committed events, with only the records to retry reported back.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

func main() {
	cfg, err := config.Load(os.Getenv, app.ProcessorNeeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "processor:", err)
		os.Exit(1)
	}
	aws, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "processor: aws config:", err)
		os.Exit(1)
	}
	p, err := app.Processor(cfg, aws, obs.NewLogger(os.Stdout, cfg.LogLevel))
	if err != nil {
		fmt.Fprintln(os.Stderr, "processor:", err)
		os.Exit(1)
	}
	lambda.Start(p.Handle)
}
