// Command send is `make send`: it signs a local source's sample delivery
// (infra/local/samples/<source>.json, from the corpus where there is one),
// or any body (-body), with the source's dev-only key, as its provider
// would, and POSTs it to the local API, printing the answer.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
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
	bodyPath := flag.String("body", "", "send this file's bytes, exactly, in place of the sample's body (with the sample's headers)")
	typ := flag.String("type", "", "the event type, for kinds that read it from a header (github, gitlab)")
	var headers headerFlags
	flag.Var(&headers, "header", "a header to set, 'Name: value' (repeatable; after the sample's and -type)")
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
	if *bodyPath != "" {
		b, err := os.ReadFile(*bodyPath)
		if err != nil {
			return err
		}
		if *fresh {
			return errors.New("-new-id changes the sample's body: with -body, give the file a new id yourself")
		}
		sample.Raw = b
	}
	if *typ != "" {
		h, ok := typeHeaders[src.Kind]
		if !ok {
			return fmt.Errorf("-type: kind %s reads the event type from the body, not a header (or set one with -header)", src.Kind)
		}
		sample.Headers = withHeader(sample.Headers, h, *typ)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		sample.Headers = withHeader(sample.Headers, strings.TrimSpace(name), strings.TrimSpace(value))
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
		var answer struct {
			EventID  string   `json:"event_id"`
			EventIDs []string `json:"event_ids"`
		}
		if json.Unmarshal(out, &answer) == nil {
			ids := answer.EventIDs
			if len(ids) == 0 && answer.EventID != "" {
				ids = []string{answer.EventID}
			}
			for _, id := range ids {
				k := inbox.Key{Source: src.Name, Account: *account, EventID: id}.String()
				fmt.Printf("event key: %s   inspect: make replay ARGS='{\"action\":\"inspect\",\"event_key\":\"%s\"}'\n", k, k)
			}
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("unexpected status %s", resp.Status)
		}
	}
	return nil
}

// typeHeaders names, per kind, the header that carries the event type.
var typeHeaders = map[string]string{
	"github": signature.GitHubEventHeader,
	"gitlab": signature.GitLabEventHeader,
}

// headerFlags is the repeatable -header flag.
type headerFlags []string

func (h *headerFlags) String() string { return strings.Join(*h, ", ") }

func (h *headerFlags) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want 'Name: value', got %q", v)
	}
	*h = append(*h, v)
	return nil
}

// withHeader returns hs with name set to value, replacing any spelling of
// name already there.
func withHeader(hs map[string]string, name, value string) map[string]string {
	out := map[string]string{}
	for k, v := range hs {
		if !strings.EqualFold(k, name) {
			out[k] = v
		}
	}
	out[name] = value
	return out
}
