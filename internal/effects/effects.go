// Package effects is what an event handler may declare, in three kinds of
// part, all committed atomically with the event's status by the processor
// (handlers never touch storage or the network themselves):
//
//   - Facts: business records that exist at most once, keyed by the fact
//     they represent (an invoice id, a commit sha — never an event id).
//   - Updates: changes to an entity's state (a membership's paid-through
//     date, a subscription's status), guarded by an order or by allowed
//     transitions so that an older event never undoes a newer one, and
//     optionally tied to a fact so that they apply once per fact.
//   - Outbound rows: calls to other systems (a receipt, a notification),
//     written to the outbox in the same transaction and delivered after
//     it with a stable idempotency key.
//
// A part may belong to another (an update to a fact, a row to a fact or an
// update): when the part it belongs to is left out — a duplicate fact, a
// stale update — so is it.
package effects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Part ID prefixes: every part is one item of the table, under its ID.
const (
	FactPrefix     = "fact#"
	EntityPrefix   = "entity#"
	OutboundPrefix = "outbox#"
)

// Scopes. The parts of one event are stored in its scope: the key space
// of its source and account (see inbox.Event.PartScope), so that two
// tenants, or a live and a test source, naming the same invoice or the
// same customer write two facts and two entities, never one. The processor
// applies the scope, not the handler: a plan's IDs and keys are the same
// whoever the event is from, and the store turns them into stored ones
// with ScopedID and ScopedKey.
//
// A stored ID is the part's type prefix, '@', the scope, '#' and the rest
// of the plan's ID: fact#@stripe#acct_1#invoice_paid#in_1. A scope is
// "name#account" (neither part holds '#', so it ends at its second '#'),
// and Validate refuses kinds and row keys that start with '@', so a stored
// ID in a scope is never an unscoped one (events stored before parts had
// scopes keep their unscoped IDs: the empty scope).
const scopeMark = "@"

// ScopedID is a part's ID (Fact.ID, Update.ID, Outbound.ID) as stored in
// scope; the empty scope leaves it as it is.
func ScopedID(scope, id string) string {
	if scope == "" {
		return id
	}
	if prefix, rest, ok := cutPart(id); ok {
		return prefix + scopeMark + scope + "#" + rest
	}
	return scopeMark + scope + "#" + id
}

// IsUnscopedPartID reports whether a stored ID is a part's outside any
// scope: one an earlier release wrote.
func IsUnscopedPartID(id string) bool {
	_, rest, ok := cutPart(id)
	return ok && !strings.HasPrefix(rest, scopeMark)
}

// cutPart splits a part's ID into its type prefix and the rest.
func cutPart(id string) (prefix, rest string, ok bool) {
	for _, prefix := range [...]string{FactPrefix, EntityPrefix, OutboundPrefix} {
		if rest, ok := strings.CutPrefix(id, prefix); ok {
			return prefix, rest, true
		}
	}
	return "", "", false
}

// ScopedKey is an outbound row's key as stored in scope, and as sent in
// its Idempotency-Key header: its receiver tells two tenants' calls apart
// too. OutboundPrefix + ScopedKey(scope, key) is ScopedID(scope, the
// row's ID).
func ScopedKey(scope, key string) string {
	if scope == "" {
		return key
	}
	return scopeMark + scope + "#" + key
}

// Fact is one business fact. Kind and Key together are its identity: a
// second fact with the same identity — from a retry or from a different
// event carrying the same fact — is never written.
type Fact struct {
	// Kind names the fact, e.g. "invoice_paid".
	Kind string
	// Key identifies it within Kind, e.g. the invoice id.
	Key string
	// Attributes are stored with the fact: string, number and bool
	// values, under names other than the ReservedFact ones.
	Attributes map[string]any
}

// ID is the stored identity of the fact.
func (f Fact) ID() string { return FactPrefix + f.Kind + "#" + f.Key }

// Update changes one entity, created on its first update. Its guard —
// Order, Transition, or both — decides whether it is newer than the state
// it finds; an update the guard refuses is stale and changes nothing.
// An update needs at least one of Set, Add and Transition, and an Order
// or an After: those make it apply once (a Transition alone does not —
// its state may always be entered again).
type Update struct {
	// Entity names the kind of entity, e.g. "membership".
	Entity string
	// Key identifies it within Entity, e.g. the customer id.
	Key string
	// Set gives attributes their new values (strings, numbers, bools).
	Set map[string]any
	// Add adds numbers to numeric attributes (absent ones start at 0).
	Add map[string]any
	// Order, if set, applies the update only when it is after the order
	// of the last update applied to the entity (an entity keeps one
	// order: keep separately ordered state in separate entities).
	Order *Order
	// Transition, if set, moves a state attribute, only along allowed
	// transitions.
	Transition *Transition
	// After is the ID of a fact of the same plan: the update applies only
	// when that fact is new, so a second event carrying the fact changes
	// nothing.
	After string
}

// ID is the stored identity of the entity.
func (u Update) ID() string { return EntityPrefix + u.Entity + "#" + u.Key }

// Order places an update in its entity's history: by Seq, then by Tie
// for equal Seqs. An update applies only if its order is strictly after
// the entity's, so the same order never applies twice.
type Order struct {
	Seq int64
	Tie string
}

// ByCreated orders by the provider's creation time of the event, with the
// event id as tie-break: the ordering for providers that give no sequence.
// Events created in the same millisecond are ordered by id, arbitrarily
// but the same way for every worker. An event with no creation time gives
// a negative order, which Validate refuses: a handler should say so itself.
func ByCreated(ev inbox.Event) *Order {
	return &Order{Seq: ev.Created.UnixMilli(), Tie: ev.Key.EventID}
}

// Transition moves the entity's Attr to To, if Attr is absent or holds
// one of From.
type Transition struct {
	Attr string
	To   string
	From []string
}

// Machine lists each state's allowed successors. A state may always be
// entered again from itself; a state with no successors is final.
type Machine map[string][]string

// Into is the transition to state to in attribute attr: allowed from to
// itself and from every state that lists it.
func (m Machine) Into(attr, to string) *Transition {
	from := []string{to}
	for s, next := range m {
		if s != to && slices.Contains(next, to) {
			from = append(from, s)
		}
	}
	slices.Sort(from)
	return &Transition{Attr: attr, To: to, From: from}
}

// The outbound actions: ActionHTTP, a JSON POST to the URL configured for
// the row's target; ActionEventBridge, a PutEvents entry (package forward
// writes these rows, from configuration).
const (
	ActionHTTP        = "http"
	ActionEventBridge = "eventbridge"
)

// Outbound is a call to another system, delivered after the commit.
type Outbound struct {
	// Action is how the call is made; empty means ActionHTTP.
	Action string
	// Target names the configured receiver, e.g. "receipt": the URL and
	// its options are deployment configuration, not part of the row.
	Target string
	// Key is the idempotency key, sent as the Idempotency-Key header:
	// one row per key ever exists, so it names what the call is about
	// (see KeyOf), not when it was made.
	Key string
	// Body is the JSON document sent.
	Body json.RawMessage
	// Of is the ID of the fact or update of the same plan the row belongs
	// to; empty when it belongs to the event alone.
	Of string
}

// ID is the stored identity of the row.
func (o Outbound) ID() string { return OutboundPrefix + o.Key }

// KeyOf is the idempotency key of a call to target about a part (a fact's
// ID) or about an event (its key's String). An update's ID is its
// entity's, so a row keyed by it is one row per entity ever: every later
// update's row would be refused as existing. Key an update's rows by the
// event, or by the order the update carries.
func KeyOf(about, target string) string { return about + "/" + target }

// Plan is everything a handler wants done for one event.
type Plan struct {
	Facts    []Fact
	Updates  []Update
	Outbound []Outbound
}

// Len is the number of parts of the plan.
func (p Plan) Len() int { return len(p.Facts) + len(p.Updates) + len(p.Outbound) }

// Limits a plan must keep to commit in one DynamoDB transaction with the
// event's status.
const (
	// MaxParts leaves one of TransactWriteItems' 100 items to the event.
	MaxParts = 99
	// MaxIDBytes keeps a part's ID within DynamoDB's 2048-byte partition
	// key.
	MaxIDBytes = 2048
	// MaxKeyBytes bounds an outbound row's idempotency key: the event
	// lists its rows' keys, and the key travels as a header.
	MaxKeyBytes = 1024
	// MaxOutboundKeyBytes bounds the keys of one plan's rows together:
	// the event lists them, and the event, its payload included, must
	// stay one 400 KB item.
	MaxOutboundKeyBytes = 16 << 10
	// MaxAttributes bounds the attributes one update changes, keeping its
	// update expression inside DynamoDB's limits (4 KB, 300 operators).
	MaxAttributes = 100
	// MaxPartBytes keeps a part, with the store's own attributes, well
	// inside DynamoDB's 400 KB item.
	MaxPartBytes = 350 << 10
	// MaxPlanBytes keeps the transaction inside DynamoDB's 4 MB, with room
	// for the event's own update.
	MaxPlanBytes = 3 << 20
)

// Attribute names the store writes on parts, and those the table itself
// gives a meaning (its TTL attribute, the keys and filter of its index: a
// part carrying them would expire, or enter the sweep's index); a handler
// may not use them.
var (
	ReservedFact   = names("pk", "fact_kind", "fact_key", "event_key", "recorded_at", "expires_at", "sweep_shard", "received_ms", "due_ms")
	ReservedEntity = names("pk", "entity_kind", "entity_key", "seq", "seq_tie", "updated_by", "updated_at", "expires_at", "sweep_shard", "received_ms", "due_ms")
)

func names(n ...string) map[string]bool {
	m := make(map[string]bool, len(n))
	for _, s := range n {
		m[s] = true
	}
	return m
}

// Validate checks that every part has an identity, that no identity
// appears twice, that every attribute has a name the store does not
// reserve and a value it can store, that every part a part belongs to is
// in the plan, and that the plan fits one DynamoDB transaction (MaxParts,
// MaxIDBytes, MaxPartBytes, MaxPlanBytes). A plan it refuses would be
// refused every time: the processor treats it as a permanent error.
// Validate checks identities and keys unscoped; the processor checks a
// plan with ValidateIn, in its event's scope.
func (p Plan) Validate() error { return p.ValidateIn("") }

// ValidateIn is Validate with the identities and keys as they are stored
// in scope (ScopedID, ScopedKey): their lengths are the stored ones'.
func (p Plan) ValidateIn(scope string) error {
	if n := p.Len(); n > MaxParts {
		return fmt.Errorf("%d parts (%d facts, %d updates, %d outbound): at most %d commit with the event",
			n, len(p.Facts), len(p.Updates), len(p.Outbound), MaxParts)
	}
	v := validator{seen: make(map[string]string, p.Len()), scope: scope}
	for i, f := range p.Facts {
		v.part(fmt.Sprintf("fact %d", i), "fact", f.ID(), f.Kind, f.Key)
		v.attrs(fmt.Sprintf("fact %d", i), f.Attributes, ReservedFact, nil)
		v.end(fmt.Sprintf("fact %d", i))
	}
	for i, u := range p.Updates {
		v.update(fmt.Sprintf("update %d (%s)", i, u.ID()), u)
	}
	keys := 0
	for i, o := range p.Outbound {
		v.outbound(fmt.Sprintf("outbound %d (%s)", i, o.ID()), o)
		keys += len(ScopedKey(scope, o.Key))
	}
	if v.err == nil && keys > MaxOutboundKeyBytes {
		v.err = fmt.Errorf("outbound keys of %d bytes together, over %d (the event lists them)", keys, MaxOutboundKeyBytes)
	}
	if v.err == nil && v.total > MaxPlanBytes {
		v.err = fmt.Errorf("parts of about %d bytes, over %d in one transaction", v.total, MaxPlanBytes)
	}
	return v.err
}

// validator keeps the first error of a plan's check, the IDs seen (with
// their part type) and the plan's size so far.
type validator struct {
	err   error
	scope string
	seen  map[string]string
	size  int
	total int
}

func (v *validator) fail(format string, args ...any) {
	if v.err == nil {
		v.err = fmt.Errorf(format, args...)
	}
}

// part checks a part's identity and starts counting its size.
func (v *validator) part(what, typ, id, kind, key string) {
	switch {
	case kind == "" || key == "":
		v.fail("%s: empty kind or key", what)
	case strings.Contains(kind, "#"):
		v.fail("%s: '#' in kind %q", what, kind)
	case strings.HasPrefix(kind, scopeMark):
		v.fail("%s: kind %q starts with %q, which marks a scope", what, kind, scopeMark)
	case !headerSafe(kind) || !headerSafe(key):
		v.fail("%s: kind or key is not UTF-8 or holds a control character", what)
	case len(ScopedID(v.scope, id)) > MaxIDBytes:
		v.fail("%s: identity of %d bytes stored, over %d", what, len(ScopedID(v.scope, id)), MaxIDBytes)
	case v.seen[id] != "":
		v.fail("%s: %s declared twice", what, id)
	}
	v.seen[id] = typ
	v.size = len(ScopedID(v.scope, id))*2 + 128
}

// attrs checks attributes and counts their size.
func (v *validator) attrs(what string, attrs map[string]any, reserved, taken map[string]bool) {
	for name, val := range attrs {
		switch {
		case reserved[name]:
			v.fail("%s: attribute %q is the store's own", what, name)
		case taken[name]:
			v.fail("%s: attribute %q set twice", what, name)
		case name == "" || !utf8.ValidString(name):
			v.fail("%s: attribute name %q: empty or not UTF-8", what, name)
		}
		n, err := valueSize(val)
		if err != nil {
			v.fail("%s: attribute %q: %w", what, name, err)
		}
		v.size += len(name) + n
	}
}

func (v *validator) end(what string) {
	if v.size > MaxPartBytes {
		v.fail("%s: about %d bytes, over %d", what, v.size, MaxPartBytes)
	}
	v.total += v.size
	v.size = 0
}

func (v *validator) update(what string, u Update) {
	v.part(what, "update", u.ID(), u.Entity, u.Key)
	if len(u.Set) == 0 && len(u.Add) == 0 && u.Transition == nil {
		v.fail("%s: nothing to change (no Set, Add or Transition)", what)
	}
	if u.Order == nil && u.After == "" {
		// A transition alone allows its state to be entered again (and
		// from states after it): a second commit of the plan — a forced
		// re-run, another event with the same update — would apply it
		// again (an Add twice) or move the entity back. An order applies
		// once (strictly after), a fact once ever.
		v.fail("%s: neither ordered (Order) nor tied to a fact (After): it could be applied again", what)
	}
	if n := len(u.Set) + len(u.Add); n > MaxAttributes {
		v.fail("%s: %d attributes, over %d in one update", what, n, MaxAttributes)
	}
	for name, val := range u.Add {
		if !isNumber(val) {
			v.fail("%s: Add %q: %T is not a number", what, name, val)
		}
	}
	taken := make(map[string]bool, len(u.Set)+1)
	for name := range u.Set {
		taken[name] = true
	}
	if t := u.Transition; t != nil {
		switch {
		case t.Attr == "" || t.To == "":
			v.fail("%s: transition with an empty attribute or state", what)
		case !utf8.ValidString(t.Attr):
			v.fail("%s: transition attribute is not UTF-8", what)
		case ReservedEntity[t.Attr]:
			v.fail("%s: transition attribute %q is the store's own", what, t.Attr)
		case taken[t.Attr]:
			v.fail("%s: attribute %q both set and transitioned", what, t.Attr)
		case len(t.From) > 99:
			v.fail("%s: transition from %d states, over 99", what, len(t.From))
		}
		taken[t.Attr] = true
		for _, s := range append([]string{t.To}, t.From...) {
			v.size += len(s)
			if !utf8.ValidString(s) {
				v.fail("%s: transition state is not UTF-8", what)
			}
		}
	}
	if o := u.Order; o != nil {
		v.size += len(o.Tie) + 21
		switch {
		case !utf8.ValidString(o.Tie):
			v.fail("%s: order tie-break is not UTF-8", what)
		case o.Seq < 0:
			v.fail("%s: order %d is negative (an event with no creation time?)", what, o.Seq)
		}
	}
	if u.After != "" && v.seen[u.After] != "fact" {
		v.fail("%s: after %q, which is not a fact of this plan", what, u.After)
	}
	// Set and Add share the entity's attribute names.
	v.attrs(what, u.Set, ReservedEntity, nil)
	v.attrs(what, u.Add, ReservedEntity, taken)
	v.end(what)
}

func (v *validator) outbound(what string, o Outbound) {
	switch {
	case o.Action != "" && o.Action != ActionHTTP && o.Action != ActionEventBridge:
		v.fail("%s: action %q: want %q or %q", what, o.Action, ActionHTTP, ActionEventBridge)
	case o.Target == "" || o.Key == "":
		v.fail("%s: empty target or key", what)
	case strings.HasPrefix(o.Key, scopeMark):
		v.fail("%s: key starts with %q, which marks a scope", what, scopeMark)
	case len(ScopedKey(v.scope, o.Key)) > MaxKeyBytes:
		v.fail("%s: key of %d bytes stored, over %d", what, len(ScopedKey(v.scope, o.Key)), MaxKeyBytes)
	case !headerSafe(o.Key):
		v.fail("%s: key is not UTF-8 or holds a control character", what)
	case !utf8.ValidString(o.Target):
		v.fail("%s: target is not UTF-8", what)
	case (o.Action == "" || o.Action == ActionHTTP) && !targetName.MatchString(o.Target):
		// A declared target's name, never a forwarding route's
		// ("eventbridge:…", configured without a URL): a call naming
		// one would be delivered to the log.
		v.fail("%s: target %q is not a target name (%s)", what, o.Target, TargetNamePattern)
	case !json.Valid(o.Body):
		v.fail("%s: body is not JSON", what)
	case !utf8.Valid(o.Body):
		v.fail("%s: body is not UTF-8", what)
	case o.Of != "" && v.seen[o.Of] != "fact" && v.seen[o.Of] != "update":
		v.fail("%s: of %q, which is not a fact or update of this plan", what, o.Of)
	case v.seen[o.ID()] != "":
		v.fail("%s: %s declared twice", what, o.ID())
	}
	v.seen[o.ID()] = "outbound"
	v.size = len(ScopedID(v.scope, o.ID()))*2 + len(o.Target) + len(o.Body) + 256
	v.end(what)
}

// headerSafe reports whether s is valid UTF-8 without control characters:
// what an identity may hold (it is logged, and an outbound row's key
// travels as an HTTP header).
func headerSafe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

// valueSize is an upper bound of a value's stored size, for the types a
// part may carry: strings (UTF-8), integers, floats and booleans.
func valueSize(v any) (int, error) {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return 0, errors.New("string is not UTF-8")
		}
		return len(v), nil
	case bool:
		return 1, nil
	case float64:
		if err := storable(v); err != nil {
			return 0, err
		}
	case float32:
		if err := storable(float64(v)); err != nil {
			return 0, err
		}
	}
	if isNumber(v) {
		return 21, nil
	}
	return 0, fmt.Errorf("value of type %T: want a string, a number or a bool", v)
}

// storable refuses the floats DynamoDB cannot keep: NaN, infinities, and
// magnitudes outside 1e-130 to 9.9…e125.
func storable(f float64) error {
	a := math.Abs(f)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return errors.New("NaN or infinite number")
	case a >= 1e126 || (a != 0 && a < 1e-130):
		return fmt.Errorf("number %g is outside DynamoDB's range", f)
	}
	return nil
}

// Drop returns the plan without the parts whose IDs are listed and
// without every part that belongs to one of them, directly or through
// another; dropped lists every part removed, the listed ones first.
func (p Plan) Drop(ids ...string) (rest Plan, dropped []string) {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !gone[id] {
			gone[id] = true
			dropped = append(dropped, id)
		}
	}
	for _, f := range p.Facts {
		if !gone[f.ID()] {
			rest.Facts = append(rest.Facts, f)
		}
	}
	// Updates belong only to facts, rows to facts or updates: one pass in
	// that order reaches every dependant.
	for _, u := range p.Updates {
		switch {
		case gone[u.ID()]:
		case u.After != "" && gone[u.After]:
			gone[u.ID()] = true
			dropped = append(dropped, u.ID())
		default:
			rest.Updates = append(rest.Updates, u)
		}
	}
	for _, o := range p.Outbound {
		switch {
		case gone[o.ID()]:
		case o.Of != "" && gone[o.Of]:
			gone[o.ID()] = true
			dropped = append(dropped, o.ID())
		default:
			rest.Outbound = append(rest.Outbound, o)
		}
	}
	return rest, dropped
}

// IDs lists the IDs of the plan's parts: facts, updates, then rows.
func (p Plan) IDs() []string {
	out := make([]string, 0, p.Len())
	for _, f := range p.Facts {
		out = append(out, f.ID())
	}
	for _, u := range p.Updates {
		out = append(out, u.ID())
	}
	for _, o := range p.Outbound {
		out = append(out, o.ID())
	}
	return out
}

// RefusedError reports the parts of a plan that could not commit: facts
// and rows that exist already (written for an earlier event carrying the
// same fact) and updates whose guard refused them (stale). Nothing of the
// plan was written.
type RefusedError struct {
	Exists []string
	Stale  []string
}

func (e *RefusedError) Error() string {
	var parts []string
	if len(e.Exists) > 0 {
		parts = append(parts, "already recorded: "+strings.Join(e.Exists, ", "))
	}
	if len(e.Stale) > 0 {
		parts = append(parts, "stale: "+strings.Join(e.Stale, ", "))
	}
	return "effects refused: " + strings.Join(parts, "; ")
}

// Handler turns one stored event into a plan. It returns an error wrapped
// with Permanent when retrying cannot help (a payload it cannot read);
// any other error is retried with backoff.
type Handler func(ctx context.Context, ev inbox.Event) (Plan, error)

// Target is an outbound target a team's handlers send to (Outbound.Target
// with ActionHTTP), declared beside them (internal/handlers.Targets). Where
// it is (its URL) is each deployment's, in TARGETS: the processor refuses
// to start when a declared target has no TARGETS entry, or an entry names
// no declared target.
//
// Whether its receiver dedupes on the Idempotency-Key header (so a call
// whose outcome is unknown may be made again) is not declared here: it is
// a property of the receiver at the URL each deployment chooses, so it is
// that deployment's TARGETS entry's retry_unknown (default false).
type Target struct {
	// Name is what Outbound.Target says: TargetNamePattern.
	Name string
}

// TargetNamePattern is the form of a target's name.
const TargetNamePattern = `^[a-z0-9_-]{1,64}$`

var targetName = regexp.MustCompile(TargetNamePattern)

// Routes maps a source kind and an event type to its handler (a team's are
// internal/handlers.Routes). Events with no handler are processed with
// outcome ignored.
type Routes map[string]map[string]Handler

// Lookup returns the handler of kind and typ, nil when there is none.
func (r Routes) Lookup(kind, typ string) Handler {
	return r[kind][typ]
}

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err, or anything it wraps, was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
