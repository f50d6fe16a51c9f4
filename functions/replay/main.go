// Command replay is the operators' Lambda, invoked from the console or the
// CLI: it drains the dead-letter queue back to the main queue, as a dry run
// unless the event says "dry_run": false.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

func main() {
	cfg, err := config.Load(os.Getenv, app.ReplayNeeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
	aws, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay: aws config:", err)
		os.Exit(1)
	}
	r := app.Replay(cfg, aws, obs.NewLogger(os.Stdout, cfg.LogLevel))
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (replay.Summary, error) {
		req, err := replay.DecodeRequest(payload)
		if err != nil {
			return replay.Summary{}, err
		}
		return r.Handle(ctx, req)
	})
}
