package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var (
	hmacSecret    = []byte("generic-hmac-test-secret-current-5d4c")
	hmacSecretOld = []byte("generic-hmac-test-secret-previous-8e2a")
	hmacSecrets   = [][]byte{hmacSecret}
	// hmacTS is testNow as unix seconds.
	hmacTS = strconv.FormatInt(testNow.Unix(), 10)
)

// hmacStyle is a provider configured through the generic scheme, with the
// standard library's own rendering of its signature.
type hmacStyle struct {
	name string
	o    HMACOptions
	// sign renders the header value for body at ts with the standard
	// library alone.
	sign func(secret, body []byte, ts string) string
}

func hmacStdlib(h func() hash.Hash, secret []byte, parts ...[]byte) []byte {
	m := hmac.New(h, secret)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// hmacStyles reproduce GitHub, Shopify and Slack signing, and the other
// algorithm and encoding choices.
var hmacStyles = []hmacStyle{
	{
		name: "github",
		o: HMACOptions{
			Header: "X-Hub-Signature-256", Prefix: "sha256=",
			IDHeader: "X-GitHub-Delivery", TypeHeader: "X-GitHub-Event",
		},
		sign: func(secret, body []byte, _ string) string {
			return "sha256=" + hex.EncodeToString(hmacStdlib(sha256.New, secret, body))
		},
	},
	{
		name: "shopify",
		o: HMACOptions{
			Header: "X-Shopify-Hmac-Sha256", Algorithm: "sha256", Encoding: "base64",
			IDHeader: "X-Shopify-Event-Id", TypeHeader: "X-Shopify-Topic",
		},
		sign: func(secret, body []byte, _ string) string {
			return base64.StdEncoding.EncodeToString(hmacStdlib(sha256.New, secret, body))
		},
	},
	{
		name: "slack",
		o: HMACOptions{
			Header: "X-Slack-Signature", Prefix: "v0=",
			TimestampHeader: "X-Slack-Request-Timestamp", Template: "v0:{timestamp}:{body}",
			IDPath: "event_id", TypePath: "event.type",
		},
		sign: func(secret, body []byte, ts string) string {
			return "v0=" + hex.EncodeToString(hmacStdlib(sha256.New, secret, []byte("v0:"+ts+":"), body))
		},
	},
	{
		name: "stripe-like template, sha512 base64, ids from the body",
		o: HMACOptions{
			Header: "X-Signature", Algorithm: "sha512", Encoding: "base64",
			TimestampHeader: "X-Timestamp", Template: "{timestamp}.{body}",
			IDPath: "id", TypePath: "type",
		},
		sign: func(secret, body []byte, ts string) string {
			return base64.StdEncoding.EncodeToString(hmacStdlib(sha512.New, secret, []byte(ts+"."), body))
		},
	},
	{
		name: "legacy sha1 hex, body then timestamp",
		o: HMACOptions{
			Header: "X-Sig", Algorithm: "sha1", Prefix: "sha1=",
			TimestampHeader: "X-Sent-At", Template: "{body}|{timestamp}",
			IDPath: "data.object.id",
		},
		sign: func(secret, body []byte, ts string) string {
			return "sha1=" + hex.EncodeToString(hmacStdlib(sha1.New, secret, body, []byte("|"+ts)))
		},
	},
}

func mustNewHMAC(tb testing.TB, o HMACOptions) *HMAC {
	tb.Helper()
	return mustNew(tb, NewHMAC, Options{HMAC: o})
}

// hmacRequest builds a POST of body signed by style st at ts (no signature
// when sig is ""), with delivery headers the header-based styles read.
func hmacRequest(st hmacStyle, body []byte, sig, ts string) Request {
	h := http.Header{"Content-Type": {"application/json"}}
	if sig != "" {
		h.Set(st.o.Header, sig)
	}
	if st.o.TimestampHeader != "" {
		h.Set(st.o.TimestampHeader, ts)
	}
	for _, name := range []string{st.o.IDHeader, st.o.TypeHeader} {
		if name != "" {
			h.Set(name, "hdr-"+name)
		}
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// hmacCorpus returns every JSON payload under the corpus root.
func hmacCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	return walkCorpus(tb, corpusDir, 11)
}

// hmacWantField reads a dotted path with encoding/json: a non-empty string
// or an integer, else ok is false.
func hmacWantField(body []byte, path string) (string, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "", false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[k]
	}
	switch x := v.(type) {
	case string:
		return x, x != "" && len(x) <= 512
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// hmacWantIdentity is the identity a style must extract from r, computed
// without the code under test; ok is false when it must be refused.
func hmacWantIdentity(st hmacStyle, r Request) (Identity, bool) {
	want := Identity{Type: "webhook"}
	var ok bool
	if st.o.IDHeader != "" {
		want.ID = r.Header.Get(st.o.IDHeader)
		ok = want.ID != ""
	} else {
		want.ID, ok = hmacWantField(r.Body, st.o.IDPath)
	}
	switch {
	case st.o.TypeHeader != "":
		want.Type = r.Header.Get(st.o.TypeHeader)
	case st.o.TypePath != "":
		var tok bool
		want.Type, tok = hmacWantField(r.Body, st.o.TypePath)
		ok = ok && tok
	}
	return want, ok
}

// TestHMACPublishedVectors reproduces GitHub's and Slack's documented
// examples with the generic scheme.
func TestHMACPublishedVectors(t *testing.T) {
	t.Run("github docs", func(t *testing.T) {
		// "Validating webhook deliveries": secret and payload from GitHub's
		// guide, and the X-Hub-Signature-256 it lists.
		st := hmacStyles[0]
		s := mustNewHMAC(t, st.o)
		body := []byte("Hello, World!")
		const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
		secret := [][]byte{[]byte("It's a Secret to Everybody")}
		checkErr(t, verifyNoPanic(t, s, hmacRequest(st, body, want, ""), secret, testNow), nil)
		if got := st.sign(secret[0], body, ""); got != want {
			t.Errorf("stdlib: got %q, want %q", got, want)
		}
	})
	t.Run("slack docs", func(t *testing.T) {
		// "Verifying requests from Slack", as python-slack-sdk's tests pin
		// it (also testdata/corpus/slack/signature-vector.json).
		v := struct{ Secret, Timestamp, Body, Signature string }{
			Secret:    "8f742231b10e8888abcd99yyyzzz85a5",
			Timestamp: "1531420618",
			Body:      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
			Signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
		}
		st := hmacStyles[2]
		s := mustNewHMAC(t, st.o)
		ts, _ := strconv.ParseInt(v.Timestamp, 10, 64)
		r := hmacRequest(st, []byte(v.Body), v.Signature, v.Timestamp)
		checkErr(t, verifyNoPanic(t, s, r, [][]byte{[]byte(v.Secret)}, time.Unix(ts, 0)), nil)
		checkErr(t, verifyNoPanic(t, s, r, [][]byte{[]byte(v.Secret)}, time.Unix(ts, 0).Add(6*time.Minute)), ErrTooOld)
		r2 := Request{Body: []byte(v.Body)}
		if err := s.Sign(&r2, []byte(v.Secret), time.Unix(ts, 0)); err != nil {
			t.Fatal(err)
		}
		if got := r2.Header.Get(st.o.Header); got != v.Signature {
			t.Errorf("Sign: got %q, want %q", got, v.Signature)
		}
	})
}

// TestHMACCorpus signs every corpus payload in every style, checks Verify,
// Sign, Identify and that changed bytes are a mismatch.
func TestHMACCorpus(t *testing.T) {
	files := hmacCorpus(t)
	for _, st := range hmacStyles {
		t.Run(st.name, func(t *testing.T) {
			s := mustNewHMAC(t, st.o)
			identified := 0
			for _, f := range files {
				sig := st.sign(hmacSecret, f.body, hmacTS)
				r := hmacRequest(st, f.body, sig, hmacTS)
				if err := s.Verify(r, hmacSecrets, testNow); err != nil {
					t.Fatalf("%s: Verify: got %v, want nil", f.name, err)
				}
				r2 := Request{Body: f.body}
				if err := s.Sign(&r2, hmacSecret, testNow); err != nil {
					t.Fatal(err)
				}
				if got := r2.Header.Get(st.o.Header); got != sig {
					t.Fatalf("%s: Sign: got %q, want %q (stdlib)", f.name, got, sig)
				}
				checkFlipsRejected(t, f.name, s, r, hmacSecrets, testNow)
				got, err := s.Identify(r)
				want, ok := hmacWantIdentity(st, r)
				if !ok {
					if !errors.Is(err, ErrInvalidPayload) {
						t.Errorf("%s: Identify: got %+v, %v; want %v", f.name, got, err, ErrInvalidPayload)
					}
					continue
				}
				identified++
				if err != nil || got.ID != want.ID || got.Type != want.Type {
					t.Errorf("%s: Identify: got %+v, %v; want %+v", f.name, got, err, want)
				}
			}
			if identified == 0 {
				t.Errorf("no corpus file yields an identity in this style")
			}
		})
	}
}

func TestHMACRotation(t *testing.T) {
	body := invoicePaid(t)
	st := hmacStyles[0]
	cur := st.sign(hmacSecret, body, "")
	old := st.sign(hmacSecretOld, body, "")
	both := [][]byte{hmacSecret, hmacSecretOld}
	req := func(sig string) Request { return hmacRequest(st, body, sig, "") }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"two secrets reversed", req(cur), [][]byte{hmacSecretOld, hmacSecret}, nil},
		{"retired secret no longer accepted", req(old), hmacSecrets, ErrNoMatch},
		{"no secrets", req(cur), nil, ErrNoSecret},
		{"only an empty secret", req(st.sign(nil, body, "")), [][]byte{{}}, ErrNoSecret},
		{"empty secret never matches empty-key signature", req(st.sign(nil, body, "")), [][]byte{{}, hmacSecret}, ErrNoMatch},
	}
	s := mustNewHMAC(t, st.o)
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestHMACTolerance(t *testing.T) {
	body := invoicePaid(t)
	st := hmacStyles[2]
	tests := append(toleranceEdges(DefaultTolerance), []toleranceCase{
		{"1m, 61s old", time.Minute, 61 * time.Second, ErrTooOld},
		{"1m, 61s ahead", time.Minute, -61 * time.Second, ErrTooNew},
		{"1h, 59m old", time.Hour, 59 * time.Minute, nil},
	}...)
	runToleranceCases(t, hmacSecrets, tests, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		s := mustNew(t, NewHMAC, Options{HMAC: st.o, Tolerance: tolerance})
		ts := strconv.FormatInt(at.Unix(), 10)
		return s, hmacRequest(st, body, st.sign(hmacSecret, body, ts), ts)
	})
	t.Run("no timestamp header configured: no tolerance", func(t *testing.T) {
		s := mustNewHMAC(t, hmacStyles[0].o)
		r := hmacRequest(hmacStyles[0], body, hmacStyles[0].sign(hmacSecret, body, ""), "")
		checkErr(t, verifyNoPanic(t, s, r, hmacSecrets, testNow.Add(100*365*24*time.Hour)), nil)
	})
}

func TestNewHMAC(t *testing.T) {
	base := HMACOptions{Header: "X-Sig", IDPath: "id"}
	with := func(f func(*HMACOptions)) Options {
		o := base
		f(&o)
		return Options{HMAC: o}
	}
	tests := []struct {
		name  string
		o     Options
		field string // the field the error must name; "" means valid
	}{
		{"minimal", Options{HMAC: base}, ""},
		{"every style", Options{HMAC: hmacStyles[2].o, Tolerance: time.Minute}, ""},
		{"sha1", with(func(o *HMACOptions) { o.Algorithm = "sha1" }), ""},
		{"sha512 base64", with(func(o *HMACOptions) { o.Algorithm, o.Encoding = "sha512", "base64" }), ""},
		{"template with literal text only around body", with(func(o *HMACOptions) { o.Template = "prefix:{body}:suffix" }), ""},
		{"id header, type path", with(func(o *HMACOptions) { o.IDPath, o.IDHeader, o.TypePath = "", "X-Id", "a.b" }), ""},

		{"missing header", with(func(o *HMACOptions) { o.Header = "" }), "Header"},
		{"blank header", with(func(o *HMACOptions) { o.Header = "  " }), "Header"},
		{"header with a space", with(func(o *HMACOptions) { o.Header = "X Sig" }), "Header"},
		{"header with a colon", with(func(o *HMACOptions) { o.Header = "X-Sig:" }), "Header"},
		{"algorithm md5", with(func(o *HMACOptions) { o.Algorithm = "md5" }), "Algorithm"},
		{"algorithm upper case", with(func(o *HMACOptions) { o.Algorithm = "SHA256" }), "Algorithm"},
		{"algorithm sha-256", with(func(o *HMACOptions) { o.Algorithm = "sha-256" }), "Algorithm"},
		{"encoding base32", with(func(o *HMACOptions) { o.Encoding = "base32" }), "Encoding"},
		{"encoding base64url", with(func(o *HMACOptions) { o.Encoding = "base64url" }), "Encoding"},
		{"template without body", with(func(o *HMACOptions) { o.Template = "static" }), "Template"},
		{"template with body twice", with(func(o *HMACOptions) { o.Template = "{body}{body}" }), "Template"},
		{"template with unknown placeholder", with(func(o *HMACOptions) { o.Template = "{ts}.{body}" }), "Template"},
		{"template with upper-case placeholder", with(func(o *HMACOptions) { o.Template = "{Body}" }), "Template"},
		{"template with stray brace", with(func(o *HMACOptions) { o.Template = "{body}}" }), "Template"},
		{"template with unclosed brace", with(func(o *HMACOptions) { o.Template = "{body}{" }), "Template"},
		{"template timestamp without header", with(func(o *HMACOptions) { o.Template = "{timestamp}.{body}" }), "Template"},
		{"template timestamp twice", with(func(o *HMACOptions) {
			o.Template, o.TimestampHeader = "{timestamp}{body}{timestamp}", "X-Ts"
		}), "Template"},
		{"timestamp header not signed", with(func(o *HMACOptions) { o.TimestampHeader = "X-Ts" }), "TimestampHeader"},
		{"timestamp header invalid", with(func(o *HMACOptions) { o.TimestampHeader, o.Template = "X Ts", "{timestamp}{body}" }), "TimestampHeader"},
		{"no id", with(func(o *HMACOptions) { o.IDPath = "" }), "IDHeader"},
		{"both ids", with(func(o *HMACOptions) { o.IDHeader = "X-Id" }), "IDPath"},
		{"both types", with(func(o *HMACOptions) { o.TypeHeader, o.TypePath = "X-Type", "type" }), "TypePath"},
		{"id header invalid", with(func(o *HMACOptions) { o.IDPath, o.IDHeader = "", "X Id" }), "IDHeader"},
		{"type header invalid", with(func(o *HMACOptions) { o.TypeHeader = "X(Type)" }), "TypeHeader"},
		{"id path empty segment", with(func(o *HMACOptions) { o.IDPath = "data..id" }), "IDPath"},
		{"id path leading dot", with(func(o *HMACOptions) { o.IDPath = ".id" }), "IDPath"},
		{"type path trailing dot", with(func(o *HMACOptions) { o.TypePath = "type." }), "TypePath"},
		{"negative tolerance", Options{HMAC: base, Tolerance: -time.Second}, "Tolerance"},
		{"tolerance without a timestamp", Options{HMAC: base, Tolerance: 5 * time.Minute}, "Tolerance"},
		{"URL", Options{HMAC: base, URL: "https://example.com"}, "URL"},
		{"zero options", Options{}, "Header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewHMAC(tt.o)
			if tt.field == "" {
				if err != nil || s == nil {
					t.Fatalf("NewHMAC(%+v): got %v, want a scheme", tt.o, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewHMAC(%+v): got nil error, want one naming %s", tt.o, tt.field)
			}
			if s != nil {
				t.Errorf("NewHMAC(%+v): got a scheme with error %v", tt.o, err)
			}
			if !strings.Contains(err.Error(), ": "+tt.field+": ") {
				t.Errorf("NewHMAC(%+v): got %q, want it to name %s", tt.o, err, tt.field)
			}
		})
	}
}

// hmacCase is one request and the cause Verify must report.
type hmacCase struct {
	name    string
	style   int      // index into hmacStyles
	sigs    []string // signature header values
	tss     []string // timestamp header values
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// hmacMalformedCases builds the table of bad inputs over invoice.paid in
// the GitHub (0), Shopify (1) and Slack (2) styles; the fuzz test reuses
// it.
func hmacMalformedCases(body []byte) []hmacCase {
	gh := hmacStyles[0].sign(hmacSecret, body, "")
	ghHex := strings.TrimPrefix(gh, "sha256=")
	sh := hmacStyles[1].sign(hmacSecret, body, "")
	sl := hmacStyles[2].sign(hmacSecret, body, hmacTS)
	slAt := func(ts string) []string { return []string{hmacStyles[2].sign(hmacSecret, body, ts)} }
	ts := []string{hmacTS}
	sha1Hex := hex.EncodeToString(hmacStdlib(sha1.New, hmacSecret, body))
	return []hmacCase{
		{name: "github: missing header", style: 0, want: ErrNotSigned},
		{name: "github: empty header", style: 0, sigs: []string{""}, want: ErrNotSigned},
		{name: "github: two headers", style: 0, sigs: []string{gh, gh}, want: ErrMalformedHeader},
		{name: "github: no prefix", style: 0, sigs: []string{ghHex}, want: ErrMalformedHeader},
		{name: "github: upper-case prefix", style: 0, sigs: []string{"SHA256=" + ghHex}, want: ErrMalformedHeader},
		{name: "github: sha1 prefix (no downgrade)", style: 0, sigs: []string{"sha1=" + sha1Hex}, want: ErrMalformedHeader},
		{name: "github: sha1 value under sha256 prefix", style: 0, sigs: []string{"sha256=" + sha1Hex}, want: ErrMalformedHeader},
		{name: "github: upper-case hex accepted", style: 0, sigs: []string{"sha256=" + strings.ToUpper(ghHex)}, want: nil},
		{name: "github: hex too short", style: 0, sigs: []string{gh[:len(gh)-2]}, want: ErrMalformedHeader},
		{name: "github: hex too long", style: 0, sigs: []string{gh + "00"}, want: ErrMalformedHeader},
		{name: "github: odd length", style: 0, sigs: []string{gh[:len(gh)-1]}, want: ErrMalformedHeader},
		{name: "github: non-hex", style: 0, sigs: []string{gh[:len(gh)-1] + "g"}, want: ErrMalformedHeader},
		{name: "github: unicode digits", style: 0, sigs: []string{"sha256=" + strings.Repeat("٠", 32)}, want: ErrMalformedHeader},
		{name: "github: space after prefix", style: 0, sigs: []string{"sha256= " + ghHex[1:]}, want: ErrMalformedHeader},
		{name: "github: trailing space", style: 0, sigs: []string{gh + " "}, want: ErrMalformedHeader},
		{name: "github: 1 MiB header", style: 0, sigs: []string{"sha256=" + strings.Repeat("a", 1<<20)}, want: ErrMalformedHeader},
		{name: "github: wrong secret", style: 0, sigs: []string{hmacStyles[0].sign([]byte("wrong"), body, "")}, want: ErrNoMatch},
		{name: "github: no secrets", style: 0, sigs: []string{gh}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "github: body truncated", style: 0, sigs: []string{gh}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "github: body empty", style: 0, sigs: []string{gh}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},

		{name: "shopify: base64 accepted", style: 1, sigs: []string{sh}, want: nil},
		{name: "shopify: hex instead of base64", style: 1, sigs: []string{ghHex}, want: ErrMalformedHeader},
		{name: "shopify: no padding", style: 1, sigs: []string{strings.TrimRight(sh, "=")}, want: ErrMalformedHeader},
		{name: "shopify: url-safe alphabet", style: 1, sigs: []string{base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xff}, 16))}, want: ErrMalformedHeader},
		{name: "shopify: not base64", style: 1, sigs: []string{strings.Repeat("*", 44)}, want: ErrMalformedHeader},
		{name: "shopify: sha512 length", style: 1, sigs: []string{base64.StdEncoding.EncodeToString(make([]byte, 64))}, want: ErrMalformedHeader},
		{name: "shopify: wrong value", style: 1, sigs: []string{base64.StdEncoding.EncodeToString(make([]byte, 32))}, want: ErrNoMatch},

		{name: "slack: signed", style: 2, sigs: []string{sl}, tss: ts, want: nil},
		{name: "slack: missing timestamp", style: 2, sigs: []string{sl}, want: ErrMalformedHeader},
		{name: "slack: empty timestamp", style: 2, sigs: []string{sl}, tss: []string{""}, want: ErrMalformedHeader},
		{name: "slack: two timestamps", style: 2, sigs: []string{sl}, tss: []string{hmacTS, hmacTS}, want: ErrMalformedHeader},
		{name: "slack: timestamp abc", style: 2, sigs: slAt("abc"), tss: []string{"abc"}, want: ErrMalformedHeader},
		{name: "slack: timestamp negative", style: 2, sigs: slAt("-1"), tss: []string{"-1"}, want: ErrMalformedHeader},
		{name: "slack: timestamp leading zero", style: 2, sigs: slAt("0" + hmacTS), tss: []string{"0" + hmacTS}, want: ErrMalformedHeader},
		{name: "slack: timestamp milliseconds", style: 2, sigs: slAt(hmacTS + "000"), tss: []string{hmacTS + "000"}, want: ErrMalformedHeader},
		{name: "slack: timestamp fullwidth digits", style: 2, sigs: slAt("１７２１９５４４００"), tss: []string{"１７２１９５４４００"}, want: ErrMalformedHeader},
		{name: "slack: timestamp decimal", style: 2, sigs: slAt(hmacTS + ".5"), tss: []string{hmacTS + ".5"}, want: ErrMalformedHeader},
		{name: "slack: timestamp zero", style: 2, sigs: slAt("0"), tss: []string{"0"}, want: ErrTooOld},
		{name: "slack: timestamp far future", style: 2, sigs: slAt("999999999999"), tss: []string{"999999999999"}, want: ErrTooNew},
		{name: "slack: timestamp not the signed one", style: 2, sigs: []string{sl}, tss: []string{strconv.FormatInt(testNow.Unix()+1, 10)}, want: ErrNoMatch},
		{name: "slack: wrong version prefix", style: 2, sigs: []string{"v1=" + strings.TrimPrefix(sl, "v0=")}, tss: ts, want: ErrMalformedHeader},
		{name: "slack: template not applied (body only)", style: 2, sigs: []string{"v0=" + ghHex}, tss: ts, want: ErrNoMatch},
	}
}

func hmacCaseRequest(tc hmacCase, body []byte) Request {
	if tc.body != nil {
		body = tc.body(body)
	}
	st := hmacStyles[tc.style]
	h := http.Header{}
	for _, v := range tc.sigs {
		h.Add(st.o.Header, v)
	}
	for _, v := range tc.tss {
		h.Add(st.o.TimestampHeader, v)
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// hmacMalformedRuns is hmacMalformedCases, one run per style, followed by
// the generic variants of a hex style with a prefix and a timestamp and of
// a base64 style with a timestamp.
func hmacMalformedRuns(tb testing.TB) []malformedRun {
	body := invoicePaid(tb)
	runs := make([]malformedRun, len(hmacStyles))
	for i, st := range hmacStyles {
		runs[i].s = mustNewHMAC(tb, st.o)
	}
	for _, tc := range hmacMalformedCases(body) {
		runs[tc.style].cases = append(runs[tc.style].cases, verifyCase{tc.name, hmacCaseRequest(tc, body), orSecrets(tc.secrets, hmacSecrets), tc.want})
	}
	for _, i := range []int{2, 3} {
		st := hmacStyles[i]
		enc := encHex
		if st.o.Encoding == "base64" {
			enc = encBase64
		}
		s := runs[i].s
		runs = append(runs, malformedRun{s, genericMalformed(tb, st.name+": ", malformedSpec{
			s:       s,
			r:       signed(tb, s, jsonPost(body, nil), hmacSecret, testNow),
			secrets: hmacSecrets,
			wrong:   [][]byte{hmacSecretOld},
			sig:     signedField{header: st.o.Header, prefix: st.o.Prefix},
			enc:     enc,
			ts:      &signedField{header: st.o.TimestampHeader},
		})})
	}
	return runs
}

func TestHMACVerifyMalformed(t *testing.T) { runMalformed(t, hmacMalformedRuns(t)) }

// hmacIdentifyCases are bodies and headers for the Slack style (IDPath
// event_id, TypePath event.type) and the GitHub style (headers); a zero
// want.ID means ErrInvalidPayload.
var hmacIdentifyCases = []struct {
	name    string
	style   int
	body    string
	headers map[string][]string
	want    Identity
}{
	{name: "path: not JSON", style: 2, body: `event_id=1`},
	{name: "path: truncated", style: 2, body: `{"event_id":"Ev1","event":{"type":"x"}`},
	{name: "path: trailing garbage", style: 2, body: `{"event_id":"Ev1","event":{"type":"x"}}]`},
	{name: "path: missing id", style: 2, body: `{"event":{"type":"x"}}`},
	{name: "path: empty id", style: 2, body: `{"event_id":"","event":{"type":"x"}}`},
	{name: "path: null id", style: 2, body: `{"event_id":null,"event":{"type":"x"}}`},
	{name: "path: id object", style: 2, body: `{"event_id":{},"event":{"type":"x"}}`},
	{name: "path: id float", style: 2, body: `{"event_id":1.5,"event":{"type":"x"}}`},
	{name: "path: id bool", style: 2, body: `{"event_id":true,"event":{"type":"x"}}`},
	{name: "path: id too long", style: 2, body: `{"event_id":"` + strings.Repeat("e", 513) + `","event":{"type":"x"}}`},
	{name: "path: id invalid UTF-8", style: 2, body: "{\"event_id\":\"E\xff\",\"event\":{\"type\":\"x\"}}"},
	{name: "path: missing type", style: 2, body: `{"event_id":"Ev1","event":{}}`},
	{name: "path: type parent not an object", style: 2, body: `{"event_id":"Ev1","event":"x"}`},
	{name: "path: top level array", style: 2, body: `[{"event_id":"Ev1"}]`},
	{name: "header: missing id", style: 0, body: `{}`, headers: map[string][]string{"X-Github-Event": {"push"}}},
	{name: "header: two ids", style: 0, body: `{}`, headers: map[string][]string{"X-Github-Delivery": {"a", "b"}, "X-Github-Event": {"push"}}},
	{name: "header: missing type", style: 0, body: `{}`, headers: map[string][]string{"X-Github-Delivery": {"a"}}},
	{name: "header: id not UTF-8", style: 0, body: `{}`, headers: map[string][]string{"X-Github-Delivery": {"a\xff"}, "X-Github-Event": {"push"}}},
	{name: "header: id too long", style: 0, body: `{}`, headers: map[string][]string{"X-Github-Delivery": {strings.Repeat("a", 513)}, "X-Github-Event": {"push"}}},

	{name: "path: string id", style: 2, body: `{"event_id":"Ev1","event":{"type":"message"}}`, want: Identity{ID: "Ev1", Type: "message"}},
	{name: "path: integer id and type", style: 2, body: `{"event_id":42,"event":{"type":7}}`, want: Identity{ID: "42", Type: "7"}},
	{name: "path: negative integer id", style: 2, body: `{"event_id":-42,"event":{"type":"t"}}`, want: Identity{ID: "-42", Type: "t"}},
	{name: "path: escaped id", style: 2, body: `{"event_id":"E\u00e9\/1","event":{"type":"t"}}`, want: Identity{ID: "Eé/1", Type: "t"}},
	{name: "path: last duplicate wins", style: 2, body: `{"event_id":"a","event_id":"b","event":{"type":"t"}}`, want: Identity{ID: "b", Type: "t"}},
	{name: "path: id of 512 bytes", style: 2, body: `{"event_id":"` + strings.Repeat("e", 512) + `","event":{"type":"t"}}`, want: Identity{ID: strings.Repeat("e", 512), Type: "t"}},
	{name: "path: only id configured", style: 4, body: `{"data":{"object":{"id":"in_1"}}}`, want: Identity{ID: "in_1", Type: "webhook"}},
	{name: "header: both", style: 0, body: `not json at all`, headers: map[string][]string{"X-Github-Delivery": {"72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "X-Github-Event": {"push"}}, want: Identity{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Type: "push"}},
}

func TestHMACIdentify(t *testing.T) {
	for _, tt := range hmacIdentifyCases {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNewHMAC(t, hmacStyles[tt.style].o)
			got, err := s.Identify(Request{Header: tt.headers, Body: []byte(tt.body)})
			if tt.want.ID == "" {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("Identify(%q): got %+v, %v; want %v", tt.body, got, err, ErrInvalidPayload)
				}
				return
			}
			if err != nil || got.ID != tt.want.ID || got.Type != tt.want.Type || !got.Created.IsZero() {
				t.Errorf("Identify(%q): got %+v, %v; want %+v", tt.body, got, err, tt.want)
			}
		})
	}
}

func TestHMACSign(t *testing.T) {
	s := mustNewHMAC(t, hmacStyles[2].o)
	r := Request{Body: []byte("{}")}
	checkErr(t, s.Sign(&r, nil, testNow), ErrNoSecret)
	if err := s.Sign(&r, hmacSecret, time.Unix(-1, 0)); err == nil {
		t.Error("Sign(before 1970): got nil, want an error")
	}
	if err := s.Sign(&r, hmacSecret, testNow); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("X-Slack-Request-Timestamp"); got != hmacTS {
		t.Errorf("Sign: got timestamp %q, want %q", got, hmacTS)
	}
	checkErr(t, s.Verify(r, hmacSecrets, testNow), nil)
}

func FuzzHMACVerify(f *testing.F) {
	body := invoicePaid(f)
	for i := range hmacStyles {
		f.Add(uint8(i), "{sig}", hmacTS, body)
		f.Add(uint8(i), "{old}", strconv.FormatInt(testNow.Unix()-60, 10), []byte(`{"id":"evt_1","type":"t","event_id":"E1","event":{"type":"m"}}`))
	}
	for _, tc := range hmacMalformedCases(body) {
		r := hmacCaseRequest(tc, body)
		sig := strings.Join(tc.sigs, "\n")
		if len(sig) > 8<<10 {
			continue
		}
		ts := strings.Join(tc.tss, "\n")
		if len(tc.sigs) == 1 && tc.sigs[0] == hmacStyles[tc.style].sign(hmacSecret, r.Body, ts) {
			sig = "{sig}"
		}
		f.Add(uint8(tc.style), sig, ts, r.Body)
	}
	schemes := make([]*HMAC, len(hmacStyles))
	for i, st := range hmacStyles {
		schemes[i] = mustNewHMAC(f, st.o)
	}
	secrets := [][]byte{hmacSecret, hmacSecretOld}
	f.Fuzz(func(t *testing.T, style uint8, sig, ts string, body []byte) {
		st := hmacStyles[int(style)%len(hmacStyles)]
		s := schemes[int(style)%len(hmacStyles)]
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", st.sign(hmacSecret, body, ts), "{old}", st.sign(hmacSecretOld, body, ts)).Replace(sig)
		}
		r := Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
		for _, v := range fuzzHeaders(sig) {
			r.Header.Add(st.o.Header, v)
		}
		if st.o.TimestampHeader != "" {
			for _, v := range fuzzHeaders(ts) {
				r.Header.Add(st.o.TimestampHeader, v)
			}
		}
		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		if st.o.TimestampHeader != "" {
			acceptedUnix(t, ts)
		}
		for _, secret := range secrets {
			// Hex is compared without case, as decoding ignores it.
			if want := st.sign(secret, body, ts); sig == want || st.o.Encoding != "base64" && strings.EqualFold(sig, want) && strings.HasPrefix(sig, st.o.Prefix) {
				return
			}
		}
		t.Fatalf("Verify(%q, ts %q): got nil, but no secret signs it", sig, ts)
	})
}

func FuzzHMACIdentify(f *testing.F) {
	// Length limits are reached through a placeholder: a seed holding a
	// long run of one byte makes the minimizer crawl for the whole budget.
	for _, tc := range hmacIdentifyCases {
		id := strings.Join(tc.headers["X-Github-Delivery"], "\n")
		if len(id)+len(tc.body) <= 512 {
			f.Add(uint8(tc.style), id, []byte(tc.body))
		}
	}
	f.Add(uint8(2), "", []byte(`{"event_id":"{long}","event":{"type":"t"}}`))
	f.Add(uint8(0), "{long}", []byte(`{}`))
	f.Add(uint8(3), "", []byte(`{"id":"evt_1","object":"event","data":{"object":{"id":"in_1"}},"type":"invoice.paid"}`))
	f.Add(uint8(4), "", []byte(`{"data":{"object":{"id":"in_1","lines":[1,2.5,null,true]}}}`))
	schemes := make([]*HMAC, len(hmacStyles))
	for i, st := range hmacStyles {
		schemes[i] = mustNewHMAC(f, st.o)
	}
	long := strings.Repeat("e", 600)
	f.Fuzz(func(t *testing.T, style uint8, id string, body []byte) {
		body = bytes.ReplaceAll(body, []byte("{long}"), []byte(long))
		id = strings.ReplaceAll(id, "{long}", long)
		st := hmacStyles[int(style)%len(hmacStyles)]
		r := Request{Header: http.Header{}, Body: body}
		for _, name := range []string{st.o.IDHeader, st.o.TypeHeader} {
			if name != "" {
				for _, v := range fuzzHeaders(id) {
					r.Header.Add(name, v)
				}
			}
		}
		got, ok := fuzzIdentify(t, schemes[int(style)%len(hmacStyles)], r)
		if !ok {
			return
		}
		if got.ID == "" || len(got.ID) > 512 || !utf8.ValidString(got.ID) || got.Type == "" || !utf8.ValidString(got.Type) {
			t.Fatalf("Identify: got %+v", got)
		}
		if want, ok := hmacWantIdentity(st, r); st.o.IDHeader == "" && (!ok || want.ID != got.ID || want.Type != got.Type) {
			t.Fatalf("Identify(%q): got %+v, encoding/json reads %+v (ok %t)", body, got, want, ok)
		}
	})
}

// BenchmarkHMAC compares the generic scheme in a GitHub-style header with
// ids read from the body against a bare HMAC-SHA256 of the same body.
func BenchmarkHMAC(b *testing.B) {
	body := invoicePaid(b)
	o := HMACOptions{Header: "X-Hub-Signature-256", Prefix: "sha256=", IDPath: "id", TypePath: "type"}
	r := Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
	r.Header.Set(o.Header, "sha256="+hex.EncodeToString(hmacStdlib(sha256.New, hmacSecret, body)))
	var sum [sha256.Size]byte
	benchScheme(b, mustNewHMAC(b, o), r, hmacSecrets, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha256.New, hmacSecret)
		m.Write(body)
		m.Sum(sum[:0])
	})
}
