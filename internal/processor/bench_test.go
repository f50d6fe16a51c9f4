package processor_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// latency adds d before every AWS call the client makes, as a network
// round trip to DynamoDB would.
func latency(d time.Duration) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("latency",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return middleware.FinalizeOutput{}, middleware.Metadata{}, ctx.Err()
				case <-t.C:
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// BenchmarkBatch is the processor's time for a batch of n new events, each
// claimed, committed (an invoice_paid fact and its receipt row) and its
// receipt delivered (to the log) against dynoxide with 20 ms added to
// every AWS call. With records processed concurrently, a batch of
// 10 should take well under twice one event's time; one by one it took ten
// times (concurrency=1, the baseline). `make bench-processor` prints the
// ratios.
func BenchmarkBatch(b *testing.B) {
	for _, c := range []struct{ events, concurrency int }{{1, 10}, {10, 10}, {10, 1}} {
		b.Run(fmt.Sprintf("events=%d/concurrency=%d", c.events, c.concurrency), func(b *testing.B) {
			benchBatch(b, c.events, c.concurrency)
		})
	}
}

func benchBatch(b *testing.B, n, concurrency int) {
	// dynoxide, not moto: moto answers concurrent transactions with 500s
	// (it copies the table for each), and its own time, which grows with
	// the table, would swamp the 20 ms being measured.
	srv := awstest.StartDynoxide(b)
	cfg := srv.Config()
	cfg.APIOptions = append(cfg.APIOptions, latency(20*time.Millisecond))
	db := dynamodb.NewFromConfig(cfg)
	plain := dynamodb.NewFromConfig(srv.Config())
	mustTable(b, plain, "inbox")
	setup := inboxstore.New(plain, "inbox", time.Hour)
	logs := &bytes.Buffer{}
	store := inboxstore.New(db, "inbox", time.Hour)
	p, err := processor.New(processor.Config{
		Store: store, Outbox: mustOutbox(b, store, time.Now), DeadLetters: nopDLQ{}, Visibility: nopVisibility{},
		Routes: handlers.Routes(nil), MaxReceiveCount: 10, Concurrency: concurrency,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		var batch events.SQSEvent
		for j := range n {
			id := fmt.Sprintf("evt_%d_%d", i, j)
			k := mustInsert(b, setup, id, "in_"+id, time.Now())
			batch.Records = append(batch.Records, sqsMessage(b, fmt.Sprintf("m_%d_%d", i, j), k))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b.StartTimer()
		resp, err := p.Handle(ctx, batch)
		b.StopTimer()
		cancel()
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("batch: %v %v\n%s", resp.BatchItemFailures, err, logs)
		}
		b.StartTimer()
	}
}
