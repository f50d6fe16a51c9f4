package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// Store is the inbox with its large payloads in S3: every method of
// inboxstore.Store, those below keeping the objects as the package
// comment says.
type Store struct {
	*inboxstore.Store
	objects *Objects

	// refs remembers, for the events this instance saw claimed or
	// refused a claim, the reference of their payload object (nil: the
	// payload is in the item) and when this instance last saw the object
	// written, so the calls that name only a key need no read to know
	// whether there is an object to renew, nor an S3 call to know it is
	// fresh. A miss reads the item. A remembered time is safe however old
	// the memory: an object's LastModified only moves forward.
	mu   sync.Mutex
	refs map[inbox.Key]seen
}

type seen struct {
	ref     *inbox.PayloadRef
	written time.Time // zero: not known
}

// RenewAfter is how old an object may be and still not be renewed before
// a write that sets its item's expiry. The expiry then counts from the
// object's last write instead of now, so the item is kept up to this much
// less than the retention after its event finishes; in exchange an event
// finished within the hour of its storing, nearly all of them, costs no
// copy at all.
const RenewAfter = time.Hour

// maxRefs bounds what refs remembers; past it, it starts again.
const maxRefs = 4096

// New returns the store over inner keeping large payloads in objects.
func New(inner *inboxstore.Store, objects *Objects) *Store {
	return &Store{Store: inner, objects: objects, refs: make(map[inbox.Key]seen)}
}

// Insert stores a new event as inboxstore.Store.Insert does; a payload
// whose gzip is over InlineMax is written to its object first, and the
// item points at it. If the object cannot be written nothing is stored
// and the error wraps inbox.ErrUnavailable: the delivery is refused and
// the provider sends it again.
func (s *Store) Insert(ctx context.Context, e inbox.Event, now time.Time) (inbox.Event, error) {
	if len(e.Payload) > InlineMax && e.PayloadRef == nil {
		z := Gzip(e.Payload)
		if len(z) <= InlineMax {
			// Fits the item: compressed once, here.
			return s.Store.InsertGzipped(ctx, e, z, now)
		}
		ref, err := s.objects.Put(ctx, e.Key, e.Payload, z)
		if err != nil {
			return inbox.Event{}, fmt.Errorf("insert %s: %w", e.Key, err)
		}
		e.Payload, e.PayloadRef = nil, &ref
	}
	return s.Store.Insert(ctx, e, now)
}

// Claim claims the event as inboxstore.Store.Claim does; an event whose
// payload is in an object has the object read, and renewed if it is older
// than RenewAfter, and gets its payload. A lost object is an error wrapping inbox.ErrInvalid and
// ErrLost (retrying cannot bring it back); an outage, inbox.ErrUnavailable.
// The claim stands either way: the caller records the failure on the
// event, as for any failed attempt.
func (s *Store) Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error) {
	ev, err := s.Store.Claim(ctx, k, owner, now, leaseUntil)
	return s.withObject(ctx, "claim", k, ev, err, now)
}

// withObject gives ev, which op read, its payload from its object if it
// has one, renewing the object if it is older than RenewAfter; err is
// op's.
func (s *Store) withObject(ctx context.Context, op string, k inbox.Key, ev inbox.Event, err error, now time.Time) (inbox.Event, error) {
	if ev.Key == k {
		s.remember(k, ev.PayloadRef, time.Time{})
	}
	if err != nil || ev.PayloadRef == nil {
		return ev, err
	}
	p, written, err := s.objects.Get(ctx, *ev.PayloadRef)
	if err != nil {
		return ev, fmt.Errorf("%s %s: %w", op, k, err)
	}
	if now.Sub(written) > RenewAfter {
		if written, err = s.objects.Renew(ctx, *ev.PayloadRef); err != nil {
			return ev, fmt.Errorf("%s %s: %w", op, k, err)
		}
	}
	s.remember(k, ev.PayloadRef, written)
	ev.Payload = p
	return ev, nil
}

// Peek reads the event as inboxstore.Store.Peek does; an event whose
// payload is in an object has it read (and renewed if older than
// RenewAfter), as Claim does.
func (s *Store) Peek(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	ev, err := s.Store.Peek(ctx, k, now)
	return s.withObject(ctx, "peek", k, ev, err, now)
}

// CompleteFirst commits an unclaimed first attempt as
// inboxstore.Store.CompleteFirst does, its expiry counted as Complete's.
func (s *Store) CompleteFirst(ctx context.Context, ev inbox.Event, plan effects.Plan, outcome inbox.Outcome, now time.Time) error {
	expiresFrom, err := s.expiresFrom(ctx, ev, now)
	if err != nil {
		return err
	}
	return s.Store.CompleteFirstExpiring(ctx, ev, plan, outcome, now, expiresFrom)
}

// expiresFrom is when a commit of ev at now counts the event's expiry
// from: now, or its object's last write (see fresh).
func (s *Store) expiresFrom(ctx context.Context, ev inbox.Event, now time.Time) (time.Time, error) {
	if ev.PayloadRef == nil {
		return now, nil
	}
	from, err := s.fresh(ctx, ev.Key, *ev.PayloadRef, now)
	if err != nil {
		return now, fmt.Errorf("complete %s: %w", ev.Key, err)
	}
	return from, nil
}

// Complete commits as inboxstore.Store.Complete does, after making sure
// of the event's object (fresh), with the event's expiry counted from no
// later than the object's last write — its expiry only: the times the
// commit records (processed_at, the parts', the outbox's due time) are
// now, or a late commit would look overdue to the sweep at once.
func (s *Store) Complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now time.Time) error {
	expiresFrom, err := s.expiresFrom(ctx, ev, now)
	if err != nil {
		return err
	}
	return s.Store.CompleteExpiring(ctx, ev, owner, plan, outcome, now, expiresFrom)
}

// CompleteDelivered commits as inboxstore.Store.CompleteDeliveredExpiring does,
// its expiry counted as Complete's.
func (s *Store) CompleteDelivered(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, delivered []string, now time.Time) error {
	expiresFrom, err := s.expiresFrom(ctx, ev, now)
	if err != nil {
		return err
	}
	return s.Store.CompleteDeliveredExpiring(ctx, ev, owner, plan, outcome, delivered, now, expiresFrom)
}

// ResendRow resends a row as inboxstore.Store.ResendRow does, after
// renewing its event's object: the resend brings the event back, and its
// delivery (a forwarding row carries the payload) must find the object.
func (s *Store) ResendRow(ctx context.Context, key string, now time.Time) (outbox.Row, error) {
	row, err := s.Store.Row(ctx, key)
	if err == nil {
		if _, err := s.renew(ctx, row.Event, now); err != nil {
			return outbox.Row{}, fmt.Errorf("resend %s: %w", key, err)
		}
	}
	return s.Store.ResendRow(ctx, key, now)
}

// Fail records a failure as inboxstore.Store.Fail does; a death (which
// sets the event's expiry) first renews the event's object. A death needs
// no payload: when the renewal fails (S3 down, or answering 403 for a
// missing object to a role without s3:ListBucket) the event dies all the
// same, its expiry counted from now — an event that could not die would
// never finish. Should it be revived after its object expired, its claim
// finds the payload lost and it dies again, for that reason.
func (s *Store) Fail(ctx context.Context, k inbox.Key, f inbox.Failure, now time.Time) (inbox.Event, error) {
	if f.Status == inbox.StatusDead {
		if renewed, err := s.renew(ctx, k, now); err == nil {
			now = renewed
		}
	}
	return s.Store.Fail(ctx, k, f, now)
}

// SettleOutbox settles as inboxstore.Store.SettleOutbox does, after
// renewing the event's object: settling sets the event's expiry, and a
// pass that does not settle may be the last for a while.
func (s *Store) SettleOutbox(ctx context.Context, k inbox.Key, gen int, settled bool, due, now time.Time) error {
	// A renewal that fails (S3 down, or a 403 for a missing object to a
	// role without s3:ListBucket) does not hold the settling back, as it
	// does not hold a death: an event that could not settle would never
	// finish. Its expiry then counts from now.
	if renewed, err := s.renew(ctx, k, now); err == nil {
		now = renewed
	}
	return s.Store.SettleOutbox(ctx, k, gen, settled, due, now)
}

// Requeue brings an event back as inboxstore.Store.Requeue does, after
// renewing its object: a dead event revived near the end of its
// retention keeps its payload until it is claimed.
func (s *Store) Requeue(ctx context.Context, k inbox.Key, now time.Time, force bool) (inbox.Event, inboxstore.Requeued, error) {
	// The renewal keeps the payload; the requeue sets no expiry, so it
	// records now, not the object's last write.
	if _, err := s.renew(ctx, k, now); err != nil {
		return inbox.Event{}, inboxstore.Requeued(""), fmt.Errorf("requeue %s: %w", k, err)
	}
	return s.Store.Requeue(ctx, k, now, force)
}

// Payload returns the event's payload, from its object if it has one.
func (s *Store) Payload(ctx context.Context, ev inbox.Event) ([]byte, error) {
	if ev.PayloadRef == nil || len(ev.Payload) > 0 {
		// In the item, or read from its object already (Peek, Claim).
		return ev.Payload, nil
	}
	p, _, err := s.objects.Get(ctx, *ev.PayloadRef)
	return p, err
}

// renew makes sure of the object of k's event, if it has one (fresh),
// and returns the time to count an expiry from. An absent event has
// nothing to renew: the call it precedes answers for the event.
func (s *Store) renew(ctx context.Context, k inbox.Key, now time.Time) (time.Time, error) {
	ref, err := s.ref(ctx, k, now)
	if err != nil || ref == nil {
		return now, err
	}
	return s.fresh(ctx, k, *ref, now)
}

// fresh returns the time to count an expiry of k's item from: now, or
// the last write of its object if earlier, which it first renews (copies
// onto itself) if that write is older than RenewAfter. The object's
// lifecycle keeps it ObjectDays after its last write, so an expiry
// counted from the returned time is within the object's life. It knows
// the last write from what this instance saw (the claim's read, an
// earlier renewal), else asks S3 (a HEAD, priced as a GET, not a COPY). A
// lost object has nothing to renew: now is returned, and the call it
// precedes answers for the event.
func (s *Store) fresh(ctx context.Context, k inbox.Key, ref inbox.PayloadRef, now time.Time) (time.Time, error) {
	s.mu.Lock()
	written := s.refs[k].written
	s.mu.Unlock()
	var err error
	if written.IsZero() {
		written, err = s.objects.Written(ctx, ref)
	}
	if err == nil && now.Sub(written) > RenewAfter {
		written, err = s.objects.Renew(ctx, ref)
	}
	switch {
	case errors.Is(err, ErrLost):
		return now, nil
	case err != nil:
		return now, err
	}
	s.remember(k, &ref, written)
	return earliest(now, written), nil
}

// ref returns the reference of k's payload object, nil if the payload is
// in the item or the event is absent.
func (s *Store) ref(ctx context.Context, k inbox.Key, now time.Time) (*inbox.PayloadRef, error) {
	s.mu.Lock()
	r, ok := s.refs[k]
	s.mu.Unlock()
	if ok {
		return r.ref, nil
	}
	ev, err := s.Store.Status(ctx, k, now)
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	s.remember(k, ev.PayloadRef, time.Time{})
	return ev.PayloadRef, nil
}

// remember notes k's payload reference and, if known, when its object
// was written; a later time never gives way to an earlier one.
func (s *Store) remember(k inbox.Key, r *inbox.PayloadRef, written time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refs) >= maxRefs {
		clear(s.refs)
	}
	if old, ok := s.refs[k]; ok && old.ref != nil && r != nil && old.ref.Object == r.Object && old.written.After(written) {
		written = old.written
	}
	s.refs[k] = seen{ref: r, written: written}
}

// earliest is a, or b if b is set and earlier.
func earliest(a, b time.Time) time.Time {
	if !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
