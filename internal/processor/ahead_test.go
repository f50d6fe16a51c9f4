package processor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Forwarding ahead of the commit (putAhead, outbox.Deliverer.Ahead,
// inboxstore.Store.CompleteDeliveredExpiring), for routes that retry unknowns.
// The invariant (F1–F3 in docs/forwarding.md):
//
//	F1: a row is committed delivered only for an entry EventBridge
//	    accepted; any other is committed pending, for the outbox;
//	F2: an entry is put only by the holder of the event's lease, after
//	    its claim and before the commit that lease fences; the first
//	    attempt, which takes no lease, never puts one; it is put again
//	    only after an attempt that did not commit;
//	F3: an event whose rows were all delivered at its commit is settled
//	    by it: no delivery pass follows.
//
// The interleavings: the put accepted; refused; the commit failing or its
// lease lost after the put (the next attempt puts again); a route that
// does not retry unknowns; a forced re-run's row written already; a plan
// with a row of its own beside the forwarding row. The store's side is in
// inboxstore (TestCompleteDelivered), the whole path over the wire in
// infra/local (TestForwardedExactlyOnce).

// aheadStore is fakeStore with the commit of rows delivered ahead.
type aheadStore struct {
	*fakeStore
	c *calls
	// lease is the lease end the last claim asked for.
	lease             time.Time
	completeDelivered func(plan effects.Plan, delivered []string) error
}

func (s *aheadStore) Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error) {
	s.c.add("claim")
	s.lease = leaseUntil
	return s.fakeStore.Claim(ctx, k, owner, now, leaseUntil)
}

func (s *aheadStore) CompleteDelivered(ctx context.Context, _ inbox.Event, _ string, plan effects.Plan, _ inbox.Outcome, delivered []string, _ time.Time) error {
	s.c.add("complete delivered")
	return s.completeDelivered(plan, delivered)
}

// aheadOutbox is fakeOutbox with Ahead.
type aheadOutbox struct {
	*fakeOutbox
	c      *calls
	accept func(o effects.Outbound) bool
	// puts are the rows put, and leases the lease ends they were put
	// under.
	puts   []effects.Outbound
	leases []time.Time
	// deadlines are the puts' contexts' deadlines (zero: none).
	deadlines []time.Time
	// recorded holds what each record of the puts was told of the
	// commit.
	recorded []bool
}

func (o *aheadOutbox) Ahead(ctx context.Context, _ inbox.Event, rows []effects.Outbound, leaseEnd time.Time) ([]bool, func(bool)) {
	o.c.add("put")
	d, _ := ctx.Deadline()
	o.deadlines = append(o.deadlines, d)
	out := make([]bool, len(rows))
	for i, r := range rows {
		o.puts = append(o.puts, r)
		o.leases = append(o.leases, leaseEnd)
		out[i] = o.accept(r)
	}
	return out, func(committed bool) { o.recorded = append(o.recorded, committed) }
}

func TestForwardedAheadOfTheCommit(t *testing.T) {
	retrying := forward.Routes{{Source: "stripe", Bus: "bus", RetryUnknown: true}}
	fwdKey := effects.KeyOf(key.String(), forward.TargetOf(retrying[0]))
	receipt := effects.Outbound{Key: "receipt/1", Target: "receipt", Body: []byte(`{}`)}
	nothing := func(context.Context, inbox.Event) (effects.Plan, error) { return effects.Plan{}, nil }
	withReceipt := func(context.Context, inbox.Event) (effects.Plan, error) {
		return effects.Plan{Outbound: []effects.Outbound{receipt}}, nil
	}
	accept := func(effects.Outbound) bool { return true }

	type setup struct {
		routes   forward.Routes
		handler  effects.Handler
		claimed  inbox.Event
		accept   func(effects.Outbound) bool
		commit   func(plan effects.Plan, delivered []string) error
		receives int
		// deadline, if set, is the invocation's.
		deadline time.Time
		// then, if set, is a second receive of the message after the
		// first's.
		then int
	}
	run := func(t *testing.T, s setup) (*harness, *aheadStore, *aheadOutbox, *calls, events.SQSEventResponse) {
		t.Helper()
		c := &calls{}
		claimedEv := s.claimed
		if claimedEv.Key == (inbox.Key{}) {
			claimedEv = inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing, Payload: []byte(`{}`)}
		}
		fs := &fakeStore{
			peek:          func() (inbox.Event, error) { c.add("peek"); return stored, nil },
			completeFirst: func(effects.Plan, inbox.Outcome) error { c.add("complete first"); return nil },
			claim:         func(inbox.Key, string) (inbox.Event, error) { return claimedEv, nil },
			complete:      func(effects.Plan, inbox.Outcome) error { c.add("complete"); return nil },
		}
		if s.commit == nil {
			s.commit = func(effects.Plan, []string) error { return nil }
		}
		if s.accept == nil {
			s.accept = accept
		}
		if s.receives == 0 {
			s.receives = 1
		}
		st := &aheadStore{fakeStore: fs, c: c, completeDelivered: s.commit}
		var ob *aheadOutbox
		h := newHarness(t, fs, s.handler, func(cfg *Config) {
			ob = &aheadOutbox{fakeOutbox: cfg.Outbox.(*fakeOutbox), c: c, accept: s.accept}
			cfg.Store, cfg.Outbox, cfg.Forward = st, ob, s.routes
		})
		ctx := context.Background()
		if !s.deadline.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, s.deadline)
			defer cancel()
		}
		resp, err := h.p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", s.receives)}})
		if err != nil {
			t.Fatal(err)
		}
		if s.then > 0 {
			if resp, err = h.p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", s.then)}}); err != nil {
				t.Fatal(err)
			}
		}
		return h, st, ob, c, resp
	}

	t.Run("accepted: delivered and settled in the commit", func(t *testing.T) {
		var delivered []string
		h, st, ob, c, resp := run(t, setup{routes: retrying, handler: nothing, commit: func(_ effects.Plan, d []string) error {
			delivered = d
			return nil
		}})
		// F2: the first attempt declines (no lease), the claim comes
		// before the put, the put before the commit.
		if got := c.list(); !slices.Equal(got, []string{"peek", "claim", "put", "complete delivered"}) {
			t.Errorf("calls %v", got)
		}
		if len(ob.leases) != 1 || !ob.leases[0].Equal(st.lease) {
			t.Errorf("put under lease ends %v, want the claim's %v", ob.leases, st.lease)
		}
		if !slices.Equal(delivered, []string{fwdKey}) {
			t.Errorf("committed delivered %v, want [%s]", delivered, fwdKey)
		}
		// F3: no delivery pass.
		if len(h.outbox.calls) != 0 {
			t.Errorf("deliveries %v, want none", h.outbox.calls)
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Errorf("failures %v, want the message acknowledged", resp.BatchItemFailures)
		}
		if !slices.Equal(ob.recorded, []bool{true}) {
			t.Errorf("puts recorded as %v, want told the commit landed", ob.recorded)
		}
	})
	t.Run("not accepted: committed pending, for the outbox", func(t *testing.T) {
		h, _, _, c, _ := run(t, setup{routes: retrying, handler: nothing, accept: func(effects.Outbound) bool { return false }})
		// F1: a plain commit, the row pending, delivered after it.
		if got := c.list(); !slices.Equal(got, []string{"peek", "claim", "put", "complete"}) {
			t.Errorf("calls %v", got)
		}
		if len(h.outbox.calls) != 1 || len(h.outbox.calls[0]) != 1 {
			t.Errorf("deliveries %v, want the row once", h.outbox.calls)
		}
	})
	for _, failure := range []error{inbox.ErrUnavailable, inbox.ErrLeaseLost} {
		t.Run("the commit after the put fails: "+failure.Error(), func(t *testing.T) {
			h, _, ob, _, resp := run(t, setup{routes: retrying, handler: nothing, commit: func(effects.Plan, []string) error { return failure }})
			if len(ob.puts) != 1 || len(h.outbox.calls) != 0 {
				t.Errorf("puts %d, deliveries %v: want one put, no delivery", len(ob.puts), h.outbox.calls)
			}
			if !slices.Equal(ob.recorded, []bool{false}) {
				t.Errorf("puts recorded as %v, want told the commit did not land", ob.recorded)
			}
			if len(resp.BatchItemFailures) != 1 {
				t.Errorf("failures %v, want the message back", resp.BatchItemFailures)
			}
		})
	}
	t.Run("the next attempt after a failed commit puts again, under its own claim", func(t *testing.T) {
		tries := 0
		_, _, ob, c, resp := run(t, setup{routes: retrying, handler: nothing, then: 2, commit: func(effects.Plan, []string) error {
			if tries++; tries == 1 {
				return inbox.ErrUnavailable
			}
			return nil
		}})
		if got := c.list(); !slices.Equal(got, []string{"peek", "claim", "put", "complete delivered", "claim", "put", "complete delivered"}) {
			t.Errorf("calls %v", got)
		}
		if !slices.Equal(ob.recorded, []bool{false, true}) || len(resp.BatchItemFailures) != 0 {
			t.Errorf("recorded %v, failures %v: want the second attempt committed", ob.recorded, resp.BatchItemFailures)
		}
	})
	t.Run("the last receive: the row after the commit", func(t *testing.T) {
		h, _, ob, c, _ := run(t, setup{routes: retrying, handler: nothing, receives: 3})
		// MaxReceiveCount 3: a commit failing after a put would make the
		// event dead with its entry put.
		if len(ob.puts) != 0 || !slices.Equal(c.list(), []string{"claim", "complete"}) || len(h.outbox.calls) != 1 {
			t.Errorf("puts %d, calls %v, deliveries %v: want no put, a plain commit, the row delivered after it", len(ob.puts), c.list(), h.outbox.calls)
		}
	})
	t.Run("the puts leave time to commit", func(t *testing.T) {
		deadline := time.Now().Add(time.Minute)
		_, _, ob, _, _ := run(t, setup{routes: retrying, handler: nothing, deadline: deadline})
		if len(ob.deadlines) != 1 || ob.deadlines[0].IsZero() || ob.deadlines[0].After(deadline.Add(-commitTime)) {
			t.Errorf("put deadlines %v, want at least %s before the invocation's %v", ob.deadlines, commitTime, deadline)
		}
	})
	t.Run("a route that does not retry unknowns: the first attempt, the row after the commit", func(t *testing.T) {
		once := forward.Routes{{Source: "stripe", Bus: "bus", RetryUnknown: false}}
		h, _, ob, c, _ := run(t, setup{routes: once, handler: nothing})
		if got := c.list(); !slices.Equal(got, []string{"peek", "complete first"}) || len(ob.puts) != 0 {
			t.Errorf("calls %v, puts %d: want the first attempt's commit, no put", got, len(ob.puts))
		}
		if len(h.outbox.calls) != 1 {
			t.Errorf("deliveries %v, want the row's", h.outbox.calls)
		}
	})
	t.Run("a forced re-run: the first run's row is not put again", func(t *testing.T) {
		rerun := inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Status: inbox.StatusProcessing, Payload: []byte(`{}`),
			OutboxRows: []string{effects.ScopedKey(inbox.Event{Key: key}.PartScope(), fwdKey)}}
		_, _, ob, c, _ := run(t, setup{routes: retrying, handler: nothing, claimed: rerun, receives: 2})
		if len(ob.puts) != 0 || !slices.Equal(c.list(), []string{"claim", "complete"}) {
			t.Errorf("puts %d, calls %v: want none put, a plain commit", len(ob.puts), c.list())
		}
	})
	t.Run("a plan with a row of its own: that row after the commit", func(t *testing.T) {
		var delivered []string
		h, _, ob, _, _ := run(t, setup{routes: retrying, handler: withReceipt, commit: func(p effects.Plan, d []string) error {
			delivered = d
			if len(p.Outbound) != 2 {
				t.Errorf("committed %d rows, want both", len(p.Outbound))
			}
			return nil
		}})
		if len(ob.puts) != 1 || ob.puts[0].Key != fwdKey {
			t.Errorf("put %v, want the forwarding row alone", ob.puts)
		}
		if !slices.Equal(delivered, []string{fwdKey}) {
			t.Errorf("delivered %v", delivered)
		}
		if len(h.outbox.calls) != 1 || !slices.Equal(h.outbox.calls[0], []string{effects.ScopedKey(inbox.Event{Key: key}.PartScope(), receipt.Key)}) {
			t.Errorf("deliveries %v, want the receipt's row alone", h.outbox.calls)
		}
	})
}
