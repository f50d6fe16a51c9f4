package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
)

// Target is one TARGETS entry: where a declared target (effects.Target) is
// in this deployment.
type Target struct {
	Name string
	// URL receives each row as a JSON POST; empty: rows are delivered to
	// the processor's log only (a development setup with no receiver).
	URL string
	// RetryUnknown: the entry's retry_unknown (default false): the
	// receiver dedupes on the Idempotency-Key header, so a call whose
	// outcome is unknown may be made again.
	RetryUnknown bool
	// Timeout bounds one call; zero is the outbox's default (10 s).
	Timeout time.Duration
}

// MaxTargetTimeoutSeconds bounds a target's timeout_seconds: a row is
// started only with time for the longest call any target makes before the
// processor's work ends, as for a forwarding row (MaxForwardTimeoutSeconds).
const MaxTargetTimeoutSeconds = MaxForwardTimeoutSeconds

var targetName = regexp.MustCompile(effects.TargetNamePattern)

type targetEntry struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	RetryUnknown   *bool  `json:"retry_unknown"`
	TimeoutSeconds *int   `json:"timeout_seconds"`
}

// parseTargets reads TARGETS: a JSON list of {"name", "url",
// "retry_unknown", "timeout_seconds"}, one entry for each target declared,
// and none for a target nobody declares. Every problem is reported, each
// naming its entry or the declared target.
func parseTargets(v string, declared []effects.Target) ([]Target, error) {
	var errs []error
	names := make([]string, 0, len(declared))
	byName := map[string]bool{}
	for _, d := range declared {
		if !targetName.MatchString(d.Name) {
			errs = append(errs, fmt.Errorf("declared target %q (internal/handlers Targets): want a name matching %s", d.Name, effects.TargetNamePattern))
			continue
		}
		if byName[d.Name] {
			errs = append(errs, fmt.Errorf("declared target %q (internal/handlers Targets): declared twice", d.Name))
			continue
		}
		byName[d.Name] = true
		names = append(names, d.Name)
	}
	slices.Sort(names)
	var list []json.RawMessage
	if strings.TrimSpace(v) != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		if err := dec.Decode(&list); err != nil {
			return nil, fmt.Errorf("TARGETS: want a JSON list of targets, e.g. [{\"name\":\"receipt\",\"url\":\"https://…\"}]: %w", err)
		}
		if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
			return nil, errors.New("TARGETS: data after the list")
		}
	}
	var out []Target
	seen := map[string]int{}
	for i, raw := range list {
		var e targetEntry
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			errs = append(errs, fmt.Errorf("TARGETS entry %d: %w", i, err))
			continue
		}
		what := fmt.Sprintf("TARGETS entry %d (name %q)", i, e.Name)
		switch {
		case e.Name == "":
			errs = append(errs, fmt.Errorf("%s: name is required", what))
			continue
		case !byName[e.Name]:
			errs = append(errs, fmt.Errorf("%s: no handler declares this target (internal/handlers Targets: %s); remove the entry, or declare the target", what, listOrNone(names)))
			continue
		}
		if j, ok := seen[e.Name]; ok {
			errs = append(errs, fmt.Errorf("%s: entry %d configures it already", what, j))
			continue
		}
		seen[e.Name] = i
		t := Target{Name: e.Name, URL: strings.TrimSpace(e.URL)}
		if t.URL != "" {
			u, err := url.Parse(t.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				// The URL is not repeated: it may carry a token, and
				// this error is logged.
				errs = append(errs, fmt.Errorf("%s: url: want an absolute http or https URL, or none (delivered to the log)", what))
				continue
			}
		}
		if e.RetryUnknown != nil {
			t.RetryUnknown = *e.RetryUnknown
		}
		if e.TimeoutSeconds != nil {
			n := *e.TimeoutSeconds
			if n < 1 || n > MaxTargetTimeoutSeconds {
				errs = append(errs, fmt.Errorf("%s: timeout_seconds %d: want 1..%d (a row starts only with time for the longest call before the processor's work ends, and the batch's claims and commits need the rest)", what, n, MaxTargetTimeoutSeconds))
				continue
			}
			t.Timeout = time.Duration(n) * time.Second
		}
		out = append(out, t)
	}
	for _, n := range names {
		if _, ok := seen[n]; !ok {
			errs = append(errs, fmt.Errorf("target %q, which internal/handlers declares, has no TARGETS entry: add {\"name\":%q,\"url\":\"https://…\"} (no url: its rows go to the log only)", n, n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
