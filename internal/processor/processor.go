// Package processor applies stored events. For each SQS record it claims the
// event with a lease, runs the event's handler, and commits the handler's
// effect records together with the event's new status in one transaction.
// Only the records that need another try are reported back to SQS.
//
// The invariant it keeps: every stored event ends processed or dead, and a
// message reaches the dead-letter queue only when its event is dead.
//
//   - At a message's last receive a record is reported failed only when its
//     event is dead (SQS then moves the message to the DLQ). A live lease
//     elsewhere, a failed event's copy whose backoff is not over, an event
//     the read shows unfinished, a record the invocation had no time to
//     start or finish: acknowledged instead, and the event, still
//     unfinished, is the sweep's, which re-enqueues it.
//   - Where the store cannot say whether the event is dead (the answer to
//     the dead write lost and the read failing too, a record stuck in its
//     dead write at the deadline), the record is reported: the DLQ copy is
//     right if the write landed, and if it did not, the event is
//     unfinished, so the sweep brings it back and it ends processed
//     (drain-dlq then deletes the copy) or dead. A process that dies on a
//     last receive is the same case.
//   - Every copy of a message starts a fresh receive count (provider
//     retries, the sweep), so the event's own claims are bounded too
//     (MaxAttempts, counted since the event was stored or last revived):
//     past it, the event is made dead without running its handler again.
//     Copies do not cut a failed event's backoff short: a claim waits until
//     the event is due. Every event's life is bounded.
//   - Records cut off by the invocation's own deadline margin are never made
//     dead for it, and their attempt is refunded.
package processor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// Store is the inbox as the processor needs it; see inboxstore.Store for
// the contract of each method.
type Store interface {
	Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error)
	Complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now time.Time) error
	Fail(ctx context.Context, k inbox.Key, f inbox.Failure, now time.Time) (inbox.Event, error)
	// Status reads the event's status alone (inboxstore.Store.Status).
	Status(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	// The first attempt at an event, unclaimed (record.first).
	Peek(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	CompleteFirst(ctx context.Context, ev inbox.Event, plan effects.Plan, outcome inbox.Outcome, now time.Time) error
}

// Outbox delivers the outbox rows an event's commit wrote; see
// outbox.Deliverer.
type Outbox interface {
	Deliver(work, book context.Context, ev inbox.Key, gen int, rows []string, owner string) (outbox.Settlement, error)
}

// targetLister is an Outbox that says which targets it can deliver to
// (outbox.Deliverer): a plan naming any other is refused before it
// commits.
type targetLister interface {
	Targets() []string
}

// DeadLetters receives the messages of events that died, so operators find
// every dead event in one place.
type DeadLetters interface {
	Send(ctx context.Context, body string) error
}

// Visibility delays a received message of the main queue: a failed record
// comes back after its backoff rather than the queue's visibility timeout.
type Visibility interface {
	Delay(ctx context.Context, receiptHandle string, d time.Duration) error
}

// Routes is effects.Routes: a source kind and an event type to its
// handler (the handlers' room, internal/handlers, builds them without
// importing the processor).
type Routes = effects.Routes

// Defaults of Config.
const (
	DefaultConcurrency = 10
	DefaultMargin      = 5 * time.Second
	DefaultRetryBase   = 30 * time.Second
	DefaultRetryCap    = time.Hour
	// MaxRetryCap is the longest SQS can hide a received message.
	MaxRetryCap = 12 * time.Hour
	// maxDelay is the longest delay set on a message: SQS counts its 12
	// hours from the receive, not from the delay call, and refuses a call
	// past them (the message then comes back after the queue's visibility
	// timeout, and a cap near 12 hours would spend the receive budget in
	// minutes). The receive was at most 20 minutes before: Lambda's
	// longest batching window (5) and timeout (15).
	maxDelay = MaxRetryCap - 20*time.Minute
)

// Config holds a Processor's collaborators.
type Config struct {
	Store       Store
	Outbox      Outbox
	DeadLetters DeadLetters
	Visibility  Visibility
	Routes      Routes
	// Forward are the FORWARD routes: an event they take gets one outbox
	// row per route (package forward) in its plan, beside its handler's
	// parts, committed and delivered with them.
	Forward forward.Routes
	// MaxReceiveCount is the main queue's redrive maxReceiveCount: a failure
	// on that receive is the last one, so the event is marked dead.
	MaxReceiveCount int
	// Concurrency bounds the records of a batch processed at once.
	Concurrency int
	// Margin is kept back before the invocation's deadline: no record is
	// claimed and every handler's context ends this long before it, so the
	// failures are recorded and the batch response returned in time. It is
	// capped at a quarter of the time an invocation starts with.
	Margin time.Duration
	// RetryBase and RetryCap shape the backoff of a transient failure on
	// receive n: a delay drawn from [d/2, d] with d = min(RetryCap,
	// RetryBase·2^(n-1)).
	RetryBase, RetryCap time.Duration
	// MaxAttempts bounds the claims of one event over all its messages
	// (provider retries and sweeps each bring a fresh receive count): an
	// event claimed more often is made dead without running its handler
	// again. Zero means 3 × MaxReceiveCount.
	MaxAttempts int
	// Lease is how long a claim lasts when the context has no deadline.
	// With a deadline (always, in Lambda) the lease ends shortly after it.
	Lease  time.Duration
	Logger *slog.Logger
	// Metrics, if it has a namespace, makes each record's log line publish
	// the Records metric (see metricAttrs).
	Metrics obs.Metrics
	Now     func() time.Time
	// Rand returns a number in [0, 1) for the backoff's jitter.
	Rand func() float64
}

// Processor is the processor Lambda's handler.
type Processor struct {
	cfg Config
	// ahead and aheadStore are the outbox and the store as they put
	// forwarding rows' entries before the commit and commit the rows
	// delivered; nil unless both can (record.putsAhead).
	ahead      aheadPutter
	aheadStore deliveredCommitter
}

// New returns a processor; Store, Outbox, DeadLetters, Visibility, Routes
// and Logger are required.
func New(cfg Config) (*Processor, error) {
	if cfg.Store == nil || cfg.Outbox == nil || cfg.DeadLetters == nil || cfg.Visibility == nil || cfg.Routes == nil || cfg.Logger == nil {
		return nil, errors.New("processor: incomplete config")
	}
	if cfg.MaxReceiveCount < 1 {
		return nil, errors.New("processor: MaxReceiveCount must be at least 1")
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3 * cfg.MaxReceiveCount
	}
	if cfg.Margin == 0 {
		cfg.Margin = DefaultMargin
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryCap == 0 {
		cfg.RetryCap = DefaultRetryCap
	}
	switch {
	case cfg.Concurrency < 1:
		return nil, errors.New("processor: Concurrency must be at least 1")
	case cfg.MaxAttempts < cfg.MaxReceiveCount:
		return nil, errors.New("processor: MaxAttempts must be at least MaxReceiveCount")
	case cfg.Margin < 0:
		return nil, errors.New("processor: Margin must not be negative")
	case cfg.RetryBase < time.Second || cfg.RetryCap < time.Second || cfg.RetryCap > MaxRetryCap:
		// A cap below the base is allowed (template.yaml cannot refuse
		// it): every backoff is then the cap.
		return nil, fmt.Errorf("processor: want RetryBase (%s) of 1s or more, and RetryCap (%s) from 1s to %s", cfg.RetryBase, cfg.RetryCap, MaxRetryCap)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = mrand.Float64
	}
	p := &Processor{cfg: cfg}
	ahead, ok := cfg.Outbox.(aheadPutter)
	if store, ok2 := cfg.Store.(deliveredCommitter); ok && ok2 {
		p.ahead, p.aheadStore = ahead, store
	}
	return p, nil
}

// leaseMargin outlives the invocation so a lease never ends while its
// worker can still commit; a crashed worker's lease ends this long after
// its deadline.
const leaseMargin = 10 * time.Second

// Record outcomes beyond inbox.Outcome, for logs.
const (
	logAlreadyProcessed = "already_processed"
	logAlreadyDead      = "already_dead"
	logClaimed          = "claimed_elsewhere"
	logNotDue           = "not_due"
	logLeaseLost        = "lease_lost"
	logRetry            = "retry"
	logDead             = "dead"
	logPoison           = "poison"
	logOrphan           = "orphan"
	logUnstarted        = "unstarted"
	logUnfinished       = "unfinished"
	logToSweep          = "left_to_sweep"
	// logRedrive: on the last receive, the event could not be confirmed
	// dead; the record is reported so that SQS's redrive moves it to the
	// DLQ (see Processor.dead).
	logRedrive = "redrive_unconfirmed"
)

// invocation is what the records of one batch share.
type invocation struct {
	// ownerPrefix is unique per invocation: the Lambda request id, or a
	// random token where there is none.
	ownerPrefix string
	leaseUntil  func(now time.Time) time.Time
	// stop is when claiming stops and handlers are cancelled; report is
	// when the batch response is returned, whatever is still running. Both
	// are zero when the context has no deadline.
	stop, report time.Time
}

func (p *Processor) invocation(ctx context.Context) invocation {
	inv := invocation{ownerPrefix: obs.RequestID(ctx)}
	if inv.ownerPrefix == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		inv.ownerPrefix = "worker-" + hex.EncodeToString(b[:])
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		inv.leaseUntil = func(now time.Time) time.Time { return now.Add(p.cfg.Lease) }
		return inv
	}
	inv.leaseUntil = func(time.Time) time.Time { return deadline.Add(leaseMargin) }
	margin := min(p.cfg.Margin, time.Until(deadline)/4)
	inv.stop = deadline.Add(-margin)
	inv.report = deadline.Add(-margin / 2)
	return inv
}

// recordResult is what became of one record.
type recordResult struct {
	key       inbox.Key
	eventType string
	outcome   string
	// retry reports the record as a batch item failure: SQS delivers it
	// again (after the delay the record set), or moves it to the DLQ.
	retry bool
	err   error
	// outbox is what delivery left of the event's outbox rows, if it has
	// any: "settled" or "pending".
	outbox string
	// attempt is the event's attempt count after this record's claim, 0
	// when it claimed nothing.
	attempt int
}

type finished struct {
	i   int
	res recordResult
}

// job is one record of a batch as its goroutine works on it.
type job struct {
	rec events.SQSMessage
	// owner is the lease token: unique per invocation and record, even
	// when SQS delivers one message twice in a batch.
	owner string
	// deadTried is set before the record writes its event dead: a record
	// still running at the deadline may then have made it dead.
	deadTried atomic.Bool
}

// Handle processes an SQS batch, Concurrency records at a time, and reports
// the records to retry. It never fails the whole batch for one record, and
// it returns before the invocation's deadline: records it had no time to
// start or finish are reported for retry (acknowledged on their last
// receive, for the sweep).
func (p *Processor) Handle(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	log := obs.WithRequest(ctx, p.cfg.Logger)
	inv := p.invocation(ctx)
	var work context.Context
	var cancel context.CancelFunc
	book := context.WithoutCancel(ctx)
	var report <-chan time.Time
	if inv.stop.IsZero() {
		work, cancel = context.WithCancel(ctx)
	} else {
		var cancelBook context.CancelFunc
		work, cancel = context.WithDeadline(ctx, inv.stop)
		book, cancelBook = context.WithDeadline(book, inv.report)
		defer cancelBook()
		t := time.NewTimer(time.Until(inv.report))
		defer t.Stop()
		report = t.C
	}
	defer cancel()

	n := len(e.Records)
	jobs := make([]*job, n)
	for i, rec := range e.Records {
		jobs[i] = &job{rec: rec, owner: fmt.Sprintf("%s/%s/%d", inv.ownerPrefix, rec.MessageId, i)}
	}
	results := make([]*recordResult, n)
	starts := make([]time.Time, n)
	done := make(chan finished, n)
	sem := make(chan struct{}, p.cfg.Concurrency)
	started := 0
launch:
	for i := range e.Records {
		select {
		case sem <- struct{}{}:
		case <-work.Done():
			break launch
		}
		if work.Err() != nil {
			break
		}
		started++
		starts[i] = p.cfg.Now()
		go func() {
			defer func() { <-sem }()
			done <- finished{i, p.record(work, book, inv, jobs[i])}
		}()
	}
collect:
	for range started {
		select {
		case f := <-done:
			results[f.i] = &f.res
		case <-report:
			break collect
		}
	}

	var resp events.SQSEventResponse
	for i, rec := range e.Records {
		res := results[i]
		if res == nil {
			res = p.cutOff(rec, !starts[i].IsZero(), jobs[i].deadTried.Load())
		}
		attrs := []any{
			"message_id", rec.MessageId,
			"receive_count", rec.Attributes["ApproximateReceiveCount"],
			"source", res.key.Source,
			"event_key", res.key.String(),
			"event_type", res.eventType,
			"outcome", res.outcome,
		}
		if !starts[i].IsZero() {
			attrs = append(attrs, "duration_ms", float64(p.cfg.Now().Sub(starts[i]).Microseconds())/1000)
		}
		if res.outbox != "" {
			attrs = append(attrs, "outbox", res.outbox)
		}
		if res.attempt > 0 {
			attrs = append(attrs, "attempt", res.attempt)
		}
		if res.err != nil {
			attrs = append(attrs, "error", res.err.Error())
		}
		attrs = append(attrs, p.metricAttrs(res)...)
		switch {
		case res.retry:
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			log.Warn("record", attrs...)
		case res.err != nil:
			log.Error("record", attrs...)
		default:
			log.Info("record", attrs...)
		}
	}
	return resp, nil
}

// metricAttrs publishes one Records count per record, by Source (of a
// stored event; "unknown" for a message whose event was not read) and
// Outcome (the line's outcome: applied, ignored, duplicate_effect, stale,
// retry for a failed attempt, dead, unstarted and unfinished for the
// deadline's cut-offs, poison, orphan…), by Outcome alone and in all (the dead rate's denominator); with the
// claim's Attempt, and CommitConflicts when the commit gave up on
// concurrent transactions.
func (p *Processor) metricAttrs(res *recordResult) []any {
	if p.cfg.Metrics.Namespace == "" {
		return nil
	}
	src := "unknown"
	if res.eventType != "" {
		src = res.key.Source
	}
	metrics := []obs.Metric{obs.Count("Records")}
	if res.attempt > 0 {
		metrics = append(metrics, obs.Metric{Name: "Attempt", Unit: obs.UnitNone, Value: float64(res.attempt)})
	}
	if errors.Is(res.err, inbox.ErrConflict) {
		metrics = append(metrics, obs.Count("CommitConflicts"))
	}
	return p.cfg.Metrics.Attrs(
		[]obs.Dimension{{Name: "Source", Value: src}, {Name: "Outcome", Value: res.outcome}},
		[][]string{{"Source", "Outcome"}, {"Outcome"}, {}},
		metrics...)
}

// cutOff is the result of a record the invocation's deadline stopped:
// never started, or still running when the batch response was due (its
// handler is cancelled and commits nothing; its lease ends shortly after
// the deadline). It is retried. On its last receive it is acknowledged
// instead, its event unfinished for the sweep (leased, at worst, until
// shortly after the deadline) — unless the record had begun to write its
// event dead: then it may be dead without its DLQ copy, so it is reported
// and SQS's redrive makes the copy (if the write did not land, the event is
// unfinished and the sweep brings it back).
func (p *Processor) cutOff(rec events.SQSMessage, started, deadTried bool) *recordResult {
	res := &recordResult{outcome: logUnstarted, retry: true, err: errors.New("not started before the invocation's deadline margin")}
	if started {
		res.outcome, res.err = logUnfinished, errors.New("still running at the invocation's deadline margin")
	}
	if msg, err := inbox.DecodeMessage(rec.Body); err == nil {
		res.key = msg.Key
	}
	if p.last(rec) && !deadTried {
		res.outcome, res.retry = logToSweep, false
	}
	return res
}
