//go:build linux

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
)

// params are the template's retry and sweep settings a run uses. A run
// draws them from its seed, each within the range template.yaml accepts
// (MinValue to MaxValue), so that runs with different seeds try
// different combinations, bases over caps and two-receive budgets
// included. The time settings are drawn below a ceiling a run of minutes
// can wait out (a 12-hour backoff would outlast it); what the full ranges
// bound is shown by the processor's TestFailedEventClaimBound.
type params struct {
	RetryBase, RetryCap int // seconds
	MaxReceiveCount     int
	SweepAfter          int // seconds
	// RetryUnknown is the receipt's TARGETS entry's retry_unknown (1:
	// true), drawn too: the receiver then dedupes on the Idempotency-Key,
	// as a receiver so configured must (see receiver).
	RetryUnknown int
	// Drawn is false for the fixed set (-params fixed, and -load).
	Drawn bool
	// Ranges are the template's ranges and the ceilings, for the report.
	ranges map[string][3]int
}

// fixedParams are the settings of a run that draws none: short backoffs
// and sweep, the template's receive budget.
func fixedParams() params {
	return params{RetryBase: 1, RetryCap: 5, MaxReceiveCount: 10, SweepAfter: 10}
}

// paramCeilings are the highest values a run draws: within the template's
// ranges, and short enough for a run to settle in minutes.
var paramCeilings = map[string]int{
	"RetryBaseSeconds":  4,
	"RetryCapSeconds":   20,
	"MaxReceiveCount":   1000,
	"SweepAfterSeconds": 30,
}

// drawParams draws a set from the seed. Each value is the range's
// lowest or highest with a chance of one in five each, else log-uniform
// between them.
func drawParams(tpl *template.Template, seed uint64) (params, error) {
	r := rand.New(rand.NewPCG(seed, 0x7061726d))
	p := params{Drawn: true, ranges: map[string][3]int{}}
	for _, name := range []string{"RetryBaseSeconds", "RetryCapSeconds", "MaxReceiveCount", "SweepAfterSeconds"} {
		decl, err := tpl.Parameter(name)
		if err != nil {
			return p, err
		}
		if decl.MinValue == nil || decl.MaxValue == nil {
			return p, fmt.Errorf("template.yaml: %s declares no MinValue or MaxValue to draw from", name)
		}
		lo, hi := int(*decl.MinValue), int(*decl.MaxValue)
		top := min(hi, paramCeilings[name])
		if top < lo {
			return p, fmt.Errorf("template.yaml: %s's range [%d, %d] is above the run's ceiling %d", name, lo, hi, top)
		}
		p.ranges[name] = [3]int{lo, hi, top}
		var v int
		switch x := r.IntN(5); x {
		case 0:
			v = lo
		case 1:
			v = top
		default:
			v = int(math.Round(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(top))-math.Log(float64(lo))))))
		}
		*p.field(name) = min(max(v, lo), top)
	}
	p.RetryUnknown = r.IntN(2)
	p.ranges[retryUnknownParam] = [3]int{0, 1, 1}
	return p, nil
}

// retryUnknownParam names params.RetryUnknown in -params and the report:
// not a template parameter, but a field of the Targets one.
const retryUnknownParam = "TargetRetryUnknown"

// parseParams reads -params: "drawn", "fixed", or explicit values
// ("RetryBaseSeconds=2,RetryCapSeconds=9,MaxReceiveCount=2,SweepAfterSeconds=1,TargetRetryUnknown=1"),
// each checked against the template's range; those not named are fixed's.
func parseParams(s string, tpl *template.Template, seed uint64) (params, error) {
	switch s {
	case "", "drawn":
		return drawParams(tpl, seed)
	case "fixed":
		return fixedParams(), nil
	}
	p := fixedParams()
	for _, kv := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(val)
		if !ok || err != nil {
			return p, fmt.Errorf("-params %q: want drawn, fixed or Name=integer,… (got %q)", s, kv)
		}
		if name == retryUnknownParam {
			if n != 0 && n != 1 {
				return p, fmt.Errorf("-params: %s=%d: want 0 or 1 (the receipt's retry_unknown)", name, n)
			}
			p.RetryUnknown = n
			continue
		}
		decl, err := tpl.Parameter(name)
		if err != nil {
			return p, fmt.Errorf("-params: %w", err)
		}
		if (decl.MinValue != nil && float64(n) < *decl.MinValue) || (decl.MaxValue != nil && float64(n) > *decl.MaxValue) {
			return p, fmt.Errorf("-params: %s=%d is outside the template's range", name, n)
		}
		f := p.field(name)
		if f == nil {
			return p, fmt.Errorf("-params: %s is not one a run sets (RetryBaseSeconds, RetryCapSeconds, MaxReceiveCount, SweepAfterSeconds, %s)", name, retryUnknownParam)
		}
		*f = n
	}
	return p, nil
}

// field is the setting named after its template parameter, nil for any
// other name.
func (p *params) field(name string) *int {
	switch name {
	case "RetryBaseSeconds":
		return &p.RetryBase
	case "RetryCapSeconds":
		return &p.RetryCap
	case "MaxReceiveCount":
		return &p.MaxReceiveCount
	case "SweepAfterSeconds":
		return &p.SweepAfter
	}
	return nil
}

// String is the set as the report prints it.
func (p params) String() string {
	how := "fixed"
	if p.Drawn {
		how = "drawn from the seed within the template's ranges"
	}
	show := func(name string, v int) string {
		r, ok := p.ranges[name]
		if !ok {
			return fmt.Sprintf("%s %d", name, v)
		}
		if r[2] < r[1] {
			return fmt.Sprintf("%s %d [%d, %d; drawn to %d]", name, v, r[0], r[1], r[2])
		}
		return fmt.Sprintf("%s %d [%d, %d]", name, v, r[0], r[1])
	}
	return fmt.Sprintf("parameters %s: %s, %s, %s, %s, %s", how,
		show("RetryBaseSeconds", p.RetryBase), show("RetryCapSeconds", p.RetryCap),
		show("MaxReceiveCount", p.MaxReceiveCount), show("SweepAfterSeconds", p.SweepAfter),
		show(retryUnknownParam, p.RetryUnknown))
}
