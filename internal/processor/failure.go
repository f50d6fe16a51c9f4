package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// The failure rules: a record's receives, its backoff, a failed attempt,
// a dead event and its DLQ copy, and the answers for an event another
// worker holds or finished.

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
	stored, gerr := p.cfg.Store.Status(book, k, now)
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
