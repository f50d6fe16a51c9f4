package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// sweep re-enqueues the unfinished events overdue by more than the
// threshold. Each is rescheduled before it is sent, conditioned on nothing
// having touched it since the read: two sweeps never both send one event,
// and one whose send fails is tried again later.
//
// The first copies after an event's last claim (inboxstore.QuickCopies)
// are sent each time it is overdue: such a copy is most likely lost (a
// worker stopped holding it on its last receive, or its receives ran out
// while another worker held the event). An event still unfinished after
// those is most likely waiting in a deep queue, or its processor is down,
// where another copy only deepens the backlog: the next re-enqueue waits
// longer the older the event is (see resweep), so it gets a few more copies
// over its life, not one every sweep.
func (u *run) sweep() error {
	after := u.r.SweepAfter
	if u.req.OlderThanSeconds > 0 {
		after = time.Duration(u.req.OlderThanSeconds) * time.Second
	}
	if after <= 0 {
		after = DefaultSweepAfter
	}
	s := u.s
	now := u.r.now()
	oldest, ok, err := u.r.Store.Oldest(u.ctx)
	if err != nil {
		return err
	}
	if ok {
		s.OldestUnfinished = oldest.Key.String()
		s.OldestUnfinishedAgeSeconds = now.Sub(oldest.ReceivedAt).Seconds()
	}
	review, err := u.r.Store.ForReview(u.ctx, MaxReviewCounted)
	if err != nil {
		return err
	}
	s.OutboxForReview = len(review)
	overdue, err := u.r.Store.Overdue(u.ctx, now.Add(-after), u.q.max)
	if err != nil {
		return err
	}
	if len(overdue) == u.q.max {
		// Possibly more: the next scheduled sweep takes them.
		s.Stopped = StoppedMax
	}
	for _, p := range overdue {
		if err := u.outOfTime(); err != nil {
			return err
		}
		s.Examined++
		if s.DryRun {
			u.count(OutcomeRequeued, p.Key)
			continue
		}
		ok, err := u.r.Store.Reschedule(u.ctx, p.Key, p.DueAt, now, now.Add(resweep(now.Sub(p.ReceivedAt))))
		if err != nil && !ok {
			return err
		}
		if err != nil {
			// Rescheduled, but its body not extended: the copy goes all
			// the same (its claim extends the body), then the run stops
			// with the error. Not sent, the event would wait a whole
			// reschedule with no copy on its way.
			if _, kerr := inbox.EncodeMessage(p.Key); kerr == nil {
				if serr := u.send(p.Key); serr != nil {
					return errors.Join(err, serr)
				}
				u.count(OutcomeRequeued, p.Key)
			}
			return err
		}
		if !ok {
			u.count(OutcomeSkipped, p.Key)
			continue
		}
		if _, err := inbox.EncodeMessage(p.Key); err != nil {
			// Stored before a rule its key breaks: no message can point at
			// it, so it can never be processed. It ends dead, with the
			// reason, rather than unfinished forever.
			cause := fmt.Sprintf("sweep: its key cannot be queued: %v", err)
			_, ferr := u.r.Store.Fail(u.ctx, p.Key, inbox.Failure{Status: inbox.StatusDead, Cause: cause}, now)
			switch {
			case ferr == nil:
				u.count(OutcomeDead, p.Key)
				// No message can carry this key, so none goes to the DLQ:
				// the log line is the operator's record.
				u.r.Logger.Error("sweep made an event dead", "event_key", obs.Clip(p.Key.String(), obs.ClipBytes), "error", cause)
			case errors.Is(ferr, inbox.ErrClaimed), errors.Is(ferr, inbox.ErrAlreadyProcessed),
				errors.Is(ferr, inbox.ErrDead), errors.Is(ferr, inbox.ErrNotFound):
				u.count(OutcomeSkipped, p.Key)
			default:
				return fmt.Errorf("mark %s dead: %w", p.Key, ferr)
			}
			continue
		}
		if err := u.send(p.Key); err != nil {
			return err
		}
		u.count(OutcomeRequeued, p.Key)
	}
	return nil
}

// maxResweep bounds the wait between two re-enqueues of one event.
const maxResweep = time.Hour

// resweep is how long after a re-enqueue an event of the given age is due
// again (the threshold comes on top): its age, at most maxResweep. Copies
// come at ages of about 1, 2, 4, 8… thresholds, then hourly.
func resweep(age time.Duration) time.Duration {
	return min(max(age, 0), maxResweep)
}
