package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	zoomSecret    = []byte("zoom_test_current_Q1w2E3r4T5y6")
	zoomSecretOld = []byte("zoom_test_previous_Z9x8C7v6B5n4")
	zoomSecrets   = [][]byte{zoomSecret}
)

// zoomBodies are Zoom webhook bodies in the shapes of Zoom's webhook
// reference (the project has no Zoom corpus: Zoom publishes no openly
// licensed captures). Each event_ts is a minute before testNow.
var zoomBodies = []corpusFile{
	{name: "meeting.started", body: []byte(`{"event":"meeting.started","payload":{"account_id":"o8KK_AAACq6BBEyA70CA","object":{"uuid":"czLF6FFFoQOKgAB99DlDb9g==","id":"111111111","host_id":"uLoRgfbbTayCX6r2Q_qQsQ","topic":"My Meeting","type":2,"start_time":"2024-07-26T00:38:00Z","timezone":"America/Los_Angeles","duration":60}},"event_ts":1721954340000}`)},
	{name: "meeting.ended", body: []byte(`{"event":"meeting.ended","payload":{"account_id":"o8KK_AAACq6BBEyA70CA","object":{"uuid":"czLF6FFFoQOKgAB99DlDb9g==","id":"111111111","host_id":"uLoRgfbbTayCX6r2Q_qQsQ","topic":"My Meeting","type":2,"start_time":"2024-07-26T00:38:00Z","end_time":"2024-07-26T00:39:00Z","timezone":"America/Los_Angeles","duration":60}},"event_ts":1721954340000}`)},
	{name: "meeting.participant_joined", body: []byte("{\n  \"event\": \"meeting.participant_joined\",\n  \"event_ts\": 1721954340000,\n  \"payload\": {\n    \"account_id\": \"o8KK_AAACq6BBEyA70CA\",\n    \"object\": {\n      \"id\": \"111111111\",\n      \"participant\": {\n        \"user_id\": \"16778240\",\n        \"user_name\": \"Jill Chill\",\n        \"join_time\": \"2024-07-26T00:38:59Z\"\n      }\n    }\n  }\n}\n")},
	{name: "recording.completed", body: []byte(`{"event":"recording.completed","event_ts":1721954340000,"payload":{"account_id":"o8KK_AAACq6BBEyA70CA","object":{"id":"111111111","uuid":"czLF6FFFoQOKgAB99DlDb9g==","recording_files":[{"id":"ed6c2f27-2ae7-42f4-b3d0-835b493e4fa8","file_type":"MP4","file_size":246560,"download_url":"https://example.zoom.us/rec/download/x"}]},"download_token":"abJhbGciOiJIUzUxMiJ9.eyJpc3MiOiJodHRwczovL2V2ZW50Lnpvb20udXMifQ"}}`)},
	{name: "endpoint.url_validation", body: []byte(`{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1721954340000,"event":"endpoint.url_validation"}`)},
}

func mustNewZoom(tb testing.TB, o Options) *Zoom {
	tb.Helper()
	return mustNew(tb, NewZoom, o)
}

func zoomRequest(body, secret []byte, ts string) Request {
	return slackV0Request(ZoomSignatureHeader, ZoomTimestampHeader, body,
		[]string{"v0=" + slackV0Hex(secret, ts, body)}, []string{ts})
}

// zoomWantIdentity computes the identity independently of the code under
// test; ok is false for the handshake.
func zoomWantIdentity(tb testing.TB, body []byte) (Identity, bool) {
	tb.Helper()
	var m struct {
		Event   string `json:"event"`
		EventTS int64  `json:"event_ts"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	if m.Event == ZoomURLValidation {
		return Identity{}, false
	}
	sum := sha256.Sum256(body)
	return Identity{
		ID:      fmt.Sprintf("%s:%d:%x", m.Event, m.EventTS, sum),
		Type:    m.Event,
		Created: time.UnixMilli(m.EventTS),
	}, true
}

// TestZoomVectors pins signatures and a url_validation answer computed
// outside Go (openssl dgst -sha256 -hmac), since Zoom ships no Go SDK.
func TestZoomVectors(t *testing.T) {
	z := mustNewZoom(t, Options{})
	secret := []byte("zoom_example_secret")
	body := []byte(`{"event":"meeting.started","event_ts":1721954399000}`)
	const sig = "v0=095eeff3818a80c1ebdd8a67aae7bf2fe718e7b1d11f183d588cfdf5ce4d54e7"

	t.Run("Sign", func(t *testing.T) {
		r := Request{Body: body}
		if err := z.Sign(&r, secret, testNow); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(ZoomSignatureHeader); got != sig {
			t.Errorf("Sign: got %q, want %q (openssl)", got, sig)
		}
		if got := r.Header.Get(ZoomTimestampHeader); got != testTS {
			t.Errorf("Sign timestamp: got %q, want %q", got, testTS)
		}
	})
	t.Run("Verify", func(t *testing.T) {
		r := slackV0Request(ZoomSignatureHeader, ZoomTimestampHeader, body, []string{sig}, []string{testTS})
		checkVerifyErr(t, verifyNoPanic(t, z, r, [][]byte{secret}, testNow), nil)
		// The header names are matched in any case (Zoom sends them in
		// lower case; net/http canonicalizes).
		h := http.Header{}
		h.Set("x-zm-signature", sig)
		h.Set("x-zm-request-timestamp", testTS)
		checkVerifyErr(t, verifyNoPanic(t, z, Request{Header: h, Body: body}, [][]byte{secret}, testNow), nil)
	})
	t.Run("url_validation", func(t *testing.T) {
		hs := []byte(`{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1721954340000,"event":"endpoint.url_validation"}`)
		reply, ok, err := z.Handshake(zoomRequest(hs, secret, testTS), [][]byte{secret})
		if err != nil || !ok {
			t.Fatalf("Handshake: got %t, %v; want a reply", ok, err)
		}
		const want = `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"f046ec87bd2d91eb06283116464bd62e6d34d5193d08288cd2f77bcd1e196582"}`
		if string(reply.Body) != want || reply.Status != http.StatusOK || reply.ContentType != "application/json" {
			t.Errorf("Handshake: got %d %q %s, want 200 application/json %s", reply.Status, reply.ContentType, reply.Body, want)
		}
	})
}

func TestZoomBodies(t *testing.T) {
	z := mustNewZoom(t, Options{})
	for _, f := range zoomBodies {
		t.Run(f.name, func(t *testing.T) {
			r := zoomRequest(f.body, zoomSecret, testTS)
			checkVerifyErr(t, verifyNoPanic(t, z, r, zoomSecrets, testNow), nil)

			got, err := identifyNoPanic(t, z, r)
			if want, ok := zoomWantIdentity(t, f.body); ok {
				if err != nil {
					t.Fatalf("Identify: %v", err)
				}
				slackCheckIdentity(t, got, want)
				checkValidIdentity(t, got)
			} else {
				checkErr(t, err, ErrInvalidPayload)
			}

			_, isHandshake, err := z.Handshake(r, zoomSecrets)
			if err != nil {
				t.Fatalf("Handshake: %v", err)
			}
			if want := f.name == ZoomURLValidation; isHandshake != want {
				t.Errorf("Handshake: got ok %t, want %t", isHandshake, want)
			}

			checkFlipsRejected(t, f.name, z, r, zoomSecrets, testNow)
		})
	}
	t.Run("a retry with the same body has the same id, another body another", func(t *testing.T) {
		first, err := z.Identify(zoomRequest(zoomBodies[0].body, zoomSecret, testTS))
		if err != nil {
			t.Fatal(err)
		}
		// A retry is signed again at another time and carries another
		// x-zm-trackingid; neither is part of the key.
		retry := zoomRequest(zoomBodies[0].body, zoomSecret, strconv.FormatInt(testNow.Unix()+30, 10))
		retry.Header.Set("X-Zm-Trackingid", "v=2.0&s=1721954430&r=abc")
		again, err := z.Identify(retry)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != first.ID {
			t.Errorf("retry id: got %q, want %q", again.ID, first.ID)
		}
		// meeting.started and meeting.ended share event_ts; the ids differ.
		other, err := z.Identify(zoomRequest(zoomBodies[1].body, zoomSecret, testTS))
		if err != nil {
			t.Fatal(err)
		}
		if other.ID == first.ID {
			t.Errorf("two events with one event_ts share the id %q", first.ID)
		}
	})
}

func zoomMalformedRuns(tb testing.TB) []malformedRun {
	z := mustNewZoom(tb, Options{})
	runs := slackV0MalformedRuns(tb, z, ZoomSignatureHeader, ZoomTimestampHeader, zoomBodies[2].body, zoomSecret)
	return append(runs, malformedRun{z, []verifyCase{
		{"a Slack-signed request is not a Zoom request", slackRequest(zoomBodies[0].body, zoomSecret, testTS), zoomSecrets, ErrNotSigned},
	}})
}

func TestZoomVerifyMalformed(t *testing.T) { runMalformed(t, zoomMalformedRuns(t)) }

func TestZoomRotation(t *testing.T) {
	body := zoomBodies[0].body
	both := [][]byte{zoomSecret, zoomSecretOld}
	req := func(signer []byte) Request { return zoomRequest(body, signer, testTS) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(zoomSecret), both, nil},
		{"two secrets, signed by previous", req(zoomSecretOld), both, nil},
		{"retired secret no longer accepted", req(zoomSecretOld), zoomSecrets, ErrNoMatch},
		{"empty secret skipped", req(zoomSecret), [][]byte{nil, zoomSecret}, nil},
		{"no secrets", req(zoomSecret), nil, ErrNoSecret},
		{"only empty secrets", req(nil), [][]byte{{}, nil}, ErrNoSecret},
	}
	z := mustNewZoom(t, Options{})
	runVerifyCases(t, z, testNow, 0, tests)
}

func TestZoomTolerance(t *testing.T) {
	body := zoomBodies[0].body
	runToleranceCases(t, zoomSecrets, slackToleranceCases(DefaultTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		z := mustNewZoom(t, Options{Tolerance: tolerance})
		return z, signed(t, z, Request{Body: body}, zoomSecret, at)
	})
}

func TestNewZoom(t *testing.T) { runOptionsCases(t, NewZoom, slackOptionsCases) }

// zoomToken is the encryptedToken for plain under secret, computed
// independently of the code under test.
func zoomToken(secret []byte, plain string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(plain))
	return hex.EncodeToString(m.Sum(nil))
}

func TestZoomHandshake(t *testing.T) {
	z := mustNewZoom(t, Options{})
	validation := func(plain string) []byte {
		b, err := json.Marshal(map[string]any{"event": ZoomURLValidation, "event_ts": 1721954340000, "payload": map[string]string{"plainToken": plain}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		r       Request
		secrets [][]byte
		wantOK  bool
		plain   string // the token echoed when wantOK
		key     []byte // the secret encryptedToken must use
		wantErr error
	}{
		{name: "answered with the only secret", r: zoomRequest(validation("qgg8vlvZRS6UYooatFL8Aw"), zoomSecret, testTS), secrets: zoomSecrets, wantOK: true, plain: "qgg8vlvZRS6UYooatFL8Aw", key: zoomSecret},
		{name: "signed by the previous secret, answered with the current", r: zoomRequest(validation("tok"), zoomSecretOld, testTS), secrets: [][]byte{zoomSecret, zoomSecretOld}, wantOK: true, plain: "tok", key: zoomSecret},
		{name: "first usable secret is the current", r: zoomRequest(validation("tok"), zoomSecret, testTS), secrets: [][]byte{{}, zoomSecret, zoomSecretOld}, wantOK: true, plain: "tok", key: zoomSecret},
		{name: "token with characters JSON escapes", r: zoomRequest(validation(`a"b\c<`), zoomSecret, testTS), secrets: zoomSecrets, wantOK: true, plain: `a"b\c<`, key: zoomSecret},
		{name: "event spelt with a \\u escape is answered", r: zoomRequest([]byte(`{"event":"endpoint.url\u005fvalidation","payload":{"plainToken":"tok"}}`), zoomSecret, testTS), secrets: zoomSecrets, wantOK: true, plain: "tok", key: zoomSecret},
		{name: "ordinary event is not a handshake", r: zoomRequest(zoomBodies[0].body, zoomSecret, testTS), secrets: zoomSecrets},
		{name: "not JSON is not a handshake", r: zoomRequest([]byte("event=endpoint.url_validation"), zoomSecret, testTS), secrets: zoomSecrets},
		{name: "plainToken missing", r: zoomRequest([]byte(`{"event":"endpoint.url_validation","payload":{}}`), zoomSecret, testTS), secrets: zoomSecrets, wantErr: ErrInvalidPayload},
		{name: "payload missing", r: zoomRequest([]byte(`{"event":"endpoint.url_validation"}`), zoomSecret, testTS), secrets: zoomSecrets, wantErr: ErrInvalidPayload},
		{name: "plainToken not a string", r: zoomRequest([]byte(`{"event":"endpoint.url_validation","payload":{"plainToken":1}}`), zoomSecret, testTS), secrets: zoomSecrets, wantErr: ErrInvalidPayload},
		{name: "plainToken empty", r: zoomRequest(validation(""), zoomSecret, testTS), secrets: zoomSecrets, wantErr: ErrInvalidPayload},
		{name: "unsigned validation is not answered", r: slackV0Request(ZoomSignatureHeader, ZoomTimestampHeader, validation("tok"), nil, nil), secrets: zoomSecrets, wantErr: ErrNotSigned},
		{name: "validation under another secret is not answered", r: zoomRequest(validation("tok"), []byte("attacker"), testTS), secrets: zoomSecrets, wantErr: ErrNoMatch},
		{name: "no usable secret", r: zoomRequest(validation("tok"), nil, testTS), secrets: [][]byte{{}}, wantErr: ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, ok, err := z.Handshake(tt.r, tt.secrets)
			checkErr(t, err, tt.wantErr)
			if ok != tt.wantOK {
				t.Fatalf("Handshake: got ok %t, want %t", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			var got struct{ PlainToken, EncryptedToken string }
			if err := json.Unmarshal(reply.Body, &got); err != nil {
				t.Fatalf("reply %q: %v", reply.Body, err)
			}
			want := zoomToken(tt.key, tt.plain)
			if got.PlainToken != tt.plain || got.EncryptedToken != want || reply.Status != http.StatusOK || reply.ContentType != "application/json" {
				t.Errorf("Handshake: got %d %q %+v, want 200 application/json {%q %q}", reply.Status, reply.ContentType, got, tt.plain, want)
			}
		})
	}
	t.Run("expired validation is refused by Verify first", func(t *testing.T) {
		r := zoomRequest(validation("tok"), zoomSecret, strconv.FormatInt(testNow.Add(-time.Hour).Unix(), 10))
		_, ok, err := slackAnswer(z, r, zoomSecrets, testNow)
		checkErr(t, err, ErrTooOld)
		if ok {
			t.Error("answer: got a reply to an expired validation")
		}
	})
}

var zoomIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "not JSON", body: `event=meeting.started`},
	{name: "array", body: `[{"event":"meeting.started","event_ts":1}]`},
	{name: "event missing", body: `{"event_ts":1721954340000}`},
	{name: "event empty", body: `{"event":"","event_ts":1721954340000}`},
	{name: "event not a string", body: `{"event":1,"event_ts":1721954340000}`},
	{name: "event_ts missing", body: `{"event":"meeting.started"}`},
	{name: "event_ts a string", body: `{"event":"meeting.started","event_ts":"1721954340000"}`},
	{name: "event_ts negative", body: `{"event":"meeting.started","event_ts":-1}`},
	{name: "event_ts float", body: `{"event":"meeting.started","event_ts":1721954340000.5}`},
	{name: "event_ts overflows", body: `{"event":"meeting.started","event_ts":99999999999999999999}`},
	{name: "event too long", body: `{"event":"` + strings.Repeat("e", 500) + `","event_ts":1}`},
	{name: "url_validation", body: `{"event":"endpoint.url_validation","event_ts":1,"payload":{"plainToken":"x"}}`},
	{name: "invalid UTF-8 event", body: "{\"event\":\"\xff\",\"event_ts\":1}"},
	{
		name: "minimal",
		body: `{"event":"meeting.started","event_ts":1721954340000}`,
		want: Identity{ID: "meeting.started:1721954340000:" + slackSHA256Hex(`{"event":"meeting.started","event_ts":1721954340000}`), Type: "meeting.started", Created: time.UnixMilli(1721954340000)},
	},
	{
		name: "event with escapes",
		body: `{"event":"meeting\u002estarted","event_ts":0}`,
		want: Identity{ID: "meeting.started:0:" + slackSHA256Hex(`{"event":"meeting\u002estarted","event_ts":0}`), Type: "meeting.started", Created: time.UnixMilli(0)},
	},
}

func TestZoomIdentify(t *testing.T) {
	runIdentifyCases(t, mustNewZoom(t, Options{}), zoomIdentifyCases, func(body []byte) Request {
		return Request{Header: http.Header{}, Body: body}
	})
}

func FuzzZoomVerify(f *testing.F) {
	z := mustNewZoom(f, Options{})
	slackV0Fuzz(f, z, ZoomSignatureHeader, ZoomTimestampHeader, zoomBodies[2].body, zoomSecret, zoomSecretOld)
}

func FuzzZoomIdentify(f *testing.F) {
	for _, b := range zoomBodies {
		f.Add(b.body)
	}
	for _, tc := range zoomIdentifyCases {
		f.Add([]byte(tc.body))
	}
	z := mustNewZoom(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := zoomRequest(body, zoomSecret, testTS)
		fuzzIdentifyValid(t, z, r)
		reply, ok, err := z.Handshake(r, zoomSecrets)
		if err != nil && !isSentinel(err) && !errors.Is(err, ErrInvalidPayload) {
			t.Fatalf("Handshake(%q): got %v", body, err)
		}
		if ok {
			var m struct{ PlainToken, EncryptedToken string }
			if err := json.Unmarshal(reply.Body, &m); err != nil || m.EncryptedToken != zoomToken(zoomSecret, m.PlainToken) {
				t.Fatalf("Handshake(%q): got reply %q (%v)", body, reply.Body, err)
			}
		}
	})
}

func BenchmarkZoom(b *testing.B) {
	body := zoomBodies[0].body
	r := zoomRequest(body, zoomSecret, testTS)
	pre := []byte("v0:" + testTS + ":")
	var sum [sha256.Size]byte
	benchScheme(b, mustNewZoom(b, Options{}), r, zoomSecrets, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha256.New, zoomSecret)
		m.Write(pre)
		m.Write(body)
		m.Sum(sum[:0])
	})
}
