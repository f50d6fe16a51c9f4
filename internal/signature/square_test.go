package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The published vector of Square's SDKs: square/square-nodejs-sdk
// test/utilities/webhooksHelper.test.ts (the same values are in
// square/square-go-sdk, square-python-sdk, square-ruby-sdk and
// square-php-sdk tests).
const (
	squareVectorBody = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
	squareVectorSig  = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
	squareVectorKey  = "Ibxx_5AKakO-3qeNVR61Dw"
	squareVectorURL  = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
)

var (
	squareURL     = "https://hooks.example.com/webhooks/square"
	squareKey     = []byte("sq0wss-current-Ibxx5AKakO3qeNVR61Dw")
	squareKeyOld  = []byte("sq0wss-previous-MCmhFRxGX82xMwg5Fsa")
	squareSecrets = [][]byte{squareKey}
)

// squarePaymentUpdated is a payment.updated event in the shape Square
// documents (envelope fields as in the SDK vector above; the payment object
// is illustrative), for Identify and the benchmarks.
const squarePaymentUpdated = `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"6a8f5f28-54a1-4eb0-a98a-3111513fd4fc","created_at":"2020-02-06T22:14:52.457Z","data":{"type":"payment","id":"hYy9pRFVxpDsO1FB05SunFWUe9JZY","object":{"payment":{"amount_money":{"amount":100,"currency":"USD"},"approved_money":{"amount":100,"currency":"USD"},"card_details":{"avs_status":"AVS_ACCEPTED","card":{"bin":"540988","card_brand":"MASTERCARD","card_type":"CREDIT","exp_month":11,"exp_year":2022,"fingerprint":"sq-1-Tvruf3vPQxlvI6n0IcKYfBukrcv6IqWr8UyBdViWXU2yzGn5VMJvrsHMKpINMhPmVg","last_4":"9029","prepaid_type":"NOT_PREPAID"},"card_payment_timeline":{"authorized_at":"2020-11-22T21:16:51.198Z","captured_at":"2020-11-22T21:19:00.832Z"},"cvv_status":"CVV_ACCEPTED","entry_method":"KEYED","statement_description":"SQ *DEFAULT TEST ACCOUNT","status":"CAPTURED"},"created_at":"2020-11-22T21:16:51.086Z","id":"hYy9pRFVxpDsO1FB05SunFWUe9JZY","location_id":"S8GWD5R9QB376","order_id":"03O3USaPaAaFnI6kkwB1JxGgBsUZY","receipt_number":"hYy9","receipt_url":"https://squareup.com/receipt/preview/hYy9pRFVxpDsO1FB05SunFWUe9JZY","source_type":"CARD","status":"COMPLETED","total_money":{"amount":100,"currency":"USD"},"updated_at":"2020-11-22T21:19:00.831Z","version":1}}}}`

func mustNewSquare(tb testing.TB, o Options) *Square {
	tb.Helper()
	return mustNew(tb, NewSquare, o)
}

// squareRequest builds a POST with one signature value per element of
// headers.
func squareRequest(body []byte, headers ...string) Request {
	return jsonPost(body, map[string][]string{SquareHeader: headers})
}

// squareB64Of is the signature of url+body, computed independently of the
// code under test.
func squareB64Of(url string, body, key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(url))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestSquareSDKVectors reproduces the cases of Square's SDK tests (see
// squareVectorBody). The SDKs answer false or throw; the causes are ours.
func TestSquareSDKVectors(t *testing.T) {
	body := []byte(squareVectorBody)
	key := [][]byte{[]byte(squareVectorKey)}
	tests := []struct {
		name    string
		url     string
		body    string
		sig     string
		secrets [][]byte
		want    error
	}{
		{"signature validation pass", squareVectorURL, squareVectorBody, squareVectorSig, key, nil},
		{"unescaped chars validation pass", "https://webhook.site/webhooks", `{"data":{"type":"webhooks","id":"fake_id"}}`, "W3FlCNk5IA3ZQ2LHTWoajvzfaDu/OwY2tNHIHC3IUOA=", [][]byte{[]byte("signature-key")}, nil},
		{"escaped characters pass", "https://webhook.site/webhooks", `{"data":{"type":"webhooks","id":">id<"}}`, "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=", [][]byte{[]byte("signature-key")}, nil},
		{"notification url mismatch", "https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9", squareVectorBody, squareVectorSig, key, ErrNoMatch},
		{"invalid signature key", squareVectorURL, squareVectorBody, squareVectorSig, [][]byte{[]byte("MCmhFRxGX82xMwg5FsaoQA")}, ErrNoMatch},
		{"invalid signature header (a SHA-1 length)", squareVectorURL, squareVectorBody, "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", key, ErrMalformedHeader},
		{"request body mismatch", squareVectorURL, strings.Replace(squareVectorBody, "2022-07-13", "2022-06-13", 1), squareVectorSig, key, ErrNoMatch},
		{"formatted request body", squareVectorURL, "{\n    \"merchant_id\": \"MLEFBHHSJGVHD\",\n    \"type\": \"webhooks.test_notification\",\n    \"event_id\": \"ac3ac95b-f97d-458c-a6e6-18981597e05f\",\n    \"created_at\": \"2022-07-13T20:30:59.037339943Z\",\n    \"data\": {\n      \"type\": \"webhooks\",\n      \"id\": \"bc368e64-01aa-407e-b46e-3231809b1129\"\n    }\n}", squareVectorSig, key, ErrNoMatch},
		{"empty signature key", squareVectorURL, squareVectorBody, squareVectorSig, [][]byte{{}}, ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNewSquare(t, Options{URL: tt.url})
			checkErr(t, verifyNoPanic(t, s, squareRequest([]byte(tt.body), tt.sig), tt.secrets, testNow), tt.want)
		})
	}
	t.Run("empty notification url", func(t *testing.T) {
		if _, err := NewSquare(Options{}); err == nil {
			t.Errorf("NewSquare(no url): got nil error, want one")
		}
	})
	t.Run("SignSquare reproduces the vector", func(t *testing.T) {
		if got := SignSquare(squareVectorURL, body, []byte(squareVectorKey)); got != squareVectorSig {
			t.Errorf("SignSquare: got %q, want %q", got, squareVectorSig)
		}
	})
	t.Run("identity of the vector", func(t *testing.T) {
		s := mustNewSquare(t, Options{URL: squareVectorURL})
		got, err := s.Identify(squareRequest(body, squareVectorSig))
		if err != nil {
			t.Fatal(err)
		}
		want := Identity{ID: "ac3ac95b-f97d-458c-a6e6-18981597e05f", Type: "webhooks.test_notification", Created: time.Date(2022, 7, 13, 20, 30, 59, 37339943, time.UTC)}
		if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) || got.Attributes["merchant_id"] != "MLEFBHHSJGVHD" {
			t.Errorf("Identify: got %+v, want %+v and merchant_id MLEFBHHSJGVHD", got, want)
		}
	})
}

// TestSquareCorpus signs every corpus body (no Square corpus exists; the
// signature is over raw bytes) and the Square events, and checks Identify
// on the latter against encoding/json.
func TestSquareCorpus(t *testing.T) {
	s := mustNewSquare(t, Options{URL: squareURL})
	events := []corpusFile{{name: "vector", body: []byte(squareVectorBody)}, {name: "payment.updated", body: []byte(squarePaymentUpdated)}}
	for _, f := range append(paddleAllCorpus(t), events...) {
		r := squareRequest(f.body)
		if err := s.Sign(&r, squareKey, testNow); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Header.Get(SquareHeader), squareB64Of(squareURL, f.body, squareKey); got != want {
			t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
		}
		if err := verifyNoPanic(t, s, r, squareSecrets, testNow); err != nil {
			t.Errorf("%s: Verify(signed body): got %v, want nil", f.name, err)
		}
		checkFlipsRejected(t, f.name, s, r, squareSecrets, testNow)
	}
	for _, f := range events {
		t.Run(f.name, func(t *testing.T) {
			var m struct {
				EventID    string    `json:"event_id"`
				Type       string    `json:"type"`
				CreatedAt  time.Time `json:"created_at"`
				MerchantID string    `json:"merchant_id"`
			}
			if err := json.Unmarshal(f.body, &m); err != nil {
				t.Fatal(err)
			}
			got, err := s.Identify(squareRequest(f.body))
			if err != nil {
				t.Fatalf("Identify: %v", err)
			}
			if got.ID != m.EventID || got.Type != m.Type || !got.Created.Equal(m.CreatedAt) || got.Attributes["merchant_id"] != m.MerchantID {
				t.Errorf("Identify: got %+v, want %+v", got, m)
			}
		})
	}
}

func TestSquareRotation(t *testing.T) {
	body := []byte(squarePaymentUpdated)
	s := mustNewSquare(t, Options{URL: squareURL})
	cur := squareB64Of(squareURL, body, squareKey)
	old := squareB64Of(squareURL, body, squareKeyOld)
	req := func(sig string) Request { return squareRequest(body, sig) }
	tests := []verifyCase{
		{"two keys, signed by current", req(cur), [][]byte{squareKey, squareKeyOld}, nil},
		{"two keys, signed by previous", req(old), [][]byte{squareKey, squareKeyOld}, nil},
		{"two keys reversed", req(cur), [][]byte{squareKeyOld, squareKey}, nil},
		{"retired key no longer accepted", req(old), squareSecrets, ErrNoMatch},
		{"no keys", req(cur), nil, ErrNoSecret},
		{"only an empty key", req(squareB64Of(squareURL, body, nil)), [][]byte{{}}, ErrNoSecret},
		{"empty key skipped, real one used", req(cur), [][]byte{nil, squareKey}, nil},
		{"empty key never matches empty-key signature", req(squareB64Of(squareURL, body, nil)), [][]byte{{}, squareKey}, ErrNoMatch},
	}
	runVerifyCases(t, s, testNow, 0, tests)
	t.Run("now plays no part", func(t *testing.T) {
		for _, now := range []time.Time{{}, time.Unix(0, 0), testNow.Add(100 * 365 * 24 * time.Hour)} {
			checkErr(t, s.Verify(squareRequest(body, cur), squareSecrets, now), nil)
		}
	})
}

func TestNewSquare(t *testing.T) {
	runOptionsCases(t, NewSquare, []optionsCase{
		{"https url", Options{URL: squareURL}, false},
		{"http url (local testing)", Options{URL: "http://localhost:3000/hook"}, false},
		{"url with query", Options{URL: "https://hooks.example.com/square?source=prod"}, false},
		{"no url", Options{}, true},
		{"url without scheme", Options{URL: "hooks.example.com/square"}, true},
		{"relative url", Options{URL: "/webhooks/square"}, true},
		{"ftp url", Options{URL: "ftp://hooks.example.com/square"}, true},
		{"url without host", Options{URL: "https:///square"}, true},
		{"url with fragment", Options{URL: "https://hooks.example.com/square#x"}, true},
		{"url with control character", Options{URL: "https://hooks.example.com/\x7f"}, true},
		{"tolerance set", Options{URL: squareURL, Tolerance: time.Minute}, true},
		{"hmac options set", Options{URL: squareURL, HMAC: HMACOptions{Encoding: "base64"}}, true},
	})
}

// squareCase is one request and the cause Verify must report.
type squareCase struct {
	name    string
	headers []string            // x-square-hmacsha256-signature values
	legacy  string              // x-square-signature value, if any
	body    func([]byte) []byte // changes the body after signing
	secrets [][]byte            // nil means squareSecrets
	want    error
}

// squareMalformedCases builds the table for body sent to squareURL; the
// fuzz test reuses it.
func squareMalformedCases(body []byte) []squareCase {
	sig := squareB64Of(squareURL, body, squareKey)
	sha1Sig := func() string {
		mac := hmac.New(sha1.New, squareKey)
		mac.Write([]byte(squareURL))
		mac.Write(body)
		return base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}()
	next := func(c byte) string { // the next character of the alphabet
		const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		return string(a[strings.IndexByte(a, c)+1])
	}
	return []squareCase{
		{name: "valid", headers: []string{sig}, want: nil},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", headers: []string{""}, want: ErrNotSigned},
		{name: "whitespace header", headers: []string{" \t"}, want: ErrNotSigned},
		{name: "two headers", headers: []string{sig, sig}, want: ErrMalformedHeader},
		{name: "only the legacy SHA-1 header, valid (no fallback)", legacy: sha1Sig, want: ErrNotSigned},
		{name: "legacy header next to a valid one", headers: []string{sig}, legacy: sha1Sig, want: nil},
		{name: "SHA-1 value in the SHA-256 header", headers: []string{sha1Sig}, want: ErrMalformedHeader},
		{name: "wrong secret", headers: []string{squareB64Of(squareURL, body, []byte("wrong"))}, want: ErrNoMatch},
		{name: "signed for another URL", headers: []string{squareB64Of(squareURL+"/", body, squareKey)}, want: ErrNoMatch},
		{name: "signed for the URL without https", headers: []string{squareB64Of(strings.TrimPrefix(squareURL, "https://"), body, squareKey)}, want: ErrNoMatch},
		{name: "signed over the body alone", headers: []string{squareB64Of("", body, squareKey)}, want: ErrNoMatch},
		{name: "truncated", headers: []string{sig[:43]}, want: ErrMalformedHeader},
		{name: "without padding", headers: []string{strings.TrimSuffix(sig, "=")}, want: ErrMalformedHeader},
		{name: "one character too long", headers: []string{sig + "A"}, want: ErrMalformedHeader},
		{name: "hex instead of base64", headers: []string{fmt.Sprintf("%x", []byte(sig[:32]))}, want: ErrMalformedHeader},
		{name: "url-safe alphabet", headers: []string{sig[:10] + "_" + sig[11:]}, want: ErrMalformedHeader},
		{name: "non-canonical last character", headers: []string{sig[:42] + next(sig[42]) + "="}, want: ErrMalformedHeader},
		{name: "sha256= prefix", headers: []string{"sha256=" + sig}, want: ErrMalformedHeader},
		{name: "leading space", headers: []string{" " + sig}, want: ErrMalformedHeader},
		{name: "trailing newline", headers: []string{sig + "\n"}, want: ErrMalformedHeader},
		{name: "unicode", headers: []string{strings.Repeat("é", 22)}, want: ErrMalformedHeader},
		{name: "over 8 KiB", headers: []string{strings.Repeat("A", 8<<10+1)}, want: ErrMalformedHeader},
		{name: "no usable key", headers: []string{sig}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "body truncated by one byte", headers: []string{sig}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", headers: []string{sig}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", headers: []string{sig}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body with the URL prepended", headers: []string{sig}, body: func(b []byte) []byte { return append([]byte(squareURL), b...) }, want: ErrNoMatch},
	}
}

func (tc squareCase) request(body []byte) Request {
	if tc.body != nil {
		body = tc.body(body)
	}
	r := squareRequest(body, tc.headers...)
	if tc.legacy != "" {
		r.Header.Set(SquareLegacyHeader, tc.legacy)
	}
	return r
}

func squareMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(squarePaymentUpdated)
	var cases []verifyCase
	for _, tc := range squareMalformedCases(body) {
		cases = append(cases, verifyCase{tc.name, tc.request(body), orSecrets(tc.secrets, squareSecrets), tc.want})
	}
	s := mustNewSquare(tb, Options{URL: squareURL})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       s,
		r:       signed(tb, s, jsonPost(body, nil), squareKey, testNow),
		secrets: squareSecrets,
		wrong:   [][]byte{squareKeyOld},
		sig:     signedField{header: SquareHeader},
		enc:     encBase64,
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestSquareVerifyMalformed(t *testing.T) { runMalformed(t, squareMalformedRuns(t)) }

// squareIdentifyCases is shared with the fuzz test as seeds; a zero want.ID
// means ErrInvalidPayload.
var squareIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"event_id":"e","type":"t"}]`},
	{name: "not JSON", body: `event_id=e`},
	{name: "trailing garbage", body: `{"event_id":"e","type":"t"} {}`},
	{name: "empty object", body: `{}`},
	{name: "missing event_id", body: `{"type":"payment.updated"}`},
	{name: "event_id a number", body: `{"event_id":7,"type":"payment.updated"}`},
	{name: "event_id 513 bytes", body: `{"event_id":"` + strings.Repeat("e", 513) + `","type":"t"}`},
	{name: "missing type", body: `{"event_id":"e"}`},
	{name: "empty type", body: `{"event_id":"e","type":""}`},
	{name: "type only in data", body: `{"event_id":"e","data":{"type":"payment"}}`},
	{name: "created_at not RFC 3339", body: `{"event_id":"e","type":"t","created_at":"2020-02-06 22:14:52"}`},
	{name: "created_at a number", body: `{"event_id":"e","type":"t","created_at":1581027292}`},
	{name: "minimal", body: `{"event_id":"e","type":"t"}`, want: Identity{ID: "e", Type: "t"}},
	{name: "merchant_id not a string is not kept", body: `{"event_id":"e","type":"t","merchant_id":5}`, want: Identity{ID: "e", Type: "t"}},
	{
		name: "vector",
		body: squareVectorBody,
		want: Identity{ID: "ac3ac95b-f97d-458c-a6e6-18981597e05f", Type: "webhooks.test_notification", Created: time.Date(2022, 7, 13, 20, 30, 59, 37339943, time.UTC), Attributes: map[string]string{"merchant_id": "MLEFBHHSJGVHD"}},
	},
}

func TestSquareIdentify(t *testing.T) {
	runIdentifyCases(t, mustNewSquare(t, Options{URL: squareURL}), squareIdentifyCases, func(body []byte) Request { return squareRequest(body) })
}

// ExampleSignSquare pins the value; it was computed with openssl
// (HMAC-SHA256 of the URL followed by the body, base64).
func ExampleSignSquare() {
	fmt.Println(SignSquare("https://example.com/webhooks/square", []byte(`{"event_id":"1","type":"payment.updated"}`), []byte("example-signature-key")))
	// Output: cy8qMyEVSeGswGfvdloFrwR9i/KisIFqH4sIz9VUiO4=
}

// Placeholders in a fuzzed header stand for the signature of the fuzzed
// body under squareKey and squareKeyOld.
const (
	squareCur = "{sig}"
	squareOld = "{old}"
)

func FuzzSquareVerify(f *testing.F) {
	f.Add(squareCur, []byte(squareVectorBody))
	f.Add(squareOld, []byte(squarePaymentUpdated))
	f.Add(squareCur+"\n"+squareOld, []byte(squarePaymentUpdated))
	body := []byte(squarePaymentUpdated)
	for _, tc := range squareMalformedCases(body) {
		h := strings.Join(tc.headers, "\n")
		if len(h) > 8<<10 {
			continue
		}
		b := changed(body, tc.body)
		h = strings.NewReplacer(squareB64Of(squareURL, b, squareKey), squareCur, squareB64Of(squareURL, b, squareKeyOld), squareOld).Replace(h)
		f.Add(h, b)
	}
	s := mustNewSquare(f, Options{URL: squareURL})
	secrets := [][]byte{squareKey, squareKeyOld}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		header = strings.NewReplacer(squareCur, squareB64Of(squareURL, body, squareKey), squareOld, squareB64Of(squareURL, body, squareKeyOld)).Replace(header)
		var values []string
		if header != "" {
			values = strings.Split(header, "\n")
		}
		r := squareRequest(body, values...)
		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		if len(values) != 1 || (values[0] != SignSquare(squareURL, body, squareKey) && values[0] != SignSquare(squareURL, body, squareKeyOld)) {
			t.Fatalf("Verify(%q): got nil, but the header is not SignSquare for a configured key", header)
		}
	})
}

func FuzzSquareIdentify(f *testing.F) {
	f.Add([]byte(squarePaymentUpdated))
	for _, tc := range squareIdentifyCases {
		f.Add([]byte(tc.body))
	}
	s := mustNewSquare(f, Options{URL: squareURL})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, s, squareRequest(body))
		if !ok {
			return
		}
		if got.ID == "" || got.Type == "" || len(got.ID) > MaxIdentity {
			t.Fatalf("Identify(%q): got %+v", body, got)
		}
	})
}

// BenchmarkSquare compares the scheme with a bare HMAC over the same bytes.
// Square's Go SDK (square-go-sdk) is not a dependency of this module.
func BenchmarkSquare(b *testing.B) {
	body := []byte(squarePaymentUpdated)
	r := squareRequest(body, SignSquare(squareURL, body, squareKey))
	url := []byte(squareURL)
	var sum [sha256.Size]byte
	benchScheme(b, mustNewSquare(b, Options{URL: squareURL}), r, squareSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, squareKey)
		mac.Write(url)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
