package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/eventbus"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

var eventID = regexp.MustCompile(`"id": ?"evt_[A-Za-z0-9]+"`)

// withID is the sample Stripe event with another event id and type.
func withID(body []byte, id, typ string) []byte {
	b := eventID.ReplaceAll(body, []byte(`"id": "`+id+`"`))
	return []byte(strings.Replace(string(b), `"invoice.paid"`, `"`+typ+`"`, 1))
}

// forwardedKeys receives everything the local bus's example consumer got,
// by event key, waiting a little for stragglers.
func forwardedKeys(t *testing.T, e *env) map[string][]local.Forwarded {
	t.Helper()
	all, err := local.DrainForwarded(context.Background(), sqs.NewFromConfig(e.awsConfig), e.stack.ForwardedQueueURL)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]local.Forwarded{}
	for _, f := range all {
		got[f.EventKey()] = append(got[f.EventKey()], f)
	}
	return got
}

// discardMain deletes every message of the main queue unprocessed: their
// workers stopped after acknowledging them.
func (e *env) discardMain(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	q := sqs.NewFromConfig(e.awsConfig)
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.stack.Resources.QueueURL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.stack.Resources.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// commitStopped commits the stored event k with routes' forwarding rows,
// as a worker that then stopped before delivering them: the rows wait.
func (e *env) commitStopped(t *testing.T, k inbox.Key, routes forward.Routes) (inbox.Event, []effects.Outbound) {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	ev, err := e.store.Claim(ctx, k, "stopped-worker", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := forward.Outbound(ev, routes)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Complete(ctx, ev, "stopped-worker", effects.Plan{Outbound: rows}, inbox.OutcomeApplied, now); err != nil {
		t.Fatal(err)
	}
	return ev, rows
}

// TestForwardedExactlyOnce: a forwarded event reaches the bus's consumer
// once through the provider's retry, a redelivered message, a
// same-event duplicate, and a worker stopped after its commit (the sweep
// brings the event back and its row is put then); a type no route takes
// is not forwarded.
func TestForwardedExactlyOnce(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	if e.stack.ForwardedQueueURL == "" || e.stack.Env["FORWARD_BUS"] != local.ForwardBusName {
		t.Fatalf("local stack: forwarded queue %q, FORWARD_BUS %q; want the sources file's routes on", e.stack.ForwardedQueueURL, e.stack.Env["FORWARD_BUS"])
	}
	body, key, _, err := local.SampleStripe(repoRoot)
	if err != nil {
		t.Fatal(err)
	}

	// New, then the provider's retry of the same delivery.
	if status, resp := e.post(t, body, time.Now()); status != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", status, resp)
	}
	if status, resp := e.post(t, body, time.Now()); status != http.StatusOK {
		t.Fatalf("retry: %d %v, want a 200 duplicate", status, resp)
	}
	e.drain(t)
	// Its route retries unknowns (FORWARD's default): its entry was put
	// under the claim's lease, before the commit, which wrote its row
	// delivered (the receipt's row beside it was delivered after it).
	if got, err := e.store.Get(ctx, key, time.Now()); err != nil || got.Status != inbox.StatusProcessed || got.OutboxPending || len(got.OutboxRows) != 2 {
		t.Fatalf("event: %s, outbox pending %t, rows %v, %v; want processed, settled, two rows", got.Status, got.OutboxPending, got.OutboxRows, err)
	} else {
		for _, k := range got.OutboxRows {
			if row, err := e.store.Row(ctx, k); err != nil || row.State != outbox.Delivered || row.Attempts != 1 {
				t.Fatalf("row %s: %+v, %v; want delivered on its one attempt", k, row, err)
			}
		}
	}
	ahead := 0
	for line := range strings.SplitSeq(e.logs.String(), "\n") {
		var l struct {
			Msg    string `json:"msg"`
			Key    string `json:"event_key"`
			State  string `json:"state"`
			Before bool   `json:"before_commit"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "outbox row" && l.Key == key.String() && l.State == "delivered" && l.Before {
			ahead++
		}
	}
	if ahead != 1 {
		t.Errorf("%d rows of %s delivered before the commit, want 1", ahead, key)
	}
	// SQS delivers the message again.
	msg, err := inbox.EncodeMessage(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(e.awsConfig).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.stack.Resources.QueueURL), MessageBody: aws.String(msg)}); err != nil {
		t.Fatal(err)
	}
	e.drain(t)

	// A type the stripe route does not take.
	other := inbox.Key{Source: "stripe", EventID: "evt_not_forwarded"}
	if status, resp := e.post(t, withID(body, other.EventID, "customer.created"), time.Now()); status != http.StatusAccepted {
		t.Fatalf("customer.created: %d %v", status, resp)
	}
	e.drain(t)

	// A worker stops after its commit, before it delivers the outbox.
	stopped := inbox.Key{Source: "stripe", EventID: "evt_worker_stopped"}
	if status, resp := e.post(t, withID(body, stopped.EventID, "invoice.finalized"), time.Now()); status != http.StatusAccepted {
		t.Fatalf("invoice.finalized: %d %v", status, resp)
	}
	routes, err := forward.Parse(e.stack.Env["FORWARD"], e.stack.Sources(), e.stack.Env["FORWARD_BUS"])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, rows := e.commitStopped(t, stopped, routes.Match(stopped.Source, "invoice.finalized")); len(rows) != 1 {
		t.Fatalf("forwarding rows %v; want one", rows)
	}
	// Its message was acknowledged (its last receive): only the sweep
	// brings the event back.
	e.discardMain(t)
	sweeps, err := e.stack.Sweeper(e.stack.Replay.Handle, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.stack.Replay.Now = func() time.Time { return now.Add(time.Hour) }
	if sum := sweeps.Once(ctx); sum.Moved == 0 {
		t.Fatalf("sweep: %+v, want the event with its outbox pending moved", sum)
	}
	e.drain(t)
	if got, err := e.store.Get(ctx, stopped, time.Now()); err != nil || got.OutboxPending {
		t.Fatalf("stopped worker's event: outbox pending %t, %v; want settled", got.OutboxPending, err)
	}

	got := forwardedKeys(t, e)
	if len(got[key.String()]) != 1 || len(got[stopped.String()]) != 1 || len(got) != 2 {
		counts := map[string]int{}
		for k, v := range got {
			counts[k] = len(v)
		}
		t.Fatalf("forwarded: %v; want %s and %s once each, nothing else", counts, key, stopped)
	}
	f := got[key.String()][0]
	if f.Source != "webhook-inbox.stripe" || f.DetailType != "invoice.paid" {
		t.Errorf("forwarded envelope: %+v", f)
	}
	var detail map[string]any
	if err := json.Unmarshal(f.Detail, &detail); err != nil || detail["id"] != key.EventID || detail["type"] != "invoice.paid" {
		t.Errorf("forwarded detail: %.200s, %v; want the provider's event itself", f.Detail, err)
	}
}

// TestForwardedInBatches: forwarding entries go to moto's EventBridge
// several to a request, one bus a request, and each reaches the consumer
// once.
//
//   - An event forwarded to two buses (the local bus and the default
//     one, with no rule) is put in two requests, one a bus: both rows
//     delivered, the local bus's consumer gets it once.
//   - Eight events in one SQS batch: each reaches the consumer once,
//     however the processor's records happened to gather (the sizes of
//     the requests are logged).
func TestForwardedInBatches(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	body, _, _, err := local.SampleStripe(repoRoot)
	if err != nil {
		t.Fatal(err)
	}

	// One event, two buses, committed by a worker that stopped before
	// delivering; this deliverer delivers its rows.
	two := inbox.Key{Source: "stripe", EventID: "evt_two_buses"}
	if status, resp := e.post(t, withID(body, two.EventID, "invoice.voided"), time.Now()); status != http.StatusAccepted {
		t.Fatalf("invoice.voided: %d %v", status, resp)
	}
	e.discardMain(t)
	routes := forward.Routes{{Source: "stripe", Bus: local.ForwardBusName}, {Source: "stripe", Bus: forward.DefaultBus}}
	ev, rows := e.commitStopped(t, two, routes)
	targets := map[string]outbox.Target{}
	var keys []string
	for i, r := range routes {
		targets[forward.TargetOf(r)] = outbox.Target{Timeout: 10 * time.Second}
		keys = append(keys, effects.ScopedKey(ev.PartScope(), rows[i].Key))
	}
	bus := &countingBus{Bus: eventbus.New(eventbridge.NewFromConfig(e.awsConfig))}
	d, err := outbox.New(outbox.Config{
		Store: e.store, Targets: targets, Events: e.store,
		Bus: bus, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Deliver(ctx, ctx, two, ev.OutboxGen, keys, "deliverer")
	if err != nil || !st.Settled || st.States[outbox.Delivered] != 2 {
		t.Fatalf("delivery: %+v, %v; want both rows delivered", st, err)
	}
	if got := bus.requests.Load(); got != 2 {
		t.Errorf("%d PutEvents requests for an event's rows to two buses, want 2", got)
	}
	if got := forwardedKeys(t, e); len(got[two.String()]) != 1 || len(got) != 1 {
		t.Errorf("forwarded %v, want %s once", got, two)
	}

	// Eight events, one SQS batch.
	var want []string
	for i := range 8 {
		id := fmt.Sprintf("evt_batch_%d", i)
		if status, resp := e.post(t, withID(body, id, "invoice.paid"), time.Now()); status != http.StatusAccepted {
			t.Fatalf("%s: %d %v", id, status, resp)
		}
		want = append(want, inbox.Key{Source: "stripe", EventID: id}.String())
	}
	e.drain(t)
	got := forwardedKeys(t, e)
	for _, k := range want {
		if len(got[k]) != 1 {
			t.Errorf("%s forwarded %d times, want once", k, len(got[k]))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d events forwarded, want %d", len(got), len(want))
	}
	sizes := map[float64]int{}
	for line := range strings.SplitSeq(e.logs.String(), "\n") {
		var l struct {
			Msg     string  `json:"msg"`
			Entries float64 `json:"put_entries"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "outbox row" && l.Entries > 0 {
			sizes[l.Entries]++
		}
	}
	t.Logf("forwarding rows by the size of the request that carried them: %v", sizes)
}

// countingBus counts the PutEvents requests made through Bus.
type countingBus struct {
	outbox.Bus
	requests atomic.Int64
}

func (c *countingBus) PutEntries(ctx context.Context, entries []outbox.BusEntry) ([]outbox.BusOutcome, error) {
	c.requests.Add(1)
	return c.Bus.PutEntries(ctx, entries)
}
