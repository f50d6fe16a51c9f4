package signature

// Helpers shared by the schemes' tests, fuzz targets and benchmarks.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Inputs: payloads, schemes and requests.

// corpusDir is the project's corpus of provider payloads (see
// testdata/corpus/README.md).
const corpusDir = "../../testdata/corpus"

// corpusFile is one named payload of a corpus or a table of bodies.
type corpusFile struct {
	name string
	body []byte
}

// mustReadFile returns the contents of path or fails the test.
func mustReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// loadCorpus returns the JSON files of dir itself but skip (a vector file,
// not a payload), sorted by name, and requires at least min of them.
func loadCorpus(tb testing.TB, dir, skip string, min int) []corpusFile {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []corpusFile
	for _, p := range paths {
		if filepath.Base(p) != skip {
			out = append(out, corpusFile{name: filepath.Base(p), body: mustReadFile(tb, p)})
		}
	}
	if len(out) < min {
		tb.Fatalf("corpus: got %d payloads in %s, want at least %d", len(out), dir, min)
	}
	return out
}

// walkCorpus returns every JSON file under dir, named by its path below
// dir, and requires at least min of them.
func walkCorpus(tb testing.TB, dir string, min int) []corpusFile {
	tb.Helper()
	var out []corpusFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, corpusFile{name: filepath.ToSlash(rel), body: mustReadFile(tb, p)})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out) < min {
		tb.Fatalf("corpus: got %d JSON files under %s, want at least %d", len(out), dir, min)
	}
	return out
}

// mustNew returns newScheme(o) or fails the test.
func mustNew[S Scheme](tb testing.TB, newScheme func(Options) (S, error), o Options) S {
	tb.Helper()
	s, err := newScheme(o)
	if err != nil {
		tb.Fatalf("new %T (%+v): %v", s, o, err)
	}
	return s
}

// jsonPost is a JSON POST of body with, for each header name, one value per
// element of its slice (none for an empty slice).
func jsonPost(body []byte, headers map[string][]string) Request {
	h := http.Header{"Content-Type": {"application/json"}}
	for name, values := range headers {
		for _, v := range values {
			h.Add(name, v)
		}
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// signed returns r signed by s (a Signer) with key at the given time, as
// the provider would.
func signed(tb testing.TB, s Scheme, r Request, key []byte, at time.Time) Request {
	tb.Helper()
	if err := s.(Signer).Sign(&r, key, at); err != nil {
		tb.Fatalf("Sign: %v", err)
	}
	return r
}

// flipByte returns a copy of b with byte i changed.
func flipByte(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

// changed returns f(body), or body when f is nil: the body of a table case
// that may alter the signed body.
func changed(body []byte, f func([]byte) []byte) []byte {
	if f == nil {
		return body
	}
	return f(body)
}

// orSecrets returns secrets, or def when secrets is nil: a table case's
// secrets where nil means the scheme's usual ones.
func orSecrets(secrets, def [][]byte) [][]byte {
	if secrets == nil {
		return def
	}
	return secrets
}

// Verify: causes, tables and the checks every scheme shares.

// errSentinels are the causes Verify may return.
var errSentinels = []error{ErrNotSigned, ErrMalformedHeader, ErrTooOld, ErrTooNew, ErrNoMatch, ErrNoSecret, ErrUntrustedCertificate}

// checkErr reports whether err matches want: nil for nil, errors.Is otherwise.
func checkErr(tb testing.TB, err, want error) {
	tb.Helper()
	if want == nil {
		if err != nil {
			tb.Fatalf("got %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, want) {
		tb.Fatalf("got %v, want %v", err, want)
	}
}

func isSentinel(err error) bool {
	for _, s := range errSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// checkVerifyErr is checkErr that also requires one of the Err* causes;
// want errRejected accepts any of them.
func checkVerifyErr(tb testing.TB, err, want error) {
	tb.Helper()
	if want == errRejected {
		if !isSentinel(err) {
			tb.Fatalf("got %v, want one of the Err* causes", err)
		}
		return
	}
	checkErr(tb, err, want)
	if err != nil && !isSentinel(err) {
		tb.Errorf("got %v, want one of the Err* causes", err)
	}
}

// verifyNoPanic runs Verify and turns a panic into a test failure.
func verifyNoPanic(tb testing.TB, s Scheme, r Request, secrets [][]byte, now time.Time) (err error) {
	tb.Helper()
	defer func() {
		if p := recover(); p != nil {
			tb.Fatalf("Verify panicked: %v (headers %q)", p, r.Header)
		}
	}()
	return s.Verify(r, secrets, now)
}

// verifyCase is one Verify input and the cause Verify must report.
type verifyCase struct {
	name    string
	r       Request
	secrets [][]byte
	want    error
}

// runVerifyCases requires at least min cases, then runs each as a sub-test
// named after it: Verify must not panic, must return want and, when it
// fails, one of the Err* causes.
func runVerifyCases(t *testing.T, s Scheme, now time.Time, min int, cases []verifyCase) {
	t.Helper()
	if len(cases) < min {
		t.Fatalf("got %d cases, want at least %d", len(cases), min)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkVerifyErr(t, verifyNoPanic(t, s, tc.r, tc.secrets, now), tc.want)
		})
	}
}

// checkFlipsRejected checks that r (the body called name), which Verify
// accepts, is refused with ErrNoMatch once its first, middle or last body
// byte is changed.
func checkFlipsRejected(t *testing.T, name string, s Scheme, r Request, secrets [][]byte, now time.Time) {
	t.Helper()
	for _, i := range []int{0, len(r.Body) / 2, len(r.Body) - 1} {
		flipped := r
		flipped.Body = flipByte(r.Body, i)
		if err := verifyNoPanic(t, s, flipped, secrets, now); !errors.Is(err, ErrNoMatch) {
			t.Errorf("%s: Verify(body with byte %d flipped): got %v, want %v", name, i, err, ErrNoMatch)
		}
	}
}

// toleranceCase is a scheme's tolerance (Options.Tolerance; 0 is the
// default), how long before now a request was signed (negative: after) and
// the cause Verify must report.
type toleranceCase struct {
	name      string
	tolerance time.Duration
	age       time.Duration
	want      error
}

// toleranceEdges are the first cases of a tolerance table: the edges of a
// window whose default is def.
func toleranceEdges(def time.Duration) []toleranceCase {
	return []toleranceCase{
		{"default, now", 0, 0, nil},
		{"default, at the edge", 0, def, nil},
		{"default, one second too old", 0, def + time.Second, ErrTooOld},
		{"default, future at the edge", 0, -def, nil},
		{"default, one second too far in the future", 0, -def - time.Second, ErrTooNew},
	}
}

// runToleranceCases runs each case as a sub-test named after it: setup
// builds the scheme with the case's tolerance and a request signed at
// testNow - age, which Verify at testNow must answer with want.
func runToleranceCases(t *testing.T, secrets [][]byte, cases []toleranceCase, setup func(t *testing.T, tolerance time.Duration, signedAt time.Time) (Scheme, Request)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s, r := setup(t, tt.tolerance, testNow.Add(-tt.age))
			checkVerifyErr(t, verifyNoPanic(t, s, r, secrets, testNow), tt.want)
		})
	}
}

// optionsCase is one Options value and whether the constructor must refuse
// it.
type optionsCase struct {
	name    string
	o       Options
	wantErr bool
}

// runOptionsCases runs each case as a sub-test named after it: newScheme
// must fail exactly when wantErr, and return a scheme exactly when it does
// not fail.
func runOptionsCases[S Scheme](t *testing.T, newScheme func(Options) (S, error), cases []optionsCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newScheme(tt.o)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("new scheme (%+v): got error %v, want error %t", tt.o, err, tt.wantErr)
			}
			v := reflect.ValueOf(s)
			if isNil := !v.IsValid() || v.IsNil(); isNil == (err == nil) {
				t.Fatalf("new scheme (%+v): got scheme %v with error %v, want exactly one of them", tt.o, s, err)
			}
		})
	}
}

// Identify and Split.

// identifyNoPanic runs Identify and turns a panic into a test failure.
func identifyNoPanic(tb testing.TB, s Scheme, r Request) (id Identity, err error) {
	tb.Helper()
	defer func() {
		if p := recover(); p != nil {
			tb.Fatalf("Identify panicked: %v (body %q)", p, r.Body)
		}
	}()
	return s.Identify(r)
}

// identifyCase is one body and the identity Identify must return; a zero
// want.ID means ErrInvalidPayload.
type identifyCase struct {
	name string
	body string
	want Identity
}

// runIdentifyCases runs each case as a sub-test named after it: Identify of
// request(body) must not panic and must return the case's identity, which
// must keep the identity contract.
func runIdentifyCases(t *testing.T, s Scheme, cases []identifyCase, request func(body []byte) Request) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, s, request([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
			if err == nil {
				checkValidIdentity(t, got)
			}
		})
	}
}

// checkIdentity compares an Identify result with want; a zero want.ID means
// ErrInvalidPayload is expected.
func checkIdentity(tb testing.TB, got Identity, err error, want Identity) {
	tb.Helper()
	if want.ID == "" {
		if !errors.Is(err, ErrInvalidPayload) {
			tb.Fatalf("Identify: got %+v, %v; want %v", got, err, ErrInvalidPayload)
		}
		return
	}
	if err != nil {
		tb.Fatalf("Identify: got %v, want nil", err)
	}
	if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) || got.Account != want.Account || got.Payload != nil || !sameAttrs(got.Attributes, want.Attributes) {
		tb.Errorf("Identify: got %+v, want %+v", got, want)
	}
}

// sameAttrs reports whether a and b hold the same attributes; nil (no
// attributes) is not an empty map.
func sameAttrs(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkValidIdentity asserts the identity contract every scheme shares.
func checkValidIdentity(tb testing.TB, id Identity) {
	tb.Helper()
	for _, s := range []string{id.ID, id.Type} {
		if s == "" || len(s) > MaxIdentity || !utf8.ValidString(s) {
			tb.Fatalf("Identify: got id %q type %q; want both non-empty UTF-8 of at most %d bytes", id.ID, id.Type, MaxIdentity)
		}
	}
}

// splitScheme is a scheme whose one delivery carries several events.
type splitScheme interface {
	Scheme
	Splitter
}

// splitCase is one delivery body and the ids of the events Split must
// return in order; want nil means ErrInvalidPayload.
type splitCase struct {
	name string
	body string
	want []string
}

// runSplitCases runs each case as a sub-test named after it: Split must
// return the case's ids, each event with a type and its JSON payload, and
// Identify must accept the body exactly when it holds one event. each, if
// not nil, checks every event further.
func runSplitCases(t *testing.T, s splitScheme, cases []splitCase, each func(t *testing.T, id Identity)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Split(Request{Body: []byte(tt.body)})
			if tt.want == nil {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("Split(%q): got %+v, %v; want %v", tt.body, got, err, ErrInvalidPayload)
				}
				return
			}
			if err != nil {
				t.Fatalf("Split(%q): got %v, want nil", tt.body, err)
			}
			ids := make([]string, len(got))
			for i, id := range got {
				ids[i] = id.ID
				if id.Type == "" || !json.Valid(id.Payload) {
					t.Errorf("Split(%q)[%d]: got %+v, want a type and the event's JSON", tt.body, i, id)
				}
				if each != nil {
					each(t, id)
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Split(%q): got ids %q, want %q", tt.body, ids, tt.want)
			}
			if _, err := s.Identify(Request{Body: []byte(tt.body)}); (err == nil) != (len(tt.want) == 1) {
				t.Errorf("Identify(%d events): got %v", len(tt.want), err)
			}
		})
	}
}

// Fuzz targets.

// fuzzHeaders turns one fuzzed string into header values: none when empty,
// otherwise one value per line, so the fuzzer also reaches the
// repeated-header path.
func fuzzHeaders(header string) []string {
	if header == "" {
		return nil
	}
	return strings.Split(header, "\n")
}

// fuzzVerify is the common part of the Verify fuzz targets: r must be
// refused without secrets and, with secrets, either accepted or refused with
// one of the Err* causes. It reports whether r was accepted, for the target
// to check that it is rightly signed.
func fuzzVerify(t *testing.T, s Scheme, r Request, secrets [][]byte, now time.Time) bool {
	t.Helper()
	if err := s.Verify(r, nil, now); err == nil {
		t.Fatalf("Verify(headers %q) with no secrets: got nil, want an error", r.Header)
	}
	err := s.Verify(r, secrets, now)
	if err != nil && !isSentinel(err) {
		t.Fatalf("Verify(headers %q, body %q): got %v, want one of the Err* causes", r.Header, r.Body, err)
	}
	return err == nil
}

// checkAcceptedHex fails unless sig, which Verify accepted, is sign(secret)
// for one of secrets: prefix exactly, the hex digits in either case.
func checkAcceptedHex(t *testing.T, sig, prefix string, secrets [][]byte, sign func(secret []byte) string) {
	t.Helper()
	for _, secret := range secrets {
		if strings.HasPrefix(sig, prefix) && strings.EqualFold(sig, sign(secret)) {
			return
		}
	}
	t.Fatalf("Verify(%q): got nil, but it is not the signature of the body under a configured secret", sig)
}

// acceptedUnix checks a timestamp Verify accepted: canonical decimal unix
// seconds within DefaultTolerance of testNow. It returns the time.
func acceptedUnix(t *testing.T, ts string) time.Time {
	t.Helper()
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != ts {
		t.Fatalf("Verify: accepted timestamp %q", ts)
	}
	at := time.Unix(n, 0)
	if d := testNow.Sub(at); d > DefaultTolerance || d < -DefaultTolerance {
		t.Fatalf("Verify: accepted a timestamp %s away from now", d)
	}
	return at
}

// fuzzIdentify is the common part of the Identify fuzz targets: Identify
// returns an identity (ok) or ErrInvalidPayload, nothing else.
func fuzzIdentify(t *testing.T, s Scheme, r Request) (id Identity, ok bool) {
	t.Helper()
	// Tenant reads the same unverified bytes, before any verification.
	if tn, isTenanter := s.(Tenanter); isTenanter {
		if a, ok := tn.Tenant(r); ok && a == "" {
			t.Fatalf("Tenant(%q): ok with an empty account", r.Body)
		}
	}
	id, err := s.Identify(r)
	if err != nil {
		if !errors.Is(err, ErrInvalidPayload) {
			t.Fatalf("Identify(%q): got %v, want %v", r.Body, err, ErrInvalidPayload)
		}
		return Identity{}, false
	}
	return id, true
}

// fuzzIdentifyValid checks the Identify contract: ErrInvalidPayload or a
// valid identity, never a panic.
func fuzzIdentifyValid(t *testing.T, s Scheme, r Request) {
	t.Helper()
	if id, ok := fuzzIdentify(t, s, r); ok {
		checkValidIdentity(t, id)
	}
}

// fuzzSplit is the body of the Split fuzz targets. "{long}" in body stands
// for 600 bytes, to reach the length limits without a long seed. Split
// returns ErrInvalidPayload or at least one event, each with an id of 1 to
// MaxIdentity bytes, a type and a JSON payload taken from the body; Identify
// accepts the body exactly when it holds one event.
func fuzzSplit(t *testing.T, s splitScheme, body []byte) {
	t.Helper()
	body = bytes.ReplaceAll(body, []byte("{long}"), bytes.Repeat([]byte("a"), 600))
	ids, err := s.Split(Request{Body: body})
	if err != nil {
		if !errors.Is(err, ErrInvalidPayload) {
			t.Fatalf("Split: got %v, want %v", err, ErrInvalidPayload)
		}
		return
	}
	if len(ids) == 0 {
		t.Fatal("Split: got no events and no error")
	}
	for _, id := range ids {
		if id.ID == "" || len(id.ID) > MaxIdentity || id.Type == "" || !json.Valid(id.Payload) || !bytes.Contains(body, id.Payload) {
			t.Fatalf("Split: got %+v", id)
		}
	}
	if _, err := s.Identify(Request{Body: body}); (err == nil) != (len(ids) == 1) {
		t.Fatalf("Identify: got %v for %d events", err, len(ids))
	}
}

// Benchmarks.

// benchRun runs op once per iteration in the sub-benchmark name, reporting
// allocations and n bytes processed per iteration.
func benchRun(b *testing.B, name string, n int, op func(b *testing.B)) {
	b.Helper()
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(n))
		for b.Loop() {
			op(b)
		}
	})
}

// benchScheme checks that s accepts and identifies r, then runs the
// sub-benchmarks bareName (bare is one run of the scheme's bare primitive
// over the same bytes, the floor), "verify" and "verify+identify", each over
// len(r.Body) bytes. "verify+identify" times what ingest does besides
// Verify: CertificateURL for a Certified scheme (r.Certificate stands for
// the warm cache), Handshake or Confirmation when the scheme has one (r
// must be neither), then Split for a Splitter, else Identify. infra/bench parses these names.
func benchScheme(b *testing.B, s Scheme, r Request, secrets [][]byte, now time.Time, bareName string, bare func(b *testing.B)) {
	b.Helper()
	identify := func() error {
		_, err := s.Identify(r)
		return err
	}
	if sp, ok := s.(Splitter); ok {
		identify = func() error {
			_, err := sp.Split(r)
			return err
		}
	}
	if c, ok := s.(Confirmer); ok {
		next := identify
		identify = func() error {
			if _, _, isConfirmation, err := c.Confirmation(r); err != nil || isConfirmation {
				return fmt.Errorf("Confirmation: %v, confirmation %v; want an ordinary event", err, isConfirmation)
			}
			return next()
		}
	}
	if c, ok := s.(Certified); ok {
		// Ingest reads the certificate's URL before anything else (the
		// certificate itself comes from its warm cache).
		next := identify
		identify = func() error {
			if _, err := c.CertificateURL(r); err != nil {
				return err
			}
			return next()
		}
	}
	if hs, ok := s.(Handshaker); ok {
		next := identify
		identify = func() error {
			if _, isHandshake, err := hs.Handshake(r, secrets); err != nil || isHandshake {
				return fmt.Errorf("Handshake: %v, handshake %v; want an ordinary event", err, isHandshake)
			}
			return next()
		}
	}
	// Each variant must succeed once before it is timed.
	if err := s.Verify(r, secrets, now); err != nil {
		b.Fatal(err)
	}
	if err := identify(); err != nil {
		b.Fatal(err)
	}
	n := len(r.Body)
	benchRun(b, bareName, n, bare)
	benchRun(b, "verify", n, func(b *testing.B) {
		if err := s.Verify(r, secrets, now); err != nil {
			b.Fatal(err)
		}
	})
	benchRun(b, "verify+identify", n, func(b *testing.B) {
		if err := s.Verify(r, secrets, now); err != nil {
			b.Fatal(err)
		}
		if err := identify(); err != nil {
			b.Fatal(err)
		}
	})
}
