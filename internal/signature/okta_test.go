package signature

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	oktaSecret    = []byte("Bearer b2t0YS1ob29rLXNlY3JldC1KeDRRbThacjFXdDZLcDM=") // a base64 token, as a generator would make one
	oktaSecretOld = []byte("Bearer b2t0YS1ob29rLXNlY3JldC1vbGQtTnYyTGM3WHM1SGI5")
	oktaSecrets   = [][]byte{oktaSecret}
)

// oktaDelivery is shaped like the event hook example of Okta's
// documentation: two events in one delivery (values made up here).
const oktaDelivery = `{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Wl0g4","eventId":"b5a188b9-5ece-4636-b041-482ffda96311","data":{"events":[{"uuid":"4e5a4f9c-2b3d-11ef-9a2f-8b1d7c6e5f40","published":"2024-07-26T00:40:00.000Z","eventType":"user.session.start","version":"0","displayMessage":"User login to Okta","severity":"INFO","actor":{"id":"00u1qw1mqitPHM8AJ0g7","type":"User","alternateId":"ada@example.com"},"outcome":{"result":"SUCCESS"}},{"uuid":"5f6b5a0d-2b3d-11ef-9a2f-8b1d7c6e5f41","published":"2024-07-26T00:40:01.000Z","eventType":"user.lifecycle.create","version":"0","severity":"INFO"}]},"eventTime":"2024-07-26T00:40:02.000Z","contentType":"application/json"}`

func oktaRequest(body []byte, auth ...string) Request {
	return jsonPost(body, map[string][]string{OktaAuthorizationHeader: auth})
}

func TestOkta(t *testing.T) {
	k := mustNew(t, NewOkta, Options{})
	r := signed(t, k, oktaRequest([]byte(oktaDelivery)), oktaSecret, testNow)
	checkErr(t, k.Verify(r, oktaSecrets, testNow), nil)
	ids, err := k.Split(r)
	if err != nil || len(ids) != 2 {
		t.Fatalf("Split: %d events, %v", len(ids), err)
	}
	want := []Identity{
		{ID: "4e5a4f9c-2b3d-11ef-9a2f-8b1d7c6e5f40", Type: "user.session.start", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC)},
		{ID: "5f6b5a0d-2b3d-11ef-9a2f-8b1d7c6e5f41", Type: "user.lifecycle.create", Created: time.Date(2024, 7, 26, 0, 40, 1, 0, time.UTC)},
	}
	for i := range want {
		got := ids[i]
		if !json.Valid(got.Payload) || !strings.Contains(string(got.Payload), want[i].ID) {
			t.Errorf("event %d: payload %s", i, got.Payload)
		}
		got.Payload = nil
		checkIdentity(t, got, nil, want[i])
	}
	runOptionsCases(t, NewOkta, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/x"}, true},
	})
	for _, h := range k.KeptHeaders() {
		if strings.EqualFold(h, "Authorization") {
			t.Errorf("KeptHeaders %v: the secret value must never be kept", k.KeptHeaders())
		}
	}
}

// TestOktaVerification: the one-time GET is echoed as JSON for a word,
// refused otherwise.
func TestOktaVerification(t *testing.T) {
	k := mustNew(t, NewOkta, Options{})
	get := func(challenge ...string) Request {
		return Request{Method: http.MethodGet, Header: http.Header{OktaChallengeHeader: challenge}}
	}
	reply, err := k.Subscribe(get("Zx8-q_1"), nil)
	if err != nil || reply.Status != 200 || string(reply.Body) != `{"verification":"Zx8-q_1"}` || reply.ContentType != "application/json" {
		t.Errorf("Subscribe: got %+v, %v", reply, err)
	}
	for name, r := range map[string]Request{
		"missing":   get(),
		"empty":     get(""),
		"two":       get("a", "b"),
		"257 bytes": get(strings.Repeat("a", 257)),
		"quote":     get(`a"b`),
		"space":     get("a b"),
		"a POST":    {Method: http.MethodPost, Header: http.Header{OktaChallengeHeader: {"abc"}}},
	} {
		if _, err := k.Subscribe(r, nil); !errorsIsAny(err) {
			t.Errorf("%s: got %v, want a refusal", name, err)
		}
	}
}

func oktaMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(oktaDelivery)
	req := func(auth ...string) Request { return oktaRequest(body, auth...) }
	var cases []verifyCase
	for _, c := range []struct {
		name    string
		auth    []string
		secrets [][]byte
		want    error
	}{
		{"valid", []string{string(oktaSecret)}, nil, nil},
		{"two secrets, the old one sent", []string{string(oktaSecretOld)}, [][]byte{oktaSecret, oktaSecretOld}, nil},
		{"missing", nil, nil, ErrNotSigned},
		{"empty", []string{""}, nil, ErrNotSigned},
		{"two headers", []string{string(oktaSecret), string(oktaSecret)}, nil, ErrMalformedHeader},
		{"the scheme alone", []string{"Bearer"}, nil, ErrNoMatch},
		{"lowercase scheme", []string{strings.Replace(string(oktaSecret), "Bearer", "bearer", 1)}, nil, ErrNoMatch},
		{"without the scheme", []string{strings.TrimPrefix(string(oktaSecret), "Bearer ")}, nil, ErrNoMatch},
		{"a prefix", []string{string(oktaSecret[:len(oktaSecret)-1])}, nil, ErrNoMatch},
		{"and more", []string{string(oktaSecret) + "x"}, nil, ErrNoMatch},
		{"retired secret", []string{string(oktaSecretOld)}, nil, ErrNoMatch},
		{"no secrets", []string{string(oktaSecret)}, [][]byte{}, ErrNoSecret},
		{"only an empty secret", []string{"x"}, [][]byte{{}}, ErrNoSecret},
	} {
		cases = append(cases, verifyCase{c.name, req(c.auth...), orSecrets(c.secrets, oktaSecrets), c.want})
	}
	k := mustNew(tb, NewOkta, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       k,
		r:       signed(tb, k, oktaRequest(body), oktaSecret, testNow),
		secrets: oktaSecrets,
		sig:     signedField{header: OktaAuthorizationHeader, prefix: "Bearer "},
		enc:     encBase64,
		drop:    oktaUnsignedBody,
	})
	return []malformedRun{{k, cases}, {k, generic}}
}

// oktaUnsignedBody are the generic variants that change the body alone,
// which a secret header value rightly accepts.
var oktaUnsignedBody = map[string]string{
	"body: truncated by one byte": "Okta signs nothing: the header does not depend on the body",
	"body: one byte appended":     "Okta signs nothing: the header does not depend on the body",
	"body: first byte flipped":    "Okta signs nothing: the header does not depend on the body",
	"body: middle byte flipped":   "Okta signs nothing: the header does not depend on the body",
	"body: last byte flipped":     "Okta signs nothing: the header does not depend on the body",
	"body: emptied":               "Okta signs nothing: the header does not depend on the body",
	"body: doubled":               "Okta signs nothing: the header does not depend on the body",
}

func TestOktaVerifyMalformed(t *testing.T) { runMalformed(t, oktaMalformedRuns(t)) }

var oktaSplitCases = []struct {
	name string
	body string
	want int // 0: ErrInvalidPayload
}{
	{"one", `{"data":{"events":[{"uuid":"u1","eventType":"t"}]}}`, 1},
	{"empty", ``, 0},
	{"null", `null`, 0},
	{"no data", `{"events":[]}`, 0},
	{"no events", `{"data":{}}`, 0},
	{"events empty", `{"data":{"events":[]}}`, 0},
	{"an event without uuid", `{"data":{"events":[{"eventType":"t"}]}}`, 0},
	{"numeric uuid", `{"data":{"events":[{"uuid":1,"eventType":"t"}]}}`, 0},
	{"published not RFC 3339", `{"data":{"events":[{"uuid":"u1","eventType":"t","published":"yesterday"}]}}`, 0},
}

func TestOktaSplit(t *testing.T) {
	k := mustNew(t, NewOkta, Options{})
	for _, tc := range oktaSplitCases {
		ids, err := k.Split(oktaRequest([]byte(tc.body)))
		if (tc.want == 0) != (err != nil) || (err == nil && len(ids) != tc.want) {
			t.Errorf("%s: got %d events, %v; want %d", tc.name, len(ids), err, tc.want)
		}
	}
}

func FuzzOktaVerify(f *testing.F) {
	f.Add(string(oktaSecret))
	f.Add("Bearer x")
	k := mustNew(f, NewOkta, Options{})
	secrets := [][]byte{oktaSecret, oktaSecretOld}
	f.Fuzz(func(t *testing.T, auth string) {
		r := Request{Method: http.MethodPost, Header: http.Header{OktaAuthorizationHeader: fuzzHeaders(auth)}, Body: []byte(oktaDelivery)}
		if !fuzzVerify(t, k, r, secrets, testNow) {
			return
		}
		if auth != string(oktaSecret) && auth != string(oktaSecretOld) {
			t.Fatalf("Verify(%q): accepted a value that is no configured secret", auth)
		}
	})
}

func FuzzOktaSplit(f *testing.F) {
	f.Add([]byte(oktaDelivery))
	for _, tc := range oktaSplitCases {
		f.Add([]byte(tc.body))
	}
	k := mustNew(f, NewOkta, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, err := k.Split(oktaRequest(body))
		if err != nil {
			return
		}
		var doc struct {
			Data struct {
				Events []struct{ UUID, EventType string }
			}
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Data.Events) != len(ids) {
			t.Fatalf("Split(%q): %d events, encoding/json reads %d (%v)", body, len(ids), len(doc.Data.Events), err)
		}
		for i, id := range ids {
			if id.ID != doc.Data.Events[i].UUID || id.Type != doc.Data.Events[i].EventType {
				t.Fatalf("Split(%q): event %d %+v", body, i, id)
			}
		}
	})
}

func FuzzOktaVerification(f *testing.F) {
	f.Add("abc")
	f.Add(`a"b`)
	k := mustNew(f, NewOkta, Options{})
	f.Fuzz(func(t *testing.T, challenge string) {
		reply, err := k.Subscribe(Request{Method: http.MethodGet, Header: http.Header{OktaChallengeHeader: {challenge}}}, nil)
		if err != nil {
			return
		}
		var got struct{ Verification string }
		if json.Unmarshal(reply.Body, &got) != nil || got.Verification != challenge || strings.Trim(challenge, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			t.Fatalf("Subscribe(%q): %s", challenge, reply.Body)
		}
	})
}

// BenchmarkOkta compares the scheme with encoding/json.Valid over the
// body: there is no MAC, and reading the events is the least a delivery
// costs.
func BenchmarkOkta(b *testing.B) {
	body := []byte(oktaDelivery)
	r := oktaRequest(body, string(oktaSecret))
	benchScheme(b, mustNew(b, NewOkta, Options{}), r, oktaSecrets, testNow, "bare-json-valid", func(b *testing.B) {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	})
}
