// Command send is `make send`: it signs a local source's sample delivery
// (infra/local/samples/<source>.json, from the corpus where there is one)
// with the source's dev-only key, as its provider would, and POSTs it to
// the local API, printing the answer.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
}

// firstID matches the first "id" member of a JSON body (a Stripe event's id
// comes first).
var firstID = regexp.MustCompile(`"id": ?"[A-Za-z]+_[A-Za-z0-9]+"`)

func run() error {
	api := flag.String("api", "http://127.0.0.1:3000", "base URL of the local API")
	srcName := flag.String("source", "stripe", "local source to sign for (a name in the sources file)")
	account := flag.String("account", "", "account path segment, if any")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	repeat := flag.Int("repeat", 1, "send the same signed delivery this many times (a provider's retries)")
	fresh := flag.Bool("new-id", false, "give a corpus body's leading id a fresh value, so it is a new event")
	flag.Parse()

	sources, err := local.LoadSources(*srcPath)
	if err != nil {
		return err
	}
	src, err := sources.Source(*srcName)
	if err != nil {
		return err
	}
	sample, err := local.LoadSample(".", src.Name)
	if err != nil {
		return err
	}
	if *fresh && sample.BodyFile != "" {
		b, err := os.ReadFile(sample.BodyFile)
		if err != nil {
			return err
		}
		loc := firstID.FindIndex(b)
		if loc == nil {
			return fmt.Errorf("%s: no leading id to replace", sample.BodyFile)
		}
		// The new id is filled in as a placeholder; the rest of the body
		// keeps its bytes.
		sample.Body = string(b[:loc[1]-1]) + "_{int}" + string(b[loc[1]-1:])
		sample.BodyFile = ""
	}
	req, err := sample.Signed(".", src, time.Now())
	if err != nil {
		return err
	}
	url := *api + "/webhooks/" + src.Name
	if *account != "" {
		url += "/" + *account
	}
	for range *repeat {
		hr, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(req.Body))
		if err != nil {
			return err
		}
		hr.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			return fmt.Errorf("%w (is `make run` running?)", err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("POST %s (%d bytes) → %s %s\n", url, len(req.Body), resp.Status, bytes.TrimSpace(out))
		if resp.StatusCode >= 300 {
			return fmt.Errorf("unexpected status %s", resp.Status)
		}
	}
	return nil
}
