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
	"unicode/utf8"

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
	// Attributes are stored with the record: string, number and bool
	// values, under names other than the Reserved ones.
	Attributes map[string]any
}

// ID is the stored identity of the record.
func (r Record) ID() string { return r.Kind + "#" + r.Key }

// Plan is everything a handler wants done for one event.
type Plan struct {
	Records []Record
}

// Limits a plan must keep to commit in one DynamoDB transaction with the
// event's status.
const (
	// MaxRecords leaves one of TransactWriteItems' 100 items to the event.
	MaxRecords = 99
	// MaxIDBytes keeps a record's stored key ("effect#" + ID) within
	// DynamoDB's 2048-byte partition key.
	MaxIDBytes = 2048 - len("effect#")
	// MaxRecordBytes keeps a record, with the store's own attributes,
	// well inside DynamoDB's 400 KB item.
	MaxRecordBytes = 350 << 10
	// MaxPlanBytes keeps the transaction inside DynamoDB's 4 MB, with room
	// for the event's own update.
	MaxPlanBytes = 3 << 20
)

// Reserved names the attributes the store writes on every record; a
// handler may not set them.
var Reserved = map[string]bool{"pk": true, "effect_kind": true, "effect_key": true, "event_key": true, "recorded_at": true}

// Validate checks that every record has an identity, that no identity
// appears twice, that no attribute takes a name the store reserves or has a
// value it cannot store, and that the plan fits one DynamoDB transaction
// (MaxRecords, MaxIDBytes, MaxRecordBytes, MaxPlanBytes). A plan it refuses
// would be refused by DynamoDB every time: the processor treats it as a
// permanent error.
func (p Plan) Validate() error {
	if len(p.Records) > MaxRecords {
		return fmt.Errorf("%d effects: at most %d commit with the event", len(p.Records), MaxRecords)
	}
	seen := make(map[string]bool, len(p.Records))
	total := 0
	for i, r := range p.Records {
		switch {
		case r.Kind == "" || r.Key == "":
			return fmt.Errorf("effect %d: empty kind or key", i)
		case strings.Contains(r.Kind, "#"):
			return fmt.Errorf("effect %d: '#' in kind %q", i, r.Kind)
		case !utf8.ValidString(r.Kind) || !utf8.ValidString(r.Key):
			return fmt.Errorf("effect %d: kind or key is not UTF-8", i)
		case len(r.ID()) > MaxIDBytes:
			return fmt.Errorf("effect %d: identity of %d bytes, over %d", i, len(r.ID()), MaxIDBytes)
		case seen[r.ID()]:
			return fmt.Errorf("effect %d: %s declared twice", i, r.ID())
		}
		seen[r.ID()] = true
		size := len(r.ID())*2 + 64
		for name, v := range r.Attributes {
			if Reserved[name] {
				return fmt.Errorf("effect %d: attribute %q is the store's own", i, name)
			}
			if name == "" || !utf8.ValidString(name) {
				return fmt.Errorf("effect %d: attribute name %q: empty or not UTF-8", i, name)
			}
			n, err := valueSize(v)
			if err != nil {
				return fmt.Errorf("effect %d: attribute %q: %w", i, name, err)
			}
			size += len(name) + n
		}
		if size > MaxRecordBytes {
			return fmt.Errorf("effect %d: about %d bytes, over %d", i, size, MaxRecordBytes)
		}
		total += size
	}
	if total > MaxPlanBytes {
		return fmt.Errorf("effects of about %d bytes, over %d in one transaction", total, MaxPlanBytes)
	}
	return nil
}

// valueSize is an upper bound of a value's stored size, for the types a
// record may carry: strings (UTF-8), integers, floats and booleans.
func valueSize(v any) (int, error) {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return 0, errors.New("string is not UTF-8")
		}
		return len(v), nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return 21, nil
	case bool:
		return 1, nil
	}
	return 0, fmt.Errorf("value of type %T: want a string, a number or a bool", v)
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
