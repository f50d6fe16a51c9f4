package local

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
)

// Integration tests: the poller against moto's SQS over the wire.

const (
	visibilityTimeout = 1 // seconds, so failed messages return quickly
	maxReceiveCount   = 2
	// waitBound bounds every "eventually" loop; it is never a timing
	// assertion, only a guard against hanging.
	waitBound = 30 * time.Second
)

var queueSeq atomic.Int64

type testQueue struct {
	client *sqs.Client
	url    string
	arn    string
	dlqURL string
}

// mustQueues creates a main queue with a short visibility timeout and a DLQ
// it redrives to after maxReceiveCount receives.
func mustQueues(tb testing.TB, client *sqs.Client) testQueue {
	tb.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("q%d", queueSeq.Add(1))
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		tb.Fatalf("create dlq: %v", err)
	}
	dlqARN := mustQueueARN(tb, client, *dlq.QueueUrl)
	redrive, err := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(maxReceiveCount)})
	if err != nil {
		tb.Fatal(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(visibilityTimeout),
			string(types.QueueAttributeNameRedrivePolicy):     string(redrive),
		},
	})
	if err != nil {
		tb.Fatalf("create queue: %v", err)
	}
	return testQueue{client: client, url: *q.QueueUrl, arn: mustQueueARN(tb, client, *q.QueueUrl), dlqURL: *dlq.QueueUrl}
}

func mustQueueARN(tb testing.TB, client *sqs.Client, url string) string {
	tb.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		tb.Fatalf("queue arn: %v", err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// mustSend sends bodies and returns their message ids in order.
func (q testQueue) mustSend(tb testing.TB, bodies ...string) []string {
	tb.Helper()
	ins := make([]*sqs.SendMessageInput, len(bodies))
	for i, b := range bodies {
		ins[i] = &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(b)}
	}
	ids := make([]string, len(bodies))
	for i, out := range q.mustSendAll(tb, ins...) {
		ids[i] = aws.ToString(out.MessageId)
	}
	return ids
}

// mustSendAll sends messages to a queue nothing reads yet, each exactly
// once, and returns SQS's answers in order. SendMessage is not idempotent:
// a retried call whose failed attempt had landed puts the message twice,
// and a test counting messages then sees one it never sent. So each call
// makes one attempt, and after a failure the queue is purged and every
// message sent again.
func (q testQueue) mustSendAll(tb testing.TB, ins ...*sqs.SendMessageInput) []*sqs.SendMessageOutput {
	tb.Helper()
	ctx := context.Background()
	oneAttempt := func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} }
	const tries = 3
	var err error
	for range tries {
		outs := make([]*sqs.SendMessageOutput, len(ins))
		for i, in := range ins {
			if outs[i], err = q.client.SendMessage(ctx, in, oneAttempt); err != nil {
				break
			}
		}
		if err == nil {
			return outs
		}
		tb.Logf("send: %v; purging the queue and sending all %d messages again", err, len(ins))
		if _, perr := q.client.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(q.url)}); perr != nil {
			tb.Fatalf("purge after a failed send: %v", perr)
		}
		if n := mustCount(tb, q.client, q.url); n != 0 {
			tb.Fatalf("messages after purge = %d, want 0", n)
		}
	}
	tb.Fatalf("send: %v (%d tries)", err, tries)
	return nil
}

// loseFirstAnswer delivers every request, but reports its first call of
// op (".SendMessage", ".ReceiveMessage") as failed after the server took
// it, as a connection reset after the request was written does.
type loseFirstAnswer struct {
	next aws.HTTPClient
	op   string
	lost atomic.Bool
}

func (l *loseFirstAnswer) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.next.Do(req)
	if err != nil || !strings.HasSuffix(req.Header.Get("X-Amz-Target"), l.op) || l.lost.Swap(true) {
		return resp, err
	}
	resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// mustCount returns visible + in-flight messages of a queue.
func mustCount(tb testing.TB, client *sqs.Client, url string) int {
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
	n := 0
	for _, v := range out.Attributes {
		i, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("queue attribute %q: %v", v, err)
		}
		n += i
	}
	return n
}

// recorder is a ProcessorFunc that records batches and answers with decide.
type recorder struct {
	mu      sync.Mutex
	batches []events.SQSEvent
	decide  func(events.SQSEvent) (events.SQSEventResponse, error)
}

func (r *recorder) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); !ok || lc.AwsRequestID == "" {
		return events.SQSEventResponse{}, errors.New("no lambdacontext request id")
	}
	r.mu.Lock()
	r.batches = append(r.batches, ev)
	r.mu.Unlock()
	if r.decide == nil {
		return events.SQSEventResponse{}, nil
	}
	return r.decide(ev)
}

// records returns every record handled so far, in order.
func (r *recorder) records() []events.SQSMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.SQSMessage
	for _, b := range r.batches {
		out = append(out, b.Records...)
	}
	return out
}

// pollUntil calls PollOnce until done reports true or waitBound passes.
func pollUntil(tb testing.TB, p *Poller, what string, done func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitBound)
	for !done() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		if _, err := p.PollOnce(context.Background()); err != nil {
			tb.Fatalf("PollOnce: %v", err)
		}
	}
}

func failIDs(ids ...string) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, id := range ids {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return resp
}

func newTestPoller(q testQueue, h ProcessorFunc) *Poller {
	return &Poller{
		SQS:       q.client,
		QueueURL:  q.url,
		QueueARN:  q.arn,
		Region:    awstest.Region,
		BatchSize: 10,
		WaitTime:  time.Second,
		Handler:   h,
	}
}

func TestPollerAgainstMoto(t *testing.T) {
	srv := awstest.Start(t)
	client := sqs.NewFromConfig(srv.Config())

	t.Run("a send whose answer was lost is not counted twice", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		cfg := srv.Config()
		cfg.HTTPClient = &loseFirstAnswer{next: &http.Client{}, op: ".SendMessage"}
		q.client = sqs.NewFromConfig(cfg)
		ids := q.mustSend(t, "a", "b")
		if n := mustCount(t, client, q.url); n != 2 {
			t.Errorf("messages = %d, want 2 (%v)", n, ids)
		}
	})

	t.Run("partial failure deletes the rest and the failed one returns", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		ids := q.mustSend(t, "ok-1", "fail", "ok-2")
		failing := ids[1]
		rec := &recorder{decide: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				if r.Body == "fail" && r.Attributes["ApproximateReceiveCount"] == "1" {
					return failIDs(r.MessageId), nil
				}
			}
			return events.SQSEventResponse{}, nil
		}}
		p := newTestPoller(q, rec.handle)

		pollUntil(t, p, "all three messages", func() bool { return len(rec.records()) >= 3 })
		if got := mustCount(t, client, q.url); got != 1 {
			t.Errorf("messages left after the first batch = %d, want 1 (the failed one)", got)
		}
		pollUntil(t, p, "the failed message to return", func() bool { return len(rec.records()) >= 4 })

		got := rec.records()
		if len(got) != 4 {
			t.Fatalf("handled %d records, want 4", len(got))
		}
		back := got[3]
		if back.MessageId != failing || back.Attributes["ApproximateReceiveCount"] != "2" {
			t.Errorf("returned message = %s with receive count %s, want %s with 2", back.MessageId, back.Attributes["ApproximateReceiveCount"], failing)
		}
		if n := mustCount(t, client, q.url); n != 0 {
			t.Errorf("messages left = %d, want 0", n)
		}
		if n := mustCount(t, client, q.dlqURL); n != 0 {
			t.Errorf("dead letters = %d, want 0", n)
		}
	})

	wholeBatch := []struct {
		name   string
		decide func(events.SQSEvent) (events.SQSEventResponse, error)
	}{
		{"handler error", func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("store unavailable")
		}},
		{"handler panic", func(events.SQSEvent) (events.SQSEventResponse, error) { panic("boom") }},
		{"empty item identifier", func(ev events.SQSEvent) (events.SQSEventResponse, error) { return failIDs(""), nil }},
		{"unknown item identifier", func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			return failIDs("not-in-this-batch"), nil
		}},
	}
	for _, tt := range wholeBatch {
		t.Run(tt.name+" returns the whole batch", func(t *testing.T) {
			t.Parallel()
			q := mustQueues(t, client)
			ids := q.mustSend(t, "a", "b")
			rec := &recorder{decide: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
				if ev.Records[0].Attributes["ApproximateReceiveCount"] == "1" {
					return tt.decide(ev)
				}
				return events.SQSEventResponse{}, nil
			}}
			p := newTestPoller(q, rec.handle)

			pollUntil(t, p, "both messages", func() bool { return len(rec.records()) >= 2 })
			if got := mustCount(t, client, q.url); got != 2 {
				t.Errorf("messages left after the failed batch = %d, want 2", got)
			}
			pollUntil(t, p, "both messages to return", func() bool { return len(rec.records()) >= 4 })
			var again []string
			for _, r := range rec.records()[2:] {
				if r.Attributes["ApproximateReceiveCount"] != "2" {
					t.Errorf("message %s receive count = %s, want 2", r.MessageId, r.Attributes["ApproximateReceiveCount"])
				}
				again = append(again, r.MessageId)
			}
			slices.Sort(again)
			slices.Sort(ids)
			if !slices.Equal(again, ids) {
				t.Errorf("returned messages = %v, want %v", again, ids)
			}
			if n := mustCount(t, client, q.url); n != 0 {
				t.Errorf("messages left = %d, want 0", n)
			}
		})
	}

	t.Run("moves to the DLQ after maxReceiveCount failures", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		id := q.mustSend(t, "poison")[0]
		rec := &recorder{decide: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			return failIDs(ev.Records[0].MessageId), nil
		}}
		p := newTestPoller(q, rec.handle)

		pollUntil(t, p, "the message to reach the DLQ", func() bool { return mustCount(t, client, q.dlqURL) == 1 })
		var counts []string
		for _, r := range rec.records() {
			counts = append(counts, r.Attributes["ApproximateReceiveCount"])
		}
		if want := []string{"1", "2"}; !slices.Equal(counts, want) {
			t.Errorf("receive counts seen by the handler = %v, want %v", counts, want)
		}
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.dlqURL), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive from dlq: %v", err)
		}
		if len(out.Messages) != 1 || aws.ToString(out.Messages[0].MessageId) != id {
			t.Errorf("dlq messages = %d, want message %s", len(out.Messages), id)
		}
		if n := mustCount(t, client, q.url); n != 0 {
			t.Errorf("messages left in the main queue = %d, want 0", n)
		}
	})

	t.Run("records look like Lambda's", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		sent := q.mustSendAll(t, &sqs.SendMessageInput{
			QueueUrl:    aws.String(q.url),
			MessageBody: aws.String(`{"event_key":"stripe#-#evt_1"}`),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"source":  {DataType: aws.String("String"), StringValue: aws.String("stripe")},
				"attempt": {DataType: aws.String("Number"), StringValue: aws.String("3")},
				"blob":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
			},
		})[0]
		rec := &recorder{}
		p := newTestPoller(q, rec.handle)
		pollUntil(t, p, "the message", func() bool { return len(rec.records()) >= 1 })

		r := rec.records()[0]
		sum := md5.Sum([]byte(r.Body))
		checks := []struct {
			field, got, want string
		}{
			{"messageId", r.MessageId, *sent.MessageId},
			{"body", r.Body, `{"event_key":"stripe#-#evt_1"}`},
			{"md5OfBody", r.Md5OfBody, hex.EncodeToString(sum[:])},
			{"md5OfMessageAttributes", r.Md5OfMessageAttributes, aws.ToString(sent.MD5OfMessageAttributes)},
			{"eventSource", r.EventSource, "aws:sqs"},
			{"eventSourceARN", r.EventSourceARN, q.arn},
			{"awsRegion", r.AWSRegion, awstest.Region},
			{"ApproximateReceiveCount", r.Attributes["ApproximateReceiveCount"], "1"},
			{"source attribute", aws.ToString(r.MessageAttributes["source"].StringValue), "stripe"},
			{"source data type", r.MessageAttributes["source"].DataType, "String"},
			{"attempt attribute", aws.ToString(r.MessageAttributes["attempt"].StringValue), "3"},
			{"attempt data type", r.MessageAttributes["attempt"].DataType, "Number"},
			{"blob attribute", string(r.MessageAttributes["blob"].BinaryValue), "\x00\x01\x02"},
			{"blob data type", r.MessageAttributes["blob"].DataType, "Binary"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
			}
		}
		if !strings.HasPrefix(q.arn, "arn:aws:sqs:") {
			t.Errorf("queue arn = %q, want an SQS arn", q.arn)
		}
		if r.ReceiptHandle == "" {
			t.Error("receiptHandle is empty")
		}
		want := []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"}
		if srv.Kind == awstest.Moto {
			// SQS sets SenderId and so does moto; kumo sets none (a flaw of
			// the emulator's, docs/local-aws.md), and nothing here reads it.
			want = append(want, "SenderId")
		}
		for _, name := range want {
			if r.Attributes[name] == "" {
				t.Errorf("attributes[%s] is missing; got %v", name, r.Attributes)
			}
		}
		if a := r.MessageAttributes["source"]; a.StringListValues == nil || a.BinaryListValues == nil {
			t.Errorf("list values = %v, %v, want empty lists as Lambda sends", a.StringListValues, a.BinaryListValues)
		}
	})

	t.Run("a handler slower than Timeout leaves its batch and the poller goes on", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		q.mustSend(t, "a", "b")
		release := make(chan struct{})
		late := make(chan error, 2)
		rec := &recorder{decide: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			if ev.Records[0].Attributes["ApproximateReceiveCount"] != "1" {
				return events.SQSEventResponse{}, nil
			}
			<-release // ignores its deadline, as a stuck handler would
			late <- nil
			return events.SQSEventResponse{}, nil // success, but too late to count
		}}
		var logs syncBuffer
		p := newTestPoller(q, rec.handle)
		p.Timeout = 200 * time.Millisecond
		p.Logger = slog.New(slog.NewJSONHandler(&logs, nil))

		pollUntil(t, p, "both messages", func() bool { return len(rec.records()) >= 2 })
		if got := mustCount(t, client, q.url); got != 2 {
			t.Errorf("messages left after the timed-out batch = %d, want 2", got)
		}
		if !strings.Contains(logs.String(), "invocation timed out after 200ms") {
			t.Errorf("log = %s, want the batch logged as timed out", logs.String())
		}
		rec.mu.Lock()
		slow := len(rec.batches) // each first delivery's batch is still running
		rec.mu.Unlock()
		close(release)
		for range slow {
			<-late
		}
		if got := mustCount(t, client, q.url); got != 2 {
			t.Errorf("messages left after the late handler returned = %d, want 2 (its result ignored)", got)
		}
		pollUntil(t, p, "both messages to return", func() bool { return len(rec.records()) >= 4 })
		for _, r := range rec.records()[2:] {
			if r.Attributes["ApproximateReceiveCount"] != "2" {
				t.Errorf("message %s receive count = %s, want 2", r.MessageId, r.Attributes["ApproximateReceiveCount"])
			}
		}
		if n := mustCount(t, client, q.url); n != 0 {
			t.Errorf("messages left = %d, want 0", n)
		}
	})

	t.Run("gathers a batch over several receives up to BatchSize", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		bodies := make([]string, 25)
		for i := range bodies {
			bodies[i] = "m" + strconv.Itoa(i)
		}
		ids := q.mustSend(t, bodies...)
		rec := &recorder{}
		p := newTestPoller(q, rec.handle)
		p.BatchSize = 25
		// Long enough never to pass here: the batch fills first.
		p.BatchingWindow = 20 * time.Second

		pollUntil(t, p, "a batch", func() bool { return len(rec.records()) > 0 })
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.batches) != 1 {
			t.Fatalf("batches = %d, want 1", len(rec.batches))
		}
		var got []string
		for _, r := range rec.batches[0].Records {
			got = append(got, r.MessageId)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Errorf("batch = %d messages %v, want the 25 sent %v", len(got), got, ids)
		}
		if n := mustCount(t, client, q.url); n != 0 {
			t.Errorf("messages left = %d, want 0", n)
		}
	})

	t.Run("Run handles messages until cancelled", func(t *testing.T) {
		t.Parallel()
		q := mustQueues(t, client)
		q.mustSend(t, "x")
		got := make(chan string, 1)
		p := newTestPoller(q, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				select {
				case got <- r.Body:
				default:
				}
			}
			return events.SQSEventResponse{}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		select {
		case body := <-got:
			if body != "x" {
				t.Errorf("body = %q, want x", body)
			}
		case <-time.After(waitBound):
			t.Fatal("Run handled nothing")
		}
		stopRun(t, cancel, done)
	})
}

// stopRun cancels a running Poller.Run and checks it returns nil in time.
func stopRun(tb testing.TB, cancel context.CancelFunc, done <-chan error) {
	tb.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			tb.Errorf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(waitBound):
		tb.Fatal("Run did not return after cancel")
	}
}

// Unit tests with a fake SQS client: nothing running.

type fakeSQS struct {
	mu       sync.Mutex
	receive  func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error)
	deleted  []string // receipt handles
	received []*sqs.ReceiveMessageInput
	// deleteCalls is the number of entries of each DeleteMessageBatch;
	// failDelete, if set, fails the call of that index (from 0).
	deleteCalls []int
	failDelete  func(call int) error
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.received = append(f.received, in)
	f.mu.Unlock()
	return f.receive(ctx, in)
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.deleteCalls)
	f.deleteCalls = append(f.deleteCalls, len(in.Entries))
	// SQS's limits: 1 to 10 entries a call.
	if len(in.Entries) > 10 {
		return nil, &types.TooManyEntriesInBatchRequest{Message: aws.String("Maximum number of entries per request are 10")}
	}
	if len(in.Entries) == 0 {
		return nil, &types.EmptyBatchRequest{Message: aws.String("no entries")}
	}
	if f.failDelete != nil {
		if err := f.failDelete(call); err != nil {
			return nil, err
		}
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		f.deleted = append(f.deleted, *e.ReceiptHandle)
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func fakeMessages(ids ...string) []types.Message {
	msgs := make([]types.Message, len(ids))
	for i, id := range ids {
		msgs[i] = types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Body: aws.String("body-" + id)}
	}
	return msgs
}

func TestPollOnceDeletions(t *testing.T) {
	tests := []struct {
		name        string
		resp        events.SQSEventResponse
		err         error
		wantDeleted []string
	}{
		{"all succeed", events.SQSEventResponse{}, nil, []string{"rh-m1", "rh-m2", "rh-m3"}},
		{"one fails", failIDs("m2"), nil, []string{"rh-m1", "rh-m3"}},
		{"duplicate failure entries", failIDs("m2", "m2"), nil, []string{"rh-m1", "rh-m3"}},
		{"all fail", failIDs("m1", "m2", "m3"), nil, nil},
		{"handler error", events.SQSEventResponse{}, errors.New("boom"), nil},
		{"empty identifier", failIDs("m1", ""), nil, nil},
		{"identifier not in batch", failIDs("m9"), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSQS{receive: func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
				return &sqs.ReceiveMessageOutput{Messages: fakeMessages("m1", "m2", "m3")}, nil
			}}
			p := &Poller{SQS: f, QueueURL: "http://q", QueueARN: "arn:aws:sqs:us-east-1:000000000000:q", Region: "us-east-1",
				Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) { return tt.resp, tt.err }}
			n, err := p.PollOnce(context.Background())
			if err != nil || n != 3 {
				t.Fatalf("PollOnce = %d, %v, want 3, nil", n, err)
			}
			if !slices.Equal(f.deleted, tt.wantDeleted) {
				t.Errorf("deleted = %v, want %v", f.deleted, tt.wantDeleted)
			}
		})
	}
}

// A batch of more than 10 records is deleted in calls of at most 10, as
// SQS requires (moto took any number); a failed call leaves its records
// on the queue and the others are still deleted.
func TestPollOnceDeletesInTens(t *testing.T) {
	ids := make([]string, 25)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	for _, tt := range []struct {
		name        string
		failCall    int // -1: none
		wantDeleted int
	}{
		{"all deleted", -1, 25},
		{"the second call fails", 1, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSQS{receive: func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
				return &sqs.ReceiveMessageOutput{Messages: fakeMessages(ids...)}, nil
			}}
			f.failDelete = func(call int) error {
				if call == tt.failCall {
					return errors.New("connection reset")
				}
				return nil
			}
			p := &Poller{SQS: f, QueueURL: "http://q", QueueARN: "arn:aws:sqs:us-east-1:000000000000:q", Region: "us-east-1",
				Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
					return events.SQSEventResponse{}, nil
				}}
			n, err := p.PollOnce(context.Background())
			if n != 25 {
				t.Fatalf("PollOnce received %d, want 25", n)
			}
			if gotErr := err != nil; gotErr != (tt.failCall >= 0) {
				t.Errorf("PollOnce error = %v, want an error %t", err, tt.failCall >= 0)
			}
			if !slices.Equal(f.deleteCalls, []int{10, 10, 5}) {
				t.Errorf("DeleteMessageBatch entries per call = %v, want [10 10 5]", f.deleteCalls)
			}
			if len(f.deleted) != tt.wantDeleted {
				t.Errorf("deleted %d, want %d", len(f.deleted), tt.wantDeleted)
			}
		})
	}
}

func TestPollOnceReceiveInput(t *testing.T) {
	f := &fakeSQS{receive: func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
		return &sqs.ReceiveMessageOutput{}, nil
	}}
	p := &Poller{SQS: f, QueueURL: "http://q", BatchSize: 5, WaitTime: 1500 * time.Millisecond,
		Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, nil
		}}
	if _, err := p.PollOnce(context.Background()); err != nil {
		t.Fatalf("PollOnce: %v", err)
	}
	in := f.received[0]
	if aws.ToString(in.QueueUrl) != "http://q" || in.MaxNumberOfMessages != 5 || in.WaitTimeSeconds != 2 {
		t.Errorf("receive input = %s, %d, %ds, want http://q, 5, 2s", aws.ToString(in.QueueUrl), in.MaxNumberOfMessages, in.WaitTimeSeconds)
	}
	if want := []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}; !slices.Equal(in.MessageSystemAttributeNames, want) {
		t.Errorf("system attribute names = %v, want %v", in.MessageSystemAttributeNames, want)
	}
	if want := []string{"All"}; !slices.Equal(in.MessageAttributeNames, want) {
		t.Errorf("message attribute names = %v, want %v", in.MessageAttributeNames, want)
	}
}

func TestPollerConfig(t *testing.T) {
	h := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}
	tests := []struct {
		name string
		p    Poller
	}{
		{"no client", Poller{QueueURL: "http://q", Handler: h}},
		{"no handler", Poller{SQS: &fakeSQS{}, QueueURL: "http://q"}},
		{"no queue url", Poller{SQS: &fakeSQS{}, Handler: h}},
		{"batch too large", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, BatchSize: 10001, BatchingWindow: time.Second}},
		{"batch over 10 without a window", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, BatchSize: 11}},
		{"window too long", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, BatchingWindow: 301 * time.Second}},
		{"negative window", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, BatchingWindow: -time.Second}},
		{"timeout too long", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, Timeout: 901 * time.Second}},
		{"negative concurrency", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, MaxConcurrency: -1}},
		{"concurrency too high", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, MaxConcurrency: 1001}},
		{"wait too long", Poller{SQS: &fakeSQS{}, QueueURL: "http://q", Handler: h, WaitTime: 21 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.p.PollOnce(context.Background()); !errors.Is(err, ErrPollerConfig) {
				t.Errorf("PollOnce = %v, want ErrPollerConfig", err)
			}
			if err := tt.p.Run(context.Background()); !errors.Is(err, ErrPollerConfig) {
				t.Errorf("Run = %v, want ErrPollerConfig", err)
			}
		})
	}
}

func TestRunRetriesReceiveErrorsAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	f := &fakeSQS{receive: func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
		if calls.Add(1) == 2 {
			cancel() // the second attempt proves Run retried after the first error
		}
		return nil, errors.New("connection refused")
	}}
	// One worker, so the receive calls are the retries of a single loop.
	p := &Poller{SQS: f, QueueURL: "http://q", MaxConcurrency: 1,
		Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, nil
		}}
	if err := p.Run(ctx); err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("receive calls = %d, want 2", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// endless is a fake receive that hands out count new messages per call (at
// most what the call asks for) and a context error once ctx is done.
func endless(perCall int) func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
	var seq atomic.Int64
	return func(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(perCall, int(in.MaxNumberOfMessages))
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "m" + strconv.FormatInt(seq.Add(1), 10)
		}
		return &sqs.ReceiveMessageOutput{Messages: fakeMessages(ids...)}, nil
	}
}

func TestPollOnceInvocationDeadline(t *testing.T) {
	const timeout = 7 * time.Minute
	var (
		deadlines []time.Time
		ids       []string
	)
	f := &fakeSQS{receive: endless(1)}
	p := &Poller{SQS: f, QueueURL: "http://q", Timeout: timeout,
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			d, ok := ctx.Deadline()
			if !ok {
				return events.SQSEventResponse{}, errors.New("no deadline")
			}
			deadlines = append(deadlines, d)
			lc, _ := lambdacontext.FromContext(ctx)
			if lc != nil {
				ids = append(ids, lc.AwsRequestID)
			}
			return events.SQSEventResponse{}, nil
		}}
	for i := range 2 {
		before := time.Now()
		if _, err := p.PollOnce(context.Background()); err != nil {
			t.Fatalf("PollOnce: %v", err)
		}
		after := time.Now()
		if len(deadlines) != i+1 {
			t.Fatalf("invocations = %d, want %d", len(deadlines), i+1)
		}
		if d := deadlines[i]; d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
			t.Errorf("deadline = %v, want Timeout (%s) after the invocation started, between %v and %v", d, timeout, before.Add(timeout), after.Add(timeout))
		}
	}
	if len(ids) != 2 || ids[0] == "" || ids[0] == ids[1] {
		t.Errorf("request ids = %q, want two distinct", ids)
	}
}

func TestPollOnceTimedOutHandler(t *testing.T) {
	f := &fakeSQS{receive: func(context.Context, *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
		return &sqs.ReceiveMessageOutput{Messages: fakeMessages("m1", "m2")}, nil
	}}
	release := make(chan struct{})
	returned := make(chan error, 1)
	var logs syncBuffer
	p := &Poller{SQS: f, QueueURL: "http://q", Timeout: 50 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			<-ctx.Done()
			err := ctx.Err()
			<-release
			returned <- err
			return events.SQSEventResponse{}, nil // would delete both, were it on time
		}}
	n, err := p.PollOnce(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("PollOnce = %d, %v, want 2, nil", n, err)
	}
	if len(f.deleted) != 0 {
		t.Errorf("deleted = %v after the timeout, want none", f.deleted)
	}
	close(release)
	if ctxErr := <-returned; !errors.Is(ctxErr, context.DeadlineExceeded) {
		t.Errorf("handler's context error = %v, want DeadlineExceeded", ctxErr)
	}
	f.mu.Lock()
	deleted := slices.Clone(f.deleted)
	f.mu.Unlock()
	if len(deleted) != 0 {
		t.Errorf("deleted = %v after the late result, want none", deleted)
	}
	out := logs.String()
	for _, want := range []string{`"level":"WARN"`, `"batch_failed":"invocation timed out after 50ms"`, `"deleted":0`, `"failed":2`} {
		if !strings.Contains(out, want) {
			t.Errorf("log = %s, want it to contain %s", out, want)
		}
	}
}

func TestPollOnceGathersBatches(t *testing.T) {
	tests := []struct {
		name      string
		batchSize int
		window    time.Duration
		perCall   int  // messages a receive returns, at most what it asks for
		onlyFirst bool // later receives find the queue empty
		wantBatch int
		wantAsked []int32 // MaxNumberOfMessages of each receive
	}{
		{"no window: one receive is one batch", 10, 0, 3, false, 3, []int32{10}},
		{"BatchSize over 10 over several receives", 25, time.Minute, 10, false, 25, []int32{10, 10, 5}},
		{"window fills a batch from a trickle", 4, time.Minute, 1, false, 4, []int32{4, 3, 2, 1}},
		{"batch of at most one receive", 5, time.Minute, 10, false, 5, []int32{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSQS{receive: endless(tt.perCall)}
			var got []events.SQSEvent
			p := &Poller{SQS: f, QueueURL: "http://q", BatchSize: tt.batchSize, BatchingWindow: tt.window,
				Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					got = append(got, ev)
					return events.SQSEventResponse{}, nil
				}}
			n, err := p.PollOnce(context.Background())
			if err != nil || n != tt.wantBatch {
				t.Fatalf("PollOnce = %d, %v, want %d, nil", n, err, tt.wantBatch)
			}
			if len(got) != 1 || len(got[0].Records) != tt.wantBatch {
				t.Fatalf("batches = %d, want one of %d", len(got), tt.wantBatch)
			}
			var asked []int32
			for _, in := range f.received {
				asked = append(asked, in.MaxNumberOfMessages)
			}
			if !slices.Equal(asked, tt.wantAsked) {
				t.Errorf("receives asked for %v messages, want %v", asked, tt.wantAsked)
			}
			if len(f.deleted) != tt.wantBatch {
				t.Errorf("deleted %d, want %d", len(f.deleted), tt.wantBatch)
			}
		})
	}

	t.Run("the window passes before the batch fills", func(t *testing.T) {
		const window = 300 * time.Millisecond
		var calls atomic.Int32
		f := &fakeSQS{receive: func(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
			if calls.Add(1) == 1 {
				return &sqs.ReceiveMessageOutput{Messages: fakeMessages("m1", "m2")}, nil
			}
			return &sqs.ReceiveMessageOutput{}, nil
		}}
		var got []events.SQSEvent
		p := &Poller{SQS: f, QueueURL: "http://q", BatchSize: 10, BatchingWindow: window,
			Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				got = append(got, ev)
				return events.SQSEventResponse{}, nil
			}}
		if n, err := p.PollOnce(context.Background()); err != nil || n != 2 {
			t.Fatalf("PollOnce = %d, %v, want 2, nil", n, err)
		}
		if len(got) != 1 || len(got[0].Records) != 2 {
			t.Fatalf("batches = %v, want one of 2", got)
		}
		if len(f.received) < 2 {
			t.Fatalf("receives = %d, want more than the first within the window", len(f.received))
		}
		for i, in := range f.received[1:] {
			// Less than a second of window left: short polls, never a long
			// poll that would outlast it.
			if in.WaitTimeSeconds != 0 || in.MaxNumberOfMessages != 8 {
				t.Errorf("receive %d = wait %ds for %d, want a short poll for 8", i+2, in.WaitTimeSeconds, in.MaxNumberOfMessages)
			}
		}
	})

	t.Run("a receive error ends the gathering but not the batch", func(t *testing.T) {
		var calls atomic.Int32
		f := &fakeSQS{receive: func(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error) {
			if calls.Add(1) == 1 {
				return &sqs.ReceiveMessageOutput{Messages: fakeMessages("m1")}, nil
			}
			return nil, errors.New("connection reset")
		}}
		handled := 0
		p := &Poller{SQS: f, QueueURL: "http://q", BatchSize: 10, BatchingWindow: time.Minute,
			Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				handled += len(ev.Records)
				return events.SQSEventResponse{}, nil
			}}
		n, err := p.PollOnce(context.Background())
		if n != 1 || err == nil || !strings.Contains(err.Error(), "connection reset") {
			t.Errorf("PollOnce = %d, %v, want 1 and the receive error", n, err)
		}
		if handled != 1 || !slices.Equal(f.deleted, []string{"rh-m1"}) {
			t.Errorf("handled %d, deleted %v, want the message received handled and deleted", handled, f.deleted)
		}
	})
}

func TestRunMaxConcurrency(t *testing.T) {
	tests := []struct {
		name           string
		maxConcurrency int
		want           int
	}{
		{"one", 1, 1},
		{"three", 3, 3},
		{"zero means the default", 0, DefaultMaxConcurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const batchesPerWorker = 3
			var (
				inflight, peak, started, handled atomic.Int32
				allIn                            = make(chan struct{})
				enough                           = make(chan struct{})
				release                          = make(chan struct{})
			)
			total := int32(batchesPerWorker * tt.want)
			p := &Poller{SQS: &fakeSQS{receive: endless(1)}, QueueURL: "http://q", MaxConcurrency: tt.maxConcurrency, Timeout: 15 * time.Minute,
				Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					n := inflight.Add(1)
					defer inflight.Add(-1)
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					// No handler returns before want of them run at once.
					if started.Add(1) == int32(tt.want) {
						close(allIn)
					}
					<-release
					if handled.Add(1) == total {
						close(enough)
					}
					return events.SQSEventResponse{}, nil
				}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()

			select {
			case <-allIn:
			case <-time.After(waitBound):
				t.Fatalf("%d handlers started, want %d running at once", started.Load(), tt.want)
			}
			if n := inflight.Load(); n != int32(tt.want) {
				t.Errorf("handlers in flight = %d, want %d", n, tt.want)
			}
			close(release)
			select {
			case <-enough:
			case <-time.After(waitBound):
				t.Fatalf("handled %d batches, want %d", handled.Load(), total)
			}
			stopRun(t, cancel, done)
			if got := peak.Load(); got != int32(tt.want) {
				t.Errorf("most handlers at once = %d, want %d", got, tt.want)
			}
			if n := inflight.Load(); n != 0 {
				t.Errorf("handlers still running after Run returned = %d, want 0", n)
			}
		})
	}
}
