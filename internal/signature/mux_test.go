package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	muxSecret    = []byte("mux-webhook-signing-secret-4e2a9c7b1d")
	muxSecretOld = []byte("mux-webhook-signing-secret-old-8f3b5d")
	muxSecrets   = [][]byte{muxSecret}
)

// muxAssetReady is shaped like the video.asset.ready event of Mux's webhook
// documentation (values made up here).
const muxAssetReady = `{"type":"video.asset.ready","request_id":null,"object":{"type":"asset","id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"},"id":"3a56ac3d-33da-4366-855b-f592d898409d","environment":{"name":"Production","id":"j0863n"},"data":{"tracks":[{"type":"video","max_width":1280,"max_height":544,"max_frame_rate":23.976,"id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002","duration":153.361542},{"type":"audio","max_channels":2,"max_channel_layout":"stereo","id":"FzB95vBizv02bYNqO5QVzNWRrVo5SnQju","duration":153.361678}],"status":"ready","playback_ids":[{"policy":"public","id":"88Kb8bfd7lG9t02jD0zPa02QfHCyt9Ykb1Rx6"}],"mp4_support":"standard","max_stored_resolution":"HD","master_access":"none","id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002","created_at":1607876845},"created_at":"2020-12-13T16:27:31.000000Z","attempts":[],"accessor_source":null,"accessor":null}`

// muxSDKVector is the case of @mux/mux-node's tests/api-resources/
// webhooks.test.ts: the SDK accepts hash for payload under secret at
// timestamp, and its clock is mocked to that second.
const (
	muxSDKSecret  = "SuperSecret123"
	muxSDKTS      = "1565125718"
	muxSDKHash    = "854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7"
	muxSDKPayload = `{"test":"body"}`
	// The SDK's unwrap_times case: another payload, the same secret and
	// timestamp.
	muxSDKHash2    = "bd315c24bce1c2b8ad325696f26530c8ef7d7d830afb7c1381903705d04607be"
	muxSDKPayload2 = `{"test":{"nested":{"nanos":718234, "seconds":1691711005}}}`
)

func mustNewMux(tb testing.TB, o Options) *Mux {
	tb.Helper()
	return mustNew(tb, NewMux, o)
}

func muxRequest(body []byte, headers ...string) Request {
	return jsonPost(body, map[string][]string{MuxSignatureHeader: headers})
}

// muxHex is the v1 of body at the raw ts, computed independently of the
// code under test.
func muxHex(body, secret []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// TestMuxSDKVectors reproduces the cases of @mux/mux-node's
// verifySignature tests. The SDK throws; the causes are ours.
func TestMuxSDKVectors(t *testing.T) {
	sdkNow := time.Unix(1565125718, 0)
	secret := [][]byte{[]byte(muxSDKSecret)}
	tests := []struct {
		name   string
		body   string
		header string
		now    time.Time
		want   error
	}{
		{"valid signature", muxSDKPayload, "t=" + muxSDKTS + ",v1=" + muxSDKHash, sdkNow, nil},
		{"unwrap_times payload", muxSDKPayload2, "t=" + muxSDKTS + ",v1=" + muxSDKHash2, sdkNow, nil},
		{"timestamp outside threshold (6 minutes)", muxSDKPayload, "t=" + muxSDKTS + ",v1=" + muxSDKHash, sdkNow.Add(6 * time.Minute), ErrTooOld},
		{"multiple signatures", muxSDKPayload, "t=" + muxSDKTS + ",v1=invalid-sig,v1=" + muxSDKHash, sdkNow, nil},
		{"different signature version", muxSDKPayload, "t=" + muxSDKTS + ",v2=" + muxSDKHash, sdkNow, ErrNoMatch},
		{"multiple signatures with different version", muxSDKPayload, "t=" + muxSDKTS + ",v2=" + muxSDKHash + ",v1=" + muxSDKHash, sdkNow, nil},
		{"signature timestamp missing", muxSDKPayload, muxSDKHash, sdkNow, ErrMalformedHeader},
		{"the other payload's hash", muxSDKPayload, "t=" + muxSDKTS + ",v1=" + muxSDKHash2, sdkNow, ErrNoMatch},
	}
	m := mustNewMux(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, verifyNoPanic(t, m, muxRequest([]byte(tt.body), tt.header), secret, tt.now), tt.want)
		})
	}
	if got, want := SignMux([]byte(muxSDKPayload), []byte(muxSDKSecret), sdkNow), "t="+muxSDKTS+",v1="+muxSDKHash; got != want {
		t.Errorf("SignMux: got %q, want the SDK's %q", got, want)
	}
}

// TestMuxCorpus signs every corpus body and the example event, checks the
// v1 against an independent HMAC, and that a flipped byte fails.
func TestMuxCorpus(t *testing.T) {
	m := mustNewMux(t, Options{})
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "video.asset.ready", body: []byte(muxAssetReady)})
	for _, f := range files {
		header := SignMux(f.body, muxSecret, testNow)
		if want := "t=" + testTS + ",v1=" + muxHex(f.body, muxSecret, testTS); header != want {
			t.Errorf("%s: SignMux: got %q, want %q", f.name, header, want)
		}
		checkErr(t, verifyNoPanic(t, m, muxRequest(f.body, header), muxSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, m, muxRequest(f.body, header), muxSecrets, testNow)
	}
	got, err := m.Identify(muxRequest([]byte(muxAssetReady)))
	checkIdentity(t, got, err, Identity{ID: "3a56ac3d-33da-4366-855b-f592d898409d", Type: "video.asset.ready", Created: time.Date(2020, 12, 13, 16, 27, 31, 0, time.UTC)})
	retry := strings.Replace(muxAssetReady, `"attempts":[]`, `"attempts":[{"webhook_id":1,"response_status_code":500,"response_headers":{},"response_body":"","max_attempts":30,"id":"7d1b0a52","created_at":"2020-12-13T16:27:32.000000Z","address":"https://hooks.example.com/mux"}]`, 1)
	again, err := m.Identify(muxRequest([]byte(retry)))
	if err != nil || again.ID != got.ID {
		t.Errorf("a retry (attempts grown): got %+v, %v, want id %q", again, err, got.ID)
	}
}

func TestMuxRotation(t *testing.T) {
	body := []byte(muxAssetReady)
	cur, old := muxHex(body, muxSecret, testTS), muxHex(body, muxSecretOld, testTS)
	wrong := muxHex(body, []byte("mux-wrong"), testTS)
	both := [][]byte{muxSecret, muxSecretOld}
	req := func(v1s ...string) Request { return muxRequest(body, "t="+testTS+",v1="+strings.Join(v1s, ",v1=")) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{muxSecretOld, muxSecret}, nil},
		{"retired secret", req(old), muxSecrets, ErrNoMatch},
		{"two v1, wrong then right", req(wrong, cur), muxSecrets, nil},
		{"two v1 both wrong", req(wrong, old), muxSecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, muxSecret}, nil},
		{"empty secret never matches an empty-key signature", req(muxHex(body, nil, testTS)), [][]byte{{}, muxSecret}, ErrNoMatch},
	}
	runVerifyCases(t, mustNewMux(t, Options{}), testNow, 0, tests)
}

func TestMuxTolerance(t *testing.T) {
	body := []byte(muxAssetReady)
	runToleranceCases(t, muxSecrets, toleranceEdges(DefaultTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		m := mustNewMux(t, Options{Tolerance: tolerance})
		return m, signed(t, m, muxRequest(body), muxSecret, at)
	})
}

func TestNewMux(t *testing.T) {
	runOptionsCases(t, NewMux, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -1}, true},
		{"url set", Options{URL: "https://example.com/mux"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// muxCase is one set of Mux-Signature values and the cause Verify must
// report.
type muxCase struct {
	name    string
	headers []string
	body    func([]byte) []byte
	want    error
}

// muxMalformedCases builds the table for body signed at testNow; the fuzz
// test reuses it.
func muxMalformedCases(body []byte) []muxCase {
	sig := muxHex(body, muxSecret, testTS)
	ok := "t=" + testTS + ",v1=" + sig
	at := func(ts string) string { return "t=" + ts + ",v1=" + muxHex(body, muxSecret, ts) }
	wrong := muxHex(body, []byte("mux-wrong"), testTS)
	v1s := func(n int) string { return "t=" + testTS + strings.Repeat(",v1="+wrong, n-1) + ",v1=" + sig }
	return []muxCase{
		{name: "valid", headers: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", headers: []string{""}, want: ErrNotSigned},
		{name: "two headers", headers: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "t=abc", headers: []string{"t=abc,v1=" + sig}, want: ErrMalformedHeader},
		{name: "t empty", headers: []string{"t=,v1=" + sig}, want: ErrMalformedHeader},
		{name: "t negative", headers: []string{at("-1")}, want: ErrMalformedHeader},
		{name: "t leading zero", headers: []string{at("0" + testTS)}, want: ErrMalformedHeader},
		{name: "t milliseconds", headers: []string{at(testTS + "000")}, want: ErrMalformedHeader},
		{name: "t 0", headers: []string{at("0")}, want: ErrTooOld},
		{name: "t far future", headers: []string{at("999999999999")}, want: ErrTooNew},
		{name: "t missing", headers: []string{"v1=" + sig}, want: ErrMalformedHeader},
		{name: "t repeated", headers: []string{"t=" + testTS + ",t=" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "t not the signed one", headers: []string{"t=1721954401,v1=" + sig}, want: ErrNoMatch},
		{name: "Paddle's ts= key", headers: []string{"ts=" + testTS + ",v1=" + sig}, want: ErrMalformedHeader},
		{name: "v1 too short", headers: []string{"t=" + testTS + ",v1=" + sig[:62]}, want: ErrNoMatch},
		{name: "v1 too long", headers: []string{ok + "00"}, want: ErrNoMatch},
		{name: "v1 non-hex", headers: []string{"t=" + testTS + ",v1=" + sig[:63] + "g"}, want: ErrNoMatch},
		{name: "v1 uppercase hex is accepted", headers: []string{"t=" + testTS + ",v1=" + strings.ToUpper(sig)}, want: nil},
		{name: "v1 empty", headers: []string{"t=" + testTS + ",v1="}, want: ErrNoMatch},
		{name: "v1 missing", headers: []string{"t=" + testTS}, want: ErrNoMatch},
		{name: "wrong secret", headers: []string{"t=" + testTS + ",v1=" + wrong}, want: ErrNoMatch},
		{name: "8 v1, last right", headers: []string{v1s(8)}, want: nil},
		{name: "9 v1", headers: []string{v1s(9)}, want: ErrMalformedHeader},
		{name: "semicolon separator", headers: []string{"t=" + testTS + ";v1=" + sig}, want: ErrMalformedHeader},
		{name: "space after comma", headers: []string{"t=" + testTS + ", v1=" + sig}, want: ErrNoMatch},
		{name: "pair without '='", headers: []string{ok + ",v1"}, want: ErrMalformedHeader},
		{name: "reversed order", headers: []string{"v1=" + sig + ",t=" + testTS}, want: nil},
		{name: "signed with ':' not '.'", headers: []string{"t=" + testTS + ",v1=" + hex.EncodeToString(macOf(sha256.New, muxSecret, []byte(testTS+":"), body))}, want: ErrNoMatch},
		{name: "body truncated by one byte", headers: []string{ok}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", headers: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", headers: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body re-indented", headers: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Indent(&c, b, "", " "); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
	}
}

func muxMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(muxAssetReady)
	var cases []verifyCase
	for _, tc := range muxMalformedCases(body) {
		cases = append(cases, verifyCase{tc.name, muxRequest(changed(body, tc.body), tc.headers...), muxSecrets, tc.want})
	}
	m := mustNewMux(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        m,
		r:        signed(tb, m, muxRequest(body), muxSecret, testNow),
		secrets:  muxSecrets,
		sig:      signedField{header: MuxSignatureHeader, prefix: "v1=", sep: ','},
		enc:      encHex,
		versions: []string{"v0=", "v2=", "v1a="},
		ts:       &signedField{header: MuxSignatureHeader, prefix: "t=", sep: ','},
		drop: map[string]string{
			// As for Stripe: the second copy's " t" key is unknown and
			// ignored, leaving one t and two identical, valid v1.
			"Mux-Signature comma-joined duplicate": "one t and two genuine v1, as the SDK parses it too",
		},
	})
	return []malformedRun{{m, cases}, {m, generic}}
}

func TestMuxVerifyMalformed(t *testing.T) { runMalformed(t, muxMalformedRuns(t)) }

// muxIdentifyCases is shared with the fuzz test as seeds; a zero want.ID
// means ErrInvalidPayload.
var muxIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"id":"e1","type":"video.asset.ready"}`, want: Identity{ID: "e1", Type: "video.asset.ready"}},
	{name: "created_at", body: `{"id":"e1","type":"t","created_at":"2020-12-13T16:27:31.000000Z"}`, want: Identity{ID: "e1", Type: "t", Created: time.Date(2020, 12, 13, 16, 27, 31, 0, time.UTC)}},
	{name: "the object's id is not the event's", body: `{"object":{"id":"a1","type":"asset"},"id":"e1","type":"t"}`, want: Identity{ID: "e1", Type: "t"}},
	{name: "created_at null", body: `{"id":"e1","type":"t","created_at":null}`, want: Identity{ID: "e1", Type: "t"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"id":"e1","type":"t"}]`},
	{name: "not JSON", body: `id=e1`},
	{name: "truncated", body: `{"id":"e1","type":"t"`},
	{name: "missing id", body: `{"type":"t"}`},
	{name: "numeric id", body: `{"id":1,"type":"t"}`},
	{name: "empty id", body: `{"id":"","type":"t"}`},
	{name: "id 513 bytes", body: `{"id":"` + strings.Repeat("e", 513) + `","type":"t"}`},
	{name: "missing type", body: `{"id":"e1"}`},
	{name: "type an object", body: `{"id":"e1","type":{"name":"t"}}`},
	{name: "created_at unix seconds", body: `{"id":"e1","type":"t","created_at":1607876845}`},
	{name: "created_at not RFC 3339", body: `{"id":"e1","type":"t","created_at":"13/12/2020"}`},
}

func TestMuxIdentify(t *testing.T) {
	m := mustNewMux(t, Options{})
	for _, tc := range muxIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, m, muxRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

// muxParse is the test's own reading of the t and v1 values of a header.
func muxParse(line string) (ts string, v1 []string) {
	for part := range strings.SplitSeq(line, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = append(v1, v)
		}
	}
	return ts, v1
}

func FuzzMuxVerify(f *testing.F) {
	f.Add("t="+testTS+",v1={v1}", []byte(muxAssetReady))
	f.Add("t="+testTS+",v1=00,v1={old}", []byte(muxAssetReady))
	body := []byte(muxAssetReady)
	for _, tc := range muxMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.headers, "\n"), muxHex(b, muxSecret, testTS), "{v1}"), b)
	}
	m := mustNewMux(f, Options{})
	secrets := [][]byte{muxSecret, muxSecretOld}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if strings.Contains(header, "{") {
			ts, _ := muxParse(header)
			header = strings.NewReplacer("{v1}", muxHex(body, muxSecret, ts), "{old}", muxHex(body, muxSecretOld, ts)).Replace(header)
		}
		values := fuzzHeaders(header)
		if !fuzzVerify(t, m, muxRequest(body, values...), secrets, testNow) {
			return
		}
		if len(values) != 1 {
			t.Fatalf("Verify(%q): accepted %d headers", header, len(values))
		}
		ts, v1 := muxParse(header)
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != ts {
			t.Fatalf("Verify(%q): accepted t %q", header, ts)
		}
		if d := testNow.Sub(time.Unix(n, 0)); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify(%q): accepted a t %s away from now", header, d)
		}
		for _, secret := range secrets {
			for _, v := range v1 {
				if strings.EqualFold(v, muxHex(body, secret, ts)) {
					return
				}
			}
		}
		t.Fatalf("Verify(%q): got nil, but no v1 is the HMAC for a configured secret", header)
	})
}

func FuzzMuxIdentify(f *testing.F) {
	f.Add([]byte(muxAssetReady))
	for _, tc := range muxIdentifyCases {
		f.Add([]byte(tc.body))
	}
	m := mustNewMux(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, m, muxRequest(body))
		if !ok {
			return
		}
		var doc struct{ ID, Type string }
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if got.ID != doc.ID || got.Type != doc.Type || got.ID == "" {
			t.Fatalf("Identify(%q): got %+v, want %+v", body, got, doc)
		}
	})
}

// BenchmarkMux compares the scheme with a bare HMAC over the same bytes
// (Mux publishes no Go library that verifies webhooks).
func BenchmarkMux(b *testing.B) {
	body := []byte(muxAssetReady)
	r := muxRequest(body, SignMux(body, muxSecret, testNow))
	prefix := []byte(testTS + ".")
	var sum [sha256.Size]byte
	benchScheme(b, mustNewMux(b, Options{}), r, muxSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, muxSecret)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}

// ExampleSignMux pins the header format with the SDK's own vector.
func ExampleSignMux() {
	fmt.Println(SignMux([]byte(`{"test":"body"}`), []byte("SuperSecret123"), time.Unix(1565125718, 0)))
	// Output: t=1565125718,v1=854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7
}
