package outbox

import (
	"errors"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// State is where an outbox row is in its delivery.
type State string

// The states of a row. Pending and failed rows are delivered (again);
// delivering is a row a worker holds; the other states are final.
const (
	// Pending: committed with its event, not tried yet.
	Pending State = "pending"
	// Delivering: a worker holds the row's lease and may be sending it.
	Delivering State = "delivering"
	// Delivered: the receiver answered 2xx (or, for a target with no URL,
	// the row was written to the log). Never sent again.
	Delivered State = "delivered"
	// Failed: not delivered, and safe to send again (the connection was
	// refused, the receiver answered 5xx or 429): retried with backoff.
	Failed State = "failed"
	// Rejected: the receiver answered 4xx (other than 429), or 3xx: final,
	// for review.
	Rejected State = "rejected"
	// Unknown: the request may have reached the receiver (a timeout or a
	// lost connection after it was written, or a worker that stopped
	// while it held the row): final and never resent, for review —
	// unless its target dedupes on the idempotency key (RetryUnknown).
	Unknown State = "unknown"
	// Dead: failed on every attempt of its budget: final, for review.
	Dead State = "dead"
	// Resolved: a row an operator reviewed (it was rejected, unknown or
	// dead) and marked resolved: final, out of the review list.
	Resolved State = "resolved"
)

// Final reports whether a row in state s is never delivered again.
func (s State) Final() bool {
	switch s {
	case Delivered, Rejected, Unknown, Dead, Resolved:
		return true
	}
	return false
}

// ForReview reports whether a row in state s needs an operator: it ended
// without a known delivery.
func (s State) ForReview() bool {
	switch s {
	case Rejected, Unknown, Dead:
		return true
	}
	return false
}

// Row is one stored outbound call.
type Row struct {
	// Key is the idempotency key: one row per key ever exists.
	Key    string
	Action string
	Target string
	Body   []byte
	// Event is the key of the event whose commit wrote the row.
	Event    inbox.Key
	State    State
	Attempts int
	// DueAt is when a pending or failed row may be tried.
	DueAt      time.Time
	LeaseOwner string
	LeaseUntil time.Time
	LastError  string
	// StatusCode is the receiver's last HTTP status, 0 if it gave none.
	StatusCode  int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt time.Time
	// DeliveredTo is "http" for a receiver's 2xx, "log" for a target
	// configured with no URL.
	DeliveredTo string
	// Resent counts an operator's deliberate resends of the row; a
	// resolved row keeps the state it was resolved from, the operator's
	// note and when.
	Resent       int
	ResolvedFrom State
	Resolution   string
	ResolvedAt   time.Time
}

// Result is what became of one delivery attempt.
type Result struct {
	State State
	// Cause explains a state other than delivered.
	Cause      string
	StatusCode int
	// RetryAt is when a failed row is due again.
	RetryAt     time.Time
	DeliveredTo string
}

// Errors of the row operations.
var (
	// ErrFinal means the row is in a final state: it is never claimed again.
	ErrFinal = errors.New("outbox: row is final")
	// ErrNotForReview means an operator's resolve or resend found the row
	// in a state that is not for review (pending, delivering, failed,
	// delivered or resolved): it is left as it is.
	ErrNotForReview = errors.New("outbox: row is not for review")
)
