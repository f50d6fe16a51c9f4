package config

import (
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
)

const validSources = `[{"name":"stripe","kind":"stripe"}]`

// env returns a getenv backed by m, with every setting present unless
// overridden or removed (an empty value) by the caller.
func env(overrides map[string]string) func(string) string {
	m := map[string]string{
		"INBOX_TABLE":       "inbox",
		"PAYLOAD_BUCKET":    "payloads",
		"QUEUE_URL":         "https://sqs.eu-west-1.amazonaws.com/123/inbox",
		"DLQ_URL":           "https://sqs.eu-west-1.amazonaws.com/123/inbox-dlq",
		"SOURCES":           validSources,
		"SECRETS_PREFIX":    "webhook-inbox/",
		"MAX_RECEIVE_COUNT": "5",
	}
	maps.Copy(m, overrides)
	return func(k string) string { return m[k] }
}

func mustLoad(tb testing.TB, getenv func(string) string, need Need) Config {
	tb.Helper()
	c, err := Load(getenv, need)
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return c
}

func wantErrMentions(tb testing.TB, err error, names ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want one mentioning %v", names)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			tb.Errorf("error %q does not mention %s", err, n)
		}
	}
}

var allNeeds = Need{Table: true, Bucket: true, Queue: true, DLQ: true, Sources: true, MaxReceiveCount: true}

// TestLoadEveryNeed loads every combination of Need with all settings
// present, then with all settings absent.
func TestLoadEveryNeed(t *testing.T) {
	for bits := range 1 << 6 {
		need := Need{
			Table:           bits&1 != 0,
			Queue:           bits&2 != 0,
			DLQ:             bits&4 != 0,
			Sources:         bits&8 != 0,
			MaxReceiveCount: bits&16 != 0,
			Bucket:          bits&32 != 0,
		}
		t.Run(needName(need), func(t *testing.T) {
			c := mustLoad(t, env(nil), need)
			if c.InboxTable != "inbox" || c.PayloadBucket != "payloads" || c.QueueURL == "" || c.DLQURL == "" || c.SecretsPrefix != "webhook-inbox/" {
				t.Errorf("got %+v, want every string setting read", c)
			}
			if gotSources := c.Sources != nil; gotSources != need.Sources {
				t.Errorf("Sources set: got %t, want %t", gotSources, need.Sources)
			}
			wantMRC := 0
			if need.MaxReceiveCount {
				wantMRC = 5
			}
			if c.MaxReceiveCount != wantMRC {
				t.Errorf("MaxReceiveCount: got %d, want %d", c.MaxReceiveCount, wantMRC)
			}

			_, err := Load(func(string) string { return "" }, need)
			var missing []string
			for _, m := range []struct {
				want bool
				name string
			}{
				{need.Table, "INBOX_TABLE"},
				{need.Bucket, "PAYLOAD_BUCKET"},
				{need.Queue, "QUEUE_URL"},
				{need.DLQ, "DLQ_URL"},
				{need.Sources, "SOURCES"},
				{need.MaxReceiveCount, "MAX_RECEIVE_COUNT"},
			} {
				if m.want {
					missing = append(missing, m.name)
				}
			}
			if len(missing) == 0 {
				if err != nil {
					t.Errorf("empty environment: %v, want no error when nothing is required", err)
				}
				return
			}
			wantErrMentions(t, err, missing...)
		})
	}
}

func needName(n Need) string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{n.Table, "table"}, {n.Queue, "queue"}, {n.DLQ, "dlq"}, {n.Sources, "sources"}, {n.MaxReceiveCount, "mrc"}, {n.Bucket, "bucket"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func TestLoadDefaults(t *testing.T) {
	c := mustLoad(t, env(nil), Need{})
	if c.MaxBodyBytes != DefaultMaxBodyBytes {
		t.Errorf("MaxBodyBytes: got %d, want %d", c.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	if want := DefaultPayloadRetentionDays * 24 * time.Hour; c.Retention != want {
		t.Errorf("Retention: got %v, want %v", c.Retention, want)
	}
	if c.LogLevel != slog.LevelInfo {
		t.Errorf("LogLevel: got %v, want %v", c.LogLevel, slog.LevelInfo)
	}
	if c.Concurrency != 10 || c.RetryBase != 30*time.Second || c.RetryCap != time.Hour || c.SweepAfter != 5*time.Minute {
		t.Errorf("processor and sweep defaults: got %d %v %v %v, want 10 30s 1h 5m", c.Concurrency, c.RetryBase, c.RetryCap, c.SweepAfter)
	}
}

func TestLoadMissingListedTogether(t *testing.T) {
	getenv := env(map[string]string{"INBOX_TABLE": "", "QUEUE_URL": "  ", "DLQ_URL": "", "SOURCES": "", "MAX_RECEIVE_COUNT": ""})
	_, err := Load(getenv, allNeeds)
	wantErrMentions(t, err, "INBOX_TABLE", "QUEUE_URL", "DLQ_URL", "SOURCES", "MAX_RECEIVE_COUNT")
}

func TestLoadProblemsListedTogether(t *testing.T) {
	getenv := env(map[string]string{"INBOX_TABLE": "", "MAX_BODY_BYTES": "x", "PAYLOAD_RETENTION_DAYS": "0", "LOG_LEVEL": "verbose"})
	_, err := Load(getenv, allNeeds)
	wantErrMentions(t, err, "INBOX_TABLE", "MAX_BODY_BYTES", "PAYLOAD_RETENTION_DAYS", "LOG_LEVEL")
}

func TestLoadIntegers(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		check   func(Config) (got, want any)
		wantErr string // the variable the error must name; "" for success
	}{
		{"body bytes set", map[string]string{"MAX_BODY_BYTES": "1024"}, func(c Config) (any, any) { return c.MaxBodyBytes, 1024 }, ""},
		{"body bytes trimmed", map[string]string{"MAX_BODY_BYTES": " 2048 "}, func(c Config) (any, any) { return c.MaxBodyBytes, 2048 }, ""},
		{"body bytes at 1", map[string]string{"MAX_BODY_BYTES": "1"}, func(c Config) (any, any) { return c.MaxBodyBytes, 1 }, ""},
		{"body bytes at cap", map[string]string{"MAX_BODY_BYTES": "6291456"}, func(c Config) (any, any) { return c.MaxBodyBytes, 6 << 20 }, ""},
		{"body bytes above cap", map[string]string{"MAX_BODY_BYTES": "6291457"}, nil, "MAX_BODY_BYTES"},
		{"body bytes API Gateway max", map[string]string{"MAX_BODY_BYTES": "10485760"}, nil, "MAX_BODY_BYTES"},
		{"body bytes zero", map[string]string{"MAX_BODY_BYTES": "0"}, nil, "MAX_BODY_BYTES"},
		{"body bytes negative", map[string]string{"MAX_BODY_BYTES": "-1"}, nil, "MAX_BODY_BYTES"},
		{"body bytes not an integer", map[string]string{"MAX_BODY_BYTES": "256k"}, nil, "MAX_BODY_BYTES"},
		{"body bytes float", map[string]string{"MAX_BODY_BYTES": "1.5"}, nil, "MAX_BODY_BYTES"},
		{"retention 1 day", map[string]string{"PAYLOAD_RETENTION_DAYS": "1"}, func(c Config) (any, any) { return c.Retention, 24 * time.Hour }, ""},
		{"retention 7 days", map[string]string{"PAYLOAD_RETENTION_DAYS": "7"}, func(c Config) (any, any) { return c.Retention, 168 * time.Hour }, ""},
		{"retention 3650 days", map[string]string{"PAYLOAD_RETENTION_DAYS": "3650"}, func(c Config) (any, any) { return c.Retention, 3650 * 24 * time.Hour }, ""},
		{"retention zero", map[string]string{"PAYLOAD_RETENTION_DAYS": "0"}, nil, "PAYLOAD_RETENTION_DAYS"},
		{"retention above max", map[string]string{"PAYLOAD_RETENTION_DAYS": "3651"}, nil, "PAYLOAD_RETENTION_DAYS"},
		{"retention not an integer", map[string]string{"PAYLOAD_RETENTION_DAYS": "30d"}, nil, "PAYLOAD_RETENTION_DAYS"},
		{"receive count", map[string]string{"MAX_RECEIVE_COUNT": "10"}, func(c Config) (any, any) { return c.MaxReceiveCount, 10 }, ""},
		{"receive count missing", map[string]string{"MAX_RECEIVE_COUNT": ""}, nil, "MAX_RECEIVE_COUNT"},
		{"receive count blank", map[string]string{"MAX_RECEIVE_COUNT": "   "}, nil, "MAX_RECEIVE_COUNT"},
		{"receive count zero", map[string]string{"MAX_RECEIVE_COUNT": "0"}, nil, "MAX_RECEIVE_COUNT"},
		{"receive count above max", map[string]string{"MAX_RECEIVE_COUNT": "1001"}, nil, "MAX_RECEIVE_COUNT"},
		{"receive count not an integer", map[string]string{"MAX_RECEIVE_COUNT": "five"}, nil, "MAX_RECEIVE_COUNT"},
		{"concurrency", map[string]string{"PROCESSOR_CONCURRENCY": "3"}, func(c Config) (any, any) { return c.Concurrency, 3 }, ""},
		{"concurrency zero", map[string]string{"PROCESSOR_CONCURRENCY": "0"}, nil, "PROCESSOR_CONCURRENCY"},
		{"concurrency above max", map[string]string{"PROCESSOR_CONCURRENCY": "101"}, nil, "PROCESSOR_CONCURRENCY"},
		{"retry base", map[string]string{"RETRY_BASE_SECONDS": "5"}, func(c Config) (any, any) { return c.RetryBase, 5 * time.Second }, ""},
		{"retry cap", map[string]string{"RETRY_CAP_SECONDS": "43200"}, func(c Config) (any, any) { return c.RetryCap, 12 * time.Hour }, ""},
		{"retry cap over SQS's 12 hours", map[string]string{"RETRY_CAP_SECONDS": "43201"}, nil, "RETRY_CAP_SECONDS"},
		// The template accepts it (its rules cannot compare two numbers):
		// refused here, every function would fail at its start.
		{"retry cap below base", map[string]string{"RETRY_BASE_SECONDS": "60", "RETRY_CAP_SECONDS": "30"}, func(c Config) (any, any) { return c.RetryCap, 30 * time.Second }, ""},
		{"sweep after", map[string]string{"SWEEP_AFTER_SECONDS": "60"}, func(c Config) (any, any) { return c.SweepAfter, time.Minute }, ""},
		{"sweep after zero", map[string]string{"SWEEP_AFTER_SECONDS": "0"}, nil, "SWEEP_AFTER_SECONDS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env), allNeeds)
			if tt.wantErr != "" {
				wantErrMentions(t, err, tt.wantErr)
				if !reflect.DeepEqual(c, Config{}) {
					t.Errorf("got %+v with the error, want the zero Config", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got, want := tt.check(c); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// MAX_RECEIVE_COUNT is read only by functions that need it.
func TestLoadReceiveCountIgnoredUnlessNeeded(t *testing.T) {
	c := mustLoad(t, env(map[string]string{"MAX_RECEIVE_COUNT": "nonsense"}), Need{Table: true})
	if c.MaxReceiveCount != 0 {
		t.Errorf("MaxReceiveCount: got %d, want 0", c.MaxReceiveCount)
	}
}

func TestLoadLogLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"INFO", slog.LevelInfo, false},
		{"WARN", slog.LevelWarn, false},
		{"warning", slog.LevelWarn, false},
		{" error ", slog.LevelError, false},
		{"verbose", 0, true},
		{"trace", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := Load(env(map[string]string{"LOG_LEVEL": tt.in}), allNeeds)
			if tt.wantErr {
				wantErrMentions(t, err, "LOG_LEVEL", tt.in)
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.LogLevel != tt.want {
				t.Errorf("got %v, want %v", c.LogLevel, tt.want)
			}
		})
	}
}

func TestLoadSources(t *testing.T) {
	tests := []struct {
		name    string
		sources string
	}{
		{"not json", "stripe"},
		{"empty list", "[]"},
		{"unknown kind", `[{"name":"s","kind":"ebay"}]`},
		{"bad tolerance", `[{"name":"s","kind":"stripe","options":{"tolerance":"0"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{"SOURCES": tt.sources}), allNeeds)
			wantErrMentions(t, err, "SOURCES")
		})
	}

	t.Run("valid with prefix", func(t *testing.T) {
		c := mustLoad(t, env(map[string]string{"SOURCES": `[{"name":"stripe","kind":"stripe"},{"name":"shop","kind":"stripe","options":{"accounts":"any"}}]`}), allNeeds)
		if _, err := c.Sources.Lookup("shop", "acct_1"); err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if got, want := c.Sources.SecretID("shop", "acct_1"), "webhook-inbox/shop/acct_1"; got != want {
			t.Errorf("SecretID: got %q, want %q", got, want)
		}
	})

	t.Run("a secrets prefix that is not a folder", func(t *testing.T) {
		for _, prefix := range []string{"", "webhook-inbox"} {
			_, err := Load(env(map[string]string{"SECRETS_PREFIX": prefix}), allNeeds)
			wantErrMentions(t, err, "SECRETS_PREFIX")
		}
	})

	t.Run("not read unless needed", func(t *testing.T) {
		c := mustLoad(t, env(map[string]string{"SOURCES": "not json"}), Need{Table: true})
		if c.Sources != nil {
			t.Errorf("got Sources %v, want nil", c.Sources.Names())
		}
	})
}

func TestLoadForward(t *testing.T) {
	need := Need{Forward: true}
	c := mustLoad(t, env(map[string]string{"FORWARD": `[{"source":"stripe","types":["invoice.*"],"bus":"inbox"}]`}), need)
	if len(c.Forward) != 1 || c.Forward[0].Bus != "inbox" || !c.Forward[0].RetryUnknown || c.ForwardTimeout != 5*time.Second {
		t.Errorf("got %+v, timeout %s", c.Forward, c.ForwardTimeout)
	}
	if c := mustLoad(t, env(nil), need); c.Forward != nil {
		t.Errorf("no FORWARD: got %+v, want no routes", c.Forward)
	}
	// Refused at start-up, naming the entry, with every other problem.
	_, err := Load(env(map[string]string{"FORWARD": `[{"source":"stripe"},{"source":"github"}]`, "FORWARD_TIMEOUT_SECONDS": "0"}), need)
	wantErrMentions(t, err, `FORWARD entry 1 (source "github"): no such source`, "FORWARD_TIMEOUT_SECONDS")
	// A call longer than the processor's work leaves time for would
	// never start.
	_, err = Load(env(map[string]string{"FORWARD": `[{"source":"stripe"}]`, "FORWARD_TIMEOUT_SECONDS": "16"}), need)
	wantErrMentions(t, err, "FORWARD_TIMEOUT_SECONDS")
	if c := mustLoad(t, env(map[string]string{"FORWARD": `[{"source":"stripe"}]`, "FORWARD_TIMEOUT_SECONDS": "15"}), need); c.ForwardTimeout != 15*time.Second {
		t.Errorf("timeout %s, want 15s", c.ForwardTimeout)
	}
	// Not read unless needed.
	mustLoad(t, env(map[string]string{"FORWARD": "not json"}), Need{Sources: true})
	// ForwardBus none in the template: no routes, or no start.
	_, err = Load(env(map[string]string{"FORWARD": `[{"source":"stripe","bus":"arn:aws:events:us-east-1:123456789012:event-bus/b"}]`, "FORWARD_BUS": "none"}), need)
	wantErrMentions(t, err, `FORWARD has 1 routes but FORWARD_BUS is "none"`)
	if c := mustLoad(t, env(map[string]string{"FORWARD_BUS": "none"}), need); c.Forward != nil {
		t.Errorf("FORWARD_BUS none, no FORWARD: got %+v", c.Forward)
	}
}

// TestLoadTargets: TARGETS gives each declared target its URL and options,
// and the processor refuses to start, naming the entry or the target, when
// a declared target has none or an entry names a target nobody declares —
// never rows that fail at run time.
func TestLoadTargets(t *testing.T) {
	declared := []effects.Target{{Name: "receipt"}, {Name: "refund_notice"}}
	need := Need{Targets: true, Declared: declared}
	c := mustLoad(t, env(map[string]string{"TARGETS": `[
		{"name":"receipt","url":"https://receipts.example.com/hook","timeout_seconds":15},
		{"name":"refund_notice"}]`}), need)
	want := []Target{
		{Name: "receipt", URL: "https://receipts.example.com/hook", Timeout: 15 * time.Second},
		{Name: "refund_notice"},
	}
	if !reflect.DeepEqual(c.Targets, want) {
		t.Errorf("got %+v\nwant %+v", c.Targets, want)
	}
	// retry_unknown is the deployment's: its receiver's. Unsaid, false.
	c = mustLoad(t, env(map[string]string{"TARGETS": `[{"name":"receipt","retry_unknown":true},{"name":"refund_notice","retry_unknown":false}]`}), need)
	if !c.Targets[0].RetryUnknown || c.Targets[1].RetryUnknown {
		t.Errorf("retry_unknown: got %+v", c.Targets)
	}
	for v, mentions := range map[string][]string{
		``:   {`target "receipt", which internal/handlers declares, has no TARGETS entry`, `target "refund_notice"`},
		`[]`: {`target "receipt", which internal/handlers declares, has no TARGETS entry`},
		`[{"name":"receipt"},{"name":"refund_notice"},{"name":"refund"}]`:                        {`TARGETS entry 2 (name "refund"): no handler declares this target (internal/handlers Targets: receipt, refund_notice)`},
		`[{"name":"receipt"},{"name":"refund_notice"},{"name":"receipt"}]`:                       {`TARGETS entry 2 (name "receipt"): entry 0 configures it already`},
		`[{"name":"receipt","url":"ftp://x"},{"name":"refund_notice","url":"/relative"}]`:        {`TARGETS entry 0 (name "receipt"): url: want an absolute http or https URL`, `TARGETS entry 1 (name "refund_notice"): url: want`},
		`[{"name":"receipt","timeout_seconds":16},{"name":"refund_notice","timeout_seconds":0}]`: {`TARGETS entry 0 (name "receipt"): timeout_seconds 16: want 1..15`, `entry 1 (name "refund_notice"): timeout_seconds 0`},
		`[{"name":"receipt","uri":"https://x"},{"name":"refund_notice"}]`:                        {`TARGETS entry 0: json: unknown field "uri"`},
		`[{"url":"https://x"},{"name":"receipt"},{"name":"refund_notice"}]`:                      {`TARGETS entry 0 (name ""): name is required`},
		`{"name":"receipt"}`:                  {`TARGETS: want a JSON list of targets`},
		`[{"name":"receipt"}] [{"name":"x"}]`: {`TARGETS: data after the list`},
	} {
		_, err := Load(env(map[string]string{"TARGETS": v}), need)
		wantErrMentions(t, err, mentions...)
	}
	// A URL may carry a token: an error does not repeat it.
	_, err := Load(env(map[string]string{"TARGETS": `[{"name":"receipt","url":"ftp://user:s3cr3t@x"},{"name":"refund_notice"}]`}), need)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a bad URL: %v, want an error that does not repeat it", err)
	}
	// A declaration that could never be configured.
	_, err = Load(env(map[string]string{"TARGETS": `[{"name":"Receipt"}]`}), Need{Targets: true, Declared: []effects.Target{{Name: "Receipt"}}})
	wantErrMentions(t, err, `declared target "Receipt" (internal/handlers Targets): want a name matching`)
	_, err = Load(env(map[string]string{"TARGETS": `[{"name":"a"}]`}), Need{Targets: true, Declared: []effects.Target{{Name: "a"}, {Name: "a"}}})
	wantErrMentions(t, err, `declared target "a" (internal/handlers Targets): declared twice`)
	// No declared targets: none may be configured.
	mustLoad(t, env(map[string]string{"TARGETS": ""}), Need{Targets: true})
	_, err = Load(env(map[string]string{"TARGETS": `[{"name":"receipt"}]`}), Need{Targets: true})
	wantErrMentions(t, err, `no handler declares this target (internal/handlers Targets: none)`)
	// Not read unless needed.
	mustLoad(t, env(map[string]string{"TARGETS": "not json"}), Need{Sources: true})
}

// TestLoadReceiptSettingsMoved: the receipt's own settings, which TARGETS
// replaced, stop the function with the entry to write instead, rather
// than its receipts silently going to the log.
func TestLoadReceiptSettingsMoved(t *testing.T) {
	_, err := Load(env(map[string]string{"RECEIPT_WEBHOOK_URL": "https://receipts.example.com/hook", "RECEIPT_RETRY_UNKNOWN": "true"}), Need{})
	wantErrMentions(t, err, `RECEIPT_WEBHOOK_URL (parameter ReceiptWebhookUrl) is replaced by TARGETS`, `{"name":"receipt","url":"<its URL>"}`, "RECEIPT_RETRY_UNKNOWN")
	if strings.Contains(err.Error(), "receipts.example.com") {
		t.Errorf("the error repeats the URL, which may carry a token: %v", err)
	}
	mustLoad(t, env(map[string]string{"RECEIPT_WEBHOOK_URL": " ", "RECEIPT_RETRY_UNKNOWN": "false"}), Need{})
}
