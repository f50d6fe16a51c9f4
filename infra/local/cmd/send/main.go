// Command send is `make send`: it signs a sample webhook shipped in the
// repository with a local source's dev-only secret and POSTs it to the
// local API, printing the answer.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
}

// stripeID matches the event id at the top of a Stripe event file.
var stripeID = regexp.MustCompile(`"id": ?"evt_[A-Za-z0-9]+"`)

func run() error {
	api := flag.String("api", "http://127.0.0.1:3000", "base URL of the local API")
	srcName := flag.String("source", "stripe", "local source to sign for")
	account := flag.String("account", "", "account path segment, if any")
	file := flag.String("file", "testdata/corpus/stripe/invoice.paid.json", "payload to send")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	fresh := flag.Bool("new-id", false, "replace the event id with a fresh one, so the send is a new event rather than a duplicate")
	flag.Parse()

	sources, err := local.LoadSources(*srcPath)
	if err != nil {
		return err
	}
	src, err := sources.Source(*srcName)
	if err != nil {
		return err
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	header := http.Header{"Content-Type": {"application/json"}}
	switch src.Kind {
	case "stripe":
		if *fresh {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			body = stripeID.ReplaceAll(body, fmt.Appendf(nil, `"id": "evt_%s"`, hex.EncodeToString(b)))
		}
		header.Set(signature.StripeHeader, signature.SignStripe(body, []byte(src.Secrets[0]), time.Now()))
	default:
		return fmt.Errorf("source %q: kind %q has no local signer yet", src.Name, src.Kind)
	}
	url := *api + "/webhooks/" + src.Name
	if *account != "" {
		url += "/" + *account
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w (is `make run` running?)", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Printf("POST %s (%s, %d bytes) → %s %s\n", url, *file, len(body), resp.Status, bytes.TrimSpace(out))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("unexpected status %s", resp.Status)
	}
	return nil
}
