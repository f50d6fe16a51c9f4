// Command events is `make events`: it writes the sample events in events/,
// signing the ingest event now with the local stripe secret (a Stripe
// signature is only accepted for 5 minutes, so regenerate before invoking).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

func main() {
	dir := flag.String("dir", "events", "directory to write the events to")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	flag.Parse()
	sources, err := local.LoadSources(*srcPath)
	if err == nil {
		err = local.WriteSampleEvents(*dir, ".", sources, time.Now())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "events:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s/ (the ingest event's signature is valid for 5 minutes)\n", *dir)
}
