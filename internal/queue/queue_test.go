package queue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
)

// One moto serves the whole package; every test gets its own queue.
var (
	moto   awstest.Shared
	queues atomic.Int64
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

// mustQueue creates a fresh queue in the package's moto and returns it with
// the raw client, for inspecting the queue's counters.
func mustQueue(tb testing.TB) (*queue.Queue, *sqs.Client) {
	tb.Helper()
	client := sqs.NewFromConfig(mustMoto(tb).Config())
	name := fmt.Sprintf("inbox-%d", queues.Add(1))
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		tb.Fatalf("create queue %s: %v", name, err)
	}
	return queue.New(client, aws.ToString(out.QueueUrl)), client
}

// mustReceiveOne receives from q and fails unless exactly one message came.
func mustReceiveOne(tb testing.TB, q *queue.Queue) queue.Message {
	tb.Helper()
	msgs, err := q.Receive(context.Background(), 10, 30, 0)
	if err != nil {
		tb.Fatalf("receive: %v", err)
	}
	if len(msgs) != 1 {
		tb.Fatalf("received %d messages, want 1: %+v", len(msgs), msgs)
	}
	return msgs[0]
}

// count returns the visible and in-flight messages of the queue.
func count(tb testing.TB, client *sqs.Client, url string) (visible, inFlight int) {
	tb.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		tb.Fatalf("queue attributes: %v", err)
	}
	atoi := func(name types.QueueAttributeName) int {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			tb.Fatalf("attribute %s: %v", name, err)
		}
		return n
	}
	return atoi(types.QueueAttributeNameApproximateNumberOfMessages), atoi(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
}

func TestEnqueueReceive(t *testing.T) {
	q, _ := mustQueue(t)
	ctx := context.Background()
	keys := []inbox.Key{
		{Source: "stripe", Account: "acct_1", EventID: "evt_1"},
		{Source: "github", EventID: "delivery#with#hashes"},
	}
	for _, k := range keys {
		if err := q.Enqueue(ctx, k); err != nil {
			t.Fatalf("enqueue %s: %v", k, err)
		}
	}
	// SQS may return fewer messages than are there: receive a few times.
	var msgs []queue.Message
	for range 5 {
		batch, err := q.Receive(ctx, 10, 30, 0)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if msgs = append(msgs, batch...); len(msgs) >= len(keys) {
			break
		}
	}
	got := map[inbox.Key]bool{}
	for _, m := range msgs {
		if m.ID == "" || m.ReceiptHandle == "" {
			t.Errorf("message %+v: empty id or receipt handle", m)
		}
		dm, err := inbox.DecodeMessage(m.Body)
		if err != nil {
			t.Errorf("decode %q: %v", m.Body, err)
			continue
		}
		got[dm.Key] = true
	}
	if len(got) != len(keys) {
		t.Errorf("got keys %v, want %v", got, keys)
	}
	for _, k := range keys {
		if !got[k] {
			t.Errorf("key %s not received; got %v", k, got)
		}
	}
}

func TestEnqueueInvalidKey(t *testing.T) {
	q, client := mustQueue(t)
	err := q.Enqueue(context.Background(), inbox.Key{Source: "stripe"})
	if err == nil || errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("got %v, want a validation error", err)
	}
	if visible, inFlight := count(t, client, q.URL()); visible+inFlight != 0 {
		t.Errorf("got %d visible and %d in flight, want an empty queue", visible, inFlight)
	}
}

func TestSendPreservesBody(t *testing.T) {
	q, _ := mustQueue(t)
	ctx := context.Background()
	tests := []struct {
		name string
		body string
	}{
		{"message", `{"key":{"source":"stripe","event_id":"evt_1"}}`},
		{"spacing kept", "  {\"key\" :\n\t{\"source\":\"stripe\", \"event_id\":\"evt_1\"}}  "},
		{"not ours", "not json at all"},
		{"unicode", `{"note":"ünïcödé ✓ 🚀 \u00e9"}`},
		{"markup", `<xml attr="1">&amp;</xml>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := q.Send(ctx, tt.body); err != nil {
				t.Fatalf("send: %v", err)
			}
			m := mustReceiveOne(t, q)
			if m.Body != tt.body {
				t.Errorf("got %q, want %q", m.Body, tt.body)
			}
			if err := q.Delete(ctx, m.ReceiptHandle); err != nil {
				t.Fatalf("delete: %v", err)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	q, client := mustQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, inbox.Key{Source: "stripe", EventID: "evt_delete"}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	m := mustReceiveOne(t, q)
	if visible, inFlight := count(t, client, q.URL()); visible != 0 || inFlight != 1 {
		t.Fatalf("before delete: got %d visible and %d in flight, want 0 and 1", visible, inFlight)
	}
	if err := q.Delete(ctx, m.ReceiptHandle); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if visible, inFlight := count(t, client, q.URL()); visible != 0 || inFlight != 0 {
		t.Errorf("after delete: got %d visible and %d in flight, want 0 and 0", visible, inFlight)
	}
}

func TestRelease(t *testing.T) {
	q, _ := mustQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, inbox.Key{Source: "stripe", EventID: "evt_release"}); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	first := mustReceiveOne(t, q)
	// Hidden for 30 s: without Release nothing is receivable now.
	if msgs, err := q.Receive(ctx, 10, 30, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("receive while hidden: got %d messages, %v; want none", len(msgs), err)
	}
	if err := q.Release(ctx, first.ReceiptHandle); err != nil {
		t.Fatalf("release: %v", err)
	}
	again := mustReceiveOne(t, q)
	if again.ID != first.ID || again.Body != first.Body {
		t.Errorf("got %s %q, want %s %q", again.ID, again.Body, first.ID, first.Body)
	}
}

func TestReceiveEmpty(t *testing.T) {
	q, _ := mustQueue(t)
	msgs, err := q.Receive(context.Background(), 10, 30, 0)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(msgs) != 0 {
		t.Errorf("got %+v, want no messages", msgs)
	}
}

func TestUnavailable(t *testing.T) {
	port, err := awstest.FreePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	closed := &awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// One attempt per call: retrying a closed port only repeats the refusal.
	q := queue.New(sqs.NewFromConfig(closed.NoRetryConfig()), closed.Endpoint+"/123456789012/inbox")
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"enqueue", func(ctx context.Context) error { return q.Enqueue(ctx, inbox.Key{Source: "stripe", EventID: "evt_1"}) }},
		{"send", func(ctx context.Context) error { return q.Send(ctx, "body") }},
		{"receive", func(ctx context.Context) error { _, err := q.Receive(ctx, 10, 30, 0); return err }},
		{"delete", func(ctx context.Context) error { return q.Delete(ctx, "handle") }},
		{"release", func(ctx context.Context) error { return q.Release(ctx, "handle") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := tt.call(ctx); !errors.Is(err, inbox.ErrUnavailable) {
				t.Errorf("got %v, want inbox.ErrUnavailable", err)
			}
		})
	}
}
