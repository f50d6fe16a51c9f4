package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
)

// drain moves the DLQ's messages back to the main queue, up to max of
// them. Messages it leaves (poison, orphans, filtered, dry run) are held
// invisible for longer than the run can last, so none is counted twice,
// and made visible again at the end, as far as the time left allows (one
// not released reappears when its hold ends).
func (u *run) drain() error {
	var held []string
	defer func() { u.release(held) }()
	seen := map[string]bool{}
	visibility := u.hold()
	for u.s.Examined < u.q.max {
		if err := u.outOfTime(); err != nil {
			return err
		}
		n := int32(min(10, u.q.max-u.s.Examined))
		// A long poll of a second: a short one may answer empty from a
		// queue that is not.
		msgs, err := u.r.DLQ.Receive(u.ctx, n, visibility, 1)
		if err != nil {
			return fmt.Errorf("receive from the DLQ: %w", err)
		}
		fresh := 0
		for i, m := range msgs {
			if seen[m.ID] {
				held = append(held, m.ReceiptHandle)
				continue
			}
			if err := u.outOfTime(); err != nil {
				for _, rest := range msgs[i:] {
					held = append(held, rest.ReceiptHandle)
				}
				return err
			}
			seen[m.ID] = true
			fresh++
			u.s.Examined++
			gone, err := u.drainOne(m)
			if gone {
				u.left++
			} else {
				held = append(held, m.ReceiptHandle)
			}
			if err != nil {
				for _, rest := range msgs[i+1:] {
					held = append(held, rest.ReceiptHandle)
				}
				return err
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	u.s.Stopped = StoppedMax
	return nil
}

// hold is how long examined messages stay invisible: past the end of the
// run, so that none comes back to be counted twice.
func (u *run) hold() int32 {
	left, ok := u.remaining()
	if !ok {
		return maxHold
	}
	return int32(min(max(left+time.Minute, time.Minute), maxHold*time.Second) / time.Second)
}

// maxHold bounds the hold (SQS allows 12 hours).
const maxHold = 15 * 60

// release makes the held messages visible again, ten at a time, within
// half the reserve kept for the summary.
func (u *run) release(held []string) {
	if len(held) == 0 {
		return
	}
	ctx := context.WithoutCancel(u.ctx)
	if left, ok := u.remaining(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(left-u.reserve()/2, time.Second))
		defer cancel()
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(10, len(held)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range work {
				// Best effort: an unreleased message reappears after its hold.
				_ = u.r.DLQ.Release(ctx, h)
			}
		}()
	}
	for _, h := range held {
		if ctx.Err() != nil {
			break
		}
		work <- h
	}
	close(work)
	wg.Wait()
}

// drainOne handles one DLQ message and reports whether it left the DLQ.
// The event is made claimable before its message moves, and the message
// is deleted only after its copy is on the main queue: if the move fails
// part-way, the event is unfinished and due, and the sweep re-enqueues it.
func (u *run) drainOne(m queue.Message) (bool, error) {
	msg, err := inbox.DecodeMessage(m.Body)
	if err != nil {
		if len(u.s.Poison) < MaxListed {
			u.s.Poison = append(u.s.Poison, m.ID)
		}
		u.count(OutcomePoison, inbox.Key{})
		return false, nil
	}
	k := msg.Key
	now := u.r.now()
	ev, err := u.r.Store.Status(u.ctx, k, now)
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		u.count(OutcomeOrphan, k)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", k, err)
	case !u.q.matches(k, ev.Type, ev.ReceivedAt):
		u.count(OutcomeFiltered, inbox.Key{})
		return false, nil
	}
	if u.q.dryRun {
		u.count(would(ev, now, false), k)
		return false, nil
	}
	outcome := OutcomeProcessed
	if ev.Status != inbox.StatusProcessed {
		_, did, err := u.r.Store.Requeue(u.ctx, k, now, false)
		outcome = string(did)
		switch {
		case errors.Is(err, inbox.ErrAlreadyProcessed):
			outcome = OutcomeProcessed
		case errors.Is(err, inbox.ErrClaimed):
			// Another worker holds it: its message still moves, and the
			// claim decides who finishes it.
			outcome = OutcomeInProgress
		case errors.Is(err, inbox.ErrNotFound):
			u.count(OutcomeOrphan, k)
			return false, nil
		case err != nil:
			return false, fmt.Errorf("requeue %s: %w", k, err)
		}
	}
	if outcome != OutcomeProcessed {
		if err := u.r.Main.Send(u.ctx, m.Body); err != nil {
			return false, fmt.Errorf("move %s: %w", m.ID, err)
		}
		u.s.Moved++
	}
	if err := u.r.DLQ.Delete(u.ctx, m.ReceiptHandle); err != nil {
		// Sent but not deleted: the next drain finds it again, and the
		// processor's claim absorbs the second copy.
		u.count(outcome, k)
		return true, fmt.Errorf("delete %s: %w", m.ID, err)
	}
	u.count(outcome, k)
	return true, nil
}

// would is what requeueing ev would do (a dry run's outcome).
func would(ev inbox.Event, now time.Time, force bool) string {
	switch ev.Status {
	case inbox.StatusDead:
		return OutcomeRevived
	case inbox.StatusReceived, inbox.StatusFailed:
		return OutcomeMadeDue
	case inbox.StatusProcessing:
		if ev.LeaseUntil.Before(now) {
			return OutcomeClaimable
		}
		return OutcomeInProgress
	case inbox.StatusProcessed:
		switch {
		case !force:
			return OutcomeProcessed
		case ev.OutboxPending:
			return OutcomeOutboxPending
		}
		return OutcomeRerun
	}
	return string(ev.Status)
}
