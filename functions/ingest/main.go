// Command ingest is the ingest Lambda: API Gateway HTTP API → verified,
// stored, queued webhook.
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
	cfg, err := config.Load(os.Getenv, app.IngestNeeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
	aws, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest: aws config:", err)
		os.Exit(1)
	}
	h, err := app.Ingest(cfg, aws, obs.NewLogger(os.Stdout, cfg.LogLevel))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
	lambda.Start(h.HandleV2)
}
