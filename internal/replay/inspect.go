package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// payloads is the store that can read a payload kept in its own object
// (claimcheck.Store).
type payloads interface {
	Payload(ctx context.Context, ev inbox.Event) ([]byte, error)
}

// inspect shows one event: its state and history, the facts and entities
// its commit wrote (as stored now) and its outbox rows with their states.
// Its payload only on request: summaries land in logs and consoles.
func (u *run) inspect() error {
	k := u.q.keys[0]
	ev, err := u.r.Store.Get(u.ctx, k, u.r.now())
	u.s.Examined = 1
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		u.count(OutcomeOrphan, k)
		return fmt.Errorf("no event is stored under %s (never, or expired after its retention)", k)
	case err != nil:
		return err
	}
	var perr error
	if u.req.IncludePayload && ev.PayloadRef != nil {
		if p, ok := u.r.Store.(payloads); ok {
			ev.Payload, perr = p.Payload(u.ctx, ev)
		} else {
			perr = errors.New("the payload is in its object, which this store cannot read")
		}
	}
	v := viewEvent(ev, u.req.IncludePayload && perr == nil)
	if perr != nil {
		v.PayloadError = perr.Error()
	}
	read := 0
	seen := map[string]bool{}
	for _, id := range ev.Touched {
		if seen[id] {
			continue // updated again by a forced re-run
		}
		seen[id] = true
		switch {
		case strings.HasPrefix(id, effects.OutboundPrefix):
			continue // shown with its state below
		case strings.HasPrefix(id, "… and "):
			v.Parts = append(v.Parts, PartView{ID: id})
			continue
		case read == maxParts:
			v.PartsNotRead++
			continue
		}
		read++
		attrs, err := u.r.Store.Part(u.ctx, id)
		p := PartView{ID: id, Attributes: attrs}
		if err != nil {
			p.Error = err.Error()
		}
		v.Parts = append(v.Parts, p)
	}
	for _, key := range ev.OutboxRows {
		row, err := u.r.Store.Row(u.ctx, key)
		if err != nil {
			v.OutboxRows = append(v.OutboxRows, RowView{Key: key, Error: err.Error()})
			continue
		}
		v.OutboxRows = append(v.OutboxRows, viewRow(row))
	}
	u.s.Event = v
	u.count(string(ev.Status), k)
	return nil
}

// outboxList lists the outbox rows for review (rejected, unknown, dead),
// oldest first.
func (u *run) outboxList() error {
	rows, err := u.r.Store.ForReview(u.ctx, u.q.max)
	if err != nil {
		return err
	}
	if len(rows) == u.q.max {
		u.s.Stopped = StoppedMax
	}
	for _, r := range rows {
		if err := u.outOfTime(); err != nil {
			return err
		}
		u.s.Examined++
		full, err := u.r.Store.Row(u.ctx, r.Key)
		v := viewRow(full)
		if err != nil {
			v = RowView{Key: r.Key, State: string(r.State), Error: err.Error()}
		}
		if len(u.s.Rows) < MaxListed {
			u.s.Rows = append(u.s.Rows, v)
		}
		u.count(OutcomeForReview, full.Event)
	}
	return nil
}

// outboxEnd resolves or resends one row for review. A resend's message
// follows its write; if it is lost, the sweep brings the event back, and
// its outbox with it.
func (u *run) outboxEnd() error {
	key := u.req.OutboxKey
	row, err := u.r.Store.Row(u.ctx, key)
	if err != nil {
		return fmt.Errorf("outbox row %q: %w", key, err)
	}
	u.s.Examined = 1
	u.s.Rows = []RowView{viewRow(row)}
	done := OutcomeResolved
	if u.req.Action == ActionOutboxResend {
		done = OutcomeResent
	}
	if !row.State.ForReview() {
		u.count(OutcomeNotForReview, row.Event)
		return fmt.Errorf("outbox row %q is %s: only rejected, unknown and dead rows are resolved or resent", key, row.State)
	}
	if u.q.dryRun {
		u.count(done, row.Event)
		return nil
	}
	now := u.r.now()
	if u.req.Action == ActionOutboxResolve {
		row, err = u.r.Store.ResolveRow(u.ctx, key, u.req.Note, now)
	} else {
		_, err = u.r.Store.ResendRow(u.ctx, key, now)
	}
	if errors.Is(err, outbox.ErrNotForReview) {
		u.count(OutcomeNotForReview, row.Event)
		return fmt.Errorf("outbox row %q changed: %w", key, err)
	}
	if err != nil {
		return err
	}
	u.count(done, row.Event)
	if u.req.Action == ActionOutboxResend {
		if err := u.send(row.Event); err != nil {
			return fmt.Errorf("%w (the row is pending and its event due: the sweep queues it)", err)
		}
		if r, err := u.r.Store.Row(u.ctx, key); err == nil {
			row = r
		}
	}
	u.s.Rows = []RowView{viewRow(row)}
	return nil
}
