package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Ahead puts the entries of ev's forwarding rows before ev's commit, for
// a worker that holds ev's lease until leaseEnd: the rows, among rows (a
// plan's outbound calls, not yet written), that forward to a route that
// retries unknowns (Target.RetryUnknown: its consumers dedupe on the event
// key). It returns, for each of rows, whether EventBridge accepted its
// entry: the commit then writes that row delivered, and no row claim, no
// record and no read of the event follow it. Every other row, and a row
// whose put was not accepted (refused, not sent, its outcome unknown), is
// committed pending and delivered after the commit as any row.
//
// What it keeps of the outbox's invariant, for these routes only:
//   - an entry is put only under its event's lease, bounded to end before
//     the lease does (as a row's put is bounded by the row's lease), and
//     before the commit fenced by that lease: racing messages of one
//     event put it once, as only one holds the lease;
//   - it is put again only where a put's attempt ended without its commit
//     landing (its worker stopped, its lease ran out, the commit failed):
//     the next holder puts it again, which such a route allows — as a put
//     whose outcome is unknown is made again on the row's path;
//   - a row is written delivered only for an entry EventBridge accepted.
//
// An event whose commit never lands after its entry was put — its claim
// budget spent by such attempts, or the commit invalid — ends dead with
// its entry put: its consumers have it, and its replay puts it again.
//
// The rows' log lines (and their OutboxRows metric) wait for the commit:
// the caller calls record with whether it landed, so a delivery is counted
// only for a row that exists.
func (d *Deliverer) Ahead(ctx context.Context, ev inbox.Event, rows []effects.Outbound, leaseEnd time.Time) (accepted []bool, record func(committed bool)) {
	accepted = make([]bool, len(rows))
	record = func(bool) {}
	if d.batcher == nil || d.cfg.Events == nil {
		return accepted, record
	}
	// Each row's put, with its outcome and the size of the request that
	// carried it; made at once, so that they go in one request a bus.
	type put struct {
		i       int
		res     Result
		entries int
	}
	var puts []*put
	var wg sync.WaitGroup
	for i, o := range rows {
		t, ok := d.cfg.Targets[o.Target]
		if o.Action != effects.ActionEventBridge || !ok || !t.RetryUnknown {
			continue
		}
		entry, size, res := d.entry(ctx, o.Body, &ev)
		if res.State != "" {
			continue // left to the row's path, which records why
		}
		p := &put{i: i}
		puts = append(puts, p)
		wg.Go(func() { p.res, p.entries = d.batcher.put(ctx, nil, t, entry, size, leaseEnd) })
	}
	wg.Wait()
	for _, p := range puts {
		accepted[p.i] = p.res.State == Delivered
	}
	record = func(committed bool) {
		for _, p := range puts {
			attrs := []any{"event_key", ev.Key.String(), "row", p.i, "target", rows[p.i].Target, "state", string(p.res.State), "attempt", 1, "before_commit", true}
			if p.entries > 0 {
				attrs = append(attrs, "put_entries", p.entries)
			}
			if !committed {
				if p.res.Cause != "" {
					attrs = append(attrs, "cause", p.res.Cause)
				}
				// No row: the next attempt puts the entry again (the
				// route allows it), and its commit records the row.
				d.cfg.Logger.Warn("outbox row put, its commit did not land", attrs...)
				continue
			}
			if p.res.Cause != "" {
				attrs = append(attrs, "cause", p.res.Cause+" (committed pending: the outbox delivers it)")
			}
			if p.res.State == Delivered {
				// The row's count, as its record would publish it; no
				// DeliveryLatency: the row was delivered before it was
				// written.
				attrs = append(attrs, d.metricAttrs(Row{Target: rows[p.i].Target}, Delivered)...)
			}
			d.cfg.Logger.Info("outbox row", attrs...)
		}
	}
	return accepted, record
}
