package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	boxPrimary   = []byte("box-primary-signature-key-4Rt8Zq2Lm6")
	boxSecondary = []byte("box-secondary-signature-key-9Wx1Kp5")
	boxSecrets   = [][]byte{boxPrimary, boxSecondary}
)

// The published vector of Box's SDKs (box-node-sdk's and box-python-sdk's
// validateMessage / validate_message tests): BODY and HEADERS, signed with
// SamplePrimaryKey and SampleSecondaryKey at 2020-01-01T00:00:00-07:00.
const (
	boxSDKBody      = `{"type":"webhook_event","webhook":{"id":"1234567890"},"trigger":"FILE.UPLOADED","source":{"id":"1234567890","type":"file","name":"Test.txt"}}`
	boxSDKTimestamp = "2020-01-01T00:00:00-07:00"
	boxSDKPrimary   = "6TfeAW3A1PASkgboxxA5yqHNKOwFyMWuEXny/FPD5hI="
	boxSDKSecondary = "v+1CD1Jdo3muIcbpv5lxxgPglOqMfsNHPV899xWYydo="
)

// boxFileUploaded is shaped like the FILE.UPLOADED payload of Box's
// webhook documentation (values made up here).
const boxFileUploaded = `{"type":"webhook_event","id":"eb0c4e06-751f-4e13-a6a3-c5c3ecf8a5f3","created_at":"2024-07-26T00:40:00-07:00","trigger":"FILE.UPLOADED","webhook":{"id":"53","type":"webhook"},"created_by":{"type":"user","id":"2","name":"Ada Obi","login":"ada@example.com"},"source":{"id":"123","type":"file","name":"report.pdf","parent":{"type":"folder","id":"0","name":"All Files"}}}`

func mustNewBox(tb testing.TB, o Options) *Box {
	tb.Helper()
	return mustNew(tb, NewBox, o)
}

// boxRequest builds a delivery; "-" leaves a signature or the timestamp
// out.
func boxRequest(body []byte, primary, secondary, ts string) Request {
	h := map[string][]string{
		BoxAlgorithmHeader: {"HmacSHA256"},
		BoxVersionHeader:   {"1"},
		BoxDeliveryHeader:  {"f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f"},
	}
	for name, v := range map[string]string{BoxPrimaryHeader: primary, BoxSecondaryHeader: secondary, BoxTimestampHeader: ts} {
		if v != "-" {
			h[name] = []string{v}
		}
	}
	return jsonPost(body, h)
}

// boxSig signs body at ts with key, apart from the code under test.
func boxSig(body, key []byte, ts string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	mac.Write([]byte(ts))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestBoxSDKVectors reproduces the SDKs' validateMessage cases: either
// key alone verifies its signature; wrong keys, another version or
// algorithm, and a message ten years old or 15 minutes ahead do not.
func TestBoxSDKVectors(t *testing.T) {
	sdkNow, _ := time.Parse(time.RFC3339, boxSDKTimestamp)
	body := []byte(boxSDKBody)
	req := func(mod func(http.Header)) Request {
		r := boxRequest(body, boxSDKPrimary, boxSDKSecondary, boxSDKTimestamp)
		if mod != nil {
			mod(r.Header)
		}
		return r
	}
	k := func(keys ...string) [][]byte {
		var out [][]byte
		for _, s := range keys {
			out = append(out, []byte(s))
		}
		return out
	}
	b := mustNewBox(t, Options{})
	tests := []struct {
		name    string
		r       Request
		secrets [][]byte
		now     time.Time
		want    error
	}{
		{"both keys", req(nil), k("SamplePrimaryKey", "SampleSecondaryKey"), sdkNow, nil},
		{"primary only", req(nil), k("SamplePrimaryKey"), sdkNow, nil},
		{"wrong primary, right secondary", req(nil), k("WrongPrimaryKey", "SampleSecondaryKey"), sdkNow, nil},
		{"both wrong", req(nil), k("WrongPrimaryKey", "WrongSecondaryKey"), sdkNow, ErrNoMatch},
		{"no keys", req(nil), nil, sdkNow, ErrNoSecret},
		{"signature version 2", req(func(h http.Header) { h.Set(BoxVersionHeader, "2") }), k("SamplePrimaryKey"), sdkNow, ErrMalformedHeader},
		{"another algorithm", req(func(h http.Header) { h.Set(BoxAlgorithmHeader, "WrongAlgorithm") }), k("SamplePrimaryKey"), sdkNow, ErrMalformedHeader},
		{"ten years later", req(nil), k("SamplePrimaryKey"), sdkNow.AddDate(10, 0, 0), ErrTooOld},
		{"15 minutes earlier (the message in the future)", req(nil), k("SamplePrimaryKey"), sdkNow.Add(-15 * time.Minute), ErrTooNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, verifyNoPanic(t, b, tt.r, tt.secrets, tt.now), tt.want) })
	}
	if got := boxSig(body, []byte("SamplePrimaryKey"), boxSDKTimestamp); got != boxSDKPrimary {
		t.Errorf("the test's own signature: got %q, want the SDKs' %q", got, boxSDKPrimary)
	}
}

func TestBoxCorpus(t *testing.T) {
	b := mustNewBox(t, Options{})
	ts := testNow.UTC().Format(time.RFC3339)
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "FILE.UPLOADED", body: []byte(boxFileUploaded)})
	for _, f := range files {
		r := signed(t, b, boxRequest(f.body, "-", "-", "-"), boxPrimary, testNow)
		if got, want := r.Header.Get(BoxPrimaryHeader), boxSig(f.body, boxPrimary, ts); got != want || r.Header.Get(BoxTimestampHeader) != ts {
			t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
		}
		checkErr(t, verifyNoPanic(t, b, r, boxSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, b, r, boxSecrets, testNow)
	}
	got, err := b.Identify(boxRequest([]byte(boxFileUploaded), "-", "-", "-"))
	checkIdentity(t, got, err, Identity{ID: "eb0c4e06-751f-4e13-a6a3-c5c3ecf8a5f3", Type: "FILE.UPLOADED", Created: time.Date(2024, 7, 26, 7, 40, 0, 0, time.UTC)})
	got, err = b.Identify(boxRequest([]byte(boxSDKBody), "-", "-", "-"))
	checkIdentity(t, got, err, Identity{ID: "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f", Type: "FILE.UPLOADED"})
}

func TestBoxTolerance(t *testing.T) {
	body := []byte(boxFileUploaded)
	runToleranceCases(t, boxSecrets, toleranceEdges(BoxTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		b := mustNewBox(t, Options{Tolerance: tolerance})
		return b, signed(t, b, boxRequest(body, "-", "-", "-"), boxPrimary, at)
	})
}

func TestNewBox(t *testing.T) {
	runOptionsCases(t, NewBox, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -1}, true},
		{"url set", Options{URL: "https://example.com/box"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

func boxMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(boxFileUploaded)
	ts := testNow.UTC().Format(time.RFC3339)
	p, s := boxSig(body, boxPrimary, ts), boxSig(body, boxSecondary, ts)
	wrong := boxSig(body, []byte("box-wrong"), ts)
	cases := []verifyCase{
		{"both", boxRequest(body, p, s, ts), boxSecrets, nil},
		{"primary only", boxRequest(body, p, "-", ts), boxSecrets, nil},
		{"secondary only", boxRequest(body, "-", s, ts), boxSecrets, nil},
		{"neither", boxRequest(body, "-", "-", ts), boxSecrets, ErrNotSigned},
		{"both wrong", boxRequest(body, wrong, wrong, ts), boxSecrets, ErrNoMatch},
		{"a wrong primary, a right secondary", boxRequest(body, wrong, s, ts), boxSecrets, nil},
		{"primary not base64", boxRequest(body, "!"+p[1:], s, ts), boxSecrets, ErrMalformedHeader},
		{"hex instead of base64", boxRequest(body, strings.Repeat("ab", 32), "-", ts), boxSecrets, ErrMalformedHeader},
		{"no timestamp", boxRequest(body, p, s, "-"), boxSecrets, ErrMalformedHeader},
		{"timestamp unix seconds", boxRequest(body, boxSig(body, boxPrimary, testTS), "-", testTS), boxSecrets, ErrMalformedHeader},
		{"timestamp not the signed one", boxRequest(body, p, "-", testNow.Add(time.Second).UTC().Format(time.RFC3339)), boxSecrets, ErrNoMatch},
		{"the same instant in another zone", boxRequest(body, p, "-", testNow.In(time.FixedZone("", -7*3600)).Format(time.RFC3339)), boxSecrets, ErrNoMatch},
		{"signed over the body alone", boxRequest(body, base64.StdEncoding.EncodeToString(macOf(sha256.New, boxPrimary, body)), "-", ts), boxSecrets, ErrNoMatch},
		{"signed over timestamp then body", boxRequest(body, base64.StdEncoding.EncodeToString(macOf(sha256.New, boxPrimary, []byte(ts), body)), "-", ts), boxSecrets, ErrNoMatch},
		{"an hour old", boxRequest(body, boxSig(body, boxPrimary, testNow.Add(-time.Hour).UTC().Format(time.RFC3339)), "-", testNow.Add(-time.Hour).UTC().Format(time.RFC3339)), boxSecrets, ErrTooOld},
		{"body truncated", boxRequest(body[:len(body)-1], p, s, ts), boxSecrets, ErrNoMatch},
		{"body with appended newline", boxRequest(append(bytes.Clone(body), '\n'), p, s, ts), boxSecrets, ErrNoMatch},
	}
	b := mustNewBox(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        b,
		r:        signed(tb, b, boxRequest(body, "-", "-", "-"), boxPrimary, testNow),
		secrets:  boxSecrets,
		sig:      signedField{header: BoxPrimaryHeader},
		enc:      encBase64,
		ts:       &signedField{header: BoxTimestampHeader},
		tsFormat: func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		tsWant:   map[string]error{"0": ErrMalformedHeader}, // not RFC 3339
	})
	return []malformedRun{{b, cases}, {b, generic}}
}

func TestBoxVerifyMalformed(t *testing.T) { runMalformed(t, boxMalformedRuns(t)) }

var boxIdentifyCases = []identifyCase{
	{name: "id in the body", body: `{"type":"webhook_event","id":"e1","trigger":"FOLDER.CREATED"}`, want: Identity{ID: "e1", Type: "FOLDER.CREATED"}},
	{name: "no id: the delivery's", body: `{"trigger":"FILE.UPLOADED"}`, want: Identity{ID: "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f", Type: "FILE.UPLOADED"}},
	{name: "the source's id is not the event's", body: `{"source":{"id":"123"},"id":"e1","trigger":"t"}`, want: Identity{ID: "e1", Type: "t"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[]`},
	{name: "missing trigger", body: `{"id":"e1"}`},
	{name: "numeric id", body: `{"id":1,"trigger":"t"}`},
	{name: "empty id", body: `{"id":"","trigger":"t"}`},
	{name: "type not webhook_event", body: `{"type":"file","id":"e1","trigger":"t"}`},
	{name: "created_at not RFC 3339", body: `{"id":"e1","trigger":"t","created_at":"26/07/2024"}`},
}

func TestBoxIdentify(t *testing.T) {
	b := mustNewBox(t, Options{})
	for _, tc := range boxIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, b, boxRequest([]byte(tc.body), "-", "-", "-"))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzBoxVerify(f *testing.F) {
	ts := testNow.UTC().Format(time.RFC3339)
	f.Add("{p}", "{s}", ts, []byte(boxFileUploaded))
	f.Add("x", "{s}", ts, []byte(boxFileUploaded))
	f.Add("{p}", "", boxSDKTimestamp, []byte(boxSDKBody))
	b := mustNewBox(f, Options{})
	f.Fuzz(func(t *testing.T, p, s, ts string, body []byte) {
		p = strings.ReplaceAll(p, "{p}", boxSig(body, boxPrimary, ts))
		s = strings.ReplaceAll(s, "{s}", boxSig(body, boxSecondary, ts))
		r := boxRequest(body, p, s, ts)
		if !fuzzVerify(t, b, r, boxSecrets, testNow) {
			return
		}
		at, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			t.Fatalf("Verify: accepted timestamp %q", ts)
		}
		if d := testNow.Sub(at); d > BoxTolerance || d < -BoxTolerance {
			t.Fatalf("Verify: accepted a timestamp %s away", d)
		}
		for _, key := range boxSecrets {
			if want := boxSig(body, key, ts); p == want || s == want {
				return
			}
		}
		t.Fatalf("Verify(%q, %q at %q): no configured key's signature", p, s, ts)
	})
}

func FuzzBoxIdentify(f *testing.F) {
	f.Add([]byte(boxFileUploaded))
	for _, tc := range boxIdentifyCases {
		f.Add([]byte(tc.body))
	}
	b := mustNewBox(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, b, boxRequest(body, "-", "-", "-"))
		if !ok {
			return
		}
		var doc struct {
			ID      *string `json:"id"`
			Trigger string  `json:"trigger"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.Trigger != got.Type || (doc.ID != nil && *doc.ID != got.ID) {
			t.Fatalf("Identify(%q): got %+v (%v)", body, got, err)
		}
	})
}

// BenchmarkBox compares the scheme with one bare HMAC over the same bytes
// (the primary signature matches the first key).
func BenchmarkBox(b *testing.B) {
	body := []byte(boxFileUploaded)
	ts := testNow.UTC().Format(time.RFC3339)
	r := boxRequest(body, boxSig(body, boxPrimary, ts), "-", ts)
	var sum [sha256.Size]byte
	benchScheme(b, mustNewBox(b, Options{}), r, boxSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, boxPrimary)
		mac.Write(body)
		mac.Write([]byte(ts))
		mac.Sum(sum[:0])
	})
}
