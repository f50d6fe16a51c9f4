package signature

import (
	"strings"
	"testing"
)

// TestJSONDepth checks the nesting bound: a thousand levels pass (no
// webhook nests so deep), a million are refused without exhausting the
// stack, and the limit is the same for objects and arrays.
func TestJSONDepth(t *testing.T) {
	nest := func(open, close string, n int) []byte {
		return []byte(`{"id":"x","a":` + strings.Repeat(open, n) + `1` + strings.Repeat(close, n) + `}`)
	}
	objOpen, objClose := `{"k":`, `}`
	for _, tc := range []struct {
		open, close string
		n           int
		ok          bool
	}{
		{"[", "]", maxDepth, true},
		{objOpen, objClose, maxDepth, true},
		{"[", "]", maxDepth + 2, false},
		{objOpen, objClose, maxDepth + 2, false},
		{"[", "]", 1_000_000, false},
		{objOpen, objClose, 1_000_000, false},
	} {
		var out [1][]byte
		err := jsonFields(nest(tc.open, tc.close, tc.n), []string{"id"}, out[:])
		if (err == nil) != tc.ok {
			t.Errorf("%d levels of %s: err = %v, want ok=%v", tc.n, tc.open, err, tc.ok)
		}
		if tc.ok && string(out[0]) != `"x"` {
			t.Errorf("%d levels of %s: id = %q", tc.n, tc.open, out[0])
		}
	}
	// Mixed nesting keeps each container's kind: a ']' cannot close '{'.
	for _, bad := range []string{`{"a":[{"b":[1]]}}`, `{"a":[{"b":1]}`, `{"a":{"b":[1}}}`} {
		var out [1][]byte
		if err := jsonFields([]byte(bad), []string{"id"}, out[:]); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// Sixty-five levels cross a word of the container stack.
	deep := `{"a":` + strings.Repeat(`[{"k":`, 70) + `1` + strings.Repeat(`}]`, 70) + `}`
	var out [1][]byte
	if err := jsonFields([]byte(deep), []string{"id"}, out[:]); err != nil {
		t.Errorf("alternating 140 levels: %v", err)
	}
}
