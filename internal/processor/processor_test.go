package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// fakeStore is a func-field fake for the processor's logic; the real
// store's semantics are tested against DynamoDB in store_db_test.go and
// in inboxstore.
type fakeStore struct {
	claim    func(k inbox.Key, owner string) (inbox.Event, error)
	complete func(plan effects.Plan, outcome inbox.Outcome) error
	fail     func(f inbox.Failure) (inbox.Event, error)
	// get answers the consistent read after a failure whose outcome is
	// unknown; nil is an unreachable store.
	get func() (inbox.Event, error)
	// peek and completeFirst are the first attempt's read and commit
	// (record.first); a nil peek is an unreachable store, so the record
	// takes the claim's path.
	peek          func() (inbox.Event, error)
	completeFirst func(plan effects.Plan, outcome inbox.Outcome) error

	mu    sync.Mutex
	fails []inbox.Failure
	// dead is set when a Fail to dead succeeded: the event is dead.
	dead bool
}

func (f *fakeStore) Status(context.Context, inbox.Key, time.Time) (inbox.Event, error) {
	if f.get == nil {
		return inbox.Event{}, inbox.ErrUnavailable
	}
	return f.get()
}

func (f *fakeStore) Peek(context.Context, inbox.Key, time.Time) (inbox.Event, error) {
	if f.peek == nil {
		return inbox.Event{}, inbox.ErrUnavailable
	}
	return f.peek()
}

func (f *fakeStore) CompleteFirst(ctx context.Context, _ inbox.Event, plan effects.Plan, outcome inbox.Outcome, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.completeFirst == nil {
		return errors.New("unexpected first commit")
	}
	return f.completeFirst(plan, outcome)
}

func (f *fakeStore) Claim(_ context.Context, k inbox.Key, owner string, _, _ time.Time) (inbox.Event, error) {
	return f.claim(k, owner)
}

func (f *fakeStore) Complete(ctx context.Context, _ inbox.Event, _ string, plan effects.Plan, outcome inbox.Outcome, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.complete == nil {
		return errors.New("unexpected commit")
	}
	return f.complete(plan, outcome)
}

func (f *fakeStore) Fail(_ context.Context, _ inbox.Key, fl inbox.Failure, _ time.Time) (inbox.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails = append(f.fails, fl)
	ev, err := inbox.Event{Key: key, Status: fl.Status}, error(nil)
	if f.fail != nil {
		ev, err = f.fail(fl)
	}
	if err == nil && fl.Status == inbox.StatusDead {
		f.dead = true
	}
	return ev, err
}

func (f *fakeStore) statuses() []inbox.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []inbox.Status
	for _, fl := range f.fails {
		out = append(out, fl.Status)
	}
	return out
}

type fakeDLQ struct {
	mu   sync.Mutex
	sent []string
	err  error
}

func (d *fakeDLQ) Send(_ context.Context, body string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.sent = append(d.sent, body)
	return nil
}

// fakeVisibility records the delay set on each receipt handle.
type fakeVisibility struct {
	mu     sync.Mutex
	delays map[string]time.Duration
}

func (v *fakeVisibility) Delay(_ context.Context, receiptHandle string, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.delays == nil {
		v.delays = map[string]time.Duration{}
	}
	v.delays[receiptHandle] = d
	return nil
}

func (v *fakeVisibility) get(receiptHandle string) (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	d, ok := v.delays[receiptHandle]
	return d, ok
}

var key = inbox.Key{Source: "stripe", EventID: "evt_1"}

func message(tb testing.TB, id string, receives int) events.SQSMessage {
	tb.Helper()
	return messageFor(tb, id, key, receives)
}

func messageFor(tb testing.TB, id string, k inbox.Key, receives int) events.SQSMessage {
	tb.Helper()
	body, err := inbox.EncodeMessage(k)
	if err != nil {
		tb.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receives)}}
}

func claimed(k inbox.Key, _ string) (inbox.Event, error) {
	return inbox.Event{Key: k, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing}, nil
}

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type harness struct {
	store *fakeStore
	dlq   *fakeDLQ
	vis   *fakeVisibility
	logs  *bytes.Buffer
	p     *Processor
	// outbox settles every event's outbox unless told otherwise.
	outbox *fakeOutbox
}

// fakeOutbox answers Deliver with deliver, or settles.
type fakeOutbox struct {
	deliver func(k inbox.Key, rows []string) (outbox.Settlement, error)

	mu    sync.Mutex
	calls [][]string
	gens  []int
}

func (f *fakeOutbox) Deliver(_, _ context.Context, k inbox.Key, gen int, rows []string, _ string) (outbox.Settlement, error) {
	f.mu.Lock()
	f.calls = append(f.calls, rows)
	f.gens = append(f.gens, gen)
	f.mu.Unlock()
	if f.deliver == nil {
		return outbox.Settlement{Settled: true}, nil
	}
	return f.deliver(k, rows)
}

func newHarness(tb testing.TB, store *fakeStore, h effects.Handler, opts ...func(*Config)) *harness {
	tb.Helper()
	hs := &harness{store: store, dlq: &fakeDLQ{}, vis: &fakeVisibility{}, outbox: &fakeOutbox{}, logs: &bytes.Buffer{}}
	cfg := Config{
		Store: store, Outbox: hs.outbox, DeadLetters: hs.dlq, Visibility: hs.vis, MaxReceiveCount: 3,
		Routes: Routes{"stripe": {"invoice.paid": h}},
		Logger: syncLogger(hs.logs),
		Now:    func() time.Time { return testNow },
		Rand:   func() float64 { return 0.5 },
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	hs.p = p
	return hs
}

// assertDelay checks the delay set on a message: want, or none when want
// is negative.
func (h *harness) assertDelay(tb testing.TB, receipt string, want time.Duration) {
	tb.Helper()
	d, set := h.vis.get(receipt)
	switch {
	case want < 0 && set:
		tb.Errorf("delay: got %s, want none", d)
	case want >= 0 && (!set || d != want):
		tb.Errorf("delay: got %s (set %v), want %s", d, set, want)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func syncLogger(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(&lockedWriter{w: b}, nil))
}

func planOf(ids ...string) effects.Plan {
	var p effects.Plan
	for _, id := range ids {
		p.Facts = append(p.Facts, effects.Fact{Kind: "k", Key: id})
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

func handlerOf(plan effects.Plan, err error) effects.Handler {
	return func(context.Context, inbox.Event) (effects.Plan, error) { return plan, err }
}

func claimErr(ev inbox.Event, err error) func(inbox.Key, string) (inbox.Event, error) {
	return func(inbox.Key, string) (inbox.Event, error) { return ev, err }
}

func TestRecordOutcomes(t *testing.T) {
	errBoom := errors.New("boom")
	applied := func(effects.Plan, inbox.Outcome) error { return nil }
	liveLease := inbox.Event{Key: key, Status: inbox.StatusProcessing, LeaseOwner: "other", LeaseUntil: testNow.Add(40 * time.Second)}
	// Base 30 s, receive 1: a delay in [15 s, 30 s]; Rand 0.5 gives 22.5 s.
	const backoff1 = 22500 * time.Millisecond
	tests := []struct {
		name     string
		receives int
		claim    func(inbox.Key, string) (inbox.Event, error)
		handler  effects.Handler
		complete func(effects.Plan, inbox.Outcome) error
		fail     func(inbox.Failure) (inbox.Event, error)
		get      func() (inbox.Event, error)
		dlqErr   error
		noCount  bool // the record carries no ApproximateReceiveCount

		wantRetry   bool
		wantFails   []inbox.Status
		wantDLQ     int
		wantDelay   time.Duration // -1: no delay set
		wantOutcome string
	}{
		{name: "applied", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete: applied, wantDelay: -1, wantOutcome: "applied"},
		{name: "an empty plan is ignored", receives: 1, claim: claimed, handler: handlerOf(effects.Plan{}, nil),
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if o != inbox.OutcomeIgnored {
					return fmt.Errorf("outcome %s", o)
				}
				return nil
			}, wantDelay: -1, wantOutcome: "ignored"},
		{name: "no handler is ignored", receives: 1,
			claim: claimErr(inbox.Event{Key: key, Kind: "stripe", Type: "customer.created"}, nil),
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if o != inbox.OutcomeIgnored || len(p.Facts) != 0 {
					return fmt.Errorf("got %v %v", o, p)
				}
				return nil
			}, wantDelay: -1, wantOutcome: "ignored"},
		{name: "already processed is acknowledged", receives: 1,
			claim: claimErr(inbox.Event{}, inbox.ErrAlreadyProcessed), wantDelay: -1, wantOutcome: "already_processed"},
		{name: "claimed elsewhere comes back after the lease", receives: 1,
			claim: claimErr(liveLease, inbox.ErrClaimed), wantRetry: true, wantDelay: 41 * time.Second, wantOutcome: "claimed_elsewhere"},
		{name: "claimed elsewhere on the last receive is acknowledged, not sent to the DLQ", receives: 3,
			claim: claimErr(liveLease, inbox.ErrClaimed), wantDelay: -1, wantOutcome: "claimed_elsewhere"},
		{name: "orphan is acknowledged", receives: 1,
			claim: claimErr(inbox.Event{}, inbox.ErrNotFound), wantDelay: -1, wantOutcome: "orphan"},
		{name: "orphan on the last receive is acknowledged, not sent to the DLQ", receives: 3,
			claim: claimErr(inbox.Event{}, inbox.ErrNotFound), wantDelay: -1, wantOutcome: "orphan"},
		{name: "dead by another message is acknowledged", receives: 1,
			claim: claimErr(inbox.Event{Key: key, Status: inbox.StatusDead, DeadBy: "m0"}, inbox.ErrDead), wantDelay: -1, wantOutcome: "already_dead"},
		{name: "dead by this message whose DLQ copy failed is copied now", receives: 2,
			claim: claimErr(inbox.Event{Key: key, Status: inbox.StatusDead, DeadBy: "m1"}, inbox.ErrDead), wantDLQ: 1, wantDelay: -1, wantOutcome: "already_dead"},
		{name: "store outage on claim is recorded and backed off", receives: 1,
			claim: claimErr(inbox.Event{}, inbox.ErrUnavailable), wantRetry: true,
			wantFails: []inbox.Status{inbox.StatusFailed}, wantDelay: backoff1, wantOutcome: "retry"},
		{name: "store outage on claim on the last receive marks dead", receives: 3,
			claim:     claimErr(inbox.Event{}, inbox.ErrUnavailable),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "store down on the last receive: reported for the redrive, the outcome unknown", receives: 3,
			claim:     claimErr(inbox.Event{}, inbox.ErrUnavailable),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "redrive_unconfirmed"},
		{name: "dead written but its answer lost: the read finds it dead by this message, copied", receives: 3,
			claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			get:       func() (inbox.Event, error) { return inbox.Event{Key: key, Status: inbox.StatusDead, DeadBy: "m1"}, nil },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "already_dead"},
		{name: "dead not written, the read finds it unfinished: left to the sweep", receives: 3,
			claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			get:       func() (inbox.Event, error) { return inbox.Event{Key: key, Status: inbox.StatusFailed}, nil },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "left_to_sweep"},
		{name: "permanent error, dead not confirmed before the last receive: backed off", receives: 1,
			claim: claimed, handler: handlerOf(effects.Plan{}, effects.Permanent(errBoom)),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: backoff1, wantOutcome: "retry"},
		{name: "no receive count: never reported, not made dead for a transient error, left to the sweep", noCount: true, claim: claimed,
			handler:   handlerOf(effects.Plan{}, errBoom),
			wantFails: []inbox.Status{inbox.StatusFailed}, wantDelay: -1, wantOutcome: "left_to_sweep"},
		{name: "no receive count, permanent error: dead", noCount: true, claim: claimed,
			handler:   handlerOf(effects.Plan{}, effects.Permanent(errBoom)),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "a failed event not due yet: this copy waits for its backoff", receives: 1,
			claim:     claimErr(inbox.Event{Key: key, Status: inbox.StatusFailed, DueAt: testNow.Add(100 * time.Second), RetryAt: testNow.Add(100 * time.Second)}, inbox.ErrNotDue),
			wantRetry: true, wantDelay: 101 * time.Second, wantOutcome: "not_due"},
		{name: "a failed event not due, on this copy's last receive: acknowledged", receives: 3,
			claim:     claimErr(inbox.Event{Key: key, Status: inbox.StatusFailed, DueAt: testNow.Add(100 * time.Second), RetryAt: testNow.Add(100 * time.Second)}, inbox.ErrNotDue),
			wantDelay: -1, wantOutcome: "not_due"},
		{name: "dead write's answer lost, the read finds it processed: acknowledged", receives: 3,
			claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			get:       func() (inbox.Event, error) { return inbox.Event{Key: key, Status: inbox.StatusProcessed}, nil },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "already_processed"},
		{name: "dead write's answer lost, the read finds no event: acknowledged", receives: 3,
			claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrUnavailable },
			get:       func() (inbox.Event, error) { return inbox.Event{}, inbox.ErrNotFound },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "orphan"},
		{name: "dead write refused as invalid: not written, left to the sweep on the last receive", receives: 3,
			claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrInvalid },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "left_to_sweep"},
		{name: "transient handler error is backed off", receives: 1, claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}, wantDelay: backoff1, wantOutcome: "retry"},
		{name: "backoff grows with the receive count", receives: 2, claim: claimed, handler: handlerOf(effects.Plan{}, errBoom),
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}, wantDelay: 45 * time.Second, wantOutcome: "retry"},
		{name: "transient error on the last receive marks dead and copies to the DLQ", receives: 3, claim: claimed,
			handler:   handlerOf(effects.Plan{}, errBoom),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "last receive, but a live lease appeared: acknowledged", receives: 3, claim: claimed,
			handler:   handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return liveLease, inbox.ErrClaimed },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "claimed_elsewhere"},
		{name: "last receive, processed meanwhile: acknowledged", receives: 3, claim: claimed,
			handler:   handlerOf(effects.Plan{}, errBoom),
			fail:      func(inbox.Failure) (inbox.Event, error) { return inbox.Event{}, inbox.ErrAlreadyProcessed },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: -1, wantOutcome: "already_processed"},
		{name: "permanent error goes to the DLQ at once", receives: 1, claim: claimed,
			handler:   handlerOf(effects.Plan{}, effects.Permanent(errBoom)),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "permanent error with the DLQ down comes back at once", receives: 1, claim: claimed, dlqErr: inbox.ErrUnavailable,
			handler:   handlerOf(effects.Plan{}, effects.Permanent(errBoom)),
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusDead}, wantDelay: 0, wantOutcome: "dead"},
		{name: "invalid plan is permanent", receives: 1, claim: claimed, handler: handlerOf(planOf("a", "a"), nil),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "a panicking handler is permanent", receives: 1, claim: claimed,
			handler:   func(context.Context, inbox.Event) (effects.Plan, error) { panic("bug") },
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "a commit the store refuses as invalid is dead at once", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete: func(effects.Plan, inbox.Outcome) error {
				return fmt.Errorf("complete: %w: ValidationException", inbox.ErrInvalid)
			},
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "a claim the store refuses as invalid is dead at once", receives: 1,
			claim:     claimErr(inbox.Event{}, fmt.Errorf("claim: %w: key too long", inbox.ErrInvalid)),
			wantFails: []inbox.Status{inbox.StatusDead}, wantDLQ: 1, wantDelay: -1, wantOutcome: "dead"},
		{name: "lease lost at commit is backed off", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete:  func(effects.Plan, inbox.Outcome) error { return inbox.ErrLeaseLost },
			wantRetry: true, wantDelay: backoff1, wantOutcome: "lease_lost"},
		{name: "lease lost at commit on the last receive is acknowledged", receives: 3, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrLeaseLost }, wantDelay: -1, wantOutcome: "lease_lost"},
		{name: "commit found processed (an earlier answer lost) is acknowledged", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrAlreadyProcessed }, wantDelay: -1, wantOutcome: "already_processed"},
		{name: "commit outage is recorded and backed off", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete:  func(effects.Plan, inbox.Outcome) error { return inbox.ErrUnavailable },
			wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}, wantDelay: backoff1, wantOutcome: "retry"},
		{name: "effect written by another event", receives: 1, claim: claimed, handler: handlerOf(planOf("a"), nil),
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if len(p.Facts) == 1 {
					return &effects.RefusedError{Exists: []string{"fact#k#a"}}
				}
				if o != inbox.OutcomeDuplicateEffect {
					return fmt.Errorf("outcome %s", o)
				}
				return nil
			}, wantDelay: -1, wantOutcome: "duplicate_effect"},
		{name: "one of two effects exists", receives: 1, claim: claimed, handler: handlerOf(planOf("a", "b"), nil),
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if len(p.Facts) == 2 {
					return &effects.RefusedError{Exists: []string{"fact#k#a"}}
				}
				if p.Facts[0].Key != "b" || o != inbox.OutcomeApplied {
					return fmt.Errorf("got %v %s", p, o)
				}
				return nil
			}, wantDelay: -1, wantOutcome: "applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{claim: tt.claim, complete: tt.complete, fail: tt.fail, get: tt.get}
			h := newHarness(t, store, tt.handler)
			h.dlq.err = tt.dlqErr
			m := message(t, "m1", tt.receives)
			if tt.noCount {
				m.Attributes = nil
			}
			resp, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if got := len(resp.BatchItemFailures) == 1; got != tt.wantRetry {
				t.Errorf("retry: got %v, want %v", got, tt.wantRetry)
			}
			if got := store.statuses(); fmt.Sprint(got) != fmt.Sprint(tt.wantFails) {
				t.Errorf("recorded failures: got %v, want %v", got, tt.wantFails)
			}
			if len(h.dlq.sent) != tt.wantDLQ {
				t.Errorf("sent to DLQ: got %d, want %d", len(h.dlq.sent), tt.wantDLQ)
			}
			h.assertDelay(t, "rh-m1", tt.wantDelay)
			if want := `"outcome":"` + tt.wantOutcome + `"`; !strings.Contains(h.logs.String(), want) {
				t.Errorf("logs: got %s, want %s", h.logs, want)
			}
			// The invariant: a message reported failed on its last receive
			// goes to the DLQ, so its event must be dead (made dead here, or
			// found dead by this message), unless the store could not say
			// (then the event is unfinished, for the sweep, or dead).
			if (tt.receives == 3 || tt.noCount) && len(resp.BatchItemFailures) > 0 && !store.dead &&
				!strings.Contains(h.logs.String(), `"outcome":"redrive_unconfirmed"`) {
				t.Errorf("a failure on the last receive for an event not dead")
			}
		})
	}
}

// TestFailureRecordsTheMessage: a dead event names the message that killed
// it, and a failed one the time its message is due back.
func TestFailureRecordsTheMessage(t *testing.T) {
	store := &fakeStore{claim: claimed}
	h := newHarness(t, store, handlerOf(effects.Plan{}, errors.New("boom")))
	if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1), message(t, "m2", 3)}}); err != nil {
		t.Fatal(err)
	}
	byStatus := map[inbox.Status]inbox.Failure{}
	for _, f := range store.fails {
		byStatus[f.Status] = f
	}
	if f := byStatus[inbox.StatusFailed]; !f.RetryAt.Equal(testNow.Add(22500*time.Millisecond)) || f.Cause != "boom" || f.Owner == "" {
		t.Errorf("failed: got %+v", f)
	}
	if f := byStatus[inbox.StatusDead]; f.MessageID != "m2" || f.Cause != LastReceivePrefix+"boom" {
		t.Errorf("dead: got %+v, want the last receive named", f)
	}

	// A permanent error makes it dead on the first receive, and says so.
	store = &fakeStore{claim: claimed}
	h = newHarness(t, store, handlerOf(effects.Plan{}, effects.Permanent(errors.New("no such plan"))))
	if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m3", 1)}}); err != nil {
		t.Fatal(err)
	}
	if len(store.fails) != 1 || store.fails[0].Status != inbox.StatusDead || store.fails[0].Cause != PermanentPrefix+"no such plan" {
		t.Errorf("permanent: got %+v, want one dead failure saying permanent", store.fails)
	}
}

// TestPoisonGoesToTheDLQ: messages that are not ours are copied to the DLQ
// and acknowledged; their neighbours are processed.
func TestPoisonGoesToTheDLQ(t *testing.T) {
	store := &fakeStore{claim: claimed, complete: func(effects.Plan, inbox.Outcome) error { return nil }}
	h := newHarness(t, store, handlerOf(planOf("a"), nil))
	batch := events.SQSEvent{Records: []events.SQSMessage{
		message(t, "m1", 1),
		{MessageId: "m2", Body: "not a message", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
		{MessageId: "m3", Body: `{"key":{"source":"stripe","event_id":""}}`},
		message(t, "m4", 1),
	}}
	resp, err := h.p.Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); len(got) != 0 {
		t.Errorf("batch failures: got %v, want none", got)
	}
	if got := fmt.Sprint(h.dlq.sent); got != `[not a message {"key":{"source":"stripe","event_id":""}}]` && got != `[{"key":{"source":"stripe","event_id":""}} not a message]` {
		t.Errorf("DLQ: got %s", got)
	}
	h.dlq.err = errors.New("dlq down")
	resp, _ = h.p.Handle(context.Background(), events.SQSEvent{Records: batch.Records[1:2]})
	if got := fmt.Sprint(failures(resp)); got != "[m2]" {
		t.Errorf("poison with the DLQ down: got %s, want [m2] (kept for the redrive)", got)
	}
}

// TestConcurrency: records of a batch run Concurrency at a time, never more.
func TestConcurrency(t *testing.T) {
	const conc, n = 4, 12
	var inFlight, peak atomic.Int32
	entered := make(chan struct{}, n)
	release := make(chan struct{})
	handler := func(ctx context.Context, ev inbox.Event) (effects.Plan, error) {
		now := inFlight.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		inFlight.Add(-1)
		return planOf(ev.Key.EventID), nil
	}
	store := &fakeStore{claim: claimed, complete: func(effects.Plan, inbox.Outcome) error { return nil }}
	h := newHarness(t, store, handler, func(c *Config) { c.Concurrency = conc })
	var recs []events.SQSMessage
	for i := range n {
		recs = append(recs, messageFor(t, fmt.Sprintf("m%d", i), inbox.Key{Source: "stripe", EventID: fmt.Sprintf("evt_%d", i)}, 1))
	}
	done := make(chan events.SQSEventResponse)
	go func() {
		resp, _ := h.p.Handle(context.Background(), events.SQSEvent{Records: recs})
		done <- resp
	}()
	// conc handlers are in at once before any is released.
	for range conc {
		<-entered
	}
	close(release)
	resp := <-done
	if got := peak.Load(); got != conc {
		t.Errorf("peak concurrency: got %d, want %d", got, conc)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures: got %v", resp.BatchItemFailures)
	}
}

// TestDeadlineCutsOff: a batch of 50 with a 2 s deadline and a handler that
// would run for a minute. Handle returns before the deadline; the handlers
// it started are cancelled and commit nothing; every record is reported for
// retry, none lost; on the last receive, none is reported (its event is not
// dead) and none is marked dead.
func TestDeadlineCutsOff(t *testing.T) {
	for _, receives := range []int{1, 3} {
		t.Run(fmt.Sprintf("receive %d", receives), func(t *testing.T) {
			var started, cancelled atomic.Int32
			handler := func(ctx context.Context, ev inbox.Event) (effects.Plan, error) {
				started.Add(1)
				select {
				case <-ctx.Done():
					cancelled.Add(1)
					// Even marked permanent: a cut-off is no fault of the
					// event's.
					return effects.Plan{}, effects.Permanent(ctx.Err())
				case <-time.After(time.Minute):
					return planOf("late"), nil
				}
			}
			commits := atomic.Int32{}
			store := &fakeStore{claim: claimed, complete: func(effects.Plan, inbox.Outcome) error { commits.Add(1); return nil }}
			h := newHarness(t, store, handler, func(c *Config) { c.Now = time.Now })
			var recs []events.SQSMessage
			for i := range 50 {
				recs = append(recs, messageFor(t, fmt.Sprintf("m%d", i), inbox.Key{Source: "stripe", EventID: fmt.Sprintf("evt_%d", i)}, receives))
			}
			deadline := time.Now().Add(2 * time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			resp, err := h.p.Handle(ctx, events.SQSEvent{Records: recs})
			if err != nil {
				t.Fatal(err)
			}
			if !time.Now().Before(deadline) {
				t.Errorf("Handle returned after the deadline")
			}
			if commits.Load() != 0 {
				t.Errorf("commits: got %d, want 0", commits.Load())
			}
			if started.Load() != DefaultConcurrency || cancelled.Load() != started.Load() {
				t.Errorf("handlers: %d started, %d cancelled; want %d and all", started.Load(), cancelled.Load(), DefaultConcurrency)
			}
			wantFailures := 50
			if receives == 3 {
				wantFailures = 0
			}
			if got := len(resp.BatchItemFailures); got != wantFailures {
				t.Errorf("failures: got %d, want %d", got, wantFailures)
			}
			// Cut off by the invocation's own deadline is no fault of the
			// event's: released, due at once on the last receive, never made
			// dead.
			if len(store.fails) != DefaultConcurrency {
				t.Errorf("recorded failures: got %d, want %d (the started ones)", len(store.fails), DefaultConcurrency)
			}
			for _, f := range store.fails {
				if f.Status != inbox.StatusFailed {
					t.Errorf("recorded %s", f.Status)
				}
				if !strings.Contains(f.Cause, "deadline margin") || !f.Refund {
					t.Errorf("cause %q, refund %v: want the deadline margin named and the attempt refunded", f.Cause, f.Refund)
				}
				if receives == 3 && f.RetryAt.After(time.Now()) {
					t.Errorf("last receive: due at %v, want at once for the sweep", f.RetryAt)
				}
			}
			if len(h.dlq.sent) != 0 {
				t.Errorf("DLQ: got %d, want none", len(h.dlq.sent))
			}
		})
	}
}

// TestStuckHandlerIsReported: a handler that ignores its context does not
// hold the batch response past the deadline. It is reported for retry; on
// its last receive it is acknowledged, its event unfinished for the sweep,
// unless the record had begun writing its event dead: then the event may be
// dead without its DLQ copy, and the record is reported for SQS's redrive.
func TestStuckHandlerIsReported(t *testing.T) {
	tests := []struct {
		name         string
		receives     int
		inDeadWrite  bool // stuck in the dead write, not in the handler
		wantFailures string
		wantOutcome  string
	}{
		{"first receive", 1, false, "[m1]", "unfinished"},
		{"last receive", 3, false, "[]", "left_to_sweep"},
		{"last receive, in the dead write", 3, true, "[m1]", "unfinished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stuck := make(chan struct{})
			defer close(stuck)
			store := &fakeStore{claim: claimed}
			handler := func(context.Context, inbox.Event) (effects.Plan, error) {
				<-stuck
				return effects.Plan{}, nil
			}
			if tt.inDeadWrite {
				handler = handlerOf(effects.Plan{}, errors.New("boom"))
				store.fail = func(inbox.Failure) (inbox.Event, error) {
					<-stuck
					return inbox.Event{}, nil
				}
			}
			h := newHarness(t, store, handler, func(c *Config) { c.Now = time.Now })
			deadline := time.Now().Add(time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			resp, _ := h.p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", tt.receives)}})
			if !time.Now().Before(deadline) {
				t.Errorf("Handle returned after the deadline")
			}
			if got := fmt.Sprint(failures(resp)); got != tt.wantFailures {
				t.Errorf("failures: got %s, want %s", got, tt.wantFailures)
			}
			if !strings.Contains(h.logs.String(), `"outcome":"`+tt.wantOutcome+`"`) {
				t.Errorf("logs: %s", h.logs)
			}
		})
	}
}

// TestAttemptsBudget: an event claimed more often than MaxAttempts (over
// all its messages) since it was stored or last revived is made dead
// without running its handler again.
func TestAttemptsBudget(t *testing.T) {
	tests := []struct {
		name              string
		attempts, revived int
		wantRun           bool
	}{
		{"at the budget", 9, 0, true},
		{"over the budget", 10, 0, false},
		{"over it in all, within it since a revive", 15, 10, true},
		{"over it since a revive", 20, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := 0
			handler := func(context.Context, inbox.Event) (effects.Plan, error) { ran++; return planOf("a"), nil }
			store := &fakeStore{
				claim:    claimErr(inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing, Attempts: tt.attempts, RevivedAttempts: tt.revived}, nil),
				complete: func(effects.Plan, inbox.Outcome) error { return nil },
			}
			h := newHarness(t, store, handler) // MaxReceiveCount 3: a budget of 9
			resp, _ := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}})
			if len(resp.BatchItemFailures) != 0 {
				t.Errorf("failures: %v", resp.BatchItemFailures)
			}
			if got := ran == 1; got != tt.wantRun {
				t.Fatalf("handler ran %d times, want run %v", ran, tt.wantRun)
			}
			if tt.wantRun {
				return
			}
			if len(store.fails) != 1 || store.fails[0].Status != inbox.StatusDead || !strings.Contains(store.fails[0].Cause, "over the budget of 9") || len(h.dlq.sent) != 1 {
				t.Errorf("got failures %+v and %d DLQ copies, want dead by the budget and copied", store.fails, len(h.dlq.sent))
			}
		})
	}
}

// TestOutage: a 30-minute store outage on a fake clock, the message coming
// back after each delay the processor sets. With the default backoff and
// MaxReceiveCount, the event is never marked dead, even when every jitter
// draw is the shortest, and is processed once the store answers.
func TestOutage(t *testing.T) {
	for _, draw := range []float64{0, 0.5, 0.999} {
		t.Run(fmt.Sprint(draw), func(t *testing.T) {
			now := testNow
			outageEnd := now.Add(30 * time.Minute)
			store := &fakeStore{
				claim: func(k inbox.Key, o string) (inbox.Event, error) {
					if now.Before(outageEnd) {
						return inbox.Event{}, inbox.ErrUnavailable
					}
					return claimed(k, o)
				},
				complete: func(effects.Plan, inbox.Outcome) error { return nil },
				fail: func(inbox.Failure) (inbox.Event, error) {
					if now.Before(outageEnd) {
						return inbox.Event{}, inbox.ErrUnavailable
					}
					return inbox.Event{}, nil
				},
			}
			h := newHarness(t, store, handlerOf(planOf("a"), nil), func(c *Config) {
				c.MaxReceiveCount = 10
				c.Now = func() time.Time { return now }
				c.Rand = func() float64 { return draw }
			})
			for receive := 1; ; receive++ {
				if receive > 10 {
					t.Fatal("the message reached the DLQ")
				}
				resp, _ := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", receive)}})
				if len(resp.BatchItemFailures) == 0 {
					if !strings.Contains(h.logs.String(), `"outcome":"applied"`) {
						t.Fatalf("acknowledged without being applied: %s", h.logs)
					}
					t.Logf("applied on receive %d at +%s", receive, now.Sub(testNow))
					break
				}
				d, ok := h.vis.get("rh-m1")
				if !ok {
					t.Fatal("no delay set")
				}
				now = now.Add(d)
			}
			for _, f := range store.fails {
				if f.Status == inbox.StatusDead {
					t.Errorf("marked dead during the outage")
				}
			}
		})
	}
}

func TestWindow(t *testing.T) {
	lo, hi := Window(DefaultRetryBase, DefaultRetryCap, 10)
	if lo != 5505*time.Second || hi != 11010*time.Second {
		t.Errorf("window: got %s..%s, want 1h31m45s..3h3m30s", lo, hi)
	}
}

// TestOwnersAreUnique: without a Lambda request id, two invocations (two
// local workers) never share a lease owner; with one, the owner carries it.
func TestOwnersAreUnique(t *testing.T) {
	var mu sync.Mutex
	var owners []string
	store := &fakeStore{claim: func(k inbox.Key, owner string) (inbox.Event, error) {
		mu.Lock()
		owners = append(owners, owner)
		mu.Unlock()
		return inbox.Event{}, inbox.ErrAlreadyProcessed
	}}
	h := newHarness(t, store, nil)
	batch := events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}
	_, _ = h.p.Handle(context.Background(), batch)
	_, _ = h.p.Handle(context.Background(), batch)
	_, _ = h.p.Handle(lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"}), batch)
	if len(owners) != 3 || owners[0] == owners[1] || owners[2] != "req-1/m1/0" {
		t.Errorf("owners: got %q", owners)
	}
	// SQS may deliver one message twice in a batch: two records, two owners.
	owners = nil
	_, _ = h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1), message(t, "m1", 1)}})
	if len(owners) != 2 || owners[0] == owners[1] {
		t.Errorf("one message twice in a batch: owners %q", owners)
	}
}

func TestLease(t *testing.T) {
	h := newHarness(t, &fakeStore{}, nil)
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(30*time.Second))
	defer cancel()
	inv := h.p.invocation(ctx)
	if got, want := inv.leaseUntil(now), now.Add(30*time.Second+leaseMargin); !got.Equal(want) {
		t.Errorf("with deadline: got %v, want %v", got, want)
	}
	if got, want := inv.stop, now.Add(25*time.Second); got.Sub(want).Abs() > 100*time.Millisecond {
		t.Errorf("stop: got %v, want %v", got, want)
	}
	if got, want := h.p.invocation(context.Background()).leaseUntil(now), now.Add(time.Minute); !got.Equal(want) {
		t.Errorf("without deadline: got %v, want %v", got, want)
	}
}

func TestNewRejects(t *testing.T) {
	base := Config{Store: &fakeStore{}, Outbox: &fakeOutbox{}, DeadLetters: &fakeDLQ{}, Visibility: &fakeVisibility{}, Routes: Routes{}, Logger: slog.New(slog.DiscardHandler), MaxReceiveCount: 1}
	for name, mod := range map[string]func(*Config){
		"no visibility": func(c *Config) { c.Visibility = nil },
		"no outbox":     func(c *Config) { c.Outbox = nil },
		"no receives":   func(c *Config) { c.MaxReceiveCount = 0 },
		"base below 1s": func(c *Config) { c.RetryBase = time.Millisecond },
		"cap over 12h":  func(c *Config) { c.RetryCap = 13 * time.Hour },
		"concurrency":   func(c *Config) { c.Concurrency = -1 },
		"attempts":      func(c *Config) { c.MaxReceiveCount, c.MaxAttempts = 3, 2 },
	} {
		c := base
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(base); err != nil {
		t.Errorf("defaults: %v", err)
	}
	// A cap below the base, which template.yaml accepts: every backoff is
	// the cap.
	c := base
	c.RetryBase, c.RetryCap, c.Rand = time.Minute, 5*time.Second, func() float64 { return 1 }
	p, err := New(c)
	if err != nil {
		t.Fatalf("cap below base: %v", err)
	}
	for n := 1; n <= 3; n++ {
		if d := p.backoff(message(t, "m", n)); d != 5*time.Second {
			t.Errorf("cap below base, receive %d: backoff %s, want the cap", n, d)
		}
	}
}

// TestOutboxAfterCommit: the rows a commit wrote are delivered after it;
// an outbox that does not settle brings the message back when its rows are
// due, or, on the last receive, is left to the sweep — never to the DLQ,
// the event being processed. A redelivery of a processed event whose
// outbox did not settle delivers it.
func TestOutboxAfterCommit(t *testing.T) {
	inv := effects.Fact{Kind: "invoice_paid", Key: "in_1"}
	member := effects.Update{Entity: "membership", Key: "cus_1", Set: map[string]any{"paid_through": 1}, Order: &effects.Order{Seq: 1}, After: inv.ID()}
	receipt := effects.Outbound{Target: "receipt", Key: effects.KeyOf(inv.ID(), "receipt"), Body: []byte(`{}`), Of: inv.ID()}
	notice := effects.Outbound{Target: "notice", Key: effects.KeyOf(member.ID(), "notice"), Body: []byte(`{}`), Of: member.ID()}
	audit := effects.Outbound{Target: "audit", Key: "evt_1/audit", Body: []byte(`{}`)}
	plan := effects.Plan{Facts: []effects.Fact{inv}, Updates: []effects.Update{member}, Outbound: []effects.Outbound{receipt, notice, audit}}
	// stored is the rows' keys as a commit stores them, in the event's
	// scope: what the outbox is handed after it.
	stored := func(keys ...string) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = effects.ScopedKey(inbox.ScopeOf("stripe", inbox.Key{}), k)
		}
		return out
	}
	settled := func(inbox.Key, []string) (outbox.Settlement, error) { return outbox.Settlement{Settled: true}, nil }
	unsettled := func(inbox.Key, []string) (outbox.Settlement, error) {
		return outbox.Settlement{Due: testNow.Add(time.Minute)}, nil
	}
	pendingEvent := inbox.Event{Key: key, Status: inbox.StatusProcessed, OutboxPending: true, OutboxRows: []string{receipt.Key}}
	refuseOnce := func(r *effects.RefusedError) func(effects.Plan, inbox.Outcome) error {
		first := true
		return func(effects.Plan, inbox.Outcome) error {
			if first {
				first = false
				return r
			}
			return nil
		}
	}
	tests := []struct {
		name     string
		receives int
		claim    func(inbox.Key, string) (inbox.Event, error)
		complete func(effects.Plan, inbox.Outcome) error
		get      func() (inbox.Event, error)
		deliver  func(inbox.Key, []string) (outbox.Settlement, error)
		plan     *effects.Plan // the handler's, if not plan
		fail     func(inbox.Failure) (inbox.Event, error)

		wantRows    [][]string
		wantFails   int
		wantRetry   bool
		wantDelay   time.Duration // -1: none
		wantOutcome string
		wantOutbox  string
	}{
		{name: "every row delivered after the commit", receives: 1, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return nil }, deliver: settled,
			wantRows: [][]string{stored(receipt.Key, notice.Key, audit.Key)}, wantDelay: -1, wantOutcome: "applied", wantOutbox: "settled"},
		{name: "a duplicate fact takes its update and their rows with it", receives: 1, claim: claimed,
			complete: refuseOnce(&effects.RefusedError{Exists: []string{inv.ID()}}), deliver: settled,
			wantRows: [][]string{stored(audit.Key)}, wantDelay: -1, wantOutcome: "applied", wantOutbox: "settled"},
		{name: "a stale update takes its row with it", receives: 1, claim: claimed,
			complete: refuseOnce(&effects.RefusedError{Stale: []string{member.ID()}}), deliver: settled,
			wantRows: [][]string{stored(receipt.Key, audit.Key)}, wantDelay: -1, wantOutcome: "applied", wantOutbox: "settled"},
		{name: "an update refused with the fact it belongs to is that fact's duplicate, not stale", receives: 1, claim: claimed,
			complete:  refuseOnce(&effects.RefusedError{Exists: []string{inv.ID(), audit.ID()}, Stale: []string{member.ID()}}),
			wantDelay: -1, wantOutcome: "duplicate_effect"},
		{name: "a stale update alone: stale, its row not delivered", receives: 1, claim: claimed,
			plan:      &effects.Plan{Updates: []effects.Update{{Entity: "subscription", Key: "sub_1", Set: map[string]any{"a": 1}, Order: &effects.Order{Seq: 1}}}, Outbound: []effects.Outbound{{Target: "notice", Key: "n", Body: []byte(`{}`), Of: "entity#subscription#sub_1"}}},
			complete:  refuseOnce(&effects.RefusedError{Stale: []string{"entity#subscription#sub_1"}}),
			wantDelay: -1, wantOutcome: "stale"},
		{name: "everything a duplicate: duplicate_effect", receives: 1, claim: claimed,
			complete:  refuseOnce(&effects.RefusedError{Exists: []string{inv.ID(), audit.ID()}}),
			wantDelay: -1, wantOutcome: "duplicate_effect"},
		{name: "unsettled: back when the rows are due", receives: 1, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return nil }, deliver: unsettled,
			wantRows: [][]string{stored(receipt.Key, notice.Key, audit.Key)}, wantRetry: true, wantDelay: 61 * time.Second, wantOutcome: "applied", wantOutbox: "pending"},
		{name: "unsettled on the last receive: acknowledged for the sweep", receives: 3, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return nil }, deliver: unsettled,
			wantRows: [][]string{stored(receipt.Key, notice.Key, audit.Key)}, wantDelay: -1, wantOutcome: "applied", wantOutbox: "pending"},
		{name: "the store failing under the deliverer: back later", receives: 1, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return nil },
			deliver: func(inbox.Key, []string) (outbox.Settlement, error) {
				return outbox.Settlement{Due: testNow}, inbox.ErrUnavailable
			},
			wantRows: [][]string{stored(receipt.Key, notice.Key, audit.Key)}, wantRetry: true, wantDelay: time.Second, wantOutcome: "applied", wantOutbox: "pending"},
		{name: "a redelivery of a processed event with an unsettled outbox delivers it", receives: 2,
			claim: claimErr(pendingEvent, inbox.ErrAlreadyProcessed), deliver: settled,
			wantRows: [][]string{{receipt.Key}}, wantDelay: -1, wantOutcome: "already_processed", wantOutbox: "settled"},
		{name: "a redelivery of a processed event with a settled outbox does nothing", receives: 2,
			claim:     claimErr(inbox.Event{Key: key, Status: inbox.StatusProcessed, OutboxRows: []string{receipt.Key}}, inbox.ErrAlreadyProcessed),
			wantDelay: -1, wantOutcome: "already_processed"},
		{name: "a commit that landed, its answer lost as an outage: the failure write finds it processed and delivers", receives: 1, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrUnavailable },
			fail:     func(inbox.Failure) (inbox.Event, error) { return pendingEvent, inbox.ErrAlreadyProcessed }, deliver: settled,
			wantRows: [][]string{{receipt.Key}}, wantFails: 1, wantDelay: -1, wantOutcome: "already_processed", wantOutbox: "settled"},
		{name: "the same on the last receive: the dead write finds it processed and delivers", receives: 3, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrUnavailable },
			fail:     func(inbox.Failure) (inbox.Event, error) { return pendingEvent, inbox.ErrAlreadyProcessed }, deliver: settled,
			wantRows: [][]string{{receipt.Key}}, wantFails: 1, wantDelay: -1, wantOutcome: "already_processed", wantOutbox: "settled"},
		{name: "a commit whose answer was lost: the stored event names its rows", receives: 1, claim: claimed,
			complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrAlreadyProcessed },
			get:      func() (inbox.Event, error) { return pendingEvent, nil }, deliver: settled,
			wantRows: [][]string{{receipt.Key}}, wantDelay: -1, wantOutcome: "already_processed", wantOutbox: "settled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{claim: tt.claim, complete: tt.complete, get: tt.get, fail: tt.fail}
			p := plan
			if tt.plan != nil {
				p = *tt.plan
			}
			h := newHarness(t, store, handlerOf(p, nil))
			h.outbox.deliver = tt.deliver
			if tt.deliver == nil {
				h.outbox.deliver = func(inbox.Key, []string) (outbox.Settlement, error) {
					return outbox.Settlement{}, errors.New("unexpected delivery")
				}
			}
			resp, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", tt.receives)}})
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if fmt.Sprint(h.outbox.calls) != fmt.Sprint(tt.wantRows) {
				t.Errorf("delivered: got %v, want %v", h.outbox.calls, tt.wantRows)
			}
			if got := len(resp.BatchItemFailures) == 1; got != tt.wantRetry {
				t.Errorf("retry: got %v, want %v", got, tt.wantRetry)
			}
			if len(h.dlq.sent) != 0 || len(store.fails) != tt.wantFails {
				t.Errorf("got DLQ %v and failure writes %v, want no DLQ and %d: the event is processed", h.dlq.sent, store.fails, tt.wantFails)
			}
			h.assertDelay(t, "rh-m1", tt.wantDelay)
			logs := h.logs.String()
			if want := `"outcome":"` + tt.wantOutcome + `"`; !strings.Contains(logs, want) {
				t.Errorf("logs: got %s, want %s", logs, want)
			}
			if tt.wantOutbox != "" && !strings.Contains(logs, `"outbox":"`+tt.wantOutbox+`"`) {
				t.Errorf("logs: got %s, want outbox %s", logs, tt.wantOutbox)
			}
		})
	}
}

// TestProcessedAtTheDeadlineIsNotRedriven: a record whose dead write found
// the event processed (its commit had landed, the answer lost) and that is
// still delivering the outbox when the batch response is due is
// acknowledged on its last receive: a processed event's message never
// goes to the DLQ.
func TestProcessedAtTheDeadlineIsNotRedriven(t *testing.T) {
	pendingEvent := inbox.Event{Key: key, Status: inbox.StatusProcessed, OutboxPending: true, OutboxRows: []string{"r1"}}
	store := &fakeStore{claim: claimed,
		complete: func(effects.Plan, inbox.Outcome) error { return inbox.ErrUnavailable },
		fail:     func(inbox.Failure) (inbox.Event, error) { return pendingEvent, inbox.ErrAlreadyProcessed },
	}
	h := newHarness(t, store, handlerOf(planOf("a"), nil), func(c *Config) { c.Now = time.Now })
	release := make(chan struct{})
	defer close(release)
	h.outbox.deliver = func(inbox.Key, []string) (outbox.Settlement, error) {
		<-release // still delivering when the response is due
		return outbox.Settlement{Settled: true}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	resp, err := h.p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 || len(h.dlq.sent) != 0 {
		t.Errorf("got failures %v, DLQ %v; want the record acknowledged", resp.BatchItemFailures, h.dlq.sent)
	}
}

// TestForwarding: an event FORWARD takes commits one forwarding row per
// matching route beside its handler's parts; a type no route matches
// forwards nothing; a type with no handler is still forwarded, and
// ignored (outcomes speak of business effects; forwarding is none); an
// event whose business parts exist already is a duplicate_effect though
// its forwarding rows are new; a handler's failure commits and forwards
// nothing.
func TestForwarding(t *testing.T) {
	routes, err := forward.Parse(`[
		{"source": "stripe", "types": ["invoice.*"], "bus": "billing"},
		{"source": "stripe", "bus": "all"},
		{"source": "github", "bus": "code"}
	]`, []string{"stripe", "github"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, typ   string
		handler     effects.Handler
		wantFacts   int
		wantTargets string
		wantOutcome inbox.Outcome
	}{
		{"handled and forwarded", "invoice.paid", handlerOf(planOf("a"), nil), 1, "eventbridge:stripe:billing eventbridge:stripe:all", inbox.OutcomeApplied},
		{"forwarded by one route", "customer.created", nil, 0, "eventbridge:stripe:all", inbox.OutcomeIgnored},
		{"handler with nothing to do, forwarded", "invoice.paid", handlerOf(effects.Plan{}, nil), 0, "eventbridge:stripe:billing eventbridge:stripe:all", inbox.OutcomeIgnored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got effects.Plan
			var outcome inbox.Outcome
			store := &fakeStore{
				claim: func(k inbox.Key, _ string) (inbox.Event, error) {
					return inbox.Event{Key: k, Kind: "stripe", Type: tc.typ, Status: inbox.StatusProcessing}, nil
				},
				complete: func(p effects.Plan, o inbox.Outcome) error { got, outcome = p, o; return nil },
			}
			h := newHarness(t, store, nil, func(c *Config) {
				c.Forward = routes
				c.Routes = Routes{"stripe": {}}
				if tc.handler != nil {
					c.Routes["stripe"][tc.typ] = tc.handler
				}
			})
			if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
				t.Fatal(err)
			}
			var targets []string
			for _, o := range got.Outbound {
				targets = append(targets, o.Target)
				if o.Action != effects.ActionEventBridge || !strings.HasPrefix(o.Key, key.String()+"/") {
					t.Errorf("row %+v: want an eventbridge row keyed by the event", o)
				}
			}
			if len(got.Facts) != tc.wantFacts || strings.Join(targets, " ") != tc.wantTargets || outcome != tc.wantOutcome {
				t.Errorf("committed %d facts, rows to %q, %s; want %d, %q, %s", len(got.Facts), targets, outcome, tc.wantFacts, tc.wantTargets, tc.wantOutcome)
			}
		})
	}
	t.Run("a duplicate fact, forwarded all the same", func(t *testing.T) {
		var outcome inbox.Outcome
		var rows int
		store := &fakeStore{
			claim: func(k inbox.Key, _ string) (inbox.Event, error) {
				return inbox.Event{Key: k, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing}, nil
			},
			complete: func(p effects.Plan, o inbox.Outcome) error {
				if len(p.Facts) > 0 {
					return &effects.RefusedError{Exists: []string{p.Facts[0].ID()}}
				}
				outcome, rows = o, len(p.Outbound)
				return nil
			},
		}
		h := newHarness(t, store, nil, func(c *Config) {
			c.Forward = routes
			c.Routes = Routes{"stripe": {"invoice.paid": handlerOf(planOf("a"), nil)}}
		})
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
			t.Fatal(err)
		}
		if outcome != inbox.OutcomeDuplicateEffect || rows != 2 {
			t.Errorf("got %s with %d rows, want duplicate_effect with its 2 forwarding rows", outcome, rows)
		}
	})
	t.Run("not matched", func(t *testing.T) {
		var got effects.Plan
		store := &fakeStore{
			claim: func(k inbox.Key, _ string) (inbox.Event, error) {
				return inbox.Event{Key: k, Kind: "stripe", Type: "x"}, nil
			},
			complete: func(p effects.Plan, _ inbox.Outcome) error { got = p; return nil },
		}
		h := newHarness(t, store, nil, func(c *Config) { c.Forward = routes[:1] })
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
			t.Fatal(err)
		}
		if got.Len() != 0 {
			t.Errorf("type no route takes: committed %+v, want nothing", got)
		}
	})
	t.Run("handler fails", func(t *testing.T) {
		store := &fakeStore{claim: claimed, fail: func(f inbox.Failure) (inbox.Event, error) { return inbox.Event{}, nil }}
		h := newHarness(t, store, handlerOf(effects.Plan{}, errors.New("boom")), func(c *Config) { c.Forward = routes })
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
			t.Fatal(err)
		}
		if len(h.outbox.calls) != 0 {
			t.Errorf("a failed handler's event delivered %v, want nothing", h.outbox.calls)
		}
	})
}

// TestDelayWithinSQSLimit: with the longest backoff allowed (12 hours),
// no delay set on a message reaches past SQS's 12 hours from its receive,
// which may have been 20 minutes before: neither the backoff nor a wait
// for an event's due time, however far away.
func TestDelayWithinSQSLimit(t *testing.T) {
	vis := &fakeVisibility{}
	p, err := New(Config{Store: &fakeStore{}, Outbox: &fakeOutbox{}, DeadLetters: &fakeDLQ{}, Visibility: vis, Routes: Routes{},
		Logger: slog.New(slog.DiscardHandler), MaxReceiveCount: 10, RetryBase: MaxRetryCap, RetryCap: MaxRetryCap, Rand: func() float64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	limit := MaxRetryCap - 20*time.Minute
	for n := 1; n <= 10; n++ {
		rec := events.SQSMessage{ReceiptHandle: fmt.Sprint("h", n), Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(n)}}
		if d := p.backoff(rec); d > limit {
			t.Errorf("receive %d: backoff %s, over %s", n, d, limit)
		}
		var res recordResult
		p.delay(context.Background(), rec, 48*time.Hour, &res)
		if d, _ := vis.get(rec.ReceiptHandle); d > limit || d == 0 {
			t.Errorf("receive %d: delay set %s, want at most %s", n, d, limit)
		}
	}
	if _, hi := Window(MaxRetryCap, MaxRetryCap, 3); hi != 2*limit {
		t.Errorf("Window: longest %s, want %s", hi, 2*limit)
	}
}
