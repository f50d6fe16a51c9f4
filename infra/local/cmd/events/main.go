// Command events is `make events`: it writes the sample events into
// .local/events/ (ignored), signing the ingest event now with the local
// stripe secret (a Stripe signature is only accepted for 5 minutes, so
// regenerate before invoking). The committed events/ is not touched: a
// documented command leaves the tree clean. `-dir events` rewrites the
// committed ones after a change to what they hold (a test compares them).
// With -schema it prints the replay events as the template's shareable
// test events.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

func main() {
	dir := flag.String("dir", ".local/events", "directory to write the events to (events: the committed ones)")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	schema := flag.Bool("schema", false, "print the replay function's shareable test events for template.yaml instead")
	flag.Parse()
	if *schema {
		evs, err := local.SampleReplayEvents(".")
		var b []byte
		if err == nil {
			b, err = local.TestEventSchema(evs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "events:", err)
			os.Exit(1)
		}
		fmt.Println(string(b))
		return
	}
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
