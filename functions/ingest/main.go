// Command ingest is the ingest Lambda: API Gateway HTTP API → verified,
// stored, queued webhook.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/ingestfn"
)

func main() {
	cfg, aws, log, err := app.Load(context.Background(), os.Getenv, app.IngestNeeds)
	if err != nil {
		fail(err)
	}
	h, err := ingestfn.New(cfg, aws, log, nil)
	if err != nil {
		fail(err)
	}
	lambda.Start(h.HandleV2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ingest:", err)
	os.Exit(1)
}
