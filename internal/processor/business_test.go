package processor_test

// Business outcomes over the wire: the shipped examples through the real
// processor, store (moto) and outbox, with a real HTTP receiver for the
// receipts. Each test asserts what a business sees — one extension, one
// receipt, the right status — not only the inbox rows.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// receiptReceiver is the receipt endpoint. It answers as its mode says and
// counts what it accepted, by idempotency key.
type receiptReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	mode     string // "ok", "down" (503), "reject" (422), "hang" (no answer)
	requests int
	accepted map[string]int
	bodies   map[string]string
}

func newReceiver(tb testing.TB) *receiptReceiver {
	tb.Helper()
	rc := &receiptReceiver{mode: "ok", accepted: map[string]int{}, bodies: map[string]string{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		rc.mu.Lock()
		rc.requests++
		mode := rc.mode
		key := r.Header.Get("Idempotency-Key")
		if mode == "ok" || mode == "hang" {
			rc.accepted[key]++
			rc.bodies[key] = body.String()
		}
		rc.mu.Unlock()
		switch mode {
		case "ok":
			w.WriteHeader(http.StatusOK)
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "reject":
			w.WriteHeader(http.StatusUnprocessableEntity)
		case "hang":
			<-r.Context().Done()
		}
	}))
	tb.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiptReceiver) set(mode string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.mode = mode
}

// counts returns the requests made and the receipts accepted per key.
func (rc *receiptReceiver) counts() (int, map[string]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.accepted))
	for k, v := range rc.accepted {
		out[k] = v
	}
	return rc.requests, out
}

// clock is a test's time, moved on by hand.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// business is the shipped examples wired as in Lambda, over moto.
type business struct {
	s     *inboxstore.Store
	db    *dynamodb.Client
	table string
	rc    *receiptReceiver
	clock *clock
	dlq   *recordingQueue
	logs  *bytes.Buffer
	mu    sync.Mutex
	// metrics is what the processor and outbox publish in their lines.
	metrics obs.Metrics
}

func newBusiness(tb testing.TB) *business {
	tb.Helper()
	s, db, table := mustStoreTable(tb)
	return &business{s: s, db: db, table: table, rc: newReceiver(tb), clock: newClock(), dlq: &recordingQueue{}, logs: &bytes.Buffer{}}
}

// processor returns a processor whose outbox delivers through store (the
// business's own unless given) and whose receipts go to the receiver.
func (b *business) processor(tb testing.TB, store outbox.Store, routes processor.Routes) *processor.Processor {
	tb.Helper()
	if store == nil {
		store = b.s
	}
	if routes == nil {
		routes = handlers.Routes(nil)
	}
	log := slog.New(slog.NewJSONHandler(&lockedBuffer{b: b.logs, mu: &b.mu}, nil))
	d, err := outbox.New(outbox.Config{
		Store:   store,
		Targets: map[string]outbox.Target{handlers.ReceiptTarget: {URL: b.rc.srv.URL + "/receipts", Timeout: 500 * time.Millisecond}},
		Logger:  log, Now: b.clock.now, Metrics: b.metrics,
	})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := processor.New(processor.Config{
		Store: b.s, Outbox: d, DeadLetters: b.dlq, Visibility: nopVisibility{}, Routes: routes,
		MaxReceiveCount: 5, Logger: log, Now: b.clock.now, Metrics: b.metrics,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// insert stores an event as ingest would.
func (b *business) insert(tb testing.TB, kind, id, typ string, created time.Time, payload []byte) inbox.Key {
	tb.Helper()
	k := inbox.Key{Source: kind, EventID: id}
	now := b.clock.now()
	_, err := b.s.Insert(context.Background(), inbox.Event{
		Key: k, Kind: kind, Type: typ, Created: created, Payload: payload,
		Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}, now)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// handle runs one batch of the given messages (receive counts as given,
// 1 if none) and returns the messages reported for retry.
func (b *business) handle(tb testing.TB, p *processor.Processor, msgs ...events.SQSMessage) []string {
	tb.Helper()
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func (b *business) event(tb testing.TB, k inbox.Key) inbox.Event {
	tb.Helper()
	ev, err := b.s.Get(context.Background(), k, b.clock.now())
	if err != nil {
		tb.Fatal(err)
	}
	return ev
}

func (b *business) part(tb testing.TB, id string) map[string]any {
	tb.Helper()
	m, err := b.s.Part(context.Background(), id)
	if err != nil {
		tb.Fatalf("%s: %v", id, err)
	}
	return m
}

const periodEnd = 1767225600 // 2026-01-01

func invoiceEvent(eventID, typ, invoiceID string, periodEnd int64) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":1764500000,"livemode":false,"data":{"object":{"id":%q,"object":"invoice","amount_paid":1500,"currency":"eur","customer":"cus_1","period_end":1764500000,"lines":{"object":"list","data":[{"object":"line_item","period":{"start":1764500000,"end":%d}}]}}}}`,
		eventID, typ, invoiceID, periodEnd)
}

func subscriptionEvent(eventID, typ, status string, created int64) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":"sub_1","object":"subscription","customer":"cus_1","status":%q}}}`,
		eventID, typ, created, status)
}

// stripeScope and githubScope are the scopes of the parts of the events
// insert stores (no account).
var (
	stripeScope = inbox.ScopeOf("stripe", inbox.Key{})
	githubScope = inbox.ScopeOf("github", inbox.Key{})
)

// receiptKey is the key of an invoice's receipt row, as stored and sent.
func receiptKey(invoiceID string) string {
	return effects.ScopedKey(stripeScope, effects.KeyOf(effects.Fact{Kind: handlers.InvoicePaidKind, Key: invoiceID}.ID(), handlers.ReceiptTarget))
}

func membership(b *business, tb testing.TB) map[string]any {
	tb.Helper()
	return b.part(tb, effects.ScopedID(stripeScope, effects.Update{Entity: handlers.MembershipEntity, Key: "cus_1"}.ID()))
}

func receive(m events.SQSMessage, n int) events.SQSMessage {
	m.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(n)}
	return m
}

// TestOneMessageTwoWorkersOneReceipt: the same message handled by several
// workers at once extends the membership once and sends one receipt.
func TestOneMessageTwoWorkersOneReceipt(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_race", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_race", "invoice.paid", "in_race", periodEnd))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.handle(t, b.processor(t, nil, nil), sqsMessage(t, fmt.Sprintf("m%d", i), k))
		}()
	}
	wg.Wait()
	// Whoever backed off comes back; nothing more happens.
	b.clock.advance(2 * time.Minute)
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m0", k))
	requests, accepted := b.rc.counts()
	if requests != 1 || accepted[receiptKey("in_race")] != 1 {
		t.Errorf("receipts: got %d requests, %v; want one, for %s", requests, accepted, receiptKey("in_race"))
	}
	if got := membership(b, t)["paid_through"]; got != int64(periodEnd) {
		t.Errorf("paid_through: got %v, want %d", got, periodEnd)
	}
	ev := b.event(t, k)
	if ev.Outcome != inbox.OutcomeApplied || ev.OutboxPending {
		t.Errorf("event: got %s, outbox pending %t; want applied, settled", ev.Outcome, ev.OutboxPending)
	}
	body := b.rc.bodies[receiptKey("in_race")]
	for _, want := range []string{`"invoice_id":"in_race"`, `"customer":"cus_1"`, `"amount_paid":1500`, `"currency":"eur"`} {
		if !strings.Contains(body, want) {
			t.Errorf("receipt body %s: want %s", body, want)
		}
	}
}

// stoppedOutbox is a worker that stops right after its commit, before it
// delivers anything or acknowledges the message.
type stoppedOutbox struct{}

func (stoppedOutbox) Deliver(context.Context, context.Context, inbox.Key, int, []string, string) (outbox.Settlement, error) {
	return outbox.Settlement{}, nil
}

// TestStoppedAfterCommit: a worker that stops after the transaction and
// before the ack leaves the event processed with its receipt pending; the
// redelivery applies nothing again and delivers the receipt once.
func TestStoppedAfterCommit(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_stop", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_stop", "invoice.paid", "in_stop", periodEnd))
	stopped, err := processor.New(processor.Config{
		Store: b.s, Outbox: stoppedOutbox{}, DeadLetters: b.dlq, Visibility: nopVisibility{}, Routes: handlers.Routes(nil),
		MaxReceiveCount: 5, Logger: slog.New(slog.DiscardHandler), Now: b.clock.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.handle(t, stopped, sqsMessage(t, "m1", k)) // its answer never reaches SQS
	if ev := b.event(t, k); ev.Status != inbox.StatusProcessed || !ev.OutboxPending {
		t.Fatalf("after the stop: got %s, outbox pending %t", ev.Status, ev.OutboxPending)
	}
	before := membership(b, t)

	for i := 2; i <= 3; i++ {
		if got := b.handle(t, b.processor(t, nil, nil), receive(sqsMessage(t, "m1", k), i)); len(got) != 0 {
			t.Errorf("redelivery %d: got retries %v", i, got)
		}
	}
	requests, accepted := b.rc.counts()
	if requests != 1 || accepted[receiptKey("in_stop")] != 1 {
		t.Errorf("receipts: got %d requests, %v; want one", requests, accepted)
	}
	if ev := b.event(t, k); ev.OutboxPending || ev.ExpiresAt.IsZero() {
		t.Errorf("after the redelivery: outbox pending %t, expiry %s; want settled", ev.OutboxPending, ev.ExpiresAt)
	}
	if after := membership(b, t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("membership changed by the redelivery: got %v, want %v", after, before)
	}
	if !strings.Contains(b.logs.String(), `"outcome":"already_processed"`) {
		t.Errorf("logs: want the redelivery already_processed, got %s", b.logs)
	}
}

// lostFinish is a store whose record of a delivery never lands: the worker
// stopped after the receiver had the request.
type lostFinish struct{ *inboxstore.Store }

func (lostFinish) FinishRow(context.Context, string, string, outbox.Result, time.Time) error {
	return fmt.Errorf("finish row: %w", inbox.ErrUnavailable)
}

// TestStoppedWhileSending: a worker that stopped after sending a receipt,
// before recording it, leaves the row unknown to the next one, which does
// not send it again: it is listed for review.
func TestStoppedWhileSending(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_send", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_send", "invoice.paid", "in_send", periodEnd))
	if got := b.handle(t, b.processor(t, lostFinish{b.s}, nil), sqsMessage(t, "m1", k)); len(got) != 1 {
		t.Fatalf("first worker: got retries %v, want the message back (outbox unsettled)", got)
	}
	b.clock.advance(time.Minute) // the row's lease ends
	for i := 2; i <= 3; i++ {
		b.handle(t, b.processor(t, nil, nil), receive(sqsMessage(t, "m1", k), i))
	}
	requests, _ := b.rc.counts()
	if requests != 1 {
		t.Errorf("receiver: got %d requests, want 1 (never resent)", requests)
	}
	row, err := b.s.Row(context.Background(), receiptKey("in_send"))
	if err != nil || row.State != outbox.Unknown {
		t.Errorf("row: got %+v, %v; want unknown", row, err)
	}
	review, err := b.s.ForReview(context.Background(), 10)
	if err != nil || len(review) != 1 || review[0].Key != receiptKey("in_send") {
		t.Errorf("for review: got %+v, %v", review, err)
	}
	if ev := b.event(t, k); ev.OutboxPending {
		t.Errorf("event: outbox still pending after its row ended unknown")
	}
}

// TestOneInvoiceManyEvents: invoice.paid, invoice.payment_succeeded and a
// resend with a new event id, all for one invoice and concurrently, extend
// the membership once and send one receipt; the others are
// duplicate_effect.
func TestOneInvoiceManyEvents(t *testing.T) {
	b := newBusiness(t)
	created := time.Unix(1764500000, 0)
	keys := []inbox.Key{
		b.insert(t, "stripe", "evt_paid", "invoice.paid", created, invoiceEvent("evt_paid", "invoice.paid", "in_1", periodEnd)),
		b.insert(t, "stripe", "evt_succeeded", "invoice.payment_succeeded", created, invoiceEvent("evt_succeeded", "invoice.payment_succeeded", "in_1", periodEnd)),
		b.insert(t, "stripe", "evt_resent", "invoice.paid", created, invoiceEvent("evt_resent", "invoice.paid", "in_1", periodEnd)),
	}
	var msgs []events.SQSMessage
	for i, k := range keys {
		msgs = append(msgs, sqsMessage(t, fmt.Sprintf("m%d", i), k))
	}
	if got := b.handle(t, b.processor(t, nil, nil), msgs...); len(got) != 0 {
		t.Fatalf("got retries %v", got)
	}
	outcomes := map[inbox.Outcome]int{}
	for _, k := range keys {
		outcomes[b.event(t, k).Outcome]++
	}
	if outcomes[inbox.OutcomeApplied] != 1 || outcomes[inbox.OutcomeDuplicateEffect] != 2 {
		t.Errorf("outcomes: got %v, want 1 applied, 2 duplicate_effect", outcomes)
	}
	requests, accepted := b.rc.counts()
	if requests != 1 || accepted[receiptKey("in_1")] != 1 {
		t.Errorf("receipts: got %d requests, %v; want one", requests, accepted)
	}
	if got := membership(b, t); got["paid_through"] != int64(periodEnd) || got["last_invoice"] != "in_1" {
		t.Errorf("membership: got %v", got)
	}

	// A later invoice extends it; an older one, arriving late, is recorded
	// and gets its receipt but never moves paid_through back.
	later := b.insert(t, "stripe", "evt_next", "invoice.paid", created, invoiceEvent("evt_next", "invoice.paid", "in_2", periodEnd+2592000))
	older := b.insert(t, "stripe", "evt_old", "invoice.paid", created, invoiceEvent("evt_old", "invoice.paid", "in_0", periodEnd-2592000))
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m3", later))
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m4", older))
	if got := membership(b, t)["paid_through"]; got != int64(periodEnd+2592000) {
		t.Errorf("paid_through: got %v, want %d", got, periodEnd+2592000)
	}
	if _, accepted := b.rc.counts(); len(accepted) != 3 || accepted[receiptKey("in_0")] != 1 {
		t.Errorf("receipts: got %v, want one per invoice", accepted)
	}
	if ev := b.event(t, older); ev.Outcome != inbox.OutcomeApplied || !strings.Contains(strings.Join(ev.Touched, " "), effects.ScopedID(stripeScope, "fact#invoice_paid#in_0")) {
		t.Errorf("the older invoice: got %s touching %v; want applied with its fact", ev.Outcome, ev.Touched)
	}
}

func ledger(b *business, tb testing.TB) map[string]any {
	tb.Helper()
	return b.part(tb, effects.ScopedID(stripeScope, effects.Update{Entity: handlers.LedgerEntity, Key: "cus_1"}.ID()))
}

// TestLedgerCountsEachInvoiceOnce: a customer's invoices, each carried by
// invoice.paid and invoice.payment_succeeded, some concurrently, some
// redelivered or resent, some older arriving after newer, count once each
// on the ledger; the membership's paid_through is the latest, an older
// invoice's membership update being stale while its ledger update is not.
func TestLedgerCountsEachInvoiceOnce(t *testing.T) {
	const month = 2592000
	b := newBusiness(t)
	created := time.Unix(1764500000, 0)
	var n int
	msgs := map[string]events.SQSMessage{}
	// deliver inserts, for each invoice, the events carrying it, and
	// handles them in one batch, redelivering what is reported for retry
	// as SQS would.
	deliver := func(invoices map[string]int64, types ...string) []inbox.Key {
		t.Helper()
		var keys []inbox.Key
		var batch []events.SQSMessage
		for invoiceID, end := range invoices {
			for _, typ := range types {
				n++
				id := fmt.Sprintf("evt_%s_%d", invoiceID, n)
				k := b.insert(t, "stripe", id, typ, created, invoiceEvent(id, typ, invoiceID, end))
				keys = append(keys, k)
				m := sqsMessage(t, fmt.Sprint("m", n), k)
				msgs[m.MessageId] = m
				batch = append(batch, m)
			}
		}
		for i := 2; len(batch) > 0; i++ {
			if i > 5 {
				t.Fatalf("messages %v still retried", batch)
			}
			retried := b.handle(t, b.processor(t, nil, nil), batch...)
			batch = nil
			for _, id := range retried {
				batch = append(batch, receive(msgs[id], i))
			}
			b.clock.advance(2 * time.Minute)
		}
		return keys
	}
	both := []string{"invoice.paid", "invoice.payment_succeeded"}

	// Two invoices at once, the older with the newer.
	deliver(map[string]int64{"in_feb": periodEnd + month, "in_jan": periodEnd}, both...)
	// The newest, then, after it, an older one than all (its membership
	// update is stale, its ledger update is not), by one event and then
	// the other.
	deliver(map[string]int64{"in_mar": periodEnd + 2*month}, both...)
	older := deliver(map[string]int64{"in_dec": periodEnd - month}, "invoice.paid")
	older = append(older, deliver(map[string]int64{"in_dec": periodEnd - month}, "invoice.payment_succeeded")...)
	// Resends of invoices already counted, with new event ids.
	deliver(map[string]int64{"in_jan": periodEnd, "in_mar": periodEnd + 2*month}, "invoice.paid")
	// And every message delivered again.
	var again []events.SQSMessage
	for _, m := range msgs {
		again = append(again, receive(m, 2))
	}
	if got := b.handle(t, b.processor(t, nil, nil), again...); len(got) != 0 {
		t.Errorf("redeliveries: got retries %v", got)
	}

	if got := ledger(b, t)["invoices_paid"]; got != int64(4) {
		t.Errorf("invoices_paid: got %v (%T), want 4, one per invoice", got, got)
	}
	if got := membership(b, t); got["paid_through"] != int64(periodEnd+2*month) || got["last_invoice"] != "in_mar" {
		t.Errorf("membership: got %v, want paid through %d by in_mar", got, periodEnd+2*month)
	}
	paid, succeeded := b.event(t, older[0]), b.event(t, older[1])
	touched := strings.Join(paid.Touched, " ")
	if paid.Outcome != inbox.OutcomeApplied || !strings.Contains(touched, effects.ScopedID(stripeScope, "entity#ledger#cus_1")) || strings.Contains(touched, "entity#membership#cus_1") {
		t.Errorf("the older invoice: got %s touching %v; want applied, touching the ledger and not the membership", paid.Outcome, paid.Touched)
	}
	if succeeded.Outcome != inbox.OutcomeDuplicateEffect {
		t.Errorf("the older invoice's second event: got %s, want duplicate_effect", succeeded.Outcome)
	}
	if _, accepted := b.rc.counts(); len(accepted) != 4 {
		t.Errorf("receipts: got %v, want one per invoice", accepted)
	}
}

// TestSubscriptionReversed: subscription.updated and .deleted delivered in
// reverse order end canceled; the late update is stale, in the same second
// too.
func TestSubscriptionReversed(t *testing.T) {
	for _, tt := range []struct {
		name           string
		updatedCreated int64
	}{
		{"a second earlier", 1764500000},
		{"in the same second", 1764500001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBusiness(t)
			deleted := b.insert(t, "stripe", "evt_a_deleted", "customer.subscription.deleted", time.Unix(1764500001, 0),
				subscriptionEvent("evt_a_deleted", "customer.subscription.deleted", "canceled", 1764500001))
			// "evt_z…" sorts after "evt_a…": in the same second the order
			// alone would let it through; the transition guard does not.
			updated := b.insert(t, "stripe", "evt_z_updated", "customer.subscription.updated", time.Unix(tt.updatedCreated, 0),
				subscriptionEvent("evt_z_updated", "customer.subscription.updated", "active", tt.updatedCreated))
			p := b.processor(t, nil, nil)
			b.handle(t, p, sqsMessage(t, "m1", deleted))
			b.handle(t, p, sqsMessage(t, "m2", updated))
			sub := b.part(t, effects.ScopedID(stripeScope, effects.Update{Entity: handlers.SubscriptionEntity, Key: "sub_1"}.ID()))
			if sub["status"] != "canceled" {
				t.Errorf("status: got %v, want canceled", sub["status"])
			}
			if got := b.event(t, updated).Outcome; got != inbox.OutcomeStale {
				t.Errorf("late update: got %s, want stale", got)
			}
			if got := b.event(t, deleted).Outcome; got != inbox.OutcomeApplied {
				t.Errorf("deletion: got %s, want applied", got)
			}
		})
	}
}

// TestReceiptEndpointDown: the payment is applied once while the receipt
// endpoint is down; the receipt is delivered once after it recovers —
// through the message's own retries, or, once they are spent, the sweep.
func TestReceiptEndpointDown(t *testing.T) {
	b := newBusiness(t)
	b.rc.set("down")
	k := b.insert(t, "stripe", "evt_down", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_down", "invoice.paid", "in_down", periodEnd))
	msg := sqsMessage(t, "m1", k)
	if got := b.handle(t, b.processor(t, nil, nil), msg); len(got) != 1 {
		t.Fatalf("got retries %v, want the message back for its receipt", got)
	}
	if got := membership(b, t)["paid_through"]; got != int64(periodEnd) {
		t.Errorf("paid_through while the endpoint is down: got %v", got)
	}
	// Down through the last receive: acknowledged, never to the DLQ, left
	// to the sweep.
	for i := 2; i <= 5; i++ {
		b.clock.advance(10 * time.Minute)
		b.handle(t, b.processor(t, nil, nil), receive(msg, i))
	}
	if len(b.dlq.sent) != 0 {
		t.Errorf("DLQ: got %v, want nothing (the event is processed)", b.dlq.sent)
	}
	ev := b.event(t, k)
	if ev.Status != inbox.StatusProcessed || !ev.OutboxPending {
		t.Fatalf("event: got %s, outbox pending %t", ev.Status, ev.OutboxPending)
	}

	b.rc.set("ok")
	b.clock.advance(2 * time.Hour)
	sent := &recordingQueue{}
	r := &replay.Replayer{Store: b.s, Main: sent, SweepAfter: 5 * time.Minute, Logger: slog.New(slog.DiscardHandler), Now: b.clock.now}
	sum, err := r.Handle(context.Background(), replay.Request{Action: replay.ActionSweep, DryRun: new(bool)})
	if err != nil || sum.Moved != 1 || len(sent.sent) != 1 {
		t.Fatalf("sweep: got %+v, %v, sent %v; want the event re-enqueued", sum, err, sent.sent)
	}
	if got := b.handle(t, b.processor(t, nil, nil), events.SQSMessage{MessageId: "swept", Body: sent.sent[0], Attributes: map[string]string{"ApproximateReceiveCount": "1"}}); len(got) != 0 {
		t.Errorf("swept message: got retries %v", got)
	}
	requests, accepted := b.rc.counts()
	if accepted[receiptKey("in_down")] != 1 || requests != 6 {
		t.Errorf("receiver: got %d requests, %v; want 5 refused and one receipt", requests, accepted)
	}
	if ev := b.event(t, k); ev.OutboxPending {
		t.Error("event: outbox still pending after the receipt was delivered")
	}
	// Nothing brings it back now.
	b.clock.advance(2 * time.Hour)
	if sum, err := r.Handle(context.Background(), replay.Request{Action: replay.ActionSweep, DryRun: new(bool)}); err != nil || sum.Examined != 0 {
		t.Errorf("second sweep: got %+v, %v; want nothing overdue", sum, err)
	}
	if got := membership(b, t)["paid_through"]; got != int64(periodEnd) {
		t.Errorf("paid_through: got %v", got)
	}
}

// TestReceiptUnknownOrRejected: a receiver that accepts and then does not
// answer in time leaves the receipt unknown, never resent; one that
// answers 4xx leaves it rejected. Both are for review, and neither holds
// the event back.
func TestReceiptUnknownOrRejected(t *testing.T) {
	for _, tt := range []struct {
		mode string
		want outbox.State
	}{
		{"hang", outbox.Unknown},
		{"reject", outbox.Rejected},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			b := newBusiness(t)
			b.rc.set(tt.mode)
			k := b.insert(t, "stripe", "evt_"+tt.mode, "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_"+tt.mode, "invoice.paid", "in_"+tt.mode, periodEnd))
			if got := b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m1", k)); len(got) != 0 {
				t.Errorf("got retries %v, want none: the row is final", got)
			}
			b.rc.set("ok")
			b.clock.advance(time.Hour)
			b.handle(t, b.processor(t, nil, nil), receive(sqsMessage(t, "m1", k), 2))
			if requests, _ := b.rc.counts(); requests != 1 {
				t.Errorf("receiver: got %d requests, want 1", requests)
			}
			row, err := b.s.Row(context.Background(), receiptKey("in_"+tt.mode))
			if err != nil || row.State != tt.want {
				t.Errorf("row: got %+v, %v; want %s", row, err, tt.want)
			}
			if review, err := b.s.ForReview(context.Background(), 10); err != nil || len(review) != 1 || review[0].State != tt.want {
				t.Errorf("for review: got %+v, %v", review, err)
			}
		})
	}
}

// TestPlanOverTheLimits: a plan that cannot fit one transaction makes the
// event dead with the reason, and nothing of it is written.
func TestPlanOverTheLimits(t *testing.T) {
	b := newBusiness(t)
	routes := processor.Routes{"stripe": {"invoice.paid": func(context.Context, inbox.Event) (effects.Plan, error) {
		var p effects.Plan
		for i := range effects.MaxParts + 1 {
			p.Facts = append(p.Facts, effects.Fact{Kind: "line", Key: fmt.Sprint(i)})
		}
		return p, nil
	}}}
	k := b.insert(t, "stripe", "evt_big", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_big", "invoice.paid", "in_big", periodEnd))
	b.handle(t, b.processor(t, nil, routes), sqsMessage(t, "m1", k))
	ev := b.event(t, k)
	if ev.Status != inbox.StatusDead || !strings.Contains(ev.LastError, "100 parts") || !strings.Contains(ev.LastError, "at most 99") {
		t.Errorf("event: got %s %q, want dead saying 100 parts, at most 99", ev.Status, ev.LastError)
	}
	if len(b.dlq.sent) != 1 {
		t.Errorf("DLQ: got %d, want 1", len(b.dlq.sent))
	}
	for _, id := range []string{"fact#line#0", "fact#line#99"} {
		if _, err := b.s.Part(context.Background(), effects.ScopedID(stripeScope, id)); err == nil {
			t.Errorf("%s written", id)
		}
	}
}

func pushEvent(delivery, after string, pushedAt int64, shas ...string) []byte {
	var commits []string
	for _, sha := range shas {
		commits = append(commits, fmt.Sprintf(`{"id":%q,"distinct":true,"message":"m","timestamp":"2026-11-30T12:00:00Z","author":{"name":"n","email":"e@example.com","username":"octo"}}`, sha))
	}
	return fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"0000000000000000000000000000000000000001","after":%q,"created":false,"deleted":false,"forced":false,"commits":[%s],"head_commit":null,"repository":{"full_name":"octo/app","pushed_at":%d},"pusher":{"name":"octo"}}`,
		after, strings.Join(commits, ","), pushedAt)
}

// TestGitHubPushes: a commit seen in two pushes, or in a redelivery, is
// one record; the branch head moves forward only, a late older push being
// stale for it.
func TestGitHubPushes(t *testing.T) {
	b := newBusiness(t)
	const c1, c2, c3 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	newer := b.insert(t, "github", "del-2", "push", time.Time{}, pushEvent("del-2", c3, 1764500200, c2, c3))
	older := b.insert(t, "github", "del-1", "push", time.Time{}, pushEvent("del-1", c2, 1764500100, c1, c2))
	again := b.insert(t, "github", "del-1-redelivered", "push", time.Time{}, pushEvent("del-1-redelivered", c2, 1764500100, c1, c2))
	p := b.processor(t, nil, nil)
	for i, k := range []inbox.Key{newer, older, again} {
		if got := b.handle(t, p, sqsMessage(t, fmt.Sprint("m", i), k)); len(got) != 0 {
			t.Fatalf("%s: got retries %v", k, got)
		}
	}
	branch := b.part(t, effects.ScopedID(githubScope, effects.Update{Entity: handlers.BranchEntity, Key: "octo/app:refs/heads/main"}.ID()))
	if branch["head"] != c3 {
		t.Errorf("head: got %v, want %s", branch["head"], c3)
	}
	for _, sha := range []string{c1, c2, c3} {
		f := b.part(t, effects.ScopedID(githubScope, effects.Fact{Kind: handlers.PushCommitKind, Key: "octo/app@" + sha}.ID()))
		if want := map[string]string{c1: older.String(), c2: newer.String(), c3: newer.String()}[sha]; f["event_key"] != want {
			t.Errorf("commit %s recorded by %v, want %s", sha[:4], f["event_key"], want)
		}
	}
	for k, want := range map[inbox.Key]inbox.Outcome{
		newer: inbox.OutcomeApplied,
		older: inbox.OutcomeApplied, // c1 is new; the branch update alone was stale
		again: inbox.OutcomeStale,   // its commits exist and its update is stale
	} {
		if got := b.event(t, k).Outcome; got != want {
			t.Errorf("%s: got %s, want %s", k.EventID, got, want)
		}
	}
}

// TestUnconfiguredTargetIsRefused: a plan calling a target the outbox has
// no configuration for is refused before it commits: the event ends dead
// with the reason, its fact not written, rather than applied with a call
// that fails every attempt until its row dies.
func TestUnconfiguredTargetIsRefused(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_refund", "charge.refunded", time.Unix(1764500000, 0), []byte(`{"id":"evt_refund","type":"charge.refunded"}`))
	refund := effects.Fact{Kind: "refund", Key: "ch_1"}
	routes := processor.Routes{"stripe": {"charge.refunded": func(context.Context, inbox.Event) (effects.Plan, error) {
		return effects.Plan{
			Facts:    []effects.Fact{refund},
			Outbound: []effects.Outbound{{Target: "refund_notice", Key: effects.KeyOf(refund.ID(), "refund_notice"), Body: []byte(`{}`), Of: refund.ID()}},
		}, nil
	}}}
	b.handle(t, b.processor(t, nil, routes), sqsMessage(t, "m1", k))
	ev := b.event(t, k)
	if ev.Status != inbox.StatusDead || !strings.Contains(ev.LastError, `target "refund_notice", which is not configured (configured: receipt)`) {
		t.Fatalf("got %s %q, want dead naming the target and the configured ones", ev.Status, ev.LastError)
	}
	if _, err := b.s.Part(context.Background(), effects.ScopedID(stripeScope, refund.ID())); err == nil {
		t.Error("the refund fact was written")
	}
}
