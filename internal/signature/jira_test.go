package signature

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jiraIssueUpdated is shaped like Jira Cloud's jira:issue_updated
// (values made up here).
const jiraIssueUpdated = `{"timestamp":1721954400123,"webhookEvent":"jira:issue_updated","issue_event_type_name":"issue_generic","user":{"accountId":"5b10a2844c20165700ede21g","displayName":"Octo"},"issue":{"id":"10002","key":"APP-3","fields":{"summary":"Webhooks example","status":{"name":"In Progress"}}},"changelog":{"id":"10104","items":[{"field":"status","fromString":"To Do","toString":"In Progress"}]}}`

var jiraKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewJira(o) },
	header:    JiraSignatureHeader,
	prefix:    "sha256=",
	enc:       encHex,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("jira-webhook-secret-2Lq7Xz4Pm9"),
	secretOld: []byte("jira-webhook-secret-old-8Rt1Vn"),
	headers: map[string][]string{
		JiraIdentifierHeader: {"4a9f6c2e-7d1b-4e3a-b5c8-2f0d9e1a6b7c"},
		JiraRetryHeader:      {"0"},
	},
	bodies: []identifyCase{{name: "jira:issue_updated", body: jiraIssueUpdated, want: Identity{
		ID: "4a9f6c2e-7d1b-4e3a-b5c8-2f0d9e1a6b7c", Type: "jira:issue_updated", Created: time.UnixMilli(1721954400123), Attributes: map[string]string{"retry": "0"}}}},
	identify: []identifyCase{
		{name: "minimal", body: `{"webhookEvent":"comment_created"}`, want: Identity{ID: "4a9f6c2e-7d1b-4e3a-b5c8-2f0d9e1a6b7c", Type: "comment_created", Attributes: map[string]string{"retry": "0"}}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "missing webhookEvent", body: `{"timestamp":1}`},
		{name: "numeric webhookEvent", body: `{"webhookEvent":1}`},
		{name: "timestamp a string", body: `{"webhookEvent":"x","timestamp":"1721954400123"}`},
		{name: "timestamp negative", body: `{"webhookEvent":"x","timestamp":-1}`},
		{name: "webhookEvent 513 bytes", body: `{"webhookEvent":"` + strings.Repeat("x", 513) + `"}`},
	},
}

func TestJira(t *testing.T) { runBodyHMACKind(t, jiraKind) }

func jiraMalformedRuns(tb testing.TB) []malformedRun { return bodyHMACMalformedRuns(tb, jiraKind) }

func TestJiraVerifyMalformed(t *testing.T) { runMalformed(t, jiraMalformedRuns(t)) }

func FuzzJiraVerify(f *testing.F) { fuzzBodyHMACVerify(f, jiraKind) }

func FuzzJiraIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, jiraKind, func(body []byte, id Identity) bool {
		var doc struct {
			WebhookEvent string `json:"webhookEvent"`
		}
		return json.Unmarshal(body, &doc) == nil && doc.WebhookEvent == id.Type
	})
}

func BenchmarkJira(b *testing.B) { benchBodyHMAC(b, jiraKind) }
