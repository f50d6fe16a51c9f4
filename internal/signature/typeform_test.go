package signature

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// typeformResponse is shaped like the form_response example of Typeform's
// webhook documentation (values made up here).
const typeformResponse = `{"event_id":"01HXYZ8K3RJ0VN2QZ6W5T4S3R2","event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","submitted_at":"2024-07-26T00:40:00Z","landed_at":"2024-07-26T00:39:12Z","definition":{"id":"lT4Z3j","title":"Webhooks example","fields":[{"id":"DlXFaesGBpoF","title":"Thanks, {{answer_60906475}}! What's your favorite food?","type":"short_text","ref":"readable_ref_short_text"}]},"answers":[{"type":"text","text":"Lorem ipsum dolor","field":{"id":"DlXFaesGBpoF","type":"short_text","ref":"readable_ref_short_text"}}]}}`

var typeformKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewTypeform(o) },
	header:    TypeformSignatureHeader,
	prefix:    "sha256=",
	enc:       encBase64,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("typeform-webhook-secret-9Qx2Lr7Kp4"),
	secretOld: []byte("typeform-webhook-secret-old-3Mv8Tz"),
	bodies: []identifyCase{{name: "form_response", body: typeformResponse, want: Identity{
		ID: "01HXYZ8K3RJ0VN2QZ6W5T4S3R2", Type: "form_response", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC), Attributes: map[string]string{"form_id": "lT4Z3j"}}}},
	identify: []identifyCase{
		{name: "minimal", body: `{"event_id":"e1","event_type":"form_response"}`, want: Identity{ID: "e1", Type: "form_response"}},
		{name: "submitted_at null", body: `{"event_id":"e1","event_type":"t","form_response":{"submitted_at":null}}`, want: Identity{ID: "e1", Type: "t"}},
		{name: "form_response's token is not the id", body: `{"form_response":{"token":"x"},"event_id":"e1","event_type":"t"}`, want: Identity{ID: "e1", Type: "t"}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "array", body: `[{"event_id":"e1","event_type":"t"}]`},
		{name: "truncated", body: `{"event_id":"e1","event_type":"t"`},
		{name: "missing event_id", body: `{"event_type":"t"}`},
		{name: "numeric event_id", body: `{"event_id":1,"event_type":"t"}`},
		{name: "event_id 513 bytes", body: `{"event_id":"` + strings.Repeat("e", 513) + `","event_type":"t"}`},
		{name: "missing event_type", body: `{"event_id":"e1"}`},
		{name: "submitted_at not RFC 3339", body: `{"event_id":"e1","event_type":"t","form_response":{"submitted_at":"26/07/2024"}}`},
	},
}

func TestTypeform(t *testing.T) { runBodyHMACKind(t, typeformKind) }

func typeformMalformedRuns(tb testing.TB) []malformedRun {
	return bodyHMACMalformedRuns(tb, typeformKind)
}

func TestTypeformVerifyMalformed(t *testing.T) { runMalformed(t, typeformMalformedRuns(t)) }

func FuzzTypeformVerify(f *testing.F) { fuzzBodyHMACVerify(f, typeformKind) }

func FuzzTypeformIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, typeformKind, func(body []byte, id Identity) bool {
		var doc struct {
			EventID   string `json:"event_id"`
			EventType string `json:"event_type"`
		}
		return json.Unmarshal(body, &doc) == nil && doc.EventID == id.ID && doc.EventType == id.Type
	})
}

func BenchmarkTypeform(b *testing.B) { benchBodyHMAC(b, typeformKind) }
