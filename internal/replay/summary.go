package replay

import (
	"encoding/json"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// Summary is the JSON the invocation returns, shaped for the console's
// result pane.
type Summary struct {
	Action string `json:"action"`
	DryRun bool   `json:"dry_run"`
	// Examined counts the items looked at (DLQ messages, events, rows);
	// Moved the messages sent to the main queue.
	Examined int `json:"examined"`
	Moved    int `json:"moved"`
	// Counts gives each outcome's number of items (see the Outcome
	// constants); in a dry run, what would have happened.
	Counts map[string]int `json:"counts"`
	// Events lists the event keys examined, the first MaxListed of them.
	Events []string `json:"events"`
	// Poison lists the ids of DLQ messages that are not ours (the first
	// MaxListed): left in the DLQ for an operator.
	Poison []string `json:"poison_messages,omitempty"`
	// Stopped says why the run ended before its work did (StoppedMax,
	// StoppedTime); Next is then the request that continues it.
	Stopped string   `json:"stopped,omitempty"`
	Next    *Request `json:"next,omitempty"`
	// Note says why a run that stopped part-way has no Next.
	Note string `json:"note,omitempty"`
	// OldestUnfinished is the unfinished event received first, and its age
	// (sweep).
	OldestUnfinished           string  `json:"oldest_unfinished,omitempty"`
	OldestUnfinishedAgeSeconds float64 `json:"oldest_unfinished_age_seconds,omitempty"`
	// OutboxForReview counts the outbox rows waiting for an operator
	// (rejected, unknown, dead), up to MaxReviewCounted (sweep).
	OutboxForReview int `json:"outbox_for_review,omitempty"`
	// Event is what inspect found.
	Event *EventView `json:"event,omitempty"`
	// Rows are the outbox rows listed for review, or the one resolved or
	// resent.
	Rows []RowView `json:"outbox_rows,omitempty"`
	// ElapsedSeconds is set in progress reports only.
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	Error          string  `json:"error,omitempty"`
	// Refused says why the request was not run (a misspelt field, an
	// unknown action, a malformed key): nothing was done.
	Refused string `json:"refused,omitempty"`
}

// MarshalJSON leaves dry_run and moved out of the answers of the actions
// that only read (inspect, outbox): they take no dry_run and move nothing,
// and an answer saying "dry_run": true would suggest a real run would.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	if s.Action != ActionInspect && s.Action != ActionOutbox {
		return json.Marshal(plain(s))
	}
	return json.Marshal(struct {
		plain
		DryRun *bool `json:"dry_run,omitempty"`
		Moved  *int  `json:"moved,omitempty"`
	}{plain: plain(s)})
}

// The outcomes Summary.Counts names.
const (
	// drain-dlq and replay: the event was made claimable (inboxstore's
	// Requeued: revived, made_due, claimable, rerun) and its message sent.
	OutcomeRevived   = "revived"
	OutcomeMadeDue   = "made_due"
	OutcomeClaimable = "claimable"
	OutcomeRerun     = "rerun"
	// OutcomeProcessed: drain deleted the message of a processed event;
	// replay left a processed event alone (re-run it with force).
	OutcomeProcessed = "processed"
	// OutcomeInProgress: another worker holds the event under a live
	// lease (drain still moves its message: the claim decides).
	OutcomeInProgress = "in_progress"
	// OutcomeOutboxPending: a processed event whose outbox has not
	// settled, not re-run.
	OutcomeOutboxPending = "outbox_pending"
	// OutcomePoison: a DLQ message that is not ours; OutcomeOrphan: one
	// (or a key) whose event is not stored. Both left as they are.
	OutcomePoison = "poison"
	OutcomeOrphan = "orphan"
	// OutcomeFiltered: outside the request's filters, left as it is.
	OutcomeFiltered = "filtered"
	// sweep.
	OutcomeRequeued = "requeued"
	OutcomeSkipped  = "skipped"
	OutcomeDead     = "dead"
	// outbox actions.
	OutcomeForReview    = "for_review"
	OutcomeResolved     = "resolved"
	OutcomeResent       = "resent"
	OutcomeNotForReview = "not_for_review"
)

// EventView is one event as inspect shows it: its state and history, and
// what its commit wrote; its payload only on request.
type EventView struct {
	Key             string `json:"key"`
	Kind            string `json:"kind"`
	Type            string `json:"type"`
	Status          string `json:"status"`
	Outcome         string `json:"outcome,omitempty"`
	PreviousOutcome string `json:"previous_outcome,omitempty"`
	Attempts        int    `json:"attempts"`
	RevivedAttempts int    `json:"revived_attempts,omitempty"`
	Reruns          int    `json:"reruns,omitempty"`
	// Swept counts the sweep's copies since the last claim: from the
	// fourth on they are spaced out by the event's age.
	Swept       int               `json:"swept,omitempty"`
	LastError   string            `json:"last_error,omitempty"`
	DeadBy      string            `json:"dead_by,omitempty"`
	CreatedAt   string            `json:"created_at,omitempty"`
	ReceivedAt  string            `json:"received_at"`
	UpdatedAt   string            `json:"updated_at,omitempty"`
	ProcessedAt string            `json:"processed_at,omitempty"`
	DueAt       string            `json:"due_at,omitempty"`
	ExpiresAt   string            `json:"expires_at,omitempty"`
	LeaseOwner  string            `json:"lease_owner,omitempty"`
	LeaseUntil  string            `json:"lease_until,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	RequestID   string            `json:"request_id,omitempty"`
	// Outbox is "pending" while some of its rows may be undelivered,
	// "settled" after, "" with no rows.
	Outbox string `json:"outbox,omitempty"`
	// Parts are the facts and entities the commit wrote, as stored now (an
	// entity may have been updated by a later event since: its
	// updated_by says).
	Parts      []PartView `json:"parts,omitempty"`
	OutboxRows []RowView  `json:"outbox_rows,omitempty"`
	// PartsNotRead counts the parts beyond what one inspect reads.
	PartsNotRead int             `json:"parts_not_read,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	// PayloadText is a payload that is not JSON (form-encoded providers).
	PayloadText string `json:"payload_text,omitempty"`
	// PayloadObject names the S3 object of a payload too large for the
	// item, with the payload's size; PayloadError says why a payload
	// asked for could not be read.
	PayloadObject string `json:"payload_object,omitempty"`
	PayloadBytes  int    `json:"payload_bytes,omitempty"`
	PayloadError  string `json:"payload_error,omitempty"`
}

// PartView is a fact or entity an event's commit wrote.
type PartView struct {
	ID         string         `json:"id"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// RowView is an outbox row: its state and history, never its body.
type RowView struct {
	Key         string `json:"key"`
	Event       string `json:"event,omitempty"`
	Action      string `json:"action,omitempty"`
	Target      string `json:"target,omitempty"`
	State       string `json:"state"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
	StatusCode  int    `json:"status_code,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
	UpdatedAt   string `json:"updated_at,omitempty"`
	DeliveredAt string `json:"delivered_at,omitempty"`
	// Resent counts an operator's resends; a resolved row says from what,
	// with the operator's note.
	Resent       int    `json:"resent,omitempty"`
	ResolvedFrom string `json:"resolved_from,omitempty"`
	Resolution   string `json:"resolution,omitempty"`
	ResolvedAt   string `json:"resolved_at,omitempty"`
	Error        string `json:"error,omitempty"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func viewEvent(e inbox.Event, payload bool) *EventView {
	v := &EventView{
		Key: e.Key.String(), Kind: e.Kind, Type: e.Type, Status: string(e.Status), Outcome: string(e.Outcome),
		PreviousOutcome: string(e.PreviousOutcome), Attempts: e.Attempts, RevivedAttempts: e.RevivedAttempts,
		Reruns: e.Reruns, Swept: e.Swept, LastError: e.LastError, DeadBy: e.DeadBy, CreatedAt: stamp(e.Created),
		ReceivedAt: stamp(e.ReceivedAt), UpdatedAt: stamp(e.UpdatedAt), ProcessedAt: stamp(e.ProcessedAt),
		DueAt: stamp(e.DueAt), ExpiresAt: stamp(e.ExpiresAt), LeaseOwner: e.LeaseOwner, LeaseUntil: stamp(e.LeaseUntil),
		Attributes: e.Attributes, Headers: e.Headers, RequestID: e.RequestID,
	}
	switch {
	case e.OutboxPending:
		v.Outbox = "pending"
	case len(e.OutboxRows) > 0:
		v.Outbox = "settled"
	}
	if r := e.PayloadRef; r != nil {
		v.PayloadObject, v.PayloadBytes = r.Object, r.Bytes
	}
	if payload {
		if json.Valid(e.Payload) {
			v.Payload = json.RawMessage(e.Payload)
		} else {
			v.PayloadText = string(e.Payload)
		}
	}
	return v
}

func viewRow(r outbox.Row) RowView {
	v := RowView{
		Key: r.Key, Action: r.Action, Target: r.Target, State: string(r.State), Attempts: r.Attempts,
		LastError: r.LastError, StatusCode: r.StatusCode, CreatedAt: stamp(r.CreatedAt),
		UpdatedAt: stamp(r.UpdatedAt), DeliveredAt: stamp(r.DeliveredAt), Resent: r.Resent,
		ResolvedFrom: string(r.ResolvedFrom), Resolution: r.Resolution, ResolvedAt: stamp(r.ResolvedAt),
	}
	if r.Event != (inbox.Key{}) {
		v.Event = r.Event.String()
	}
	return v
}
