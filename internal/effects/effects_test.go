package effects

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func rec(kind, key string) Record { return Record{Kind: kind, Key: key} }

func TestRecordID(t *testing.T) {
	if got, want := rec("invoice_paid", "in_1#x").ID(), "invoice_paid#in_1#x"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPlanValidate(t *testing.T) {
	tests := []struct {
		name    string
		plan    Plan
		wantErr bool
	}{
		{"empty plan", Plan{}, false},
		{"one record", Plan{Records: []Record{rec("invoice_paid", "in_1")}}, false},
		{"same key, different kinds", Plan{Records: []Record{rec("invoice_paid", "in_1"), rec("invoice_refunded", "in_1")}}, false},
		{"same kind, different keys", Plan{Records: []Record{rec("invoice_paid", "in_1"), rec("invoice_paid", "in_2")}}, false},
		{"hash in key", Plan{Records: []Record{rec("k", "a#b")}}, false},
		{"empty kind", Plan{Records: []Record{rec("", "in_1")}}, true},
		{"empty key", Plan{Records: []Record{rec("invoice_paid", "")}}, true},
		{"empty second record", Plan{Records: []Record{rec("k", "1"), {}}}, true},
		{"hash in kind", Plan{Records: []Record{rec("invoice#paid", "in_1")}}, true},
		{"duplicate", Plan{Records: []Record{rec("invoice_paid", "in_1"), rec("invoice_paid", "in_1")}}, true},
		{"reserved attribute pk", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"pk": "x"}}}}, true},
		{"reserved attribute event_key", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"event_key": "x"}}}}, true},
		{"reserved attribute recorded_at", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"recorded_at": "x"}}}}, true},
		{"ordinary attributes", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"s": "x", "n": int64(1), "f": 1.5, "b": true, "i": 3}}}}, false},
		{"attribute of a type the store cannot keep", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"m": map[string]any{}}}}}, true},
		{"attribute not UTF-8", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"s": "\xff"}}}}, true},
		{"key not UTF-8", Plan{Records: []Record{rec("k", "\xff")}}, true},
		{"identity at the key limit", Plan{Records: []Record{rec("k", strings.Repeat("x", MaxIDBytes-2))}}, false},
		{"identity over the key limit", Plan{Records: []Record{rec("k", strings.Repeat("x", MaxIDBytes-1))}}, true},
		{"record over the item limit", Plan{Records: []Record{{Kind: "k", Key: "1", Attributes: map[string]any{"s": strings.Repeat("x", MaxRecordBytes)}}}}, true},
		{"plan over the transaction limit", Plan{Records: bigRecords(12, 300<<10)}, true},
		{"99 records", Plan{Records: manyRecords(MaxRecords)}, false},
		{"100 records", Plan{Records: manyRecords(MaxRecords + 1)}, true},
		{"duplicate, attributes differ", Plan{Records: []Record{
			{Kind: "k", Key: "1", Attributes: map[string]any{"a": int64(1)}},
			{Kind: "k", Key: "1", Attributes: map[string]any{"a": int64(2)}},
		}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Validate()
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("got %v, want error %t", err, tt.wantErr)
			}
		})
	}
}

func manyRecords(n int) []Record {
	var out []Record
	for i := range n {
		out = append(out, rec("k", fmt.Sprint(i)))
	}
	return out
}

func bigRecords(n, size int) []Record {
	out := manyRecords(n)
	for i := range out {
		out[i].Attributes = map[string]any{"s": strings.Repeat("x", size)}
	}
	return out
}

func TestPlanWithout(t *testing.T) {
	a, b, c := rec("k", "a"), rec("k", "b"), rec("j", "a")
	plan := Plan{Records: []Record{a, b, c}}
	tests := []struct {
		name string
		ids  []string
		want []Record
	}{
		{"nothing", nil, []Record{a, b, c}},
		{"unknown id", []string{"k#z"}, []Record{a, b, c}},
		{"one", []string{"k#b"}, []Record{a, c}},
		{"kind matters", []string{"j#a"}, []Record{a, b}},
		{"bare key does not match", []string{"a"}, []Record{a, b, c}},
		{"all", []string{"k#a", "k#b", "j#a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan.Without(tt.ids)
			if !reflect.DeepEqual(got.Records, tt.want) {
				t.Errorf("got %v, want %v", got.Records, tt.want)
			}
		})
	}
	if len(plan.Records) != 3 {
		t.Errorf("Without changed the receiver: got %d records, want 3", len(plan.Records))
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("bad payload")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"wrapped plain", fmt.Errorf("handler: %w", base), false},
		{"permanent", Permanent(base), true},
		{"wrapped permanent", fmt.Errorf("handler: %w", Permanent(base)), true},
		{"twice wrapped permanent", fmt.Errorf("process: %w", fmt.Errorf("handler: %w", Permanent(base))), true},
		{"joined", errors.Join(io.EOF, Permanent(base)), true},
		{"formatted with %v", fmt.Errorf("handler: %v", Permanent(base)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPermanent(tt.err); got != tt.want {
				t.Errorf("IsPermanent(%v): got %t, want %t", tt.err, got, tt.want)
			}
		})
	}
}

func TestPermanentKeepsCause(t *testing.T) {
	err := fmt.Errorf("handler: %w", Permanent(io.ErrUnexpectedEOF))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF): got false, want true", err)
	}
	if got, want := err.Error(), "handler: unexpected EOF"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPermanentNil(t *testing.T) {
	if err := Permanent(nil); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestExistsError(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"one", []string{"invoice_paid#in_1"}, "effects already recorded: invoice_paid#in_1"},
		{"two", []string{"invoice_paid#in_1", "refund#re_1"}, "effects already recorded: invoice_paid#in_1, refund#re_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = fmt.Errorf("commit: %w", &ExistsError{IDs: tt.ids})
			var ee *ExistsError
			if !errors.As(err, &ee) {
				t.Fatalf("errors.As(%v, *ExistsError): got false, want true", err)
			}
			if got := ee.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(ee.IDs, tt.ids) {
				t.Errorf("IDs: got %v, want %v", ee.IDs, tt.ids)
			}
			if IsPermanent(err) {
				t.Errorf("IsPermanent(%v): got true, want false", err)
			}
		})
	}
}
