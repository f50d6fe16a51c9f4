package processor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// The first attempt at an event commits without a claim (record.first),
// fenced by the event being as it was stored. Its invariant: an attempt
// that does not end in its own commit is taken again through the claim's
// path, which counts it; so every attempt that can fail is counted, no
// commit lands over another's, and only a message's first receive is ever
// spent without a claim.

// calls records which store calls a record made, in order.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, name)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

var stored = inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusReceived}

func TestFirstAttempt(t *testing.T) {
	errBoom := errors.New("boom")
	processed := inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessed, Outcome: inbox.OutcomeApplied}
	for _, tt := range []struct {
		name     string
		receives int
		peek     inbox.Event
		// first, if not nil, is the handler's failure.
		first         error
		completeFirst error
		claim         func(inbox.Key, string) (inbox.Event, error)

		wantCalls []string
		wantRetry bool
		wantFails []inbox.Status
	}{
		{name: "committed without a claim", receives: 1, peek: stored,
			wantCalls: []string{"peek", "completeFirst"}},
		{name: "a later receive claims", receives: 2, peek: stored, claim: claimed,
			wantCalls: []string{"claim", "complete"}},
		{name: "an event tried before is claimed", receives: 1,
			peek:  inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusReceived, Attempts: 1},
			claim: claimed, wantCalls: []string{"peek", "claim", "complete"}},
		{name: "a failed event is claimed", receives: 1,
			peek:  inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusFailed, Attempts: 1},
			claim: claimed, wantCalls: []string{"peek", "claim", "complete"}},
		{name: "a leased event is left to the claim", receives: 1,
			peek:      inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing, LeaseOwner: "other", Attempts: 1},
			claim:     claimErr(inbox.Event{Key: key, Status: inbox.StatusProcessing, LeaseOwner: "other", LeaseUntil: testNow.Add(time.Minute)}, inbox.ErrClaimed),
			wantCalls: []string{"peek", "claim"}, wantRetry: true},
		{name: "a handler's failure is counted by a claim and recorded", receives: 1, peek: stored, first: errBoom,
			claim: claimed, wantCalls: []string{"peek", "claim", "fail"}, wantRetry: true, wantFails: []inbox.Status{inbox.StatusFailed}},
		{name: "claimed meanwhile: the commit is refused, the claim's path answers", receives: 1, peek: stored,
			completeFirst: inbox.ErrLeaseLost,
			claim:         claimErr(inbox.Event{Key: key, Status: inbox.StatusProcessing, LeaseOwner: "other", LeaseUntil: testNow.Add(time.Minute)}, inbox.ErrClaimed),
			wantCalls:     []string{"peek", "completeFirst", "claim"}, wantRetry: true},
		{name: "processed meanwhile: refused, and acknowledged", receives: 1, peek: stored,
			completeFirst: inbox.ErrAlreadyProcessed, claim: claimErr(processed, inbox.ErrAlreadyProcessed),
			wantCalls: []string{"peek", "completeFirst", "claim"}},
		{name: "an outage on the commit: the claim's path tries again", receives: 1, peek: stored,
			completeFirst: inbox.ErrUnavailable, claim: claimed,
			wantCalls: []string{"peek", "completeFirst", "claim", "complete"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c calls
			handler := func(context.Context, inbox.Event) (effects.Plan, error) {
				if tt.first != nil {
					return effects.Plan{}, tt.first // and again after the claim: recorded
				}
				return planOf("a"), nil
			}
			store := &fakeStore{
				peek: func() (inbox.Event, error) { c.add("peek"); return tt.peek, nil },
				completeFirst: func(p effects.Plan, _ inbox.Outcome) error {
					c.add("completeFirst")
					if len(p.Facts) != 1 {
						t.Errorf("first commit's plan %+v", p)
					}
					return tt.completeFirst
				},
				claim: func(k inbox.Key, owner string) (inbox.Event, error) {
					c.add("claim")
					if tt.claim == nil {
						t.Error("claimed")
						return inbox.Event{}, inbox.ErrUnavailable
					}
					return tt.claim(k, owner)
				},
				complete: func(effects.Plan, inbox.Outcome) error { c.add("complete"); return nil },
				fail: func(f inbox.Failure) (inbox.Event, error) {
					c.add("fail")
					return inbox.Event{Key: key, Status: f.Status}, nil
				},
			}
			h := newHarness(t, store, handler)
			resp, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", tt.receives)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.list(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("store calls %v, want %v", got, tt.wantCalls)
			}
			if retry := len(failures(resp)) > 0; retry != tt.wantRetry {
				t.Errorf("retry %t, want %t", retry, tt.wantRetry)
			}
			if got := store.statuses(); !slices.Equal(got, tt.wantFails) {
				t.Errorf("failures recorded %v, want %v", got, tt.wantFails)
			}
		})
	}
}

// TestFirstAttemptDeliversItsRows: the rows of an unclaimed first commit
// are delivered by the committing pass; a later receive delivers a
// pending outbox as any pass does, with the generation it read; a
// message's last receive never commits unclaimed.
func TestFirstAttemptDeliversItsRows(t *testing.T) {
	withRow := effects.Plan{Outbound: []effects.Outbound{{Key: "r/1", Target: "receipt", Body: []byte(`{}`)}}}
	handler := func(context.Context, inbox.Event) (effects.Plan, error) { return withRow, nil }

	t.Run("committing pass", func(t *testing.T) {
		store := &fakeStore{
			peek:          func() (inbox.Event, error) { return stored, nil },
			completeFirst: func(effects.Plan, inbox.Outcome) error { return nil },
		}
		h := newHarness(t, store, handler)
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
			t.Fatal(err)
		}
		if len(h.outbox.calls) != 1 || len(h.outbox.calls[0]) != 1 {
			t.Errorf("deliveries %v, want the committed row once", h.outbox.calls)
		}
	})
	t.Run("a later receive", func(t *testing.T) {
		pending := inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessed, OutboxPending: true, OutboxRows: []string{"r/1"}, OutboxGen: 2}
		store := &fakeStore{claim: claimErr(pending, inbox.ErrAlreadyProcessed)}
		h := newHarness(t, store, handler)
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 2)}}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(h.outbox.gens, []int{2}) {
			t.Errorf("generations %v, want [2]", h.outbox.gens)
		}
	})
	t.Run("the last receive claims", func(t *testing.T) {
		var c calls
		store := &fakeStore{
			peek:     func() (inbox.Event, error) { c.add("peek"); return stored, nil },
			claim:    func(k inbox.Key, o string) (inbox.Event, error) { c.add("claim"); return claimed(k, o) },
			complete: func(effects.Plan, inbox.Outcome) error { c.add("complete"); return nil },
		}
		h := newHarness(t, store, handler, func(cfg *Config) { cfg.MaxReceiveCount = 1 })
		if _, err := h.p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", 1)}}); err != nil {
			t.Fatal(err)
		}
		if got := c.list(); !slices.Equal(got, []string{"claim", "complete"}) {
			t.Errorf("store calls %v, want the claim's path", got)
		}
	})
}
