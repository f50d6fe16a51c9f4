package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Poller defaults and limits.
const (
	// DefaultBatchSize is used when Poller.BatchSize is zero; it is also the
	// most one ReceiveMessage call returns.
	DefaultBatchSize = 10
	// DefaultWaitTime is the long-poll wait used when Poller.WaitTime is zero.
	DefaultWaitTime = time.Second

	maxWaitTime = 20 * time.Second
	// deleteTimeout bounds the deletes after a handled batch; they run even
	// when the poll context is being cancelled, so a batch the handler
	// finished is not delivered again just because the poller stopped.
	deleteTimeout = 10 * time.Second
	minBackoff    = 200 * time.Millisecond
	maxBackoff    = 5 * time.Second
)

// ProcessorFunc is the processor Lambda's handler signature: exactly what
// functions/processor passes to lambda.Start.
type ProcessorFunc func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// SQSAPI is the part of the SQS client the poller calls; *sqs.Client
// satisfies it.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// ErrPollerConfig is wrapped by the errors PollOnce and Run return for a
// Poller that cannot work as configured; retrying does not help.
var ErrPollerConfig = errors.New("invalid poller configuration")

// Poller emulates Lambda's SQS event source mapping with
// FunctionResponseTypes ReportBatchItemFailures, one batch at a time.
//
// For each batch it receives, it calls Handler once. If Handler returns an
// error (or panics) nothing is deleted and the whole batch returns after the
// queue's visibility timeout. Otherwise every message not named in
// BatchItemFailures is deleted; a failure whose ItemIdentifier is empty or
// not a message of the batch makes the whole batch count as failed, as it
// does in Lambda. The visibility of failed messages is left alone, so they
// come back after the visibility timeout and the queue's RedrivePolicy moves
// them to the dead-letter queue after maxReceiveCount receives.
type Poller struct {
	SQS      SQSAPI
	QueueURL string
	// QueueARN and Region fill each record's eventSourceARN and awsRegion.
	QueueARN string
	Region   string
	// BatchSize is the most messages per batch, 1 to 10; zero means
	// DefaultBatchSize. (Lambda gathers larger batches over a batching
	// window; locally one receive is one batch.)
	BatchSize int32
	// WaitTime is the long-poll wait of each receive, in whole seconds up to
	// 20 s; zero means DefaultWaitTime.
	WaitTime time.Duration
	Handler  ProcessorFunc
	// Logger receives one line per non-empty batch (never message bodies).
	// Nil discards.
	Logger *slog.Logger
}

// Run polls until ctx is done and then returns nil. Receive and delete
// errors are logged and retried after a backoff that grows up to 5 s; only a
// configuration error (wrapping ErrPollerConfig) ends Run early.
func (p *Poller) Run(ctx context.Context) error {
	if err := p.validate(); err != nil {
		return err
	}
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		_, err := p.PollOnce(ctx)
		if err == nil {
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, ErrPollerConfig) {
			return err
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		p.logger().LogAttrs(ctx, slog.LevelWarn, "sqs poll failed",
			slog.String("queue_url", p.QueueURL),
			slog.String("error", err.Error()),
			slog.Duration("retry_in", backoff))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}

// PollOnce receives at most one batch (waiting up to WaitTime for it),
// hands it to Handler and deletes what succeeded. It returns how many
// messages it received. The error reports a failed receive or delete or a
// bad configuration; a batch the handler failed is not an error here, it is
// simply left on the queue and logged.
func (p *Poller) PollOnce(ctx context.Context) (received int, err error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.QueueURL),
		MaxNumberOfMessages:         p.batchSize(),
		WaitTimeSeconds:             p.waitSeconds(),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return 0, fmt.Errorf("receive from %s: %w", p.QueueURL, err)
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}

	start := time.Now()
	ev := p.event(out.Messages)
	resp, herr := p.invoke(ctx, ev)
	toDelete, failed, reason := deletions(ev, resp, herr)
	deleted, derr := p.delete(ctx, toDelete)

	attrs := []slog.Attr{
		slog.String("queue_url", p.QueueURL),
		slog.Int("received", len(ev.Records)),
		slog.Int("failed", failed),
		slog.Int("deleted", deleted),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
	}
	level := slog.LevelInfo
	if reason != "" {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("batch_failed", reason))
	}
	if derr != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", derr.Error()))
	}
	p.logger().LogAttrs(ctx, level, "sqs batch", attrs...)
	return len(ev.Records), derr
}

// event converts received messages into the event Lambda would send.
func (p *Poller) event(msgs []types.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		attrs := make(map[string]string, len(m.Attributes))
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{
				StringValue: v.StringValue,
				BinaryValue: v.BinaryValue,
				// Lambda sends these as empty lists, never null.
				StringListValues: append([]string{}, v.StringListValues...),
				BinaryListValues: append([][]byte{}, v.BinaryListValues...),
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         p.QueueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              p.Region,
		})
	}
	return ev
}

// invoke calls the handler as the Lambda runtime does: with a lambdacontext
// carrying a fresh request id, a panic becoming an invocation error.
func (p *Poller) invoke(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("processor handler panicked: %v", r)
		}
	}()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: newUUID()})
	return p.Handler(ctx, ev)
}

// deletions decides, as Lambda does, which records of a handled batch to
// delete. It returns them, the number of records that failed, and why the
// whole batch failed ("" when it did not).
func deletions(ev events.SQSEvent, resp events.SQSEventResponse, handlerErr error) (toDelete []events.SQSMessage, failed int, batchFailed string) {
	if handlerErr != nil {
		return nil, len(ev.Records), "handler error: " + handlerErr.Error()
	}
	inBatch := make(map[string]bool, len(ev.Records))
	for _, r := range ev.Records {
		inBatch[r.MessageId] = true
	}
	failedIDs := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" {
			return nil, len(ev.Records), "batch item failure with an empty itemIdentifier"
		}
		if !inBatch[f.ItemIdentifier] {
			return nil, len(ev.Records), "batch item failure names message " + strconv.Quote(f.ItemIdentifier) + ", which is not in the batch"
		}
		failedIDs[f.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		if !failedIDs[r.MessageId] {
			toDelete = append(toDelete, r)
		}
	}
	return toDelete, len(failedIDs), ""
}

// delete removes records in one DeleteMessageBatch call and returns how many
// SQS confirmed.
func (p *Poller) delete(ctx context.Context, recs []events.SQSMessage) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	entries := make([]types.DeleteMessageBatchRequestEntry, len(recs))
	for i, r := range recs {
		entries[i] = types.DeleteMessageBatchRequestEntry{
			Id:            aws.String(strconv.Itoa(i)),
			ReceiptHandle: aws.String(r.ReceiptHandle),
		}
	}
	out, err := p.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(p.QueueURL),
		Entries:  entries,
	})
	if err != nil {
		return 0, fmt.Errorf("delete %d messages from %s: %w", len(recs), p.QueueURL, err)
	}
	if len(out.Failed) > 0 {
		msgs := make([]string, 0, len(out.Failed))
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			id := ""
			if i >= 0 && i < len(recs) {
				id = recs[i].MessageId
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s %s", id, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
		return len(out.Successful), fmt.Errorf("delete from %s: %d of %d failed: %s",
			p.QueueURL, len(out.Failed), len(recs), strings.Join(msgs, "; "))
	}
	return len(out.Successful), nil
}

func (p *Poller) validate() error {
	switch {
	case p.SQS == nil:
		return fmt.Errorf("%w: SQS client is nil", ErrPollerConfig)
	case p.Handler == nil:
		return fmt.Errorf("%w: Handler is nil", ErrPollerConfig)
	case p.QueueURL == "":
		return fmt.Errorf("%w: QueueURL is empty", ErrPollerConfig)
	case p.BatchSize < 0 || p.BatchSize > DefaultBatchSize:
		return fmt.Errorf("%w: BatchSize %d is outside 1..10", ErrPollerConfig, p.BatchSize)
	case p.WaitTime < 0 || p.WaitTime > maxWaitTime:
		return fmt.Errorf("%w: WaitTime %s is outside 0..20s", ErrPollerConfig, p.WaitTime)
	}
	return nil
}

func (p *Poller) batchSize() int32 {
	if p.BatchSize == 0 {
		return DefaultBatchSize
	}
	return p.BatchSize
}

// waitSeconds rounds WaitTime up to whole seconds, the unit SQS takes.
func (p *Poller) waitSeconds() int32 {
	w := p.WaitTime
	if w == 0 {
		w = DefaultWaitTime
	}
	return int32((w + time.Second - 1) / time.Second)
}

func (p *Poller) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}
