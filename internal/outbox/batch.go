package outbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/forward"
)

// MaxBatchEntries is the most entries EventBridge takes in one PutEvents
// request.
const MaxBatchEntries = 10

// batcher gathers the entries that several deliveries have ready at once
// — the rows of one event's routes, the rows of the other events of an
// SQS batch — into PutEvents requests of up to MaxBatchEntries entries
// and forward.MaxEntryBytes in all (EventBridge's bound on a whole
// request, as it sizes entries).
//
// A request starts when no other is in flight and no entry is on its way
// (a row being claimed, or its entry built: a ticket), or as soon as a
// full batch is waiting; entries that arrive while one is in flight go
// together in the next. An entry on its way holds the others back for at
// most maxLinger. So an entry waits for at most maxLinger and one request
// in flight before its own starts, and the row's lease covers that wait
// (see Deliverer.rowLease).
//
// What it keeps of the outbox's invariant: an entry is put only while its
// row's lease can outlast the whole request (an entry whose deadline would
// not is answered "not sent", failed, and tried again after its backoff),
// each entry's outcome is read from its own place in the answer, and a
// request is never retried (Bus).
type batcher struct {
	bus Bus
	// now is the deliverer's clock, on which leases are; callers'
	// deadlines are on the wall clock.
	now func() time.Time

	mu sync.Mutex
	// queue holds the entries not yet taken into a request, oldest first.
	queue []*putRequest
	// inFlight counts the requests under way; coming the tickets out
	// (entries on their way).
	inFlight, coming int
	// lingering is set while a timer will start the waiting entries
	// whatever is on its way.
	lingering bool
	// requests counts the PutEvents requests made, for tests and logs.
	requests atomic.Int64
}

// putRequest is one row's entry waiting for its outcome.
type putRequest struct {
	entry  BusEntry
	size   int
	target Target
	// ctx is the delivering caller's: its values reach the request, and
	// its deadline (wall clock) and the row's lease end (the deliverer's
	// clock) are the latest the request may end.
	ctx      context.Context
	leaseEnd time.Time
	queued   time.Time
	done     chan putOutcome
}

// putOutcome is an entry's outcome and the size of the request that
// carried it.
type putOutcome struct {
	Result
	entries int
}

// maxLinger bounds how long entries on their way hold back a request that
// could start.
const maxLinger = 25 * time.Millisecond

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

// put adds the entry, on its way under tk (nil for none), to the next
// request and returns its outcome, once the request that carried it has
// ended (or it was not sent), and how many entries that request carried
// (0: not sent).
func (b *batcher) put(ctx context.Context, tk *ticket, t Target, entry BusEntry, size int, leaseEnd time.Time) (Result, int) {
	req := &putRequest{entry: entry, size: size, target: t, ctx: ctx, leaseEnd: leaseEnd, queued: time.Now(), done: make(chan putOutcome, 1)}
	b.mu.Lock()
	if tk != nil {
		tk.useLocked()
	}
	b.queue = append(b.queue, req)
	b.start()
	b.mu.Unlock()
	out := <-req.done
	return out.Result, out.entries
}

// start, with mu held, starts a request for the waiting entries while
// none is in flight and none is on its way (or the oldest has waited
// maxLinger), and one more for every full batch waiting.
func (b *batcher) start() {
	for len(b.queue) > 0 && (b.full() || b.inFlight == 0 && b.ready()) {
		n, total := 0, 0
		for n < len(b.queue) && n < MaxBatchEntries && (n == 0 || total+b.queue[n].size <= forward.MaxEntryBytes) {
			total += b.queue[n].size
			n++
		}
		batch := make([]*putRequest, n)
		copy(batch, b.queue)
		b.queue = b.queue[n:]
		b.inFlight++
		go b.send(batch)
	}
}

// ready reports, with mu held, whether the waiting entries should go
// without those on their way; if not, it makes sure a timer starts them
// when the oldest has waited maxLinger.
func (b *batcher) ready() bool {
	if b.coming == 0 {
		return true
	}
	wait := maxLinger - time.Since(b.queue[0].queued)
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

// full reports, with mu held, whether the waiting entries make a whole
// request: as many as one takes, or more bytes than it takes.
func (b *batcher) full() bool {
	if len(b.queue) >= MaxBatchEntries {
		return true
	}
	total := 0
	for _, r := range b.queue {
		total += r.size
	}
	return total > forward.MaxEntryBytes
}

// send makes one request of the entries of batch that still have time for
// it, answers each entry, and starts the next request.
func (b *batcher) send(batch []*putRequest) {
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.start()
		b.mu.Unlock()
	}()
	now, wall := b.now(), time.Now()
	// Entries are taken only if the request, bounded by their own
	// timeout, ends before their deadline; the request is bounded by
	// the shortest timeout of those taken.
	var timeout time.Duration
	reqs := batch[:0]
	for _, r := range batch {
		switch {
		case r.ctx.Err() != nil:
			r.done <- putOutcome{Result: Result{State: Failed, Cause: "PutEvents not sent: " + r.ctx.Err().Error()}}
		case now.Add(r.target.Timeout).After(r.leaseEnd) || pastDeadline(r.ctx, wall.Add(r.target.Timeout)):
			r.done <- putOutcome{Result: Result{State: Failed, Cause: fmt.Sprintf("PutEvents not sent: no time left for a %s call", r.target.Timeout)}}
		default:
			if timeout == 0 || r.target.Timeout < timeout {
				timeout = r.target.Timeout
			}
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return
	}
	entries := make([]BusEntry, len(reqs))
	for i, r := range reqs {
		entries[i] = r.entry
	}
	// The request outlives no caller's deadline (checked above), but is
	// not cut short when one caller's context is cancelled: it carries
	// the others' entries too.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reqs[0].ctx), timeout)
	defer cancel()
	b.requests.Add(1)
	outcomes, err := b.bus.PutEntries(ctx, entries)
	if err == nil && len(outcomes) != len(reqs) {
		err = &PutError{Failure: PutUnknown, Err: fmt.Errorf("answered %d entries for %d", len(outcomes), len(reqs))}
	}
	for i, r := range reqs {
		if err != nil {
			r.done <- putOutcome{requestOutcome(r.target, err), len(reqs)}
			continue
		}
		r.done <- putOutcome{entryOutcome(outcomes[i]), len(reqs)}
	}
}

// pastDeadline reports whether ctx's deadline is before t.
func pastDeadline(ctx context.Context, t time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(t)
}
