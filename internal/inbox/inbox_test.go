package inbox

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string
	}{
		{"plain", Key{Source: "stripe", Account: "acct_1", EventID: "evt_1"}, "stripe#acct_1#evt_1"},
		{"no account", Key{Source: "stripe", EventID: "evt_1"}, "stripe##evt_1"},
		{"hash in event id", Key{Source: "s", Account: "a", EventID: "evt#1#2"}, "s#a#evt#1#2"},
		{"hash only event id", Key{Source: "s", EventID: "#"}, "s###"},
		{"slash in event id", Key{Source: "s", Account: "a", EventID: "a/b/../c"}, "s#a#a/b/../c"},
		{"unicode event id", Key{Source: "s", Account: "shop.myshopify.com", EventID: "évènement-日本-🚀"}, "s#shop.myshopify.com#évènement-日本-🚀"},
		{"spaces in event id", Key{Source: "s", EventID: " evt 1 "}, "s## evt 1 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.key.String()
			if s != tt.want {
				t.Fatalf("String() = %q, want %q", s, tt.want)
			}
			got, err := ParseKey(s)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", s, err)
			}
			if got != tt.key {
				t.Errorf("ParseKey(%q) = %+v, want %+v", s, got, tt.key)
			}
		})
	}
}

func TestParseKeyRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"no hash", "stripe"},
		{"one hash", "stripe#evt_1"},
		{"empty source", "#acct#evt_1"},
		{"empty event id", "stripe#acct#"},
		{"empty source and id", "##"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if err == nil {
				t.Fatalf("ParseKey(%q) = %+v, want an error", tt.in, k)
			}
			if k != (Key{}) {
				t.Errorf("ParseKey(%q) returned %+v with its error, want the zero Key", tt.in, k)
			}
		})
	}
}

// A '#' in the account cannot survive the rendering, so ParseKey reads it as
// the start of the event id: the account never contains '#'.
func TestParseKeyHashAfterAccountBelongsToEventID(t *testing.T) {
	got, err := ParseKey("s#a#b#c")
	if err != nil {
		t.Fatalf("ParseKey: %v", err)
	}
	want := Key{Source: "s", Account: "a", EventID: "b#c"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestKeyValidate(t *testing.T) {
	tests := []struct {
		name    string
		key     Key
		wantErr bool
	}{
		{"valid", Key{Source: "s", Account: "a", EventID: "e"}, false},
		{"valid without account", Key{Source: "s", EventID: "e"}, false},
		{"valid hash in event id", Key{Source: "s", EventID: "e#1"}, false},
		{"zero", Key{}, true},
		{"empty source", Key{Account: "a", EventID: "e"}, true},
		{"empty event id", Key{Source: "s", Account: "a"}, true},
		{"hash in source", Key{Source: "s#x", EventID: "e"}, true},
		{"hash in account", Key{Source: "s", Account: "a#b", EventID: "e"}, true},

		// The alphabet: valid UTF-8 without control characters, in every part.
		{"stripe id", Key{Source: "stripe", Account: "acct_1Nv0FGQ9RKHgCVdK", EventID: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}, false},
		{"hubspot portal/subscription/event", Key{Source: "hubspot", EventID: "62515/12345/1234567890123"}, false},
		{"zoom event:ts:hash", Key{Source: "zoom", EventID: "meeting.participant_joined:1700000000123:" + strings.Repeat("0f", 32)}, false},
		{"meta body hash", Key{Source: "meta", EventID: "sha256:" + strings.Repeat("ab", 32)}, false},
		{"twilio sid:status", Key{Source: "twilio", EventID: "SM0123456789abcdef0123456789abcdef:delivered"}, false},
		{"shopify domain account", Key{Source: "shopify", Account: "example-shop.myshopify.com", EventID: "6f3c9e2a-1b4d-4c8e-9a7f-2d5e8b1c0a3f"}, false},
		{"space, slash and non-ASCII", Key{Source: "s", Account: "ünïcode", EventID: " a/b évènement 日本 🚀 \u2028"}, false},
		{"line separator U+2028 is not a control character", Key{Source: "s", EventID: "a\u2028b"}, false},
		{"NUL in event id", Key{Source: "stripe", EventID: "evt_1\x00"}, true},
		{"newline in event id", Key{Source: "s", EventID: "evt\n1"}, true},
		{"tab in event id", Key{Source: "s", EventID: "evt\t1"}, true},
		{"DEL in event id", Key{Source: "s", EventID: "evt\x7f"}, true},
		{"C1 NEL U+0085 in event id", Key{Source: "s", EventID: "evt\u0085"}, true},
		{"C1 U+009F in event id", Key{Source: "s", EventID: "\u009fevt"}, true},
		{"invalid UTF-8 in event id", Key{Source: "s", EventID: "evt\xff"}, true},
		{"truncated UTF-8 in event id", Key{Source: "s", EventID: "evt\xe6\x97"}, true},
		{"UTF-8 encoded surrogate in event id", Key{Source: "s", EventID: "evt\xed\xa0\x80"}, true},
		{"NUL in source", Key{Source: "s\x00", EventID: "e"}, true},
		{"newline in account", Key{Source: "s", Account: "a\nb", EventID: "e"}, true},
		{"invalid UTF-8 in account", Key{Source: "s", Account: "a\x80", EventID: "e"}, true},
		{"U+0085 in account", Key{Source: "s", Account: "a\u0085", EventID: "e"}, true},

		// The lengths, in bytes.
		{"512-byte event id", Key{Source: "s", EventID: strings.Repeat("e", 512)}, false},
		{"513-byte event id", Key{Source: "s", EventID: strings.Repeat("e", 513)}, true},
		{"512-byte event id of 4-byte runes", Key{Source: "s", EventID: strings.Repeat("🚀", 128)}, false},
		{"event id of 129 4-byte runes", Key{Source: "s", EventID: strings.Repeat("🚀", 129)}, true},
		{"64-byte source", Key{Source: strings.Repeat("s", 64), EventID: "e"}, false},
		{"65-byte source", Key{Source: strings.Repeat("s", 65), EventID: "e"}, true},
		{"255-byte account", Key{Source: "s", Account: strings.Repeat("a", 255), EventID: "e"}, false},
		{"256-byte account", Key{Source: "s", Account: strings.Repeat("a", 256), EventID: "e"}, true},
		{"every part at its bound", Key{Source: strings.Repeat("s", 64), Account: strings.Repeat("a", 255), EventID: strings.Repeat("e", 512)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.key.Validate()
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("Validate(%+v) = %v, want error %t", tt.key, err, tt.wantErr)
			}
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	keys := map[string]Key{
		"plain":          {Source: "stripe", Account: "acct_1", EventID: "evt_1"},
		"no account":     {Source: "stripe", EventID: "evt_1"},
		"hash and slash": {Source: "s", Account: "a", EventID: "x#y/z"},
		"unicode":        {Source: "s", EventID: "日本\u2028\"quoted\"<>&"},
	}
	for name, k := range keys {
		t.Run(name, func(t *testing.T) {
			body, err := EncodeMessage(k)
			if err != nil {
				t.Fatalf("EncodeMessage: %v", err)
			}
			m, err := DecodeMessage(body)
			if err != nil {
				t.Fatalf("DecodeMessage(%s): %v", body, err)
			}
			if m.Key != k {
				t.Errorf("got %+v, want %+v", m.Key, k)
			}
		})
	}
}

func TestEncodeMessageShape(t *testing.T) {
	got, err := EncodeMessage(Key{Source: "stripe", EventID: "evt_1"})
	if err != nil {
		t.Fatal(err)
	}
	// account is omitted when empty; the processor and operators' tools read
	// this exact shape.
	want := `{"key":{"source":"stripe","event_id":"evt_1"}}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestEncodeMessageRejectsInvalidKey(t *testing.T) {
	for _, k := range []Key{{}, {Source: "s"}, {EventID: "e"}, {Source: "s", Account: "a#b", EventID: "e"}} {
		if body, err := EncodeMessage(k); err == nil {
			t.Errorf("EncodeMessage(%+v) = %s, want an error", k, body)
		}
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"empty", ""},
		{"not json", "stripe#acct#evt_1"},
		{"truncated", `{"key":{"source":"s","event_id":"e"}`},
		{"null", "null"},
		{"array", `[{"key":{"source":"s","event_id":"e"}}]`},
		{"string", `"s##e"`},
		{"empty object", `{}`},
		{"empty key", `{"key":{}}`},
		{"empty source", `{"key":{"source":"","event_id":"e"}}`},
		{"empty event id", `{"key":{"source":"s","event_id":""}}`},
		{"hash in account", `{"key":{"source":"s","account":"a#b","event_id":"e"}}`},
		{"NUL in event id", `{"key":{"source":"s","event_id":"e\u0000"}}`},
		{"NEL in event id", `{"key":{"source":"s","event_id":"e\u0085"}}`},
		{"unknown top-level field", `{"key":{"source":"s","event_id":"e"},"payload":"x"}`},
		{"unknown key field", `{"key":{"source":"s","event_id":"e","type":"x"}}`},
		{"wrong type", `{"key":{"source":1,"event_id":"e"}}`},
		{"trailing garbage", `{"key":{"source":"s","event_id":"e"}} xyz`},
		{"trailing object", `{"key":{"source":"s","event_id":"e"}}{"key":{"source":"t","event_id":"f"}}`},
		{"trailing close bracket", `{"key":{"source":"s","event_id":"e"}}]`},
		{"trailing close brace", `{"key":{"source":"s","event_id":"e"}}}`},
		{"trailing null", `{"key":{"source":"s","event_id":"e"}} null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage(tt.body)
			if err == nil {
				t.Fatalf("DecodeMessage(%q) = %+v, want an error", tt.body, m)
			}
		})
	}
}

func TestDecodeMessageAcceptsSurroundingWhitespace(t *testing.T) {
	body := " \n\t{\"key\":{\"source\":\"s\",\"event_id\":\"e\"}}\n "
	m, err := DecodeMessage(body)
	if err != nil {
		t.Fatalf("DecodeMessage(%q): %v", body, err)
	}
	if want := (Key{Source: "s", EventID: "e"}); m.Key != want {
		t.Errorf("got %+v, want %+v", m.Key, want)
	}
}

func TestEventLogValueRedactsPayload(t *testing.T) {
	const marker = "SECRET-PAYLOAD-MARKER-4f9a"
	ev := Event{
		Key:        Key{Source: "stripe", Account: "acct_1", EventID: "evt_1"},
		Kind:       "stripe",
		Type:       "invoice.paid",
		Payload:    []byte(`{"card":"` + marker + `"}`),
		Status:     StatusFailed,
		Attempts:   3,
		LastError:  "boom",
		ReceivedAt: time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC),
	}

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("processed", "event", ev)

	out := buf.String()
	if strings.Contains(out, marker) {
		t.Fatalf("log line contains the payload: %s", out)
	}
	var line struct {
		Event map[string]any `json:"event"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line is not JSON: %v: %s", err, out)
	}
	want := map[string]any{
		"key":           "stripe#acct_1#evt_1",
		"type":          "invoice.paid",
		"status":        "failed",
		"attempts":      float64(3),
		"payload_bytes": float64(len(ev.Payload)),
	}
	for k, w := range want {
		if got := line.Event[k]; got != w {
			t.Errorf("event.%s = %v, want %v", k, got, w)
		}
	}
	if len(line.Event) != len(want) {
		t.Errorf("event logged %d attributes %v, want exactly %d", len(line.Event), line.Event, len(want))
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(`{"key":{"source":"stripe","account":"acct_1","event_id":"evt_1"}}`)
	f.Add(`{"key":{"source":"s","event_id":"e#1"}}`)
	f.Add(`{"key":{"source":"s","event_id":"e"}} xyz`)
	f.Add(`{"key":{}}`)
	f.Add(`null`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		m, err := DecodeMessage(body)
		if err != nil {
			return
		}
		if err := m.Key.Validate(); err != nil {
			t.Fatalf("DecodeMessage(%q) accepted an invalid key %+v: %v", body, m.Key, err)
		}
		again, err := EncodeMessage(m.Key)
		if err != nil {
			t.Fatalf("EncodeMessage(%+v): %v", m.Key, err)
		}
		m2, err := DecodeMessage(again)
		if err != nil {
			t.Fatalf("DecodeMessage(%q) of a re-encoded message: %v", again, err)
		}
		if m2.Key != m.Key {
			t.Fatalf("re-encoded key: got %+v, want %+v", m2.Key, m.Key)
		}
	})
}

func FuzzParseKey(f *testing.F) {
	f.Add("stripe#acct_1#evt_1")
	f.Add("stripe##evt#1")
	f.Add("##")
	f.Add("s#a")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if got := k.String(); got != s {
			t.Fatalf("ParseKey(%q).String() = %q, want the input", s, got)
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("ParseKey(%q) = %+v, which does not validate: %v", s, k, err)
		}
	})
}

// TestValidateKeyLength: the parts' bounds keep every valid key, rendered,
// within maxKey; longer ids are refused before any store sees them.
func TestValidateKeyLength(t *testing.T) {
	k := Key{Source: "s", EventID: strings.Repeat("e", 1100)}
	if err := k.Validate(); err == nil {
		t.Error("got nil for a key over 1024 bytes, want an error")
	}
	k = Key{Source: strings.Repeat("s", maxSource), Account: strings.Repeat("a", maxAccount), EventID: strings.Repeat("e", maxEventID)}
	if err := k.Validate(); err != nil {
		t.Fatalf("got %v for a key with every part at its bound, want nil", err)
	}
	if n := len(k.String()); n > maxKey {
		t.Errorf("the longest valid key renders to %d bytes, over %d", n, maxKey)
	}
}

// TestValidateErrorOmitsTheKey: the error names the part and the offset,
// never the value, which a client chose and may be long.
func TestValidateErrorOmitsTheKey(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		want string
	}{
		{"NUL", Key{Source: "stripe", EventID: "evt_secretish\x00"}, "key: event id: control character U+0000 at byte 13"},
		{"NEL in account", Key{Source: "s", Account: "ab\u0085", EventID: "evt_secretish"}, "key: account: control character U+0085 at byte 2"},
		{"invalid UTF-8", Key{Source: "s", EventID: "evt_secretish\xff"}, "key: event id: invalid UTF-8 at byte 13"},
		{"too long", Key{Source: "s", EventID: "evt_secretish" + strings.Repeat("e", 600)}, "key: event id longer than 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.key.Validate()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secretish") {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

// FuzzCheckAlphabet holds the ASCII fast path of checkAlphabet to its
// definition: valid UTF-8 with no rune unicode.IsControl reports.
func FuzzCheckAlphabet(f *testing.F) {
	for _, s := range []string{"evt_1", "evt\x00", "\x7f", "\u0085", "\u00a0", "日本", "\xff", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := utf8.ValidString(s)
		for _, r := range s {
			if unicode.IsControl(r) {
				want = false
			}
		}
		if err := checkAlphabet(s); (err == nil) != want {
			t.Fatalf("checkAlphabet(%q) = %v, want valid %t", s, err, want)
		}
	})
}
