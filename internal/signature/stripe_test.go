package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"
)

// stripeCorpusDir is the project's copy of the Stripe corpus (see
// testdata/corpus/README.md).
const stripeCorpusDir = "../../testdata/corpus/stripe"

var (
	// testNow is the fixed clock of every assertion; it is 300 s after the
	// newest corpus event was created.
	testNow = time.Unix(1721954400, 0)
	// testTS is testNow as a Stripe-Signature timestamp.
	testTS = strconv.FormatInt(testNow.Unix(), 10)

	stripeSecret    = []byte("whsec_test_current_9f8e7d6c5b4a3f2e1d0c")
	stripeSecretOld = []byte("whsec_test_previous_0a1b2c3d4e5f6a7b8c9d")
	stripeSecrets   = [][]byte{stripeSecret}
)

// loadStripeCorpus returns every payload of the Stripe corpus, sorted by name.
func loadStripeCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	return loadCorpus(tb, stripeCorpusDir, "", 11)
}

// invoicePaid is the body most single-payload tests sign.
func invoicePaid(tb testing.TB) []byte {
	tb.Helper()
	return mustReadFile(tb, filepath.Join(stripeCorpusDir, "invoice.paid.json"))
}

func mustNewStripe(tb testing.TB, o Options) Scheme {
	tb.Helper()
	return mustNew(tb, func(o Options) (Scheme, error) { return New("stripe", o) }, o)
}

// stripeRequest builds a POST with one Stripe-Signature value per element
// of headers (none when headers is empty).
func stripeRequest(body []byte, headers ...string) Request {
	return jsonPost(body, map[string][]string{StripeHeader: headers})
}

// stripeHex is the v1 signature of body at the raw timestamp string ts,
// computed independently of the code under test.
func stripeHex(body, secret []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// wantIdentity decodes the identity from body without the code under test.
func wantIdentity(tb testing.TB, body []byte) Identity {
	tb.Helper()
	var m struct {
		ID      string      `json:"id"`
		Type    string      `json:"type"`
		Created json.Number `json:"created"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	n, err := m.Created.Int64()
	if err != nil {
		tb.Fatal(err)
	}
	return Identity{ID: m.ID, Type: m.Type, Created: time.Unix(n, 0)}
}

func TestStripeCorpus(t *testing.T) {
	s := mustNewStripe(t, Options{})
	for _, f := range loadStripeCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			header := SignStripe(f.body, stripeSecret, testNow)

			if err := s.Verify(stripeRequest(f.body, header), stripeSecrets, testNow); err != nil {
				t.Fatalf("Verify(signed body): got %v, want nil", err)
			}

			got, err := s.Identify(stripeRequest(f.body, header))
			if err != nil {
				t.Fatalf("Identify: %v", err)
			}
			want := wantIdentity(t, f.body)
			if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) {
				t.Errorf("Identify: got %+v, want %+v", got, want)
			}
			if !strings.HasPrefix(got.ID, "evt_") {
				t.Errorf("Identify: got id %q, want evt_ prefix", got.ID)
			}
			if want := strings.TrimSuffix(f.name, ".json"); got.Type != want {
				t.Errorf("Identify: got type %q, want %q (file name)", got.Type, want)
			}

			checkFlipsRejected(t, f.name, s, stripeRequest(f.body, header), stripeSecrets, testNow)
		})
	}
}

// TestStripeCrossCheckStripeGo checks the scheme against Stripe's own Go
// library in both directions.
func TestStripeCrossCheckStripeGo(t *testing.T) {
	s := mustNewStripe(t, Options{})
	for _, f := range loadStripeCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			t.Run("stripe-go signs", func(t *testing.T) {
				sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
					Payload:   f.body,
					Secret:    string(stripeSecret),
					Timestamp: testNow,
				})
				if err := s.Verify(stripeRequest(f.body, sp.Header), stripeSecrets, testNow); err != nil {
					t.Errorf("Verify(stripe-go header %q): got %v, want nil", sp.Header, err)
				}
				if got, want := sp.Header, SignStripe(f.body, stripeSecret, testNow); got != want {
					t.Errorf("header: got %q (stripe-go), want %q (SignStripe)", got, want)
				}
				err := s.Verify(stripeRequest(f.body, sp.Header), [][]byte{stripeSecretOld}, testNow)
				if !errors.Is(err, ErrNoMatch) {
					t.Errorf("Verify(stripe-go header, other secret): got %v, want %v", err, ErrNoMatch)
				}
			})
			t.Run("stripe-go verifies", func(t *testing.T) {
				// stripe-go reads the clock itself, so sign at the real time.
				header := SignStripe(f.body, stripeSecret, time.Now())
				if err := webhook.ValidatePayloadWithTolerance(f.body, header, string(stripeSecret), DefaultTolerance); err != nil {
					t.Errorf("ValidatePayloadWithTolerance(SignStripe header): got %v, want nil", err)
				}
				err := webhook.ValidatePayloadWithTolerance(flipByte(f.body, 0), header, string(stripeSecret), DefaultTolerance)
				if !errors.Is(err, webhook.ErrNoValidSignature) {
					t.Errorf("ValidatePayloadWithTolerance(flipped body): got %v, want %v", err, webhook.ErrNoValidSignature)
				}
			})
			t.Run("identity matches stripe-go", func(t *testing.T) {
				header := SignStripe(f.body, stripeSecret, testNow)
				ev, err := webhook.ConstructEventWithOptions(f.body, header, string(stripeSecret),
					webhook.ConstructEventOptions{IgnoreTolerance: true, IgnoreAPIVersionMismatch: true})
				if err != nil {
					t.Fatalf("ConstructEventWithOptions: %v", err)
				}
				got, err := s.Identify(stripeRequest(f.body, header))
				if err != nil {
					t.Fatalf("Identify: %v", err)
				}
				want := Identity{ID: ev.ID, Type: string(ev.Type), Created: time.Unix(ev.Created, 0)}
				if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) {
					t.Errorf("Identify: got %+v, want %+v (stripe-go)", got, want)
				}
			})
		})
	}
}

func TestStripeRotation(t *testing.T) {
	body := invoicePaid(t)
	cur := stripeHex(body, stripeSecret, testTS)
	old := stripeHex(body, stripeSecretOld, testTS)
	wrong := stripeHex(body, []byte("whsec_wrong"), testTS)
	v0 := stripeHex(body, stripeSecret, testTS) // a valid sha256 under another scheme name
	both := [][]byte{stripeSecret, stripeSecretOld}

	req := func(header string) Request { return stripeRequest(body, header) }
	tests := []verifyCase{
		{"two secrets, signed by current", req("t=" + testTS + ",v1=" + cur), both, nil},
		{"two secrets, signed by previous", req("t=" + testTS + ",v1=" + old), both, nil},
		{"two secrets reversed, signed by current", req("t=" + testTS + ",v1=" + cur), [][]byte{stripeSecretOld, stripeSecret}, nil},
		{"retired secret no longer accepted", req("t=" + testTS + ",v1=" + old), stripeSecrets, ErrNoMatch},
		{"two v1, wrong then right", req("t=" + testTS + ",v1=" + wrong + ",v1=" + cur), stripeSecrets, nil},
		{"two v1, right then wrong", req("t=" + testTS + ",v1=" + cur + ",v1=" + wrong), stripeSecrets, nil},
		{"two v1 from both secrets, one configured", req("t=" + testTS + ",v1=" + old + ",v1=" + cur), stripeSecrets, nil},
		{"two v1 both wrong", req("t=" + testTS + ",v1=" + wrong + ",v1=" + old), stripeSecrets, ErrNoMatch},
		{"only v0 with valid sha256 (no downgrade)", req("t=" + testTS + ",v0=" + v0), stripeSecrets, ErrNoMatch},
		{"valid v0 and wrong v1 (no downgrade)", req("t=" + testTS + ",v1=" + wrong + ",v0=" + v0), stripeSecrets, ErrNoMatch},
		{"no secrets (nil)", req("t=" + testTS + ",v1=" + cur), nil, ErrNoSecret},
		{"no secrets (empty)", req("t=" + testTS + ",v1=" + cur), [][]byte{}, ErrNoSecret},
		{"only an empty secret", req("t=" + testTS + ",v1=" + stripeHex(body, nil, testTS)), [][]byte{{}}, ErrNoSecret},
		{"only a nil secret", req("t=" + testTS + ",v1=" + stripeHex(body, nil, testTS)), [][]byte{nil}, ErrNoSecret},
		{"empty secret is skipped, real one used", req("t=" + testTS + ",v1=" + cur), [][]byte{{}, stripeSecret}, nil},
		{"empty secret never matches empty-key signature", req("t=" + testTS + ",v1=" + stripeHex(body, nil, testTS)), [][]byte{{}, stripeSecret}, ErrNoMatch},
	}
	s := mustNewStripe(t, Options{})
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestStripeTolerance(t *testing.T) {
	body := invoicePaid(t)
	tests := []toleranceCase{
		{"default, now", 0, 0, nil},
		{"default, exactly at the edge", 0, DefaultTolerance, nil},
		{"default, one second too old", 0, DefaultTolerance + time.Second, ErrTooOld},
		{"default, an hour old", 0, time.Hour, ErrTooOld},
		{"default, future at the edge", 0, -DefaultTolerance, nil},
		{"default, one second too far in the future", 0, -DefaultTolerance - time.Second, ErrTooNew},
		{"default, a day in the future", 0, -24 * time.Hour, ErrTooNew},
		{"30s, at the edge", 30 * time.Second, 30 * time.Second, nil},
		{"30s, one second too old", 30 * time.Second, 31 * time.Second, ErrTooOld},
		{"30s, future at the edge", 30 * time.Second, -30 * time.Second, nil},
		{"30s, one second too far in the future", 30 * time.Second, -31 * time.Second, ErrTooNew},
		{"1h, 59m old", time.Hour, 59 * time.Minute, nil},
		{"1h, one second too old", time.Hour, time.Hour + time.Second, ErrTooOld},
		{"1ns, now", time.Nanosecond, 0, nil},
		{"1ns, one second old", time.Nanosecond, time.Second, ErrTooOld},
	}
	runToleranceCases(t, stripeSecrets, tests, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		return mustNewStripe(t, Options{Tolerance: tolerance}), stripeRequest(body, SignStripe(body, stripeSecret, at))
	})

	// The timestamp is checked before the signature: an expired header with a
	// wrong signature reports its age.
	t.Run("too old and wrong signature", func(t *testing.T) {
		s := mustNewStripe(t, Options{})
		header := SignStripe(body, stripeSecretOld, testNow.Add(-time.Hour))
		err := verifyNoPanic(t, s, stripeRequest(body, header), stripeSecrets, testNow)
		checkErr(t, err, ErrTooOld)
	})
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		o       Options
		wantErr bool
	}{
		{"stripe, defaults", "stripe", Options{}, false},
		{"stripe, custom tolerance", "stripe", Options{Tolerance: time.Minute}, false},
		{"stripe, negative tolerance", "stripe", Options{Tolerance: -time.Second}, true},
		{"stripe, negative 1ns tolerance", "stripe", Options{Tolerance: -1}, true},
		{"unknown kind", "ebay", Options{}, true},
		{"empty kind", "", Options{}, true},
		{"kind is case-sensitive", "Stripe", Options{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.kind, tt.o)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("New(%q, %+v): got error %v, want error %t", tt.kind, tt.o, err, tt.wantErr)
			}
			if err == nil && s == nil {
				t.Fatalf("New(%q, %+v): got nil scheme and nil error", tt.kind, tt.o)
			}
			if err != nil && s != nil {
				t.Errorf("New(%q, %+v): got scheme %T with error %v, want nil", tt.kind, tt.o, s, err)
			}
		})
	}
	t.Run("kinds lists stripe, sorted", func(t *testing.T) {
		got := Kinds()
		if !slices.Contains(got, "stripe") || !slices.IsSorted(got) {
			t.Errorf("Kinds(): got %q, want a sorted list containing \"stripe\"", got)
		}
	})
}

// stripeCase is one Stripe-Signature input and the cause Verify must report.
type stripeCase struct {
	name    string
	headers []string            // Stripe-Signature values; none when empty
	body    func([]byte) []byte // changes the signed body; nil keeps it
	secrets [][]byte            // nil means stripeSecrets
	want    error
}

// stripeMalformedCases builds the table of bad (and a few surprising but
// valid) headers for body, signed at testNow. The fuzz test reuses it.
func stripeMalformedCases(body []byte) []stripeCase {
	sig := stripeHex(body, stripeSecret, testTS)
	ok := "t=" + testTS + ",v1=" + sig
	sigAt := func(ts string) string { return "t=" + ts + ",v1=" + stripeHex(body, stripeSecret, ts) }
	wrong := stripeHex(body, []byte("whsec_wrong"), testTS)
	v1s := func(n int, last string) string {
		h := "t=" + testTS
		for range n - 1 {
			h += ",v1=" + wrong
		}
		return h + ",v1=" + last
	}
	// pad fills an unknown key so that the header is exactly n bytes long.
	pad := func(h string, n int) string {
		return h + ",x=" + strings.Repeat("a", n-len(h)-len(",x="))
	}
	trunc := func(b []byte) []byte { return b[:len(b)-1] }

	return []stripeCase{
		// Presence.
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", headers: []string{""}, want: ErrNotSigned},
		{name: "two headers", headers: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "two headers, second different", headers: []string{ok, sigAt("1721954401")}, want: ErrMalformedHeader},

		// Timestamp.
		{name: "t=abc", headers: []string{"t=abc,v1=" + sig}, want: ErrMalformedHeader},
		{name: "t= empty", headers: []string{"t=,v1=" + sig}, want: ErrMalformedHeader},
		{name: "t=-1", headers: []string{sigAt("-1")}, want: ErrMalformedHeader},
		{name: "t=+ts", headers: []string{sigAt("+" + testTS)}, want: ErrMalformedHeader},
		{name: "t arabic-indic digits", headers: []string{sigAt("١٧٢١٩٥٤٤٠٠")}, want: ErrMalformedHeader},
		{name: "t fullwidth digits", headers: []string{sigAt("１７２１９５４４００")}, want: ErrMalformedHeader},
		{name: "t fullwidth one", headers: []string{sigAt("１")}, want: ErrMalformedHeader},
		{name: "t leading space", headers: []string{sigAt(" " + testTS)}, want: ErrMalformedHeader},
		{name: "t trailing space", headers: []string{sigAt(testTS + " ")}, want: ErrMalformedHeader},
		{name: "t decimal", headers: []string{sigAt(testTS + ".0")}, want: ErrMalformedHeader},
		{name: "t exponent", headers: []string{sigAt("1.7e9")}, want: ErrMalformedHeader},
		{name: "t hex", headers: []string{sigAt("0x66a33c60")}, want: ErrMalformedHeader},
		{name: "t leading zero", headers: []string{sigAt("0" + testTS)}, want: ErrMalformedHeader},
		{name: "t=0", headers: []string{sigAt("0")}, want: ErrTooOld},
		{name: "t far future 11 digits", headers: []string{sigAt("99999999999")}, want: ErrTooNew},
		{name: "t far future 12 digits", headers: []string{sigAt("999999999999")}, want: ErrTooNew},
		{name: "t milliseconds 13 digits", headers: []string{sigAt(testTS + "000")}, want: ErrMalformedHeader},
		{name: "t overflows int64", headers: []string{sigAt("99999999999999999999")}, want: ErrMalformedHeader},
		{name: "t missing", headers: []string{"v1=" + sig}, want: ErrMalformedHeader},
		{name: "t repeated", headers: []string{"t=" + testTS + ",t=" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "t repeated, first empty", headers: []string{"t=,t=" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "t uppercase key", headers: []string{"T=" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "t double equals", headers: []string{"t==" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "t with NUL", headers: []string{sigAt(testTS + "\x00")}, want: ErrMalformedHeader},
		{name: "t invalid utf-8", headers: []string{sigAt("\xff\xfe")}, want: ErrMalformedHeader},
		{name: "t not the signed one", headers: []string{"t=1721954401,v1=" + sig}, want: ErrNoMatch},

		// Signatures.
		{name: "v1 too short", headers: []string{"t=" + testTS + ",v1=" + sig[:62]}, want: ErrNoMatch},
		{name: "v1 too long", headers: []string{"t=" + testTS + ",v1=" + sig + "00"}, want: ErrNoMatch},
		{name: "v1 odd length", headers: []string{"t=" + testTS + ",v1=" + sig[:63]}, want: ErrNoMatch},
		{name: "v1 non-hex", headers: []string{"t=" + testTS + ",v1=" + sig[:63] + "g"}, want: ErrNoMatch},
		{name: "v1 uppercase hex is accepted (as stripe-go does)", headers: []string{"t=" + testTS + ",v1=" + strings.ToUpper(sig)}, want: nil},
		{name: "v1 empty", headers: []string{"t=" + testTS + ",v1="}, want: ErrNoMatch},
		{name: "v1 trailing equals", headers: []string{ok + "="}, want: ErrNoMatch},
		{name: "v1 uppercase key", headers: []string{"t=" + testTS + ",V1=" + sig}, want: ErrNoMatch},
		{name: "v1 missing", headers: []string{"t=" + testTS}, want: ErrNoMatch},
		{name: "only v0", headers: []string{"t=" + testTS + ",v0=" + sig}, want: ErrNoMatch},
		{name: "8 v1, last right", headers: []string{v1s(8, sig)}, want: nil},
		{name: "9 v1", headers: []string{v1s(9, sig)}, want: ErrMalformedHeader},
		{name: "20 v1", headers: []string{v1s(20, wrong)}, want: ErrMalformedHeader},
		{name: "9 short v1 do not count", headers: []string{"t=" + testTS + strings.Repeat(",v1=ab", 9) + ",v1=" + sig}, want: nil},
		{name: "wrong secret", headers: []string{"t=" + testTS + ",v1=" + wrong}, want: ErrNoMatch},

		// Structure.
		{name: "missing '='", headers: []string{"t=" + testTS + ",v1"}, want: ErrMalformedHeader},
		{name: "no '=' at all", headers: []string{"garbage"}, want: ErrMalformedHeader},
		{name: "trailing comma", headers: []string{ok + ","}, want: ErrMalformedHeader},
		{name: "leading comma", headers: []string{"," + ok}, want: ErrMalformedHeader},
		{name: "double comma", headers: []string{"t=" + testTS + ",,v1=" + sig}, want: ErrMalformedHeader},
		{name: "only a comma", headers: []string{","}, want: ErrMalformedHeader},
		{name: "only commas", headers: []string{",,,,"}, want: ErrMalformedHeader},
		{name: "semicolon separator", headers: []string{"t=" + testTS + ";v1=" + sig}, want: ErrMalformedHeader},
		{name: "space after comma", headers: []string{"t=" + testTS + ", v1=" + sig}, want: ErrNoMatch},
		{name: "space before pair", headers: []string{" " + ok}, want: ErrMalformedHeader},
		{name: "space around '='", headers: []string{"t = " + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "newline inside", headers: []string{"t=" + testTS + "\n,v1=" + sig}, want: ErrMalformedHeader},
		{name: "reversed order", headers: []string{"v1=" + sig + ",t=" + testTS}, want: nil},
		{name: "unknown pairs ignored", headers: []string{"v2=abc,t=" + testTS + ",v1=" + sig + ",scheme=x"}, want: nil},
		{name: "empty pair '=' ignored (as stripe-go does)", headers: []string{"=," + ok}, want: nil},
		{name: "header exactly maxHeader bytes", headers: []string{pad(ok, maxHeader)}, want: nil},
		{name: "header maxHeader+1 bytes", headers: []string{pad(ok, maxHeader+1)}, want: ErrMalformedHeader},
		{name: "header 1 MiB", headers: []string{pad(ok, 1<<20)}, want: ErrMalformedHeader},

		// Body.
		{name: "body truncated by one byte", headers: []string{ok}, body: trunc, want: ErrNoMatch},
		{name: "body with appended newline", headers: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", headers: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body compacted", headers: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Compact(&c, b); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
		{name: "body CRLF line endings", headers: []string{ok}, body: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }, want: ErrNoMatch},
	}
}

// stripeMalformedRuns is the Stripe table followed by the generic variants.
func stripeMalformedRuns(tb testing.TB) []malformedRun {
	body := invoicePaid(tb)
	var cases []verifyCase
	for _, tc := range stripeMalformedCases(body) {
		r := stripeRequest(changed(body, tc.body), tc.headers...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, stripeSecrets), tc.want})
	}
	s := mustNewStripe(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        s,
		r:        stripeRequest(body, SignStripe(body, stripeSecret, testNow)),
		secrets:  stripeSecrets,
		sig:      signedField{header: StripeHeader, prefix: "v1=", sep: ','},
		enc:      encHex,
		versions: []string{"v0=", "v2=", "v1a="},
		ts:       &signedField{header: StripeHeader, prefix: "t=", sep: ','},
		drop: map[string]string{
			// Two copies of a valid header joined by ", ": the second
			// copy's " t" key is unknown and ignored (stripe-go does the
			// same), leaving one t and two identical, valid v1.
			"Stripe-Signature comma-joined duplicate": "stripe-go parses it the same way; both v1 are genuine",
		},
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestStripeVerifyMalformed(t *testing.T) { runMalformed(t, stripeMalformedRuns(t)) }

// TestStripeHeaderName checks that the header is found under any spelling a
// net/http server canonicalizes.
func TestStripeHeaderName(t *testing.T) {
	body := invoicePaid(t)
	header := SignStripe(body, stripeSecret, testNow)
	s := mustNewStripe(t, Options{})
	for _, name := range []string{"Stripe-Signature", "stripe-signature", "STRIPE-SIGNATURE"} {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			h.Set(name, header)
			err := s.Verify(Request{Method: http.MethodPost, Header: h, Body: body}, stripeSecrets, testNow)
			checkErr(t, err, nil)
		})
	}
	t.Run("non-canonical map key is not looked up", func(t *testing.T) {
		// Request.Header must hold canonical names; the edge adapter ensures it.
		h := http.Header{"stripe-signature": {header}}
		err := s.Verify(Request{Method: http.MethodPost, Header: h, Body: body}, stripeSecrets, testNow)
		checkErr(t, err, ErrNotSigned)
	})
}

// stripeIdentifyCases is shared with the fuzz test as seeds.
var stripeIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "whitespace", body: " \n"},
	{name: "null", body: `null`},
	{name: "array", body: `[]`},
	{name: "array of event", body: `[{"id":"evt_1","object":"event","type":"invoice.paid"}]`},
	{name: "string", body: `"str"`},
	{name: "number", body: `42`},
	{name: "empty object", body: `{}`},
	{name: "not JSON", body: `id=evt_1&type=invoice.paid`},
	{name: "truncated JSON", body: `{"id":"evt_1","object":"event","type":"invoice.paid"`},
	{name: "trailing garbage", body: `{"id":"evt_1","object":"event","type":"invoice.paid"} x`},
	{name: "missing id", body: `{"object":"event","type":"invoice.paid","created":1721954100}`},
	{name: "empty id", body: `{"id":"","object":"event","type":"invoice.paid","created":1721954100}`},
	{name: "null id", body: `{"id":null,"object":"event","type":"invoice.paid","created":1721954100}`},
	{name: "id not a string", body: `{"id":123,"object":"event","type":"invoice.paid","created":1721954100}`},
	{name: "id an object", body: `{"id":{"a":1},"object":"event","type":"invoice.paid"}`},
	{name: "missing type", body: `{"id":"evt_1","object":"event","created":1721954100}`},
	{name: "empty type", body: `{"id":"evt_1","object":"event","type":"","created":1721954100}`},
	{name: "type not a string", body: `{"id":"evt_1","object":"event","type":["invoice.paid"]}`},
	{name: "object invoice (not an event)", body: `{"id":"in_1","object":"invoice","type":"invoice.paid","created":1721954100}`},
	{name: "object empty (not an event)", body: `{"id":"evt_1","object":"","type":"invoice.paid","created":1721954100}`},
	{name: "object not a string", body: `{"id":"evt_1","object":1,"type":"invoice.paid"}`},
	{name: "created bad string", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":"yesterday"}`},
	{name: "created numeric string", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":"1721954100"}`},
	{name: "created float", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":1721954100.5}`},
	{name: "created exponent", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":1.7e9}`},
	{name: "created huge", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":99999999999999999999}`},
	{name: "created bool", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":true}`},
	{name: "created object", body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":{}}`},

	{
		name: "v1 event",
		body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":1721954100}`,
		want: Identity{ID: "evt_1", Type: "invoice.paid", Created: time.Unix(1721954100, 0)},
	},
	{
		name: "nested object id is not the event id",
		body: `{"id":"evt_1","object":"event","data":{"object":{"id":"in_1","object":"invoice"}},"type":"invoice.paid","created":1721954100}`,
		want: Identity{ID: "evt_1", Type: "invoice.paid", Created: time.Unix(1721954100, 0)},
	},
	{
		name: "object missing",
		body: `{"id":"evt_1","type":"invoice.paid","created":1721954100}`,
		want: Identity{ID: "evt_1", Type: "invoice.paid", Created: time.Unix(1721954100, 0)},
	},
	{
		name: "created missing",
		body: `{"id":"evt_1","object":"event","type":"invoice.paid"}`,
		want: Identity{ID: "evt_1", Type: "invoice.paid"},
	},
	{
		name: "created null",
		body: `{"id":"evt_1","object":"event","type":"invoice.paid","created":null}`,
		want: Identity{ID: "evt_1", Type: "invoice.paid"},
	},
	{
		name: "v2 thin event notification",
		body: `{"id":"evt_test_65R9Ijk8dD2Y1aPmCbb16SbWVvV7XSv2I9jCjRkJCH3LSW","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2024-09-26T21:02:14.511Z","related_object":{"id":"mtr_test_61RCqcsk0i7Cz4WgX41D9xOoBQ1a0qTE","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61RCqcsk0i7Cz4WgX41D9xOoBQ1a0qTE"}}`,
		want: Identity{
			ID:      "evt_test_65R9Ijk8dD2Y1aPmCbb16SbWVvV7XSv2I9jCjRkJCH3LSW",
			Type:    "v1.billing.meter.error_report_triggered",
			Created: time.Date(2024, 9, 26, 21, 2, 14, 511_000_000, time.UTC),
		},
	},
}

func TestStripeIdentify(t *testing.T) {
	runIdentifyCases(t, mustNewStripe(t, Options{}), stripeIdentifyCases, func(body []byte) Request { return stripeRequest(body) })
}

// ExampleSignStripe pins the header format; the value was computed with
// openssl (HMAC-SHA256 of "1721954400.{\"id\":\"evt_1\"}").
func ExampleSignStripe() {
	fmt.Println(SignStripe([]byte(`{"id":"evt_1"}`), []byte("whsec_example"), time.Unix(1721954400, 0)))
	// Output: t=1721954400,v1=bd0d45e2a129424df6aa824b1c0ac9e9fe5b54250846c8e276c9388d7e77a990
}

func TestStripeIdentifyOverlong(t *testing.T) {
	s, err := NewStripe(Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", MaxIdentity+1)
	for _, body := range []string{
		`{"id":"evt_` + long + `","object":"event","type":"invoice.paid"}`,
		`{"id":"evt_1","object":"event","type":"` + long + `"}`,
	} {
		if _, err := s.Identify(Request{Body: []byte(body)}); !errors.Is(err, ErrInvalidPayload) {
			t.Errorf("got %v, want ErrInvalidPayload for an id or type over %d bytes", err, MaxIdentity)
		}
	}
	ok := `{"id":"evt_` + strings.Repeat("x", MaxIdentity-4) + `","object":"event","type":"invoice.paid"}`
	if _, err := s.Identify(Request{Body: []byte(ok)}); err != nil {
		t.Errorf("id of exactly %d bytes: got %v, want nil", MaxIdentity, err)
	}
}
