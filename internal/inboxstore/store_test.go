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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// One moto serves the whole package; every test gets its own table.
var (
	moto   awstest.Shared
	tables atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	moto.Stop()
	os.Exit(code)
}

// mustMoto returns the package's moto server, starting it on first use.
func mustMoto(tb testing.TB) *awstest.Server {
	tb.Helper()
	return moto.Get(tb)
}

// mustStore creates a fresh inbox table (hash key pk, on demand) in the
// package's moto and returns a store over it.
func mustStore(tb testing.TB) *inboxstore.Store {
	tb.Helper()
	cfg := mustMoto(tb).SerialConfig()
	db := dynamodb.NewFromConfig(cfg)
	name := fmt.Sprintf("inbox-%d", tables.Add(1))
	_, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
	})
	if err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
	return inboxstore.New(db, name)
}

// unreachableStore returns a store whose client points at a closed port.
func unreachableStore(tb testing.TB) *inboxstore.Store {
	tb.Helper()
	port, err := awstest.FreePort()
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	srv := &awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	return inboxstore.New(dynamodb.NewFromConfig(srv.Config()), "inbox")
}

var t0 = time.Date(2025, 11, 30, 12, 0, 0, 123456789, time.UTC)

// newEvent returns a received event as ingest builds it, kept for 30 days.
func newEvent(id string, payload []byte) inbox.Event {
	return inbox.Event{
		Key:        inbox.Key{Source: "stripe", Account: "acct_1", EventID: id},
		Kind:       "stripe",
		Type:       "invoice.paid",
		Created:    time.Date(2025, 11, 30, 11, 59, 0, 0, time.UTC),
		Payload:    payload,
		Attributes: map[string]string{"retry_num": "1"},
		Status:     inbox.StatusReceived,
		ReceivedAt: t0,
		UpdatedAt:  t0,
		ExpiresAt:  t0.Add(30 * 24 * time.Hour).Truncate(time.Second),
	}
}

// utc puts every time of e in UTC so events compare with reflect.DeepEqual.
func utc(e inbox.Event) inbox.Event {
	for _, t := range []*time.Time{&e.Created, &e.ReceivedAt, &e.UpdatedAt, &e.ProcessedAt, &e.ExpiresAt, &e.LeaseUntil} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
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

func assertEffectAbsent(tb testing.TB, s *inboxstore.Store, r effects.Record) {
	tb.Helper()
	got, err := s.Effect(context.Background(), r.Kind, r.Key)
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
		if !reflect.DeepEqual(utc(stored), first) {
			t.Errorf("stored: got %+v, want %+v", utc(stored), first)
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
		old := newEvent("evt_expired", []byte(`{"old":true}`))
		old.ExpiresAt = t0.Add(-time.Hour).Truncate(time.Second)
		mustInsert(t, s, old)

		// Before its expiry the item is there; moto never deletes it, so
		// only the store's filter makes it absent afterwards.
		mustGet(t, s, old.Key, t0.Add(-2*time.Hour))
		if got, err := s.Get(ctx, old.Key, t0); !errors.Is(err, inbox.ErrNotFound) {
			t.Fatalf("get after expiry: got %+v, %v; want inbox.ErrNotFound", got, err)
		}

		fresh := newEvent("evt_expired", []byte(`{"old":false}`))
		if _, err := s.Insert(ctx, fresh, t0); err != nil {
			t.Fatalf("insert over expired item: %v", err)
		}
		if got := mustGet(t, s, fresh.Key, t0); !reflect.DeepEqual(utc(got), fresh) {
			t.Errorf("get: got %+v, want %+v", utc(got), fresh)
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

	for _, status := range []inbox.Status{inbox.StatusFailed, inbox.StatusDead} {
		t.Run(string(status), func(t *testing.T) {
			e := mustClaimed(t, s, "evt_"+string(status), "worker-a")
			if err := s.Fail(ctx, e.Key, "worker-a", status, "boom", t0); err != nil {
				t.Fatalf("fail: %v", err)
			}
			// The failed attempt's lease is gone, so no waiting for it.
			got := mustClaim(t, s, e.Key, "worker-b", t0.Add(time.Second), until)
			if got.Status != inbox.StatusProcessing || got.Attempts != 2 || got.LeaseOwner != "worker-b" {
				t.Errorf("got status %s attempts %d owner %q, want processing 2 worker-b", got.Status, got.Attempts, got.LeaseOwner)
			}
		})
	}

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
		plan := effects.Plan{Records: []effects.Record{
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
		if !reflect.DeepEqual(utc(got), utc(want)) {
			t.Errorf("event: got %+v, want %+v", utc(got), utc(want))
		}

		eff, err := s.Effect(ctx, "invoice_paid", "in_1")
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
		if _, err := s.Effect(ctx, "customer_seen", "cus_1"); err != nil {
			t.Errorf("second effect: %v", err)
		}
	})

	t.Run("non-owner writes nothing", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_not_owner", "worker-a")
		rec := effects.Record{Kind: "invoice_paid", Key: "in_not_owner"}
		err := s.Complete(ctx, e, "worker-b", effects.Plan{Records: []effects.Record{rec}}, inbox.OutcomeApplied, done)
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
		rec := effects.Record{Kind: "invoice_paid", Key: "in_taken_over"}
		err := s.Complete(ctx, e, "worker-a", effects.Plan{Records: []effects.Record{rec}}, inbox.OutcomeApplied, later)
		if !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("got %v, want inbox.ErrLeaseLost", err)
		}
		assertEffectAbsent(t, s, rec)
	})

	t.Run("existing record", func(t *testing.T) {
		first := mustClaimed(t, s, "evt_first", "worker-a")
		shared := effects.Record{Kind: "invoice_paid", Key: "in_shared", Attributes: map[string]any{"by": "first"}}
		if err := s.Complete(ctx, first, "worker-a", effects.Plan{Records: []effects.Record{shared}}, inbox.OutcomeApplied, done); err != nil {
			t.Fatalf("complete first: %v", err)
		}

		second := mustClaimed(t, s, "evt_second", "worker-b")
		again := shared
		again.Attributes = map[string]any{"by": "second"}
		plan := effects.Plan{Records: []effects.Record{
			{Kind: "invoice_paid", Key: "in_before"},
			again,
			{Kind: "invoice_paid", Key: "in_after"},
		}}
		err := s.Complete(ctx, second, "worker-b", plan, inbox.OutcomeApplied, done)
		var exists *effects.ExistsError
		if !errors.As(err, &exists) {
			t.Fatalf("got %v, want *effects.ExistsError", err)
		}
		if want := []string{shared.ID()}; !slices.Equal(exists.IDs, want) {
			t.Errorf("existing IDs: got %q, want %q", exists.IDs, want)
		}
		assertEffectAbsent(t, s, plan.Records[0])
		assertEffectAbsent(t, s, plan.Records[2])
		if got := mustGet(t, s, second.Key, done); got.Status != inbox.StatusProcessing || got.LeaseOwner != "worker-b" {
			t.Errorf("second event: got status %s owner %q, want processing worker-b", got.Status, got.LeaseOwner)
		}

		if err := s.Complete(ctx, second, "worker-b", plan.Without(exists.IDs), inbox.OutcomeApplied, done); err != nil {
			t.Fatalf("complete without existing: %v", err)
		}
		if got := mustGet(t, s, second.Key, done).Status; got != inbox.StatusProcessed {
			t.Errorf("second event status: got %s, want processed", got)
		}
		for _, tc := range []struct {
			rec   effects.Record
			event inbox.Key
		}{
			{plan.Records[0], second.Key},
			{shared, first.Key},
			{plan.Records[2], second.Key},
		} {
			eff, err := s.Effect(ctx, tc.rec.Kind, tc.rec.Key)
			if err != nil {
				t.Errorf("effect %s: %v", tc.rec.ID(), err)
				continue
			}
			if got := eff["event_key"]; got != tc.event.String() {
				t.Errorf("effect %s event_key: got %v, want %s", tc.rec.ID(), got, tc.event)
			}
		}
		if eff, err := s.Effect(ctx, shared.Kind, shared.Key); err == nil && eff["by"] != "first" {
			t.Errorf("shared effect overwritten: got by=%v, want first", eff["by"])
		}
	})

	t.Run("missing effect", func(t *testing.T) {
		assertEffectAbsent(t, s, effects.Record{Kind: "invoice_paid", Key: "in_never"})
	})
}

func TestFail(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	at := t0.Add(3 * time.Second)

	for _, status := range []inbox.Status{inbox.StatusFailed, inbox.StatusDead} {
		t.Run(string(status), func(t *testing.T) {
			e := mustClaimed(t, s, "evt_fail_"+string(status), "worker-a")
			if err := s.Fail(ctx, e.Key, "worker-a", status, "handler: upstream said no", at); err != nil {
				t.Fatalf("fail: %v", err)
			}
			got := mustGet(t, s, e.Key, at)
			want := e
			want.Status = status
			want.LastError = "handler: upstream said no"
			want.UpdatedAt = at
			want.LeaseOwner = ""
			want.LeaseUntil = time.Time{}
			if !reflect.DeepEqual(utc(got), utc(want)) {
				t.Errorf("got %+v, want %+v", utc(got), utc(want))
			}
		})
	}

	t.Run("long cause is cut", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_long", "worker-a")
		if err := s.Fail(ctx, e.Key, "worker-a", inbox.StatusFailed, strings.Repeat("x", 5000), at); err != nil {
			t.Fatalf("fail: %v", err)
		}
		if got := len(mustGet(t, s, e.Key, at).LastError); got != 1024 {
			t.Errorf("last_error length: got %d, want 1024", got)
		}
	})

	t.Run("non-owner", func(t *testing.T) {
		e := mustClaimed(t, s, "evt_fail_not_owner", "worker-a")
		if err := s.Fail(ctx, e.Key, "worker-b", inbox.StatusFailed, "boom", at); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("got %v, want inbox.ErrLeaseLost", err)
		}
		got := mustGet(t, s, e.Key, at)
		if got.Status != inbox.StatusProcessing || got.LeaseOwner != "worker-a" || got.LastError != "" {
			t.Errorf("got status %s owner %q last_error %q, want processing worker-a and none", got.Status, got.LeaseOwner, got.LastError)
		}
	})

	t.Run("not claimed", func(t *testing.T) {
		e := mustReceived(t, s, "evt_fail_unclaimed")
		if err := s.Fail(ctx, e.Key, "worker-a", inbox.StatusFailed, "boom", at); !errors.Is(err, inbox.ErrLeaseLost) {
			t.Fatalf("got %v, want inbox.ErrLeaseLost", err)
		}
		if got := mustGet(t, s, e.Key, at).Status; got != inbox.StatusReceived {
			t.Errorf("status: got %s, want received", got)
		}
	})
}

func TestUnavailable(t *testing.T) {
	s := unreachableStore(t)
	e := newEvent("evt_offline", []byte(`{}`))
	plan := effects.Plan{Records: []effects.Record{{Kind: "invoice_paid", Key: "in_offline"}}}
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
		{"fail", func(ctx context.Context) error { return s.Fail(ctx, e.Key, "worker-a", inbox.StatusFailed, "boom", t0) }},
		{"effect", func(ctx context.Context) error { _, err := s.Effect(ctx, "invoice_paid", "in_offline"); return err }},
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
