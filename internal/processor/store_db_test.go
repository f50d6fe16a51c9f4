package processor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

type nopDLQ struct{}

func (nopDLQ) Send(context.Context, string) error { return nil }

type nopVisibility struct{}

func (nopVisibility) Delay(context.Context, string, time.Duration) error { return nil }

// One DynamoDB emulator (dynoxide, else moto) serves the package's tests;
// each store has its own table.
var (
	dynamo awstest.SharedDynamoDB
	tables atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamo.Stop()
	os.Exit(code)
}

func mustStore(tb testing.TB) *inboxstore.Store {
	tb.Helper()
	s, _, _ := mustStoreTable(tb)
	return s
}

// mustStoreTable is mustStore with the client and the table's name, for
// writing an item as an earlier release did.
func mustStoreTable(tb testing.TB) (*inboxstore.Store, *dynamodb.Client, string) {
	tb.Helper()
	db := dynamodb.NewFromConfig(dynamo.Get(tb).SafeConfig())
	name := fmt.Sprintf("inbox-%d", tables.Add(1))
	mustTable(tb, db, name)
	return inboxstore.New(db, name, time.Hour), db, name
}

// mustTable creates the table as template.yaml declares it.
func mustTable(tb testing.TB, db *dynamodb.Client, name string) {
	tb.Helper()
	if _, err := db.CreateTable(context.Background(), inboxstore.TableInput(name)); err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
}

func mustProcessor(tb testing.TB, store processor.Store, now func() time.Time) *processor.Processor {
	tb.Helper()
	p, err := processor.New(processor.Config{
		Store: store, Outbox: mustOutbox(tb, store, now), DeadLetters: nopDLQ{}, Visibility: nopVisibility{}, Routes: handlers.Routes(nil), MaxReceiveCount: 5,
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func invoicePaid(eventID, invoiceID string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.paid","created":1764500000,"data":{"object":{"id":%q,"object":"invoice","amount_paid":1000,"currency":"usd","customer":"cus_1"}}}`, eventID, invoiceID)
}

func mustInsert(tb testing.TB, s *inboxstore.Store, eventID, invoiceID string, now time.Time) inbox.Key {
	tb.Helper()
	k := inbox.Key{Source: "stripe", EventID: eventID}
	_, err := s.Insert(context.Background(), inbox.Event{
		Key: k, Kind: "stripe", Type: "invoice.paid", Payload: invoicePaid(eventID, invoiceID),
		Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}, now)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func sqsMessage(tb testing.TB, id string, k inbox.Key) events.SQSMessage {
	tb.Helper()
	body, err := inbox.EncodeMessage(k)
	if err != nil {
		tb.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}

func mustEvent(tb testing.TB, s *inboxstore.Store, k inbox.Key) inbox.Event {
	tb.Helper()
	ev, err := s.Get(context.Background(), k, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return ev
}

// TestTwoWorkersOneMessage: the same event delivered to several workers at
// once is applied by exactly one of them.
func TestTwoWorkersOneMessage(t *testing.T) {
	s := mustStore(t)
	k := mustInsert(t, s, "evt_race", "in_race", time.Now())
	const workers = 6
	var wg sync.WaitGroup
	retries := make([]int, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := mustProcessor(t, s, time.Now)
			resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, fmt.Sprintf("m%d", i), k)}})
			if err != nil {
				t.Error(err)
			}
			retries[i] = len(resp.BatchItemFailures)
		}()
	}
	wg.Wait()
	ev := mustEvent(t, s, k)
	if ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied {
		t.Errorf("event: got %s/%s, want processed/applied", ev.Status, ev.Outcome)
	}
	if _, err := s.Fact(context.Background(), ev.PartScope(), handlers.InvoicePaidKind, "in_race"); err != nil {
		t.Errorf("effect: %v", err)
	}
	// Losers either saw the lease (and retry later) or the processed
	// status; a retry then acknowledges without a second effect.
	p := mustProcessor(t, s, time.Now)
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "late", k)}})
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("redelivery after processing: got failures %v, want none", resp.BatchItemFailures)
	}
	if ev := mustEvent(t, s, k); ev.Attempts < 1 || ev.Status != inbox.StatusProcessed {
		t.Errorf("after redelivery: got %+v", ev)
	}
}

// TestCrashedWorkerLeaseExpires: a worker that claimed and died leaves the
// event in processing; after its lease expires the next delivery applies it
// exactly once.
func TestCrashedWorkerLeaseExpires(t *testing.T) {
	s := mustStore(t)
	now := time.Now()
	k := mustInsert(t, s, "evt_crash", "in_crash", now)
	if _, err := s.Claim(context.Background(), k, "crashed-worker", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// While the lease is live, another worker backs off.
	p := mustProcessor(t, s, func() time.Time { return now.Add(time.Second) })
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "m1", k)}})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("live lease: got %d failures, want 1 (retry later)", len(resp.BatchItemFailures))
	}
	// After it expires, the redelivery applies the event.
	p = mustProcessor(t, s, func() time.Time { return now.Add(2 * time.Minute) })
	resp, _ = p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "m1", k)}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("expired lease: got failures %v", resp.BatchItemFailures)
	}
	ev := mustEvent(t, s, k)
	if ev.Status != inbox.StatusProcessed || ev.Attempts != 2 {
		t.Errorf("event: got status %s attempts %d, want processed 2", ev.Status, ev.Attempts)
	}
	// The crashed worker cannot commit afterwards: the event is processed
	// by another owner.
	plan, err := handlers.StripeInvoicePaid(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Complete(context.Background(), ev, "crashed-worker", plan, inbox.OutcomeApplied, now)
	if !errors.Is(err, inbox.ErrAlreadyProcessed) {
		t.Errorf("late commit by crashed worker: got %v, want ErrAlreadyProcessed", err)
	}
}

// TestSameInvoiceTwoEvents: two different events carrying the same business
// fact record it once; the second is processed as duplicate_effect.
func TestSameInvoiceTwoEvents(t *testing.T) {
	s := mustStore(t)
	now := time.Now()
	k1 := mustInsert(t, s, "evt_a", "in_same", now)
	k2 := mustInsert(t, s, "evt_b", "in_same", now)
	p := mustProcessor(t, s, time.Now)
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "m1", k1), sqsMessage(t, "m2", k2)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("got %v %v, want no failures", resp.BatchItemFailures, err)
	}
	// The two run concurrently: either may be first.
	first, second := k1, k2
	if mustEvent(t, s, k1).Outcome != inbox.OutcomeApplied {
		first, second = k2, k1
	}
	if got := mustEvent(t, s, first).Outcome; got != inbox.OutcomeApplied {
		t.Errorf("first: got %s, want applied", got)
	}
	if got := mustEvent(t, s, second).Outcome; got != inbox.OutcomeDuplicateEffect {
		t.Errorf("second: got %s, want duplicate_effect", got)
	}
	eff, err := s.Fact(context.Background(), "stripe#", handlers.InvoicePaidKind, "in_same")
	if err != nil {
		t.Fatal(err)
	}
	if eff["event_key"] != first.String() || fmt.Sprint(eff["amount_paid"]) != "1000" {
		t.Errorf("effect: got %v, want event_key %s and amount_paid 1000", eff, first)
	}
}

// recordingQueue keeps what is sent to it: a DLQ, or the main queue.
type recordingQueue struct {
	mu   sync.Mutex
	sent []string
}

func (d *recordingQueue) Send(_ context.Context, body string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, body)
	return nil
}

func lastReceive(m events.SQSMessage) events.SQSMessage {
	m.Attributes = map[string]string{"ApproximateReceiveCount": "5"}
	return m
}

// TestLastReceiveKeepsTheDLQConsistent: on a message's last receive, over
// the wire, a failure is reported (and the message moves to the DLQ) only
// when its event is dead; otherwise the message is acknowledged and the
// event stays with whoever answers for it.
func TestLastReceiveKeepsTheDLQConsistent(t *testing.T) {
	ctx := context.Background()
	newProcessor := func(t *testing.T, s *inboxstore.Store, routes processor.Routes, now func() time.Time) (*processor.Processor, *recordingQueue) {
		t.Helper()
		return mustProcessorWith(t, s, routes, now)
	}
	failing := processor.Routes{"stripe": {"invoice.paid": func(context.Context, inbox.Event) (effects.Plan, error) {
		return effects.Plan{}, errors.New("upstream timeout")
	}}}

	t.Run("live lease elsewhere: acknowledged, the holder finishes it", func(t *testing.T) {
		s := mustStore(t)
		now := time.Now()
		k := mustInsert(t, s, "evt_held", "in_held", now)
		held, err := s.Claim(ctx, k, "holder", now, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		p, dlq := newProcessor(t, s, handlers.Routes(nil), time.Now)
		resp, _ := p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{lastReceive(sqsMessage(t, "copy", k))}})
		if len(resp.BatchItemFailures) != 0 || len(dlq.sent) != 0 {
			t.Fatalf("got failures %v and DLQ %v, want neither", resp.BatchItemFailures, dlq.sent)
		}
		if ev := mustEvent(t, s, k); ev.Status != inbox.StatusProcessing || ev.LeaseOwner != "holder" {
			t.Fatalf("event: got %s held by %q, want processing by holder", ev.Status, ev.LeaseOwner)
		}
		plan, err := handlers.StripeInvoicePaid(ctx, held)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, held, "holder", plan, inbox.OutcomeApplied, time.Now()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("transient failure: dead, copied to the DLQ, acknowledged", func(t *testing.T) {
		s := mustStore(t)
		k := mustInsert(t, s, "evt_last", "in_last", time.Now())
		p, dlq := newProcessor(t, s, failing, time.Now)
		m := lastReceive(sqsMessage(t, "m-last", k))
		resp, _ := p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
		if len(resp.BatchItemFailures) != 0 || len(dlq.sent) != 1 || dlq.sent[0] != m.Body {
			t.Fatalf("got failures %v and DLQ %v, want the message in the DLQ", resp.BatchItemFailures, dlq.sent)
		}
		ev := mustEvent(t, s, k)
		if ev.Status != inbox.StatusDead || ev.DeadBy != "m-last" || !strings.Contains(ev.LastError, "upstream timeout") {
			t.Errorf("event: got %+v, want dead by m-last with the cause", ev)
		}
		// Another copy of the message, later: the event is dead, final.
		resp, _ = p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "m-other", k)}})
		if len(resp.BatchItemFailures) != 0 || len(dlq.sent) != 1 || mustEvent(t, s, k).Attempts != 1 {
			t.Errorf("copy of a dead event: got failures %v, DLQ %d, want acknowledged and not attempted", resp.BatchItemFailures, len(dlq.sent))
		}
	})

	t.Run("no event: acknowledged, nothing in the DLQ", func(t *testing.T) {
		s := mustStore(t)
		p, dlq := newProcessor(t, s, handlers.Routes(nil), time.Now)
		resp, _ := p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{lastReceive(sqsMessage(t, "orphan", inbox.Key{Source: "stripe", EventID: "evt_none"}))}})
		if len(resp.BatchItemFailures) != 0 || len(dlq.sent) != 0 {
			t.Errorf("got failures %v and DLQ %v, want neither", resp.BatchItemFailures, dlq.sent)
		}
	})

	t.Run("lease lost at commit: acknowledged, the new holder answers", func(t *testing.T) {
		s := mustStore(t)
		k := mustInsert(t, s, "evt_taken", "in_taken", time.Now())
		// The handler is slow: while it runs, its lease ends and another
		// worker claims the event.
		slow := processor.Routes{"stripe": {"invoice.paid": func(ctx context.Context, ev inbox.Event) (effects.Plan, error) {
			later := ev.LeaseUntil.Add(time.Second)
			if _, err := s.Claim(ctx, ev.Key, "taker", later, later.Add(time.Minute)); err != nil {
				return effects.Plan{}, err
			}
			return handlers.StripeInvoicePaid(ctx, ev)
		}}}
		p, dlq := newProcessor(t, s, slow, time.Now)
		resp, _ := p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{lastReceive(sqsMessage(t, "m", k))}})
		if len(resp.BatchItemFailures) != 0 || len(dlq.sent) != 0 {
			t.Fatalf("got failures %v and DLQ %v, want neither", resp.BatchItemFailures, dlq.sent)
		}
		if ev := mustEvent(t, s, k); ev.Status != inbox.StatusProcessing || ev.LeaseOwner != "taker" {
			t.Errorf("event: got %s held by %q, want processing by taker", ev.Status, ev.LeaseOwner)
		}
		if _, err := s.Fact(ctx, "stripe#", handlers.InvoicePaidKind, "in_taken"); !errors.Is(err, inbox.ErrNotFound) {
			t.Errorf("effect of the worker that lost its lease: %v, want none", err)
		}
	})
}

// TestUnfinishedEventsDoNotExpire: an event failing for longer than the
// retention is never expired while it is unfinished.
func TestUnfinishedEventsDoNotExpire(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	now := time.Now()
	k := mustInsert(t, s, "evt_slow", "in_slow", now)
	// Failed again and again, for longer than the retention: still there.
	p, _ := mustProcessorWith(t, s, processor.Routes{"stripe": {"invoice.paid": func(context.Context, inbox.Event) (effects.Plan, error) {
		return effects.Plan{}, errors.New("still down")
	}}}, func() time.Time { return now })
	for i := range 3 {
		now = now.Add(2 * time.Hour) // the store's retention is one hour
		m := sqsMessage(t, fmt.Sprintf("m%d", i), k)
		p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
		ev, err := s.Get(ctx, k, now)
		if err != nil || ev.Status != inbox.StatusFailed || !ev.ExpiresAt.IsZero() {
			t.Fatalf("after failure %d: got %+v, %v; want failed, never expiring", i, ev, err)
		}
	}
}

func mustProcessorWith(tb testing.TB, s processor.Store, routes processor.Routes, now func() time.Time) (*processor.Processor, *recordingQueue) {
	tb.Helper()
	dlq := &recordingQueue{}
	p, err := processor.New(processor.Config{
		Store: s, Outbox: mustOutbox(tb, s, now), DeadLetters: dlq, Visibility: nopVisibility{}, Routes: routes, MaxReceiveCount: 5,
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p, dlq
}

// mustOutbox is a real deliverer over the store, its receipts delivered to
// the log.
func mustOutbox(tb testing.TB, store any, now func() time.Time) processor.Outbox {
	tb.Helper()
	d, err := outbox.New(outbox.Config{
		Store:   store.(outbox.Store),
		Targets: map[string]outbox.Target{handlers.ReceiptTarget: {}},
		Logger:  slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)),
		Now:     now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
