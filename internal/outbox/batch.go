package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/forward"
)

// MaxBatchEntries is the most entries EventBridge takes in one PutEvents
// request.
const MaxBatchEntries = 10

// batcher gathers the entries that several deliveries have ready at once
// — the rows of the events of one SQS batch — into PutEvents requests of
// up to MaxBatchEntries entries and forward.MaxEntryBytes in all
// (EventBridge's bound on a whole request, as it sizes entries).
//
// A request carries entries for one bus only (a lane): a request refused
// whole for its bus — a missing bus, a denied permission — then never
// decides the rows of another bus, nor of another route's bus. (moto
// refuses a request whole for a missing bus after delivering the entries
// before it: with one bus a request, there are none.) Rows of one event
// are on different buses, one route per source and bus.
//
// In a lane, a request starts when no other is in flight and no entry is
// on its way (a row being claimed, or its entry built: a ticket), or as
// soon as a full batch is waiting; entries that arrive while one is in
// flight go together in the next. An entry on its way holds the others
// back for at most maxLinger.
//
// What it keeps of the outbox's invariant:
//   - an entry is put only if its request, bounded by the entry's
//     timeout, ends with time left in the row's lease to record the
//     outcome (finishTimeout), and before its caller's deadline: an entry
//     that waited too long is answered "not sent" and its row is failed,
//     tried again after its backoff (see Deliverer.rowLease for the wait
//     the lease covers);
//   - each entry's outcome is read from its own place in the answer; a
//     request that fails whole decides each row by the row's own target;
//     a request of several entries refused as invalid (nothing was put)
//     is made again one entry at a time, so that only an entry invalid in
//     itself is rejected;
//   - a request is never retried by the Bus; every entry is answered once.
type batcher struct {
	bus Bus
	// now is the deliverer's clock, on which leases are; callers'
	// deadlines are on the wall clock.
	now func() time.Time
	// linger bounds how long entries on their way hold back a request
	// that could start (maxLinger).
	linger time.Duration

	mu sync.Mutex
	// lanes holds each bus's entries.
	lanes map[string]*lane
	// coming counts the tickets out (entries on their way).
	coming int
	// lingering is set while a timer will start the waiting entries
	// whatever is on its way.
	lingering bool
}

// lane is one bus's entries.
type lane struct {
	// queue holds the entries not yet taken into a request, oldest first.
	queue []*putRequest
	// inFlight counts the requests under way.
	inFlight int
}

// maxLinger bounds how long entries on their way hold back a request that
// could start.
const maxLinger = 25 * time.Millisecond

func newBatcher(bus Bus, now func() time.Time) *batcher {
	return &batcher{bus: bus, now: now, linger: maxLinger, lanes: map[string]*lane{}}
}

// putRequest is one row's entry waiting for its outcome.
type putRequest struct {
	entry  BusEntry
	size   int
	target Target
	// ctx is the delivering caller's: its values reach the request, and
	// its deadline (wall clock) and the row's lease end (the deliverer's
	// clock) bound the request.
	ctx      context.Context
	leaseEnd time.Time
	queued   time.Time
	done     chan putOutcome
}

// putOutcome is an entry's outcome and the size of the request that
// carried it (0: none did).
type putOutcome struct {
	Result
	entries int
}

// ticket is an entry on its way: a row being claimed that may be a
// forwarding row, or a forwarding row whose entry is being built. It is
// used up by the entry's put, or dropped.
type ticket struct {
	b    *batcher
	used bool
}

// expect returns a ticket for an entry on its way; a nil batcher's
// tickets are nil, and do nothing.
func (b *batcher) expect() *ticket {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.coming++
	return &ticket{b: b}
}

// drop says the ticket's entry is not coming (the row was not a
// forwarding row, or failed before its put). Dropping a used ticket does
// nothing.
func (t *ticket) drop() {
	if t == nil {
		return
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	t.useLocked()
	t.b.start()
}

func (t *ticket) useLocked() {
	if !t.used {
		t.used = true
		t.b.coming--
	}
}

// put adds the entry, on its way under tk (nil for none), to its bus's
// next request and returns its outcome, once the request that carried it
// has ended (or it was not sent), and how many entries that request
// carried (0: not sent).
func (b *batcher) put(ctx context.Context, tk *ticket, t Target, entry BusEntry, size int, leaseEnd time.Time) (Result, int) {
	req := &putRequest{entry: entry, size: size, target: t, ctx: ctx, leaseEnd: leaseEnd, queued: time.Now(), done: make(chan putOutcome, 1)}
	b.mu.Lock()
	if tk != nil {
		tk.useLocked()
	}
	l := b.lanes[entry.Bus]
	if l == nil {
		l = &lane{}
		b.lanes[entry.Bus] = l
	}
	l.queue = append(l.queue, req)
	b.start()
	b.mu.Unlock()
	out := <-req.done
	return out.Result, out.entries
}

// start, with mu held, starts a request in each lane whose waiting
// entries should go: while none is in flight and none is on its way (or
// the oldest has waited the linger), and one more for every full batch
// waiting. A lane left with nothing is removed.
func (b *batcher) start() {
	for bus, l := range b.lanes {
		for len(l.queue) > 0 {
			n, full := l.fit()
			if !full && (l.inFlight > 0 || !b.ready(l)) {
				break
			}
			batch := make([]*putRequest, n)
			copy(batch, l.queue)
			l.queue = l.queue[n:]
			l.inFlight++
			go b.send(l, batch)
		}
		if len(l.queue) == 0 && l.inFlight == 0 {
			delete(b.lanes, bus)
		}
	}
}

// ready reports, with mu held, whether l's waiting entries should go
// without those on their way; if not, it makes sure a timer starts them
// when the oldest has waited the linger.
func (b *batcher) ready(l *lane) bool {
	if b.coming == 0 {
		return true
	}
	wait := b.linger - time.Since(l.queue[0].queued)
	if wait <= 0 {
		return true
	}
	if !b.lingering {
		b.lingering = true
		time.AfterFunc(wait, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.lingering = false
			b.start()
		})
	}
	return false
}

// fit returns, with mu held, how many of l's oldest waiting entries one
// request takes, and whether the waiting entries make a whole request: as
// many as one takes, or more bytes than it takes.
func (l *lane) fit() (n int, full bool) {
	total := 0
	for n < len(l.queue) && n < MaxBatchEntries && (n == 0 || total+l.queue[n].size <= forward.MaxEntryBytes) {
		total += l.queue[n].size
		n++
	}
	return n, n == MaxBatchEntries || n < len(l.queue) || total > forward.MaxEntryBytes
}

// send makes the request of batch, a lane's, and starts the lane's next.
func (b *batcher) send(l *lane, batch []*putRequest) {
	defer func() {
		b.mu.Lock()
		// A lane is removed only with nothing waiting and nothing in
		// flight, so l is still the bus's lane.
		l.inFlight--
		b.start()
		b.mu.Unlock()
	}()
	b.request(batch)
}

// request puts the entries of reqs that still have time for it in one
// request and answers each.
func (b *batcher) request(reqs []*putRequest) {
	now, wall := b.now(), time.Now()
	// Entries are taken only if the request, bounded by their own
	// timeout, ends before their deadline and leaves their row the time
	// to record its outcome; the request is bounded by the shortest
	// timeout of those taken.
	var timeout time.Duration
	taken := make([]*putRequest, 0, len(reqs))
	for _, r := range reqs {
		switch {
		case r.ctx.Err() != nil:
			r.done <- putOutcome{Result: Result{State: Failed, Cause: "PutEvents not sent: " + r.ctx.Err().Error()}}
		case now.Add(r.target.Timeout+finishTimeout).After(r.leaseEnd) || pastDeadline(r.ctx, wall.Add(r.target.Timeout)):
			r.done <- putOutcome{Result: Result{State: Failed, Cause: fmt.Sprintf("PutEvents not sent: no time left for a %s call", r.target.Timeout)}}
		default:
			if timeout == 0 || r.target.Timeout < timeout {
				timeout = r.target.Timeout
			}
			taken = append(taken, r)
		}
	}
	if len(taken) == 0 {
		return
	}
	entries := make([]BusEntry, len(taken))
	for i, r := range taken {
		entries[i] = r.entry
	}
	// The request outlives no caller's deadline (checked above), but is
	// not cut short when one caller's context is cancelled: it carries
	// the others' entries too.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(taken[0].ctx), timeout)
	defer cancel()
	outcomes, err := b.bus.PutEntries(ctx, entries)
	if err == nil && len(outcomes) != len(taken) {
		err = &PutError{Failure: PutUnknown, Err: fmt.Errorf("answered %d entries for %d", len(outcomes), len(taken))}
	}
	var pe *PutError
	if len(taken) > 1 && errors.As(err, &pe) && pe.Failure == PutInvalid {
		// Nothing was put, and the request may be invalid for one entry
		// alone: each goes alone, at once, so only that one is rejected.
		// (Each is checked for time again: one that has none left is
		// not sent.)
		var wg sync.WaitGroup
		for _, r := range taken {
			wg.Go(func() { b.request([]*putRequest{r}) })
		}
		wg.Wait()
		return
	}
	carried := len(taken)
	if errors.As(err, &pe) && (pe.Failure == PutNotSent || pe.Failure == PutInvalid && pe.StatusCode == 0) {
		carried = 0 // never sent
	}
	for i, r := range taken {
		if err != nil {
			r.done <- putOutcome{requestOutcome(r.target, err), carried}
			continue
		}
		r.done <- putOutcome{entryOutcome(outcomes[i]), carried}
	}
}

// pastDeadline reports whether ctx's deadline is before t.
func pastDeadline(ctx context.Context, t time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(t)
}
