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

// checkNested compares jsonFieldsNested with two passes of jsonFields: the
// nested value must be what scanning the parent's last value gives.
func checkNested(t *testing.T, body []byte) {
	t.Helper()
	var top, inner [1][]byte
	err := jsonFieldsNested(body, []string{"event"}, top[:], &nested{parent: "event", keys: []string{"type"}, out: inner[:]})
	var top2 [1][]byte
	err2 := jsonFields(body, []string{"event"}, top2[:])
	if (err == nil) != (err2 == nil) {
		t.Fatalf("%q: nested err %v, flat err %v", body, err, err2)
	}
	if err != nil {
		return
	}
	if string(top[0]) != string(top2[0]) {
		t.Fatalf("%q: event %q, flat %q", body, top[0], top2[0])
	}
	var want [1][]byte
	if len(top2[0]) > 0 && top2[0][0] == '{' {
		if err := jsonFields(top2[0], []string{"type"}, want[:]); err != nil {
			t.Fatalf("%q: event value does not scan alone: %v", body, err)
		}
	}
	if string(inner[0]) != string(want[0]) {
		t.Fatalf("%q: event.type %q, two passes give %q", body, inner[0], want[0])
	}
}

func TestJSONFieldsNested(t *testing.T) {
	for _, d := range []string{
		`{"event":{"type":"message","x":1},"type":"event_callback"}`,
		`{"event":{"x":{"type":"deep"},"type":"shallow"}}`,
		`{"event":{"type":"a"},"event":{"type":"b"}}`,
		`{"event":{"type":"a"},"event":{"x":1}}`,
		`{"event":{"type":"a"},"event":"str"}`,
		`{"event":"str","event":{"type":"b"}}`,
		`{"\u0065vent":{"type":"escaped parent"}}`,
		`{"event":{"\u0074ype":"escaped key"}}`,
		`{"event":{"type":"a",}}`,
		`{"event":{"type":"a"}`,
		`{"event":[{"type":"array"}]}`,
		`{}`,
	} {
		t.Run(d, func(t *testing.T) { checkNested(t, []byte(d)) })
	}
}

func FuzzJSONFieldsNested(f *testing.F) {
	f.Add([]byte(`{"event":{"type":"message","x":[1,{"type":2}]},"event_id":"Ev1"}`))
	f.Add([]byte(`{"event":{"type":"a"},"event":{"x":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkNested(t, body) })
}
