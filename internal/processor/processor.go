// Package processor applies stored events. For each SQS record it claims the
// event with a lease, runs the event's handler, and commits the handler's
// effect records together with the event's new status in one transaction.
// Only the records that need another try are reported back to SQS.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// Store is the inbox as the processor needs it; see inboxstore.Store for
// the contract of each method.
type Store interface {
	Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error)
	Complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now time.Time) error
	Fail(ctx context.Context, k inbox.Key, owner string, status inbox.Status, cause string, now time.Time) error
}

// DeadLetters receives the messages of events that failed permanently, so
// operators find every dead event in one place.
type DeadLetters interface {
	Send(ctx context.Context, body string) error
}

// Routes maps a source kind and an event type to its handler. Events with
// no handler are processed with outcome ignored.
type Routes map[string]map[string]effects.Handler

func (r Routes) lookup(kind, typ string) effects.Handler {
	return r[kind][typ]
}

// Config holds a Processor's collaborators.
type Config struct {
	Store       Store
	DeadLetters DeadLetters
	Routes      Routes
	// MaxReceiveCount is the main queue's redrive maxReceiveCount: a failure
	// on that receive is the last one, so the event is marked dead.
	MaxReceiveCount int
	// Lease is how long a claim lasts when the context has no deadline.
	// With a deadline (always, in Lambda) the lease ends shortly after it.
	Lease  time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Processor is the processor Lambda's handler.
type Processor struct {
	cfg Config
}

// New returns a processor; Store, DeadLetters, Routes and Logger are required.
func New(cfg Config) (*Processor, error) {
	if cfg.Store == nil || cfg.DeadLetters == nil || cfg.Routes == nil || cfg.Logger == nil {
		return nil, errors.New("processor: incomplete config")
	}
	if cfg.MaxReceiveCount < 1 {
		return nil, errors.New("processor: MaxReceiveCount must be at least 1")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
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
	logClaimed          = "claimed_elsewhere"
	logRetry            = "retry"
	logDead             = "dead"
	logPoison           = "poison"
	logOrphan           = "orphan"
)

// Handle processes an SQS batch and reports the records to retry. It never
// fails the whole batch for one record.
func (p *Processor) Handle(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	log := obs.WithRequest(ctx, p.cfg.Logger)
	for _, rec := range e.Records {
		start := p.cfg.Now()
		res := p.record(ctx, rec)
		attrs := []any{
			"message_id", rec.MessageId,
			"receive_count", rec.Attributes["ApproximateReceiveCount"],
			"source", res.key.Source,
			"event_key", res.key.String(),
			"event_type", res.eventType,
			"outcome", res.outcome,
			"duration_ms", float64(p.cfg.Now().Sub(start).Microseconds()) / 1000,
		}
		if res.err != nil {
			attrs = append(attrs, "error", res.err.Error())
		}
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

type recordResult struct {
	key       inbox.Key
	eventType string
	outcome   string
	retry     bool
	err       error
}

func (p *Processor) record(ctx context.Context, rec events.SQSMessage) recordResult {
	msg, err := inbox.DecodeMessage(rec.Body)
	if err != nil {
		// Not a message of ours: keep it (it reaches the DLQ after the
		// redrive limit) rather than drop what we cannot read.
		return recordResult{outcome: logPoison, retry: true, err: err}
	}
	k := msg.Key
	now := p.cfg.Now()
	owner := p.owner(ctx, rec)
	ev, err := p.cfg.Store.Claim(ctx, k, owner, now, p.leaseUntil(ctx, now))
	switch {
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		return recordResult{key: k, eventType: ev.Type, outcome: logAlreadyProcessed}
	case errors.Is(err, inbox.ErrClaimed):
		return recordResult{key: k, eventType: ev.Type, outcome: logClaimed, retry: true, err: err}
	case errors.Is(err, inbox.ErrNotFound):
		return recordResult{key: k, outcome: logOrphan, retry: true, err: err}
	case err != nil:
		return recordResult{key: k, outcome: logRetry, retry: true, err: err}
	}
	res := recordResult{key: k, eventType: ev.Type}

	h := p.cfg.Routes.lookup(ev.Kind, ev.Type)
	var plan effects.Plan
	outcome := inbox.OutcomeIgnored
	if h != nil {
		plan, err = h(ctx, ev)
		if err == nil {
			err = plan.Validate()
			if err != nil {
				err = effects.Permanent(fmt.Errorf("invalid plan: %w", err))
			}
		}
		if err != nil {
			return p.failed(ctx, rec, ev, owner, res, err)
		}
		outcome = inbox.OutcomeApplied
	}
	outcome, err = p.commit(ctx, ev, owner, plan, outcome)
	switch {
	case errors.Is(err, inbox.ErrLeaseLost):
		res.outcome, res.retry, res.err = logRetry, true, err
	case err != nil:
		return p.failed(ctx, rec, ev, owner, res, err)
	default:
		res.outcome = string(outcome)
	}
	return res
}

// commit writes the plan and marks the event processed. Records another
// event already wrote are dropped and the commit retried with the rest:
// the outcome is applied when at least one record was new, else
// duplicate_effect.
func (p *Processor) commit(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome) (inbox.Outcome, error) {
	for range len(plan.Records) + 1 {
		err := p.cfg.Store.Complete(ctx, ev, owner, plan, outcome, p.cfg.Now())
		var exists *effects.ExistsError
		if !errors.As(err, &exists) {
			return outcome, err
		}
		plan = plan.Without(exists.IDs)
		if len(plan.Records) == 0 {
			outcome = inbox.OutcomeDuplicateEffect
		}
	}
	return outcome, errors.New("commit: effect conflicts did not settle")
}

// failed records a failed attempt. Permanent errors and the last allowed
// receive make the event dead; a permanent error's message goes to the DLQ
// at once instead of being retried.
func (p *Processor) failed(ctx context.Context, rec events.SQSMessage, ev inbox.Event, owner string, res recordResult, cause error) recordResult {
	permanent := effects.IsPermanent(cause)
	receives, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	last := receives >= p.cfg.MaxReceiveCount
	status := inbox.StatusFailed
	if permanent || last {
		status = inbox.StatusDead
	}
	res.err = cause
	if err := p.cfg.Store.Fail(ctx, ev.Key, owner, status, cause.Error(), p.cfg.Now()); err != nil {
		res.outcome, res.retry, res.err = logRetry, true, fmt.Errorf("%w; recording failure: %w", cause, err)
		return res
	}
	if !permanent {
		res.outcome, res.retry = logRetry, true
		if last {
			res.outcome = logDead
		}
		return res
	}
	if err := p.cfg.DeadLetters.Send(ctx, rec.Body); err != nil {
		// The event is dead in the table; keep the message until the DLQ
		// takes it, so it is never lost from operators' view.
		res.outcome, res.retry, res.err = logRetry, true, fmt.Errorf("%w; sending to DLQ: %w", cause, err)
		return res
	}
	res.outcome = logDead
	return res
}

func (p *Processor) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.Add(leaseMargin)
	}
	return now.Add(p.cfg.Lease)
}

// owner names this attempt: the invocation and the message.
func (p *Processor) owner(ctx context.Context, rec events.SQSMessage) string {
	id := obs.RequestID(ctx)
	if id == "" {
		id = "local"
	}
	return id + "/" + rec.MessageId
}
