package inboxstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// One DynamoDB emulator (dynoxide, else moto) serves the whole package;
// every test gets its own table.
var (
	dynamo awstest.SharedDynamoDB
	tables atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamo.Stop()
	os.Exit(code)
}

// mustDynamo returns the package's emulator, starting it on first use.
func mustDynamo(tb testing.TB) *awstest.Server {
	tb.Helper()
	return dynamo.Get(tb)
}

// retention is the stores' retention of finished events in these tests.
const retention = time.Hour

// mustStore creates a fresh inbox table (hash key pk, on demand, with the
// unfinished index as template.yaml declares it) in the package's emulator and
// returns a store over it.
func mustStore(tb testing.TB) *inboxstore.Store {
	tb.Helper()
	s, _ := newStoreOn(tb, dynamodb.NewFromConfig(mustDynamo(tb).SafeConfig()))
	return s
}

// newStoreOn creates a fresh table through db and returns its store and name.
func newStoreOn(tb testing.TB, db *dynamodb.Client) (*inboxstore.Store, string) {
	tb.Helper()
	name := fmt.Sprintf("inbox-%d", tables.Add(1))
	if _, err := db.CreateTable(context.Background(), inboxstore.TableInput(name)); err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
	return inboxstore.New(db, name, retention), name
}

// unreachableStore returns a store whose client points at a closed port.
func unreachableStore(tb testing.TB) *inboxstore.Store {
	tb.Helper()
	port, err := awstest.FreePort()
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	srv := &awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	return inboxstore.New(dynamodb.NewFromConfig(srv.Config()), "inbox", retention)
}

var t0 = time.Date(2025, 11, 30, 12, 0, 0, 123456789, time.UTC)

// newEvent returns a received event as ingest builds it, and as Insert
// stores it: due at its receipt, to the millisecond.
func newEvent(id string, payload []byte) inbox.Event {
	return inbox.Event{
		Key:        inbox.Key{Source: "stripe", Account: "acct_1", EventID: id},
		Kind:       "stripe",
		Type:       "invoice.paid",
		Created:    time.Date(2025, 11, 30, 11, 59, 0, 0, time.UTC),
		Payload:    payload,
		Attributes: map[string]string{"retry_num": "1"},
		Status:     inbox.StatusReceived,
		ReceivedAt: t0.Truncate(time.Millisecond), // the store keeps it to the millisecond
		UpdatedAt:  t0,
		DueAt:      t0.Truncate(time.Millisecond),
	}
}

// utc puts every time of e in UTC so events compare with reflect.DeepEqual.
func utc(e inbox.Event) inbox.Event {
	// Where the body is kept is the store's bookkeeping (body.go), which
	// its own tests check.
	e.Body, e.BodyUntil = "", time.Time{}
	for _, t := range []*time.Time{&e.Created, &e.ReceivedAt, &e.UpdatedAt, &e.ProcessedAt, &e.ExpiresAt, &e.LeaseUntil, &e.DueAt, &e.RetryAt} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	return e
}

// statusOf is what a write's answer carries of an event stored in the
// split layout: its key, type and status, without what its body holds.
func statusOf(e inbox.Event) inbox.Event {
	e = utc(e)
	e.Kind, e.Created, e.Payload, e.PayloadRef = "", time.Time{}, nil, nil
	e.Attributes, e.Headers, e.RequestID, e.Scope, e.Unscoped, e.ReceivedAt = nil, nil, "", "", false, time.Time{}
	return e
}

func mustInsert(tb testing.TB, s *inboxstore.Store, e inbox.Event) {
	tb.Helper()
	if _, err := s.Insert(context.Background(), e, e.ReceivedAt); err != nil {
		tb.Fatalf("insert %s: %v", e.Key, err)
	}
}

func mustGet(tb testing.TB, s *inboxstore.Store, k inbox.Key, now time.Time) inbox.Event {
	tb.Helper()
	e, err := s.Get(context.Background(), k, now)
	if err != nil {
		tb.Fatalf("get %s: %v", k, err)
	}
	return e
}

func mustClaim(tb testing.TB, s *inboxstore.Store, k inbox.Key, owner string, now, until time.Time) inbox.Event {
	tb.Helper()
	e, err := s.Claim(context.Background(), k, owner, now, until)
	if err != nil {
		tb.Fatalf("claim %s by %s: %v", k, owner, err)
	}
	return e
}

// mustReceived inserts a new event and returns it.
func mustReceived(tb testing.TB, s *inboxstore.Store, id string) inbox.Event {
	tb.Helper()
	e := newEvent(id, []byte(`{"id":"`+id+`"}`))
	mustInsert(tb, s, e)
	return e
}

// mustClaimed inserts a new event and claims it for owner until t0+30s.
func mustClaimed(tb testing.TB, s *inboxstore.Store, id, owner string) inbox.Event {
	tb.Helper()
	e := mustReceived(tb, s, id)
	return mustClaim(tb, s, e.Key, owner, t0, t0.Add(30*time.Second))
}

func assertEffectAbsent(tb testing.TB, s *inboxstore.Store, r effects.Fact) {
	tb.Helper()
	got, err := s.Fact(context.Background(), "stripe#acct_1", r.Kind, r.Key)
	if !errors.Is(err, inbox.ErrNotFound) {
		tb.Errorf("effect %s: got %v, %v; want inbox.ErrNotFound", r.ID(), got, err)
	}
}

func TestInsert(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()

	t.Run("new event round-trips", func(t *testing.T) {
		// Not valid UTF-8 and with a NUL: the payload is stored as bytes.
		want := newEvent("evt_new", []byte("{\"id\":\"evt_new\"}\x00\xff\xfe\n"))
		got, err := s.Insert(ctx, want, t0)
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
		if !reflect.DeepEqual(utc(got), want) {
			t.Errorf("insert returned %+v, want %+v", got, want)
		}
		stored := mustGet(t, s, want.Key, t0)
		if !reflect.DeepEqual(utc(stored), want) {
			t.Errorf("get: got %+v, want %+v", utc(stored), want)
		}
		if !bytes.Equal(stored.Payload, want.Payload) {
			t.Errorf("payload: got %q, want %q", stored.Payload, want.Payload)
		}
		if stored.Status != inbox.StatusReceived {
			t.Errorf("status: got %s, want %s", stored.Status, inbox.StatusReceived)
		}
	})

	t.Run("duplicate returns the stored event", func(t *testing.T) {
		first := newEvent("evt_dup", []byte(`{"delivery":1}`))
		mustInsert(t, s, first)
		again := newEvent("evt_dup", []byte(`{"delivery":2}`))
		again.ReceivedAt = t0.Add(time.Minute)

		stored, err := s.Insert(ctx, again, again.ReceivedAt)
		if !errors.Is(err, inbox.ErrDuplicate) {
			t.Fatalf("second insert: got %v, want inbox.ErrDuplicate", err)
		}
		if !reflect.DeepEqual(statusOf(stored), statusOf(first)) {
			t.Errorf("stored: got %+v, want %+v", statusOf(stored), statusOf(first))
		}
		if got := mustGet(t, s, first.Key, t0).Payload; !bytes.Equal(got, first.Payload) {
			t.Errorf("payload after duplicate: got %s, want %s", got, first.Payload)
		}

		// The duplicate carries the stored status, which ingest branches on.
		mustClaim(t, s, first.Key, "worker-a", t0, t0.Add(time.Minute))
		stored, err = s.Insert(ctx, again, again.ReceivedAt)
		if !errors.Is(err, inbox.ErrDuplicate) {
			t.Fatalf("insert after claim: got %v, want inbox.ErrDuplicate", err)
		}
		if stored.Status != inbox.StatusProcessing {
			t.Errorf("status: got %s, want %s", stored.Status, inbox.StatusProcessing)
		}
	})

	t.Run("concurrent inserts of one key", func(t *testing.T) {
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				e := newEvent("evt_race", fmt.Appendf(nil, `{"writer":%d}`, i))
				_, errs[i] = s.Insert(ctx, e, t0)
			})
		}
		wg.Wait()
		var won, dup int
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, inbox.ErrDuplicate):
				dup++
			default:
				t.Errorf("insert %d: %v", i, err)
			}
		}
		if won != 1 || dup != n-1 {
			t.Errorf("got %d inserted and %d duplicates, want 1 and %d", won, dup, n-1)
		}
	})

	t.Run("expired item counts as absent", func(t *testing.T) {
		old := mustClaimed(t, s, "evt_expired", "worker-a")
		if err := s.Complete(ctx, old, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, t0); err != nil {
			t.Fatal(err)
		}
		// Before its expiry the item is there; the emulator does not
		// delete it, so only the store's filter makes it absent afterwards.
		later := t0.Add(retention + time.Second)
		mustGet(t, s, old.Key, t0.Add(retention-time.Second))
		if got, err := s.Get(ctx, old.Key, later); !errors.Is(err, inbox.ErrNotFound) {
			t.Fatalf("get after expiry: got %+v, %v; want inbox.ErrNotFound", got, err)
		}
		if _, err := s.Claim(ctx, old.Key, "worker-b", later, later.Add(time.Minute)); !errors.Is(err, inbox.ErrNotFound) {
			t.Fatalf("claim after expiry: got %v, want inbox.ErrNotFound", err)
		}

		fresh := newEvent("evt_expired", []byte(`{"old":false}`))
		if _, err := s.Insert(ctx, fresh, later); err != nil {
			t.Fatalf("insert over expired item: %v", err)
		}
		if got := mustGet(t, s, fresh.Key, later); !reflect.DeepEqual(utc(got), fresh) {
			t.Errorf("get: got %+v, want %+v", utc(got), fresh)
		}
	})

	t.Run("an expiry given by the caller is not stored", func(t *testing.T) {
		e := newEvent("evt_no_expiry", []byte(`{}`))
		e.ExpiresAt = t0.Add(time.Minute)
		mustInsert(t, s, e)
		if got := mustGet(t, s, e.Key, t0.Add(365*24*time.Hour)); !got.ExpiresAt.IsZero() {
			t.Errorf("expires_at: got %v, want none while unfinished", got.ExpiresAt)
		}
	})
}

func TestGetMissing(t *testing.T) {
	s := mustStore(t)
	k := inbox.Key{Source: "stripe", EventID: "evt_none"}
	if got, err := s.Get(context.Background(), k, t0); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("got %+v, %v; want inbox.ErrNotFound", got, err)
	}
}

func TestClaim(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	until := t0.Add(30 * time.Second)

	t.Run("received", func(t *testing.T) {
		e := mustReceived(t, s, "evt_received")
		now := t0.Add(time.Second)
		got := mustClaim(t, s, e.Key, "worker-a", now, until)

		want := e
		want.Status = inbox.StatusProcessing
		want.Attempts = 1
		want.LeaseOwner = "worker-a"
		want.LeaseUntil = until.Truncate(time.Millisecond)
		want.DueAt = want.LeaseUntil
		want.UpdatedAt = now
		if !reflect.DeepEqual(utc(got), want) {
			t.Errorf("claim: got %+v, want %+v", utc(got), want)
		}
		if stored := mustGet(t, s, e.Key, now); !reflect.DeepEqual(utc(stored), want) {
			t.Errorf("get: got %+v, want %+v", utc(stored), want)
		}
	})

	t.Run("live lease", func(t *testing.T) {
		e := mustReceived(t, s, "evt_live")
		mustClaim(t, s, e.Key, "worker-a", t0, until)
		got, err := s.Claim(ctx, e.Key, "worker-b", until.Add(-time.Millisecond), until.Add(time.Minute))
		if !errors.Is(err, inbox.ErrClaimed) {
			t.Fatalf("second claim: got %v, want inbox.ErrClaimed", err)
		}
		if got.LeaseOwner != "worker-a" {
			t.Errorf("lease owner in error result: got %q, want worker-a", got.LeaseOwner)
		}
		stored := mustGet(t, s, e.Key, t0)
		if stored.LeaseOwner != "worker-a" || stored.Attempts != 1 {
			t.Errorf("stored: got owner %q attempts %d, want worker-a 1", stored.LeaseOwner, stored.Attempts)
		}
	})

	t.Run("our own claim again (its answer was lost and the SDK retried)", func(t *testing.T) {
		e := mustReceived(t, s, "evt_claim_twice")
		mustClaim(t, s, e.Key, "worker-a", t0, until)
		got, err := s.Claim(ctx, e.Key, "worker-a", t0.Add(time.Millisecond), until)
		if err != nil || got.LeaseOwner != "worker-a" || got.Attempts != 1 {
			t.Errorf("got %+v, %v; want our lease, one attempt", got, err)
		}
	})

	t.Run("expired lease", func(t *testing.T) {
		e := mustReceived(t, s, "evt_takeover")
		mustClaim(t, s, e.Key, "worker-a", t0, until)
		later := until.Add(time.Millisecond)
		got := mustClaim(t, s, e.Key, "worker-b", later, later.Add(30*time.Second))
		if got.Status != inbox.StatusProcessing || got.Attempts != 2 || got.LeaseOwner != "worker-b" {
			t.Errorf("got status %s attempts %d owner %q, want processing 2 worker-b", got.Status, got.Attempts, got.LeaseOwner)
		}
		if want := later.Add(30 * time.Second).Truncate(time.Millisecond); !got.LeaseUntil.Equal(want) {
			t.Errorf("lease until: got %v, want %v", got.LeaseUntil, want)
		}
	})

	t.Run("missing", func(t *testing.T) {
		k := inbox.Key{Source: "stripe", EventID: "evt_missing"}
		if _, err := s.Claim(ctx, k, "worker-a", t0, until); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("got %v, want inbox.ErrNotFound", err)
		}
	})

	t.Run("processed", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_processed", "worker-a")
		if err := s.Complete(ctx, e, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, t0); err != nil {
			t.Fatalf("complete: %v", err)
		}
		got, err := s.Claim(ctx, e.Key, "worker-b", t0, until)
		if !errors.Is(err, inbox.ErrAlreadyProcessed) {
			t.Fatalf("got %v, want inbox.ErrAlreadyProcessed", err)
		}
		if got.Status != inbox.StatusProcessed {
			t.Errorf("status: got %s, want processed", got.Status)
		}
	})

	t.Run("failed", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_failed", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "boom"}, t0); err != nil {
			t.Fatalf("fail: %v", err)
		}
		// The failed attempt's lease is gone, so no waiting for it.
		got := mustClaim(t, s, e.Key, "worker-b", t0.Add(time.Second), until)
		if got.Status != inbox.StatusProcessing || got.Attempts != 2 || got.LeaseOwner != "worker-b" {
			t.Errorf("got status %s attempts %d owner %q, want processing 2 worker-b", got.Status, got.Attempts, got.LeaseOwner)
		}
	})

	t.Run("a failed event waits for its backoff", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_not_due", "worker-a")
		due := t0.Add(time.Minute)
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "boom", RetryAt: due}, t0); err != nil {
			t.Fatal(err)
		}
		early := due.Add(-inboxstore.DueSlack - time.Millisecond)
		got, err := s.Claim(ctx, e.Key, "worker-b", early, due.Add(time.Minute))
		if !errors.Is(err, inbox.ErrNotDue) || !got.DueAt.Equal(due.Truncate(time.Millisecond)) {
			t.Fatalf("claim before due: got %+v, %v; want inbox.ErrNotDue with the due time", got, err)
		}
		// A worker whose clock is a little behind still takes it.
		if got := mustClaim(t, s, e.Key, "worker-b", due.Add(-inboxstore.DueSlack), due.Add(time.Minute)); got.Attempts != 2 {
			t.Errorf("claim when due: attempts %d, want 2", got.Attempts)
		}
	})

	t.Run("a refunded attempt is not counted", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_refund", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "cut off", Refund: true}, t0); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, e.Key, t0); got.Attempts != 0 || got.Status != inbox.StatusFailed {
			t.Errorf("got attempts %d status %s, want 0 failed", got.Attempts, got.Status)
		}
	})

	t.Run("a refund is made once, and only for a claim that landed", func(t *testing.T) {
		// Two attempts: the first failed, the second is cut off.
		e := mustClaimed(t, s, "evt_refund_twice", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "503"}, t0); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, e.Key, "worker-b", t0.Add(time.Minute), t0.Add(2*time.Minute))
		f := inbox.Failure{Owner: "worker-b", Status: inbox.StatusFailed, Cause: "cut off", Refund: true}
		for range 2 { // the SDK's retry of a write whose answer was lost
			if _, err := s.Fail(ctx, e.Key, f, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		if got := mustGet(t, s, e.Key, t0.Add(time.Minute)); got.Attempts != 1 || got.Status != inbox.StatusFailed {
			t.Errorf("refunded twice: attempts %d status %s, want 1 failed", got.Attempts, got.Status)
		}
		// A claim by worker-c that never landed (cut off before it): its
		// refund has nothing to give back.
		f.Owner = "worker-c"
		if _, err := s.Fail(ctx, e.Key, f, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, e.Key, t0.Add(time.Minute)); got.Attempts != 1 {
			t.Errorf("a refund with no claim: attempts %d, want 1 (the failed attempt counts)", got.Attempts)
		}
	})

	t.Run("dead is final", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_dead", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusDead, Cause: "boom", MessageID: "m1"}, t0); err != nil {
			t.Fatalf("fail: %v", err)
		}
		got, err := s.Claim(ctx, e.Key, "worker-b", t0.Add(time.Second), until)
		if !errors.Is(err, inbox.ErrDead) {
			t.Fatalf("claim of a dead event: got %v, want inbox.ErrDead", err)
		}
		if got.DeadBy != "m1" || got.Status != inbox.StatusDead {
			t.Errorf("got %+v, want dead by m1", got)
		}
	})

	t.Run("concurrent claims", func(t *testing.T) {
		e := mustReceived(t, s, "evt_claim_race")
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.Claim(ctx, e.Key, fmt.Sprintf("worker-%d", i), t0, until)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Errorf("workers %d and %d both claimed", winner, i)
			case !errors.Is(err, inbox.ErrClaimed):
				t.Errorf("worker %d: got %v, want inbox.ErrClaimed", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no worker claimed the event")
		}
		stored := mustGet(t, s, e.Key, t0)
		if want := fmt.Sprintf("worker-%d", winner); stored.LeaseOwner != want || stored.Attempts != 1 {
			t.Errorf("stored: got owner %q attempts %d, want %s 1", stored.LeaseOwner, stored.Attempts, want)
		}
	})
}

func TestComplete(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	done := t0.Add(5 * time.Second)

	t.Run("writes effects and marks processed", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_complete", "worker-a")
		plan := effects.Plan{Facts: []effects.Fact{
			{Kind: "invoice_paid", Key: "in_1", Attributes: map[string]any{"customer": "cus_1", "amount": int64(4200), "livemode": true}},
			{Kind: "customer_seen", Key: "cus_1"},
		}}
		if err := s.Complete(ctx, e, "worker-a", plan, inbox.OutcomeApplied, done); err != nil {
			t.Fatalf("complete: %v", err)
		}

		got := mustGet(t, s, e.Key, done)
		want := e
		want.Status = inbox.StatusProcessed
		want.Outcome = inbox.OutcomeApplied
		want.ProcessedAt = done
		want.UpdatedAt = done
		want.LeaseOwner = ""
		want.LeaseUntil = time.Time{}
		want.DueAt = time.Time{}
		want.ExpiresAt = time.Unix(done.Add(retention).Unix(), 0)
		for _, id := range plan.IDs() {
			want.Touched = append(want.Touched, sid(id))
		}
		if !reflect.DeepEqual(utc(got), utc(want)) {
			t.Errorf("event: got %+v, want %+v", utc(got), utc(want))
		}

		eff, err := s.Fact(ctx, "stripe#acct_1", "invoice_paid", "in_1")
		if err != nil {
			t.Fatalf("effect: %v", err)
		}
		for name, want := range map[string]string{
			"customer":  "cus_1",
			"amount":    "4200",
			"livemode":  "true",
			"event_key": e.Key.String(),
		} {
			// Numbers come back as the decoder's number type; compare text.
			if got := fmt.Sprint(eff[name]); got != want {
				t.Errorf("effect %s: got %v (%T), want %s", name, eff[name], eff[name], want)
			}
		}
		if got, ok := eff["livemode"].(bool); !ok || !got {
			t.Errorf("effect livemode: got %v (%T), want true (bool)", eff["livemode"], eff["livemode"])
		}
		// What the store adds to a record is what effects.Validate keeps
		// handlers from setting.
		for name := range eff {
			if _, fromPlan := plan.Facts[0].Attributes[name]; !fromPlan && !effects.ReservedFact[name] {
				t.Errorf("the store writes %q on a record, which effects.ReservedFact does not name", name)
			}
		}
		if _, err := s.Fact(ctx, "stripe#acct_1", "customer_seen", "cus_1"); err != nil {
			t.Errorf("second effect: %v", err)
		}
	})

	t.Run("non-owner writes nothing", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_not_owner", "worker-a")
		rec := effects.Fact{Kind: "invoice_paid", Key: "in_not_owner"}
		err := s.Complete(ctx, e, "worker-b", effects.Plan{Facts: []effects.Fact{rec}}, inbox.OutcomeApplied, done)
		if !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("got %v, want inbox.ErrLeaseLost", err)
		}
		assertEffectAbsent(t, s, rec)
		got := mustGet(t, s, e.Key, done)
		if got.Status != inbox.StatusProcessing || got.LeaseOwner != "worker-a" {
			t.Errorf("event: got status %s owner %q, want processing worker-a", got.Status, got.LeaseOwner)
		}
	})

	t.Run("lease taken over", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_taken_over", "worker-a")
		later := e.LeaseUntil.Add(time.Second)
		mustClaim(t, s, e.Key, "worker-b", later, later.Add(30*time.Second))
		rec := effects.Fact{Kind: "invoice_paid", Key: "in_taken_over"}
		err := s.Complete(ctx, e, "worker-a", effects.Plan{Facts: []effects.Fact{rec}}, inbox.OutcomeApplied, later)
		if !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("got %v, want inbox.ErrLeaseLost", err)
		}
		assertEffectAbsent(t, s, rec)
	})

	t.Run("a plan with no part is one conditional write, refused alike", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_empty_plan", "worker-a")
		if err := s.Complete(ctx, e, "worker-b", effects.Plan{}, inbox.OutcomeIgnored, done); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("another owner: got %v, want inbox.ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, e, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, done); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, e.Key, done); got.Status != inbox.StatusProcessed || got.Outcome != inbox.OutcomeIgnored || got.ExpiresAt.IsZero() {
			t.Errorf("after the commit: %+v", got)
		}
		if err := s.Complete(ctx, e, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, done); !errors.Is(err, inbox.ErrAlreadyProcessed) {
			t.Errorf("again: got %v, want inbox.ErrAlreadyProcessed", err)
		}
	})

	t.Run("existing record", func(t *testing.T) {
		first := mustClaimed(t, s, "evt_first", "worker-a")
		shared := effects.Fact{Kind: "invoice_paid", Key: "in_shared", Attributes: map[string]any{"by": "first"}}
		if err := s.Complete(ctx, first, "worker-a", effects.Plan{Facts: []effects.Fact{shared}}, inbox.OutcomeApplied, done); err != nil {
			t.Fatalf("complete first: %v", err)
		}

		second := mustClaimed(t, s, "evt_second", "worker-b")
		again := shared
		again.Attributes = map[string]any{"by": "second"}
		plan := effects.Plan{Facts: []effects.Fact{
			{Kind: "invoice_paid", Key: "in_before"},
			again,
			{Kind: "invoice_paid", Key: "in_after"},
		}}
		err := s.Complete(ctx, second, "worker-b", plan, inbox.OutcomeApplied, done)
		var refused *effects.RefusedError
		if !errors.As(err, &refused) {
			t.Fatalf("got %v, want *effects.RefusedError", err)
		}
		if want := []string{shared.ID()}; !slices.Equal(refused.Exists, want) || len(refused.Stale) != 0 {
			t.Errorf("refused: got %+v, want exists %q", refused, want)
		}
		assertEffectAbsent(t, s, plan.Facts[0])
		assertEffectAbsent(t, s, plan.Facts[2])
		if got := mustGet(t, s, second.Key, done); got.Status != inbox.StatusProcessing || got.LeaseOwner != "worker-b" {
			t.Errorf("second event: got status %s owner %q, want processing worker-b", got.Status, got.LeaseOwner)
		}

		rest, _ := plan.Drop(refused.Exists...)
		if err := s.Complete(ctx, second, "worker-b", rest, inbox.OutcomeApplied, done); err != nil {
			t.Fatalf("complete without existing: %v", err)
		}
		if got := mustGet(t, s, second.Key, done).Status; got != inbox.StatusProcessed {
			t.Errorf("second event status: got %s, want processed", got)
		}
		for _, tc := range []struct {
			rec   effects.Fact
			event inbox.Key
		}{
			{plan.Facts[0], second.Key},
			{shared, first.Key},
			{plan.Facts[2], second.Key},
		} {
			eff, err := s.Fact(ctx, "stripe#acct_1", tc.rec.Kind, tc.rec.Key)
			if err != nil {
				t.Errorf("effect %s: %v", tc.rec.ID(), err)
				continue
			}
			if got := eff["event_key"]; got != tc.event.String() {
				t.Errorf("effect %s event_key: got %v, want %s", tc.rec.ID(), got, tc.event)
			}
		}
		if eff, err := s.Fact(ctx, "stripe#acct_1", shared.Kind, shared.Key); err == nil && eff["by"] != "first" {
			t.Errorf("shared effect overwritten: got by=%v, want first", eff["by"])
		}
	})

	t.Run("missing effect", func(t *testing.T) {
		assertEffectAbsent(t, s, effects.Fact{Kind: "invoice_paid", Key: "in_never"})
	})
}

func TestFail(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	at := t0.Add(3 * time.Second)
	retryAt := at.Add(time.Minute)

	t.Run("failed", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_failed", "worker-a")
		got, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "handler: upstream said no", RetryAt: retryAt}, at)
		if err != nil {
			t.Fatalf("fail: %v", err)
		}
		want := e
		want.Status = inbox.StatusFailed
		want.LastError = "handler: upstream said no"
		want.UpdatedAt = at
		want.LeaseOwner = ""
		want.LeaseUntil = time.Time{}
		want.DueAt = retryAt.Truncate(time.Millisecond)
		want.RetryAt = retryAt.Truncate(time.Millisecond)
		if !reflect.DeepEqual(statusOf(got), statusOf(want)) {
			t.Errorf("returned %+v, want %+v", statusOf(got), statusOf(want))
		}
		if stored := mustGet(t, s, e.Key, at); !reflect.DeepEqual(utc(stored), utc(want)) {
			t.Errorf("stored %+v, want %+v", utc(stored), utc(want))
		}
	})

	t.Run("dead", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_dead", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusDead, Cause: "permanent", MessageID: "msg-1"}, at); err != nil {
			t.Fatalf("fail: %v", err)
		}
		got := mustGet(t, s, e.Key, at)
		if got.Status != inbox.StatusDead || got.DeadBy != "msg-1" || got.LastError != "permanent" || got.LeaseOwner != "" || !got.DueAt.IsZero() {
			t.Errorf("got %+v", got)
		}
		// A dead event outlives every DLQ message that can point at it.
		if want := at.Add(inboxstore.DeadRetention).Unix(); got.ExpiresAt.Unix() != want || inboxstore.DeadRetention <= inboxstore.MaxMessageRetention {
			t.Errorf("expires_at: got %v, want %v", got.ExpiresAt, time.Unix(want, 0))
		}
	})

	t.Run("long cause is cut", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_long", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: strings.Repeat("x", 5000)}, at); err != nil {
			t.Fatalf("fail: %v", err)
		}
		if got := len(mustGet(t, s, e.Key, at).LastError); got != 1024 {
			t.Errorf("last_error length: got %d, want 1024", got)
		}
	})

	t.Run("another worker's live lease is not overridden", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_not_owner", "worker-a")
		got, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-b", Status: inbox.StatusDead, Cause: "boom"}, at)
		if !errors.Is(err, inbox.ErrClaimed) {
			t.Fatalf("got %v, want inbox.ErrClaimed", err)
		}
		if got.LeaseOwner != "worker-a" {
			t.Errorf("returned owner %q, want worker-a", got.LeaseOwner)
		}
		stored := mustGet(t, s, e.Key, at)
		if stored.Status != inbox.StatusProcessing || stored.LeaseOwner != "worker-a" || stored.LastError != "" {
			t.Errorf("got status %s owner %q last_error %q, want processing worker-a and none", stored.Status, stored.LeaseOwner, stored.LastError)
		}
	})

	t.Run("an expired lease of another worker is", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_expired_lease", "worker-a")
		late := e.LeaseUntil.Add(time.Second)
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Status: inbox.StatusDead, Cause: "boom", MessageID: "m9"}, late); err != nil {
			t.Fatalf("got %v", err)
		}
		if got := mustGet(t, s, e.Key, late); got.Status != inbox.StatusDead || got.DeadBy != "m9" {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("an unclaimed event (the claim itself failed)", func(t *testing.T) {
		e := mustReceived(t, s, "evt_fail_unclaimed")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "claim: timeout", RetryAt: retryAt}, at); err != nil {
			t.Fatalf("got %v", err)
		}
		if got := mustGet(t, s, e.Key, at); got.Status != inbox.StatusFailed || got.LastError != "claim: timeout" {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("processed, dead and missing events are left alone", func(t *testing.T) {
		done := mustClaimed(t, s, "evt_fail_done", "worker-a")
		if err := s.Complete(ctx, done, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fail(ctx, done.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusDead, Cause: "x"}, at); !errors.Is(err, inbox.ErrAlreadyProcessed) {
			t.Errorf("processed: got %v, want inbox.ErrAlreadyProcessed", err)
		}
		dead := mustClaimed(t, s, "evt_fail_dead_twice", "worker-a")
		if _, err := s.Fail(ctx, dead.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusDead, Cause: "first", MessageID: "m1"}, at); err != nil {
			t.Fatal(err)
		}
		got, err := s.Fail(ctx, dead.Key, inbox.Failure{Status: inbox.StatusFailed, Cause: "second"}, at)
		if !errors.Is(err, inbox.ErrDead) || got.DeadBy != "m1" {
			t.Errorf("dead: got %+v, %v; want inbox.ErrDead by m1", got, err)
		}
		if stored := mustGet(t, s, dead.Key, at); stored.LastError != "first" {
			t.Errorf("dead event rewritten: %+v", stored)
		}
		if _, err := s.Fail(ctx, inbox.Key{Source: "stripe", EventID: "evt_never"}, inbox.Failure{Status: inbox.StatusDead}, at); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("missing: got %v, want inbox.ErrNotFound", err)
		}
	})

	t.Run("bad status", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_bad", "worker-a")
		if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusProcessed}, at); err == nil {
			t.Error("processed accepted as a failure status")
		}
	})
}

// TestRetention: unfinished events never expire; retention counts from the
// end of processing.
func TestRetention(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	e := mustClaimed(t, s, "evt_retention", "worker-a")
	if got := mustGet(t, s, e.Key, t0); !got.ExpiresAt.IsZero() {
		t.Fatalf("unfinished: expires_at %v, want none", got.ExpiresAt)
	}
	done := t0.Add(10 * 24 * time.Hour)
	if err := s.Complete(ctx, e, "worker-a", effects.Plan{}, inbox.OutcomeIgnored, done); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, e.Key, done); got.ExpiresAt.Unix() != done.Add(retention).Unix() {
		t.Errorf("processed: expires_at %v, want %v", got.ExpiresAt, done.Add(retention))
	}
}

// TestRevive: Requeue of a dead event makes it failed, due now, back in
// the unfinished index, with its attempts and last error kept.
func TestRevive(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	at := t0.Add(time.Hour)

	e := mustClaimed(t, s, "evt_revive", "worker-a")
	if _, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusDead, Cause: "bug", MessageID: "m1"}, t0); err != nil {
		t.Fatal(err)
	}
	got, did, err := s.Requeue(ctx, e.Key, at, false)
	if err != nil || did != inboxstore.Revived {
		t.Fatalf("revive: %s, %v", did, err)
	}
	if got.Status != inbox.StatusFailed || got.Attempts != 1 || got.RevivedAttempts != 1 || got.LastError != "bug" || !got.ExpiresAt.IsZero() || got.DeadBy != "" || !got.DueAt.Equal(at.Truncate(time.Millisecond)) {
		t.Errorf("revived: got %+v, want failed, due now, attempts kept and the budget counted from them", got)
	}
	if _, err := s.Claim(ctx, e.Key, "worker-b", at, at.Add(time.Minute)); err != nil {
		t.Errorf("claim after revive: %v", err)
	}
	// Back in the unfinished index.
	if p, ok, err := s.Oldest(ctx); err != nil || !ok || p.Key != e.Key {
		t.Errorf("oldest after revive: got %+v %v %v", p, ok, err)
	}
	// Not dead: left alone.
	if _, _, err := s.Requeue(ctx, e.Key, at, false); !errors.Is(err, inbox.ErrClaimed) {
		t.Errorf("requeue of an event worker-b holds: got %v, want inbox.ErrClaimed", err)
	}
	if _, _, err := s.Requeue(ctx, inbox.Key{Source: "stripe", EventID: "evt_none"}, at, false); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("revive missing: got %v, want inbox.ErrNotFound", err)
	}
}

// TestUnfinishedIndex: the sparse index holds exactly the unfinished
// events; Overdue returns those due before the cutoff; Reschedule lets one
// sweep, not two, take an event.
func TestUnfinishedIndex(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	if _, ok, err := s.Oldest(ctx); err != nil || ok {
		t.Fatalf("empty table: got %v %v, want nothing", ok, err)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	insert := func(id string, received time.Time) inbox.Event {
		e := newEvent(id, []byte(`{}`))
		e.ReceivedAt, e.UpdatedAt, e.DueAt = received, received, time.Time{}
		mustInsert(t, s, e)
		return e
	}
	oldReceived := insert("evt_old_received", at(0))
	young := insert("evt_young", at(57*time.Minute))
	failedSoon := insert("evt_failed_soon", at(time.Minute))
	failedLong := insert("evt_failed_long", at(2*time.Minute))
	leased := insert("evt_leased", at(3*time.Minute))
	expiredLease := insert("evt_expired_lease", at(4*time.Minute))
	done := insert("evt_done", at(-time.Hour))
	dead := insert("evt_dead", at(-2*time.Hour))

	for _, e := range []inbox.Event{failedSoon, failedLong} {
		mustClaim(t, s, e.Key, "w", at(5*time.Minute), at(6*time.Minute))
	}
	retry := map[inbox.Key]time.Time{failedSoon.Key: at(58 * time.Minute), failedLong.Key: at(10 * time.Minute)}
	for k, due := range retry {
		if _, err := s.Fail(ctx, k, inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "x", RetryAt: due}, at(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	mustClaim(t, s, leased.Key, "w", at(5*time.Minute), at(59*time.Minute))
	mustClaim(t, s, expiredLease.Key, "w", at(5*time.Minute), at(6*time.Minute))
	d := mustClaim(t, s, done.Key, "w", at(5*time.Minute), at(6*time.Minute))
	if err := s.Complete(ctx, d, "w", effects.Plan{}, inbox.OutcomeIgnored, at(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, dead.Key, "w", at(5*time.Minute), at(6*time.Minute))
	if _, err := s.Fail(ctx, dead.Key, inbox.Failure{Owner: "w", Status: inbox.StatusDead, Cause: "x"}, at(6*time.Minute)); err != nil {
		t.Fatal(err)
	}

	oldest, ok, err := s.Oldest(ctx)
	if err != nil || !ok || oldest.Key != oldReceived.Key || !oldest.ReceivedAt.Equal(t0.Truncate(time.Millisecond)) {
		t.Errorf("oldest: got %+v %v %v, want %s (processed and dead ones are out of the index)", oldest, ok, err, oldReceived.Key)
	}
	// At +60 min with a 5 min threshold, the cutoff is +55 min.
	got, err := s.Overdue(ctx, at(55*time.Minute), 100)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range got {
		keys = append(keys, p.Key.EventID)
	}
	slices.Sort(keys)
	want := []string{"evt_expired_lease", "evt_failed_long", "evt_old_received"}
	if !slices.Equal(keys, want) {
		t.Errorf("overdue: got %v, want %v (young, failed-soon and leased are not due)", keys, want)
	}
	_ = young
	if got, err := s.Overdue(ctx, at(55*time.Minute), 2); err != nil || len(got) != 2 {
		t.Errorf("limit 2: got %d, %v", len(got), err)
	}

	var p inboxstore.Pending
	for _, q := range got {
		if q.Key == oldReceived.Key {
			p = q
		}
	}
	if p.Status != inbox.StatusReceived || !p.DueAt.Equal(t0.Truncate(time.Millisecond)) {
		t.Fatalf("pending: got %+v", p)
	}
	ok, err = s.Reschedule(ctx, p.Key, p.DueAt, at(60*time.Minute), at(120*time.Minute))
	if err != nil || !ok {
		t.Fatalf("reschedule: %v %v", ok, err)
	}
	if ok, err := s.Reschedule(ctx, p.Key, p.DueAt, at(61*time.Minute), at(121*time.Minute)); err != nil || ok {
		t.Errorf("second reschedule from the same read: got %v %v, want false", ok, err)
	}
	if ok, err := s.Reschedule(ctx, done.Key, time.Time{}, at(61*time.Minute), at(121*time.Minute)); err != nil || ok {
		t.Errorf("reschedule of a processed event: got %v %v, want false", ok, err)
	}
	// The sweep's copies since the last claim: the first QuickCopies are
	// due at quick, later ones at spaced; a claim starts the count again.
	due := func(k inbox.Key) time.Time {
		ev, err := s.Get(ctx, k, at(60*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return ev.DueAt
	}
	was := at(60 * time.Minute)
	for i := 2; i <= inboxstore.QuickCopies+1; i++ {
		quick, spaced := at(time.Duration(60+i)*time.Minute), at(time.Duration(120+i)*time.Minute)
		if ok, err := s.Reschedule(ctx, p.Key, was, quick, spaced); err != nil || !ok {
			t.Fatalf("copy %d: %v %v", i, ok, err)
		}
		want := quick
		if i > inboxstore.QuickCopies {
			want = spaced
		}
		if got := due(p.Key); got.UnixMilli() != want.UnixMilli() {
			t.Errorf("copy %d: due at %s, want %s", i, got.Sub(t0), want.Sub(t0))
		}
		was = due(p.Key)
	}
	if ev, err := s.Get(ctx, p.Key, at(60*time.Minute)); err != nil || ev.Swept != inboxstore.QuickCopies+1 {
		t.Errorf("swept: %d, %v; want %d", ev.Swept, err, inboxstore.QuickCopies+1)
	}
	if ok, err := s.Reschedule(ctx, p.Key, was, at(200*time.Minute), at(201*time.Minute)); err != nil || !ok {
		t.Errorf("spaced: %v %v", ok, err)
	}
	if ok, err := s.Reschedule(ctx, p.Key, was, at(202*time.Minute), at(203*time.Minute)); err != nil || ok {
		t.Errorf("spaced, a second sweep from the same read: got %v %v, want false", ok, err)
	}
	if ok, err := s.Reschedule(ctx, p.Key, at(time.Minute), at(200*time.Minute), at(201*time.Minute)); err != nil || ok {
		t.Errorf("spent, and touched since the read: got %v %v, want false", ok, err)
	}
	// An operator's requeue starts the count again too.
	if _, did, err := s.Requeue(ctx, p.Key, at(125*time.Minute), false); err != nil || did != inboxstore.MadeDue {
		t.Fatalf("requeue: %v %v", did, err)
	}
	if ok, err := s.Reschedule(ctx, p.Key, at(125*time.Minute), at(126*time.Minute), at(200*time.Minute)); err != nil || !ok || due(p.Key).UnixMilli() != at(126*time.Minute).UnixMilli() {
		t.Errorf("after a requeue: %v %v, due %s, want the quick time again", ok, err, due(p.Key).Sub(t0))
	}
	mustClaim(t, s, p.Key, "w2", at(130*time.Minute), at(131*time.Minute))
	if ok, err := s.Reschedule(ctx, p.Key, at(131*time.Minute), at(140*time.Minute), at(200*time.Minute)); err != nil || !ok || due(p.Key).UnixMilli() != at(140*time.Minute).UnixMilli() {
		t.Errorf("after a claim: %v %v, due %s, want the quick time again", ok, err, due(p.Key).Sub(t0))
	}
}

// TestInvalid: requests DynamoDB refuses as invalid are permanent errors,
// not outages.
func TestInvalid(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	big := newEvent("evt_big", incompressible(410*1024))
	_, err := s.Insert(ctx, big, t0)
	if !errors.Is(err, inbox.ErrInvalid) || errors.Is(err, inbox.ErrUnavailable) {
		t.Errorf("item over 400 KB: got %v, want inbox.ErrInvalid", err)
	}
	e := mustClaimed(t, s, "evt_big_effect", "worker-a")
	plan := effects.Plan{Facts: []effects.Fact{{Kind: "k", Key: "x", Attributes: map[string]any{"blob": strings.Repeat("y", 410*1024)}}}}
	err = s.Complete(ctx, e, "worker-a", plan, inbox.OutcomeApplied, t0)
	if !errors.Is(err, inbox.ErrInvalid) || errors.Is(err, inbox.ErrUnavailable) {
		t.Errorf("effect over 400 KB: got %v, want inbox.ErrInvalid", err)
	}
}

func TestUnavailable(t *testing.T) {
	s := unreachableStore(t)
	e := newEvent("evt_offline", []byte(`{}`))
	plan := effects.Plan{Facts: []effects.Fact{{Kind: "invoice_paid", Key: "in_offline"}}}
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"insert", func(ctx context.Context) error { _, err := s.Insert(ctx, e, t0); return err }},
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, e.Key, t0); return err }},
		{"claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, e.Key, "worker-a", t0, t0.Add(time.Minute))
			return err
		}},
		{"complete", func(ctx context.Context) error {
			return s.Complete(ctx, e, "worker-a", plan, inbox.OutcomeApplied, t0)
		}},
		{"fail", func(ctx context.Context) error {
			_, err := s.Fail(ctx, e.Key, inbox.Failure{Owner: "worker-a", Status: inbox.StatusFailed, Cause: "boom"}, t0)
			return err
		}},
		{"requeue", func(ctx context.Context) error { _, _, err := s.Requeue(ctx, e.Key, t0, false); return err }},
		{"overdue", func(ctx context.Context) error { _, err := s.Overdue(ctx, t0, 10); return err }},
		{"oldest", func(ctx context.Context) error { _, _, err := s.Oldest(ctx); return err }},
		{"reschedule", func(ctx context.Context) error { _, err := s.Reschedule(ctx, e.Key, t0, t0, t0); return err }},
		{"effect", func(ctx context.Context) error {
			_, err := s.Fact(ctx, "stripe#acct_1", "invoice_paid", "in_offline")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := tt.call(ctx)
			if !errors.Is(err, inbox.ErrUnavailable) {
				t.Errorf("got %v, want inbox.ErrUnavailable", err)
			}
			for _, other := range []error{inbox.ErrNotFound, inbox.ErrDuplicate, inbox.ErrLeaseLost, inbox.ErrClaimed} {
				if errors.Is(err, other) {
					t.Errorf("got %v, which also matches %v", err, other)
				}
			}
		})
	}
}
