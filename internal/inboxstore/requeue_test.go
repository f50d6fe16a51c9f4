package inboxstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// TestRequeue: each status is made claimable the way it must be, and
// every change leaves the event in the unfinished index, due now.
func TestRequeue(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	at := t0.Add(time.Hour)
	due := at.Truncate(time.Millisecond)
	overdue := func(k inbox.Key) bool {
		t.Helper()
		ps, err := s.Overdue(ctx, at.Add(time.Millisecond), 100)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ps, func(p inboxstore.Pending) bool { return p.Key == k && p.DueAt.Equal(due) })
	}

	t.Run("dead", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_rq_dead", "w")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "w", Status: inbox.StatusDead, Cause: "bug", MessageID: "m1"}, t0); err != nil {
			t.Fatal(err)
		}
		got, did, err := s.Requeue(ctx, e.Key, at, false)
		if err != nil || did != inboxstore.Revived || got.Status != inbox.StatusFailed || got.RevivedAttempts != 1 || got.LastError != "bug" || !got.ExpiresAt.IsZero() || got.DeadBy != "" {
			t.Fatalf("requeue: got %+v %q %v; want revived, failed, history kept", got, did, err)
		}
		if !overdue(e.Key) {
			t.Error("revived event is not in the unfinished index, due now")
		}
	})
	t.Run("failed", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_rq_failed", "w")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "503", RetryAt: at.Add(time.Hour)}, t0); err != nil {
			t.Fatal(err)
		}
		got, did, err := s.Requeue(ctx, e.Key, at, false)
		if err != nil || did != inboxstore.MadeDue || got.Status != inbox.StatusFailed || !got.DueAt.Equal(due) || got.Attempts != 1 {
			t.Fatalf("requeue: got %+v %q %v; want made due now", got, did, err)
		}
		if _, err := s.Claim(ctx, e.Key, "w2", at, at.Add(time.Minute)); err != nil {
			t.Errorf("claim after requeue (the backoff cut short): %v", err)
		}
	})
	t.Run("processing", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_rq_busy", "w") // lease until t0+30s
		if _, _, err := s.Requeue(ctx, e.Key, t0.Add(time.Second), true); !errors.Is(err, inbox.ErrClaimed) {
			t.Errorf("live lease: got %v, want inbox.ErrClaimed", err)
		}
		if _, did, err := s.Requeue(ctx, e.Key, at, false); err != nil || did != inboxstore.Claimable {
			t.Errorf("ended lease: got %q %v, want claimable", did, err)
		}
	})
	t.Run("processed", func(t *testing.T) {
		e, err := commitPlan(t, s, "evt_rq_done", effects.Plan{Facts: []effects.Fact{{Kind: "charge", Key: "ch_rq"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Requeue(ctx, e.Key, at, false); !errors.Is(err, inbox.ErrAlreadyProcessed) {
			t.Errorf("without force: got %v, want inbox.ErrAlreadyProcessed", err)
		}
		if got := mustGet(t, s, e.Key, at); got.Status != inbox.StatusProcessed {
			t.Errorf("without force: the event is %s, want processed", got.Status)
		}
		got, did, err := s.Requeue(ctx, e.Key, at, true)
		if err != nil || did != inboxstore.Rerun || got.Status != inbox.StatusFailed || got.Outcome != "" || got.PreviousOutcome != inbox.OutcomeApplied ||
			got.Reruns != 1 || got.RevivedAttempts != got.Attempts || !got.ExpiresAt.IsZero() || !slices.Equal(got.Touched, []string{sid("fact#charge#ch_rq")}) {
			t.Fatalf("force: got %+v %q %v; want a re-run, failed and due, the history kept", got, did, err)
		}
		if !overdue(e.Key) {
			t.Error("re-run event is not in the unfinished index, due now")
		}
		// The re-run goes through the same commit: the fact exists, so it
		// ends duplicate_effect with nothing written twice.
		c := mustClaim(t, s, e.Key, "w2", at, at.Add(time.Minute))
		err = s.Complete(ctx, c, "w2", effects.Plan{Facts: []effects.Fact{{Kind: "charge", Key: "ch_rq"}}}, inbox.OutcomeApplied, at)
		if r := refusedOf(t, err); len(r.Exists) != 1 {
			t.Errorf("re-run commit: got %v, want the fact refused", err)
		}
	})
	t.Run("processed with an unsettled outbox", func(t *testing.T) {
		e, err := commitPlan(t, s, "evt_rq_outbox", effects.Plan{Outbound: []effects.Outbound{{Target: "receipt", Key: "rq_row", Body: json.RawMessage(`{}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Requeue(ctx, e.Key, at, true); !errors.Is(err, inbox.ErrOutboxPending) {
			t.Errorf("got %v, want inbox.ErrOutboxPending", err)
		}
		if got := mustGet(t, s, e.Key, at); got.Status != inbox.StatusProcessed || !got.OutboxPending {
			t.Errorf("the event is %+v, want processed with its outbox pending", got)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, _, err := s.Requeue(ctx, inbox.Key{Source: "stripe", EventID: "evt_none"}, at, true); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("got %v, want inbox.ErrNotFound", err)
		}
	})
}

// TestSelect: a selection returns exactly the events of its status and
// time range, across shards, and its cursor resumes where a page ended
// with nothing returned twice or left out.
func TestSelect(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	var dead, failed []inbox.Key
	for i := range 24 {
		e := newEvent(fmt.Sprintf("evt_sel_%02d", i), []byte(`{}`))
		e.ReceivedAt = t0.Add(time.Duration(i) * time.Minute)
		e.DueAt = e.ReceivedAt.Truncate(time.Millisecond)
		mustInsert(t, s, e)
		c := mustClaim(t, s, e.Key, "w", e.ReceivedAt, e.ReceivedAt.Add(time.Second))
		f := inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "x", RetryAt: e.ReceivedAt.Add(time.Hour)}
		if i%3 == 0 {
			f = inbox.Failure{Owner: "w", Status: inbox.StatusDead, Cause: "x", MessageID: "m"}
		}
		if _, err := s.Fail(ctx, c.Key, f, e.ReceivedAt); err != nil {
			t.Fatal(err)
		}
		if i >= 6 && i < 18 {
			if i%3 == 0 {
				dead = append(dead, e.Key)
			} else {
				failed = append(failed, e.Key)
			}
		}
	}
	from, to := t0.Add(6*time.Minute).Truncate(time.Millisecond), t0.Add(18*time.Minute).Truncate(time.Millisecond)
	now := t0.Add(time.Hour)
	selectAll := func(status inbox.Status, limit int) ([]inbox.Key, int) {
		t.Helper()
		var keys []inbox.Key
		pages, cur := 0, ""
		for {
			got, next, err := s.Select(ctx, inboxstore.Selection{Status: status, From: from, To: to, Cursor: cur, Limit: limit}, now)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, g := range got {
				if g.Status != status || g.ReceivedAt.Before(from) || !g.ReceivedAt.Before(to) || g.EventType != "invoice.paid" {
					t.Errorf("selected %+v, outside the selection", g)
				}
				keys = append(keys, g.Key)
			}
			if next == "" {
				break
			}
			cur = next
		}
		slices.SortFunc(keys, func(a, b inbox.Key) int { return compareKeys(a, b) })
		return keys, pages
	}
	for _, limit := range []int{100, 1, 3} {
		got, pages := selectAll(inbox.StatusDead, limit)
		if !slices.Equal(got, dead) {
			t.Errorf("dead, limit %d: got %v, want %v", limit, got, dead)
		}
		if limit == 1 && pages < len(dead) {
			t.Errorf("dead, limit 1: %d pages for %d events", pages, len(dead))
		}
		if got, _ := selectAll(inbox.StatusFailed, limit); !slices.Equal(got, failed) {
			t.Errorf("failed, limit %d: got %v, want %v", limit, got, failed)
		}
	}
	// A dead event is out of the sweep's reach: the sweep reads only the
	// unfinished and outbox partitions.
	ps, err := s.Overdue(ctx, now.Add(2*time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Status == inbox.StatusDead {
			t.Errorf("Overdue returned the dead event %s", p.Key)
		}
	}
	if _, _, err := s.Select(ctx, inboxstore.Selection{Status: inbox.StatusProcessed}, now); err == nil {
		t.Error("a selection of processed events: no error")
	}
	if _, _, err := s.Select(ctx, inboxstore.Selection{Status: inbox.StatusDead, Cursor: "3/x", Limit: 1}, now); err == nil {
		t.Error("a forged cursor: no error")
	}
}

func compareKeys(a, b inbox.Key) int {
	switch {
	case a.String() < b.String():
		return -1
	case a.String() > b.String():
		return 1
	}
	return 0
}

// TestResolveAndResend: only rows for review may be resolved or resent; a
// resend makes the row pending and its event's outbox the sweep's again,
// in one write.
func TestResolveAndResend(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	rows := []effects.Outbound{
		{Target: "receipt", Key: "rv_unknown", Body: json.RawMessage(`{"n":1}`)},
		{Target: "receipt", Key: "rv_rejected", Body: json.RawMessage(`{"n":2}`)},
		{Target: "receipt", Key: "rv_delivered", Body: json.RawMessage(`{"n":3}`)},
	}
	e, err := commitPlan(t, s, "evt_review", effects.Plan{Outbound: rows})
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Second)
	finish := func(key string, st outbox.State) {
		t.Helper()
		if _, err := s.ClaimRow(ctx, skey(key), "w", now, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRow(ctx, skey(key), "w", outbox.Result{State: st, Cause: "x"}, now); err != nil {
			t.Fatal(err)
		}
	}
	finish("rv_unknown", outbox.Unknown)
	finish("rv_rejected", outbox.Rejected)
	finish("rv_delivered", outbox.Delivered)
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	review := func() []string {
		t.Helper()
		rs, err := s.ForReview(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range rs {
			keys = append(keys, r.Key)
		}
		slices.Sort(keys)
		return keys
	}
	if got := review(); !slices.Equal(got, []string{skey("rv_rejected"), skey("rv_unknown")}) {
		t.Fatalf("for review: %v", got)
	}

	at := now.Add(time.Minute)
	if _, err := s.ResolveRow(ctx, skey("rv_delivered"), "checked", at); !errors.Is(err, outbox.ErrNotForReview) {
		t.Errorf("resolve delivered: got %v, want outbox.ErrNotForReview", err)
	}
	if _, err := s.ResendRow(ctx, skey("rv_delivered"), at); !errors.Is(err, outbox.ErrNotForReview) {
		t.Errorf("resend delivered: got %v, want outbox.ErrNotForReview", err)
	}
	if _, err := s.ResendRow(ctx, skey("rv_none"), at); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("resend missing: got %v, want inbox.ErrNotFound", err)
	}
	got, err := s.ResolveRow(ctx, skey("rv_rejected"), "refunded by hand", at)
	if err != nil || got.State != outbox.Resolved {
		t.Fatalf("resolve: got %+v %v", got, err)
	}
	if _, err := s.ResolveRow(ctx, skey("rv_rejected"), "again", at); !errors.Is(err, outbox.ErrNotForReview) {
		t.Errorf("resolve twice: got %v, want outbox.ErrNotForReview", err)
	}
	if _, err := s.ClaimRow(ctx, skey("rv_rejected"), "w", at, at.Add(time.Minute)); !errors.Is(err, outbox.ErrFinal) {
		t.Errorf("claim of a resolved row: got %v, want outbox.ErrFinal", err)
	}

	// A delivery pass that read the event before the resend (generation
	// 0) and found every row final must not settle the outbox after it.
	stale := mustGet(t, s, e.Key, at).OutboxGen
	if _, err := s.ResendRow(ctx, skey("rv_unknown"), at); err != nil {
		t.Fatalf("resend: %v", err)
	}
	if err := s.SettleOutbox(ctx, e.Key, stale, true, time.Time{}, at); err != nil {
		t.Fatal(err)
	}
	if ev := mustGet(t, s, e.Key, at); !ev.OutboxPending || ev.OutboxGen != stale+1 {
		t.Fatalf("a stale pass settled the outbox after a resend: %+v", ev)
	}
	if got := review(); len(got) != 0 {
		t.Errorf("for review after resolve and resend: %v", got)
	}
	ev := mustGet(t, s, e.Key, at)
	if !ev.OutboxPending || !ev.ExpiresAt.IsZero() {
		t.Errorf("event after resend: %+v, want its outbox pending and no expiry", ev)
	}
	ps, err := s.Overdue(ctx, at.Add(time.Millisecond), 100)
	if err != nil || !slices.ContainsFunc(ps, func(p inboxstore.Pending) bool { return p.Key == e.Key }) {
		t.Errorf("the event is not the sweep's after a resend: %+v %v", ps, err)
	}
	r, err := s.ClaimRow(ctx, skey("rv_unknown"), "w2", at, at.Add(time.Minute))
	if err != nil || r.State != outbox.Pending || string(r.Body) != `{"n":1}` || r.Attempts != 0 || r.Resent != 1 {
		t.Errorf("claim after resend: got %+v %v; want the pending row with its body and a fresh attempts budget", r, err)
	}
	if _, err := s.ResendRow(ctx, skey("rv_unknown"), at); !errors.Is(err, outbox.ErrNotForReview) {
		t.Errorf("resend of a row being delivered: got %v, want outbox.ErrNotForReview", err)
	}
}

// updateHook runs before the first UpdateItem passes through.
type updateHook struct {
	inboxstore.API
	before func()
	done   bool
}

func (h *updateHook) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !h.done {
		h.done = true
		h.before()
	}
	return h.API.UpdateItem(ctx, in, opts...)
}

// TestForceDoesNotRerunWhatJustFinished: a forced requeue of an event that
// was failed when read, and that a worker processed between the read and
// the write, is not a re-run: force re-runs what was processed when the
// operator asked, never an event that has just finished.
func TestForceDoesNotRerunWhatJustFinished(t *testing.T) {
	cfg := mustDynamo(t).SafeConfig()
	db := dynamodb.NewFromConfig(cfg)
	name := fmt.Sprintf("inbox-%d", tables.Add(1))
	if _, err := db.CreateTable(context.Background(), inboxstore.TableInput(name)); err != nil {
		t.Fatal(err)
	}
	s := inboxstore.New(db, name, retention)
	ctx := context.Background()
	e := mustClaimed(t, s, "evt_race", "w")
	if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "503", RetryAt: t0}, t0); err != nil {
		t.Fatal(err)
	}
	hook := &updateHook{API: db, before: func() {
		// A worker claims and commits it after Requeue's read.
		claimed, err := s.Claim(ctx, e.Key, "w2", t0.Add(time.Second), t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, claimed, "w2", effects.Plan{}, inbox.OutcomeApplied, t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}}
	raced := inboxstore.New(hook, name, retention)
	got, did, err := raced.Requeue(ctx, e.Key, t0.Add(3*time.Second), true)
	if !errors.Is(err, inbox.ErrAlreadyProcessed) || did != "" || got.Status != inbox.StatusProcessed {
		t.Fatalf("got %+v %q %v; want the processed event left alone (ErrAlreadyProcessed)", got, did, err)
	}
	if ev := mustGet(t, s, e.Key, t0.Add(3*time.Second)); ev.Status != inbox.StatusProcessed || ev.Reruns != 0 {
		t.Errorf("event: %+v, want processed, not re-run", ev)
	}
}

// TestRerunKeepsFirstRunsParts: a forced re-run's commit adds its parts and
// rows to those of the first run, so inspect and the outbox review still
// find the first run's.
func TestRerunKeepsFirstRunsParts(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	first := effects.Plan{
		Facts:    []effects.Fact{{Kind: "k", Key: "a"}},
		Outbound: []effects.Outbound{{Target: "receipt", Key: "rr_1", Body: json.RawMessage(`{}`)}},
	}
	e, err := commitPlan(t, s, "evt_rerun_parts", first)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	if _, err := s.ClaimRow(ctx, skey("rr_1"), "w", at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRow(ctx, skey("rr_1"), "w", outbox.Result{State: outbox.Delivered}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, at); err != nil {
		t.Fatal(err)
	}
	if _, did, err := s.Requeue(ctx, e.Key, at, true); err != nil || did != inboxstore.Rerun {
		t.Fatalf("requeue: %q %v", did, err)
	}
	claimed := mustClaim(t, s, e.Key, "w2", at, at.Add(time.Minute))
	// The fixed handler's plan, less the fact that exists.
	second := effects.Plan{
		Facts:    []effects.Fact{{Kind: "k", Key: "b"}},
		Outbound: []effects.Outbound{{Target: "receipt", Key: "rr_2", Body: json.RawMessage(`{}`)}},
	}
	if err := s.Complete(ctx, claimed, "w2", second, inbox.OutcomeApplied, at); err != nil {
		t.Fatal(err)
	}
	ev := mustGet(t, s, e.Key, at)
	if !slices.Equal(ev.OutboxRows, []string{skey("rr_1"), skey("rr_2")}) || !ev.OutboxPending {
		t.Errorf("outbox rows: %v (pending %t), want both runs' rows, pending", ev.OutboxRows, ev.OutboxPending)
	}
	for _, id := range []string{effects.Fact{Kind: "k", Key: "a"}.ID(), effects.Fact{Kind: "k", Key: "b"}.ID()} {
		if !slices.Contains(ev.Touched, sid(id)) {
			t.Errorf("touched %v: no %s", ev.Touched, id)
		}
	}
}

// TestRerunFencesTheFirstRunsSettle: a delivery pass of the first run
// that read the outbox generation before a forced re-run, and settles
// after the re-run's commit added a pending row (a slow pass, an SDK retry
// of its settle), settles nothing: the re-run moved the generation, so
// the new row stays pending and the event in the sweep's index.
func TestRerunFencesTheFirstRunsSettle(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	first := effects.Plan{Outbound: []effects.Outbound{{Target: "receipt", Key: "gen_1", Body: json.RawMessage(`{}`)}}}
	e, err := commitPlan(t, s, "evt_rerun_gen", first)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	read := mustGet(t, s, e.Key, at).OutboxGen // the slow pass reads it
	if _, err := s.ClaimRow(ctx, skey("gen_1"), "w", at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRow(ctx, skey("gen_1"), "w", outbox.Result{State: outbox.Delivered}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleOutbox(ctx, e.Key, read, true, time.Time{}, at); err != nil {
		t.Fatal(err)
	}
	if _, did, err := s.Requeue(ctx, e.Key, at, true); err != nil || did != inboxstore.Rerun {
		t.Fatalf("requeue: %q %v", did, err)
	}
	claimed := mustClaim(t, s, e.Key, "w2", at, at.Add(time.Minute))
	if claimed.OutboxGen == read {
		t.Errorf("the re-run left the outbox generation at %d", read)
	}
	second := effects.Plan{Outbound: []effects.Outbound{{Target: "receipt", Key: "gen_2", Body: json.RawMessage(`{}`)}}}
	if err := s.Complete(ctx, claimed, "w2", second, inbox.OutcomeApplied, at); err != nil {
		t.Fatal(err)
	}
	// The first run's pass settles again, late, with what it read.
	if err := s.SettleOutbox(ctx, e.Key, read, true, time.Time{}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	ev := mustGet(t, s, e.Key, at.Add(time.Second))
	if !ev.OutboxPending || !ev.ExpiresAt.IsZero() {
		t.Errorf("after the stale settle: pending %t, expires %v; want the re-run's row still pending, no expiry", ev.OutboxPending, ev.ExpiresAt)
	}
	// The re-run's own pass, with the generation it claimed, settles.
	if _, err := s.ClaimRow(ctx, skey("gen_2"), "w2", at, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRow(ctx, skey("gen_2"), "w2", outbox.Result{State: outbox.Delivered}, at); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleOutbox(ctx, e.Key, claimed.OutboxGen, true, time.Time{}, at.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if ev := mustGet(t, s, e.Key, at.Add(2*time.Second)); ev.OutboxPending {
		t.Error("the re-run's own pass did not settle it")
	}
}
