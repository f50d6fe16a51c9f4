package forward

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

var sources = []string{"stripe", "github", "slack"}

func TestParse(t *testing.T) {
	routes, err := Parse(`[
		{"source": "stripe", "types": ["invoice.*", "customer.created"], "bus": "inbox"},
		{"source": "stripe", "bus": "arn:aws:events:us-east-1:123456789012:event-bus/audit", "retry_unknown": false},
		{"source": "github"}
	]`, sources, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Routes{
		{Source: "stripe", Types: []string{"invoice.*", "customer.created"}, Bus: "inbox", RetryUnknown: true},
		{Source: "stripe", Bus: "arn:aws:events:us-east-1:123456789012:event-bus/audit"},
		{Source: "github", Bus: DefaultBus, RetryUnknown: true},
	}
	if got, _ := json.Marshal(routes); !bytes.Equal(got, mustJSON(t, want)) {
		t.Errorf("got %s\nwant %s", got, mustJSON(t, want))
	}
	// A route without a bus takes the deployment's.
	if routes, err := Parse(`[{"source":"github"},{"source":"stripe","bus":"own"}]`, sources, "stack-webhooks"); err != nil || routes[0].Bus != "stack-webhooks" || routes[1].Bus != "own" {
		t.Errorf("FORWARD_BUS: %+v, %v; want the route without a bus on it", routes, err)
	}
	if routes, err := Parse("  ", sources, ""); err != nil || routes != nil {
		t.Errorf("empty FORWARD: %v, %v; want no routes", routes, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseRefuses: each bad configuration is refused with a message
// naming the entry.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{`{"source":"stripe"}`, "want a JSON list"},
		{`[] []`, "data after the list"},
		{`[{"source":"stripe","bus":"inbox"}, {"source":"shopify"}]`, `FORWARD entry 1 (source "shopify"): no such source`},
		{`[{"bus":"inbox"}]`, "FORWARD entry 0 (source \"\"): source is required"},
		{`[{"source":"stripe","buss":"inbox"}]`, `FORWARD entry 0: json: unknown field "buss"`},
		{`[{"source":"stripe","bus":"in box"}]`, `FORWARD entry 0 (source "stripe"): bus "in box" is neither`},
		{`[{"source":"stripe","bus":"arn:aws:sqs:us-east-1:123456789012:q"}]`, `is neither an event bus name`},
		{`[{"source":"stripe","types":["in*voice"]}]`, `FORWARD entry 0 (source "stripe"): type "in*voice": "*" may only end a pattern`},
		{`[{"source":"stripe","types":[""]}]`, `type "": empty pattern`},
		{`[{"source":"stripe","types":["` + strings.Repeat("a", 300) + `"]}]`, `over 256 bytes`},
		{`[{"source":"stripe","retry_unknown":"yes"}]`, `FORWARD entry 0: json: cannot unmarshal string`},
		{`[{"source":"stripe"},{"source":"stripe","bus":"default","types":["x"]}]`, `FORWARD entry 1 (source "stripe"): forwards to bus "default" as entry 0 does`},
	} {
		_, err := Parse(tc.v, sources, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error containing %q", tc.v, err, tc.want)
		}
	}
	// Every problem at once.
	_, err := Parse(`[{"source":"nope"},{"source":"stripe","bus":"a b"}]`, sources, "")
	if err == nil || !strings.Contains(err.Error(), "entry 0") || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("two bad entries: %v, want both named", err)
	}
}

func TestMatch(t *testing.T) {
	routes, err := Parse(`[
		{"source": "stripe", "types": ["invoice.*", "customer.created"], "bus": "billing"},
		{"source": "stripe", "types": ["*"], "bus": "all"},
		{"source": "github", "bus": "code"}
	]`, sources, "")
	if err != nil {
		t.Fatal(err)
	}
	buses := func(source, typ string) string {
		var b []string
		for _, r := range routes.Match(source, typ) {
			b = append(b, r.Bus)
		}
		return strings.Join(b, ",")
	}
	for _, tc := range []struct{ source, typ, want string }{
		{"stripe", "invoice.paid", "billing,all"},
		{"stripe", "invoice.", "billing,all"},
		{"stripe", "invoices", "all"},
		{"stripe", "customer.created", "billing,all"},
		{"stripe", "customer.created.x", "all"},
		{"github", "push", "code"},
		{"slack", "message", ""},
	} {
		if got := buses(tc.source, tc.typ); got != tc.want {
			t.Errorf("%s %s: buses %q, want %q", tc.source, tc.typ, got, tc.want)
		}
	}
}

func TestOutbound(t *testing.T) {
	ev := inbox.Event{
		Key: inbox.Key{Source: "stripe", Account: "acct_1", EventID: "evt_1"}, Type: "invoice.paid",
		Created: time.Unix(1764500000, 0), ReceivedAt: time.Unix(1764500005, 0),
	}
	rows, err := Outbound(ev, Routes{{Source: "stripe", Bus: "billing"}, {Source: "stripe", Bus: "all"}})
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %v, %v; want two", rows, err)
	}
	p := effects.Plan{Outbound: rows}
	if err := p.Validate(); err != nil {
		t.Fatalf("the rows do not make a valid plan: %v", err)
	}
	if rows[0].Key == rows[1].Key || rows[0].Action != effects.ActionEventBridge || rows[0].Target != "eventbridge:stripe:billing" {
		t.Errorf("rows: %+v", rows)
	}
	var r Row
	if err := json.Unmarshal(rows[0].Body, &r); err != nil {
		t.Fatal(err)
	}
	if want := (Row{Bus: "billing", Source: "webhook-inbox.stripe", DetailType: "invoice.paid", Time: "2025-11-30T10:53:20Z", EventKey: "stripe#acct_1#evt_1"}); r != want {
		t.Errorf("row %+v, want %+v", r, want)
	}
	// No provider time: the receipt's.
	ev.Created = time.Time{}
	rows, _ = Outbound(ev, Routes{{Source: "stripe", Bus: "billing"}})
	if !strings.Contains(string(rows[0].Body), `"time":"2025-11-30T10:53:25Z"`) {
		t.Errorf("row without a provider time: %s", rows[0].Body)
	}
}

func detailOf(t *testing.T, payload string) map[string]any {
	t.Helper()
	d, err := Detail(Row{Source: "webhook-inbox.stripe", DetailType: "invoice.paid"}, Meta{EventKey: "stripe##evt_1"}, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(d, &m); err != nil {
		t.Fatalf("detail %s is not a JSON object: %v", d, err)
	}
	if meta, _ := m[MetaKey].(map[string]any); meta["event_key"] != "stripe##evt_1" {
		t.Errorf("detail %s has no event key", d)
	}
	return m
}

func TestDetail(t *testing.T) {
	if m := detailOf(t, ` {"id":"evt_1","data":{"object":{"status":"paid"}}} `); m["id"] != "evt_1" || m["data"] == nil {
		t.Errorf("object payload: %v, want its members at the top", m)
	}
	if m := detailOf(t, `{}`); len(m) != 1 {
		t.Errorf("empty object: %v", m)
	}
	if m := detailOf(t, `{"webhook_inbox":"theirs","id":"x"}`); m["payload"].(map[string]any)["webhook_inbox"] != "theirs" {
		t.Errorf("payload with its own webhook_inbox: %v, want it under payload", m)
	}
	if m := detailOf(t, `[{"id":1},{"id":2}]`); len(m["payload"].([]any)) != 2 {
		t.Errorf("array payload: %v", m)
	}
	if m := detailOf(t, `payload=%7B%22type%22%3A%22block_actions%22%7D`); m["payload_text"] != "payload=%7B%22type%22%3A%22block_actions%22%7D" {
		t.Errorf("form payload: %v", m)
	}
	if m := detailOf(t, "\xff\xfe"); m["payload_base64"] != "//4=" {
		t.Errorf("binary payload: %v", m)
	}
	big := `{"blob":"` + strings.Repeat("x", MaxEntryBytes) + `"}`
	m := detailOf(t, big)
	meta := m[MetaKey].(map[string]any)
	if m["blob"] != nil || meta["payload_omitted"] == nil || int(meta["payload_bytes"].(float64)) != len(big) || len(meta["payload_sha256"].(string)) != 64 {
		t.Errorf("payload over the limit: %v, want Meta alone saying where it is", meta)
	}
	// Just at the limit: kept.
	r := Row{Source: "webhook-inbox.stripe", DetailType: "invoice.paid"}
	meta0, _ := json.Marshal(Meta{EventKey: "k"})
	pad := MaxEntryBytes - Size(r, []byte(`{"webhook_inbox":`+string(meta0)+`,"b":""}`))
	at := `{"b":"` + strings.Repeat("y", pad) + `"}`
	d, err := Detail(r, Meta{EventKey: "k"}, []byte(at))
	if err != nil || Size(r, d) != MaxEntryBytes || !bytes.Contains(d, []byte(`"b":"yyy`)) {
		t.Errorf("an entry of exactly MaxEntryBytes: size %d, %v; want the payload kept", Size(r, d), err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`[{"source":"stripe","types":["invoice.*"],"bus":"inbox","retry_unknown":false}]`)
	f.Add(`[{"source":"github"}]`)
	f.Add(`[{"source":"stripe","types":["*"]},{"source":"stripe","bus":"x"}]`)
	f.Fuzz(func(t *testing.T, v string) {
		routes, err := Parse(v, sources, "")
		if err != nil {
			return
		}
		for _, r := range routes {
			if r.Bus == "" || r.Source == "" {
				t.Fatalf("accepted route %+v", r)
			}
			_ = routes.Match(r.Source, "invoice.paid")
		}
	})
}

func FuzzDetail(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1"}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`a=b`))
	f.Add([]byte(`{"webhook_inbox":1}`))
	f.Add([]byte(" {\n} "))
	f.Fuzz(func(t *testing.T, payload []byte) {
		r := Row{Source: "webhook-inbox.x", DetailType: "t", Time: "2026-01-01T00:00:00Z"}
		d, err := Detail(r, Meta{EventKey: "x##1"}, payload)
		if err != nil {
			t.Fatalf("Detail(%q): %v", payload, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatalf("Detail(%q) = %s: not a JSON object: %v", payload, d, err)
		}
		if _, ok := m[MetaKey]; !ok || Size(r, d) > MaxEntryBytes {
			t.Fatalf("Detail(%q) = %s: no %s, or over the limit", payload, d, MetaKey)
		}
	})
}
