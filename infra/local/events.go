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
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
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
	// EventReplayDryRun and EventReplayDrain preview and run a drain of
	// the DLQ; ReplayEvents has them all.
	EventReplayDryRun = "replay-drain-dlq-dry-run.json"
	EventReplayDrain  = "replay-drain-dlq.json"
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
	body, key, invoice, err := SampleStripe(root)
	if err != nil {
		return nil, err
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

	msg, err := inbox.EncodeMessage(key)
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
	for _, e := range ReplayEvents(key, invoice) {
		b, err := json.MarshalIndent(e.Request, "", "  ")
		if err != nil {
			return nil, err
		}
		out[e.File] = append(b, '\n')
	}
	for name, v := range map[string]any{
		EventIngest:    ingest,
		EventProcessor: batch,
	} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		out[name] = append(b, '\n')
	}
	return out, nil
}

// SampleStripe reads the sample Stripe event (SampleStripeEvent under
// root): its body, its key and the invoice it pays.
func SampleStripe(root string) ([]byte, inbox.Key, string, error) {
	body, err := os.ReadFile(filepath.Join(root, SampleStripeEvent))
	if err != nil {
		return nil, inbox.Key{}, "", err
	}
	var id struct {
		ID   string `json:"id"`
		Data struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &id); err != nil || id.ID == "" || id.Data.Object.ID == "" {
		return nil, inbox.Key{}, "", fmt.Errorf("%s: no event or invoice id", SampleStripeEvent)
	}
	return body, inbox.Key{Source: "stripe", EventID: id.ID}, id.Data.Object.ID, nil
}

// SampleReplayEvents are ReplayEvents for the sample Stripe event.
func SampleReplayEvents(root string) ([]ReplayEvent, error) {
	_, key, invoice, err := SampleStripe(root)
	if err != nil {
		return nil, err
	}
	return ReplayEvents(key, invoice), nil
}

// TestEventSchema is the content of the template's shareable test events
// for the replay function (an AWS::EventSchemas::Schema in the
// lambda-testevent-schemas registry, the one the Lambda console's Test tab
// reads): an OpenAPI 3 document whose Event schema is the replay request
// and whose examples are evs, by name. `go run ./infra/local/cmd/events
// -schema` prints it for template.yaml; template_test compares the two.
func TestEventSchema(evs []ReplayEvent) ([]byte, error) {
	props := map[string]any{}
	t := reflect.TypeOf(replay.Request{})
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.String:
			props[name] = map[string]any{"type": "string"}
		case reflect.Bool:
			props[name] = map[string]any{"type": "boolean"}
		case reflect.Int:
			props[name] = map[string]any{"type": "integer"}
		case reflect.Slice:
			props[name] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		default:
			return nil, fmt.Errorf("replay.Request.%s: no schema type for %s", f.Name, typ)
		}
	}
	examples := map[string]any{}
	for _, e := range evs {
		var v any
		b, err := json.Marshal(e.Request)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			return nil, err
		}
		examples[e.Name] = map[string]any{"value": v}
	}
	doc := map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"version": "1.0.0", "title": "Event"},
		"paths":   map[string]any{},
		"components": map[string]any{
			"schemas":  map[string]any{"Event": map[string]any{"type": "object", "additionalProperties": false, "properties": props}},
			"examples": examples,
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// ReplayEvent is one of the replay function's test events: a file in
// events/ and, under Name, a shareable test event in the template (the
// Lambda console's Test tab).
type ReplayEvent struct {
	File, Name string
	Request    replay.Request
}

// ReplayEvents are the replay function's test events, every action and
// its common variants, naming key as the event they inspect or replay and
// the receipt of invoiceID (in key's scope) as the outbox row they
// resolve or resend.
// The template's shareable test events are the same (template_test
// compares them).
func ReplayEvents(key inbox.Key, invoiceID string) []ReplayEvent {
	yes, no := true, false
	k := key.String()
	// The row's key as stored (and listed by the outbox review): in the
	// event's scope.
	row := effects.ScopedKey(inbox.ScopeOf(key.Source, key), effects.KeyOf(effects.Fact{Kind: handlers.InvoicePaidKind, Key: invoiceID}.ID(), handlers.ReceiptTarget))
	return []ReplayEvent{
		{EventReplayDryRun, "drain-dlq-preview", replay.Request{Action: replay.ActionDrainDLQ, DryRun: &yes, Max: 100}},
		{EventReplayDrain, "drain-dlq", replay.Request{Action: replay.ActionDrainDLQ, DryRun: &no, Max: 100}},
		{"replay-drain-dlq-stripe-since.json", "drain-dlq-stripe-since", replay.Request{Action: replay.ActionDrainDLQ, DryRun: &yes, Max: 100, Source: key.Source, ReceivedFrom: "2026-12-01T00:00:00Z"}},
		{"replay-by-key.json", "replay-by-key", replay.Request{Action: replay.ActionReplay, DryRun: &yes, EventKeys: []string{k}}},
		{"replay-failed-since.json", "replay-failed-since", replay.Request{Action: replay.ActionReplay, DryRun: &yes, Status: string(inbox.StatusFailed), ReceivedFrom: "2026-12-01T00:00:00Z", Max: 100}},
		{"replay-dead.json", "replay-dead", replay.Request{Action: replay.ActionReplay, DryRun: &yes, Status: string(inbox.StatusDead), Max: 100}},
		{"replay-stranded.json", "replay-received", replay.Request{Action: replay.ActionReplay, DryRun: &yes, Status: string(inbox.StatusReceived), Max: 100}},
		{"replay-force.json", "replay-processed-force", replay.Request{Action: replay.ActionReplay, DryRun: &yes, EventKeys: []string{k}, Force: true}},
		{EventReplaySweep, "sweep", replay.Request{Action: replay.ActionSweep, DryRun: &no, Max: 1000}},
		{"replay-sweep-preview.json", "sweep-preview", replay.Request{Action: replay.ActionSweep, DryRun: &yes, Max: 1000}},
		{"replay-inspect.json", "inspect", replay.Request{Action: replay.ActionInspect, EventKey: k}},
		{"replay-inspect-payload.json", "inspect-with-payload", replay.Request{Action: replay.ActionInspect, EventKey: k, IncludePayload: true}},
		{"replay-outbox.json", "outbox-for-review", replay.Request{Action: replay.ActionOutbox, Max: 100}},
		{"replay-outbox-resolve.json", "outbox-resolve", replay.Request{Action: replay.ActionOutboxResolve, DryRun: &yes, OutboxKey: row, Note: "receipt confirmed sent by hand"}},
		{"replay-outbox-resend.json", "outbox-resend", replay.Request{Action: replay.ActionOutboxResend, DryRun: &yes, OutboxKey: row}},
	}
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
