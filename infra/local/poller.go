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
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
)

// Poller defaults and limits.
const (
	// DefaultBatchSize is used when Poller.BatchSize is zero, as in Lambda.
	DefaultBatchSize = 10
	// DefaultWaitTime is the long-poll wait used when Poller.WaitTime is zero.
	DefaultWaitTime = time.Second
	// DefaultTimeout is Lambda's default function timeout, used when
	// Poller.Timeout is zero.
	DefaultTimeout = 3 * time.Second
	// DefaultMaxConcurrency is used when Poller.MaxConcurrency is zero. In
	// AWS an event source without MaximumConcurrency scales up to the
	// function's concurrency limit; locally that would only multiply long
	// polls against the emulator, so zero means the template's own default
	// of ProcessorMaxConcurrency instead.
	DefaultMaxConcurrency = 5

	// maxReceive is the most messages one ReceiveMessage call returns.
	maxReceive = 10
	// Lambda's limits for an SQS event source on a standard queue and for a
	// function's timeout.
	maxBatchSize      = 10000
	maxBatchingWindow = 300 * time.Second
	maxTimeout        = 900 * time.Second
	maxConcurrency    = 1000
	maxWaitTime       = 20 * time.Second
	// windowPollInterval spaces the short polls of a batching window's last
	// fraction of a second, which SQS cannot long-poll.
	windowPollInterval = 100 * time.Millisecond
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

// errTimedOut is the invocation error of a handler that did not return by
// its deadline.
var errTimedOut = errors.New("invocation timed out")

// Poller emulates Lambda's SQS event source mapping with
// FunctionResponseTypes ReportBatchItemFailures.
//
// It assembles batches as Lambda does: up to BatchSize messages, gathered
// over several receives until the batch is full or BatchingWindow has
// passed since its first message arrived (with no window, one receive is
// one batch). For each batch it calls Handler once, with a context whose
// deadline is Timeout from the start of the invocation. If Handler returns
// an error, panics or is still running at the deadline, nothing is deleted
// and the whole batch returns after the queue's visibility timeout; the
// result of a handler that returns after its deadline is ignored. Otherwise
// every message not named in BatchItemFailures is deleted; a failure whose
// ItemIdentifier is empty or not a message of the batch makes the whole
// batch count as failed, as it does in Lambda. The visibility of failed
// messages is left alone, so they come back after the visibility timeout
// and the queue's RedrivePolicy moves them to the dead-letter queue after
// maxReceiveCount receives.
//
// Run keeps up to MaxConcurrency batches in flight at once; PollOnce
// handles one.
type Poller struct {
	SQS      SQSAPI
	QueueURL string
	// QueueARN and Region fill each record's eventSourceARN and awsRegion.
	QueueARN string
	Region   string
	// BatchSize is the most messages per batch, 1 to 10000; zero means
	// DefaultBatchSize. Above 10 (the most one receive returns) it needs a
	// BatchingWindow, as Lambda requires.
	BatchSize int
	// BatchingWindow is the event source's MaximumBatchingWindowInSeconds,
	// up to 300 s: how long after a batch's first message more are gathered
	// to fill it. Zero hands each receive's messages over at once.
	BatchingWindow time.Duration
	// Timeout is the function's Timeout, up to 900 s: each invocation's
	// deadline. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxConcurrency is the event source's ScalingConfig.MaximumConcurrency:
	// how many batches Run has in flight at once, 1 to 1000. Zero means
	// DefaultMaxConcurrency.
	MaxConcurrency int
	// WaitTime is the long-poll wait for a batch's first message, in whole
	// seconds up to 20 s; zero means DefaultWaitTime.
	WaitTime time.Duration
	Handler  ProcessorFunc
	// Logger receives one line per non-empty batch (never message bodies).
	// Nil discards.
	Logger *slog.Logger
}

// Run polls with MaxConcurrency workers, each receiving a batch, invoking
// Handler and deleting in turn, until ctx is done, and then returns nil
// once every worker has finished its batch. Receive and delete errors are
// logged and retried after a backoff that grows up to 5 s; only a
// configuration error (wrapping ErrPollerConfig) ends Run early.
//
// A handler that outlives its deadline is abandoned, not stopped (Lambda
// would end its sandbox), so it may still be running while its worker
// handles the next batch.
func (p *Poller) Run(ctx context.Context) error {
	if err := p.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := p.maxConcurrency()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- p.work(ctx) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // the other workers would fail the same way
		}
	}
	return first
}

// work is one worker of Run: batches one after another until ctx is done.
func (p *Poller) work(ctx context.Context) error {
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

// PollOnce gathers at most one batch (waiting up to WaitTime for its first
// message and then up to BatchingWindow to fill it), hands it to Handler
// and deletes what succeeded. It returns how many messages it received. The
// error reports a failed receive or delete or a bad configuration; a batch
// the handler failed or that timed out is not an error here, it is simply
// left on the queue and logged.
//
// A receive that fails after the batch's first message ends the gathering:
// the messages already received are still handed to Handler, and the
// receive error is returned.
func (p *Poller) PollOnce(ctx context.Context) (received int, err error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	msgs, rerr := p.gather(ctx)
	if len(msgs) == 0 {
		return 0, rerr
	}
	if ctx.Err() != nil {
		// Stopping: invoking with a cancelled context would only fail, and
		// the messages return after the visibility timeout either way.
		return len(msgs), rerr
	}

	start := time.Now()
	reqID := newUUID()
	ev := p.event(msgs)
	resp, herr := p.invoke(ctx, ev, reqID)
	toDelete, failed, reason := deletions(ev, resp, herr)
	deleted, derr := p.delete(ctx, toDelete)

	attrs := []slog.Attr{
		slog.String("queue_url", p.QueueURL),
		slog.String("request_id", reqID),
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
	err = errors.Join(rerr, derr)
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	p.logger().LogAttrs(ctx, level, "sqs batch", attrs...)
	return len(ev.Records), err
}

// gather receives one batch the way the event source mapping assembles it:
// a long poll of up to WaitTime for a first message, then, with a batching
// window, more receives until BatchSize messages are in or the window has
// passed since the first one arrived.
//
// SQS long-polls in whole seconds, so each further receive waits only the
// whole seconds left in the window and the last fraction of a second is
// covered by short polls: a receive is never cancelled mid-flight, which
// could make messages it took invisible, and count a receive for them,
// without anyone handling them. (A short poll sends no WaitTimeSeconds, so
// it relies on the queue's ReceiveMessageWaitTimeSeconds being 0, its
// default and what Provision leaves.)
func (p *Poller) gather(ctx context.Context) ([]types.Message, error) {
	size := p.batchSize()
	msgs, err := p.receive(ctx, min(size, maxReceive), p.waitSeconds())
	if err != nil || len(msgs) == 0 || p.BatchingWindow == 0 {
		return msgs, err
	}
	windowEnd := time.Now().Add(p.BatchingWindow)
	for len(msgs) < size {
		left := time.Until(windowEnd)
		if left <= 0 {
			break
		}
		wait := int32(min(left, maxWaitTime) / time.Second)
		more, err := p.receive(ctx, min(size-len(msgs), maxReceive), wait)
		msgs = append(msgs, more...)
		if err != nil {
			return msgs, err
		}
		if len(more) == 0 && wait == 0 {
			t := time.NewTimer(min(left, windowPollInterval))
			select {
			case <-ctx.Done():
				t.Stop()
				return msgs, fmt.Errorf("receive from %s: %w", p.QueueURL, ctx.Err())
			case <-t.C:
			}
		}
	}
	return msgs, nil
}

// receive is one ReceiveMessage call asking for every attribute Lambda
// puts in a record.
func (p *Poller) receive(ctx context.Context, max int, waitSeconds int32) ([]types.Message, error) {
	out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.QueueURL),
		MaxNumberOfMessages:         int32(max),
		WaitTimeSeconds:             waitSeconds,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", p.QueueURL, err)
	}
	return out.Messages, nil
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
// carrying the invocation's request id, a context whose deadline is Timeout
// from now (what lambdacontext users read with ctx.Deadline), and a panic
// becoming an invocation error. A handler still running at the deadline
// has timed out: invoke returns an error wrapping errTimedOut at once and
// the handler's eventual result is dropped.
func (p *Poller) invoke(ctx context.Context, ev events.SQSEvent, reqID string) (events.SQSEventResponse, error) {
	timeout := p.timeout()
	deadline := time.Now().Add(timeout)
	ictx, cancel := context.WithDeadline(ctx, deadline)
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: reqID})
	done := start(ictx, cancel, "processor handler", p.Handler, ev)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-t.C:
		return events.SQSEventResponse{}, fmt.Errorf("%w after %s", errTimedOut, timeout)
	}
}

// deletions decides, as Lambda does, which records of a handled batch to
// delete. It returns them, the number of records that failed, and why the
// whole batch failed ("" when it did not).
func deletions(ev events.SQSEvent, resp events.SQSEventResponse, handlerErr error) (toDelete []events.SQSMessage, failed int, batchFailed string) {
	if errors.Is(handlerErr, errTimedOut) {
		return nil, len(ev.Records), handlerErr.Error()
	}
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

// maxDeleteBatch is the most entries SQS takes in one DeleteMessageBatch
// (TooManyEntriesInBatchRequest beyond it).
const maxDeleteBatch = 10

// delete removes records, at most maxDeleteBatch to a DeleteMessageBatch
// call as SQS requires (a batch of BatchSize up to 10,000 takes many), and
// returns how many SQS confirmed. A call that fails does not stop the
// others: each record it carried stays on the queue and returns after the
// visibility timeout, as it would from Lambda's own failed delete.
func (p *Poller) delete(ctx context.Context, recs []events.SQSMessage) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	deleted := 0
	var errs []error
	for from := 0; from < len(recs); from += maxDeleteBatch {
		n, err := p.deleteBatch(ctx, recs[from:min(from+maxDeleteBatch, len(recs))])
		deleted += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return deleted, errors.Join(errs...)
}

// deleteBatch is one DeleteMessageBatch call of at most maxDeleteBatch
// records.
func (p *Poller) deleteBatch(ctx context.Context, recs []events.SQSMessage) (int, error) {
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
	case p.BatchSize < 0 || p.BatchSize > maxBatchSize:
		return fmt.Errorf("%w: BatchSize %d is outside 1..%d", ErrPollerConfig, p.BatchSize, maxBatchSize)
	case p.BatchingWindow < 0 || p.BatchingWindow > maxBatchingWindow:
		return fmt.Errorf("%w: BatchingWindow %s is outside 0..%s", ErrPollerConfig, p.BatchingWindow, maxBatchingWindow)
	case p.BatchSize > maxReceive && p.BatchingWindow == 0:
		return fmt.Errorf("%w: BatchSize %d needs a BatchingWindow, as in Lambda (one receive returns at most %d)", ErrPollerConfig, p.BatchSize, maxReceive)
	case p.Timeout < 0 || p.Timeout > maxTimeout:
		return fmt.Errorf("%w: Timeout %s is outside 0..%s", ErrPollerConfig, p.Timeout, maxTimeout)
	case p.MaxConcurrency < 0 || p.MaxConcurrency > maxConcurrency:
		return fmt.Errorf("%w: MaxConcurrency %d is outside 0..%d", ErrPollerConfig, p.MaxConcurrency, maxConcurrency)
	case p.WaitTime < 0 || p.WaitTime > maxWaitTime:
		return fmt.Errorf("%w: WaitTime %s is outside 0..20s", ErrPollerConfig, p.WaitTime)
	}
	return nil
}

func (p *Poller) batchSize() int {
	if p.BatchSize == 0 {
		return DefaultBatchSize
	}
	return p.BatchSize
}

func (p *Poller) timeout() time.Duration {
	if p.Timeout == 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

func (p *Poller) maxConcurrency() int {
	if p.MaxConcurrency == 0 {
		return DefaultMaxConcurrency
	}
	return p.MaxConcurrency
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

// PollerClient is the SQS client of a local poller: cfg's, with each
// request's body kept from the SDK's early close (emulators.KeepRequestBody),
// so a receive from the local AWS is not lost with its messages in
// flight. Lambda's own poller is not the SDK; the functions' clients keep
// the SDK's behaviour.
func PollerClient(cfg aws.Config) *sqs.Client {
	next := cfg.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = emulators.KeepRequestBody(next) })
}
