package inboxstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// commitPlan claims a new event as worker-a and commits plan with it.
func commitPlan(tb testing.TB, s *inboxstore.Store, id string, plan effects.Plan) (inbox.Event, error) {
	tb.Helper()
	e := mustClaimed(tb, s, id, "worker-a")
	return e, s.Complete(context.Background(), e, "worker-a", plan, inbox.OutcomeApplied, t0.Add(time.Second))
}

func refusedOf(tb testing.TB, err error) *effects.RefusedError {
	tb.Helper()
	var r *effects.RefusedError
	if !errors.As(err, &r) {
		tb.Fatalf("got %v, want *effects.RefusedError", err)
	}
	return r
}

// testScope is the scope of newEvent's events' parts; sid and skey are
// a part's ID and a row's key as stored in it.
const testScope = "stripe#acct_1"

func sid(id string) string   { return effects.ScopedID(testScope, id) }
func skey(key string) string { return effects.ScopedKey(testScope, key) }

// mustPart returns the part stored in testScope under the plan's id.
func mustPart(tb testing.TB, s *inboxstore.Store, id string) map[string]any {
	tb.Helper()
	m, err := s.Part(context.Background(), sid(id))
	if err != nil {
		tb.Fatalf("part %s: %v", id, err)
	}
	return m
}

func assertPartAbsent(tb testing.TB, s *inboxstore.Store, id string) {
	tb.Helper()
	if m, err := s.Part(context.Background(), id); !errors.Is(err, inbox.ErrNotFound) {
		tb.Errorf("part %s: got %v, %v; want inbox.ErrNotFound", id, m, err)
	}
}

func assertStillProcessing(tb testing.TB, s *inboxstore.Store, e inbox.Event) {
	tb.Helper()
	if got := mustGet(tb, s, e.Key, t0); got.Status != inbox.StatusProcessing || got.LeaseOwner != "worker-a" {
		tb.Errorf("event %s: got %s held by %q, want processing by worker-a", e.Key, got.Status, got.LeaseOwner)
	}
}

// TestEntityOrderGuard: over the wire, an update applies only after the
// entity's last order; an older or equal one is refused as stale and
// nothing of its transaction is written.
func TestEntityOrderGuard(t *testing.T) {
	s := mustStore(t)
	member := func(seq int64, tie string, paid int64) effects.Update {
		return effects.Update{Entity: "membership", Key: "cus_1", Set: map[string]any{"paid_through": paid}, Order: &effects.Order{Seq: seq, Tie: tie}}
	}
	if _, err := commitPlan(t, s, "evt_o1", effects.Plan{Updates: []effects.Update{member(200, "in_b", 2000)}}); err != nil {
		t.Fatalf("first update: %v", err)
	}
	for _, tt := range []struct {
		name  string
		u     effects.Update
		stale bool
	}{
		{"older", member(100, "in_z", 1000), true},
		{"same order", member(200, "in_b", 2001), true},
		{"same seq, lower tie", member(200, "in_a", 2002), true},
		{"same seq, higher tie", member(200, "in_c", 2003), false},
		{"newer", member(300, "in_a", 3000), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := mustPart(t, s, tt.u.ID())
			fact := effects.Fact{Kind: "seen", Key: tt.name}
			e, err := commitPlan(t, s, "evt_o_"+tt.name, effects.Plan{Facts: []effects.Fact{fact}, Updates: []effects.Update{tt.u}})
			if !tt.stale {
				if err != nil {
					t.Fatalf("got %v, want applied", err)
				}
				if got := mustPart(t, s, tt.u.ID())["paid_through"]; got != tt.u.Set["paid_through"] {
					t.Errorf("paid_through: got %v, want %v", got, tt.u.Set["paid_through"])
				}
				return
			}
			r := refusedOf(t, err)
			if !slices.Equal(r.Stale, []string{tt.u.ID()}) || len(r.Exists) != 0 {
				t.Errorf("refused: got %+v, want stale %s", r, tt.u.ID())
			}
			if after := mustPart(t, s, tt.u.ID()); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("entity changed: got %v, want %v", after, before)
			}
			assertPartAbsent(t, s, fact.ID())
			assertStillProcessing(t, s, e)
		})
	}
	got := mustPart(t, s, "entity#membership#cus_1")
	for name, want := range map[string]any{"seq": int64(300), "seq_tie": "in_a", "entity_kind": "membership", "entity_key": "cus_1", "updated_by": "stripe#acct_1#evt_o_newer"} {
		if got[name] != want {
			t.Errorf("%s: got %v (%T), want %v", name, got[name], got[name], want)
		}
	}
	for name := range got {
		if !effects.ReservedEntity[name] && name != "paid_through" {
			t.Errorf("the store writes %q on an entity, which effects.ReservedEntity does not name", name)
		}
	}
}

// TestEntityTransitionGuard: a state moves only along allowed transitions;
// a final state stays.
func TestEntityTransitionGuard(t *testing.T) {
	s := mustStore(t)
	m := effects.Machine{"trialing": {"active", "canceled"}, "active": {"past_due", "canceled"}, "past_due": {"active", "canceled"}}
	to := func(state string) effects.Update {
		return effects.Update{Entity: "subscription", Key: "sub_1", Transition: m.Into("status", state)}
	}
	for i, tt := range []struct {
		to    string
		stale bool
	}{
		{"active", false}, // no state yet: any state may start
		{"trialing", true},
		{"past_due", false},
		{"active", false},
		{"active", false}, // itself again
		{"canceled", false},
		{"active", true}, // canceled is final
		{"canceled", false},
	} {
		_, err := commitPlan(t, s, fmt.Sprintf("evt_t%d", i), effects.Plan{Updates: []effects.Update{to(tt.to)}})
		switch {
		case tt.stale:
			if r := refusedOf(t, err); !slices.Equal(r.Stale, []string{to(tt.to).ID()}) {
				t.Errorf("step %d to %s: refused %+v, want stale", i, tt.to, r)
			}
		case err != nil:
			t.Errorf("step %d to %s: %v", i, tt.to, err)
		}
	}
	if got := mustPart(t, s, "entity#subscription#sub_1")["status"]; got != "canceled" {
		t.Errorf("status: got %v, want canceled", got)
	}
}

// TestEntityAdd: Add adds to a number, starting from 0, and Set and Add
// combine in one update.
func TestEntityAdd(t *testing.T) {
	s := mustStore(t)
	for i := range 3 {
		u := effects.Update{Entity: "customer", Key: "cus_1", Set: map[string]any{"last": fmt.Sprint(i)}, Add: map[string]any{"invoices": 1, "paid": int64(250)}}
		if _, err := commitPlan(t, s, fmt.Sprintf("evt_a%d", i), effects.Plan{Updates: []effects.Update{u}}); err != nil {
			t.Fatal(err)
		}
	}
	got := mustPart(t, s, "entity#customer#cus_1")
	if got["invoices"] != int64(3) || got["paid"] != int64(750) || got["last"] != "2" {
		t.Errorf("got %v, want invoices 3, paid 750, last 2", got)
	}
	// Adding to a string is refused by DynamoDB as invalid, every time.
	bad := effects.Update{Entity: "customer", Key: "cus_1", Add: map[string]any{"last": 1}}
	e, err := commitPlan(t, s, "evt_a_bad", effects.Plan{Updates: []effects.Update{bad}})
	if !errors.Is(err, inbox.ErrInvalid) {
		t.Errorf("add to a string: got %v, want inbox.ErrInvalid", err)
	}
	assertStillProcessing(t, s, e)
}

// TestCommitAllOrNothing: a fact, an update, a row and the event commit
// together, or — when any part is refused — not at all.
func TestCommitAllOrNothing(t *testing.T) {
	s := mustStore(t)
	plan := func(invoice string, seq int64) effects.Plan {
		f := effects.Fact{Kind: "invoice_paid", Key: invoice}
		u := effects.Update{Entity: "membership", Key: "cus_1", Set: map[string]any{"paid_through": seq}, Order: &effects.Order{Seq: seq}, After: f.ID()}
		o := effects.Outbound{Target: "receipt", Key: effects.KeyOf(f.ID(), "receipt"), Body: json.RawMessage(`{"invoice":"` + invoice + `"}`), Of: f.ID()}
		return effects.Plan{Facts: []effects.Fact{f}, Updates: []effects.Update{u}, Outbound: []effects.Outbound{o}}
	}
	first := plan("in_1", 200)
	e, err := commitPlan(t, s, "evt_all", first)
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, e.Key, t0.Add(time.Second))
	var stored []string
	for _, id := range first.IDs() {
		stored = append(stored, sid(id))
	}
	if got.Status != inbox.StatusProcessed || !slices.Equal(got.Touched, stored) ||
		!slices.Equal(got.OutboxRows, []string{skey(first.Outbound[0].Key)}) || !got.OutboxPending {
		t.Errorf("event: got %+v", got)
	}
	row, err := s.Row(context.Background(), skey(first.Outbound[0].Key))
	if err != nil || row.State != outbox.Pending || row.Event != e.Key || string(row.Body) != `{"invoice":"in_1"}` || row.Target != "receipt" || row.Action != effects.ActionHTTP {
		t.Errorf("row: got %+v, %v", row, err)
	}

	// An older invoice: its fact is new, its update stale, so nothing of
	// it is written; the same invoice again: the fact exists.
	for _, tt := range []struct {
		name        string
		plan        effects.Plan
		exists      []string
		stale       []string
		wantAbsents []string
	}{
		{"stale update", plan("in_0", 100), nil, []string{"entity#membership#cus_1"}, []string{"fact#invoice_paid#in_0", "outbox#fact#invoice_paid#in_0/receipt"}},
		{"existing fact and row", plan("in_1", 300), []string{"fact#invoice_paid#in_1", "outbox#fact#invoice_paid#in_1/receipt"}, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := commitPlan(t, s, "evt_"+tt.name, tt.plan)
			r := refusedOf(t, err)
			if !slices.Equal(r.Exists, tt.exists) || !slices.Equal(r.Stale, tt.stale) {
				t.Errorf("refused: got %+v, want exists %v stale %v", r, tt.exists, tt.stale)
			}
			for _, id := range tt.wantAbsents {
				assertPartAbsent(t, s, id)
			}
			if got := mustPart(t, s, "entity#membership#cus_1")["paid_through"]; got != int64(200) {
				t.Errorf("paid_through: got %v, want 200", got)
			}
			assertStillProcessing(t, s, e)
		})
	}
}

// TestOutboxIndex: an event with rows stays in the sweep's view, in the
// outbox partitions, until its outbox settles; Oldest, which reports
// unfinished events, never sees it.
func TestOutboxIndex(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	o := effects.Outbound{Target: "receipt", Key: "r1", Body: json.RawMessage(`{}`)}
	e, err := commitPlan(t, s, "evt_rows", effects.Plan{Outbound: []effects.Outbound{o}})
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	overdue := func() []inboxstore.Pending {
		t.Helper()
		got, err := s.Overdue(ctx, later, 10)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := overdue(); len(got) != 1 || got[0].Key != e.Key || got[0].Status != inbox.StatusProcessed {
		t.Errorf("overdue: got %+v, want the processed event", got)
	}
	if p, found, err := s.Oldest(ctx); err != nil || found {
		t.Errorf("oldest: got %+v %t %v, want none", p, found, err)
	}
	if got := mustGet(t, s, e.Key, later); !got.ExpiresAt.IsZero() {
		t.Errorf("expiry with its outbox unsettled: got %s, want none", got.ExpiresAt)
	}
	// Not settled: due later, out of the sweep's reach until then.
	if err := s.SettleOutbox(ctx, e.Key, 0, false, later.Add(time.Minute), later); err != nil {
		t.Fatal(err)
	}
	if got := overdue(); len(got) != 0 {
		t.Errorf("overdue after rescheduling: got %+v, want none", got)
	}
	if got := mustGet(t, s, e.Key, later); !got.OutboxPending || !got.DueAt.Equal(later.Add(time.Minute).Truncate(time.Millisecond)) {
		t.Errorf("event: got pending %t due %s", got.OutboxPending, got.DueAt)
	}
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, later); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Overdue(ctx, later.Add(time.Hour), 10); err != nil || len(got) != 0 {
		t.Errorf("overdue after settling: got %+v %v, want none", got, err)
	}
	if got := mustGet(t, s, e.Key, later); got.OutboxPending || !got.DueAt.IsZero() || !slices.Equal(got.OutboxRows, []string{skey("r1")}) ||
		!got.ExpiresAt.Equal(time.Unix(later.Add(retention).Unix(), 0)) {
		t.Errorf("settled event: got %+v, want settled, expiring after the retention", got)
	}
	// Settling again, or settling an event with no outbox, changes nothing.
	if err := s.SettleOutbox(ctx, e.Key, 0, false, later, later); err != nil {
		t.Errorf("settle again: %v", err)
	}
	if got := mustGet(t, s, e.Key, later); got.OutboxPending || !got.DueAt.IsZero() {
		t.Errorf("event after a late settle: got pending %t due %s", got.OutboxPending, got.DueAt)
	}
}

// TestRowLifecycle: a row is claimed with owner fencing, as events are,
// and its final states are final.
func TestRowLifecycle(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	rowOf := func(key string) effects.Outbound {
		return effects.Outbound{Target: "receipt", Key: key, Body: json.RawMessage(`{"n":1}`)}
	}
	rows := []effects.Outbound{rowOf("delivered"), rowOf("failed"), rowOf("stuck"), rowOf("unknown")}
	if _, err := commitPlan(t, s, "evt_rowlife", effects.Plan{Outbound: rows}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Second)
	until := now.Add(20 * time.Second)
	claim := func(key, owner string, at time.Time) (outbox.Row, error) {
		return s.ClaimRow(ctx, skey(key), owner, at, at.Add(20*time.Second))
	}

	t.Run("delivered", func(t *testing.T) {
		prev, err := claim("delivered", "w1", now)
		if err != nil || prev.State != outbox.Pending || prev.Attempts != 0 {
			t.Fatalf("claim: got %+v, %v; want the pending row", prev, err)
		}
		if _, err := claim("delivered", "w2", now); !errors.Is(err, inbox.ErrClaimed) {
			t.Errorf("second claim: got %v, want inbox.ErrClaimed", err)
		}
		// The same claim again (its answer lost, the SDK's retry): the row
		// as the claim that landed found it, so the sender knows nothing
		// was sent.
		if again, err := claim("delivered", "w1", now); err != nil || again.State != outbox.Pending || again.Attempts != 0 {
			t.Errorf("own claim again (a lost answer): got %+v, %v; want the pending row", again, err)
		}
		if err := s.FinishRow(ctx, skey("delivered"), "w2", outbox.Result{State: outbox.Delivered, DeliveredTo: "http"}, now); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Errorf("finish by another: got %v, want inbox.ErrLeaseLost", err)
		}
		if err := s.FinishRow(ctx, skey("delivered"), "w1", outbox.Result{State: outbox.Delivered, StatusCode: 200, DeliveredTo: "http"}, now); err != nil {
			t.Fatal(err)
		}
		got, err := s.Row(ctx, skey("delivered"))
		if err != nil || got.State != outbox.Delivered || got.Body != nil || got.StatusCode != 200 || got.DeliveredTo != "http" || got.Attempts != 1 || got.LeaseOwner != "" {
			t.Errorf("row: got %+v, %v; want delivered, body dropped", got, err)
		}
		if _, err := claim("delivered", "w3", until.Add(time.Hour)); !errors.Is(err, outbox.ErrFinal) {
			t.Errorf("claim of a delivered row: got %v, want outbox.ErrFinal", err)
		}
	})

	t.Run("failed, due again", func(t *testing.T) {
		if _, err := claim("failed", "w1", now); err != nil {
			t.Fatal(err)
		}
		retry := now.Add(time.Minute)
		if err := s.FinishRow(ctx, skey("failed"), "w1", outbox.Result{State: outbox.Failed, Cause: "503", StatusCode: 503, RetryAt: retry}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := claim("failed", "w2", now.Add(30*time.Second)); !errors.Is(err, inbox.ErrNotDue) {
			t.Errorf("claim before due: got %v, want inbox.ErrNotDue", err)
		}
		prev, err := claim("failed", "w2", retry)
		if err != nil || prev.State != outbox.Failed || prev.Attempts != 1 || prev.LastError != "503" {
			t.Errorf("claim when due: got %+v, %v", prev, err)
		}
	})

	t.Run("a holder that stopped", func(t *testing.T) {
		if _, err := claim("stuck", "w1", now); err != nil {
			t.Fatal(err)
		}
		prev, err := claim("stuck", "w2", until.Add(time.Second))
		if err != nil || prev.State != outbox.Delivering || prev.LeaseOwner != "w1" {
			t.Errorf("claim after the lease: got %+v, %v; want the row as w1 left it", prev, err)
		}
		if err := s.FinishRow(ctx, skey("stuck"), "w1", outbox.Result{State: outbox.Delivered}, until); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Errorf("the stopped holder's late finish: got %v, want inbox.ErrLeaseLost", err)
		}
	})

	t.Run("unknown is for review", func(t *testing.T) {
		if _, err := claim("unknown", "w1", now); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRow(ctx, skey("unknown"), "w1", outbox.Result{State: outbox.Unknown, Cause: "timeout"}, now); err != nil {
			t.Fatal(err)
		}
		got, err := s.ForReview(ctx, 10)
		if err != nil || len(got) != 1 || got[0].Key != skey("unknown") || got[0].State != outbox.Unknown {
			t.Errorf("for review: got %+v, %v", got, err)
		}
		if _, err := claim("unknown", "w2", until.Add(time.Hour)); !errors.Is(err, outbox.ErrFinal) {
			t.Errorf("claim of an unknown row: got %v, want outbox.ErrFinal", err)
		}
		if row, err := s.Row(ctx, skey("unknown")); err != nil || string(row.Body) != `{"n":1}` {
			t.Errorf("unknown row keeps its body for review: got %+v, %v", row, err)
		}
	})

	t.Run("missing row", func(t *testing.T) {
		if _, err := claim("never", "w1", now); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("got %v, want inbox.ErrNotFound", err)
		}
		if _, err := s.Row(ctx, skey("never")); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("row: got %v, want inbox.ErrNotFound", err)
		}
	})

	t.Run("not an outcome", func(t *testing.T) {
		if err := s.FinishRow(ctx, skey("failed"), "w2", outbox.Result{State: outbox.Pending}, now); err == nil {
			t.Error("finish as pending: accepted")
		}
	})
}

// TestOverdueShares: a backlog of unfinished events does not starve an
// outbox waiting in its own partition: every shard gets its share of the
// limit first, and what a share leaves is filled after.
func TestOverdueShares(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	for i := range 30 {
		mustReceived(t, s, fmt.Sprintf("evt_backlog_%d", i))
	}
	o := effects.Outbound{Target: "receipt", Key: "r_share", Body: json.RawMessage(`{}`)}
	e, err := commitPlan(t, s, "evt_waiting_outbox", effects.Plan{Outbound: []effects.Outbound{o}})
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	got, err := s.Overdue(ctx, later, 20)
	if err != nil || len(got) != 20 {
		t.Fatalf("got %d, %v; want 20", len(got), err)
	}
	found := false
	seen := map[inbox.Key]bool{}
	for _, p := range got {
		found = found || p.Key == e.Key
		if seen[p.Key] {
			t.Errorf("%s listed twice", p.Key)
		}
		seen[p.Key] = true
	}
	if !found {
		t.Errorf("the event waiting for its outbox is not among the first 20 overdue: %+v", got)
	}
	if all, err := s.Overdue(ctx, later, 100); err != nil || len(all) != 31 {
		t.Errorf("with room for all: got %d, %v; want 31", len(all), err)
	}
	// Shares that end inside a page resume after their last item: over
	// calls small enough to cut every page, nothing is lost or repeated.
	for _, limit := range []int{1, 7, 25} {
		got, err := s.Overdue(ctx, later, limit)
		keys := map[inbox.Key]bool{}
		for _, p := range got {
			keys[p.Key] = true
		}
		if err != nil || len(got) != min(limit, 31) || len(keys) != len(got) {
			t.Errorf("limit %d: got %d (%d distinct), %v", limit, len(got), len(keys), err)
		}
	}
	if got, err := s.Overdue(ctx, time.Unix(-1e9, 0), 10); err != nil || len(got) != 0 {
		t.Errorf("a cutoff before 1970: got %+v, %v; want nothing", got, err)
	}
}

// TestCompleteDelivered: rows delivered before the commit (forwarding
// ahead of it) are written delivered and never claimed; an event whose
// rows all were is settled by its commit (out of the sweep's view,
// expiring, its body kept as long), and one with another row to deliver
// waits in the outbox partitions as any.
func TestCompleteDelivered(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	fwd := effects.Outbound{Action: effects.ActionEventBridge, Target: "eventbridge:stripe:bus", Key: "fwd", Body: json.RawMessage(`{"bus":"bus"}`)}
	receipt := effects.Outbound{Target: "receipt", Key: "receipt", Body: json.RawMessage(`{}`)}
	at := t0.Add(time.Second)
	later := t0.Add(time.Hour)

	t.Run("all delivered: settled in the commit", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_ahead_all", "worker-a")
		// Committed late, past what the body was written to last: the
		// commit that finishes the event must extend it.
		at := t0.Add(inboxstore.BodyGrace + 30*time.Minute)
		if err := s.CompleteDeliveredExpiring(ctx, e, "worker-a", effects.Plan{Outbound: []effects.Outbound{fwd}}, inbox.OutcomeIgnored, []string{"fwd"}, at, at); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, e.Key, at)
		if got.Status != inbox.StatusProcessed || got.OutboxPending || !got.DueAt.IsZero() || !slices.Equal(got.OutboxRows, []string{skey("fwd")}) ||
			!got.ExpiresAt.Equal(time.Unix(at.Add(retention).Unix(), 0)) {
			t.Errorf("event: got %+v, want processed, settled, expiring after the retention", got)
		}
		if got.BodyUntil.Before(got.ExpiresAt) {
			t.Errorf("body until %s, before its event's expiry %s", got.BodyUntil, got.ExpiresAt)
		}
		row, err := s.Row(ctx, skey("fwd"))
		if err != nil || row.State != outbox.Delivered || row.Attempts != 1 || row.Body != nil || row.DeliveredTo != "eventbridge" || row.DeliveredAt.IsZero() {
			t.Errorf("row: got %+v, %v; want delivered, one attempt, no body", row, err)
		}
		if _, err := s.ClaimRow(ctx, skey("fwd"), "w", later, later.Add(time.Minute)); !errors.Is(err, outbox.ErrFinal) {
			t.Errorf("claim of the row: got %v, want outbox.ErrFinal", err)
		}
		if due, err := s.Overdue(ctx, later, 10); err != nil || slices.ContainsFunc(due, func(p inboxstore.Pending) bool { return p.Key == e.Key }) {
			t.Errorf("overdue: got %+v %v, want the event out of the sweep's view", due, err)
		}
	})
	t.Run("another row to deliver: pending", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_ahead_some", "worker-a")
		plan := effects.Plan{Outbound: []effects.Outbound{{Action: fwd.Action, Target: fwd.Target, Key: "fwd2", Body: fwd.Body}, receipt}}
		if err := s.CompleteDeliveredExpiring(ctx, e, "worker-a", plan, inbox.OutcomeApplied, []string{"fwd2"}, at, at); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, e.Key, at)
		if !got.OutboxPending || !got.ExpiresAt.IsZero() || len(got.OutboxRows) != 2 {
			t.Errorf("event: got %+v, want its outbox pending, no expiry, both rows listed", got)
		}
		if row, err := s.Row(ctx, skey("fwd2")); err != nil || row.State != outbox.Delivered {
			t.Errorf("forwarding row: got %+v, %v; want delivered", row, err)
		}
		if row, err := s.Row(ctx, skey("receipt")); err != nil || row.State != outbox.Pending || row.Body == nil {
			t.Errorf("receipt row: got %+v, %v; want pending, with its body", row, err)
		}
		if due, err := s.Overdue(ctx, later, 10); err != nil || !slices.ContainsFunc(due, func(p inboxstore.Pending) bool { return p.Key == e.Key }) {
			t.Errorf("overdue: got %+v %v, want the event in the sweep's view", due, err)
		}
	})
	t.Run("fenced by the lease", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_ahead_lost", "worker-a")
		plan := effects.Plan{Outbound: []effects.Outbound{{Action: fwd.Action, Target: fwd.Target, Key: "fwd3", Body: fwd.Body}}}
		if err := s.CompleteDeliveredExpiring(ctx, e, "worker-b", plan, inbox.OutcomeIgnored, []string{"fwd3"}, at, at); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Errorf("commit by another: got %v, want inbox.ErrLeaseLost", err)
		}
		if _, err := s.Row(ctx, skey("fwd3")); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("row after a refused commit: got %v, want none", err)
		}
	})
}
