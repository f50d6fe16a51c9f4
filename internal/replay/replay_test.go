package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

func mustQueue(tb testing.TB, client *sqs.Client, name string) *queue.Queue {
	tb.Helper()
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		tb.Fatal(err)
	}
	return queue.New(client, *out.QueueUrl)
}

func drainAll(tb testing.TB, q *queue.Queue) []string {
	tb.Helper()
	var bodies []string
	for {
		msgs, err := q.Receive(context.Background(), 10, 30, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if len(msgs) == 0 {
			sort.Strings(bodies)
			return bodies
		}
		for _, m := range msgs {
			bodies = append(bodies, m.Body)
			if err := q.Delete(context.Background(), m.ReceiptHandle); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

func TestDrainDLQ(t *testing.T) {
	s := awstest.Start(t)
	client := sqs.NewFromConfig(s.Config())
	dlq, main := mustQueue(t, client, "dlq"), mustQueue(t, client, "main")
	const n = 13
	for i := range n {
		if err := dlq.Enqueue(context.Background(), inbox.Key{Source: "stripe", EventID: fmt.Sprintf("evt_%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dlq.Send(context.Background(), "not one of ours"); err != nil {
		t.Fatal(err)
	}
	r := &replay.Replayer{DLQ: dlq, Main: main, Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}

	// The default is a dry run: it reports and moves nothing.
	sum, err := r.Handle(context.Background(), replay.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.DryRun || sum.Examined != n+1 || sum.Moved != 0 || sum.Unreadable != 1 || len(sum.Events) != n || sum.Error != "" {
		t.Fatalf("dry run: got %+v, want %d examined, 1 unreadable, nothing moved", sum, n+1)
	}
	if got := drainAll(t, main); len(got) != 0 {
		t.Fatalf("dry run moved %d messages", len(got))
	}

	// A limited run moves only that many.
	no := false
	sum, err = r.Handle(context.Background(), replay.Request{DryRun: &no, Limit: 4})
	if err != nil || sum.Moved != 4 || sum.Examined != 4 {
		t.Fatalf("limited: got %+v, %v; want 4 moved", sum, err)
	}
	sum, err = r.Handle(context.Background(), replay.Request{DryRun: &no})
	if err != nil || sum.Moved != n+1-4 {
		t.Fatalf("rest: got %+v, %v; want %d moved", sum, err, n+1-4)
	}
	moved := drainAll(t, main)
	if len(moved) != n+1 {
		t.Fatalf("main queue: got %d messages, want %d", len(moved), n+1)
	}
	want, _ := inbox.EncodeMessage(inbox.Key{Source: "stripe", EventID: "evt_00"})
	if moved[0] != "not one of ours" || moved[1] != want {
		t.Errorf("bodies not moved unchanged: got %q, %q", moved[0], moved[1])
	}
	if left := drainAll(t, dlq); len(left) != 0 {
		t.Errorf("DLQ still holds %d messages", len(left))
	}
}

func TestBadRequests(t *testing.T) {
	r := &replay.Replayer{Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	for _, req := range []replay.Request{{Action: "purge"}, {Limit: -1}, {Limit: replay.MaxLimit + 1}} {
		if _, err := r.Handle(context.Background(), req); !errors.Is(err, replay.ErrBadRequest) {
			t.Errorf("%+v: got %v, want ErrBadRequest", req, err)
		}
	}
	for _, payload := range []string{`{"dry_rnu":false}`, `[]`, `{"limit":"x"}`} {
		if _, err := replay.DecodeRequest([]byte(payload)); !errors.Is(err, replay.ErrBadRequest) {
			t.Errorf("%s: got %v, want ErrBadRequest", payload, err)
		}
	}
	for _, payload := range []string{``, `{}`, `{"action":"drain-dlq","dry_run":true,"limit":5}`} {
		if _, err := replay.DecodeRequest([]byte(payload)); err != nil {
			t.Errorf("%s: got %v, want nil", payload, err)
		}
	}
}

// TestStopsBeforeDeadline: a drain that runs out of time stops with a
// summary instead of being cut off by the function timeout.
func TestStopsBeforeDeadline(t *testing.T) {
	r := &replay.Replayer{Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Second))
	defer cancel()
	sum, err := r.Handle(ctx, replay.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Examined != 0 || !strings.Contains(sum.Error, "invoke again") {
		t.Errorf("got %+v, want nothing examined and an error saying to invoke again", sum)
	}
}
