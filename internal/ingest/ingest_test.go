package ingest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/obs/emftest"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

const testSecret = "whsec_test_secret_never_logged"

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var errNoSecret = errors.New("no such secret")

// fakeSecrets serves signing secrets by id.
type fakeSecrets map[string][][]byte

func (f fakeSecrets) Get(_ context.Context, id string) (source.Keys, error) {
	if s, ok := f[id]; ok {
		return source.Keys{Signing: s}, nil
	}
	return source.Keys{}, errNoSecret
}

// Previous serves the version under id+"@previous", if any.
func (f fakeSecrets) Previous(_ context.Context, id string) (source.Keys, error) {
	if s, ok := f[id+"@previous"]; ok {
		return source.Keys{Signing: s}, nil
	}
	return source.Keys{}, errNoSecret
}

// memStore is an in-memory inbox with the store's duplicate semantics.
type memStore struct {
	mu     sync.Mutex
	events map[string]inbox.Event
	err    error
}

func (m *memStore) Insert(_ context.Context, e inbox.Event, _ time.Time) (inbox.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return inbox.Event{}, m.err
	}
	if old, ok := m.events[e.Key.String()]; ok {
		return old, fmt.Errorf("insert: %w", inbox.ErrDuplicate)
	}
	m.events[e.Key.String()] = e
	return e, nil
}

type fakeQueue struct {
	sent []inbox.Key
	err  error
}

func (q *fakeQueue) Enqueue(_ context.Context, k inbox.Key) error {
	if q.err != nil {
		return q.err
	}
	q.sent = append(q.sent, k)
	return nil
}

type fixture struct {
	h     *Handler
	store *memStore
	queue *fakeQueue
	logs  *bytes.Buffer
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	set, err := source.Parse(`[{"name":"stripe","kind":"stripe","options":{"accounts":"any"}}]`, "wi/")
	if err != nil {
		tb.Fatal(err)
	}
	f := &fixture{store: &memStore{events: map[string]inbox.Event{}}, queue: &fakeQueue{}, logs: &bytes.Buffer{}}
	f.h, err = New(Config{
		Sources:          set,
		Secrets:          fakeSecrets{"wi/stripe": {[]byte(testSecret)}, "wi/stripe/acct_1": {[]byte("whsec_other")}},
		IsSecretNotFound: func(err error) bool { return errors.Is(err, errNoSecret) },
		Store:            f.store,
		Queue:            f.queue,
		MaxBodyBytes:     4096,
		Logger:           slog.New(slog.NewJSONHandler(f.logs, nil)),
		Metrics:          obs.Metrics{Namespace: "WebhookInbox", Now: func() time.Time { return testNow }},
		Now:              func() time.Time { return testNow },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

const invoiceBody = `{"id":"evt_1","object":"event","created":1764500000,"type":"invoice.paid","data":{"object":{"id":"in_1"}}}`

func signedRequest(body, secret string, at time.Time) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RawPath:        "/webhooks/stripe",
		PathParameters: map[string]string{"source": "stripe"},
		Headers: map[string]string{
			"content-type":     "application/json",
			"stripe-signature": signature.SignStripe([]byte(body), []byte(secret), at),
		},
		Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost},
		},
	}
}

func do(tb testing.TB, f *fixture, req events.APIGatewayV2HTTPRequest) (int, map[string]string) {
	tb.Helper()
	resp, err := f.h.HandleV2(context.Background(), req)
	if err != nil {
		tb.Fatalf("HandleV2 returned error %v; handlers answer with a status instead", err)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		tb.Fatalf("response body %q is not a JSON object: %v", resp.Body, err)
	}
	if got := resp.Headers["content-type"]; got != "application/json" {
		tb.Errorf("content-type: got %q, want application/json", got)
	}
	return resp.StatusCode, body
}

func TestNewThenDuplicate(t *testing.T) {
	f := newFixture(t)
	req := signedRequest(invoiceBody, testSecret, testNow)

	status, body := do(t, f, req)
	if status != http.StatusAccepted || body["status"] != "accepted" || body["event_id"] != "evt_1" {
		t.Fatalf("first delivery: got %d %v, want 202 accepted evt_1", status, body)
	}
	stored := f.store.events["stripe##evt_1"]
	if stored.Status != inbox.StatusReceived || stored.Type != "invoice.paid" || string(stored.Payload) != invoiceBody {
		t.Errorf("stored event: got %+v", stored)
	}
	// Retention counts from the end of processing: an unfinished event
	// does not expire.
	if !stored.ExpiresAt.IsZero() {
		t.Errorf("expires_at: got %v, want none", stored.ExpiresAt)
	}
	if !stored.Created.Equal(time.Unix(1764500000, 0)) {
		t.Errorf("created: got %v", stored.Created)
	}

	status, body = do(t, f, req)
	if status != http.StatusOK || body["status"] != "duplicate" || body["event_id"] != "evt_1" {
		t.Fatalf("second delivery: got %d %v, want 200 duplicate", status, body)
	}
	if len(f.store.events) != 1 {
		t.Errorf("stored events: got %d, want 1", len(f.store.events))
	}
	// Not processed yet, so the duplicate queues the event again (it may
	// never have been queued the first time).
	if len(f.queue.sent) != 2 {
		t.Errorf("enqueued: got %d, want 2", len(f.queue.sent))
	}
}

// TestDuplicateRequeuesOnlyUnfinished: a provider's retry queues the event
// again while it is unfinished (its first enqueue may have failed), never
// once it is processed, and never once it is dead: dead is final but for an
// operator's replay, so retries cannot start it over.
func TestDuplicateRequeuesOnlyUnfinished(t *testing.T) {
	for status, requeued := range map[inbox.Status]bool{
		inbox.StatusReceived: true, inbox.StatusProcessing: true, inbox.StatusFailed: true,
		inbox.StatusProcessed: false, inbox.StatusDead: false,
	} {
		t.Run(string(status), func(t *testing.T) {
			f := newFixture(t)
			f.store.events["stripe##evt_1"] = inbox.Event{Key: inbox.Key{Source: "stripe", EventID: "evt_1"}, Status: status}
			code, body := do(t, f, signedRequest(invoiceBody, testSecret, testNow))
			if code != http.StatusOK || body["status"] != "duplicate" {
				t.Fatalf("got %d %v, want 200 duplicate", code, body)
			}
			if got := len(f.queue.sent) == 1; got != requeued {
				t.Errorf("enqueued: got %d, want requeued %v", len(f.queue.sent), requeued)
			}
		})
	}
}

// TestEventTooLargeToStore: an item the store refuses as invalid (over
// DynamoDB's item size) is a 413, not a 503 the provider would retry.
func TestEventTooLargeToStore(t *testing.T) {
	f := newFixture(t)
	f.store.err = fmt.Errorf("insert: %w: ValidationException: Item size has exceeded the maximum allowed size", inbox.ErrInvalid)
	code, body := do(t, f, signedRequest(invoiceBody, testSecret, testNow))
	if code != http.StatusRequestEntityTooLarge || body["error"] != "event too large to store" {
		t.Errorf("got %d %v, want 413 event too large to store", code, body)
	}
	if len(f.queue.sent) != 0 {
		t.Errorf("enqueued %d", len(f.queue.sent))
	}
}

func TestStatuses(t *testing.T) {
	signed := signedRequest(invoiceBody, testSecret, testNow)
	tests := []struct {
		name       string
		edit       func(*events.APIGatewayV2HTTPRequest, *fixture)
		wantStatus int
		wantError  string
	}{
		{"unknown source", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			r.PathParameters = map[string]string{"source": "nope"}
		}, 404, "not found"},
		// An account with no secret, or no valid name, is answered as a
		// bad signature: nothing tells which accounts exist.
		{"account without secret", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.PathParameters["account"] = "acct_2" }, 401, "invalid signature"},
		{"invalid account", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.PathParameters["account"] = "../x" }, 401, "invalid signature"},
		{"account with its own secret rejects the source secret", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.PathParameters["account"] = "acct_1" }, 401, "invalid signature"},
		{"GET", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.RequestContext.HTTP.Method = "GET" }, 405, "method not allowed"},
		{"missing signature", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { delete(r.Headers, "stripe-signature") }, 401, "invalid signature"},
		{"t=abc", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.Headers["stripe-signature"] = "t=abc,v1=00" }, 401, "invalid signature"},
		{"expired", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest(invoiceBody, testSecret, testNow.Add(-6*time.Minute))
		}, 401, "invalid signature"},
		{"wrong secret", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest(invoiceBody, "whsec_wrong", testNow)
		}, 401, "invalid signature"},
		{"body changed after signing", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			r.Body = strings.Replace(r.Body, "in_1", "in_2", 1)
		}, 401, "invalid signature"},
		{"too large", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.Body = strings.Repeat("x", 5000) }, 413, "body too large"},
		{"bad base64", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.IsBase64Encoded = true; r.Body = "%%%" }, 400, "invalid body encoding"},
		{"signed but not JSON", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest("not json", testSecret, testNow)
		}, 400, "malformed event: missing or invalid id, type or created"},
		{"signed but no id", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest(`{"type":"invoice.paid"}`, testSecret, testNow)
		}, 400, "malformed event: missing or invalid id, type or created"},
		{"signed empty object", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest(`{}`, testSecret, testNow)
		}, 400, "malformed event: missing or invalid id, type or created"},
		{"store down", func(_ *events.APIGatewayV2HTTPRequest, f *fixture) { f.store.err = inbox.ErrUnavailable }, 503, "temporarily unavailable"},
		{"queue down", func(_ *events.APIGatewayV2HTTPRequest, f *fixture) { f.queue.err = inbox.ErrUnavailable }, 503, "temporarily unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := signed
			req.PathParameters = map[string]string{"source": "stripe"}
			req.Headers = map[string]string{}
			for k, v := range signed.Headers {
				req.Headers[k] = v
			}
			tt.edit(&req, f)
			status, body := do(t, f, req)
			if status != tt.wantStatus || body["error"] != tt.wantError {
				t.Errorf("got %d %v, want %d %q", status, body, tt.wantStatus, tt.wantError)
			}
			if tt.wantStatus < 500 && len(f.store.events) != 0 {
				t.Errorf("a refused request stored %d events", len(f.store.events))
			}
		})
	}
}

func TestBase64Body(t *testing.T) {
	f := newFixture(t)
	req := signedRequest(invoiceBody, testSecret, testNow)
	req.IsBase64Encoded = true
	req.Body = base64.StdEncoding.EncodeToString([]byte(invoiceBody))
	if status, body := do(t, f, req); status != http.StatusAccepted {
		t.Fatalf("got %d %v, want 202: the signature covers the decoded bytes", status, body)
	}
}

// TestQueueFailureThenRetry covers the gap between "stored" and "queued":
// the enqueue fails, the provider retries, and the retry queues the event.
func TestQueueFailureThenRetry(t *testing.T) {
	f := newFixture(t)
	req := signedRequest(invoiceBody, testSecret, testNow)
	f.queue.err = inbox.ErrUnavailable
	if status, _ := do(t, f, req); status != http.StatusServiceUnavailable {
		t.Fatalf("got %d, want 503", status)
	}
	f.queue.err = nil
	if status, _ := do(t, f, req); status != http.StatusOK {
		t.Fatalf("retry: got %d, want 200", status)
	}
	if len(f.queue.sent) != 1 || f.queue.sent[0].EventID != "evt_1" {
		t.Errorf("enqueued: got %v, want [evt_1]", f.queue.sent)
	}
}

// TestInvalidSignatureCannotReserveID: a forged request carrying a real
// event id stores nothing, so the genuine delivery is still accepted.
func TestInvalidSignatureCannotReserveID(t *testing.T) {
	f := newFixture(t)
	if status, _ := do(t, f, signedRequest(invoiceBody, "whsec_attacker", testNow)); status != http.StatusUnauthorized {
		t.Fatalf("forged: got %d, want 401", status)
	}
	if status, _ := do(t, f, signedRequest(invoiceBody, testSecret, testNow)); status != http.StatusAccepted {
		t.Fatalf("genuine: got %d, want 202", status)
	}
}

// TestLogsCarryNoPayloadOrSecret captures the log lines of accepted and
// rejected requests and looks for the body, the secret and the signature.
func TestLogsCarryNoPayloadOrSecret(t *testing.T) {
	f := newFixture(t)
	req := signedRequest(invoiceBody, testSecret, testNow)
	do(t, f, req)
	do(t, f, req)
	do(t, f, signedRequest(invoiceBody, "whsec_wrong", testNow))
	logs := f.logs.String()
	for _, secret := range []string{testSecret, "in_1", "whsec_wrong", req.Headers["stripe-signature"], `"data"`} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d log lines, want one per request:\n%s", len(lines), logs)
	}
	for i, want := range []string{"accepted", "duplicate", "rejected"} {
		var line map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if line["outcome"] != want || line["source"] != "stripe" || line["duration_ms"] == nil {
			t.Errorf("line %d: got %v, want outcome %q with source and duration", i, line, want)
		}
	}
}

func TestNewRejectsIncompleteConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("got nil error for an empty config")
	}
}

// fakeScheme is a scheme with every optional behaviour, driven by fields.
type fakeScheme struct {
	verify    func(signature.Request) error
	handshake func(signature.Request) (signature.Reply, bool, error)
	split     func(signature.Request) ([]signature.Identity, error)
	subscribe func(signature.Request, [][]byte) (signature.Reply, error)
	ping      func(signature.Request) (signature.Reply, bool)
}

func (f *fakeScheme) Ping(r signature.Request) (signature.Reply, bool) {
	if f.ping == nil {
		return signature.Reply{}, false
	}
	return f.ping(r)
}

func (f *fakeScheme) Verify(r signature.Request, _ [][]byte, _ time.Time) error { return f.verify(r) }
func (f *fakeScheme) Identify(signature.Request) (signature.Identity, error) {
	return signature.Identity{}, errors.New("Identify must not be called for a Splitter")
}
func (f *fakeScheme) Handshake(r signature.Request, _ [][]byte) (signature.Reply, bool, error) {
	return f.handshake(r)
}
func (f *fakeScheme) Split(r signature.Request) ([]signature.Identity, error) { return f.split(r) }
func (f *fakeScheme) Subscribe(r signature.Request, tokens [][]byte) (signature.Reply, error) {
	return f.subscribe(r, tokens)
}

func newFakeFixture(tb testing.TB, fs *fakeScheme) *fixture {
	tb.Helper()
	f := newFixture(tb)
	set, err := source.NewSet("wi/", &source.Source{Name: "fake", Kind: "fake", Scheme: fs, Accounts: source.AnyAccount})
	if err != nil {
		tb.Fatal(err)
	}
	f.h.cfg.Sources = set
	f.h.cfg.Secrets = fakeSecrets{"wi/fake": {[]byte("k")}, "wi/fake/shop.example": {[]byte("k")}}
	return f
}

func fakeRequest(method, body string, params map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/fake", PathParameters: params, Body: body, RawQueryString: "hub.challenge=c",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method}},
	}
}

func TestHandshakeOnlyAfterVerification(t *testing.T) {
	handshakes := 0
	fs := &fakeScheme{
		verify: func(r signature.Request) error {
			if string(r.Body) == "forged" {
				return signature.ErrNoMatch
			}
			return nil
		},
		handshake: func(signature.Request) (signature.Reply, bool, error) {
			handshakes++
			return signature.Reply{Status: 200, ContentType: "text/plain", Body: []byte("challenge-answer")}, true, nil
		},
	}
	f := newFakeFixture(t, fs)
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", "forged", map[string]string{"source": "fake"}))
	if resp.StatusCode != 401 || handshakes != 0 {
		t.Fatalf("forged handshake: got %d after %d handshakes, want 401 and none", resp.StatusCode, handshakes)
	}
	resp, _ = f.h.HandleV2(context.Background(), fakeRequest("POST", "signed", map[string]string{"source": "fake"}))
	if resp.StatusCode != 200 || resp.Body != "challenge-answer" || resp.Headers["content-type"] != "text/plain" {
		t.Fatalf("handshake: got %d %q %v", resp.StatusCode, resp.Body, resp.Headers)
	}
	if len(f.store.events) != 0 || len(f.queue.sent) != 0 {
		t.Errorf("a handshake stored %d events and queued %d", len(f.store.events), len(f.queue.sent))
	}
}

// ackScheme is a fake scheme whose provider wants "[accepted]".
type ackScheme struct{ *fakeScheme }

func (ackScheme) Ack() signature.Reply {
	return signature.Reply{ContentType: "text/plain", Body: []byte("[accepted]")}
}

// TestAcknowledger: a scheme's own answer replaces ingest's JSON for a
// delivery stored (202) or found stored (200), with ingest's status; a
// refusal is still ingest's.
func TestAcknowledger(t *testing.T) {
	fs := &fakeScheme{
		verify: func(r signature.Request) error {
			return map[bool]error{true: nil, false: signature.ErrNoMatch}[string(r.Body) != "forged"]
		},
		handshake: func(signature.Request) (signature.Reply, bool, error) { return signature.Reply{}, false, nil },
		split: func(signature.Request) ([]signature.Identity, error) {
			return []signature.Identity{{ID: "e1", Type: "t"}}, nil
		},
	}
	f := newFakeFixture(t, fs)
	set, err := source.NewSet("wi/", &source.Source{Name: "fake", Kind: "fake", Scheme: ackScheme{fs}, Accounts: source.AnyAccount})
	if err != nil {
		t.Fatal(err)
	}
	f.h.cfg.Sources = set
	for i, want := range []int{202, 200} {
		resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", `{"n":1}`, map[string]string{"source": "fake"}))
		if resp.StatusCode != want || resp.Body != "[accepted]" || resp.Headers["content-type"] != "text/plain" {
			t.Errorf("delivery %d: got %d %q %v, want %d [accepted]", i, resp.StatusCode, resp.Body, resp.Headers, want)
		}
	}
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", "forged", map[string]string{"source": "fake"}))
	if resp.StatusCode != 401 || resp.Body == "[accepted]" {
		t.Errorf("a forgery: got %d %q, want ingest's 401", resp.StatusCode, resp.Body)
	}
}

// TestPingBeforeVerify: a scheme's unsigned ping is answered before the
// signature is checked, stores and queues nothing, and a request that is
// not the ping still needs its signature.
func TestPingBeforeVerify(t *testing.T) {
	verified := 0
	fs := &fakeScheme{
		verify: func(signature.Request) error { verified++; return signature.ErrNotSigned },
		ping: func(r signature.Request) (signature.Reply, bool) {
			return signature.Reply{Status: 200}, string(r.Body) == "webhook_id=7"
		},
	}
	f := newFakeFixture(t, fs)
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", "webhook_id=7", map[string]string{"source": "fake"}))
	if resp.StatusCode != 200 || resp.Body != "" || verified != 0 {
		t.Fatalf("ping: got %d %q after %d verifications, want 200, no body, none", resp.StatusCode, resp.Body, verified)
	}
	resp, _ = f.h.HandleV2(context.Background(), fakeRequest("POST", "webhook_id=7&x=1", map[string]string{"source": "fake"}))
	if resp.StatusCode != 401 || verified != 1 {
		t.Errorf("not the ping: got %d after %d verifications, want 401 after one", resp.StatusCode, verified)
	}
	if len(f.store.events) != 0 || len(f.queue.sent) != 0 {
		t.Errorf("stored %d events and queued %d", len(f.store.events), len(f.queue.sent))
	}
	// An unknown source is still 404, ping or not.
	if resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", "webhook_id=7", map[string]string{"source": "other"})); resp.StatusCode != 404 {
		t.Errorf("ping to an unknown source: got %d, want 404", resp.StatusCode)
	}
}

func TestSubscribeGET(t *testing.T) {
	fs := &fakeScheme{subscribe: func(r signature.Request, tokens [][]byte) (signature.Reply, error) {
		if r.RawQuery != "hub.challenge=c" {
			return signature.Reply{}, signature.ErrNoMatch
		}
		return signature.Reply{Status: 200, ContentType: "text/plain", Body: []byte("c")}, nil
	}}
	f := newFakeFixture(t, fs)
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("GET", "", map[string]string{"source": "fake"}))
	if resp.StatusCode != 200 || resp.Body != "c" {
		t.Fatalf("subscribe: got %d %q, want 200 c", resp.StatusCode, resp.Body)
	}
	req := fakeRequest("GET", "", map[string]string{"source": "fake"})
	req.RawQueryString = "hub.challenge=other"
	if resp, _ = f.h.HandleV2(context.Background(), req); resp.StatusCode != 401 {
		t.Errorf("wrong token: got %d, want 401", resp.StatusCode)
	}
	// Schemes without a subscription handshake refuse GET.
	g := newFixture(t)
	get := signedRequest(invoiceBody, testSecret, testNow)
	get.RequestContext.HTTP.Method = "GET"
	if status, _ := do(t, g, get); status != 405 {
		t.Errorf("GET on stripe: got %d, want 405", status)
	}
}

func TestSplitDelivery(t *testing.T) {
	fs := &fakeScheme{
		verify:    func(signature.Request) error { return nil },
		handshake: func(signature.Request) (signature.Reply, bool, error) { return signature.Reply{}, false, nil },
		split: func(signature.Request) ([]signature.Identity, error) {
			return []signature.Identity{
				{ID: "e1", Type: "delivered", Payload: []byte(`{"n":1}`), Attributes: map[string]string{"attempt": "2"}},
				{ID: "e2", Type: "open", Payload: []byte(`{"n":2}`)},
			}, nil
		},
	}
	f := newFakeFixture(t, fs)
	req := fakeRequest("POST", `[{"n":1},{"n":2}]`, map[string]string{"source": "fake"})
	resp, _ := f.h.HandleV2(context.Background(), req)
	if resp.StatusCode != 202 || !strings.Contains(resp.Body, `"event_ids":["e1","e2"]`) {
		t.Fatalf("got %d %s, want 202 listing both events", resp.StatusCode, resp.Body)
	}
	e1 := f.store.events["fake##e1"]
	if string(e1.Payload) != `{"n":1}` || e1.Attributes["attempt"] != "2" || e1.Type != "delivered" {
		t.Errorf("event e1: got %+v", e1)
	}
	if len(f.queue.sent) != 2 {
		t.Errorf("queued %d, want 2", len(f.queue.sent))
	}
	// The retry of the whole delivery is a duplicate.
	resp, _ = f.h.HandleV2(context.Background(), req)
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"duplicate"`) {
		t.Errorf("retry: got %d %s, want 200 duplicate", resp.StatusCode, resp.Body)
	}
}

// TestSplitDeliveryWithABadIDStoresNothing: every event's key is checked
// before the first is stored, so a 400 for one leaves none behind.
func TestSplitDeliveryWithABadIDStoresNothing(t *testing.T) {
	fs := &fakeScheme{
		verify:    func(signature.Request) error { return nil },
		handshake: func(signature.Request) (signature.Reply, bool, error) { return signature.Reply{}, false, nil },
		split: func(signature.Request) ([]signature.Identity, error) {
			return []signature.Identity{{ID: "e1", Type: "delivered"}, {ID: "e2\x00", Type: "open"}}, nil
		},
	}
	f := newFakeFixture(t, fs)
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", `[{"n":1},{"n":2}]`, map[string]string{"source": "fake"}))
	if resp.StatusCode != 400 {
		t.Fatalf("got %d %s, want 400", resp.StatusCode, resp.Body)
	}
	if len(f.store.events) != 0 || len(f.queue.sent) != 0 {
		t.Errorf("stored %d and queued %d, want nothing", len(f.store.events), len(f.queue.sent))
	}
}

func TestAccountFromDelivery(t *testing.T) {
	fs := &fakeScheme{
		verify:    func(signature.Request) error { return nil },
		handshake: func(signature.Request) (signature.Reply, bool, error) { return signature.Reply{}, false, nil },
		split: func(signature.Request) ([]signature.Identity, error) {
			return []signature.Identity{{ID: "e1", Type: "t", Account: "shop.example"}}, nil
		},
	}
	f := newFakeFixture(t, fs)
	resp, _ := f.h.HandleV2(context.Background(), fakeRequest("POST", "{}", map[string]string{"source": "fake"}))
	if resp.StatusCode != 202 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if _, ok := f.store.events["fake#shop.example#e1"]; !ok {
		t.Errorf("stored keys: got %v, want fake#shop.example#e1", f.store.events)
	}
	// A delivery naming another account than its per-account endpoint is refused.
	fs.split = func(signature.Request) ([]signature.Identity, error) {
		return []signature.Identity{{ID: "e2", Type: "t", Account: "other.example"}}, nil
	}
	resp, _ = f.h.HandleV2(context.Background(), fakeRequest("POST", "{}", map[string]string{"source": "fake", "account": "shop.example"}))
	if resp.StatusCode != 400 {
		t.Errorf("mismatched account: got %d, want 400", resp.StatusCode)
	}
}

func TestHandleV1(t *testing.T) {
	f := newFixture(t)
	v2 := signedRequest(invoiceBody, testSecret, testNow)
	req := events.APIGatewayProxyRequest{
		HTTPMethod:        "POST",
		Path:              "/webhooks/stripe",
		PathParameters:    map[string]string{"source": "stripe"},
		MultiValueHeaders: map[string][]string{"Stripe-Signature": {v2.Headers["stripe-signature"]}},
		Body:              base64.StdEncoding.EncodeToString([]byte(invoiceBody)),
		IsBase64Encoded:   true,
	}
	resp, err := f.h.HandleV1(context.Background(), req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("got %d %s %v, want 202", resp.StatusCode, resp.Body, err)
	}
	// A repeated signature header is refused, not guessed at.
	req.MultiValueHeaders["Stripe-Signature"] = append(req.MultiValueHeaders["Stripe-Signature"], "t=1,v1=00")
	if resp, _ = f.h.HandleV1(context.Background(), req); resp.StatusCode != 401 {
		t.Errorf("two signature headers: got %d, want 401", resp.StatusCode)
	}
}

// TestEventIDAlphabet: a signed delivery whose event id holds a control
// character (JSON-escaped in the body, so the signature covers it) is
// refused with 400 before anything is stored or queued; the provider's
// retries cannot fix it, and the key would otherwise reach the table, the
// queue and every log line about it.
func TestEventIDAlphabet(t *testing.T) {
	tests := []struct {
		name string
		id   string // as written in the JSON body
	}{
		{"NUL", `evt_1\u0000`},
		{"NUL inside", `evt\u0000_1`},
		{"newline", `evt_1\n`},
		{"tab", `evt\t1`},
		{"DEL", `evt_1\u007f`},
		{"C1 NEL U+0085", `evt_1\u0085`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			body := strings.Replace(invoiceBody, `"id":"evt_1"`, `"id":"`+tt.id+`"`, 1)
			status, resp := do(t, f, signedRequest(body, testSecret, testNow))
			if status != http.StatusBadRequest || resp["error"] != "malformed event id" {
				t.Errorf("got %d %v, want 400 malformed event id", status, resp)
			}
			if len(f.store.events) != 0 || len(f.queue.sent) != 0 {
				t.Errorf("stored %d events and queued %d, want none", len(f.store.events), len(f.queue.sent))
			}
			var line map[string]any
			if err := json.Unmarshal(f.logs.Bytes(), &line); err != nil {
				t.Fatalf("log line is not JSON: %v: %s", err, f.logs.Bytes())
			}
			if line["outcome"] != "invalid" || line["status"] != float64(400) || line["event_key"] != "" {
				t.Errorf("log line: got %v, want outcome invalid, status 400 and no event key", line)
			}
		})
	}
	// Printable non-ASCII ids are the provider's to choose and pass.
	f := newFixture(t)
	body := strings.Replace(invoiceBody, `"id":"evt_1"`, `"id":"evt_évènement_\u2028_日本"`, 1)
	if status, resp := do(t, f, signedRequest(body, testSecret, testNow)); status != http.StatusAccepted {
		t.Errorf("non-ASCII id: got %d %v, want 202", status, resp)
	}
}

// TestLogsClipClientStrings: the path segments are logged whatever they
// are, so a 100,000-byte one must not make a 100 KB log line; the line
// keeps a prefix and the count of bytes left out.
func TestLogsClipClientStrings(t *testing.T) {
	long := strings.Repeat("a", 100000)
	tests := []struct {
		name       string
		params     map[string]string
		status     int
		field      string // the clipped attribute
		wantPrefix string
	}{
		{"account", map[string]string{"source": "stripe", "account": long}, http.StatusUnauthorized, "account", strings.Repeat("a", obs.ClipBytes) + "…(+99744 bytes)"},
		{"source", map[string]string{"source": long}, http.StatusNotFound, "source", strings.Repeat("a", obs.ClipBytes) + "…(+99744 bytes)"},
		// 3-byte runes: the cut backs off to a rune boundary, 255 bytes in.
		{"account of multi-byte runes", map[string]string{"source": "stripe", "account": strings.Repeat("日", 40000)}, http.StatusUnauthorized, "account", strings.Repeat("日", 85) + "…(+119745 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := signedRequest(invoiceBody, testSecret, testNow)
			req.PathParameters = tt.params
			if status, _ := do(t, f, req); status != tt.status {
				t.Fatalf("got %d, want %d", status, tt.status)
			}
			if n := f.logs.Len(); n > 2048 {
				t.Errorf("log line is %d bytes, want at most 2048", n)
			}
			var line map[string]any
			if err := json.Unmarshal(f.logs.Bytes(), &line); err != nil {
				t.Fatalf("log line is not JSON: %v", err)
			}
			if got := line[tt.field]; got != tt.wantPrefix {
				t.Errorf("%s: got %.300q, want %.300q", tt.field, got, tt.wantPrefix)
			}
			if e, _ := line["error"].(string); !strings.Contains(e, "…(+") || len(e) > 1100 {
				t.Errorf("error: got %d bytes %.200q, want it clipped", len(e), e)
			}
		})
	}
}

// TestMetricsByOutcome: each request's line is valid EMF counting one
// webhook by Source and Outcome, and by Outcome; a source that is not
// configured counts as "unknown", whatever the path said.
func TestMetricsByOutcome(t *testing.T) {
	signed := signedRequest(invoiceBody, testSecret, testNow)
	for _, tt := range []struct {
		name, source, outcome string
		edit                  func(*events.APIGatewayV2HTTPRequest, *fixture)
	}{
		{"accepted", "stripe", "accepted", func(*events.APIGatewayV2HTTPRequest, *fixture) {}},
		{"duplicate", "stripe", "duplicate", func(r *events.APIGatewayV2HTTPRequest, f *fixture) { do(t, f, *r); f.logs.Reset() }},
		{"signature", "stripe", "rejected", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest(invoiceBody, "whsec_wrong", testNow)
		}},
		{"malformed", "stripe", "invalid", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			*r = signedRequest("not json", testSecret, testNow)
		}},
		{"too large", "stripe", "too_large", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) { r.Body = strings.Repeat("x", 5000) }},
		{"unknown source", "unknown", "unknown_source", func(r *events.APIGatewayV2HTTPRequest, _ *fixture) {
			r.PathParameters = map[string]string{"source": "attacker-chosen-name"}
		}},
		{"unavailable", "stripe", "unavailable", func(_ *events.APIGatewayV2HTTPRequest, f *fixture) { f.store.err = inbox.ErrUnavailable }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			req := signed
			tt.edit(&req, f)
			do(t, f, req)
			lines, err := emftest.Lines(f.logs.Bytes())
			if err != nil || len(lines) != 1 {
				t.Fatalf("got %d lines, %v\n%s", len(lines), err, f.logs)
			}
			l := lines[0]
			if l.Msg != "webhook" || !l.HasSets([]string{"Source", "Outcome"}, []string{"Outcome"}, []string{}) || l.Values["Source"] != tt.source ||
				l.Values["Outcome"] != tt.outcome || l.Metrics["Webhooks"] != 1 || l.Units["Webhooks"] != "Count" {
				t.Errorf("got %+v, want one webhook of %s/%s", l, tt.source, tt.outcome)
			}
		})
	}
}

// unavailablePrevious is a secrets store whose previous versions cannot be
// read.
type unavailablePrevious struct{ fakeSecrets }

func (unavailablePrevious) Previous(context.Context, string) (source.Keys, error) {
	return source.Keys{}, fmt.Errorf("get previous: %w", inbox.ErrUnavailable)
}

// TestPreviousSecret: a signature the current secret refuses is checked
// against the previous version while a rotation window lasts; with none it
// is refused, and with Secrets Manager down it is a 503 the provider
// retries, never a 401 it might give up on.
func TestPreviousSecret(t *testing.T) {
	signed := signedRequest(invoiceBody, "whsec_previous", testNow)
	f := newFixture(t)
	if status, body := do(t, f, signed); status != http.StatusUnauthorized {
		t.Fatalf("no previous version: got %d %v, want 401", status, body)
	}
	f = newFixture(t)
	f.h.cfg.Secrets = fakeSecrets{"wi/stripe": {[]byte(testSecret)}, "wi/stripe@previous": {[]byte("whsec_previous")}}
	if status, body := do(t, f, signed); status != http.StatusAccepted {
		t.Fatalf("signed with the previous version: got %d %v, want 202", status, body)
	}
	f = newFixture(t)
	f.h.cfg.Secrets = unavailablePrevious{fakeSecrets{"wi/stripe": {[]byte(testSecret)}}}
	if status, body := do(t, f, signed); status != http.StatusServiceUnavailable || len(f.store.events) != 0 {
		t.Fatalf("previous unreadable: got %d %v, want 503 and nothing stored", status, body)
	}
}

// TestKeptHeaders: the event keeps its scheme's delivery headers and
// User-Agent, and the request id; credentials never.
func TestKeptHeaders(t *testing.T) {
	f := newFixture(t)
	req := signedRequest(invoiceBody, testSecret, testNow)
	req.Headers["user-agent"] = "Stripe/1.0 (+https://stripe.com/docs/webhooks)"
	req.Headers["authorization"] = "Bearer sk_live_never_stored"
	req.Headers["cookie"] = "session=never_stored_either"
	req.Headers["x-unrelated"] = "not kept"
	req.RequestContext.RequestID = "Sx1mPhLvIAMEVKQ="
	if status, body := do(t, f, req); status != http.StatusAccepted {
		t.Fatalf("got %d %v", status, body)
	}
	ev := f.store.events["stripe##evt_1"]
	want := map[string]string{"Stripe-Signature": req.Headers["stripe-signature"], "User-Agent": req.Headers["user-agent"]}
	if fmt.Sprint(ev.Headers) != fmt.Sprint(want) || ev.RequestID != "Sx1mPhLvIAMEVKQ=" {
		t.Errorf("kept %v, request id %q; want %v and the request id", ev.Headers, ev.RequestID, want)
	}
}

// TestEverySchemeKeepsHeaders: every scheme says which headers it keeps,
// and none of them is a credential.
func TestEverySchemeKeepsHeaders(t *testing.T) {
	for _, kind := range signature.Kinds() {
		s, err := signature.New(kind, signature.Options{})
		if err != nil {
			continue // configured by options only (hmac): its own test below
		}
		k, ok := s.(signature.HeaderKeeper)
		if !ok || len(k.KeptHeaders()) == 0 {
			t.Errorf("%s: keeps no headers", kind)
			continue
		}
		for _, h := range k.KeptHeaders() {
			if neverKept[http.CanonicalHeaderKey(h)] {
				t.Errorf("%s keeps %s, a credential", kind, h)
			}
		}
	}
	// Even a scheme that names a credential header does not get it kept.
	h := http.Header{"Authorization": {"HMAC abc"}, "X-Gitlab-Token": {"t"}, "User-Agent": {"x"}}
	if got := keptHeaders(credentialScheme{}, h); fmt.Sprint(got) != "map[User-Agent:x]" {
		t.Errorf("kept %v", got)
	}
}

type credentialScheme struct{ signature.Scheme }

func (credentialScheme) KeptHeaders() []string { return []string{"Authorization", "X-Gitlab-Token"} }

// TestPerTenantSource: on a per-tenant source the account a delivery names
// chooses the secret, and only that secret's verification makes the event
// that account's; a delivery naming another tenant's account with this
// tenant's signature is refused and stores nothing.
func TestPerTenantSource(t *testing.T) {
	newTenantFixture := func(t *testing.T) *fixture {
		f := newFixture(t)
		set, err := source.Parse(`[{"name":"stripe","kind":"stripe","options":{"account_from":"payload","accounts":"any"}}]`, "wi/")
		if err != nil {
			t.Fatal(err)
		}
		f.h.cfg.Sources = set
		f.h.cfg.Secrets = fakeSecrets{"wi/stripe": {[]byte(testSecret)}, "wi/stripe/acct_A": {[]byte("whsec_A")}, "wi/stripe/acct_B": {[]byte("whsec_B")}}
		return f
	}
	body := func(id, account string) string {
		return fmt.Sprintf(`{"id":%q,"object":"event","account":%q,"created":1764500000,"type":"invoice.paid","data":{"object":{}}}`, id, account)
	}
	f := newTenantFixture(t)
	if status, resp := do(t, f, signedRequest(body("evt_a", "acct_A"), "whsec_A", testNow)); status != http.StatusAccepted {
		t.Fatalf("tenant A signed by A: got %d %v", status, resp)
	}
	if _, ok := f.store.events["stripe#acct_A#evt_a"]; !ok {
		t.Errorf("stored %v, want stripe#acct_A#evt_a", f.store.events)
	}
	f = newTenantFixture(t)
	if status, resp := do(t, f, signedRequest(body("evt_b", "acct_B"), "whsec_A", testNow)); status != http.StatusUnauthorized || len(f.store.events) != 0 {
		t.Errorf("naming tenant B, signed by A: got %d %v, stored %d; want 401 and nothing", status, resp, len(f.store.events))
	}
	f = newTenantFixture(t)
	if status, resp := do(t, f, signedRequest(body("evt_c", "acct_unknown"), "whsec_A", testNow)); status != http.StatusUnauthorized || resp["error"] != "invalid signature" || len(f.store.events) != 0 {
		t.Errorf("an unknown tenant: got %d %v; want 401 as for a bad signature, and nothing", status, resp)
	}
	// On a path with an account, the delivery may not name another.
	f = newTenantFixture(t)
	onPath := signedRequest(body("evt_e", "acct_B"), "whsec_A", testNow)
	onPath.PathParameters = map[string]string{"source": "stripe", "account": "acct_A"}
	if status, resp := do(t, f, onPath); status != http.StatusUnauthorized || resp["error"] != "invalid signature" || len(f.store.events) != 0 {
		t.Errorf("path acct_A, body acct_B: got %d %v, stored %d; want 401 as for a bad signature, and nothing", status, resp, len(f.store.events))
	}
	// No account named: the source's own secret.
	f = newTenantFixture(t)
	if status, resp := do(t, f, signedRequest(invoiceBody, testSecret, testNow)); status != http.StatusAccepted || f.store.events["stripe##evt_1"].Key.Account != "" {
		t.Errorf("no account: got %d %v", status, resp)
	}
	// A source that is not per-tenant ignores the account in the body.
	f = newFixture(t)
	if status, _ := do(t, f, signedRequest(body("evt_d", "acct_A"), testSecret, testNow)); status != http.StatusAccepted {
		t.Errorf("not per-tenant: got %d", status)
	}
	if _, ok := f.store.events["stripe##evt_d"]; !ok {
		t.Errorf("not per-tenant: stored %v", f.store.events)
	}
}

// tokenSecrets serves Meta verify tokens: the current version's, and the
// previous version's during a rotation window.
type tokenSecrets struct{ current, previous string }

func (s tokenSecrets) Get(context.Context, string) (source.Keys, error) {
	return source.Keys{Signing: [][]byte{[]byte("app-secret")}, VerifyTokens: [][]byte{[]byte(s.current)}}, nil
}

func (s tokenSecrets) Previous(context.Context, string) (source.Keys, error) {
	if s.previous == "" {
		return source.Keys{}, errNoSecret
	}
	return source.Keys{Signing: [][]byte{[]byte("old-app-secret")}, VerifyTokens: [][]byte{[]byte(s.previous)}}, nil
}

// TestSubscribeWithPreviousToken: Meta's subscription GET confirms with
// the previous version's verify token while a rotation window lasts (the
// app's dashboard may still hold the old one), and not after.
func TestSubscribeWithPreviousToken(t *testing.T) {
	set, err := source.Parse(`[{"name":"meta","kind":"meta"}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	req := fakeRequest("GET", "", map[string]string{"source": "meta"})
	req.RawPath = "/webhooks/meta"
	req.RawQueryString = "hub.mode=subscribe&hub.verify_token=old-token&hub.challenge=1158201444"
	for _, tc := range []struct {
		name     string
		secrets  tokenSecrets
		status   int
		response string
	}{
		{"current token only", tokenSecrets{current: "old-token"}, 200, "1158201444"},
		{"in the window", tokenSecrets{current: "new-token", previous: "old-token"}, 200, "1158201444"},
		{"after the window", tokenSecrets{current: "new-token"}, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.cfg.Sources, f.h.cfg.Secrets = set, tc.secrets
			resp, _ := f.h.HandleV2(context.Background(), req)
			if resp.StatusCode != tc.status || (tc.status == 200 && resp.Body != tc.response) {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, resp.Body, tc.status, tc.response)
			}
		})
	}
}

// hangingQueue never answers: each Enqueue waits for its context to end,
// and records the deadline it was given.
type hangingQueue struct {
	mu        sync.Mutex
	deadlines []time.Time
}

func (q *hangingQueue) Enqueue(ctx context.Context, _ inbox.Key) error {
	d, _ := ctx.Deadline()
	q.mu.Lock()
	q.deadlines = append(q.deadlines, d)
	q.mu.Unlock()
	<-ctx.Done()
	return fmt.Errorf("send: %w", ctx.Err())
}

// A queue that never answers gets ingest's own 503, with the event stored
// (the sweep queues it), before the invocation's deadline: every AWS call
// is bounded by the deadline less the answer's margin, so the platform's
// timeout never answers for ingest. Over the wire, the same through the
// real queue adapter and SDK against a server that never answers.
func TestAnswersBeforeTheDeadline(t *testing.T) {
	stop := make(chan struct{})
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer never.Close()
	defer close(stop)
	sqsClient := sqs.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(never.URL),
	})
	hanging := &hangingQueue{}
	for _, tt := range []struct {
		name  string
		queue Queue
	}{
		{"a queue that never answers", hanging},
		{"SQS over the wire that never answers", queue.New(sqsClient, never.URL+"/000000000000/q")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.h.cfg.Queue = tt.queue
			f.h.cfg.Now = time.Now
			req := signedRequest(invoiceBody, testSecret, time.Now())
			deadline := time.Now().Add(2 * time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			resp, err := f.h.HandleV2(ctx, req)
			if err != nil {
				t.Fatalf("HandleV2: %v", err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503 (%s)", resp.StatusCode, resp.Body)
			}
			if ctx.Err() != nil {
				t.Errorf("answered after the invocation's deadline")
			}
			if _, ok := f.store.events["stripe##evt_1"]; !ok {
				t.Errorf("event not stored; stored: %v", f.store.events)
			}
		})
	}
	if len(hanging.deadlines) != 1 {
		t.Fatalf("enqueue calls: %d, want 1", len(hanging.deadlines))
	}
}

func TestCallBound(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name     string
		left     time.Duration
		wantLeft time.Duration
	}{
		{"keeps the margin", 10 * time.Second, 10*time.Second - answerMargin},
		{"a short invocation keeps a quarter", time.Second, 750 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(context.Background(), now.Add(tt.left))
			defer cancel()
			bound, cancelBound := callBound(ctx)
			defer cancelBound()
			d, ok := bound.Deadline()
			if !ok {
				t.Fatal("no deadline")
			}
			// time.Until in callBound runs after now: the margin can only
			// come out smaller by that much, never larger.
			if got := d.Sub(now); got < tt.wantLeft || got > tt.wantLeft+50*time.Millisecond {
				t.Errorf("deadline %v after now, want %v", got, tt.wantLeft)
			}
		})
	}
	t.Run("no deadline", func(t *testing.T) {
		bound, cancel := callBound(context.Background())
		defer cancel()
		if _, ok := bound.Deadline(); ok {
			t.Error("a deadline was added")
		}
	})
}
