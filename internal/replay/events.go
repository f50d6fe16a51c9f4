package replay

import (
	"errors"
	"fmt"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// selectPage is how many events replay selects at a time: a run stopped
// part-way through a page resumes at the page's start, and does its few
// events again (safely: a second message is absorbed by the claim).
const selectPage = 25

// replay makes the chosen events claimable and queues them: the keys the
// request names, or its status and time range through the index.
func (u *run) replay() error {
	if len(u.q.keys) > 0 {
		return u.replayKeys()
	}
	cur := u.req.Cursor
	resume := func() {
		next := u.req
		next.Cursor = cur
		u.s.Next = &next
	}
	for {
		if left := u.q.max - u.s.Examined; left <= 0 {
			u.s.Stopped = StoppedMax
			resume()
			return nil
		}
		if err := u.outOfTime(); err != nil {
			resume()
			return err
		}
		sel := inboxstore.Selection{Status: u.q.status, From: u.q.from, To: u.q.to, Cursor: cur, Limit: min(selectPage, u.q.max-u.s.Examined)}
		page, next, err := u.r.Store.Select(u.ctx, sel, u.r.now())
		if err != nil {
			resume()
			return err
		}
		for _, p := range page {
			if err := u.outOfTime(); err != nil {
				resume()
				return err
			}
			u.s.Examined++
			// The index's own copy of the type decides here when it has one
			// (an index built before it was projected has none: replayOne
			// reads the event and filters on its type).
			pre := u.q
			if p.EventType == "" {
				pre.eventType = ""
			}
			if !pre.matches(p.Key, p.EventType, p.ReceivedAt) {
				u.count(OutcomeFiltered, inbox.Key{})
				continue
			}
			if err := u.replayOne(p.Key); err != nil {
				resume()
				return err
			}
		}
		if next == "" {
			return nil
		}
		cur = next
	}
}

// replayKeys replays the named events in order; Next names those left.
func (u *run) replayKeys() error {
	for i, k := range u.q.keys {
		stop := func(why string, err error) error {
			next := u.req
			next.EventKeys = u.req.EventKeys[i:]
			u.s.Next, u.s.Stopped = &next, why
			return err
		}
		if u.s.Examined == u.q.max {
			return stop(StoppedMax, nil)
		}
		if err := u.outOfTime(); err != nil {
			return stop("", err)
		}
		u.s.Examined++
		if err := u.replayOne(k); err != nil {
			return stop("", err)
		}
	}
	return nil
}

// replayOne makes one event claimable and sends its message. The message
// follows the write, so an event whose send fails is due in the index and
// the sweep sends it.
func (u *run) replayOne(k inbox.Key) error {
	now := u.r.now()
	ev, err := u.r.Store.Status(u.ctx, k, now)
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		u.count(OutcomeOrphan, k)
		return nil
	case err != nil:
		return fmt.Errorf("look up %s: %w", k, err)
	case !u.q.matches(k, ev.Type, ev.ReceivedAt):
		u.count(OutcomeFiltered, inbox.Key{})
		return nil
	case u.q.dryRun:
		u.count(would(ev, now, u.req.Force), k)
		return nil
	}
	_, did, err := u.r.Store.Requeue(u.ctx, k, now, u.req.Force)
	switch {
	case errors.Is(err, inbox.ErrAlreadyProcessed):
		u.count(OutcomeProcessed, k)
		return nil
	case errors.Is(err, inbox.ErrOutboxPending):
		u.count(OutcomeOutboxPending, k)
		return nil
	case errors.Is(err, inbox.ErrClaimed):
		// Its holder answers for it, and the sweep if the holder stops.
		u.count(OutcomeInProgress, k)
		return nil
	case errors.Is(err, inbox.ErrNotFound):
		u.count(OutcomeOrphan, k)
		return nil
	case err != nil:
		return fmt.Errorf("requeue %s: %w", k, err)
	}
	if err := u.send(k); err != nil {
		return fmt.Errorf("%w (the event is due: the sweep queues it)", err)
	}
	u.count(string(did), k)
	return nil
}
