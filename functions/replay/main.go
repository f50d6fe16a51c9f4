// Command replay is the operators' Lambda, invoked from the console's Test
// tab, the CLI or `make replay`, and by the sweep's schedule: drain-dlq,
// replay, sweep, inspect and the outbox review actions of package replay,
// each a dry run unless the event says "dry_run": false.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/replayfn"
)

func main() {
	cfg, aws, log, err := app.Load(context.Background(), os.Getenv, app.ReplayNeeds)
	if err != nil {
		fail(err)
	}
	r := replayfn.New(cfg, aws, log)
	lambda.Start(r.Invoke)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "replay:", err)
	os.Exit(1)
}
