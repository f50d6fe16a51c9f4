package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	xeroSecret    = []byte("xero-webhook-key-Bq7Zp2Lr9Kx4Vt1MhQc8Jd3Wf6Ny0Gs5")
	xeroSecretOld = []byte("xero-webhook-key-old-Hm4Rt8Kz1Xp6Lq3Vn9Wc2Jf5")
	xeroSecrets   = [][]byte{xeroSecret}
)

// xeroDelivery is shaped like the example of Xero's webhook documentation:
// two events of one tenant (ids made up here).
const xeroDelivery = `{"events":[{"resourceUrl":"https://api.xero.com/api.xro/2.0/Contacts/717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","resourceId":"717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"c2cc9b6e-9458-4c7d-93cc-f02b81b0594f","tenantType":"ORGANISATION"},{"resourceUrl":"https://api.xero.com/api.xro/2.0/Invoices/0e64a623-c2a1-446a-93ed-eb897f118cbc","resourceId":"0e64a623-c2a1-446a-93ed-eb897f118cbc","eventDateUtc":"2017-06-21T01:16:01.004","eventType":"CREATE","eventCategory":"INVOICE","tenantId":"c2cc9b6e-9458-4c7d-93cc-f02b81b0594f","tenantType":"ORGANISATION"}],"firstEventSequence":1,"lastEventSequence":2,"entropy":"S0m3r4Nd0mt3xt"}`

// xeroIntent is an "intent to receive" delivery: no events.
const xeroIntent = `{"events":[],"firstEventSequence":0,"lastEventSequence":0,"entropy":"RCQXONLTEJHMPLKDXEWV"}`

func xeroNew(tb testing.TB) *Xero {
	tb.Helper()
	return mustNew(tb, NewXero, Options{})
}

func xeroRequest(body []byte, sigs ...string) Request {
	return jsonPost(body, map[string][]string{XeroSignatureHeader: sigs})
}

// xeroB64 is the signature for body, computed independently of the code
// under test (Xero publishes no vector; its SDKs leave verification to
// the application).
func xeroB64(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestXeroCorpus(t *testing.T) {
	x := xeroNew(t)
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "delivery", body: []byte(xeroDelivery)})
	for _, f := range files {
		r := signed(t, x, xeroRequest(f.body), xeroSecret, testNow)
		if got, want := r.Header.Get(XeroSignatureHeader), xeroB64(f.body, xeroSecret); got != want {
			t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
		}
		checkErr(t, verifyNoPanic(t, x, r, xeroSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, x, r, xeroSecrets, testNow)
	}
}

// TestXeroSplit: each event of a delivery is its own, keyed by the signed
// fields that name it, the same on a retry of the delivery.
func TestXeroSplit(t *testing.T) {
	x := xeroNew(t)
	ids, err := x.Split(xeroRequest([]byte(xeroDelivery)))
	if err != nil {
		t.Fatal(err)
	}
	tenant := "c2cc9b6e-9458-4c7d-93cc-f02b81b0594f"
	want := []Identity{
		{ID: tenant + "/CONTACT/717f2bfc-c6d4-41fd-b238-3f2f0c0cf777/UPDATE/2017-06-21T01:15:39.902", Type: "CONTACT.UPDATE", Created: time.Date(2017, 6, 21, 1, 15, 39, 902000000, time.UTC), Attributes: map[string]string{"tenant_id": tenant}},
		{ID: tenant + "/INVOICE/0e64a623-c2a1-446a-93ed-eb897f118cbc/CREATE/2017-06-21T01:16:01.004", Type: "INVOICE.CREATE", Created: time.Date(2017, 6, 21, 1, 16, 1, 4000000, time.UTC), Attributes: map[string]string{"tenant_id": tenant}},
	}
	if len(ids) != len(want) {
		t.Fatalf("got %d events, want %d", len(ids), len(want))
	}
	for i := range want {
		got := ids[i]
		if !json.Valid(got.Payload) || !bytes.Contains(got.Payload, []byte(`"resourceId"`)) {
			t.Errorf("event %d: payload %q", i, got.Payload)
		}
		got.Payload = nil
		checkIdentity(t, got, nil, want[i])
	}
	if _, err := x.Identify(xeroRequest([]byte(xeroDelivery))); err == nil {
		t.Error("Identify of a two-event delivery: got nil, want an error naming Split")
	}
}

// TestXeroIntentToReceive: a signed delivery with no events is the intent
// to receive, answered 200 with nothing stored; one that is not signed
// right fails Verify (401) before the handshake is looked at; a delivery
// with events is no handshake.
func TestXeroIntentToReceive(t *testing.T) {
	x := xeroNew(t)
	for _, body := range []string{xeroIntent, `{"events":[ ],"entropy":"x"}`, "{\"events\":[\n]}"} {
		r := signed(t, x, xeroRequest([]byte(body)), xeroSecret, testNow)
		checkErr(t, x.Verify(r, xeroSecrets, testNow), nil)
		reply, ok, err := x.Handshake(r, xeroSecrets)
		if err != nil || !ok || reply.Status != 200 || len(reply.Body) != 0 {
			t.Errorf("%s: Handshake: got %+v, %v, %v; want 200 with no body", body, reply, ok, err)
		}
	}
	bad := xeroRequest([]byte(xeroIntent), xeroB64([]byte(xeroIntent), []byte("not the key")))
	checkErr(t, x.Verify(bad, xeroSecrets, testNow), ErrNoMatch)
	for _, body := range []string{xeroDelivery, `{"entropy":"x"}`, `[]`, `not json`} {
		if _, ok, err := x.Handshake(xeroRequest([]byte(body)), xeroSecrets); ok || err != nil {
			t.Errorf("%s: Handshake: got a handshake (%v, %v)", body, ok, err)
		}
	}
}

func TestXeroRotation(t *testing.T) {
	body := []byte(xeroDelivery)
	cur, old := xeroB64(body, xeroSecret), xeroB64(body, xeroSecretOld)
	both := [][]byte{xeroSecret, xeroSecretOld}
	req := func(sig string) Request { return xeroRequest(body, sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"retired secret", req(old), xeroSecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, xeroSecret}, nil},
		{"empty secret never matches an empty-key signature", req(xeroB64(body, nil)), [][]byte{{}, xeroSecret}, ErrNoMatch},
	}
	runVerifyCases(t, xeroNew(t), testNow, 0, tests)
}

func TestNewXeroOptions(t *testing.T) {
	runOptionsCases(t, NewXero, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/xero"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// xeroMalformedCase is one Verify input; secrets nil means xeroSecrets.
type xeroMalformedCase struct {
	name    string
	sig     []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// xeroMalformedCases is shared with the fuzz test as seeds.
func xeroMalformedCases(body []byte) []xeroMalformedCase {
	ok := xeroB64(body, xeroSecret)
	raw, _ := base64.StdEncoding.DecodeString(ok)
	return []xeroMalformedCase{
		{name: "valid", sig: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "two headers", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "hex instead of base64", sig: []string{fmt.Sprintf("%x", raw)}, want: ErrMalformedHeader},
		{name: "URL-safe '-' in the standard alphabet's place", sig: []string{"-" + ok[1:]}, want: ErrMalformedHeader},
		{name: "unpadded", sig: []string{strings.TrimRight(ok, "=")}, want: ErrMalformedHeader},
		{name: "sha256= prefix", sig: []string{"sha256=" + ok}, want: ErrMalformedHeader},
		{name: "wrong secret", sig: []string{xeroB64(body, []byte("xero-wrong"))}, want: ErrNoMatch},
		{name: "SHA-1 HMAC", sig: []string{base64.StdEncoding.EncodeToString(make([]byte, 20))}, want: ErrMalformedHeader},
		{name: "body truncated by one byte", sig: []string{ok}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "events emptied: an intent under the delivery's signature", sig: []string{ok}, body: func([]byte) []byte { return []byte(xeroIntent) }, want: ErrNoMatch},
		{name: "only an empty secret", sig: []string{xeroB64(body, nil)}, secrets: [][]byte{{}}, want: ErrNoSecret},
	}
}

func xeroMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(xeroDelivery)
	var cases []verifyCase
	for _, tc := range xeroMalformedCases(body) {
		r := xeroRequest(changed(body, tc.body), tc.sig...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, xeroSecrets), tc.want})
	}
	x := xeroNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       x,
		r:       signed(tb, x, xeroRequest(body), xeroSecret, testNow),
		secrets: xeroSecrets,
		sig:     signedField{header: XeroSignatureHeader},
		enc:     encBase64,
	})
	return []malformedRun{{x, cases}, {x, generic}}
}

func TestXeroVerifyMalformed(t *testing.T) { runMalformed(t, xeroMalformedRuns(t)) }

const xeroEvent = `{"resourceId":"r1","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}`

// xeroSplitCases is shared with the fuzz test as seeds; want 0 means
// ErrInvalidPayload, else the number of events.
var xeroSplitCases = []struct {
	name string
	body string
	want int
}{
	{"one", `{"events":[` + xeroEvent + `]}`, 1},
	{"two", `{"events":[` + xeroEvent + `,` + xeroEvent + `]}`, 2},
	{"date without fraction", `{"events":[{"resourceId":"r1","eventDateUtc":"2017-06-21T01:15:39","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 1},
	{"empty", ``, 0},
	{"null", `null`, 0},
	{"array", `[` + xeroEvent + `]`, 0},
	{"no events", `{"entropy":"x"}`, 0},
	{"events null", `{"events":null}`, 0},
	{"events an object", `{"events":` + xeroEvent + `}`, 0},
	{"events empty", `{"events":[]}`, 0},
	{"an event not an object", `{"events":["x"]}`, 0},
	{"missing resourceId", `{"events":[{"eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"missing tenantId", `{"events":[{"resourceId":"r1","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT"}]}`, 0},
	{"numeric resourceId", `{"events":[{"resourceId":1,"eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"a slash in a key part", `{"events":[{"resourceId":"r/1","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"date with a zone", `{"events":[{"resourceId":"r1","eventDateUtc":"2017-06-21T01:15:39.902Z","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"date not a date", `{"events":[{"resourceId":"r1","eventDateUtc":"yesterday","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"key over 512 bytes", `{"events":[{"resourceId":"` + strings.Repeat("r", 480) + `","eventDateUtc":"2017-06-21T01:15:39.902","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"t1"}]}`, 0},
	{"one good, one bad", `{"events":[` + xeroEvent + `,{"resourceId":"r2"}]}`, 0},
}

func TestXeroSplitCases(t *testing.T) {
	x := xeroNew(t)
	for _, tc := range xeroSplitCases {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := x.Split(xeroRequest([]byte(tc.body)))
			switch {
			case tc.want == 0 && err == nil:
				t.Errorf("got %d events, want ErrInvalidPayload", len(ids))
			case tc.want != 0 && (err != nil || len(ids) != tc.want):
				t.Errorf("got %d events, %v; want %d", len(ids), err, tc.want)
			}
		})
	}
}

func FuzzXeroVerify(f *testing.F) {
	f.Add("{sig}", []byte(xeroDelivery))
	f.Add("{old}", []byte(xeroIntent))
	body := []byte(xeroDelivery)
	for _, tc := range xeroMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.sig, "\n"), xeroB64(b, xeroSecret), "{sig}"), b)
	}
	x := xeroNew(f)
	secrets := [][]byte{xeroSecret, xeroSecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", xeroB64(body, xeroSecret), "{old}", xeroB64(body, xeroSecretOld)).Replace(sig)
		}
		if !fuzzVerify(t, x, xeroRequest(body, fuzzHeaders(sig)...), secrets, testNow) {
			return
		}
		if sig != xeroB64(body, xeroSecret) && sig != xeroB64(body, xeroSecretOld) {
			t.Fatalf("Verify(%q): accepted a signature that is neither secret's", sig)
		}
	})
}

func FuzzXeroSplit(f *testing.F) {
	f.Add([]byte(xeroDelivery))
	f.Add([]byte(xeroIntent))
	for _, tc := range xeroSplitCases {
		f.Add([]byte(tc.body))
	}
	x := xeroNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := xeroRequest(body)
		if _, isHandshake, err := x.Handshake(r, xeroSecrets); err != nil || isHandshake {
			if _, err := x.Split(r); err == nil {
				t.Fatalf("Split(%q): events in an intent to receive", body)
			}
			return
		}
		ids, err := x.Split(r)
		if err != nil {
			return
		}
		var doc struct {
			Events []map[string]any `json:"events"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Events) != len(ids) {
			t.Fatalf("Split(%q): %d events, encoding/json reads %d (%v)", body, len(ids), len(doc.Events), err)
		}
		for _, id := range ids {
			if id.ID == "" || len(id.ID) > MaxIdentity || strings.Count(id.ID, "/") != 4 || !json.Valid(id.Payload) {
				t.Fatalf("Split(%q): got %+v", body, id)
			}
		}
	})
}

// BenchmarkXero compares the scheme with a bare HMAC-SHA256 over the same
// bytes; verify+identify splits the two events.
func BenchmarkXero(b *testing.B) {
	body := []byte(xeroDelivery)
	r := xeroRequest(body, xeroB64(body, xeroSecret))
	var sum [sha256.Size]byte
	benchScheme(b, xeroNew(b), r, xeroSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, xeroSecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
