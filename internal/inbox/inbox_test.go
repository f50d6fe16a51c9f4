package inbox

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
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

func TestValidateKeyLength(t *testing.T) {
	k := Key{Source: "s", EventID: strings.Repeat("e", 1100)}
	if err := k.Validate(); err == nil {
		t.Error("got nil for a key over 1024 bytes, want an error")
	}
	k.EventID = strings.Repeat("e", 1000)
	if err := k.Validate(); err != nil {
		t.Errorf("got %v for a 1001-byte key, want nil", err)
	}
}
