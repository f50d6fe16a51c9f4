package template

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a Schedule event of a function: EventBridge invoking it with
// a fixed input at a fixed rate.
type Schedule struct {
	Event    string // name under Events
	Every    time.Duration
	Input    string // the JSON the function is invoked with
	Disabled bool
}

// Schedules returns the function's Schedule events, sorted by name. Only
// rate() expressions are read (the local stack runs them on a ticker); a
// cron() expression is an error, since the local stack could not run it.
func (t *Template) Schedules(functionLogicalID string) ([]Schedule, error) {
	r, err := t.resource(functionLogicalID, "AWS::Serverless::Function")
	if err != nil {
		return nil, err
	}
	evs, err := t.events(r, "Schedule")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", functionLogicalID, err)
	}
	var out []Schedule
	for _, e := range evs {
		path := functionLogicalID + ".Events." + e.name
		s, err := asString(field(e.props, path, "Schedule", true))
		if err != nil {
			return nil, err
		}
		every, err := parseRate(s)
		if err != nil {
			return nil, fmt.Errorf("%s.Schedule: %w", path, err)
		}
		sc := Schedule{Event: e.name, Every: every}
		if in, fp, err := field(e.props, path, "Input", false); err != nil {
			return nil, err
		} else if in != nil {
			if sc.Input, err = asString(in, fp, nil); err != nil {
				return nil, err
			}
		}
		if v, fp, err := field(e.props, path, "Enabled", false); err != nil {
			return nil, err
		} else if v != nil {
			enabled, err := asBool(v, fp, nil)
			if err != nil {
				return nil, err
			}
			sc.Disabled = !enabled
		}
		out = append(out, sc)
	}
	return out, nil
}

// parseRate reads an EventBridge rate expression: rate(5 minutes).
func parseRate(expr string) (time.Duration, error) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "rate(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return 0, fmt.Errorf("%q: want rate(N unit)", expr)
	}
	num, unit, ok := strings.Cut(strings.TrimSuffix(inner, ")"), " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		return 0, fmt.Errorf("%q: want rate(N unit) with N a positive integer", expr)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	u, ok := units[strings.TrimSuffix(unit, "s")]
	// EventBridge wants the singular for 1 and the plural otherwise.
	if !ok || (n == 1) == strings.HasSuffix(unit, "s") {
		return 0, fmt.Errorf("%q: unit %q: want minute(s), hour(s) or day(s), singular only for 1", expr, unit)
	}
	return time.Duration(n) * u, nil
}
