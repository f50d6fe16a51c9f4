package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	linearSecret    = []byte("lin_wh_test_current_a1b2c3d4e5f6")
	linearSecretOld = []byte("lin_wh_test_previous_f6e5d4c3b2a1")
	linearSecrets   = [][]byte{linearSecret}

	// linearMs is testNow as a webhookTimestamp.
	linearMs = strconv.FormatInt(testNow.UnixMilli(), 10)
)

const linearDelivery = "234d1a4e-b617-4388-90fe-adc3633d6b72"

// linearBodies are Linear webhook bodies in the shapes of Linear's webhook
// guide (the project has no Linear corpus), each delivered at testNow.
var linearBodies = []struct {
	name, event string
	body        []byte
}{
	{"Issue create", "Issue", []byte(`{"action":"create","actor":{"id":"2e6eea91-1111-0000-9486-acea0603064d","type":"user","name":"Linear"},"createdAt":"2024-07-26T00:39:58.084Z","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","createdAt":"2024-07-26T00:39:58.084Z","updatedAt":"2024-07-26T00:39:58.084Z","number":1778,"title":"Foo bar","priority":0,"boardOrder":0,"sortOrder":-1779,"teamId":"72b2a2dc-6f4f-4423-9d34-24b5bd10634a","labelIds":[],"stateId":"2c65b5ef-dc91-4b38-9b7b-1a6f7c5b4a33","subscriberIds":["2e6eea91-1111-0000-9486-acea0603064d"]},"url":"https://linear.app/issue/LIN-1778/foo-bar","type":"Issue","organizationId":"78a5ad2c-5f0c-4b0b-8d3f-4a8e1b8d6f7e","webhookTimestamp":` + linearMs + `,"webhookId":"000042e3-d123-4980-b49f-8e140eef9329"}`)},
	{"Issue update", "Issue", []byte("{\n  \"action\": \"update\",\n  \"createdAt\": \"2024-07-26T00:39:59.5Z\",\n  \"data\": {\"id\": \"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9\", \"title\": \"Foo bar baz\", \"priority\": 2},\n  \"updatedFrom\": {\"title\": \"Foo bar\", \"priority\": 0, \"updatedAt\": \"2024-07-26T00:39:58.084Z\"},\n  \"url\": \"https://linear.app/issue/LIN-1778/foo-bar-baz\",\n  \"type\": \"Issue\",\n  \"organizationId\": \"78a5ad2c-5f0c-4b0b-8d3f-4a8e1b8d6f7e\",\n  \"webhookTimestamp\": " + linearMs + ",\n  \"webhookId\": \"000042e3-d123-4980-b49f-8e140eef9329\"\n}\n")},
	{"Comment create", "Comment", []byte(`{"action":"create","createdAt":"2024-07-26T00:39:59Z","data":{"id":"a1b2","body":"Looks good \u2014 ship it","issueId":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","userId":"2e6eea91-1111-0000-9486-acea0603064d"},"url":"https://linear.app/issue/LIN-1778#comment-a1b2","type":"Comment","organizationId":"78a5ad2c-5f0c-4b0b-8d3f-4a8e1b8d6f7e","webhookTimestamp":` + linearMs + `,"webhookId":"000042e3-d123-4980-b49f-8e140eef9329"}`)},
	{"IssueLabel remove", "IssueLabel", []byte(`{"action":"remove","createdAt":"2024-07-26T00:39:59.999Z","data":{"id":"l1","name":"Bug","color":"#eb5757"},"type":"IssueLabel","organizationId":"78a5ad2c-5f0c-4b0b-8d3f-4a8e1b8d6f7e","webhookTimestamp":` + linearMs + `}`)},
}

func mustNewLinear(tb testing.TB, o Options) *Linear {
	tb.Helper()
	return mustNew(tb, NewLinear, o)
}

// linearHex is the hex HMAC-SHA256 of body, computed independently of the
// code under test.
func linearHex(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// linearRequest carries one Linear-Signature per element of sigs, a
// delivery id and an event header (each only when non-empty).
func linearRequest(body []byte, delivery, event string, sigs ...string) Request {
	r := jsonPost(body, map[string][]string{LinearSignatureHeader: sigs})
	if delivery != "" {
		r.Header.Set(LinearDeliveryHeader, delivery)
	}
	if event != "" {
		r.Header.Set(LinearEventHeader, event)
	}
	return r
}

// linearBodyAt is a minimal body delivered at t.
func linearBodyAt(t time.Time) []byte {
	return []byte(`{"action":"create","type":"Issue","data":{"id":"x"},"webhookTimestamp":` + strconv.FormatInt(t.UnixMilli(), 10) + `}`)
}

// TestLinearVectors pins a signature computed outside Go (openssl dgst
// -sha256 -hmac); Linear ships no Go SDK.
func TestLinearVectors(t *testing.T) {
	s := mustNewLinear(t, Options{})
	secret := []byte("lin_wh_example")
	body := []byte(`{"action":"create","type":"Issue","webhookTimestamp":1721954400000}`)
	const sig = "34e6d48ab8228ff5db804123680bde71af51a073951448c29158fe3a13df9d93"

	r := Request{Body: body}
	if err := s.Sign(&r, secret, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get(LinearSignatureHeader); got != sig {
		t.Errorf("Sign: got %q, want %q (openssl)", got, sig)
	}
	checkVerifyErr(t, verifyNoPanic(t, s, linearRequest(body, linearDelivery, "", sig), [][]byte{secret}, testNow), nil)
	checkVerifyErr(t, verifyNoPanic(t, s, linearRequest(body, linearDelivery, "", sig), [][]byte{secret}, testNow.Add(61*time.Second)), ErrTooOld)
	if err := s.Sign(&r, nil, testNow); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Sign with no key: got %v, want %v", err, ErrNoSecret)
	}
}

func TestLinearBodies(t *testing.T) {
	s := mustNewLinear(t, Options{})
	for _, b := range linearBodies {
		t.Run(b.name, func(t *testing.T) {
			r := linearRequest(b.body, linearDelivery, b.event, linearHex(linearSecret, b.body))
			checkVerifyErr(t, verifyNoPanic(t, s, r, linearSecrets, testNow), nil)

			var m struct {
				Type, Action string
				CreatedAt    time.Time
			}
			if err := json.Unmarshal(b.body, &m); err != nil {
				t.Fatal(err)
			}
			got, err := identifyNoPanic(t, s, r)
			if err != nil {
				t.Fatalf("Identify: %v", err)
			}
			// The type is the signed body's; the header, unsigned, is
			// only kept.
			slackCheckIdentity(t, got, Identity{ID: linearDelivery, Type: m.Type, Created: m.CreatedAt, Attributes: map[string]string{"linear_event": b.event}})
			checkValidIdentity(t, got)

			r.Header.Del(LinearEventHeader)
			got, err = identifyNoPanic(t, s, r)
			if err != nil {
				t.Fatalf("Identify without %s: %v", LinearEventHeader, err)
			}
			slackCheckIdentity(t, got, Identity{ID: linearDelivery, Type: m.Type, Created: m.CreatedAt})

			// A captured delivery with another Linear-Event is the same
			// event type: the header chooses nothing.
			r.Header.Set(LinearEventHeader, "Project")
			if got, err = identifyNoPanic(t, s, r); err != nil || got.Type != m.Type {
				t.Errorf("with Linear-Event: Project: got %+v, %v; want type %q", got, err, m.Type)
			}

			checkFlipsRejected(t, b.name, s, r, linearSecrets, testNow)
		})
	}
}

// linearCase is one Linear input and the cause Verify must report.
type linearCase struct {
	name    string
	sigs    []string // nil: the body's correct signature
	body    []byte   // nil: the table's body
	secrets [][]byte // nil: linearSecrets
	want    error
}

func linearMalformedCases(body []byte) []linearCase {
	sig := linearHex(linearSecret, body)
	signed := func(name string, b []byte, want error) linearCase {
		return linearCase{name: name, body: b, want: want}
	}
	withSig := func(name, s string, want error) linearCase {
		return linearCase{name: name, sigs: []string{s}, want: want}
	}
	at := func(ms string) []byte {
		return []byte(`{"type":"Issue","action":"create","webhookTimestamp":` + ms + `}`)
	}
	return []linearCase{
		// Presence.
		{name: "signature missing", sigs: []string{}, want: ErrNotSigned},
		withSig("signature empty", "", ErrNotSigned),
		withSig("signature blank", " ", ErrNotSigned),
		{name: "two signatures", sigs: []string{sig, sig}, want: ErrMalformedHeader},

		// Signature.
		withSig("prefix sha256=", "sha256="+sig, ErrMalformedHeader),
		withSig("prefix v0=", "v0="+sig, ErrMalformedHeader),
		withSig("too short", sig[:62], ErrMalformedHeader),
		withSig("too long", sig+"00", ErrMalformedHeader),
		withSig("odd length", sig[:63], ErrMalformedHeader),
		withSig("non-hex", sig[:63]+"x", ErrMalformedHeader),
		withSig("fullwidth digit", sig[:61]+"０", ErrMalformedHeader),
		withSig("base64", slackHexToBase64(sig), ErrMalformedHeader),
		withSig("leading space", " "+sig, ErrMalformedHeader),
		withSig("trailing space", sig+" ", ErrMalformedHeader),
		withSig("uppercase hex is the same signature", strings.ToUpper(sig), nil),
		withSig("two joined by a comma", sig+","+sig, ErrMalformedHeader),
		withSig("wrong secret", linearHex([]byte("wrong"), body), ErrNoMatch),
		withSig("HMAC-SHA1 digits", hex.EncodeToString(macOf(linearMustHashFunc("sha1"), linearSecret, body)), ErrMalformedHeader),
		withSig("header 1 MiB", sig+strings.Repeat("0", 1<<20), ErrMalformedHeader),
		{name: "no secrets", secrets: [][]byte{}, want: ErrNoSecret},
		{name: "only an empty secret", sigs: []string{linearHex(nil, body)}, secrets: [][]byte{nil}, want: ErrNoSecret},

		// Body changed after signing.
		{name: "body truncated", sigs: []string{sig}, body: body[:len(body)-1], want: ErrNoMatch},
		{name: "body with a newline appended", sigs: []string{sig}, body: append(bytes.Clone(body), '\n'), want: ErrNoMatch},
		{name: "body empty", sigs: []string{sig}, body: []byte{}, want: ErrNoMatch},
		{name: "timestamp refreshed by an attacker", sigs: []string{sig}, body: bytes.Replace(body, []byte(linearMs), []byte(strconv.FormatInt(testNow.UnixMilli()+1, 10)), 1), want: ErrNoMatch},

		// The signed timestamp.
		signed("webhookTimestamp missing", []byte(`{"type":"Issue","action":"create"}`), ErrMalformedHeader),
		signed("webhookTimestamp null", at("null"), ErrMalformedHeader),
		signed("webhookTimestamp a string", at(`"`+linearMs+`"`), ErrMalformedHeader),
		signed("webhookTimestamp a float", at(linearMs+".5"), ErrMalformedHeader),
		signed("webhookTimestamp an exponent", at("1.7e12"), ErrMalformedHeader),
		signed("webhookTimestamp overflows int64", at("99999999999999999999"), ErrMalformedHeader),
		signed("webhookTimestamp only nested", []byte(`{"type":"Issue","data":{"webhookTimestamp":`+linearMs+`}}`), ErrMalformedHeader),
		signed("webhookTimestamp in seconds", at(testTS), ErrTooOld),
		signed("webhookTimestamp negative", at("-1"), ErrTooOld),
		signed("webhookTimestamp zero", at("0"), ErrTooOld),
		signed("webhookTimestamp 61 s old", at(strconv.FormatInt(testNow.UnixMilli()-61000, 10)), ErrTooOld),
		signed("webhookTimestamp 61 s ahead", at(strconv.FormatInt(testNow.UnixMilli()+61000, 10)), ErrTooNew),
		signed("webhookTimestamp in microseconds", at(linearMs+"000"), ErrTooNew),
		signed("webhookTimestamp max int64", at("9223372036854775807"), ErrTooNew),
		signed("webhookTimestamp min int64", at("-9223372036854775808"), ErrTooOld),
		signed("last duplicate webhookTimestamp wins", []byte(`{"webhookTimestamp":`+linearMs+`,"webhookTimestamp":0}`), ErrTooOld),
		signed("signed body not JSON", []byte(`webhookTimestamp=`+linearMs), ErrMalformedHeader),
		signed("signed body an array", []byte(`[{"webhookTimestamp":`+linearMs+`}]`), ErrMalformedHeader),
		signed("signed body truncated JSON", []byte(`{"webhookTimestamp":`+linearMs), ErrMalformedHeader),
		signed("signed body empty", []byte{}, ErrMalformedHeader),
	}
}

// linearMustHashFunc returns a hash constructor by configuration name.
func linearMustHashFunc(name string) func() hash.Hash {
	h, err := hashByName(name)
	if err != nil {
		panic(err)
	}
	return h
}

func linearMalformedRuns(tb testing.TB) []malformedRun {
	body := linearBodies[1].body
	var cases []verifyCase
	for _, tc := range linearMalformedCases(body) {
		b, sigs, secrets := linearCaseInputs(tc, body)
		cases = append(cases, verifyCase{tc.name, linearRequest(b, linearDelivery, "Issue", sigs...), secrets, tc.want})
	}
	// Linear signs no timestamp header: webhookTimestamp is in the body.
	l := mustNewLinear(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       l,
		r:       signed(tb, l, linearRequest(body, linearDelivery, "Issue"), linearSecret, testNow),
		secrets: linearSecrets,
		sig:     signedField{header: LinearSignatureHeader},
		enc:     encHex,
	})
	return []malformedRun{{l, cases}, {l, generic}}
}

func TestLinearVerifyMalformed(t *testing.T) { runMalformed(t, linearMalformedRuns(t)) }

// linearCaseInputs fills a case's defaults.
func linearCaseInputs(tc linearCase, body []byte) (b []byte, sigs []string, secrets [][]byte) {
	b, sigs, secrets = tc.body, tc.sigs, tc.secrets
	if b == nil {
		b = body
	}
	if sigs == nil {
		sigs = []string{linearHex(linearSecret, b)}
	}
	if secrets == nil {
		secrets = linearSecrets
	}
	return b, sigs, secrets
}

func TestLinearRotation(t *testing.T) {
	body := linearBodies[0].body
	both := [][]byte{linearSecret, linearSecretOld}
	req := func(signer []byte) Request {
		return linearRequest(body, linearDelivery, "Issue", linearHex(signer, body))
	}
	tests := []verifyCase{
		{"two secrets, signed by current", req(linearSecret), both, nil},
		{"two secrets, signed by previous", req(linearSecretOld), both, nil},
		{"retired secret no longer accepted", req(linearSecretOld), linearSecrets, ErrNoMatch},
		{"empty secret skipped", req(linearSecret), [][]byte{{}, linearSecret}, nil},
		{"no secrets", req(linearSecret), nil, ErrNoSecret},
	}
	s := mustNewLinear(t, Options{})
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestLinearTolerance(t *testing.T) {
	cases := append(slackToleranceCases(LinearDefaultTolerance),
		toleranceCase{"default is one minute, not five", 0, 2 * time.Minute, ErrTooOld},
		toleranceCase{"millisecond precision counts", 0, LinearDefaultTolerance + time.Millisecond, ErrTooOld},
		toleranceCase{"millisecond precision counts in the future", 0, -LinearDefaultTolerance - time.Millisecond, ErrTooNew},
		toleranceCase{"5m override", 5 * time.Minute, 4 * time.Minute, nil},
	)
	runToleranceCases(t, linearSecrets, cases, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		s := mustNewLinear(t, Options{Tolerance: tolerance})
		return s, signed(t, s, Request{Header: http.Header{LinearDeliveryHeader: {linearDelivery}}, Body: linearBodyAt(at)}, linearSecret, testNow)
	})
}

func TestNewLinear(t *testing.T) { runOptionsCases(t, NewLinear, slackOptionsCases) }

// linearIdentifyCases is shared with the fuzz test as seeds. A zero
// want.ID means ErrInvalidPayload.
var linearIdentifyCases = []struct {
	name, delivery, event, body string
	want                        Identity
}{
	{name: "delivery missing", event: "Issue", body: `{"type":"Issue","action":"create"}`},
	{name: "delivery 513 bytes", delivery: strings.Repeat("d", 513), event: "Issue", body: `{"type":"Issue"}`},
	{name: "delivery not UTF-8", delivery: "d\xff", event: "Issue", body: `{"type":"Issue"}`},
	{name: "body empty", delivery: "d1", event: "Issue", body: ``},
	{name: "body not JSON", delivery: "d1", event: "Issue", body: `type=Issue`},
	{name: "body an array", delivery: "d1", event: "Issue", body: `[{"type":"Issue"}]`},
	{name: "no event header, no type", delivery: "d1", body: `{"action":"create"}`},
	{name: "no event header, type empty", delivery: "d1", body: `{"type":"","action":"create"}`},
	{name: "no event header, type a number", delivery: "d1", body: `{"type":1,"action":"create"}`},
	{name: "an event header but no type in the body", delivery: "d1", event: "Issue", body: `{"action":"create"}`},
	{name: "type too long", delivery: "d1", body: `{"type":"` + strings.Repeat("T", 513) + `"}`},
	{name: "createdAt not RFC 3339", delivery: "d1", event: "Issue", body: `{"type":"Issue","createdAt":"yesterday"}`},
	{name: "createdAt a number", delivery: "d1", event: "Issue", body: `{"type":"Issue","createdAt":1721954399}`},

	{
		name: "the signed body's type wins", delivery: "d1", event: "Issue",
		body: `{"type":"Comment","action":"create","createdAt":"2024-07-26T00:39:58.084Z"}`,
		want: Identity{ID: "d1", Type: "Comment", Created: time.Date(2024, 7, 26, 0, 39, 58, 84_000_000, time.UTC), Attributes: map[string]string{"linear_event": "Issue"}},
	},
	{
		name: "event header not UTF-8: not kept", delivery: "d1", event: "Iss\xffue", body: `{"type":"Issue"}`,
		want: Identity{ID: "d1", Type: "Issue"},
	},
	{
		name: "type from the body", delivery: "d1",
		body: `{"type":"Issue","action":"update","createdAt":"2024-07-26T00:39:58Z"}`,
		want: Identity{ID: "d1", Type: "Issue", Created: time.Date(2024, 7, 26, 0, 39, 58, 0, time.UTC)},
	},
	{
		name: "type without action", delivery: "d1",
		body: `{"type":"Issue"}`,
		want: Identity{ID: "d1", Type: "Issue"},
	},
	{
		name: "created falls back to webhookTimestamp", delivery: "d1",
		body: `{"type":"Issue","action":"remove","webhookTimestamp":1721954400000}`,
		want: Identity{ID: "d1", Type: "Issue", Created: time.UnixMilli(1721954400000)},
	},
	{
		name: "createdAt null falls back too", delivery: "d1", event: "Issue",
		body: `{"type":"Issue","createdAt":null,"webhookTimestamp":1721954400000}`,
		want: Identity{ID: "d1", Type: "Issue", Created: time.UnixMilli(1721954400000), Attributes: map[string]string{"linear_event": "Issue"}},
	},
}

func TestLinearIdentify(t *testing.T) {
	s := mustNewLinear(t, Options{})
	for _, tt := range linearIdentifyCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, s, linearRequest([]byte(tt.body), tt.delivery, tt.event))
			checkIdentity(t, got, err, tt.want)
			if err == nil {
				checkValidIdentity(t, got)
			}
		})
	}
	t.Run("two delivery headers", func(t *testing.T) {
		r := linearRequest([]byte(`{"type":"Issue"}`), "d1", "Issue")
		r.Header.Add(LinearDeliveryHeader, "d2")
		_, err := identifyNoPanic(t, s, r)
		checkErr(t, err, ErrInvalidPayload)
	})
}

func FuzzLinearVerify(f *testing.F) {
	for _, b := range linearBodies {
		f.Add(sigCur, b.body)
	}
	f.Add(sigOld, linearBodies[0].body)
	body := linearBodies[1].body
	for _, tc := range linearMalformedCases(body) {
		b, sigs, _ := linearCaseInputs(tc, body)
		sig := strings.Join(sigs, "\n")
		if len(sig) > 8<<10 {
			continue
		}
		cur := linearHex(linearSecret, b)
		sig = strings.NewReplacer(cur, sigCur, strings.ToUpper(cur), sigUpper).Replace(sig)
		f.Add(sig, b)
	}

	s := mustNewLinear(f, Options{})
	secrets := [][]byte{linearSecret, linearSecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		cur := linearHex(linearSecret, body)
		sig = strings.NewReplacer(sigCur, cur, sigOld, linearHex(linearSecretOld, body), sigUpper, strings.ToUpper(cur)).Replace(sig)
		r := linearRequest(body, linearDelivery, "", fuzzHeaders(sig)...)
		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		if strings.Contains(sig, "\n") {
			t.Fatalf("Verify(%q): accepted repeated headers", sig)
		}
		// Accepted: the body is JSON with a webhookTimestamp in the window
		// (as encoding/json reads it), and Sign reproduces the signature.
		var m struct {
			WebhookTimestamp *int64 `json:"webhookTimestamp"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.WebhookTimestamp == nil {
			t.Fatalf("Verify(%q): accepted a body without a webhookTimestamp (%v)", body, err)
		}
		if d := testNow.Sub(time.UnixMilli(*m.WebhookTimestamp)); d > LinearDefaultTolerance || d < -LinearDefaultTolerance {
			t.Fatalf("Verify(%q): accepted a webhookTimestamp %s away from now", body, d)
		}
		for _, secret := range secrets {
			signed := Request{Body: body}
			if err := s.Sign(&signed, secret, testNow); err != nil {
				t.Fatal(err)
			}
			if strings.EqualFold(signed.Header.Get(LinearSignatureHeader), sig) {
				return
			}
		}
		t.Fatalf("Verify(%q): got nil, but Sign reproduces neither secret's signature", sig)
	})
}

func FuzzLinearIdentify(f *testing.F) {
	for _, b := range linearBodies {
		f.Add(linearDelivery, b.event, b.body)
		f.Add(linearDelivery, "", b.body)
	}
	for _, tc := range linearIdentifyCases {
		f.Add(tc.delivery, tc.event, []byte(tc.body))
	}
	s := mustNewLinear(f, Options{})
	f.Fuzz(func(t *testing.T, delivery, event string, body []byte) {
		fuzzIdentifyValid(t, s, linearRequest(body, delivery, event))
	})
}

func BenchmarkLinear(b *testing.B) {
	body := linearBodies[0].body
	r := linearRequest(body, linearDelivery, "Issue", linearHex(linearSecret, body))
	var sum [sha256.Size]byte
	benchScheme(b, mustNewLinear(b, Options{}), r, linearSecrets, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha256.New, linearSecret)
		m.Write(body)
		m.Sum(sum[:0])
	})
}

// ExampleLinear_Sign shows the header Linear sends: the bare hex digest.
func ExampleLinear_Sign() {
	s, _ := NewLinear(Options{})
	r := Request{Body: []byte(`{"action":"create","type":"Issue","webhookTimestamp":1721954400000}`)}
	_ = s.Sign(&r, []byte("lin_wh_example"), time.Time{})
	fmt.Println(r.Header.Get(LinearSignatureHeader))
	// Output: 34e6d48ab8228ff5db804123680bde71af51a073951448c29158fe3a13df9d93
}
