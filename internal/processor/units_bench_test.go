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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/examples"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// capacity asks DynamoDB for the capacity of every write and read the
// client makes (ReturnConsumedCapacity TOTAL) and adds it up, with the
// time the last transaction returned.
type capacity struct {
	mu          sync.Mutex
	write, read float64
	committed   time.Time
}

func (c *capacity) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.write, c.read = 0, 0
}

func (c *capacity) add(cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range cc {
		switch {
		case u.WriteCapacityUnits != nil || u.ReadCapacityUnits != nil:
			if u.WriteCapacityUnits != nil {
				c.write += *u.WriteCapacityUnits
			}
			if u.ReadCapacityUnits != nil {
				c.read += *u.ReadCapacityUnits
			}
		case u.CapacityUnits != nil:
			c.write += *u.CapacityUnits
		}
	}
}

func (c *capacity) middleware(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("capacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			reads := false
			switch p := in.Parameters.(type) {
			case *dynamodb.PutItemInput:
				p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
			case *dynamodb.UpdateItemInput:
				p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
			case *dynamodb.TransactWriteItemsInput:
				p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
			case *dynamodb.GetItemInput:
				p.ReturnConsumedCapacity, reads = types.ReturnConsumedCapacityTotal, true
			}
			out, md, err := next.HandleInitialize(ctx, in)
			switch r := out.Result.(type) {
			case *dynamodb.PutItemOutput:
				if r.ConsumedCapacity != nil {
					c.add(*r.ConsumedCapacity)
				}
			case *dynamodb.UpdateItemOutput:
				if r.ConsumedCapacity != nil {
					c.add(*r.ConsumedCapacity)
				}
			case *dynamodb.TransactWriteItemsOutput:
				c.add(r.ConsumedCapacity...)
				c.mu.Lock()
				c.committed = time.Now()
				c.mu.Unlock()
			case *dynamodb.GetItemOutput:
				if r.ConsumedCapacity != nil && reads {
					cc := *r.ConsumedCapacity
					if cc.ReadCapacityUnits == nil {
						cc.ReadCapacityUnits, cc.CapacityUnits = cc.CapacityUnits, nil
					}
					c.add(cc)
				}
			}
			return out, md, err
		}), middleware.After)
}

// BenchmarkExamplePaths runs each shipped example's paths, one event at a
// time, against dynoxide, and reports the DynamoDB capacity each event
// consumes from ingest to settled (the insert, the claim, the commit, the
// outbox's claims, records and settlement) as DynamoDB reports it with
// ReturnConsumedCapacity, and, for a receipt, the time from the commit's
// answer to the receiver having it. `make bench-units` prints them.
func BenchmarkExamplePaths(b *testing.B) {
	srv := awstest.StartDynoxide(b)
	cc := &capacity{}
	cfg := srv.Config()
	cfg.APIOptions = append(cfg.APIOptions, cc.middleware)
	plain := dynamodb.NewFromConfig(srv.Config())
	mustTable(b, plain, "inbox")
	store := inboxstore.New(dynamodb.NewFromConfig(cfg), "inbox", time.Hour)

	var mu sync.Mutex
	var received time.Time
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		received = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := outbox.New(outbox.Config{Store: store, Targets: map[string]outbox.Target{examples.ReceiptTarget: {URL: receiver.URL}}, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	p, err := processor.New(processor.Config{
		Store: store, Outbox: d, DeadLetters: nopDLQ{}, Visibility: nopVisibility{}, Routes: examples.Routes(),
		MaxReceiveCount: 10, Logger: log,
	})
	if err != nil {
		b.Fatal(err)
	}

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
				cc.reset()
				b.StartTimer()
				k := ingestAndProcess(b, p, store, path.kind, path.typ, fmt.Sprintf("evt_%s_%d", path.name, i), at, path.payload(i))
				b.StopTimer()
				cc.mu.Lock()
				write += cc.write
				read += cc.read
				committed := cc.committed
				cc.mu.Unlock()
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
