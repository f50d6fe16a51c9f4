package processor_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// measuredExamples is the shipped examples' processor over a fresh
// dynoxide table whose client counts the capacity it consumes, delivering
// receipts to receiverURL.
func measuredExamples(tb testing.TB, receiverURL string) (*inboxstore.Store, *processor.Processor, *awstest.Capacity) {
	tb.Helper()
	srv := awstest.StartDynoxide(tb)
	cc := &awstest.Capacity{}
	cfg := srv.Config()
	cfg.APIOptions = append(cfg.APIOptions, cc.Middleware)
	mustTable(tb, dynamodb.NewFromConfig(srv.Config()), "inbox")
	store := inboxstore.New(dynamodb.NewFromConfig(cfg), "inbox", time.Hour)
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := outbox.New(outbox.Config{Store: store, Targets: map[string]outbox.Target{handlers.ReceiptTarget: {URL: receiverURL}}, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := processor.New(processor.Config{
		Store: store, Outbox: d, DeadLetters: nopDLQ{}, Visibility: nopVisibility{}, Routes: handlers.Routes(nil),
		MaxReceiveCount: 10, Logger: log,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return store, p, cc
}

// BenchmarkExamplePaths runs each shipped example's paths, one event at a
// time, against dynoxide, and reports the DynamoDB capacity each event
// consumes from ingest to settled (the insert, the claim, the commit, the
// outbox's claims, records and settlement) as DynamoDB reports it with
// ReturnConsumedCapacity, and, for a receipt, the time from the commit's
// answer to the receiver having it. `make bench-units` prints them.
func BenchmarkExamplePaths(b *testing.B) {
	var mu sync.Mutex
	var received time.Time
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		received = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	store, p, cc := measuredExamples(b, receiver.URL)

	created := time.Unix(1764500000, 0)
	paths := []struct {
		name, kind, typ string
		// payload is the event's body for iteration i; setup, if any,
		// runs (uncounted) before it.
		payload func(i int) []byte
		setup   func(b *testing.B, i int)
		created func(i int) time.Time
		receipt bool
	}{
		{name: "stripe_invoice_paid_new", kind: "stripe", typ: "invoice.paid", receipt: true,
			payload: func(i int) []byte {
				return invoiceEvent(fmt.Sprintf("evt_new_%d", i), "invoice.paid", fmt.Sprintf("in_new_%d", i), periodEnd+int64(i))
			}},
		{name: "stripe_invoice_payment_succeeded_duplicate", kind: "stripe", typ: "invoice.payment_succeeded",
			setup: func(b *testing.B, i int) {
				run(b, p, store, "stripe", "invoice.paid", fmt.Sprintf("evt_first_%d", i), created,
					invoiceEvent(fmt.Sprintf("evt_first_%d", i), "invoice.paid", fmt.Sprintf("in_dup_%d", i), periodEnd))
			},
			payload: func(i int) []byte {
				return invoiceEvent(fmt.Sprintf("evt_dup_%d", i), "invoice.payment_succeeded", fmt.Sprintf("in_dup_%d", i), periodEnd)
			}},
		{name: "stripe_subscription_updated", kind: "stripe", typ: "customer.subscription.updated",
			payload: func(i int) []byte {
				return subscriptionEvent(fmt.Sprintf("evt_sub_%d", i), "customer.subscription.updated", "active", created.Unix()+int64(i))
			},
			created: func(i int) time.Time { return created.Add(time.Duration(i) * time.Second) }},
		{name: "stripe_subscription_stale", kind: "stripe", typ: "customer.subscription.updated",
			setup: func(b *testing.B, i int) {
				run(b, p, store, "stripe", "customer.subscription.deleted", fmt.Sprintf("evt_del_%d", i), created.Add(time.Hour*24*365),
					subscriptionEvent(fmt.Sprintf("evt_del_%d", i), "customer.subscription.deleted", "canceled", created.Unix()+86400*365))
			},
			payload: func(i int) []byte {
				return subscriptionEvent(fmt.Sprintf("evt_stale_%d", i), "customer.subscription.updated", "active", created.Unix())
			}},
		{name: "github_push_2_commits", kind: "github", typ: "push",
			payload: func(i int) []byte {
				return pushEvent("", fmt.Sprintf("%040x", 2*i+2), created.Unix()+int64(i), fmt.Sprintf("%040x", 2*i+1), fmt.Sprintf("%040x", 2*i+2))
			}},
		{name: "ignored_type", kind: "stripe", typ: "customer.created",
			payload: func(i int) []byte {
				return fmt.Appendf(nil, `{"id":"evt_ign_%d","object":"event","type":"customer.created"}`, i)
			}},
	}
	for _, path := range paths {
		b.Run(path.name, func(b *testing.B) {
			var write, read, latency float64
			n := 0
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if path.setup != nil {
					path.setup(b, i)
				}
				at := created
				if path.created != nil {
					at = path.created(i)
				}
				cc.Reset()
				b.StartTimer()
				k := ingestAndProcess(b, p, store, path.kind, path.typ, fmt.Sprintf("evt_%s_%d", path.name, i), at, path.payload(i))
				b.StopTimer()
				u := cc.Units()
				write += u.Write
				read += u.Read
				committed := u.Transacted
				mustSettled(b, store, k)
				if path.receipt {
					mu.Lock()
					latency += float64(received.Sub(committed).Microseconds()) / 1000
					mu.Unlock()
				}
				n++
				b.StartTimer()
			}
			b.ReportMetric(write/float64(n), "WCU/event")
			b.ReportMetric(read/float64(n), "RCU/event")
			if path.receipt {
				b.ReportMetric(latency/float64(n), "ms-commit-to-receipt")
			}
		})
	}
}

// run ingests and processes one event, and checks it settled.
func run(tb testing.TB, p *processor.Processor, s *inboxstore.Store, kind, typ, id string, created time.Time, payload []byte) {
	tb.Helper()
	mustSettled(tb, s, ingestAndProcess(tb, p, s, kind, typ, id, created, payload))
}

// ingestAndProcess stores one event as ingest does and processes its
// message.
func ingestAndProcess(tb testing.TB, p *processor.Processor, s *inboxstore.Store, kind, typ, id string, created time.Time, payload []byte) inbox.Key {
	tb.Helper()
	k := inbox.Key{Source: kind, EventID: id}
	now := time.Now()
	if _, err := s.Insert(context.Background(), inbox.Event{
		Key: k, Kind: kind, Type: typ, Created: created, Payload: payload,
		Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}, now); err != nil {
		tb.Fatal(err)
	}
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsMessage(tb, "m_"+id, k)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		tb.Fatalf("%s: got %v, %v", id, resp.BatchItemFailures, err)
	}
	return k
}

func mustSettled(tb testing.TB, s *inboxstore.Store, k inbox.Key) {
	tb.Helper()
	if ev, err := s.Get(context.Background(), k, time.Now()); err != nil || ev.Status != inbox.StatusProcessed || ev.OutboxPending {
		tb.Fatalf("%s: got %+v, %v; want processed and settled", k, ev, err)
	}
}
