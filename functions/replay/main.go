// Command replay is the operators' Lambda, invoked from the console's Test
// tab, the CLI or `make replay`, and by the sweep's schedule: drain-dlq,
// replay, sweep, inspect and the outbox review actions of package replay,
// each a dry run unless the event says "dry_run": false.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/replayfn"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

func main() {
	cfg, aws, log, err := app.Load(context.Background(), os.Getenv, app.ReplayNeeds)
	if err != nil {
		fail(err)
	}
	r := replayfn.New(cfg, aws, log)
	// The payload is decoded strictly: a misspelt "dry_run" is an error, not
	// a silent dry run.
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (replay.Summary, error) {
		req, err := replay.DecodeRequest(payload)
		if err != nil {
			return replay.Summary{}, err
		}
		return r.Handle(ctx, req)
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "replay:", err)
	os.Exit(1)
}
