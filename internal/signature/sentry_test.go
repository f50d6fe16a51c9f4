package signature

import (
	"crypto/sha256"
	"encoding/json"
	"testing"
)

// sentryIssueCreated is shaped like the issue webhook of Sentry's
// integration platform documentation (values made up here).
const sentryIssueCreated = `{"action":"created","installation":{"uuid":"7a485448-a9e2-4c85-8a3c-4f44175783c9"},"data":{"issue":{"id":"1117540176","shortId":"APP-1","title":"Error: Webhooks example","culprit":"handler(app/main)","level":"error","status":"unresolved","firstSeen":"2024-07-26T00:40:00.000000Z","project":{"id":"1","slug":"app"}}},"actor":{"type":"application","id":"sentry","name":"Sentry"}}`

var sentryKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewSentry(o) },
	header:    SentrySignatureHeader,
	enc:       encHex,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("sentry-client-secret-9Wx3Kq6Zt1"),
	secretOld: []byte("sentry-client-secret-old-5Nm2Hp"),
	headers: map[string][]string{
		SentryRequestIDHeader: {"c4b5f0e2-5a1d-4f3e-9b7a-1d2e3f4a5b6c"},
		SentryResourceHeader:  {"issue"},
		SentryTimestampHeader: {"1721954400"},
	},
	bodies: []identifyCase{{name: "issue.created", body: sentryIssueCreated, want: Identity{ID: "c4b5f0e2-5a1d-4f3e-9b7a-1d2e3f4a5b6c", Type: "issue.created"}}},
	identify: []identifyCase{
		{name: "no action", body: `{"data":{}}`, want: Identity{ID: "c4b5f0e2-5a1d-4f3e-9b7a-1d2e3f4a5b6c", Type: "issue"}},
		{name: "empty action", body: `{"action":""}`, want: Identity{ID: "c4b5f0e2-5a1d-4f3e-9b7a-1d2e3f4a5b6c", Type: "issue"}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "array", body: `[]`},
		{name: "numeric action", body: `{"action":1}`},
	},
}

func TestSentry(t *testing.T) { runBodyHMACKind(t, sentryKind) }

func sentryMalformedRuns(tb testing.TB) []malformedRun { return bodyHMACMalformedRuns(tb, sentryKind) }

func TestSentryVerifyMalformed(t *testing.T) { runMalformed(t, sentryMalformedRuns(t)) }

func FuzzSentryVerify(f *testing.F) { fuzzBodyHMACVerify(f, sentryKind) }

func FuzzSentryIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, sentryKind, func(body []byte, id Identity) bool {
		var doc struct {
			Action *string `json:"action"`
		}
		if json.Unmarshal(body, &doc) != nil {
			return false
		}
		if doc.Action == nil || *doc.Action == "" {
			return id.Type == "issue"
		}
		return id.Type == "issue."+*doc.Action
	})
}

func BenchmarkSentry(b *testing.B) { benchBodyHMAC(b, sentryKind) }
