package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// Request is the console or CLI test event, or the sweep's schedule:
//
//	{"action": "drain-dlq", "dry_run": false, "max": 100, "source": "stripe"}
//	{"action": "replay", "event_keys": ["stripe##evt_1"], "dry_run": false}
//	{"action": "replay", "status": "failed", "received_from": "2026-12-01T00:00:00Z", "dry_run": false}
//	{"action": "replay", "event_keys": ["stripe##evt_1"], "force": true, "dry_run": false}
//	{"action": "sweep", "dry_run": false, "older_than_seconds": 300}
//	{"action": "inspect", "event_key": "stripe##evt_1"}
//	{"action": "outbox"}
//	{"action": "outbox-resolve", "outbox_key": "…", "note": "refunded by hand", "dry_run": false}
//	{"action": "outbox-resend", "outbox_key": "…", "dry_run": false}
//
// dry_run defaults to true: nothing moves unless it is false. Times are
// RFC 3339; received_from is inclusive, received_to exclusive.
type Request struct {
	Action string `json:"action,omitempty"`
	DryRun *bool  `json:"dry_run,omitempty"`
	// Max bounds the items one run examines (DefaultMax, at most MaxMax).
	Max int `json:"max,omitempty"`
	// Filters (drain-dlq, replay).
	Source       string   `json:"source,omitempty"`
	Account      *string  `json:"account,omitempty"`
	EventType    string   `json:"event_type,omitempty"`
	ReceivedFrom string   `json:"received_from,omitempty"`
	ReceivedTo   string   `json:"received_to,omitempty"`
	EventKeys    []string `json:"event_keys,omitempty"`
	Status       string   `json:"status,omitempty"`
	Force        bool     `json:"force,omitempty"`
	Cursor       string   `json:"cursor,omitempty"`
	// OlderThanSeconds overrides the sweep's threshold (SWEEP_AFTER_SECONDS).
	OlderThanSeconds int `json:"older_than_seconds,omitempty"`
	// inspect.
	EventKey       string `json:"event_key,omitempty"`
	IncludePayload bool   `json:"include_payload,omitempty"`
	// outbox-resolve, outbox-resend.
	OutboxKey string `json:"outbox_key,omitempty"`
	Note      string `json:"note,omitempty"`
}

// fields lists, per action, the request fields it takes besides action.
var fields = map[string][]string{
	ActionDrainDLQ:      {"dry_run", "max", "source", "account", "event_type", "received_from", "received_to"},
	ActionReplay:        {"dry_run", "max", "source", "account", "event_type", "received_from", "received_to", "event_keys", "status", "force", "cursor"},
	ActionSweep:         {"dry_run", "max", "older_than_seconds"},
	ActionInspect:       {"event_key", "include_payload"},
	ActionOutbox:        {"max"},
	ActionOutboxResolve: {"dry_run", "outbox_key", "note"},
	ActionOutboxResend:  {"dry_run", "outbox_key"},
}

// set lists the JSON names of the fields req sets.
func (req Request) set() []string {
	var out []string
	v, t := reflect.ValueOf(req), reflect.TypeOf(req)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "action" && !v.Field(i).IsZero() {
			out = append(out, name)
		}
	}
	return out
}

// checked is a request validated and parsed.
type checked struct {
	dryRun    bool
	max       int
	source    string
	account   *string
	eventType string
	from, to  time.Time
	keys      []inbox.Key
	status    inbox.Status
}

// maxOlderThan bounds older_than_seconds: a year, longer than any event
// waits unfinished.
const maxOlderThan = 366 * 24 * 3600

// Validate reports what is wrong with the request, as Handle would refuse
// it, without running it.
func (req Request) Validate(now time.Time) error {
	if req.Action == "" {
		req.Action = ActionDrainDLQ
	}
	_, err := req.check(now)
	return err
}

// check validates the request for its action; every problem is an
// ErrBadRequest naming the field.
func (req Request) check(now time.Time) (checked, error) {
	allowed, ok := fields[req.Action]
	if !ok {
		names := make([]string, 0, len(fields))
		for a := range fields {
			names = append(names, a)
		}
		slices.Sort(names)
		return checked{}, badRequest("unknown action %q (want one of %s)", req.Action, strings.Join(names, ", "))
	}
	for _, f := range req.set() {
		if !slices.Contains(allowed, f) {
			return checked{}, badRequest("%s does not take %q (it takes %s)", req.Action, f, strings.Join(allowed, ", "))
		}
	}
	q := checked{dryRun: req.DryRun == nil || *req.DryRun, max: req.Max, source: req.Source, account: req.Account, eventType: req.EventType}
	if q.max == 0 {
		q.max = DefaultMax
	}
	if q.max < 0 || q.max > MaxMax {
		return checked{}, badRequest("max %d: want 1..%d", req.Max, MaxMax)
	}
	var err error
	if q.from, err = parseTime("received_from", req.ReceivedFrom); err != nil {
		return checked{}, err
	}
	if q.to, err = parseTime("received_to", req.ReceivedTo); err != nil {
		return checked{}, err
	}
	if !q.from.IsZero() && !q.to.IsZero() && !q.from.Before(q.to) {
		return checked{}, badRequest("received_from %s is not before received_to %s", req.ReceivedFrom, req.ReceivedTo)
	}
	if req.OlderThanSeconds < 0 || req.OlderThanSeconds > maxOlderThan {
		return checked{}, badRequest("older_than_seconds %d: a positive number up to %d", req.OlderThanSeconds, maxOlderThan)
	}
	switch req.Action {
	case ActionReplay:
		switch {
		case len(req.EventKeys) > 0 && req.Status != "":
			return checked{}, badRequest("replay takes event_keys or status, not both")
		case len(req.EventKeys) > MaxMax:
			return checked{}, badRequest("%d event_keys: at most %d", len(req.EventKeys), MaxMax)
		case len(req.EventKeys) > 0:
			if req.Cursor != "" || !q.from.IsZero() || !q.to.IsZero() {
				return checked{}, badRequest("event_keys name the events: no cursor or time range with them")
			}
			for _, s := range req.EventKeys {
				k, err := inbox.ParseKey(s)
				if err != nil {
					return checked{}, badRequest("event_keys: %v (keys read source#account#event_id, as summaries print them)", err)
				}
				q.keys = append(q.keys, k)
			}
		case req.Status != "":
			q.status = inbox.Status(req.Status)
			if q.status != inbox.StatusFailed && q.status != inbox.StatusDead && q.status != inbox.StatusReceived {
				return checked{}, badRequest("status %q: want failed, dead or received (processed events are re-run by event_keys with force)", req.Status)
			}
		default:
			return checked{}, badRequest("replay needs event_keys or a status")
		}
		if req.Force && q.status != "" {
			return checked{}, badRequest("force re-runs processed events, which are named by event_keys")
		}
		if err := inboxstore.CheckCursor(q.status, req.Cursor); err != nil {
			return checked{}, badRequest("%v: give the cursor of a summary's next request, with its status", err)
		}
	case ActionInspect:
		if req.EventKey == "" {
			return checked{}, badRequest("inspect needs event_key")
		}
		k, err := inbox.ParseKey(req.EventKey)
		if err != nil {
			return checked{}, badRequest("event_key: %v", err)
		}
		q.keys = []inbox.Key{k}
	case ActionOutboxResolve, ActionOutboxResend:
		if req.OutboxKey == "" {
			return checked{}, badRequest("%s needs outbox_key (the outbox action lists them)", req.Action)
		}
	}
	return q, nil
}

func parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, badRequest("%s %q: want an RFC 3339 time such as 2026-12-01T09:00:00Z", name, s)
	}
	return t, nil
}

// DecodeRequest reads the invocation payload strictly: an unknown field is
// an error that names the field it is closest to. An empty payload is a
// dry run of drain-dlq with the defaults.
func DecodeRequest(payload []byte) (Request, error) {
	var req Request
	if len(bytes.TrimSpace(payload)) == 0 {
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			if near := nearest(strings.Trim(name, `"`)); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
		}
		return Request{}, fmt.Errorf("%w: %s", ErrBadRequest, msg)
	}
	if dec.More() {
		return Request{}, fmt.Errorf("%w: more than one JSON value", ErrBadRequest)
	}
	return req, nil
}

// aliases are names operators reach for that mean a field.
var aliases = map[string]string{"limit": "max", "key": "event_key", "keys": "event_keys", "dryrun": "dry_run", "type": "event_type"}

// nearest is the request field a misspelt name most likely meant: an
// alias, or a field within two edits; "" if none.
func nearest(name string) string {
	lower := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	if a, ok := aliases[strings.ReplaceAll(lower, "_", "")]; ok {
		return a
	}
	if a, ok := aliases[lower]; ok {
		return a
	}
	best, bestD := "", 3
	t := reflect.TypeOf(Request{})
	for i := range t.NumField() {
		f, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if d := distance(lower, f); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
