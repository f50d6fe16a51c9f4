package inboxstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// hookAPI passes every call to the table, except those its func fields
// take.
type hookAPI struct {
	inboxstore.API
	put func(context.Context, *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error, bool)
	get func(context.Context, *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error, bool)
}

func (h *hookAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if h.put != nil {
		if out, err, took := h.put(ctx, in); took {
			return out, err
		}
	}
	return h.API.PutItem(ctx, in, opts...)
}

func (h *hookAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if h.get != nil {
		if out, err, took := h.get(ctx, in); took {
			return out, err
		}
	}
	return h.API.GetItem(ctx, in, opts...)
}

// loseBody deletes the body of k's event, which the store's rules never
// do: what the store does with an event whose body is gone.
func loseBody(tb testing.TB, db *dynamodb.Client, table string, k inbox.Key) {
	tb.Helper()
	body := rawBody(tb, db, table, k)
	if _, err := db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": body["pk"]}}); err != nil {
		tb.Fatal(err)
	}
}

func pkOf(key map[string]types.AttributeValue) string {
	v, _ := key["pk"].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func epoch(tb testing.TB, av map[string]types.AttributeValue, name string) (time.Time, bool) {
	tb.Helper()
	v, ok := av[name].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return time.Unix(secs, 0), true
}

// checkBodyKept fails unless k's body outlives its status: it expires no
// earlier than the status does, and, while the event waits to finish (no
// expiry), not within a retention of now. The status's body_expires must
// not promise more than the body has.
func checkBodyKept(tb testing.TB, db *dynamodb.Client, table string, k inbox.Key, now time.Time) {
	tb.Helper()
	st, body := rawItem(tb, db, table, "event#"+k.String()), rawBody(tb, db, table, k)
	bodyUntil, ok := epoch(tb, body, "expires_at")
	if !ok {
		tb.Fatalf("%s: body has no expiry", k)
	}
	if recorded, _ := epoch(tb, st, "body_expires"); recorded.After(bodyUntil) {
		tb.Errorf("%s: status records its body until %s, but the body expires at %s", k, recorded, bodyUntil)
	}
	if until, ok := epoch(tb, st, "expires_at"); ok {
		if bodyUntil.Before(until) {
			tb.Errorf("%s: body expires at %s, before its status (%s)", k, bodyUntil, until)
		}
		return
	}
	if bodyUntil.Before(now.Add(retention)) {
		tb.Errorf("%s: unfinished, and its body expires at %s, within a retention of %s", k, bodyUntil, now)
	}
}

// TestStatusItemIsSmall: through a life with a commit of a fact, two
// entity updates and an outbox row (a Stripe invoice's), its settling and
// a death, the status item stays within one write unit (1 KB), whatever
// the payload's size, which the body alone holds.
func TestStatusItemIsSmall(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	invoice, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", "stripe", "invoice.paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent("evt_3SbVxYLkdIwHu7ix1ZxPXT7r", invoice)
	e.Key.Account = "acct_1SbVxYLkdIwHu7ixAbCdEfGh"
	e.Headers = map[string]string{"Stripe-Signature": "t=1764500000,v1=" + strings.Repeat("a", 64), "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"}
	e.RequestID = "Sx1mPhLvIAMEVKQ="
	mustInsert(t, s, e)
	size := func(step string) {
		t.Helper()
		st := rawItem(t, db, table, "event#"+e.Key.String())
		n := emulators.ItemSize(st)
		t.Logf("%-10s status %4d bytes, body %5d bytes", step, n, emulators.ItemSize(rawBody(t, db, table, e.Key)))
		if n > 1024 {
			t.Errorf("%s: the status item is %d bytes, over one write unit", step, n)
		}
	}
	size("stored")
	owner := "7f9c2ba4-e88f-4c2a-9c3b-1e2d3f4a5b6c"
	ev := mustClaim(t, s, e.Key, owner, t0, t0.Add(5*time.Minute))
	size("claimed")
	plan := effects.Plan{
		Facts: []effects.Fact{{Kind: "invoice_paid", Key: "in_1SbVxYLkdIwHu7ixQwErTyUi"}},
		Updates: []effects.Update{
			{Entity: "subscription", Key: "sub_1SbVxYLkdIwHu7ixZxCvBnMa", Set: map[string]any{"status": "active"}},
			{Entity: "customer", Key: "cus_TYvXqLkdIwHu7i", Set: map[string]any{"paid_through": int64(1767225600)}},
		},
		Outbound: []effects.Outbound{{Key: "receipt/in_1SbVxYLkdIwHu7ixQwErTyUi", Target: "receipt", Body: []byte(`{"invoice":"in_1SbVxYLkdIwHu7ixQwErTyUi"}`)}},
	}
	if err := s.Complete(ctx, ev, owner, plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	size("committed")
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	size("settled")
	checkBodyKept(t, db, table, e.Key, t0.Add(2*time.Second))
}

// TestBodyBeforeStatus: a crash between the body's write and the status's
// leaves a body that nothing points at; the provider's retry stores the
// event, whose claim finds its payload.
func TestBodyBeforeStatus(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	_, table := newStoreOn(t, db)
	crash := true
	api := &hookAPI{API: db, put: func(_ context.Context, in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error, bool) {
		if crash && strings.HasPrefix(pkOf(in.Item), "event#") {
			return nil, errors.New("the process stopped"), true
		}
		return nil, nil, false
	}}
	s := inboxstore.New(api, table, retention)
	e := newEvent("evt_crash", []byte(`{"id":"evt_crash","n":1}`))
	if _, err := s.Insert(context.Background(), e, t0); err == nil {
		t.Fatal("the insert that stopped reported success")
	}
	if _, err := s.Get(context.Background(), e.Key, t0); !errors.Is(err, inbox.ErrNotFound) {
		t.Fatalf("after the stop: got %v, want no event", err)
	}
	crash = false
	if _, err := s.Insert(context.Background(), e, t0.Add(time.Minute)); err != nil {
		t.Fatalf("the provider's retry: %v", err)
	}
	got := mustClaim(t, s, e.Key, "w", t0.Add(2*time.Minute), t0.Add(3*time.Minute))
	if !bytes.Equal(got.Payload, e.Payload) {
		t.Errorf("claimed payload %q, want %q", got.Payload, e.Payload)
	}
	checkBodyKept(t, db, table, e.Key, t0.Add(2*time.Minute))
}

// TestBodyReadFallsBackToConsistent: a body the eventually consistent read
// misses (written a moment ago) is read again consistently, and found.
func TestBodyReadFallsBackToConsistent(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	_, table := newStoreOn(t, db)
	var eventual, consistent atomic.Int32
	api := &hookAPI{API: db, get: func(_ context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error, bool) {
		if !strings.HasPrefix(pkOf(in.Key), "body#") {
			return nil, nil, false
		}
		if !aws.ToBool(in.ConsistentRead) {
			eventual.Add(1)
			return &dynamodb.GetItemOutput{}, nil, true // not there yet
		}
		consistent.Add(1)
		return nil, nil, false
	}}
	s := inboxstore.New(api, table, retention)
	e := mustReceived(t, s, "evt_lag")
	got := mustClaim(t, s, e.Key, "w", t0, t0.Add(time.Minute))
	if !bytes.Equal(got.Payload, e.Payload) || got.Kind != e.Kind || got.Type != e.Type {
		t.Errorf("claimed %+v, want the stored event's payload and metadata", got)
	}
	if eventual.Load() != 1 || consistent.Load() != 1 {
		t.Errorf("body reads: %d eventual, %d consistent; want one of each", eventual.Load(), consistent.Load())
	}
}

// TestBodyLost: a status whose body is gone (which the store's rules
// prevent) is reported as invalid, not retried into: the claim stands and
// its caller records the failure.
func TestBodyLost(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	e := mustReceived(t, s, "evt_lost")
	loseBody(t, db, table, e.Key)
	got, err := s.Claim(context.Background(), e.Key, "w", t0, t0.Add(time.Minute))
	if !errors.Is(err, inbox.ErrInvalid) || !errors.Is(err, inboxstore.ErrBodyLost) {
		t.Fatalf("claim: got %v, want inbox.ErrInvalid and ErrBodyLost", err)
	}
	if got.Key != e.Key || got.Status != inbox.StatusProcessing || got.LeaseOwner != "w" {
		t.Errorf("claim's event: got %+v, want the claimed status", got)
	}
}

// TestDuplicateWithAnotherPayload: a second delivery of an event with
// other bytes writes its own body, which nothing points at; the stored
// event keeps the first's.
func TestDuplicateWithAnotherPayload(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	first := newEvent("evt_two", []byte(`{"n":1}`))
	mustInsert(t, s, first)
	// The duplicate read misses the status (written a moment ago), so
	// the second delivery gets as far as its own body.
	api := &hookAPI{API: db, get: func(_ context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error, bool) {
		if strings.HasPrefix(pkOf(in.Key), "event#") && !aws.ToBool(in.ConsistentRead) {
			return &dynamodb.GetItemOutput{}, nil, true
		}
		return nil, nil, false
	}}
	lagging := inboxstore.New(api, table, retention)
	second := newEvent("evt_two", []byte(`{"n":2}`))
	if _, err := lagging.Insert(ctx, second, t0.Add(time.Second)); !errors.Is(err, inbox.ErrDuplicate) {
		t.Fatalf("second delivery: got %v, want inbox.ErrDuplicate", err)
	}
	got := mustClaim(t, s, first.Key, "w", t0.Add(time.Minute), t0.Add(2*time.Minute))
	if !bytes.Equal(got.Payload, first.Payload) {
		t.Errorf("claimed payload %s, want the first delivery's %s", got.Payload, first.Payload)
	}
}

// TestBodyOutlivesItsStatus: on every path that gives the event an expiry
// or leaves it waiting for a claim — a commit, an outbox's settling, a
// death, a revival, a forced re-run, a resend, a claim — the body is made
// to last as long, also when the path runs long after the event was
// stored (past BodyGrace, when the body's first expiry no longer covers
// it), and without a write to the body when it runs soon after.
func TestBodyOutlivesItsStatus(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	late := inboxstore.BodyGrace + 2*retention
	for _, after := range []time.Duration{time.Minute, late, 3 * late} {
		name := after.String()
		at := t0.Add(after)
		check := func(k inbox.Key, now time.Time) {
			t.Helper()
			checkBodyKept(t, db, table, k, now)
		}

		// A commit without rows, long after the claim's extension.
		e := mustReceived(t, s, "evt_commit_"+name)
		ev := mustClaim(t, s, e.Key, "w", at, at.Add(time.Minute))
		check(e.Key, at)
		if err := s.Complete(ctx, ev, "w", effects.Plan{}, inbox.OutcomeIgnored, at.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		check(e.Key, at.Add(30*time.Second))

		// A row's outbox settled later than that.
		e = mustReceived(t, s, "evt_settle_"+name)
		ev = mustClaim(t, s, e.Key, "w", t0, t0.Add(time.Minute))
		plan := effects.Plan{Outbound: []effects.Outbound{{Key: "r/" + name, Target: "receipt", Body: []byte(`{}`)}}}
		if err := s.Complete(ctx, ev, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, at); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, e.Key, at); got.OutboxPending || got.ExpiresAt.IsZero() {
			t.Fatalf("%s: settle left %+v", name, got)
		}
		check(e.Key, at)

		// A resend of that row: waiting for its outbox again.
		row := effects.ScopedKey(ev.PartScope(), "r/"+name)
		if _, err := s.ClaimRow(ctx, row, "d", at, at.Add(time.Minute)); err == nil {
			if err := s.FinishRow(ctx, row, "d", outbox.Result{State: outbox.Rejected, Cause: "no"}, at); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.ResendRow(ctx, row, at.Add(retention/2)); err != nil {
			t.Fatal(err)
		}
		check(e.Key, at.Add(retention/2))

		// A death, then a revival, then a forced re-run.
		e = mustReceived(t, s, "evt_dead_"+name)
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Status: inbox.StatusDead, Cause: "test"}, at); err != nil {
			t.Fatal(err)
		}
		check(e.Key, at)
		revivedAt := at.Add(after)
		if _, did, err := s.Requeue(ctx, e.Key, revivedAt, false); err != nil || did != inboxstore.Revived {
			t.Fatalf("%s: revive: %s, %v", name, did, err)
		}
		check(e.Key, revivedAt)
		ev = mustClaim(t, s, e.Key, "w", revivedAt, revivedAt.Add(time.Minute))
		if !bytes.Equal(ev.Payload, e.Payload) {
			t.Fatalf("%s: revived event's payload %q, want %q", name, ev.Payload, e.Payload)
		}
		if err := s.Complete(ctx, ev, "w", effects.Plan{}, inbox.OutcomeIgnored, revivedAt.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		rerunAt := revivedAt.Add(retention / 2)
		if _, did, err := s.Requeue(ctx, e.Key, rerunAt, true); err != nil || did != inboxstore.Rerun {
			t.Fatalf("%s: rerun: %s, %v", name, did, err)
		}
		check(e.Key, rerunAt)
	}
}

// TestBodyNotWrittenWhenFresh: an event finished soon after it was stored
// costs no write to its body beyond the first.
func TestBodyNotWrittenWhenFresh(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	_, table := newStoreOn(t, db)
	var bodyUpdates atomic.Int32
	api := &updateCounter{API: db, count: func(in *dynamodb.UpdateItemInput) {
		if strings.HasPrefix(pkOf(in.Key), "body#") {
			bodyUpdates.Add(1)
		}
	}}
	s := inboxstore.New(api, table, retention)
	ctx := context.Background()
	e := mustReceived(t, s, "evt_fresh")
	ev := mustClaim(t, s, e.Key, "w", t0.Add(time.Second), t0.Add(time.Minute))
	plan := effects.Plan{Outbound: []effects.Outbound{{Key: "r/fresh", Target: "receipt", Body: []byte(`{}`)}}}
	if err := s.Complete(ctx, ev, "w", plan, inbox.OutcomeApplied, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := bodyUpdates.Load(); n != 0 {
		t.Errorf("%d writes to the body after it was stored, want none", n)
	}
	checkBodyKept(t, db, table, e.Key, t0.Add(3*time.Second))
}

type updateCounter struct {
	inboxstore.API
	count func(*dynamodb.UpdateItemInput)
}

func (u *updateCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.count(in)
	return u.API.UpdateItem(ctx, in, opts...)
}

// TestWholeLayoutStillWorks: events an earlier release stored in one item
// (payload and status together) are claimed with their payload, finished,
// settled, killed and revived in that layout, until they expire.
func TestWholeLayoutStillWorks(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	whole := func(id string) inbox.Event {
		t.Helper()
		e := newEvent(id, []byte(`{"id":"`+id+`","old":true}`))
		if err := s.PutWhole(ctx, e); err != nil {
			t.Fatal(err)
		}
		if _, split := rawItem(t, db, table, "event#"+e.Key.String())["body_id"]; split {
			t.Fatal("PutWhole wrote the split layout")
		}
		return e
	}
	e := whole("evt_old_1")
	if _, err := s.Insert(ctx, e, t0); !errors.Is(err, inbox.ErrDuplicate) {
		t.Fatalf("a retry of an old event: got %v, want inbox.ErrDuplicate", err)
	}
	ev := mustClaim(t, s, e.Key, "w", t0, t0.Add(time.Minute))
	if !bytes.Equal(ev.Payload, e.Payload) || ev.Kind != "stripe" {
		t.Fatalf("claimed %+v, want the old item's payload and kind", ev)
	}
	plan := effects.Plan{Outbound: []effects.Outbound{{Key: "r/old", Target: "receipt", Body: []byte(`{}`)}}}
	if err := s.Complete(ctx, ev, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, e.Key, t0.Add(2*time.Second))
	if got.Status != inbox.StatusProcessed || got.OutboxPending || got.ExpiresAt.IsZero() || !bytes.Equal(got.Payload, e.Payload) {
		t.Errorf("after settling: %+v", got)
	}
	if _, did, err := s.Requeue(ctx, e.Key, t0.Add(time.Minute), true); err != nil || did != inboxstore.Rerun {
		t.Fatalf("rerun: %s, %v", did, err)
	}
	if ev := mustClaim(t, s, e.Key, "w2", t0.Add(2*time.Minute), t0.Add(3*time.Minute)); !bytes.Equal(ev.Payload, e.Payload) {
		t.Errorf("re-run's payload %q", ev.Payload)
	}

	d := whole("evt_old_2")
	if _, err := s.Fail(ctx, d.Key, inbox.Failure{Status: inbox.StatusDead, Cause: "test"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, did, err := s.Requeue(ctx, d.Key, t0.Add(time.Minute), false); err != nil || did != inboxstore.Revived {
		t.Fatalf("revive: %s, %v", did, err)
	}
	if ev := mustClaim(t, s, d.Key, "w", t0.Add(2*time.Minute), t0.Add(3*time.Minute)); !bytes.Equal(ev.Payload, d.Payload) {
		t.Errorf("revived old event's payload %q", ev.Payload)
	}
	if _, split := rawItem(t, db, table, "event#"+d.Key.String())["body_id"]; split {
		t.Error("an old event was moved to the split layout")
	}
}

// TestCompleteFirst: the first attempt's commit, unclaimed, lands only on
// the event as it was stored; a claim, a commit or a failure before it
// refuses it, with nothing written.
func TestCompleteFirst(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, _ := newStoreOn(t, db)
	ctx := context.Background()
	fact := effects.Fact{Kind: "invoice_paid", Key: "in_first"}
	plan := effects.Plan{Facts: []effects.Fact{fact}}
	at := t0.Add(time.Second)

	t.Run("as stored", func(t *testing.T) {
		e := mustReceived(t, s, "evt_first")
		ev, err := s.Peek(ctx, e.Key, at)
		if err != nil || !bytes.Equal(ev.Payload, e.Payload) || ev.Status != inbox.StatusReceived {
			t.Fatalf("peek: %+v, %v", ev, err)
		}
		if err := s.CompleteFirst(ctx, ev, plan, inbox.OutcomeApplied, at); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s, e.Key, at)
		if got.Status != inbox.StatusProcessed || got.Attempts != 1 || got.Outcome != inbox.OutcomeApplied || !got.DueAt.IsZero() {
			t.Errorf("after the first commit: %+v", got)
		}
		// Its answer lost, sent again: already processed, written once.
		if err := s.CompleteFirst(ctx, ev, plan, inbox.OutcomeApplied, at); !errors.Is(err, inbox.ErrAlreadyProcessed) {
			t.Errorf("again: got %v, want inbox.ErrAlreadyProcessed", err)
		}
	})

	for _, tt := range []struct {
		name   string
		before func(tb testing.TB, k inbox.Key)
		want   error
	}{
		{"claimed meanwhile", func(tb testing.TB, k inbox.Key) {
			mustClaim(tb, s, k, "other", at, at.Add(time.Minute))
		}, inbox.ErrLeaseLost},
		{"claimed and committed meanwhile", func(tb testing.TB, k inbox.Key) {
			ev := mustClaim(tb, s, k, "other", at, at.Add(time.Minute))
			if err := s.Complete(ctx, ev, "other", effects.Plan{}, inbox.OutcomeIgnored, at); err != nil {
				tb.Fatal(err)
			}
		}, inbox.ErrAlreadyProcessed},
		{"failed meanwhile (a claim whose worker failed it)", func(tb testing.TB, k inbox.Key) {
			mustClaim(tb, s, k, "other", at, at.Add(time.Minute))
			if _, err := s.Fail(ctx, k, inbox.Failure{Owner: "other", Status: inbox.StatusFailed, Cause: "x", RetryAt: at}, at); err != nil {
				tb.Fatal(err)
			}
		}, inbox.ErrLeaseLost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := mustReceived(t, s, "evt_first_"+strings.ReplaceAll(tt.name, " ", "_"))
			ev, err := s.Peek(ctx, e.Key, at)
			if err != nil {
				t.Fatal(err)
			}
			tt.before(t, e.Key)
			f := effects.Fact{Kind: "invoice_paid", Key: e.Key.EventID}
			if err := s.CompleteFirst(ctx, ev, effects.Plan{Facts: []effects.Fact{f}}, inbox.OutcomeApplied, at); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			assertEffectAbsent(t, s, f)
		})
	}

	t.Run("an event stored whole by an earlier release", func(t *testing.T) {
		e := newEvent("evt_first_whole", []byte(`{"old":true}`))
		if err := s.PutWhole(ctx, e); err != nil {
			t.Fatal(err)
		}
		ev, err := s.Peek(ctx, e.Key, at)
		if err != nil || !bytes.Equal(ev.Payload, e.Payload) {
			t.Fatalf("peek: %+v, %v", ev, err)
		}
		if err := s.CompleteFirst(ctx, ev, effects.Plan{}, inbox.OutcomeIgnored, at); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, e.Key, at); got.Status != inbox.StatusProcessed || got.Attempts != 1 {
			t.Errorf("after the first commit: %+v", got)
		}
	})
}

// TestDeathWithoutItsBody: an event whose body is gone (which the rules
// prevent) can still be made dead: it must be able to finish.
func TestDeathWithoutItsBody(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	e := mustReceived(t, s, "evt_lost_dies")
	loseBody(t, db, table, e.Key)
	if _, err := s.Claim(ctx, e.Key, "w", t0.Add(inboxstore.BodyGrace+2*retention), t0.Add(inboxstore.BodyGrace+3*retention)); !errors.Is(err, inboxstore.ErrBodyLost) {
		t.Fatalf("claim: got %v, want ErrBodyLost", err)
	}
	at := t0.Add(inboxstore.BodyGrace + 2*retention)
	if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "w", Status: inbox.StatusDead, Cause: "payload lost", MessageID: "m"}, at); err != nil {
		t.Fatalf("death: %v", err)
	}
	if got, err := s.Status(ctx, e.Key, at); err != nil || got.Status != inbox.StatusDead {
		t.Errorf("after the death: %+v, %v", got, err)
	}
}

// TestSweepKeepsAWaitingBody: an event nobody claims (its processor
// stopped) keeps its body while the sweep reschedules it.
func TestSweepKeepsAWaitingBody(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	e := mustReceived(t, s, "evt_waiting")
	late := t0.Add(inboxstore.BodyGrace + 2*retention)
	ok, err := s.Reschedule(ctx, e.Key, e.DueAt, late, late.Add(time.Hour))
	if err != nil || !ok {
		t.Fatalf("reschedule: %t, %v", ok, err)
	}
	checkBodyKept(t, db, table, e.Key, late)
}

// TestBodyNeverRewritten: a second delivery of a stored event that gets as
// far as the body's write (its duplicate read missed) leaves the stored
// body as it was, headers and all.
func TestBodyNeverRewritten(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	first := newEvent("evt_headers", []byte(`{"same":true}`))
	first.Headers = map[string]string{"Stripe-Signature": "t=1,v1=first"}
	mustInsert(t, s, first)
	api := &hookAPI{API: db, get: func(_ context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error, bool) {
		if strings.HasPrefix(pkOf(in.Key), "event#") && !aws.ToBool(in.ConsistentRead) {
			return &dynamodb.GetItemOutput{}, nil, true
		}
		return nil, nil, false
	}}
	second := newEvent("evt_headers", []byte(`{"same":true}`))
	second.Headers = map[string]string{"Stripe-Signature": "t=2,v1=second"}
	if _, err := inboxstore.New(api, table, retention).Insert(ctx, second, t0.Add(time.Minute)); !errors.Is(err, inbox.ErrDuplicate) {
		t.Fatalf("second delivery: got %v, want inbox.ErrDuplicate", err)
	}
	if got := mustGet(t, s, first.Key, t0.Add(time.Minute)); got.Headers["Stripe-Signature"] != "t=1,v1=first" {
		t.Errorf("headers after the second delivery: %v, want the first's", got.Headers)
	}
	checkBodyKept(t, db, table, first.Key, t0.Add(time.Minute))
}

// TestSweepSendsAnEventWhoseBodyIsLost: an unfinished event whose body is
// gone is rescheduled without an error, so that the sweep sends its copy
// and the claim that copy brings finds the loss (and the event dies of
// it); an error here stopped the sweep's run at the event, every run,
// and the event waited for ever.
func TestSweepSendsAnEventWhoseBodyIsLost(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	e := mustReceived(t, s, "evt_lost_waiting")
	loseBody(t, db, table, e.Key)
	late := t0.Add(inboxstore.BodyGrace + 2*retention)
	ok, err := s.Reschedule(ctx, e.Key, e.DueAt, late, late.Add(time.Hour))
	if err != nil || !ok {
		t.Fatalf("reschedule: %t, %v; want rescheduled, no error", ok, err)
	}
	if _, err := s.Claim(ctx, e.Key, "w", late, late.Add(time.Minute)); !errors.Is(err, inboxstore.ErrBodyLost) {
		t.Errorf("the copy's claim: got %v, want ErrBodyLost", err)
	}
}

// TestPendingOutboxPassesKeepTheBody: a processed event whose receiver is
// down gets its delivery passes from its message, each leaving the outbox
// unsettled and the event due later (so the sweep's reschedule never
// touches it); its body still lasts a retention past every pass.
func TestPendingOutboxPassesKeepTheBody(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	e := mustReceived(t, s, "evt_pending_passes")
	ev := mustClaim(t, s, e.Key, "w", t0, t0.Add(time.Minute))
	plan := effects.Plan{Outbound: []effects.Outbound{{Key: "r/1", Target: "receipt", Body: []byte(`{}`)}}}
	if err := s.Complete(ctx, ev, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// Hourly passes for two days, at a retention of an hour.
	for h := 1; h <= 48; h++ {
		at := t0.Add(time.Duration(h) * time.Hour)
		if err := s.SettleOutbox(ctx, e.Key, 0, false, at.Add(time.Hour), at); err != nil {
			t.Fatal(err)
		}
		checkBodyKept(t, db, table, e.Key, at)
	}
	at := t0.Add(49 * time.Hour)
	if err := s.SettleOutbox(ctx, e.Key, 0, true, time.Time{}, at); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, e.Key, at); got.OutboxPending || got.ExpiresAt.IsZero() {
		t.Errorf("after the last pass: %+v, want settled, expiring", got)
	}
	checkBodyKept(t, db, table, e.Key, at)
}

// bodyGoneAPI deletes the body an insert's put was refused for before the
// body's extension reaches it, as TTL does to one that expires between
// the two writes.
type bodyGoneAPI struct {
	*dynamodb.Client
	table string
	gone  atomic.Int32
}

func (b *bodyGoneAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if strings.HasPrefix(pkOf(in.Key), "body#") && b.gone.Add(1) == 1 {
		if _, err := b.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: in.Key}); err != nil {
			return nil, err
		}
	}
	return b.Client.UpdateItem(ctx, in, opts...)
}

// TestInsertWhenTheBodyGoes: a delivery whose body put is refused (a body
// of the same name is stored, its status expired and gone) and whose body
// then goes before the extension writes it anew and is stored; it is never
// refused as invalid (a 4xx the provider would not retry).
func TestInsertWhenTheBodyGoes(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	_, table := newStoreOn(t, db)
	ctx := context.Background()
	e := newEvent("evt_body_goes", []byte(`{"id":"evt_body_goes"}`))
	first := inboxstore.New(db, table, retention)
	if _, err := first.Insert(ctx, e, t0); err != nil {
		t.Fatal(err)
	}
	// The status gone (expired), the body still there.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "event#" + e.Key.String()}}}); err != nil {
		t.Fatal(err)
	}
	// Late enough that the stored body, not expired yet, must be extended
	// to last as long as the new status.
	at := t0.Add(inboxstore.BodyGrace + retention/2)
	api := &bodyGoneAPI{Client: db, table: table}
	s := inboxstore.New(api, table, retention)
	got, err := s.Insert(ctx, e, at)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	if api.gone.Load() == 0 {
		t.Fatal("the body was never extended: the test did not take the path it is about")
	}
	if _, err := s.Claim(ctx, got.Key, "w", at.Add(time.Minute), at.Add(2*time.Minute)); err != nil {
		t.Errorf("claim: %v", err)
	}
	checkBodyKept(t, db, table, e.Key, at.Add(time.Minute))
}
