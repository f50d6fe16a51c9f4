// Package replay gives operators their way back from failure, and the
// scheduled sweep its way to events nothing else would bring back. Each
// action is one JSON request (the Lambda console's test event or the
// CLI's payload) and one JSON summary.
//
//   - drain-dlq moves dead-letter messages back to the main queue, each
//     one's event made retryable first; a processed event's message is
//     deleted; poison (not ours) and orphans stay, reported.
//   - replay makes chosen events retryable and queues them: by key, or by
//     status and time of receipt through the unfinished-events index. A
//     processed event is re-run only with "force".
//   - sweep re-enqueues unfinished events that are overdue.
//   - inspect shows one event, what it wrote and its outbox rows.
//   - outbox lists the outbox rows for review; outbox-resolve and
//     outbox-resend end one.
//
// What every action keeps (the invariants; replay_test checks each):
//
//   - No bypass. Replay never writes an effect and never marks an event
//     processed: it only makes an event claimable (Store.Requeue) and sends
//     its message. The processor's claim and commit decide, so facts that
//     exist, ordering guards and final outbox rows are never written
//     twice, forced re-run included.
//   - Nothing stranded. An event leaves dead or processed only in one write
//     that puts it back in the unfinished index, due now, and that write
//     comes before its message is sent: if the send fails, the sweep sends
//     one. A DLQ message is deleted only after its event is processed, or
//     after its copy is on the main queue. A processed event whose outbox
//     has not settled is not re-run (the re-run's commit would take it out
//     of the sweep's hands with rows undelivered).
//   - Poison stays. A message that is not ours, or whose event is gone, is
//     never sent to the main queue and never deleted.
//   - A dry run writes nothing: it reads the table and receives DLQ
//     messages, which it makes visible again before it answers.
//   - Bounded and resumable. Every action stops at max items or before
//     the invocation's deadline, says why (Summary.Stopped) and gives the
//     request that continues (Summary.Next). Running a part again is safe:
//     a message sent twice is absorbed by the claim.
//
// Every run is a dry run unless the request says "dry_run": false, and a
// field the action does not take is an error, never ignored.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
)

// Source is the dead-letter queue.
type Source interface {
	Receive(ctx context.Context, max, visibility, wait int32) ([]queue.Message, error)
	Delete(ctx context.Context, receiptHandle string) error
	Release(ctx context.Context, receiptHandle string) error
}

// Target is the main queue.
type Target interface {
	Send(ctx context.Context, body string) error
}

// Store is the inbox as replay needs it; see inboxstore.Store.
type Store interface {
	Get(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	Status(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	Requeue(ctx context.Context, k inbox.Key, now time.Time, force bool) (inbox.Event, inboxstore.Requeued, error)
	Select(ctx context.Context, sel inboxstore.Selection, now time.Time) ([]inboxstore.Selected, string, error)
	Overdue(ctx context.Context, cutoff time.Time, limit int) ([]inboxstore.Pending, error)
	Oldest(ctx context.Context) (inboxstore.Pending, bool, error)
	Reschedule(ctx context.Context, k inbox.Key, was, quick, spaced time.Time) (bool, error)
	Fail(ctx context.Context, k inbox.Key, f inbox.Failure, now time.Time) (inbox.Event, error)
	Part(ctx context.Context, id string) (map[string]any, error)
	Row(ctx context.Context, key string) (outbox.Row, error)
	ForReview(ctx context.Context, limit int) ([]outbox.Row, error)
	ResolveRow(ctx context.Context, key, note string, now time.Time) (outbox.Row, error)
	ResendRow(ctx context.Context, key string, now time.Time) (outbox.Row, error)
}

var _ Store = (*inboxstore.Store)(nil)

// Limits of one invocation.
const (
	DefaultMax = 100
	MaxMax     = 10000
	// MaxListed bounds the keys and rows a summary lists, so the console
	// shows it whole.
	MaxListed = 100
	// MaxReviewCounted bounds the outbox rows for review the sweep counts
	// (its OutboxForReview gauge).
	MaxReviewCounted = 1000
	// maxParts bounds the parts inspect reads for one event.
	maxParts = 50
	// DefaultReserve is the time kept back before the invocation's
	// deadline to write the summary.
	DefaultReserve = 10 * time.Second
	// DefaultSweepAfter is the sweep's threshold when none is configured.
	DefaultSweepAfter = 5 * time.Minute
)

// The actions.
const (
	ActionDrainDLQ      = "drain-dlq"
	ActionReplay        = "replay"
	ActionSweep         = "sweep"
	ActionInspect       = "inspect"
	ActionOutbox        = "outbox"
	ActionOutboxResolve = "outbox-resolve"
	ActionOutboxResend  = "outbox-resend"
)

// Why a run stopped before the end of its work (Summary.Stopped).
const (
	StoppedMax  = "max"
	StoppedTime = "time"
)

// Replayer runs replay requests.
type Replayer struct {
	DLQ   Source
	Main  Target
	Store Store
	// SweepAfter is how long an unfinished event may be overdue before the
	// sweep re-enqueues it; zero means DefaultSweepAfter.
	SweepAfter time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
	// Remaining is the time left before the invocation must answer; nil
	// reads the context's deadline (none: no limit).
	Remaining func(context.Context) (time.Duration, bool)
	// Reserve is the time kept back for the summary; zero means
	// DefaultReserve.
	Reserve time.Duration
	// Metrics, if it has a namespace, makes each summary's log line
	// publish its metrics (see metricAttrs).
	Metrics obs.Metrics
	// Progress, if set, is called with the summary so far after each item
	// (the CLI prints it on long actions).
	Progress func(Summary)
}

// ErrBadRequest wraps problems with the request itself.
var ErrBadRequest = errors.New("replay: bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// Handle runs one request. A request that does not validate is an error
// (nothing is done); a failure part-way returns the summary so far with
// Error set and Next to continue.
func (r *Replayer) Handle(ctx context.Context, req Request) (Summary, error) {
	if req.Action == "" {
		req.Action = ActionDrainDLQ
	}
	q, err := req.check(r.now())
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Action: req.Action, DryRun: q.dryRun, Counts: map[string]int{}, Events: []string{}}
	run := &run{r: r, ctx: ctx, req: req, q: q, s: &s, started: time.Now()}
	switch req.Action {
	case ActionDrainDLQ:
		err = run.drain()
	case ActionReplay:
		err = run.replay()
	case ActionSweep:
		err = run.sweep()
	case ActionInspect:
		err = run.inspect()
	case ActionOutbox:
		err = run.outboxList()
	case ActionOutboxResolve, ActionOutboxResend:
		err = run.outboxEnd()
	}
	if errors.Is(err, errOutOfTime) {
		s.Stopped, err = StoppedTime, nil
	}
	if err != nil {
		s.Error = err.Error()
	}
	if (s.Stopped != "" || s.Error != "") && s.Next == nil {
		run.continuation()
	}
	r.log(s)
	return s, nil
}

// Invoke is the Lambda function's handler: it decodes the payload
// strictly (a misspelt "dry_run" is refused, never a silent dry run) and
// runs it. A request that does not validate is answered as refused, with
// nothing done, and is not an invocation error: an operator's typo must
// not page the functions' errors alarm, and the answer says what to fix.
func (r *Replayer) Invoke(ctx context.Context, payload json.RawMessage) (Summary, error) {
	req, err := DecodeRequest(payload)
	var s Summary
	if err == nil {
		s, err = r.Handle(ctx, req)
	}
	if err == nil || !errors.Is(err, ErrBadRequest) {
		return s, err
	}
	s = Summary{Action: req.Action, DryRun: req.DryRun == nil || *req.DryRun, Refused: err.Error()}
	r.Logger.Warn("replay refused", "action", s.Action, "refused", s.Refused)
	return s, nil
}

func (r *Replayer) log(s Summary) {
	attrs := []any{"action", s.Action, "dry_run", s.DryRun, "examined", s.Examined, "moved", s.Moved, "counts", s.Counts}
	if s.Stopped != "" {
		attrs = append(attrs, "stopped", s.Stopped)
	}
	if s.Action == ActionSweep {
		attrs = append(attrs, "oldest_unfinished", s.OldestUnfinished, "oldest_unfinished_age_seconds", s.OldestUnfinishedAgeSeconds,
			"outbox_for_review", s.OutboxForReview)
	}
	attrs = append(attrs, r.metricAttrs(s)...)
	if s.Error != "" {
		r.Logger.Error("replay", append(attrs, "error", s.Error)...)
	} else {
		r.Logger.Info("replay", attrs...)
	}
}

// metricAttrs publishes, by Action, the items a run Examined and the
// messages it Moved to the main queue; the sweep adds the gauges its
// schedule keeps current: OldestUnfinishedAge (0 with none unfinished)
// and OutboxForReview, the outbox rows waiting for an operator.
func (r *Replayer) metricAttrs(s Summary) []any {
	if r.Metrics.Namespace == "" || s.Action == "" {
		return nil
	}
	metrics := []obs.Metric{
		{Name: "Examined", Unit: obs.UnitCount, Value: float64(s.Examined)},
		{Name: "Moved", Unit: obs.UnitCount, Value: float64(s.Moved)},
	}
	if s.Action == ActionSweep && s.Error == "" {
		metrics = append(metrics,
			obs.Metric{Name: "OldestUnfinishedAge", Unit: obs.UnitSeconds, Value: s.OldestUnfinishedAgeSeconds},
			obs.Metric{Name: "OutboxForReview", Unit: obs.UnitCount, Value: float64(s.OutboxForReview)})
	}
	return r.Metrics.Attrs([]obs.Dimension{{Name: "Action", Value: s.Action}}, [][]string{{"Action"}}, metrics...)
}

func (r *Replayer) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// run is one request being carried out.
type run struct {
	r       *Replayer
	ctx     context.Context
	req     Request
	q       checked
	s       *Summary
	started time.Time
	// left counts the DLQ messages that left the DLQ (drain).
	left int
}

// continuation sets Summary.Next for a run that stopped or failed part-way,
// where running the same request again makes progress: a real sweep (what
// it sent is rescheduled) and a real drain that moved or deleted something
// (what it left stays behind). replay sets its own Next (a cursor, or the
// keys left). Anything else would show the same items again, and says why
// instead (Summary.Note).
func (u *run) continuation() {
	s := u.s
	switch {
	case s.Error != "" && (u.req.Action == ActionOutboxResolve || u.req.Action == ActionOutboxResend || u.req.Action == ActionInspect):
		return
	case u.q.dryRun && (u.req.Action == ActionDrainDLQ || u.req.Action == ActionSweep) && s.Stopped == StoppedMax:
		s.Note = fmt.Sprintf("a preview shows at most max (%d) items, the same ones each time: raise max (up to %d) to see more", u.q.max, MaxMax)
		return
	case u.q.dryRun && (u.req.Action == ActionDrainDLQ || u.req.Action == ActionSweep):
		s.Note = "a preview that stops part-way shows the same items first when run again"
		return
	case u.req.Action == ActionOutbox:
		s.Note = fmt.Sprintf("more rows are for review than max (%d): raise max (up to %d), or resolve and resend these first", u.q.max, MaxMax)
		return
	case u.req.Action == ActionDrainDLQ && u.left == 0 && s.Examined > 0 && s.Error == "":
		s.Note = "none of the messages examined could leave the DLQ (poison, orphans or outside the filters): raise max or change the filters to reach others"
		return
	}
	next := u.req
	s.Next = &next
}

// errOutOfTime stops a run before the invocation's deadline: the summary
// is the operator's only record of what moved.
var errOutOfTime = errors.New("stopped before the function's timeout")

func (u *run) outOfTime() error {
	if left, ok := u.remaining(); ok && left < u.reserve() {
		return errOutOfTime
	}
	return nil
}

// remaining is the time left before the invocation must answer, if it
// has a deadline.
func (u *run) remaining() (time.Duration, bool) {
	if u.r.Remaining != nil {
		return u.r.Remaining(u.ctx)
	}
	d, ok := u.ctx.Deadline()
	return time.Until(d), ok
}

func (u *run) reserve() time.Duration {
	if u.r.Reserve <= 0 {
		return DefaultReserve
	}
	return u.r.Reserve
}

// count records one item's outcome, lists its key and reports progress.
func (u *run) count(outcome string, k inbox.Key) {
	u.s.Counts[outcome]++
	if k != (inbox.Key{}) {
		u.s.list(k)
	}
	if u.r.Progress != nil {
		p := *u.s
		p.ElapsedSeconds = time.Since(u.started).Seconds()
		u.r.Progress(p)
	}
}

func (s *Summary) list(k inbox.Key) {
	if len(s.Events) < MaxListed {
		s.Events = append(s.Events, k.String())
	}
}

// send queues the event's message on the main queue.
func (u *run) send(k inbox.Key) error {
	body, err := inbox.EncodeMessage(k)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", k, err)
	}
	if err := u.r.Main.Send(u.ctx, body); err != nil {
		return fmt.Errorf("enqueue %s: %w", k, err)
	}
	u.s.Moved++
	return nil
}

// matches applies the request's filters to an event.
func (q checked) matches(k inbox.Key, eventType string, received time.Time) bool {
	switch {
	case q.source != "" && k.Source != q.source,
		q.account != nil && k.Account != *q.account,
		q.eventType != "" && eventType != q.eventType,
		!q.from.IsZero() && received.Before(q.from),
		!q.to.IsZero() && !received.Before(q.to):
		return false
	}
	return true
}
