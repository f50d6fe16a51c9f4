package local

import (
	"bytes"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// Sample events for `sam local invoke`, the Lambda console and the Runtime
// Interface Emulator tests, written by `make events`.
const (
	// EventIngest is an HTTP API event carrying a signed Stripe
	// invoice.paid. Its signature expires after the source's tolerance
	// (5 minutes): regenerate it before invoking.
	EventIngest = "ingest-stripe-invoice-paid.json"
	// EventProcessor is an SQS batch: the message of that invoice.paid
	// event, and one message that is not ours (copied to the DLQ and
	// acknowledged).
	EventProcessor = "processor-sqs-batch.json"
	// EventReplayDryRun and EventReplayDrain are the replay console events.
	EventReplayDryRun = "replay-dry-run.json"
	EventReplayDrain  = "replay-drain.json"
	// EventReplaySweep is the sweep as the template's schedule runs it.
	EventReplaySweep = "replay-sweep.json"

	// SampleStripeEvent is the payload the ingest event carries.
	SampleStripeEvent = "testdata/corpus/stripe/invoice.paid.json"
	// PoisonMessageID is the id of the processor event's foreign message.
	PoisonMessageID = "a2b7c0de-0000-4000-8000-000000000002"
)

// SampleEvents renders the events for the repository rooted at root,
// signing the ingest event with the stripe source's first secret at now.
func SampleEvents(root string, sources SourcesFile, now time.Time) (map[string][]byte, error) {
	src, err := sources.Source("stripe")
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(filepath.Join(root, SampleStripeEvent))
	if err != nil {
		return nil, err
	}
	var id struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &id); err != nil || id.ID == "" {
		return nil, fmt.Errorf("%s: no event id", SampleStripeEvent)
	}

	r := httptest.NewRequest(http.MethodPost, "https://0123456789.execute-api.us-east-1.amazonaws.com/webhooks/stripe", bytes.NewReader(body))
	r.RemoteAddr = "203.0.113.10:44312"
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	r.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	r.Header.Set(signature.StripeHeader, signature.SignStripe(body, []byte(src.Secrets[0]), now))
	ingest, ok := EventFromRequest(r, body, now)
	if !ok {
		return nil, errors.New("sample request does not match a route")
	}
	ingest.RequestContext.RequestID = "Sx1mPhLvIAMEVKQ="

	msg, err := inbox.EncodeMessage(inbox.Key{Source: "stripe", EventID: id.ID})
	if err != nil {
		return nil, err
	}
	arn := "arn:aws:sqs:us-east-1:123456789012:webhook-inbox-main"
	record := func(id, body string) events.SQSMessage {
		return events.SQSMessage{
			MessageId: id, ReceiptHandle: "AQEB" + id, Body: body, Md5OfBody: fmt.Sprintf("%x", md5.Sum([]byte(body))),
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    "1764500000000",
				"SenderId":                         "AROAEXAMPLE:webhook-inbox-ingest",
				"ApproximateFirstReceiveTimestamp": "1764500000100",
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource:       "aws:sqs", EventSourceARN: arn, AWSRegion: "us-east-1",
		}
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{
		record("a2b7c0de-0000-4000-8000-000000000001", msg),
		record(PoisonMessageID, `{"hello":"not a webhook-inbox message"}`),
	}}

	out := map[string][]byte{}
	for name, v := range map[string]any{
		EventIngest:       ingest,
		EventProcessor:    batch,
		EventReplayDryRun: map[string]any{"action": "drain-dlq", "dry_run": true, "limit": 100},
		EventReplayDrain:  map[string]any{"action": "drain-dlq", "dry_run": false, "limit": 100},
		EventReplaySweep:  map[string]any{"action": "sweep", "dry_run": false, "limit": 1000},
	} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		out[name] = append(b, '\n')
	}
	return out, nil
}

// WriteSampleEvents writes SampleEvents into dir.
func WriteSampleEvents(dir, root string, sources SourcesFile, now time.Time) error {
	evs, err := SampleEvents(root, sources, now)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range evs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
