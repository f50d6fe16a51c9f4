// Package effects is what an event handler may declare: business records
// that must exist at most once, keyed by the business fact they represent
// (an invoice id, not an event id). The processor commits them atomically
// with the event's status; handlers never touch storage themselves.
package effects

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Record is one business fact. Kind and Key together are its identity: a
// second record with the same identity — from a retry or from a different
// event carrying the same fact — is never written.
type Record struct {
	// Kind names the fact, e.g. "invoice_paid".
	Kind string
	// Key identifies it within Kind, e.g. the invoice id.
	Key string
	// Attributes are stored with the record: string, int64, bool values.
	Attributes map[string]any
}

// ID is the stored identity of the record.
func (r Record) ID() string { return r.Kind + "#" + r.Key }

// Plan is everything a handler wants done for one event.
type Plan struct {
	Records []Record
}

// Validate checks that every record has an identity and that no identity
// appears twice in the plan.
func (p Plan) Validate() error {
	seen := make(map[string]bool, len(p.Records))
	for i, r := range p.Records {
		if r.Kind == "" || r.Key == "" {
			return fmt.Errorf("effect %d: empty kind or key", i)
		}
		if strings.Contains(r.Kind, "#") {
			return fmt.Errorf("effect %d: '#' in kind %q", i, r.Kind)
		}
		if seen[r.ID()] {
			return fmt.Errorf("effect %d: %s declared twice", i, r.ID())
		}
		seen[r.ID()] = true
	}
	return nil
}

// Without returns the plan minus the records whose IDs are listed.
func (p Plan) Without(ids []string) Plan {
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	var out Plan
	for _, r := range p.Records {
		if !drop[r.ID()] {
			out.Records = append(out.Records, r)
		}
	}
	return out
}

// ExistsError reports the records of a plan that were already written, by
// an earlier event carrying the same business fact.
type ExistsError struct {
	IDs []string
}

func (e *ExistsError) Error() string {
	return "effects already recorded: " + strings.Join(e.IDs, ", ")
}

// Handler turns one stored event into a plan. It returns an error wrapped
// with Permanent when retrying cannot help (a payload it cannot read);
// any other error is retried with backoff.
type Handler func(ctx context.Context, ev inbox.Event) (Plan, error)

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
