package signature

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONFieldsAgreesWithEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, ` {"id":"a"} `, `{"id":"a\u00e9\ud83d\ude00\/\n","type":1}`, `{"id":"x","id":"y"}`,
		`{"a":[1,2,{"b":null}],"id":"q"}`, `{"id":-0.5e+10}`, `{"id":true}`,
		`{"\u0069d":"escaped key"}`, `{"id":"\ud800"}`,
		// invalid
		``, `{`, `{"id"}`, `{"id":}`, `{"id":01}`, `{"id":1.}`, `{"id":.5}`, `{"id":"a",}`, `{,}`,
		`{"id":"\x"}`, `{"id":"\u12"}`, "{\"id\":\"\x01\"}", `{"id":tru}`, `{"id":"a"} x`, `[]`,
		`{"id":[1,]}`, `{"id":-}`, `{"id":1e}`, `"str"`, `nul`, `{"a":{"b":[}]}}`,
	}
	for _, d := range docs {
		t.Run(d, func(t *testing.T) { checkAgainstEncodingJSON(t, []byte(d)) })
	}
}

func checkAgainstEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	out := make([][]byte, 1)
	err := jsonFields(body, []string{"id"}, out)
	var m map[string]json.RawMessage
	jerr := json.Unmarshal(body, &m)
	if jerr == nil && m == nil {
		// encoding/json decodes null into a nil map; a body must be an object.
		jerr = errors.New("null is not an object")
	}
	if (err == nil) != (jerr == nil) {
		t.Fatalf("jsonFields error %v, encoding/json error %v for %q", err, jerr, body)
	}
	if err != nil {
		return
	}
	want, ok := m["id"]
	if !ok {
		if out[0] != nil {
			t.Fatalf("got id %q, want absent", out[0])
		}
		return
	}
	var ws string
	if json.Unmarshal(want, &ws) == nil {
		got, ok := jsonString(out[0])
		if !ok && strings.ContainsRune(ws, utf8.RuneError) {
			return // invalid UTF-8 is refused here, replaced by encoding/json
		}
		if !ok || got != ws {
			t.Fatalf("id: got %q (%v), want %q", got, ok, ws)
		}
	}
}

func FuzzJSONFields(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/corpus/*/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"a\u00e9\ud83d\ude00","type":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgainstEncodingJSON(t, body)
	})
}

// TestJSONIntAgreesWithParseInt pins jsonInt to strconv.ParseInt at the
// edges of int64 and on the inputs a raw JSON value can be.
func TestJSONIntAgreesWithParseInt(t *testing.T) {
	for _, in := range []string{
		"0", "-0", "7", "-7", "1721954100000", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "18446744073709551615", "99999999999999999999",
		"00000000000000000000", "-007", "", "-", "--1", "1.5", "1e3", "1E3", "-1.0", `"5"`, "true", "null", "12a", " 1", "1 ", "0x10", "1_000",
	} {
		checkJSONInt(t, []byte(in))
	}
}

// FuzzJSONInt checks jsonInt against strconv.ParseInt on every input that
// does not start with '+', which no JSON number does.
func FuzzJSONInt(f *testing.F) {
	for _, s := range []string{"0", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "1.5", "12a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 0 && raw[0] == '+' {
			return
		}
		checkJSONInt(t, raw)
	})
}

func checkJSONInt(t *testing.T, raw []byte) {
	t.Helper()
	got, ok := jsonInt(raw)
	want, err := strconv.ParseInt(string(raw), 10, 64)
	if ok != (err == nil) || ok && got != want {
		t.Fatalf("jsonInt(%q) = %d, %v; strconv.ParseInt = %d, %v", raw, got, ok, want, err)
	}
}

func TestJSONStringIs(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`"event"`, true},
		{`"ev\u0065nt"`, true},
		{`"\u0065vent"`, true},
		{`"events"`, false},
		{`"Event"`, false},
		{`"ev\"nt"`, false},
		{`"evt\u0000"`, false},
		{`event`, false},
		{`null`, false},
		{``, false},
		{`["event"]`, false},
	} {
		raw := []byte(tc.raw)
		if tc.raw == "" {
			raw = nil
		}
		s, ok := jsonString(raw)
		if got := jsonStringIs(raw, "event"); got != tc.want || got != (ok && s == "event") {
			t.Errorf("jsonStringIs(%s, event) = %v, want %v (and jsonString's answer)", tc.raw, got, tc.want)
		}
	}
}
