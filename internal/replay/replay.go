// Package replay gives operators their way back from failure, and the
// scheduled sweep its way to events nothing else would bring back.
//
//   - drain-dlq moves messages from the dead-letter queue to the main queue.
//     Each one's dead event is revived first (dead is final otherwise): it
//     passes through the same claim and effect controls as any delivery, so
//     a replay never applies an effect twice.
//   - sweep re-enqueues unfinished events that are overdue: stored but never
//     queued (the enqueue failed and the provider did not retry), or whose
//     message was lost or acknowledged for the sweep. It reads only the
//     unfinished-events index.
//
// Every run is a dry run unless the request says "dry_run": false.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
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
	Revive(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	Overdue(ctx context.Context, cutoff time.Time, limit int) ([]inboxstore.Pending, error)
	Oldest(ctx context.Context) (inboxstore.Pending, bool, error)
	Reschedule(ctx context.Context, k inbox.Key, was, due time.Time) (bool, error)
	Fail(ctx context.Context, k inbox.Key, f inbox.Failure, now time.Time) (inbox.Event, error)
}

// Request is the console or CLI test event, or the sweep's schedule.
//
//	{"action": "drain-dlq", "dry_run": false, "limit": 100}
//	{"action": "sweep", "dry_run": false, "older_than_seconds": 300}
//
// dry_run defaults to true: nothing moves unless it is false.
type Request struct {
	Action string `json:"action"`
	DryRun *bool  `json:"dry_run"`
	Limit  int    `json:"limit"`
	// OlderThanSeconds overrides the sweep's threshold (SWEEP_AFTER_SECONDS).
	OlderThanSeconds int `json:"older_than_seconds,omitempty"`
}

// Summary is the JSON the invocation returns.
type Summary struct {
	Action string `json:"action"`
	DryRun bool   `json:"dry_run"`
	// Examined counts the DLQ messages (drain) or overdue events (sweep)
	// looked at; Moved those sent to the main queue (and, for drain,
	// deleted from the DLQ).
	Examined int `json:"examined"`
	Moved    int `json:"moved"`
	// Events lists the event keys examined, the first MaxListed of them.
	Events []string `json:"events"`
	// Unreadable counts DLQ messages that are not ours; Orphans those whose
	// event does not exist. Both are left in the DLQ for an operator, never
	// cycled through the main queue.
	Unreadable int `json:"unreadable"`
	Orphans    int `json:"orphans,omitempty"`
	// Processed counts DLQ messages whose event is processed: deleted.
	Processed int `json:"processed,omitempty"`
	// Skipped counts overdue events another worker or sweep touched
	// between the sweep's read and its write: left to them.
	Skipped int `json:"skipped,omitempty"`
	// Dead counts overdue events the sweep made dead: their key cannot be
	// queued (stored before a rule it breaks).
	Dead int `json:"dead,omitempty"`
	// OldestUnfinished is the unfinished event received first, and its age.
	OldestUnfinished           string  `json:"oldest_unfinished,omitempty"`
	OldestUnfinishedAgeSeconds float64 `json:"oldest_unfinished_age_seconds,omitempty"`
	Error                      string  `json:"error,omitempty"`
}

// Limits of one invocation.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
	// MaxListed bounds Summary.Events, so the console can show it.
	MaxListed = 100
	// hold keeps examined messages invisible for the rest of the run, so a
	// dry run does not count one message twice.
	hold int32 = 120
	// reserve is the time kept back before the invocation's deadline.
	reserve = 10 * time.Second
	// DefaultSweepAfter is the sweep's threshold when none is configured.
	DefaultSweepAfter = 5 * time.Minute
)

// The actions.
const (
	ActionDrainDLQ = "drain-dlq"
	ActionSweep    = "sweep"
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
}

// ErrBadRequest wraps problems with the request itself.
var ErrBadRequest = errors.New("replay: bad request")

// Handle runs one request. An unknown action or an out-of-range limit is an
// error; a failure part-way returns the summary so far with Error set.
func (r *Replayer) Handle(ctx context.Context, req Request) (Summary, error) {
	if req.Action == "" {
		req.Action = ActionDrainDLQ
	}
	if req.Action != ActionDrainDLQ && req.Action != ActionSweep {
		return Summary{}, fmt.Errorf("%w: unknown action %q (want %q or %q)", ErrBadRequest, req.Action, ActionDrainDLQ, ActionSweep)
	}
	if req.Limit == 0 {
		req.Limit = DefaultLimit
	}
	if req.Limit < 0 || req.Limit > MaxLimit {
		return Summary{}, fmt.Errorf("%w: limit %d: want 1..%d", ErrBadRequest, req.Limit, MaxLimit)
	}
	if req.OlderThanSeconds < 0 || req.OlderThanSeconds > maxOlderThan || (req.OlderThanSeconds > 0 && req.Action != ActionSweep) {
		return Summary{}, fmt.Errorf("%w: older_than_seconds %d: a positive number up to %d, for sweep only", ErrBadRequest, req.OlderThanSeconds, maxOlderThan)
	}
	s := Summary{Action: req.Action, DryRun: req.DryRun == nil || *req.DryRun, Events: []string{}}
	var err error
	switch req.Action {
	case ActionDrainDLQ:
		err = r.drain(ctx, req.Limit, &s)
	case ActionSweep:
		err = r.sweep(ctx, req, &s)
	}
	if err != nil {
		s.Error = err.Error()
	}
	attrs := []any{"action", s.Action, "dry_run", s.DryRun, "examined", s.Examined,
		"moved", s.Moved, "unreadable", s.Unreadable, "orphans", s.Orphans, "processed", s.Processed, "skipped", s.Skipped, "dead", s.Dead}
	if s.Action == ActionSweep {
		attrs = append(attrs, "oldest_unfinished", s.OldestUnfinished, "oldest_unfinished_age_seconds", s.OldestUnfinishedAgeSeconds)
	}
	if s.Error != "" {
		r.Logger.Error("replay", append(attrs, "error", s.Error)...)
	} else {
		r.Logger.Info("replay", attrs...)
	}
	return s, nil
}

func (r *Replayer) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (s *Summary) list(k inbox.Key) {
	if len(s.Events) < MaxListed {
		s.Events = append(s.Events, k.String())
	}
}

// outOfTime reports whether the invocation must stop to answer in time:
// the summary is the operator's only record of what moved.
func outOfTime(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < reserve {
		return errors.New("stopped before the function's timeout: invoke again to continue")
	}
	return nil
}

func (r *Replayer) drain(ctx context.Context, limit int, s *Summary) error {
	var held []string // receipt handles to release at the end of the run
	defer func() {
		for _, h := range held {
			// Best effort: an unreleased message reappears after hold anyway.
			_ = r.DLQ.Release(context.WithoutCancel(ctx), h)
		}
	}()
	seen := map[string]bool{}
	for s.Examined < limit {
		if err := outOfTime(ctx); err != nil {
			return err
		}
		n := int32(min(10, limit-s.Examined))
		msgs, err := r.DLQ.Receive(ctx, n, hold, 0)
		if err != nil {
			return err
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.ID] {
				held = append(held, m.ReceiptHandle)
				continue
			}
			seen[m.ID] = true
			fresh++
			s.Examined++
			move, err := r.drainOne(ctx, m, s)
			if err != nil {
				held = append(held, m.ReceiptHandle)
				return err
			}
			if !move {
				held = append(held, m.ReceiptHandle)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// drainOne handles one DLQ message and reports whether it left the DLQ.
// Its event is revived before the message moves: if the move then fails,
// the event is unfinished and due, and the sweep re-enqueues it.
func (r *Replayer) drainOne(ctx context.Context, m queue.Message, s *Summary) (bool, error) {
	msg, err := inbox.DecodeMessage(m.Body)
	if err != nil {
		s.Unreadable++
		return false, nil
	}
	k := msg.Key
	s.list(k)
	now := r.now()
	if s.DryRun {
		ev, err := r.Store.Get(ctx, k, now)
		switch {
		case errors.Is(err, inbox.ErrNotFound):
			s.Orphans++
		case err != nil:
			return false, fmt.Errorf("look up %s: %w", k, err)
		case ev.Status == inbox.StatusProcessed:
			s.Processed++
		}
		return false, nil
	}
	_, err = r.Store.Revive(ctx, k, now)
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		s.Orphans++
		return false, nil
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		s.Processed++
		if err := r.DLQ.Delete(ctx, m.ReceiptHandle); err != nil {
			return false, fmt.Errorf("delete %s: %w", m.ID, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("revive %s: %w", k, err)
	}
	if err := r.Main.Send(ctx, m.Body); err != nil {
		return false, fmt.Errorf("move %s: %w", m.ID, err)
	}
	if err := r.DLQ.Delete(ctx, m.ReceiptHandle); err != nil {
		// Sent but not deleted: the next drain sends it again, which the
		// processor's claim absorbs.
		return true, fmt.Errorf("delete %s: %w", m.ID, err)
	}
	s.Moved++
	return true, nil
}

// sweep re-enqueues the unfinished events overdue by more than the
// threshold. Each is rescheduled before it is sent, conditioned on nothing
// having touched it since the read: two sweeps never both send one event,
// and one whose send fails is tried again later.
//
// An event still unfinished after a re-enqueue is most likely waiting in a
// deep queue, where another copy only deepens the backlog. So the next
// re-enqueue waits longer the older the event is (see resweep): an event
// gets a few copies over its life, not one every sweep.
func (r *Replayer) sweep(ctx context.Context, req Request, s *Summary) error {
	after := r.SweepAfter
	if req.OlderThanSeconds > 0 {
		after = time.Duration(req.OlderThanSeconds) * time.Second
	}
	if after <= 0 {
		after = DefaultSweepAfter
	}
	now := r.now()
	oldest, ok, err := r.Store.Oldest(ctx)
	if err != nil {
		return err
	}
	if ok {
		s.OldestUnfinished = oldest.Key.String()
		s.OldestUnfinishedAgeSeconds = now.Sub(oldest.ReceivedAt).Seconds()
	}
	overdue, err := r.Store.Overdue(ctx, now.Add(-after), req.Limit)
	if err != nil {
		return err
	}
	for _, p := range overdue {
		if err := outOfTime(ctx); err != nil {
			return err
		}
		s.Examined++
		s.list(p.Key)
		if s.DryRun {
			continue
		}
		ok, err := r.Store.Reschedule(ctx, p.Key, p.DueAt, now.Add(resweep(now.Sub(p.ReceivedAt))))
		if err != nil {
			return err
		}
		if !ok {
			s.Skipped++
			continue
		}
		body, err := inbox.EncodeMessage(p.Key)
		if err != nil {
			// Stored before a rule its key breaks: no message can point at
			// it, so it can never be processed. It ends dead, with the
			// reason, rather than unfinished forever.
			cause := fmt.Sprintf("sweep: its key cannot be queued: %v", err)
			_, ferr := r.Store.Fail(ctx, p.Key, inbox.Failure{Status: inbox.StatusDead, Cause: cause}, now)
			switch {
			case ferr == nil:
				s.Dead++
				// No message can carry this key, so none goes to the DLQ:
				// the log line is the operator's record.
				r.Logger.Error("sweep made an event dead", "event_key", obs.Clip(p.Key.String(), obs.ClipBytes), "error", cause)
			case errors.Is(ferr, inbox.ErrClaimed), errors.Is(ferr, inbox.ErrAlreadyProcessed),
				errors.Is(ferr, inbox.ErrDead), errors.Is(ferr, inbox.ErrNotFound):
				s.Skipped++
			default:
				return fmt.Errorf("mark %s dead: %w", p.Key, ferr)
			}
			continue
		}
		if err := r.Main.Send(ctx, body); err != nil {
			return fmt.Errorf("enqueue %s: %w", p.Key, err)
		}
		s.Moved++
	}
	return nil
}

// maxOlderThan bounds older_than_seconds: a year, longer than any event
// waits unfinished.
const maxOlderThan = 366 * 24 * 3600

// maxResweep bounds the wait between two re-enqueues of one event.
const maxResweep = time.Hour

// resweep is how long after a re-enqueue an event of the given age is due
// again (the threshold comes on top): its age, at most maxResweep. Copies
// come at ages of about 1, 2, 4, 8… thresholds, then hourly.
func resweep(age time.Duration) time.Duration {
	return min(max(age, 0), maxResweep)
}

// DecodeRequest reads the invocation payload; an empty payload is a dry run
// with the defaults.
func DecodeRequest(payload []byte) (Request, error) {
	var req Request
	if strings.TrimSpace(string(payload)) == "" {
		return req, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return req, nil
}
