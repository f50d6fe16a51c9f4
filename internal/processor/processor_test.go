package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// fakeStore is a func-field fake for the processor's logic; the real
// store's semantics are tested against DynamoDB in store_moto_test.go.
type fakeStore struct {
	claim    func(k inbox.Key) (inbox.Event, error)
	complete func(plan effects.Plan, outcome inbox.Outcome) error
	fails    []inbox.Status
	failErr  error
}

func (f *fakeStore) Claim(_ context.Context, k inbox.Key, _ string, _, _ time.Time) (inbox.Event, error) {
	return f.claim(k)
}

func (f *fakeStore) Complete(_ context.Context, _ inbox.Event, _ string, plan effects.Plan, outcome inbox.Outcome, _ time.Time) error {
	return f.complete(plan, outcome)
}

func (f *fakeStore) Fail(_ context.Context, _ inbox.Key, _ string, status inbox.Status, _ string, _ time.Time) error {
	f.fails = append(f.fails, status)
	return f.failErr
}

type fakeDLQ struct {
	sent []string
	err  error
}

func (d *fakeDLQ) Send(_ context.Context, body string) error {
	if d.err != nil {
		return d.err
	}
	d.sent = append(d.sent, body)
	return nil
}

var key = inbox.Key{Source: "stripe", EventID: "evt_1"}

func message(tb testing.TB, id string, receives int) events.SQSMessage {
	tb.Helper()
	body, err := inbox.EncodeMessage(key)
	if err != nil {
		tb.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receives)}}
}

func claimed(inbox.Key) (inbox.Event, error) {
	return inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing}, nil
}

func newProcessor(tb testing.TB, store *fakeStore, dlq *fakeDLQ, h effects.Handler) (*Processor, *bytes.Buffer) {
	tb.Helper()
	logs := &bytes.Buffer{}
	p, err := New(Config{
		Store: store, DeadLetters: dlq, MaxReceiveCount: 3,
		Routes: Routes{"stripe": {"invoice.paid": h}},
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p, logs
}

func planOf(ids ...string) effects.Plan {
	var p effects.Plan
	for _, id := range ids {
		p.Records = append(p.Records, effects.Record{Kind: "k", Key: id})
	}
	return p
}

func failures(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func TestRecordOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name        string
		receives    int
		claim       func(inbox.Key) (inbox.Event, error)
		handler     effects.Handler
		complete    func(effects.Plan, inbox.Outcome) error
		dlqErr      error
		wantRetry   bool
		wantFails   []inbox.Status
		wantDLQ     int
		wantOutcome string
	}{
		{name: "applied", receives: 1, claim: claimed,
			handler:  func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a"), nil },
			complete: func(p effects.Plan, o inbox.Outcome) error { return nil }, wantOutcome: "applied"},
		{name: "already processed is acknowledged", receives: 1,
			claim:       func(inbox.Key) (inbox.Event, error) { return inbox.Event{}, inbox.ErrAlreadyProcessed },
			wantOutcome: "already_processed"},
		{name: "claimed elsewhere is retried", receives: 1,
			claim:     func(inbox.Key) (inbox.Event, error) { return inbox.Event{}, inbox.ErrClaimed },
			wantRetry: true, wantOutcome: "claimed_elsewhere"},
		{name: "orphan message is kept for the DLQ", receives: 1,
			claim:     func(inbox.Key) (inbox.Event, error) { return inbox.Event{}, inbox.ErrNotFound },
			wantRetry: true, wantOutcome: "orphan"},
		{name: "store outage on claim is retried", receives: 1,
			claim:     func(inbox.Key) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			wantRetry: true, wantOutcome: "retry"},
		{name: "transient handler error is retried", receives: 1, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { return effects.Plan{}, errBoom },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}, wantOutcome: "retry"},
		{name: "transient error on the last receive marks dead", receives: 3, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { return effects.Plan{}, errBoom },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusDead}, wantOutcome: "dead"},
		{name: "permanent error goes to the DLQ at once", receives: 1, claim: claimed,
			handler: func(context.Context, inbox.Event) (effects.Plan, error) {
				return effects.Plan{}, effects.Permanent(errBoom)
			},
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantOutcome: "dead"},
		{name: "permanent error with DLQ down is retried", receives: 1, claim: claimed, dlqErr: inbox.ErrUnavailable,
			handler: func(context.Context, inbox.Event) (effects.Plan, error) {
				return effects.Plan{}, effects.Permanent(errBoom)
			},
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusDead}, wantOutcome: "retry"},
		{name: "invalid plan is permanent", receives: 1, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a", "a"), nil },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantOutcome: "dead"},
		{name: "no handler is ignored", receives: 1,
			claim: func(inbox.Key) (inbox.Event, error) {
				return inbox.Event{Key: key, Kind: "stripe", Type: "customer.created"}, nil
			},
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if o != inbox.OutcomeIgnored || len(p.Records) != 0 {
					return fmt.Errorf("got %v %v", o, p)
				}
				return nil
			}, wantOutcome: "ignored"},
		{name: "lease lost at commit is retried", receives: 1, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a"), nil },
			complete:  func(effects.Plan, inbox.Outcome) error { return inbox.ErrLeaseLost },
			wantRetry: true, wantOutcome: "retry"},
		{name: "commit outage is recorded and retried", receives: 1, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a"), nil },
			complete:  func(effects.Plan, inbox.Outcome) error { return inbox.ErrUnavailable },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}, wantOutcome: "retry"},
		{name: "effect written by another event", receives: 1, claim: claimed,
			handler: func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a"), nil },
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if len(p.Records) == 1 {
					return &effects.ExistsError{IDs: []string{"k#a"}}
				}
				if o != inbox.OutcomeDuplicateEffect {
					return fmt.Errorf("outcome %s", o)
				}
				return nil
			}, wantOutcome: "duplicate_effect"},
		{name: "one of two effects exists", receives: 1, claim: claimed,
			handler: func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a", "b"), nil },
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if len(p.Records) == 2 {
					return &effects.ExistsError{IDs: []string{"k#a"}}
				}
				if p.Records[0].Key != "b" || o != inbox.OutcomeApplied {
					return fmt.Errorf("got %v %s", p, o)
				}
				return nil
			}, wantOutcome: "applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{claim: tt.claim, complete: tt.complete}
			dlq := &fakeDLQ{err: tt.dlqErr}
			p, logs := newProcessor(t, store, dlq, tt.handler)
			resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", tt.receives)}})
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if got := len(resp.BatchItemFailures) == 1; got != tt.wantRetry {
				t.Errorf("retry: got %v, want %v", got, tt.wantRetry)
			}
			if fmt.Sprint(store.fails) != fmt.Sprint(tt.wantFails) {
				t.Errorf("recorded failures: got %v, want %v", store.fails, tt.wantFails)
			}
			if len(dlq.sent) != tt.wantDLQ {
				t.Errorf("sent to DLQ: got %d, want %d", len(dlq.sent), tt.wantDLQ)
			}
			if want := `"outcome":"` + tt.wantOutcome + `"`; !strings.Contains(logs.String(), want) {
				t.Errorf("logs: got %s, want %s", logs, want)
			}
		})
	}
}

// TestBatchReportsOnlyFailedRecords: one poison message in a batch is
// reported alone; its neighbours are acknowledged.
func TestBatchReportsOnlyFailedRecords(t *testing.T) {
	store := &fakeStore{claim: claimed, complete: func(effects.Plan, inbox.Outcome) error { return nil }}
	p, _ := newProcessor(t, store, &fakeDLQ{}, func(context.Context, inbox.Event) (effects.Plan, error) { return planOf("a"), nil })
	batch := events.SQSEvent{Records: []events.SQSMessage{
		message(t, "m1", 1),
		{MessageId: "m2", Body: "not a message", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
		{MessageId: "m3", Body: `{"key":{"source":"stripe","event_id":""}}`},
		message(t, "m4", 1),
	}}
	resp, err := p.Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(failures(resp)); got != "[m2 m3]" {
		t.Errorf("batch failures: got %s, want [m2 m3]", got)
	}
}

func TestLeaseFollowsDeadline(t *testing.T) {
	p, _ := newProcessor(t, &fakeStore{}, &fakeDLQ{}, nil)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(30*time.Second))
	defer cancel()
	if got, want := p.leaseUntil(ctx, now), now.Add(30*time.Second+leaseMargin); !got.Equal(want) {
		t.Errorf("with deadline: got %v, want %v", got, want)
	}
	if got, want := p.leaseUntil(context.Background(), now), now.Add(time.Minute); !got.Equal(want) {
		t.Errorf("without deadline: got %v, want %v", got, want)
	}
}
