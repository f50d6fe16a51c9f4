package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	coinbaseCommerceSecret    = []byte("5c7e9a1b-3d5f-4a7c-9e1b-3d5f7a9c1e3b")
	coinbaseCommerceSecretOld = []byte("0b2d4f6a-8c0e-4b2d-8f6a-0c2e4a6c8e0a")
	coinbaseCommerceSecrets   = [][]byte{coinbaseCommerceSecret}
)

// The published vector of Coinbase's coinbase-commerce-python,
// tests/test_webhook.py (PAYLOAD_STR, SIG_HEADER, SECRET): the library's
// own test accepts the signature for the payload under the secret.
const (
	coinbaseCommerceSDKSecret = "30291a20-0bd1-4267-9b0f-e6e7b123c0bf"
	coinbaseCommerceSDKSig    = "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d"
	coinbaseCommerceSDKBody   = `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","data":{"code":"66BEOV2A","name":"The Sovereign Individual","description":"Mastering the Transition to the Information Age","hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"metadata":{},"pricing_type":"no_price","payments":[],"addresses":{"bitcoin":"0000000000000000000000000000000000","ethereum":"0x0000000000000000000000000000000000000000","litecoin":"3000000000000000000000000000000000","bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}`
)

// coinbaseCommerceBodies: the library's vector, and the same event's
// second delivery attempt (a new delivery id, scheduled_for and
// attempt_number; the same event).
var coinbaseCommerceBodies = []struct {
	name string
	body string
	want Identity
}{
	{"charge:created (coinbase-commerce-python)", coinbaseCommerceSDKBody,
		Identity{ID: "24934862-d980-46cb-9402-43c81b0cdba6", Type: "charge:created", Created: time.Date(2017, 1, 31, 20, 49, 2, 0, time.UTC)}},
	{"charge:created, second attempt", strings.Replace(coinbaseCommerceSDKBody, `{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,`, `{"id":2,"scheduled_for":"2017-01-31T20:55:02Z","attempt_number":2,`, 1),
		Identity{ID: "24934862-d980-46cb-9402-43c81b0cdba6", Type: "charge:created", Created: time.Date(2017, 1, 31, 20, 49, 2, 0, time.UTC)}},
}

func coinbaseCommerceNew(tb testing.TB) *CoinbaseCommerce {
	tb.Helper()
	return mustNew(tb, NewCoinbaseCommerce, Options{})
}

func coinbaseCommerceRequest(body []byte, sigs ...string) Request {
	return jsonPost(body, map[string][]string{CoinbaseCommerceSignatureHeader: sigs})
}

// coinbaseCommerceHex is the signature for body, computed independently of
// the code under test.
func coinbaseCommerceHex(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// TestCoinbaseCommerceVector: the library's published signature verifies
// here and Sign reproduces it; a changed digit, as the library's own
// failing test makes, does not.
func TestCoinbaseCommerceVector(t *testing.T) {
	c := coinbaseCommerceNew(t)
	secrets := [][]byte{[]byte(coinbaseCommerceSDKSecret)}
	body := []byte(coinbaseCommerceSDKBody)
	checkErr(t, c.Verify(coinbaseCommerceRequest(body, coinbaseCommerceSDKSig), secrets, testNow), nil)
	checkErr(t, c.Verify(coinbaseCommerceRequest(body, strings.ReplaceAll(coinbaseCommerceSDKSig, "3", "1")), secrets, testNow), ErrNoMatch)
	r := signed(t, c, coinbaseCommerceRequest(body), []byte(coinbaseCommerceSDKSecret), testNow)
	if got := r.Header.Get(CoinbaseCommerceSignatureHeader); got != coinbaseCommerceSDKSig {
		t.Errorf("Sign: got %q, want the library's %q", got, coinbaseCommerceSDKSig)
	}
}

// TestCoinbaseCommerceCorpus signs every corpus body and checks it against
// an independent HMAC, and that a flipped byte fails.
func TestCoinbaseCommerceCorpus(t *testing.T) {
	c := coinbaseCommerceNew(t)
	for _, f := range walkCorpus(t, corpusDir, 15) {
		r := signed(t, c, coinbaseCommerceRequest(f.body), coinbaseCommerceSecret, testNow)
		if got, want := r.Header.Get(CoinbaseCommerceSignatureHeader), coinbaseCommerceHex(f.body, coinbaseCommerceSecret); got != want {
			t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
		}
		checkErr(t, verifyNoPanic(t, c, r, coinbaseCommerceSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, c, r, coinbaseCommerceSecrets, testNow)
	}
}

func TestCoinbaseCommerceBodies(t *testing.T) {
	c := coinbaseCommerceNew(t)
	for _, b := range coinbaseCommerceBodies {
		t.Run(b.name, func(t *testing.T) {
			r := signed(t, c, coinbaseCommerceRequest([]byte(b.body)), coinbaseCommerceSecret, testNow)
			checkErr(t, c.Verify(r, coinbaseCommerceSecrets, testNow), nil)
			got, err := c.Identify(r)
			checkIdentity(t, got, err, b.want)
		})
	}
}

func TestCoinbaseCommerceRotation(t *testing.T) {
	body := []byte(coinbaseCommerceSDKBody)
	cur, old := coinbaseCommerceHex(body, coinbaseCommerceSecret), coinbaseCommerceHex(body, coinbaseCommerceSecretOld)
	both := [][]byte{coinbaseCommerceSecret, coinbaseCommerceSecretOld}
	req := func(sig string) Request { return coinbaseCommerceRequest(body, sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{coinbaseCommerceSecretOld, coinbaseCommerceSecret}, nil},
		{"retired secret", req(old), coinbaseCommerceSecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, coinbaseCommerceSecret}, nil},
		{"empty secret never matches an empty-key signature", req(coinbaseCommerceHex(body, nil)), [][]byte{{}, coinbaseCommerceSecret}, ErrNoMatch},
	}
	c := coinbaseCommerceNew(t)
	runVerifyCases(t, c, testNow, 0, tests)
	t.Run("no clock", func(t *testing.T) {
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, c.Verify(req(cur), coinbaseCommerceSecrets, now), nil)
		}
	})
}

func TestNewCoinbaseCommerceOptions(t *testing.T) {
	runOptionsCases(t, NewCoinbaseCommerce, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/coinbase"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// coinbaseCommerceMalformedCase is one Verify input; secrets nil means
// coinbaseCommerceSecrets.
type coinbaseCommerceMalformedCase struct {
	name    string
	sig     []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// coinbaseCommerceMalformedCases is shared with the fuzz test as seeds.
func coinbaseCommerceMalformedCases(body []byte) []coinbaseCommerceMalformedCase {
	ok := coinbaseCommerceHex(body, coinbaseCommerceSecret)
	wrong := coinbaseCommerceHex(body, []byte("cc-wrong"))
	return []coinbaseCommerceMalformedCase{
		{name: "valid", sig: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "two headers", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "sha256= prefix", sig: []string{"sha256=" + ok}, want: ErrMalformedHeader},
		{name: "two signatures joined by a comma", sig: []string{wrong + "," + ok}, want: ErrMalformedHeader},
		{name: "short hex", sig: []string{ok[:62]}, want: ErrMalformedHeader},
		{name: "long hex", sig: []string{ok + "00"}, want: ErrMalformedHeader},
		{name: "non-hex", sig: []string{ok[:63] + "g"}, want: ErrMalformedHeader},
		{name: "uppercase hex is accepted", sig: []string{strings.ToUpper(ok)}, want: nil},
		{name: "base64 instead of hex", sig: []string{strings.Repeat("A", 43) + "="}, want: ErrMalformedHeader},
		{name: "wrong secret", sig: []string{wrong}, want: ErrNoMatch},
		{name: "the library's vector under another secret", sig: []string{coinbaseCommerceSDKSig}, want: ErrNoMatch},
		{name: "plain SHA-256 of the body", sig: []string{fmt.Sprintf("%x", sha256.Sum256(body))}, want: ErrNoMatch},
		{name: "body truncated by one byte", sig: []string{ok}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "the retry's body under the first attempt's signature", sig: []string{ok}, body: func([]byte) []byte { return []byte(coinbaseCommerceBodies[1].body) }, want: ErrNoMatch},
		{name: "body re-indented", sig: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Indent(&c, b, "", " "); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
		{name: "only an empty secret", sig: []string{coinbaseCommerceHex(body, nil)}, secrets: [][]byte{{}}, want: ErrNoSecret},
	}
}

func coinbaseCommerceMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(coinbaseCommerceSDKBody)
	var cases []verifyCase
	for _, tc := range coinbaseCommerceMalformedCases(body) {
		r := coinbaseCommerceRequest(changed(body, tc.body), tc.sig...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, coinbaseCommerceSecrets), tc.want})
	}
	c := coinbaseCommerceNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       c,
		r:       signed(tb, c, coinbaseCommerceRequest(body), coinbaseCommerceSecret, testNow),
		secrets: coinbaseCommerceSecrets,
		sig:     signedField{header: CoinbaseCommerceSignatureHeader},
		enc:     encHex,
	})
	return []malformedRun{{c, cases}, {c, generic}}
}

func TestCoinbaseCommerceVerifyMalformed(t *testing.T) {
	runMalformed(t, coinbaseCommerceMalformedRuns(t))
}

// coinbaseCommerceIdentifyCases is shared with the fuzz test as seeds; a
// zero want.ID means ErrInvalidPayload.
var coinbaseCommerceIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"event":{"id":"e1","type":"charge:confirmed"}}`, want: Identity{ID: "e1", Type: "charge:confirmed"}},
	{name: "created_at", body: `{"id":7,"event":{"id":"e1","type":"t","created_at":"2017-01-31T20:49:02Z"}}`, want: Identity{ID: "e1", Type: "t", Created: time.Date(2017, 1, 31, 20, 49, 2, 0, time.UTC)}},
	{name: "the delivery's id is not the event's", body: `{"id":7,"event":{"type":"t","id":"e1"}}`, want: Identity{ID: "e1", Type: "t"}},
	{name: "data's id is not the event's", body: `{"event":{"data":{"id":"d1"},"id":"e1","type":"t"}}`, want: Identity{ID: "e1", Type: "t"}},
	{name: "escaped", body: `{"event":{"id":"e\u0031","type":"charge\u003aconfirmed"}}`, want: Identity{ID: "e1", Type: "charge:confirmed"}},

	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"event":{"id":"e1","type":"t"}}]`},
	{name: "not JSON", body: `event=e1`},
	{name: "truncated", body: `{"event":{"id":"e1","type":"t"}`},
	{name: "no event", body: `{"id":1,"type":"t"}`},
	{name: "event null", body: `{"event":null}`},
	{name: "event a string", body: `{"event":"e1"}`},
	{name: "missing id", body: `{"event":{"type":"t"}}`},
	{name: "numeric id", body: `{"event":{"id":1,"type":"t"}}`},
	{name: "empty id", body: `{"event":{"id":"","type":"t"}}`},
	{name: "id 513 bytes", body: `{"event":{"id":"` + strings.Repeat("e", 513) + `","type":"t"}}`},
	{name: "missing type", body: `{"event":{"id":"e1"}}`},
	{name: "type null", body: `{"event":{"id":"e1","type":null}}`},
	{name: "created_at not RFC 3339", body: `{"event":{"id":"e1","type":"t","created_at":"31/01/2017"}}`},
	{name: "created_at a number", body: `{"event":{"id":"e1","type":"t","created_at":1485895742}}`},
}

func TestCoinbaseCommerceIdentify(t *testing.T) {
	c := coinbaseCommerceNew(t)
	for _, tc := range coinbaseCommerceIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, c, coinbaseCommerceRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzCoinbaseCommerceVerify(f *testing.F) {
	for _, b := range coinbaseCommerceBodies {
		f.Add("{sig}", []byte(b.body))
		f.Add("{old}", []byte(b.body))
	}
	body := []byte(coinbaseCommerceSDKBody)
	for _, tc := range coinbaseCommerceMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.sig, "\n"), coinbaseCommerceHex(b, coinbaseCommerceSecret), "{sig}"), b)
	}
	c := coinbaseCommerceNew(f)
	secrets := [][]byte{coinbaseCommerceSecret, coinbaseCommerceSecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", coinbaseCommerceHex(body, coinbaseCommerceSecret), "{old}", coinbaseCommerceHex(body, coinbaseCommerceSecretOld)).Replace(sig)
		}
		r := coinbaseCommerceRequest(body, fuzzHeaders(sig)...)
		if !fuzzVerify(t, c, r, secrets, testNow) {
			return
		}
		checkAcceptedHex(t, sig, "", secrets, func(secret []byte) string { return coinbaseCommerceHex(body, secret) })
	})
}

func FuzzCoinbaseCommerceIdentify(f *testing.F) {
	for _, b := range coinbaseCommerceBodies {
		f.Add([]byte(b.body))
	}
	for _, tc := range coinbaseCommerceIdentifyCases {
		f.Add([]byte(tc.body))
	}
	c := coinbaseCommerceNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, c, coinbaseCommerceRequest(body))
		if !ok {
			return
		}
		var doc struct {
			Event struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			} `json:"event"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if id.ID != doc.Event.ID || id.Type != doc.Event.Type || id.ID == "" {
			t.Fatalf("Identify(%q): got %+v, want %+v", body, id, doc.Event)
		}
	})
}

// BenchmarkCoinbaseCommerce compares the scheme with a bare HMAC-SHA256
// over the same bytes (Coinbase publishes no Go library).
func BenchmarkCoinbaseCommerce(b *testing.B) {
	body := []byte(coinbaseCommerceSDKBody)
	r := coinbaseCommerceRequest(body, coinbaseCommerceHex(body, coinbaseCommerceSecret))
	var sum [sha256.Size]byte
	benchScheme(b, coinbaseCommerceNew(b), r, coinbaseCommerceSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, coinbaseCommerceSecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
