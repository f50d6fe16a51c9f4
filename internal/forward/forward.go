// Package forward is the configuration-only route from a verified,
// deduplicated event to an Amazon EventBridge bus: FORWARD names, per
// source and optionally per event type pattern, the buses its events go
// to. Each forwarded event becomes one outbox row per bus, committed in
// the event's transaction like any handler's row, and delivered after the
// commit with PutEvents (package outbox, action effects.ActionEventBridge).
// So an event is put at most once per bus unless its row's outcome is
// unknown and the route retries unknowns (the default: consumers dedupe on
// detail.webhook_inbox.event_key, and EventBridge itself delivers to its
// targets at least once, so they must dedupe anyway).
//
// The row is small: it carries the entry's source, detail type, time and
// the event's key, not the payload. The deliverer builds the entry's
// Detail from the stored payload (Detail), so the payload is not written
// twice into the inbox table.
package forward

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Route sends the events of one source, of the types its patterns match
// (all when none), to one bus.
type Route struct {
	Source string
	// Types are exact event types or prefixes ending in "*"
	// ("invoice.*"); "*" or no pattern at all matches every type.
	Types []string
	// Bus is an event bus name or ARN; "default" is the account's default
	// bus. A route that names none forwards to the deployment's bus
	// (FORWARD_BUS).
	Bus string
	// RetryUnknown says a PutEvents whose outcome is unknown (a timeout,
	// a connection lost after the request was written) is made again.
	RetryUnknown bool
}

// Routes are the configured routes, in FORWARD's order.
type Routes []Route

// DefaultBus is the account's default event bus: the bus of a route that
// names none, when the deployment names none either.
const DefaultBus = "default"

type entry struct {
	Source       string   `json:"source"`
	Types        []string `json:"types"`
	Bus          string   `json:"bus"`
	RetryUnknown *bool    `json:"retry_unknown"`
}

var (
	busName = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,256}$`)
	busARN  = regexp.MustCompile(`^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]{1,256}$`)
)

// maxPattern bounds a type pattern: longer than any provider's type.
const maxPattern = 256

// Parse reads FORWARD: a JSON list of {"source", "types", "bus",
// "retry_unknown"}. Every source must be one of sources (SOURCES' names);
// a route without a bus forwards to bus (FORWARD_BUS; empty: DefaultBus).
// An empty value is no routes. Every problem is reported, each naming its
// entry.
func Parse(v string, sources []string, bus string) (Routes, error) {
	if bus == "" {
		bus = DefaultBus
	}
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var list []json.RawMessage
	dec := json.NewDecoder(strings.NewReader(v))
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("FORWARD: want a JSON list of routes: %w", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return nil, errors.New("FORWARD: data after the list")
	}
	var routes Routes
	var errs []error
	seen := map[[2]string]int{}
	for i, raw := range list {
		var e entry
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			errs = append(errs, fmt.Errorf("FORWARD entry %d: %w", i, err))
			continue
		}
		name := fmt.Sprintf("FORWARD entry %d (source %q)", i, e.Source)
		r := Route{Source: e.Source, Types: e.Types, Bus: e.Bus, RetryUnknown: e.RetryUnknown == nil || *e.RetryUnknown}
		if r.Bus == "" {
			r.Bus = bus
		}
		switch {
		case e.Source == "":
			errs = append(errs, fmt.Errorf("%s: source is required", name))
			continue
		case !slices.Contains(sources, e.Source):
			errs = append(errs, fmt.Errorf("%s: no such source in SOURCES (%s)", name, strings.Join(sources, ", ")))
			continue
		case !busName.MatchString(r.Bus) && !busARN.MatchString(r.Bus):
			errs = append(errs, fmt.Errorf("%s: bus %q is neither an event bus name ([A-Za-z0-9._/-], at most 256) nor an event bus ARN", name, r.Bus))
			continue
		}
		bad := false
		for _, p := range r.Types {
			if err := checkPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: type %q: %w", name, p, err))
				bad = true
			}
		}
		if bad {
			continue
		}
		k := [2]string{r.Source, r.Bus}
		if j, ok := seen[k]; ok {
			errs = append(errs, fmt.Errorf("%s: forwards to bus %q as entry %d does: list both entries' types in one", name, r.Bus, j))
			continue
		}
		seen[k] = i
		routes = append(routes, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return routes, nil
}

func checkPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty pattern")
	case len(p) > maxPattern:
		return fmt.Errorf("over %d bytes", maxPattern)
	case strings.Contains(strings.TrimSuffix(p, "*"), "*"):
		return errors.New(`"*" may only end a pattern`)
	}
	return nil
}

// matches reports whether the route takes events of type typ.
func (r Route) matches(typ string) bool {
	if len(r.Types) == 0 {
		return true
	}
	for _, p := range r.Types {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(typ, prefix) {
				return true
			}
		} else if typ == p {
			return true
		}
	}
	return false
}

// Match returns the routes that take an event of source and type typ.
func (rs Routes) Match(source, typ string) Routes {
	var out Routes
	for _, r := range rs {
		if r.Source == source && r.matches(typ) {
			out = append(out, r)
		}
	}
	return out
}

// Row is what a forwarding outbox row carries (its Body): everything of
// the PutEvents entry but the Detail, which is built from the stored
// payload when the row is delivered.
type Row struct {
	Bus        string `json:"bus"`
	Source     string `json:"source"`
	DetailType string `json:"detail_type"`
	// Time is the provider's time of the event (RFC 3339), or its
	// receipt's when the provider gives none.
	Time     string `json:"time"`
	EventKey string `json:"event_key"`
}

// SourcePrefix begins every forwarded entry's Source.
const SourcePrefix = "webhook-inbox."

// maxDetailType is EventBridge's bound on an entry's DetailType.
const maxDetailType = 128

// TargetOf is the outbox target of a route's rows, one per route (Parse
// allows one route per source and bus), so each route has its own
// delivery options.
func TargetOf(r Route) string { return "eventbridge:" + r.Source + ":" + r.Bus }

// Outbound returns the outbox rows forwarding ev along routes, one per
// route (Parse allows one route per source and bus). Each row's key is
// the event's and the bus's: one row per event and bus ever.
func Outbound(ev inbox.Event, routes Routes) ([]effects.Outbound, error) {
	at := ev.Created
	if at.IsZero() {
		at = ev.ReceivedAt
	}
	dt := ev.Type
	if len(dt) > maxDetailType {
		dt = strings.ToValidUTF8(dt[:maxDetailType], "")
	}
	row := Row{Source: SourcePrefix + ev.Key.Source, DetailType: dt, Time: at.UTC().Format("2006-01-02T15:04:05Z"), EventKey: ev.Key.String()}
	var out []effects.Outbound
	for _, r := range routes {
		row.Bus = r.Bus
		body, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		target := TargetOf(r)
		out = append(out, effects.Outbound{
			Action: effects.ActionEventBridge, Target: target,
			Key: effects.KeyOf(ev.Key.String(), target), Body: body,
		})
	}
	return out, nil
}
