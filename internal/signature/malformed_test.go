package signature

// A generator of malformed variants shared by every scheme's malformed
// table, and the test that keeps each table at minMalformed rejected
// inputs.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// minMalformed is the least number of malformed inputs, specific and
// generic, that each scheme's table must reject.
const minMalformed = 60

// errRejected is the want of a variant that must be refused with any of
// the Err* causes (checkVerifyErr): which one depends on where a scheme
// looks first, and a generic variant does not pin it.
var errRejected = errors.New("any Err* cause")

// sigEncoding is how a signature is written in its header.
type sigEncoding uint8

const (
	encHex sigEncoding = iota
	encBase64
)

// signedField locates one signed value in a header: the whole value after
// prefix, or, in a list, the entry that starts with prefix (a key such as
// "t=" or "v1,") and ends at sep.
type signedField struct {
	header string
	prefix string // text before the value: "sha256=", "v0=", a list key; "" for none
	sep    byte   // in a list, the byte that ends an entry; 0 when the value runs to the end
}

// whole reports whether the field is the header's whole value, prefix
// aside: the header is the field's own.
func (f signedField) whole() bool { return f.sep == 0 }

// locate returns the bounds of the field's value in v: the first entry
// that starts with prefix (at the start of v, or after sep in a list).
func (f signedField) locate(v string) (start, end int, ok bool) {
	for i := 0; i <= len(v); i++ {
		if i > 0 && (f.whole() || v[i-1] != f.sep) || !strings.HasPrefix(v[i:], f.prefix) {
			continue
		}
		start, end = i+len(f.prefix), len(v)
		if !f.whole() {
			if j := strings.IndexByte(v[start:], f.sep); j >= 0 {
				end = start + j
			}
		}
		return start, end, true
	}
	return 0, 0, false
}

// malformedSpec describes a validly signed request and the headers its
// signature covers, for genericMalformed.
type malformedSpec struct {
	s       Scheme
	r       Request  // signed, accepted at testNow under secrets
	secrets [][]byte // the configured secrets (public keys for asymmetric schemes)
	wrong   [][]byte // secrets that are not the signer's; nil means an unrelated HMAC key

	sig      signedField // the signature
	enc      sigEncoding
	versions []string // other scheme versions to write in place of sig.prefix

	id       *signedField           // a signed id header; nil when there is none
	ts       *signedField           // the signed timestamp; nil when there is none in a header
	tsFormat func(time.Time) string // how the provider writes a time; nil means unix seconds
	// tsWant overrides the cause of a "timestamp: " variant, by the name
	// after that prefix, where the provider's format reads it otherwise.
	tsWant map[string]error

	// drop names generic variants this scheme rightly accepts, each with
	// the reason; naming a variant that is not generated fails the test.
	drop map[string]string
}

// arabicDigits and fullwidthDigits are the Unicode digits a lenient
// parser (unicode.IsDigit, strconv on normalized text) might take.
var (
	arabicDigits    = []string{"٠", "١", "٢", "٣", "٤", "٥", "٦", "٧", "٨", "٩"}
	fullwidthDigits = []string{"０", "１", "２", "３", "４", "５", "６", "７", "８", "９"}
)

// replaceDigits writes every ASCII digit of s as digits[d].
func replaceDigits(s string, digits []string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			b.WriteString(digits[c-'0'])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// cloneRequest copies r so that a variant never shares a header map or a
// body with another.
func cloneRequest(r Request) Request {
	r.Header = r.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Body = bytes.Clone(r.Body)
	return r
}

// withValues is r with the header name set to values (removed when none).
func withValues(r Request, name string, values ...string) Request {
	r = cloneRequest(r)
	r.Header.Del(name)
	for _, v := range values {
		r.Header.Add(name, v)
	}
	return r
}

// withField is r with the value of field f replaced by edit(value).
func withField(tb testing.TB, r Request, f signedField, edit func(string) string) Request {
	tb.Helper()
	v := r.Header.Get(f.header)
	start, end, ok := f.locate(v)
	if !ok {
		tb.Fatalf("genericMalformed: %s %q has no %q field", f.header, v, f.prefix)
	}
	return withValues(r, f.header, v[:start]+edit(v[start:end])+v[end:])
}

// withPrefix is r with the prefix of field f replaced by p.
func withPrefix(tb testing.TB, r Request, f signedField, p string) Request {
	tb.Helper()
	v := r.Header.Get(f.header)
	start, _, ok := f.locate(v)
	if !ok {
		tb.Fatalf("genericMalformed: %s %q has no %q field", f.header, v, f.prefix)
	}
	return withValues(r, f.header, v[:start-len(f.prefix)]+p+v[start:])
}

// otherChar is a character of the encoding's alphabet that is not c (for
// hex, a digit).
func otherChar(enc sigEncoding, c byte) string {
	if enc == encHex {
		if c == '0' {
			return "1"
		}
		return "0"
	}
	if c == 'A' {
		return "B"
	}
	return "A"
}

// mid returns s with its middle byte replaced by r.
func mid(s, r string) string {
	i := len(s) / 2
	return s[:i] + r + s[i+1:]
}

// decodeSig decodes a signature token in its encoding.
func decodeSig(tb testing.TB, enc sigEncoding, tok string) []byte {
	tb.Helper()
	var (
		b   []byte
		err error
	)
	if enc == encHex {
		b, err = hex.DecodeString(tok)
	} else {
		b, err = base64.StdEncoding.DecodeString(tok)
	}
	if err != nil {
		tb.Fatalf("genericMalformed: signature %q: %v", tok, err)
	}
	return b
}

// headerVariants are the variants of a whole header: absent, empty,
// repeated, too long, padded, with a bad byte, one character off.
func headerVariants(r Request, name string) []verifyCase {
	v := r.Header.Get(name)
	kase := func(what string, values ...string) verifyCase {
		return verifyCase{name + " " + what, withValues(r, name, values...), nil, errRejected}
	}
	return []verifyCase{
		kase("removed"),
		kase("empty", ""),
		kase("whitespace only", " \t "),
		kase("repeated twice", v, v),
		kase("repeated, second empty", v, ""),
		kase("repeated, second different", v, v[:len(v)-1]+otherChar(encHex, v[len(v)-1])),
		kase("comma-joined duplicate", v+", "+v),
		kase("comma-joined duplicate without space", v+","+v),
		kase("longer than 8 KiB", v+strings.Repeat("0", 8<<10)),
		kase("with a leading space", " "+v),
		kase("with a trailing space", v+" "),
		kase("with a leading tab", "\t"+v),
		kase("with a trailing CRLF", v+"\r\n"),
		kase("with a NUL appended", v+"\x00"),
		kase("with a NUL inside", mid(v, "\x00")),
		kase("with a non-ASCII byte appended", v+"\xff"),
		kase("with a non-ASCII letter appended", v+"é"),
		kase("truncated by one character", v[:len(v)-1]),
		kase("one character longer", v+"0"),
	}
}

// genericMalformed returns the generic malformed variants of spec.r, each
// named after what it changes; every one must be refused. The prefix
// names the run, when a scheme has several.
func genericMalformed(tb testing.TB, prefix string, spec malformedSpec) []verifyCase {
	tb.Helper()
	if err := verifyNoPanic(tb, spec.s, spec.r, spec.secrets, testNow); err != nil {
		tb.Fatalf("genericMalformed: the signed request is refused: %v", err)
	}
	r := spec.r
	var out []verifyCase
	add := func(name string, req Request, want error) {
		out = append(out, verifyCase{name, req, nil, want})
	}

	// The signature header as a whole, then the signature in it.
	out = append(out, headerVariants(r, spec.sig.header)...)
	sigOf := func(edit func(string) string) Request { return withField(tb, r, spec.sig, edit) }
	v := r.Header.Get(spec.sig.header)
	start, end, ok := spec.sig.locate(v)
	if !ok {
		tb.Fatalf("genericMalformed: %s %q has no %q field", spec.sig.header, v, spec.sig.prefix)
	}
	tok := v[start:end]
	raw := decodeSig(tb, spec.enc, tok)
	reencode := func(b []byte) string { return hex.EncodeToString(b) }
	if spec.enc == encHex {
		reencode = func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	}
	encode := func(b []byte) string {
		if spec.enc == encHex {
			return hex.EncodeToString(b)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	bad := "g"
	if spec.enc == encBase64 {
		bad = "!"
	}
	add("signature: first digit changed", sigOf(func(s string) string { return otherChar(spec.enc, s[0]) + s[1:] }), errRejected)
	add("signature: middle digit changed", sigOf(func(s string) string { return mid(s, otherChar(spec.enc, s[len(s)/2])) }), errRejected)
	add("signature: truncated by one character", sigOf(func(s string) string { return s[:len(s)-1] }), errRejected)
	add("signature: truncated to half", sigOf(func(s string) string { return s[:len(s)/2] }), errRejected)
	add("signature: one character longer", sigOf(func(s string) string { return s + "A" }), errRejected)
	add("signature: doubled", sigOf(func(s string) string { return s + s }), errRejected)
	add("signature: empty", sigOf(func(string) string { return "" }), errRejected)
	add("signature: all-zero MAC", sigOf(func(string) string { return encode(make([]byte, len(raw))) }), errRejected)
	add("signature: MAC one byte short", sigOf(func(string) string { return encode(raw[:len(raw)-1]) }), errRejected)
	add("signature: MAC one byte longer", sigOf(func(string) string { return encode(append(bytes.Clone(raw), 0)) }), errRejected)
	add("signature: wrong encoding", sigOf(func(string) string { return reencode(raw) }), errRejected)
	add("signature: non-alphabet character", sigOf(func(s string) string { return mid(s, bad) }), errRejected)
	add("signature: space inside", sigOf(func(s string) string { return mid(s, " ") }), errRejected)
	add("signature: NUL inside", sigOf(func(s string) string { return mid(s, "\x00") }), errRejected)
	add("signature: non-ASCII byte inside", sigOf(func(s string) string { return mid(s, "\xff") }), errRejected)
	add("signature: first character a fullwidth one", sigOf(func(s string) string { return "１" + s[1:] }), errRejected)
	add("signature: first character an arabic-indic one", sigOf(func(s string) string { return "١" + s[1:] }), errRejected)
	if strings.ContainsAny(tok, "0123456789") {
		add("signature: arabic-indic digits", sigOf(func(s string) string { return replaceDigits(s, arabicDigits) }), errRejected)
		add("signature: fullwidth digits", sigOf(func(s string) string { return replaceDigits(s, fullwidthDigits) }), errRejected)
	}
	// Hex digits are case-insensitive: upper-cased hex is the same MAC, and
	// accepting it is no forgery (stripe-go and GitHub's examples do), so
	// case is changed only where it changes the bytes.
	if spec.enc == encBase64 {
		if u := strings.ToUpper(tok); u != tok {
			add("signature: upper-cased", sigOf(func(string) string { return u }), errRejected)
		}
		if l := strings.ToLower(tok); l != tok {
			add("signature: lower-cased", sigOf(func(string) string { return l }), errRejected)
		}
		if u := strings.NewReplacer("+", "-", "/", "_").Replace(tok); u != tok {
			add("signature: base64url alphabet", sigOf(func(string) string { return u }), errRejected)
		}
		if u := strings.TrimRight(tok, "="); u != tok {
			add("signature: padding removed", sigOf(func(string) string { return u }), errRejected)
		}
		add("signature: extra padding", sigOf(func(s string) string { return s + "=" }), errRejected)
	}

	// The scheme version.
	if p := spec.sig.prefix; p != "" {
		add("version: removed", withPrefix(tb, r, spec.sig, ""), errRejected)
		if u := strings.ToUpper(p); u != p {
			add("version: upper-cased", withPrefix(tb, r, spec.sig, u), errRejected)
		}
		add("version: doubled", withPrefix(tb, r, spec.sig, p+p), errRejected)
		for _, alt := range spec.versions {
			add("version: "+alt, withPrefix(tb, r, spec.sig, alt), errRejected)
		}
	} else {
		add("version: sha256= added", withValues(r, spec.sig.header, "sha256="+v), errRejected)
		add("version: v1= added", withValues(r, spec.sig.header, "v1="+v), errRejected)
		for _, alt := range spec.versions {
			add("version: "+alt+" added", withValues(r, spec.sig.header, alt+v), errRejected)
		}
	}

	// The timestamp.
	if spec.ts != nil {
		f := *spec.ts
		if f.whole() && f.header != spec.sig.header {
			out = append(out, headerVariants(r, f.header)...)
		}
		format := spec.tsFormat
		if format == nil {
			format = func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
		}
		now := format(testNow)
		tsOf := func(s string) Request { return withField(tb, r, f, func(string) string { return s }) }
		// The signature is left as it was: a timestamp must be refused
		// for itself (malformed, too old, too new) before any MAC is
		// compared, so a variant that only fails to match is a failure.
		tooOld := map[string]bool{"0": true, "far past (now - 10 years)": true}
		seen := map[string]bool{}
		for _, tc := range []struct{ name, ts string }{
			{"abc", "abc"},
			{"empty", ""},
			{"-1", "-1"},
			{"0", "0"},
			{"negative now", "-" + now},
			{"far future (now + 10 years)", format(testNow.AddDate(10, 0, 0))},
			{"far past (now - 10 years)", format(testNow.AddDate(-10, 0, 0))},
			{"1e9 with a leading zero", "01000000000"},
			{"now with a leading zero", "0" + now},
			{"now with a + sign", "+" + now},
			{"now with a fractional part", now + ".5"},
			{"now with a zero fraction", now + ".0"},
			{"now in exponent form", "1.7e9"},
			{"now in hex", "0x" + strconv.FormatInt(testNow.Unix(), 16)},
			{"huge (30 digits)", strings.Repeat("9", 30)},
			{"now with arabic-indic digits", replaceDigits(now, arabicDigits)},
			{"now with fullwidth digits", replaceDigits(now, fullwidthDigits)},
			{"fullwidth one", "１"},
			{"now with a leading space", " " + now},
			{"now with a trailing space", now + " "},
			{"now with a NUL", now + "\x00"},
			{"now with a non-ASCII byte", now + "\xff"},
			{"now times 1000", now + "000"},
		} {
			seen[tc.name] = true
			want, ok := spec.tsWant[tc.name]
			switch {
			case ok:
			case tooOld[tc.name]:
				want = ErrTooOld
			case strings.HasPrefix(tc.name, "far future"):
				want = ErrTooNew
			default:
				want = ErrMalformedHeader
			}
			add("timestamp: "+tc.name, tsOf(tc.ts), want)
		}
		for name := range spec.tsWant {
			if !seen[name] {
				tb.Fatalf("genericMalformed: tsWant names %q, which is not a timestamp variant", name)
			}
		}
	}

	// The signed id.
	if spec.id != nil {
		f := *spec.id
		out = append(out, headerVariants(r, f.header)...)
		add("id: first character changed", withField(tb, r, f, func(s string) string {
			if s[0] == 'x' {
				return "y" + s[1:]
			}
			return "x" + s[1:]
		}), errRejected)
	}

	// The body.
	body := func(edit func([]byte) []byte) Request {
		c := cloneRequest(r)
		c.Body = edit(c.Body)
		return c
	}
	add("body: truncated by one byte", body(func(b []byte) []byte { return b[:len(b)-1] }), ErrNoMatch)
	add("body: one byte appended", body(func(b []byte) []byte { return append(b, ' ') }), ErrNoMatch)
	add("body: first byte flipped", body(func(b []byte) []byte { return flipByte(b, 0) }), ErrNoMatch)
	add("body: middle byte flipped", body(func(b []byte) []byte { return flipByte(b, len(b)/2) }), ErrNoMatch)
	add("body: last byte flipped", body(func(b []byte) []byte { return flipByte(b, len(b)-1) }), ErrNoMatch)
	add("body: emptied", body(func([]byte) []byte { return nil }), ErrNoMatch)
	add("body: doubled", body(func(b []byte) []byte { return append(b, b...) }), ErrNoMatch)

	// The secrets.
	wrong := spec.wrong
	if wrong == nil {
		wrong = [][]byte{[]byte("whsec_wrong_secret_not_the_signers_0000")}
	}
	for i := range out {
		out[i].secrets = spec.secrets
	}
	out = append(out,
		verifyCase{"secrets: wrong secret", cloneRequest(r), wrong, ErrNoMatch},
		verifyCase{"secrets: nil", cloneRequest(r), nil, ErrNoSecret},
		verifyCase{"secrets: empty list", cloneRequest(r), [][]byte{}, ErrNoSecret},
		verifyCase{"secrets: only an empty secret", cloneRequest(r), [][]byte{{}}, ErrNoSecret},
		verifyCase{"secrets: only a nil secret", cloneRequest(r), [][]byte{nil}, ErrNoSecret},
	)

	// Drop what the scheme rightly accepts, and name every case.
	names := map[string]bool{}
	kept := out[:0]
	for _, c := range out {
		names[c.name] = true
		if _, skip := spec.drop[c.name]; !skip {
			c.name = "generic: " + prefix + c.name
			kept = append(kept, c)
		}
	}
	for name := range spec.drop {
		if !names[name] {
			tb.Fatalf("genericMalformed: dropped variant %q is not generated", name)
		}
	}
	return kept
}

// spaceListDrops are the variants a space-separated signature list (Standard
// Webhooks, GitLab's signing tokens) rightly accepts: the list is split on
// single spaces and entries that are empty or do not decode are skipped, as
// the reference libraries (svix, standardwebhooks) do, so a padded list or
// two copies of a valid one still carry a genuine signature.
func spaceListDrops(header string) map[string]string {
	return map[string]string{
		header + " comma-joined duplicate": "the copy after \", \" is a whole, genuine entry",
		header + " with a leading space":   "an empty entry before a genuine one",
		header + " with a trailing space":  "an empty entry after a genuine one",
	}
}

// malformedRun is a scheme and a table of its inputs.
type malformedRun struct {
	s     Scheme
	cases []verifyCase
}

// rejected counts the cases of runs that must be refused.
func rejected(runs []malformedRun) int {
	n := 0
	for _, r := range runs {
		for _, c := range r.cases {
			if c.want != nil {
				n++
			}
		}
	}
	return n
}

// runMalformed requires minMalformed refused cases in runs, then runs
// every case at testNow.
func runMalformed(t *testing.T, runs []malformedRun) {
	t.Helper()
	if n := rejected(runs); n < minMalformed {
		t.Fatalf("got %d malformed inputs, want at least %d", n, minMalformed)
	}
	for _, r := range runs {
		runVerifyCases(t, r.s, testNow, 0, r.cases)
	}
}

// malformedSuites holds each kind's malformed table, specific and generic.
var malformedSuites = map[string]func(testing.TB) []malformedRun{
	"adyen":            adyenMalformedRuns,
	"bitbucket":        bitbucketMalformedRuns,
	"box":              boxMalformedRuns,
	"calcom":           calcomMalformedRuns,
	"calendly":         calendlyMalformedRuns,
	"coinbasecommerce": coinbaseCommerceMalformedRuns,
	"discord":          discordMalformedRuns,
	"dropbox":          dropboxMalformedRuns,
	"gitea":            giteaMalformedRuns,
	"github":           githubMalformedRuns,
	"gitlab":           gitlabMalformedRuns,
	"hmac":             hmacMalformedRuns,
	"hubspot":          hubspotMalformedRuns,
	"intercom":         intercomMalformedRuns,
	"jira":             jiraMalformedRuns,
	"linear":           linearMalformedRuns,
	"mailgun":          mailgunMalformedRuns,
	"meta":             metaMalformedRuns,
	"mux":              muxMalformedRuns,
	"okta":             oktaMalformedRuns,
	"paddle":           paddleMalformedRuns,
	"pagerduty":        pagerDutyMalformedRuns,
	"paypal":           paypalMalformedRuns,
	"paystack":         paystackMalformedRuns,
	"postmark":         postmarkMalformedRuns,
	"razorpay":         razorpayMalformedRuns,
	"sendgrid":         sendgridMalformedRuns,
	"sentry":           sentryMalformedRuns,
	"shopify":          shopifyMalformedRuns,
	"slack":            slackMalformedRuns,
	"sns":              snsMalformedRuns,
	"square":           squareMalformedRuns,
	"standardwebhooks": standardWebhooksMalformedRuns,
	"stripe":           stripeMalformedRuns,
	"telnyx":           telnyxMalformedRuns,
	"twilio":           twilioMalformedRuns,
	"twitch":           twitchMalformedRuns,
	"typeform":         typeformMalformedRuns,
	"vercel":           vercelMalformedRuns,
	"webflow":          webflowMalformedRuns,
	"woocommerce":      wooCommerceMalformedRuns,
	"xero":             xeroMalformedRuns,
	"zoom":             zoomMalformedRuns,
}

// TestMalformedCount keeps every kind's malformed table at minMalformed
// refused inputs or more: a kind without a table fails, as does a table
// that shrinks.
func TestMalformedCount(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			suite, ok := malformedSuites[kind]
			if !ok {
				t.Fatalf("no malformed table for kind %q", kind)
			}
			if n := rejected(suite(t)); n < minMalformed {
				t.Errorf("%s: got %d malformed inputs, want at least %d", kind, n, minMalformed)
			}
		})
	}
	if len(malformedSuites) != len(Kinds()) {
		t.Errorf("got %d malformed tables for %d kinds", len(malformedSuites), len(Kinds()))
	}
}

// TestMalformedGeneratorNames checks that generic variant names are unique
// within a table, so that a failure names one input.
func TestMalformedGeneratorNames(t *testing.T) {
	for kind, suite := range malformedSuites {
		seen := map[string]bool{}
		for _, r := range suite(t) {
			for _, c := range r.cases {
				if strings.HasPrefix(c.name, "generic: ") && seen[c.name] {
					t.Errorf("%s: generic variant %q twice", kind, c.name)
				}
				seen[c.name] = true
			}
		}
	}
}
