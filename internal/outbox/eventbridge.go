package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Events reads the stored events whose payloads forwarding rows carry to
// EventBridge (the store: claimcheck.Store).
type Events interface {
	// ReadEvent reads the event eventually consistently, a payload kept
	// in S3 left in its object: what a forwarding row needs of it (its
	// key, type, time of receipt and payload) never changes once it is
	// stored, and a read that misses it is made again, consistently.
	ReadEvent(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error)
	Payload(ctx context.Context, ev inbox.Event) ([]byte, error)
}

// put delivers a forwarding row (effects.ActionEventBridge): the entry
// its body describes, with the Detail built from its event's stored
// payload, put by the batcher in one PutEvents request, alone or with
// other rows' entries (tk is its ticket). It must end before leaseEnd. The outcome is
// classified as send does for HTTP:
//
//   - an entry EventBridge accepted (an EventId): delivered;
//   - an entry it refused (FailedEntryCount): failed, retried with
//     backoff, or rejected for a malformed entry;
//   - an error answer with a 4xx status (throttling, a missing bus, a
//     denied permission): the request was refused whole: failed, or
//     rejected if it is invalid in itself;
//   - a request never written whole, or never started for want of time:
//     failed;
//   - a 5xx answer, a timeout or a connection lost after the request was
//     written: unknown, or failed (put again) for a route that retries
//     unknowns, its consumers deduping on the event key.
//
// The SDK's own retries are off for the call: a retry of a written
// request is a second put, which only the route may allow.
//
// It also returns how many entries the request carried (0: none was made).
func (d *Deliverer) put(ctx context.Context, tk *ticket, t Target, r Row, leaseEnd time.Time) (Result, int) {
	if d.batcher == nil || d.cfg.Events == nil {
		return Result{State: Failed, Cause: "no EventBridge client is configured"}, 0
	}
	entry, size, res := d.entry(ctx, r.Body, nil)
	if res.State != "" {
		return res, 0
	}
	return d.batcher.put(ctx, tk, t, entry, size, leaseEnd)
}

// entry builds the PutEvents entry of a forwarding row's body, with the
// Detail from its event's stored payload, and returns the entry's size as
// EventBridge counts it. ev is the event in hand (a put ahead of its
// commit); nil, it is read. A row that cannot be put returns its outcome.
func (d *Deliverer) entry(ctx context.Context, body []byte, ev *inbox.Event) (BusEntry, int, Result) {
	var fr forward.Row
	if err := json.Unmarshal(body, &fr); err != nil || fr.Bus == "" || fr.Source == "" || fr.DetailType == "" {
		return BusEntry{}, 0, Result{State: Rejected, Cause: fmt.Sprintf("not a forwarding row (%v)", err)}
	}
	at, err := time.Parse(time.RFC3339, fr.Time)
	if err != nil {
		return BusEntry{}, 0, Result{State: Rejected, Cause: "forwarding row: time: " + err.Error()}
	}
	if ev == nil {
		k, err := inbox.ParseKey(fr.EventKey)
		if err != nil {
			return BusEntry{}, 0, Result{State: Rejected, Cause: "forwarding row: event key: " + err.Error()}
		}
		read, err := d.cfg.Events.ReadEvent(ctx, k, d.cfg.Now())
		switch {
		case errors.Is(err, inbox.ErrNotFound):
			return BusEntry{}, 0, Result{State: Rejected, Cause: "its event is no longer stored"}
		case errors.Is(err, inbox.ErrInvalid):
			return BusEntry{}, 0, Result{State: Rejected, Cause: "its event: " + err.Error()}
		case err != nil:
			return BusEntry{}, 0, Result{State: Failed, Cause: "reading its event: " + err.Error()}
		}
		ev = &read
	}
	payload, err := d.cfg.Events.Payload(ctx, *ev)
	switch {
	case errors.Is(err, inbox.ErrInvalid):
		return BusEntry{}, 0, Result{State: Rejected, Cause: "its event's payload: " + err.Error()}
	case err != nil:
		return BusEntry{}, 0, Result{State: Failed, Cause: "reading its event's payload: " + err.Error()}
	}
	detail, err := forward.Detail(fr, forward.MetaOf(*ev), payload)
	if err != nil {
		return BusEntry{}, 0, Result{State: Rejected, Cause: err.Error()}
	}
	return BusEntry{Bus: fr.Bus, Source: fr.Source, DetailType: fr.DetailType, Detail: string(detail), Time: at}, forward.Size(fr, detail), Result{}
}

// entryOutcome is what an entry's place in a PutEvents answer makes of
// its row.
func entryOutcome(o BusOutcome) Result {
	switch {
	case o.EventID != "":
		return Result{State: Delivered, DeliveredTo: "eventbridge"}
	case o.Permanent:
		return Result{State: Rejected, Cause: "EventBridge refused the entry: " + o.Error}
	}
	return Result{State: Failed, Cause: "EventBridge refused the entry: " + o.Error}
}

// requestOutcome is what a PutEvents request that failed whole makes of
// each row it carried, for the row's target.
func requestOutcome(t Target, err error) Result {
	var pe *PutError
	if !errors.As(err, &pe) {
		return unknownPut(t, "PutEvents: "+err.Error())
	}
	switch pe.Failure {
	case PutRefused:
		return Result{State: Failed, StatusCode: pe.StatusCode, Cause: pe.Error()}
	case PutInvalid:
		return Result{State: Rejected, StatusCode: pe.StatusCode, Cause: pe.Error()}
	case PutNotSent:
		return Result{State: Failed, Cause: "PutEvents not sent: " + pe.Err.Error()}
	}
	return unknownPut(t, pe.Error())
}

// unknownPut is the result of a put that may have reached EventBridge.
func unknownPut(t Target, cause string) Result {
	if t.RetryUnknown {
		return Result{State: Failed, Cause: "outcome unknown, put again as the route retries unknowns: " + cause}
	}
	return Result{State: Unknown, Cause: "the put was sent and its outcome is unknown: " + cause}
}
