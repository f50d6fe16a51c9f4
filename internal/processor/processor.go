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
	"slices"
	"strconv"
	"strings"
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
	Get(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
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
	return &Processor{cfg: cfg}, nil
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

// receives is the record's ApproximateReceiveCount, 0 when it has none.
func receives(rec events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// last reports whether a failure reported for the record would move it to
// the DLQ. Lambda always sends the receive count; a record without one
// might be on its last receive, so it is treated as if it were (never
// reported unless its event is dead), but its event is not made dead for
// a transient error (see failed).
func (p *Processor) last(rec events.SQSMessage) bool {
	n := receives(rec)
	return n == 0 || n >= p.cfg.MaxReceiveCount
}

// record processes one record. work ends at the deadline margin; book
// outlives it, for recording what happened before the response is due.
func (p *Processor) record(work, book context.Context, inv invocation, j *job) recordResult {
	rec := j.rec
	msg, err := inbox.DecodeMessage(rec.Body)
	if err != nil {
		// Not a message of ours: straight to the DLQ for an operator,
		// rather than dropped or retried for nothing.
		res := recordResult{outcome: logPoison, err: err}
		if derr := p.cfg.DeadLetters.Send(book, rec.Body); derr != nil {
			res.retry, res.err = true, fmt.Errorf("%w; sending to DLQ: %w", err, derr)
		}
		return res
	}
	k := msg.Key
	owner := j.owner
	now := p.cfg.Now()
	ev, err := p.cfg.Store.Claim(work, k, owner, now, inv.leaseUntil(now))
	res := recordResult{key: k, eventType: ev.Type}
	if r, ok := p.notOurs(work, book, j, ev, err, res, err); ok {
		return r
	}
	switch {
	case errors.Is(err, inbox.ErrNotDue):
		// A copy of a failed event's message (a provider's retry) waits
		// for the event's backoff, as the failed message does.
		return p.notNow(book, rec, ev.RetryAt, res, logNotDue, err)
	case err != nil:
		return p.failed(work, book, j, k, res, err)
	}
	res.attempt = ev.Attempts
	if tries := ev.Attempts - ev.RevivedAttempts; tries > p.cfg.MaxAttempts {
		return p.dead(work, book, j, k, res, fmt.Errorf("%d attempts, over the budget of %d: not tried again", tries, p.cfg.MaxAttempts))
	}

	plan, outcome, err := p.plan(work, ev)
	if err != nil {
		return p.failed(work, book, j, k, res, err)
	}
	outcome, plan, err = p.commit(work, ev, owner, plan, outcome)
	switch {
	case err == nil:
		res.outcome = string(outcome)
		if len(plan.Outbound) > 0 {
			// The rows as the store keeps them: in the event's scope.
			rows := make([]string, len(plan.Outbound))
			for i, o := range plan.Outbound {
				rows[i] = effects.ScopedKey(ev.PartScope(), o.Key)
			}
			return p.deliver(work, book, j, k, ev.OutboxGen, rows, res)
		}
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		// Committed by this worker (its answer lost) or by another that
		// took the event over: the stored event says which rows it has.
		res.outcome = logAlreadyProcessed
		if stored, gerr := p.cfg.Store.Get(book, k, p.cfg.Now()); gerr == nil {
			r, _ := p.notOurs(work, book, j, stored, err, res, err)
			return r
		}
	case errors.Is(err, inbox.ErrLeaseLost):
		// Another worker took the event over and answers for it now.
		res.outcome, res.err = logLeaseLost, err
		if !p.last(rec) {
			res.retry = true
			p.delay(book, rec, p.backoff(rec), &res)
		}
	default:
		return p.failed(work, book, j, k, res, err)
	}
	return res
}

// checkTargets refuses a plan whose outbound call names a target the
// outbox has no configuration for. Committed, its effects would be applied
// and the call would fail every attempt until its row died; refused, the
// event is dead with the reason, nothing applied, and replays once the
// target is configured.
func (p *Processor) checkTargets(plan effects.Plan) error {
	tl, ok := p.cfg.Outbox.(targetLister)
	if !ok || len(plan.Outbound) == 0 {
		return nil
	}
	known := tl.Targets()
	for _, o := range plan.Outbound {
		if !slices.Contains(known, o.Target) {
			return fmt.Errorf("the plan calls target %q, which is not configured (configured: %s)", o.Target, strings.Join(known, ", "))
		}
	}
	return nil
}

// plan runs the event's handler, adds the rows forwarding it (FORWARD),
// and checks the plan. A handler that panics fails permanently: a panic is
// a bug that retrying repeats. A handler's failure forwards nothing: the
// event is forwarded when it commits. The outcome speaks of the handler's
// parts only (business effects): an event forwarded and nothing else is
// ignored, its forwarding reported on its own (see forwardRows).
func (p *Processor) plan(ctx context.Context, ev inbox.Event) (plan effects.Plan, outcome inbox.Outcome, err error) {
	if h := p.cfg.Routes.Lookup(ev.Kind, ev.Type); h != nil {
		if plan, err = p.handle(ctx, h, ev); err != nil {
			return effects.Plan{}, "", err
		}
	}
	if routes := p.cfg.Forward.Match(ev.Key.Source, ev.Type); len(routes) > 0 {
		rows, err := forward.Outbound(ev, routes)
		if err != nil {
			return effects.Plan{}, "", effects.Permanent(fmt.Errorf("forwarding: %w", err))
		}
		plan.Outbound = append(plan.Outbound, rows...)
	}
	if err := plan.ValidateIn(ev.PartScope()); err != nil {
		return effects.Plan{}, "", effects.Permanent(fmt.Errorf("invalid plan: %w", err))
	}
	if err := p.checkTargets(plan); err != nil {
		return effects.Plan{}, "", effects.Permanent(err)
	}
	if business(plan) == 0 {
		return plan, inbox.OutcomeIgnored, nil
	}
	return plan, inbox.OutcomeApplied, nil
}

// forwardRows counts the plan's forwarding rows (FORWARD's: the only
// EventBridge rows; handlers' calls are HTTP).
func forwardRows(plan effects.Plan) int {
	n := 0
	for _, o := range plan.Outbound {
		if o.Action == effects.ActionEventBridge {
			n++
		}
	}
	return n
}

// business counts the plan's parts that are business effects: all but
// its forwarding rows.
func business(plan effects.Plan) int { return plan.Len() - forwardRows(plan) }

// handle runs a handler, a panic made a permanent failure.
func (p *Processor) handle(ctx context.Context, h effects.Handler, ev inbox.Event) (plan effects.Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = effects.Permanent(fmt.Errorf("handler panicked: %v", r))
		}
	}()
	return h(ctx, ev)
}

// commit writes the plan and marks the event processed. Parts the store
// refuses — facts and rows written already, stale updates — are dropped
// with the parts that belong to them, and the commit retried with the
// rest: the outcome is applied when some business part is left (a
// forwarding row is none), else stale when an update was refused, else
// duplicate_effect; an event with no business part to begin with stays
// ignored.
func (p *Processor) commit(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome) (inbox.Outcome, effects.Plan, error) {
	stale := false
	for range plan.Len() + 1 {
		err := p.cfg.Store.Complete(ctx, ev, owner, plan, outcome, p.cfg.Now())
		var refused *effects.RefusedError
		if !errors.As(err, &refused) {
			return outcome, plan, err
		}
		// An update refused with a fact it belongs to is that fact's
		// duplicate, not stale in its own right.
		plan, _ = plan.Drop(refused.Exists...)
		for _, id := range refused.Stale {
			if slices.Contains(plan.IDs(), id) {
				stale = true
				plan, _ = plan.Drop(id)
			}
		}
		if business(plan) == 0 && outcome != inbox.OutcomeIgnored {
			outcome = inbox.OutcomeDuplicateEffect
			if stale {
				outcome = inbox.OutcomeStale
			}
		}
	}
	return outcome, plan, errors.New("commit: refused parts did not settle")
}

// deliver sends the event's outbox rows after its commit. An outbox that
// does not settle (a receiver down, a row held by another worker, no time
// left) brings the record back when its earliest row is due; on the last
// receive the record is acknowledged, and the event, still in the sweep's
// index, is brought back by the sweep. It never makes anything dead: the
// event is processed.
func (p *Processor) deliver(work, book context.Context, j *job, k inbox.Key, gen int, rows []string, res recordResult) recordResult {
	st, err := p.cfg.Outbox.Deliver(work, book, k, gen, rows, j.owner)
	if err != nil {
		res.err = fmt.Errorf("outbox: %w", err)
	}
	if st.Settled {
		res.outbox = "settled"
		return res
	}
	res.outbox = "pending"
	if res.err == nil {
		res.err = errors.New("outbox not settled")
	}
	if p.last(j.rec) {
		return res
	}
	res.retry = true
	wait := st.Due.Sub(p.cfg.Now()) + time.Second
	p.delay(book, j.rec, min(max(wait, time.Second), p.cfg.RetryCap), &res)
	return res
}

// notNow handles an event that is not this record's to try now:
// another worker's live lease (that worker answers for it), or a failed
// event's backoff (its own message comes back then). The record comes back
// at until; on its last receive it is acknowledged (the holder's or the
// failed message, or the sweep, covers the event).
func (p *Processor) notNow(book context.Context, rec events.SQSMessage, until time.Time, res recordResult, outcome string, err error) recordResult {
	res.outcome, res.err = outcome, err
	if p.last(rec) {
		return res
	}
	res.retry = true
	wait := until.Sub(p.cfg.Now()) + time.Second
	p.delay(book, rec, min(max(wait, time.Second), p.cfg.RetryCap), &res)
	return res
}

// The reasons a dead event gives (its last_error) begin with what made it
// dead: an error that would recur every time, or a transient one on the
// message's last receive (the third kind names the attempt budget).
const (
	PermanentPrefix   = "permanent: "
	LastReceivePrefix = "on the message's last receive: "
)

// failed records a failed attempt. A permanent error, and any other error
// on the last receive, makes the event dead and copies its message to the
// DLQ; a transient one comes back after a backoff. A record cut off by the
// invocation's own deadline margin has done nothing wrong: it is never made
// dead for it, only released (due at once) and, on its last receive, left to
// the sweep.
func (p *Processor) failed(work, book context.Context, j *job, k inbox.Key, res recordResult, cause error) recordResult {
	rec := j.rec
	cut := work.Err() != nil && errors.Is(cause, work.Err())
	if cut {
		cause = fmt.Errorf("abandoned at the invocation's deadline margin: %w", cause)
	}
	permanent := !cut && (effects.IsPermanent(cause) || errors.Is(cause, inbox.ErrInvalid))
	last, counted := p.last(rec), receives(rec) > 0
	res.err = cause
	switch {
	case permanent:
		return p.dead(work, book, j, k, res, fmt.Errorf("%s%w", PermanentPrefix, cause))
	case last && counted && !cut:
		return p.dead(work, book, j, k, res, fmt.Errorf("%s%w", LastReceivePrefix, cause))
	}
	// Released for another try. On the last receive (or without a receive
	// count) the record is acknowledged below and the event left to the
	// sweep: due at once after a cut-off, after the backoff otherwise.
	wait := p.backoff(rec)
	if cut && last {
		wait = 0
	}
	now := p.cfg.Now()
	ev, err := p.cfg.Store.Fail(book, k, inbox.Failure{Owner: j.owner, Status: inbox.StatusFailed, Cause: cause.Error(), RetryAt: now.Add(wait), Refund: cut}, now)
	if r, ok := p.notOurs(work, book, j, ev, err, res, cause); ok {
		return r
	}
	if err != nil {
		res.err = fmt.Errorf("%w; recording failure: %w", cause, err)
	}
	if last {
		// Unfinished and due: the sweep sends it again with a fresh
		// budget, while its attempts count toward the event's own.
		res.outcome = logToSweep
		return res
	}
	res.outcome, res.retry = logRetry, true
	p.delay(book, rec, wait, &res)
	return res
}

// dead marks the event dead, by this message, and copies the message to
// the DLQ. When the store does not say whether the write landed, a
// consistent read decides; if that fails too, the record is reported on its
// last receive (SQS moves it to the DLQ: consistent if the write landed, and
// otherwise the event is still unfinished, so the sweep brings it back and
// it ends processed or dead) and retried after a backoff before it.
func (p *Processor) dead(work, book context.Context, j *job, k inbox.Key, res recordResult, cause error) recordResult {
	rec := j.rec
	now := p.cfg.Now()
	res.err = cause
	j.deadTried.Store(true)
	ev, err := p.cfg.Store.Fail(book, k, inbox.Failure{Owner: j.owner, Status: inbox.StatusDead, Cause: cause.Error(), MessageID: rec.MessageId}, now)
	if err == nil {
		res.outcome = logDead
		return p.toDLQ(book, rec, res)
	}
	if r, ok := p.notOurs(work, book, j, ev, err, res, fmt.Errorf("%w; marking dead: %w", cause, err)); ok {
		return r
	}
	res.err = fmt.Errorf("%w; marking dead: %w", cause, err)
	if errors.Is(err, inbox.ErrInvalid) {
		// Refused, so not written: the event is as it was, unfinished.
		return p.notDead(book, rec, res)
	}
	// The write may or may not have landed.
	stored, gerr := p.cfg.Store.Get(book, k, now)
	switch {
	case gerr == nil && stored.Status == inbox.StatusDead:
		gerr = inbox.ErrDead
	case gerr == nil && stored.Status == inbox.StatusProcessed:
		gerr = inbox.ErrAlreadyProcessed
	case gerr == nil:
		return p.notDead(book, rec, res)
	}
	if r, ok := p.notOurs(work, book, j, stored, gerr, res, res.err); ok {
		return r
	}
	if p.last(rec) {
		res.outcome, res.retry = logRedrive, true
		return res
	}
	return p.notDead(book, rec, res)
}

// notOurs ends a record whose event the store says is not this record's to
// work on: processed already (its outbox delivered, if it has not
// settled: a worker stopped after the commit, a receiver was down, or a
// commit landed whose answer was lost), dead (by this message: its DLQ
// copy is sent again), gone, or held by another worker's live lease (why
// is the error logged for it). ok is false for any other err, nil
// included.
func (p *Processor) notOurs(work, book context.Context, j *job, ev inbox.Event, err error, res recordResult, why error) (recordResult, bool) {
	rec := j.rec
	switch {
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		res.outcome = logAlreadyProcessed
		// Processed, so not dead, whatever write found it so: a record
		// still delivering at the deadline is not one whose dead write
		// may have landed (see cutOff).
		j.deadTried.Store(false)
		if ev.OutboxPending {
			return p.deliver(work, book, j, res.key, ev.OutboxGen, ev.OutboxRows, res), true
		}
	case errors.Is(err, inbox.ErrDead):
		res.outcome = logAlreadyDead
		if ev.DeadBy == rec.MessageId {
			// This message made the event dead and its copy to the DLQ
			// did not go through: send it now.
			return p.toDLQ(book, rec, res), true
		}
	case errors.Is(err, inbox.ErrNotFound):
		// Nothing is stored under the key (never was, or expired long
		// after it finished): no event to finish, nothing to retry.
		res.outcome = logOrphan
		if res.err == nil {
			res.err = err
		}
	case errors.Is(err, inbox.ErrClaimed):
		return p.notNow(book, rec, ev.LeaseUntil, res, logClaimed, why), true
	default:
		return res, false
	}
	return res, true
}

// notDead ends a record whose event could not be made dead and is still
// unfinished: retried after a backoff, or, on its last receive, left to the
// sweep.
func (p *Processor) notDead(book context.Context, rec events.SQSMessage, res recordResult) recordResult {
	if p.last(rec) {
		res.outcome = logToSweep
		return res
	}
	res.outcome, res.retry = logRetry, true
	p.delay(book, rec, p.backoff(rec), &res)
	return res
}

// toDLQ copies a dead event's message to the DLQ and acknowledges it. If
// the DLQ does not take it, the record is retried at once: its next receive
// finds the event dead by this message and sends it again, or SQS's
// redrive moves it.
func (p *Processor) toDLQ(book context.Context, rec events.SQSMessage, res recordResult) recordResult {
	if err := p.cfg.DeadLetters.Send(book, rec.Body); err != nil {
		res.retry = true
		res.err = errors.Join(res.err, fmt.Errorf("sending to DLQ: %w", err))
		p.delay(book, rec, 0, &res)
	}
	return res
}

// backoff is the delay before a record's next receive: exponential in the
// receive count, capped, with jitter over its upper half. Full jitter
// (anywhere in [0, d]) would let a few unlucky draws spend the whole
// redrive budget in minutes; drawing from [d/2, d] keeps the spread and
// guarantees the budget spans at least half its nominal window.
func (p *Processor) backoff(rec events.SQSMessage) time.Duration {
	d := min(p.cfg.RetryCap, maxDelay)
	if shift := max(receives(rec), 1) - 1; shift < 32 {
		d = min(d, p.cfg.RetryBase<<shift)
	}
	return d/2 + time.Duration(p.cfg.Rand()*float64(d/2))
}

// Window returns the shortest and longest time from a message's first
// receive to its last under the backoff, with maxReceiveCount receives.
func Window(base, limit time.Duration, maxReceiveCount int) (lo, hi time.Duration) {
	for n := 1; n < maxReceiveCount; n++ {
		d := min(limit, maxDelay)
		if n-1 < 32 {
			d = min(d, base<<(n-1))
		}
		lo += d / 2
		hi += d
	}
	return lo, hi
}

// delay hides the record's message for d; if that fails the message comes
// back after the queue's visibility timeout instead, which only costs time.
func (p *Processor) delay(book context.Context, rec events.SQSMessage, d time.Duration, res *recordResult) {
	if err := p.cfg.Visibility.Delay(book, rec.ReceiptHandle, min(d, maxDelay)); err != nil {
		res.err = errors.Join(res.err, fmt.Errorf("delaying the retry: %w", err))
	}
}
