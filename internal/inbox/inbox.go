// Package inbox is the domain of webhook-inbox: the stored event, its key and
// status, the queue message that points at it, and the errors the edges
// translate into HTTP statuses and SQS batch failures. It imports no AWS SDK.
package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Status is where an event is in its life. Operators' tools read these names.
type Status string

// The statuses an inbox item moves through.
const (
	StatusReceived   Status = "received"
	StatusProcessing Status = "processing"
	StatusProcessed  Status = "processed"
	StatusFailed     Status = "failed"
	StatusDead       Status = "dead"
)

// Outcome says what processing did with an event once it is processed.
type Outcome string

// The outcomes of a processed event.
const (
	OutcomeApplied         Outcome = "applied"
	OutcomeIgnored         Outcome = "ignored"
	OutcomeDuplicateEffect Outcome = "duplicate_effect"
	OutcomeStale           Outcome = "stale"
)

// Errors the adapters return and the edges branch on.
var (
	// ErrDuplicate means an event with the same key is already stored.
	ErrDuplicate = errors.New("inbox: event already stored")
	// ErrNotFound means no event is stored under the key.
	ErrNotFound = errors.New("inbox: event not found")
	// ErrClaimed means another worker holds an unexpired lease on the event.
	ErrClaimed = errors.New("inbox: event claimed by another worker")
	// ErrAlreadyProcessed means the event finished processing earlier.
	ErrAlreadyProcessed = errors.New("inbox: event already processed")
	// ErrNotDue means the event failed and its next try is not due yet: a
	// copy of its message (a provider's retry) waits for the backoff too.
	ErrNotDue = errors.New("inbox: event not due yet")
	// ErrLeaseLost means the worker's lease was taken over before it committed.
	ErrLeaseLost = errors.New("inbox: lease lost before commit")
	// ErrDead means the event is dead: final until an operator replays it.
	ErrDead = errors.New("inbox: event is dead")
	// ErrOutboxPending means a processed event's outbox has rows that may
	// still be delivered: it is not re-run until they settle.
	ErrOutboxPending = errors.New("inbox: event's outbox not settled")
	// ErrInvalid wraps a request the store or queue refused as invalid (an
	// item over the size limit, a key too long, a malformed expression):
	// retrying cannot help, so the event is dead at once and ingest answers
	// 413. The adapters decide it, in one predicate, from the AWS error.
	ErrInvalid = errors.New("inbox: refused by the store as invalid")
	// ErrUnavailable wraps failures of the store or queue that a retry may cure
	// (throttling, timeouts, 5xx). The HTTP edge answers 503 for it.
	ErrUnavailable = errors.New("inbox: dependency unavailable")
	// ErrNonceUsed means a signed nonce was recorded already with another
	// body (see signature.Nonced): the delivery replays a signature over
	// bytes it does not cover.
	ErrNonceUsed = errors.New("inbox: nonce used with another body")
	// ErrConflict (always with ErrUnavailable) means a commit was
	// cancelled by concurrent transactions on the same items, each time it
	// was retried.
	ErrConflict = errors.New("inbox: transaction conflict")
)

// Key identifies one provider event: source + account + the provider's own
// event id. It is never minted on arrival, so every retry of one delivery
// maps to the same key.
type Key struct {
	Source  string `json:"source"`
	Account string `json:"account,omitempty"`
	EventID string `json:"event_id"`
}

// String renders the key as stored in the table: source#account#event_id.
// Source names and accounts cannot contain '#', so the event id, which may,
// goes last and the rendering is unambiguous.
func (k Key) String() string {
	return k.Source + "#" + k.Account + "#" + k.EventID
}

// ParseKey is the inverse of Key.String.
func ParseKey(s string) (Key, error) {
	source, rest, ok := strings.Cut(s, "#")
	if !ok {
		return Key{}, fmt.Errorf("parse key %q: missing '#'", s)
	}
	account, id, ok := strings.Cut(rest, "#")
	if !ok {
		return Key{}, fmt.Errorf("parse key %q: missing second '#'", s)
	}
	k := Key{Source: source, Account: account, EventID: id}
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Bounds of a key's parts, in bytes. Source names are configured ones
// (at most 64 bytes); 255 is the longest account a provider names (a
// Shopify shop domain, which is a host name); 512 is the longest event id a
// scheme produces (signature.MaxIdentity).
const (
	maxSource  = 64
	maxAccount = 255
	maxEventID = 512
)

// maxKey bounds a rendered key well inside DynamoDB's 2048-byte partition
// key limit, leaving room for the prefix the store adds. The parts' bounds
// and the two '#' fit it, which the constant below checks at compile time
// (a negative uint constant does not compile), so Validate need not.
const maxKey = 1024

const _ = uint(maxKey - (maxSource + maxAccount + maxEventID + 2))

// Validate reports whether the key can be stored, queued and logged as is.
// Its alphabet, for the source, the account and the event id alike:
//
//   - valid UTF-8: DynamoDB refuses anything else, and JSON (the queue
//     message) would silently turn it into U+FFFD, naming another key;
//   - no control characters (C0, DEL and C1, i.e. unicode.IsControl): no
//     provider documents ids holding them, and a NUL or a newline would
//     reach logs, operators' terminals and the tools that split on lines;
//   - no '#' in the source or the account, which String uses to separate
//     the parts; the event id, last, may hold it.
//
// Lengths: a source is non-empty and at most 64 bytes, an account at most
// 255 (empty for endpoints without one), an event id non-empty and at most
// 512. Everything else (spaces, '/', any printable Unicode) is accepted:
// ids are the providers' to choose.
func (k Key) Validate() error {
	switch {
	case k.Source == "":
		return errors.New("key: empty source")
	case k.EventID == "":
		return errors.New("key: empty event id")
	case len(k.Source) > maxSource:
		return fmt.Errorf("key: source longer than %d bytes", maxSource)
	case len(k.Account) > maxAccount:
		return fmt.Errorf("key: account longer than %d bytes", maxAccount)
	case len(k.EventID) > maxEventID:
		return fmt.Errorf("key: event id longer than %d bytes", maxEventID)
	case strings.Contains(k.Source, "#") || strings.Contains(k.Account, "#"):
		return errors.New("key: '#' in source or account")
	}
	for _, p := range [...]struct{ name, s string }{{"source", k.Source}, {"account", k.Account}, {"event id", k.EventID}} {
		if err := checkAlphabet(p.s); err != nil {
			return fmt.Errorf("key: %s: %w", p.name, err)
		}
	}
	return nil
}

// checkAlphabet reports the first byte of s that is not valid UTF-8 or
// starts a control character. The error names the offset and the rune,
// never s itself, which may be long.
func checkAlphabet(s string) error {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return fmt.Errorf("control character %U at byte %d", rune(c), i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		case unicode.IsControl(r):
			return fmt.Errorf("control character %U at byte %d", r, i)
		}
		i += n
	}
	return nil
}

// Event is one stored webhook delivery.
type Event struct {
	Key  Key
	Kind string // the source's scheme kind, e.g. "stripe"
	Type string // the provider's event type, e.g. "invoice.paid"
	// Created is the provider's own creation time of the event, zero if unknown.
	Created time.Time
	// Payload is the raw verified body, byte for byte as received (or, for
	// deliveries carrying several events, this event's bytes). Empty
	// while PayloadRef points at a payload kept outside the event's item
	// until that payload is read (see package claimcheck).
	Payload    []byte
	PayloadRef *PayloadRef
	// Body names the item that holds the event's immutable part (payload,
	// headers, provider metadata) when the store keeps it apart from the
	// event's status, and BodyUntil is when that item expires, as last
	// known (it only moves later): the store's bookkeeping, empty for an
	// event stored whole in one item (see package inboxstore).
	Body      string
	BodyUntil time.Time
	// Attributes are delivery facts the provider's scheme keeps with the
	// event (a retry number, a second id); never secrets.
	Attributes map[string]string
	// Headers are the delivery's headers worth keeping to trace it or
	// verify it again (its scheme's delivery ids, signature and timestamp,
	// and User-Agent), by canonical name; never Authorization, cookies or a
	// token that is itself the secret. RequestID is the API Gateway request
	// id of the delivery that stored the event.
	Headers   map[string]string
	RequestID string
	// Scope is the key space of the event's business parts (see
	// PartScope), chosen at ingest from its source and kept with it:
	// "name#account", the name being its source's unless the source
	// shares another's key space. Unscoped marks an event stored before
	// parts had scopes: its parts keep the unscoped IDs they were first
	// written under, so a re-run or a retry of it still meets them.
	Scope    string
	Unscoped bool

	Status   Status
	Outcome  Outcome
	Attempts int
	// RevivedAttempts is Attempts when an operator last revived the event:
	// the attempts budget counts from there.
	RevivedAttempts int
	LastError       string
	ReceivedAt      time.Time
	UpdatedAt       time.Time
	ProcessedAt     time.Time
	// ExpiresAt is when the item may be deleted (the table's TTL attribute).
	ExpiresAt time.Time
	// LeaseOwner and LeaseUntil are set while a worker processes the event.
	LeaseOwner string
	LeaseUntil time.Time
	// DueAt is when the event, if still unfinished, is overdue: its
	// receipt, the end of its lease, or the time its message was due back
	// after a failure. The sweep re-enqueues events overdue by more than
	// its threshold, and moves DueAt on when it does. Zero once the event
	// is processed or dead.
	DueAt time.Time
	// RetryAt is when a failed event may be claimed again: its backoff's
	// end. The sweep never moves it (its DueAt is the sweep's own clock),
	// so a swept message is never turned away for the sweep's sake. Zero
	// for an event that may be claimed at once (also one that failed
	// before the attribute existed).
	RetryAt time.Time
	// DeadBy is the id of the queue message whose processing made the event
	// dead; that message, and only it, is the one copied to the DLQ.
	DeadBy string
	// Touched lists the IDs of the business parts (facts, entities,
	// outbox rows) the event's commit wrote, for operators; a long list
	// is cut short, its last entry saying how many were left out.
	Touched []string
	// OutboxRows are the keys of the outbox rows the commit wrote, and
	// OutboxPending says some of them may still have to be delivered: a
	// processed event stays with the sweep until its outbox settles.
	OutboxRows    []string
	OutboxPending bool
	// OutboxGen counts the operator's resends of the outbox's rows: a
	// delivery pass settles the outbox only if it is still the generation
	// the pass read (see inboxstore.Store.ResendRow).
	OutboxGen int
	// Reruns counts the operator's forced re-runs of the event after it
	// was processed; PreviousOutcome is the outcome the last one found.
	Reruns int
	// Swept counts the sweep's reschedules since the event's last claim
	// (or delivery pass, or operator's requeue): after QuickCopies of
	// them its copies are spaced out (inboxstore.Reschedule). Read only.
	Swept           int
	PreviousOutcome Outcome
}

// ScopeOf is the scope of the parts of events of key k whose source's
// parts are kept under name: "name#account".
func ScopeOf(name string, k Key) string { return name + "#" + k.Account }

// PartScope is the scope the event's parts are stored in: Scope, or its
// own source and account when none was chosen (ScopeOf(Key.Source, Key));
// empty for an Unscoped event.
func (e Event) PartScope() string {
	switch {
	case e.Unscoped:
		return ""
	case e.Scope != "":
		return e.Scope
	}
	return ScopeOf(e.Key.Source, e.Key)
}

// PayloadRef names a payload kept outside the event's item (a claim
// check): the object holding it, and the size and SHA-256 of the payload
// as it was verified, which the object must give back.
type PayloadRef struct {
	Object string
	Bytes  int
	SHA256 string
}

// Unfinished reports whether the event still has to end processed or dead.
func (e Event) Unfinished() bool {
	switch e.Status {
	case StatusReceived, StatusProcessing, StatusFailed:
		return true
	}
	return false
}

// LogValue keeps payloads out of logs: only identity and status are logged.
func (e Event) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("key", e.Key.String()),
		slog.String("type", e.Type),
		slog.String("status", string(e.Status)),
		slog.Int("attempts", e.Attempts),
		slog.Int("payload_bytes", len(e.Payload)),
	)
}

// Message is the body of the queue message that points at a stored event.
// The payload stays in the table; the message carries only the key.
type Message struct {
	Key Key `json:"key"`
}

// EncodeMessage returns the queue message body for the event key.
func EncodeMessage(k Key) (string, error) {
	if err := k.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(Message{Key: k})
	if err != nil {
		return "", fmt.Errorf("encode message: %w", err)
	}
	return string(b), nil
}

// DecodeMessage parses a queue message body. Bodies that are not messages of
// this system return an error; the processor treats them as poison.
func DecodeMessage(body string) (Message, error) {
	var m Message
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return Message{}, errors.New("decode message: data after the message")
	}
	if err := m.Key.Validate(); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	return m, nil
}

// Failure is one failed attempt, as the processor records it.
type Failure struct {
	// Owner is the lease token of the worker recording it; the failure is
	// recorded while that worker holds the lease, or while nobody holds a
	// live one (the worker's claim may itself have failed).
	Owner string
	// Status is StatusFailed (another try will come) or StatusDead.
	Status Status
	// Cause is the error text kept for operators.
	Cause string
	// RetryAt is when the event's message is due back (failed only); the
	// sweep treats the event as overdue from then on.
	RetryAt time.Time
	// MessageID is the queue message that carried the attempt (dead only):
	// the one message copied to the DLQ for it.
	MessageID string
	// Refund takes the attempt back (failed only): the invocation's own
	// deadline cut it off, which is no fault of the event's.
	Refund bool
}
