package outbox

import (
	"context"
	"time"
)

// Bus puts entries on EventBridge event buses, one PutEvents request a
// call, never retried by itself (a retry of a written request would be a
// second put): package eventbus over the SDK.
type Bus interface {
	// PutEntries makes one request of entries and returns each entry's
	// outcome, in their order; or, for a request that failed whole, a
	// *PutError saying how.
	PutEntries(ctx context.Context, entries []BusEntry) ([]BusOutcome, error)
}

// BusEntry is one entry of a PutEvents request.
type BusEntry struct {
	Bus, Source, DetailType, Detail string
	Time                            time.Time
}

// BusOutcome is what EventBridge answered for one entry: an EventID when
// it accepted it, else the error it gave.
type BusOutcome struct {
	EventID string
	// Error is EventBridge's code and message for a refused entry.
	Error string
	// Permanent says putting the same entry again cannot cure it (a
	// malformed entry).
	Permanent bool
}

// PutFailure is how a PutEvents request failed whole.
type PutFailure int

// The ways a request fails whole.
const (
	// PutRefused: EventBridge refused it with a 4xx (throttling, a
	// missing bus, a denied permission): nothing was put.
	PutRefused PutFailure = iota
	// PutInvalid: refused as invalid in itself, by EventBridge or by the
	// SDK before sending: the same request will be refused again.
	PutInvalid
	// PutNotSent: the request was never written whole.
	PutNotSent
	// PutUnknown: a 5xx, a timeout or a connection lost after the request
	// was written: its entries may have been put.
	PutUnknown
)

// PutError is a PutEvents request that failed whole.
type PutError struct {
	Failure PutFailure
	// StatusCode is the HTTP status of EventBridge's answer, 0 if none.
	StatusCode int
	Err        error
}

func (e *PutError) Error() string { return "PutEvents: " + e.Err.Error() }
func (e *PutError) Unwrap() error { return e.Err }
