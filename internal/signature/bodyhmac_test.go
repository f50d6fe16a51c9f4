package signature

// The tests every kind shares whose provider sends one header holding an
// HMAC of the raw body and nothing else signed (no timestamp): what each
// such kind's test file declares is a bodyHMACKind, and its own cases.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strings"
	"testing"
	"time"
)

// bodyHMACKind describes such a kind for the shared tests.
type bodyHMACKind struct {
	newScheme func(Options) (Scheme, error)
	header    string
	prefix    string // before the encoded MAC, e.g. "sha256="; "" for none
	enc       sigEncoding
	hash      func() hash.Hash
	size      int // the MAC's bytes
	// secret signs; secretOld is a second secret during a rotation.
	secret, secretOld []byte
	// headers are the provider's other headers on every request (an id,
	// a type).
	headers map[string][]string
	// bodies are the provider's example bodies and the identity each has
	// with headers.
	bodies []identifyCase
	// identify are Identify's cases (a zero want.ID: ErrInvalidPayload),
	// each with headers.
	identify []identifyCase
}

func (k bodyHMACKind) scheme(tb testing.TB) Scheme {
	tb.Helper()
	s, err := k.newScheme(Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func (k bodyHMACKind) request(body []byte, sigs ...string) Request {
	h := map[string][]string{k.header: sigs}
	for name, v := range k.headers {
		h[name] = v
	}
	return jsonPost(body, h)
}

// sig is the header's value for body under secret, computed here, apart
// from the code under test.
func (k bodyHMACKind) sig(body, secret []byte) string {
	mac := hmac.New(k.hash, secret)
	mac.Write(body)
	sum := mac.Sum(nil)
	if k.enc == encBase64 {
		return k.prefix + base64.StdEncoding.EncodeToString(sum)
	}
	return k.prefix + hex.EncodeToString(sum)
}

// encode writes raw MAC bytes as the header carries them, without prefix.
func (k bodyHMACKind) encode(raw []byte) string {
	if k.enc == encBase64 {
		return base64.StdEncoding.EncodeToString(raw)
	}
	return hex.EncodeToString(raw)
}

// runBodyHMACKind runs the shared tests: every corpus body and example
// signed and verified (Sign against the independent MAC), a changed byte
// refused; the examples' identities; rotation; options; Identify's cases.
func runBodyHMACKind(t *testing.T, k bodyHMACKind) {
	s := k.scheme(t)
	t.Run("corpus", func(t *testing.T) {
		files := walkCorpus(t, corpusDir, 15)
		for _, b := range k.bodies {
			files = append(files, corpusFile{name: b.name, body: []byte(b.body)})
		}
		for _, f := range files {
			r := signed(t, s, k.request(f.body), k.secret, testNow)
			if got, want := r.Header.Get(k.header), k.sig(f.body, k.secret); got != want {
				t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
			}
			checkErr(t, verifyNoPanic(t, s, r, [][]byte{k.secret}, testNow), nil)
			checkFlipsRejected(t, f.name, s, r, [][]byte{k.secret}, testNow)
		}
	})
	t.Run("bodies", func(t *testing.T) {
		for _, b := range k.bodies {
			r := signed(t, s, k.request([]byte(b.body)), k.secret, testNow)
			checkErr(t, s.Verify(r, [][]byte{k.secret}, testNow), nil)
			got, err := identifyNoPanic(t, s, r)
			checkIdentity(t, got, err, b.want)
		}
	})
	t.Run("rotation", func(t *testing.T) {
		body := []byte(k.bodies[0].body)
		cur, old := k.sig(body, k.secret), k.sig(body, k.secretOld)
		both := [][]byte{k.secret, k.secretOld}
		req := func(sig string) Request { return k.request(body, sig) }
		runVerifyCases(t, s, testNow, 0, []verifyCase{
			{"two secrets, signed by current", req(cur), both, nil},
			{"two secrets, signed by previous", req(old), both, nil},
			{"previous first", req(cur), [][]byte{k.secretOld, k.secret}, nil},
			{"retired secret", req(old), [][]byte{k.secret}, ErrNoMatch},
			{"nil secrets", req(cur), nil, ErrNoSecret},
			{"empty secret skipped", req(cur), [][]byte{nil, k.secret}, nil},
			{"empty secret never matches an empty-key signature", req(k.sig(body, nil)), [][]byte{{}, k.secret}, ErrNoMatch},
		})
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, s.Verify(req(cur), [][]byte{k.secret}, now), nil)
		}
	})
	t.Run("options", func(t *testing.T) {
		runOptionsCases(t, k.newScheme, []optionsCase{
			{"zero", Options{}, false},
			{"tolerance", Options{Tolerance: time.Minute}, true},
			{"URL", Options{URL: "https://hooks.example.com/x"}, true},
			{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
		})
	})
	t.Run("identify", func(t *testing.T) {
		for _, tc := range k.identify {
			t.Run(tc.name, func(t *testing.T) {
				got, err := identifyNoPanic(t, s, k.request([]byte(tc.body)))
				checkIdentity(t, got, err, tc.want)
			})
		}
	})
}

// bodyHMACMalformedRuns is the kind's malformed table: the cases every
// such header shares, then the generic variants.
func bodyHMACMalformedRuns(tb testing.TB, k bodyHMACKind) []malformedRun {
	body := []byte(k.bodies[0].body)
	ok := k.sig(body, k.secret)
	raw := macOf(k.hash, k.secret, body)
	wrong := k.sig(body, []byte("not-the-secret"))
	short := k.prefix + k.encode(raw[:len(raw)-1])
	long := k.prefix + k.encode(append(bytes.Clone(raw), 0))
	other := "sha1="
	if k.prefix == "sha1=" {
		other = "sha256="
	}
	req := func(b []byte, sigs ...string) Request { return k.request(b, sigs...) }
	secrets := [][]byte{k.secret}
	cases := []verifyCase{
		{"valid", req(body, ok), secrets, nil},
		{"missing header", req(body), secrets, ErrNotSigned},
		{"empty header", req(body, ""), secrets, ErrNotSigned},
		{"two headers", req(body, ok, ok), secrets, ErrMalformedHeader},
		{"another prefix", req(body, other+strings.TrimPrefix(ok, k.prefix)), secrets, errRejected},
		{"two signatures joined by a comma", req(body, wrong+","+ok), secrets, errRejected},
		{"one byte short", req(body, short), secrets, errRejected},
		{"one byte long", req(body, long), secrets, errRejected},
		{"wrong secret", req(body, wrong), secrets, ErrNoMatch},
		{"plain hash of the body", req(body, k.prefix+k.encode(k.hash().Sum(body)[len(body):])), secrets, errRejected},
		{"body truncated by one byte", req(body[:len(body)-1], ok), secrets, ErrNoMatch},
		{"body with appended newline", req(append(bytes.Clone(body), '\n'), ok), secrets, ErrNoMatch},
		{"body empty", req(nil, ok), secrets, ErrNoMatch},
		{"only an empty secret", req(body, k.sig(body, nil)), [][]byte{{}}, ErrNoSecret},
	}
	if k.enc == encHex {
		cases = append(cases,
			verifyCase{"uppercase hex is accepted", req(body, k.prefix+strings.ToUpper(strings.TrimPrefix(ok, k.prefix))), secrets, nil},
			verifyCase{"non-hex", req(body, ok[:len(ok)-1]+"g"), secrets, errRejected},
			verifyCase{"base64 instead of hex", req(body, k.prefix+base64.StdEncoding.EncodeToString(raw)), secrets, errRejected},
		)
	} else {
		cases = append(cases,
			verifyCase{"hex instead of base64", req(body, k.prefix+hex.EncodeToString(raw)), secrets, errRejected},
			verifyCase{"unpadded", req(body, strings.TrimRight(ok, "=")), secrets, errRejected},
		)
	}
	if c := new(bytes.Buffer); json.Compact(c, body) == nil && !bytes.Equal(c.Bytes(), body) {
		cases = append(cases, verifyCase{"body compacted", req(c.Bytes(), ok), secrets, ErrNoMatch})
	} else if json.Indent(c, body, "", " ") == nil {
		cases = append(cases, verifyCase{"body re-indented", req(c.Bytes(), ok), secrets, ErrNoMatch})
	}
	s := k.scheme(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       s,
		r:       signed(tb, s, k.request(body), k.secret, testNow),
		secrets: secrets,
		sig:     signedField{header: k.header, prefix: k.prefix},
		enc:     k.enc,
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

// fuzzBodyHMACVerify is a kind's Verify fuzz target: any accepted header
// is the MAC of the fuzzed body under a configured secret.
func fuzzBodyHMACVerify(f *testing.F, k bodyHMACKind) {
	for _, b := range k.bodies {
		f.Add("{sig}", []byte(b.body))
		f.Add("{old}", []byte(b.body))
	}
	for _, r := range bodyHMACMalformedRuns(f, k)[0].cases {
		b := r.r.Body
		f.Add(strings.ReplaceAll(strings.Join(r.r.Header.Values(k.header), "\n"), k.sig(b, k.secret), "{sig}"), b)
	}
	s := k.scheme(f)
	secrets := [][]byte{k.secret, k.secretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", k.sig(body, k.secret), "{old}", k.sig(body, k.secretOld)).Replace(sig)
		}
		if !fuzzVerify(t, s, k.request(body, fuzzHeaders(sig)...), secrets, testNow) {
			return
		}
		for _, secret := range secrets {
			want := k.sig(body, secret)
			if sig == want || (k.enc == encHex && strings.HasPrefix(sig, k.prefix) && strings.EqualFold(sig, want)) {
				return
			}
		}
		t.Fatalf("Verify(%q): accepted a signature that is no configured secret's", sig)
	})
}

// fuzzBodyHMACIdentify is a kind's Identify fuzz target: an accepted body
// is JSON encoding/json reads, and check agrees with the identity.
func fuzzBodyHMACIdentify(f *testing.F, k bodyHMACKind, check func(body []byte, id Identity) bool) {
	for _, b := range k.bodies {
		f.Add([]byte(b.body))
	}
	for _, tc := range k.identify {
		f.Add([]byte(tc.body))
	}
	s := k.scheme(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, s, k.request(body))
		if !ok {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("Identify(%q): accepted a body that is not JSON", body)
		}
		if id.ID == "" || len(id.ID) > MaxIdentity || !check(body, id) {
			t.Fatalf("Identify(%q): got %+v", body, id)
		}
	})
}

// benchBodyHMAC compares the kind with the bare HMAC over the same bytes.
func benchBodyHMAC(b *testing.B, k bodyHMACKind) {
	body := []byte(k.bodies[0].body)
	r := k.request(body, k.sig(body, k.secret))
	sum := make([]byte, 0, k.size)
	benchScheme(b, k.scheme(b), r, [][]byte{k.secret}, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(k.hash, k.secret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}

// hashID is the id of a kind keyed by its signed body's hash.
func hashID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(sum[:])
}
