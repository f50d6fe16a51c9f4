package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	webflowSecret    = []byte("webflow-webhook-secret-5Tq9Xz2Lp7")
	webflowSecretOld = []byte("webflow-webhook-secret-old-3Kw8Mn")
	webflowSecrets   = [][]byte{webflowSecret}
)

// webflowFormSubmission is shaped like the form_submission example of
// Webflow's webhook documentation (values made up here).
const webflowFormSubmission = `{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"First Name":"Ada","Last Name":"Obi","email":"ada@example.com"},"submittedAt":"2024-07-26T00:40:00.000Z","id":"6321ca84df3949bfc6752327","formId":"65429eadebe8a9f3a30f62d0"}}`

func mustNewWebflow(tb testing.TB, o Options) *Webflow {
	tb.Helper()
	return mustNew(tb, NewWebflow, o)
}

// webflowRequest builds a POST with the given signature and timestamp
// headers ("-" leaves one out).
func webflowRequest(body []byte, sig, ts string) Request {
	h := map[string][]string{}
	if sig != "-" {
		h[WebflowSignatureHeader] = []string{sig}
	}
	if ts != "-" {
		h[WebflowTimestampHeader] = []string{ts}
	}
	return jsonPost(body, h)
}

// webflowHex is the signature of body at the raw ts, computed apart from
// the code under test (Webflow publishes no vector and no Go library).
func webflowHex(body, secret []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + ":"))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

var webflowTS = strconv.FormatInt(testNow.UnixMilli(), 10)

func TestWebflowCorpus(t *testing.T) {
	w := mustNewWebflow(t, Options{})
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "form_submission", body: []byte(webflowFormSubmission)})
	for _, f := range files {
		r := signed(t, w, webflowRequest(f.body, "-", "-"), webflowSecret, testNow)
		if got, want := r.Header.Get(WebflowSignatureHeader), webflowHex(f.body, webflowSecret, webflowTS); got != want || r.Header.Get(WebflowTimestampHeader) != webflowTS {
			t.Errorf("%s: Sign: got %q at %q, want %q at %q", f.name, got, r.Header.Get(WebflowTimestampHeader), want, webflowTS)
		}
		checkErr(t, verifyNoPanic(t, w, r, webflowSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, w, r, webflowSecrets, testNow)
	}
	got, err := w.Identify(webflowRequest([]byte(webflowFormSubmission), "-", webflowTS))
	checkIdentity(t, got, err, Identity{ID: webflowTS + " " + hashID(webflowFormSubmission), Type: "form_submission"})
}

// TestWebflowSameBodyTwice: a body can repeat (inventory back to a
// quantity it had); signed at two times it is two events, never merged.
func TestWebflowSameBodyTwice(t *testing.T) {
	w := mustNewWebflow(t, Options{})
	body := []byte(`{"triggerType":"ecomm_inventory_changed","payload":{"id":"5bfedb42bab0ad90fa7dad39","quantity":4,"inventoryType":"finite"}}`)
	a, errA := w.Identify(webflowRequest(body, "-", webflowTS))
	b, errB := w.Identify(webflowRequest(body, "-", strconv.FormatInt(testNow.Add(time.Minute).UnixMilli(), 10)))
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("one body at two times: %q and %q (%v, %v), want two events", a.ID, b.ID, errA, errB)
	}
	if _, err := w.Identify(webflowRequest(body, "-", "-")); err == nil {
		t.Error("no timestamp: Identify accepted it")
	}
}

func TestWebflowRotation(t *testing.T) {
	body := []byte(webflowFormSubmission)
	req := func(secret []byte) Request {
		return webflowRequest(body, webflowHex(body, secret, webflowTS), webflowTS)
	}
	both := [][]byte{webflowSecret, webflowSecretOld}
	runVerifyCases(t, mustNewWebflow(t, Options{}), testNow, 0, []verifyCase{
		{"two secrets, signed by current", req(webflowSecret), both, nil},
		{"two secrets, signed by previous", req(webflowSecretOld), both, nil},
		{"retired secret", req(webflowSecretOld), webflowSecrets, ErrNoMatch},
		{"nil secrets", req(webflowSecret), nil, ErrNoSecret},
		{"empty secret skipped", req(webflowSecret), [][]byte{nil, webflowSecret}, nil},
		{"empty secret never matches an empty-key signature", req(nil), [][]byte{{}, webflowSecret}, ErrNoMatch},
	})
}

func TestWebflowTolerance(t *testing.T) {
	body := []byte(webflowFormSubmission)
	runToleranceCases(t, webflowSecrets, toleranceEdges(DefaultTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		w := mustNewWebflow(t, Options{Tolerance: tolerance})
		return w, signed(t, w, webflowRequest(body, "-", "-"), webflowSecret, at)
	})
}

func TestNewWebflow(t *testing.T) {
	runOptionsCases(t, NewWebflow, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -1}, true},
		{"url set", Options{URL: "https://example.com/webflow"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

func webflowMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(webflowFormSubmission)
	ok := webflowHex(body, webflowSecret, webflowTS)
	at := func(ts string) Request { return webflowRequest(body, webflowHex(body, webflowSecret, ts), ts) }
	secs := strconv.FormatInt(testNow.Unix(), 10)
	req := func(sig, ts string) Request { return webflowRequest(body, sig, ts) }
	cases := []verifyCase{
		{"valid", req(ok, webflowTS), webflowSecrets, nil},
		{"no signature", req("-", webflowTS), webflowSecrets, ErrNotSigned},
		{"no timestamp", req(ok, "-"), webflowSecrets, ErrMalformedHeader},
		{"timestamp in seconds", at(secs), webflowSecrets, ErrTooOld},
		{"timestamp with a leading zero", at("0" + webflowTS), webflowSecrets, ErrMalformedHeader},
		{"timestamp negative", at("-" + webflowTS), webflowSecrets, ErrMalformedHeader},
		{"timestamp with a fraction", at(webflowTS + ".5"), webflowSecrets, ErrMalformedHeader},
		{"timestamp 17 digits", at(webflowTS + "0000"), webflowSecrets, ErrMalformedHeader},
		{"timestamp an hour old", at(strconv.FormatInt(testNow.Add(-time.Hour).UnixMilli(), 10)), webflowSecrets, ErrTooOld},
		{"timestamp an hour ahead", at(strconv.FormatInt(testNow.Add(time.Hour).UnixMilli(), 10)), webflowSecrets, ErrTooNew},
		{"timestamp not the signed one", req(ok, strconv.FormatInt(testNow.UnixMilli()+1, 10)), webflowSecrets, ErrNoMatch},
		{"signed with '.' not ':'", req(hex.EncodeToString(macOf(sha256.New, webflowSecret, []byte(webflowTS+"."), body)), webflowTS), webflowSecrets, ErrNoMatch},
		{"signed over the body alone", req(hex.EncodeToString(macOf(sha256.New, webflowSecret, body)), webflowTS), webflowSecrets, ErrNoMatch},
		{"short hex", req(ok[:62], webflowTS), webflowSecrets, ErrMalformedHeader},
		{"non-hex", req(ok[:63]+"g", webflowTS), webflowSecrets, ErrMalformedHeader},
		{"uppercase hex is accepted", req(strings.ToUpper(ok), webflowTS), webflowSecrets, nil},
		{"wrong secret", req(webflowHex(body, []byte("wf-wrong"), webflowTS), webflowTS), webflowSecrets, ErrNoMatch},
		{"body truncated", webflowRequest(body[:len(body)-1], ok, webflowTS), webflowSecrets, ErrNoMatch},
		{"body with appended newline", webflowRequest(append(bytes.Clone(body), '\n'), ok, webflowTS), webflowSecrets, ErrNoMatch},
	}
	w := mustNewWebflow(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        w,
		r:        signed(tb, w, webflowRequest(body, "-", "-"), webflowSecret, testNow),
		secrets:  webflowSecrets,
		sig:      signedField{header: WebflowSignatureHeader},
		enc:      encHex,
		ts:       &signedField{header: WebflowTimestampHeader},
		tsFormat: func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) },
		// Milliseconds times 1000 is a well-formed time, far ahead.
		tsWant: map[string]error{"now times 1000": ErrTooNew},
	})
	return []malformedRun{{w, cases}, {w, generic}}
}

func TestWebflowVerifyMalformed(t *testing.T) { runMalformed(t, webflowMalformedRuns(t)) }

var webflowIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"triggerType":"site_publish","payload":{}}`, want: Identity{ID: webflowTS + " " + hashID(`{"triggerType":"site_publish","payload":{}}`), Type: "site_publish"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[]`},
	{name: "missing triggerType", body: `{"payload":{}}`},
	{name: "numeric triggerType", body: `{"triggerType":1,"payload":{}}`},
	{name: "missing payload", body: `{"triggerType":"x"}`},
	{name: "payload an array", body: `{"triggerType":"x","payload":[]}`},
}

func TestWebflowIdentify(t *testing.T) {
	w := mustNewWebflow(t, Options{})
	for _, tc := range webflowIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, w, webflowRequest([]byte(tc.body), "-", webflowTS))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzWebflowVerify(f *testing.F) {
	f.Add("{sig}", webflowTS, []byte(webflowFormSubmission))
	f.Add("{old}", webflowTS, []byte(webflowFormSubmission))
	f.Add("{sig}", "0"+webflowTS, []byte(webflowFormSubmission))
	w := mustNewWebflow(f, Options{})
	secrets := [][]byte{webflowSecret, webflowSecretOld}
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		sig = strings.NewReplacer("{sig}", webflowHex(body, webflowSecret, ts), "{old}", webflowHex(body, webflowSecretOld, ts)).Replace(sig)
		if !fuzzVerify(t, w, webflowRequest(body, sig, ts), secrets, testNow) {
			return
		}
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || strconv.FormatInt(ms, 10) != ts {
			t.Fatalf("Verify: accepted timestamp %q", ts)
		}
		if d := testNow.Sub(time.UnixMilli(ms)); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify: accepted a timestamp %s away", d)
		}
		if !strings.EqualFold(sig, webflowHex(body, webflowSecret, ts)) && !strings.EqualFold(sig, webflowHex(body, webflowSecretOld, ts)) {
			t.Fatalf("Verify(%q at %q): no configured secret's signature", sig, ts)
		}
	})
}

func FuzzWebflowIdentify(f *testing.F) {
	f.Add([]byte(webflowFormSubmission))
	for _, tc := range webflowIdentifyCases {
		f.Add([]byte(tc.body))
	}
	w := mustNewWebflow(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, w, webflowRequest(body, "-", webflowTS))
		if !ok {
			return
		}
		var doc struct{ TriggerType string }
		if err := json.Unmarshal(body, &doc); err != nil || doc.TriggerType != got.Type || got.ID != webflowTS+" "+hashID(string(body)) {
			t.Fatalf("Identify(%q): got %+v (%v)", body, got, err)
		}
	})
}

// BenchmarkWebflow compares the scheme with a bare HMAC over the same
// bytes.
func BenchmarkWebflow(b *testing.B) {
	body := []byte(webflowFormSubmission)
	r := signed(b, mustNewWebflow(b, Options{}), webflowRequest(body, "-", "-"), webflowSecret, testNow)
	prefix := []byte(webflowTS + ":")
	var sum [sha256.Size]byte
	benchScheme(b, mustNewWebflow(b, Options{}), r, webflowSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, webflowSecret)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
