package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// One record's life: the handler's plan (checked against the configured
// targets), the commit, and the delivery of its outbox rows. The batch and
// its deadline are in processor.go, the failure rules in failure.go.

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
	if receives(rec) == 1 && !p.last(rec) {
		if res, done := p.first(work, book, j, k); done {
			return res
		}
	}
	now := p.cfg.Now()
	leaseEnd := inv.leaseUntil(now)
	ev, err := p.cfg.Store.Claim(work, k, owner, now, leaseEnd)
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
	var delivered []string
	recordPuts := func(bool) {}
	if !p.last(rec) {
		// Not on the last receive, where a commit failing after the put
		// would make the event dead: then the rows go after the commit.
		delivered, recordPuts = p.putAhead(work, ev, plan, leaseEnd)
	}
	outcome, plan, err = p.commit(plan, outcome, func(plan effects.Plan, outcome inbox.Outcome) error {
		if len(delivered) > 0 {
			return p.aheadStore.CompleteDelivered(work, ev, owner, plan, outcome, delivered, p.cfg.Now())
		}
		return p.cfg.Store.Complete(work, ev, owner, plan, outcome, p.cfg.Now())
	})
	recordPuts(err == nil)
	switch {
	case err == nil:
		return p.committed(work, book, j, ev, plan, delivered, outcome, res)
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		// Committed by this worker (its answer lost) or by another that
		// took the event over: the stored event says which rows it has.
		res.outcome = logAlreadyProcessed
		if stored, gerr := p.cfg.Store.Status(book, k, p.cfg.Now()); gerr == nil {
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

// first makes the first attempt at an event that nobody has tried yet
// (the first receive of a message; the event received, no attempt
// counted, no lease) without claiming it: it reads the event, runs the
// handler and commits, the commit fenced by the event being as it was
// stored (inboxstore.Store.CompleteFirst), which saves the claim's write.
// Handlers are pure, so a worker that runs one alongside another's claim
// only wastes the run: of two commits one is refused. When the attempt
// cannot finish that way — the event was claimed or tried already, the
// handler or the commit failed — it reports not done, and the record
// takes the claim's path, which counts the attempt (the handler runs
// again: it is pure) and records what happens. Its later receives always
// take that path, so an event whose processing stops the worker (a crash,
// a timeout) has its attempts counted from the second receive on.
//
// An event that a route forwarding ahead of the commit takes (putsAhead)
// takes the claim's path at once: its entry is put only under a lease.
func (p *Processor) first(work, book context.Context, j *job, k inbox.Key) (recordResult, bool) {
	ev, err := p.cfg.Store.Peek(work, k, p.cfg.Now())
	if err != nil || ev.Status != inbox.StatusReceived || ev.Attempts != 0 || ev.LeaseOwner != "" || p.putsAhead(ev) {
		return recordResult{}, false
	}
	plan, outcome, err := p.plan(work, ev)
	if err != nil {
		return recordResult{}, false
	}
	outcome, plan, err = p.commit(plan, outcome, func(plan effects.Plan, outcome inbox.Outcome) error {
		return p.cfg.Store.CompleteFirst(work, ev, plan, outcome, p.cfg.Now())
	})
	if err != nil {
		return recordResult{}, false
	}
	return p.committed(work, book, j, ev, plan, nil, outcome, recordResult{key: k, eventType: ev.Type, attempt: 1}), true
}

// committed is a record whose commit landed: its outbox rows, if any,
// delivered — but those delivered before the commit (the keys in
// delivered), which it wrote final.
func (p *Processor) committed(work, book context.Context, j *job, ev inbox.Event, plan effects.Plan, delivered []string, outcome inbox.Outcome, res recordResult) recordResult {
	res.outcome = string(outcome)
	if len(plan.Outbound) == 0 {
		return res
	}
	// The rows as the store keeps them: in the event's scope.
	rows := make([]string, 0, len(plan.Outbound))
	for _, o := range plan.Outbound {
		if !slices.Contains(delivered, o.Key) {
			rows = append(rows, effects.ScopedKey(ev.PartScope(), o.Key))
		}
	}
	if len(rows) == 0 {
		// Settled in the commit.
		res.outbox = "settled"
		return res
	}
	return p.deliver(work, book, j, ev.Key, ev.OutboxGen, rows, res)
}

// aheadPutter is an Outbox that can put forwarding rows' entries before
// their event's commit (outbox.Deliverer.Ahead).
type aheadPutter interface {
	Ahead(ctx context.Context, ev inbox.Event, rows []effects.Outbound, leaseEnd time.Time) (accepted []bool, record func(committed bool))
}

// deliveredCommitter is a Store that commits rows delivered before the
// commit (claimcheck.Store.CompleteDelivered).
type deliveredCommitter interface {
	CompleteDelivered(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, delivered []string, now time.Time) error
}

// putsAhead reports whether ev is taken by a FORWARD route whose entries
// are put before the commit: one that retries unknowns (its consumers
// dedupe on the event key), with an outbox and a store that can.
func (p *Processor) putsAhead(ev inbox.Event) bool {
	if p.ahead == nil {
		return false
	}
	for _, r := range p.cfg.Forward.Match(ev.Key.Source, ev.Type) {
		if r.RetryUnknown {
			return true
		}
	}
	return false
}

// putAhead puts, under the lease of the claim that read ev (until
// leaseEnd) and before its commit, the entries of the plan's forwarding
// rows whose routes retry unknowns, and returns the keys of the rows whose
// entries EventBridge accepted: the commit writes them delivered. A row
// the event's outbox has already (written by a run before a forced
// re-run, which the commit keeps as it is) is not put.
//
// The invariant it keeps with the commit (F1–F3 in docs/forwarding.md):
// a row is written delivered only for an entry accepted; an entry is put
// only while its worker holds the event's lease, before the commit that
// lease fences, so of racing messages only the holder puts it, and it is
// put again only after an attempt that did not commit (its worker
// stopped, its lease ran out, its commit failed), which such a route
// allows. The puts end with commitTime left before ctx's deadline, for
// the commit. record logs the rows once the caller knows whether its
// commit landed.
func (p *Processor) putAhead(ctx context.Context, ev inbox.Event, plan effects.Plan, leaseEnd time.Time) (delivered []string, record func(committed bool)) {
	record = func(bool) {}
	if !p.putsAhead(ev) {
		return nil, record
	}
	var rows []effects.Outbound
	for _, o := range plan.Outbound {
		if o.Action == effects.ActionEventBridge && !slices.Contains(ev.OutboxRows, effects.ScopedKey(ev.PartScope(), o.Key)) {
			rows = append(rows, o)
		}
	}
	if len(rows) == 0 {
		return nil, record
	}
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-commitTime))
		defer cancel()
	}
	accepted, record := p.ahead.Ahead(ctx, ev, rows, leaseEnd)
	for i, ok := range accepted {
		if ok {
			delivered = append(delivered, rows[i].Key)
		}
	}
	return delivered, record
}

// commitTime is kept, after the puts ahead of a commit, for the commit
// itself before the record's deadline: a put that ended at the deadline
// would leave no time to commit, and the next attempt would put again.
const commitTime = 3 * time.Second

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
func (p *Processor) commit(plan effects.Plan, outcome inbox.Outcome, complete func(effects.Plan, inbox.Outcome) error) (inbox.Outcome, effects.Plan, error) {
	stale := false
	for range plan.Len() + 1 {
		err := complete(plan, outcome)
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
