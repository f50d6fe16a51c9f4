package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var (
	gitlabToken    = []byte("gitlab-secret-token-test-3f9a71c2")
	gitlabTokenOld = []byte("gitlab-secret-token-prev-0b6e54d8")
	// gitlabKey and gitlabKeyOld are signing tokens in GitLab's format,
	// whsec_ + the base64 of a 32-byte key.
	gitlabKey    = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("gitlab-signing-key-current-32byt")))
	gitlabKeyOld = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("gitlab-signing-key-previous-32by")))
)

// gitlabVector is the Standard Webhooks signing vector published, the same,
// in the Go, JavaScript, Python, Ruby, PHP and Java libraries'
// tests (standard-webhooks/standard-webhooks@b2fa7b87, libraries/*), the
// format GitLab's signing token follows.
var gitlabVector = struct {
	id, ts, secret, payload, signature string
}{
	id:        "msg_p5jXN8AQM9LWM0D4loKWxJek",
	ts:        "1614265330",
	secret:    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	payload:   `{"test": 2432232314}`,
	signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}

// gitlabPushBody is a push event shaped like the example in GitLab's
// webhook events documentation (values made up here).
const gitlabPushBody = `{"object_kind":"push","event_name":"push","before":"95790bf891e76fee5e1747ab589903a6a1f80f22","after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","ref":"refs/heads/main","ref_protected":true,"checkout_sha":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","message":"Hello World","user_id":4,"user_name":"John Smith","user_username":"jsmith","user_email":"john@example.com","user_avatar":"https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=8://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=80","project_id":15,"project":{"id":15,"name":"Diaspora","description":"","web_url":"http://test.example.com/mike/diaspora","avatar_url":null,"git_ssh_url":"git@example.com:mike/diaspora.git","git_http_url":"http://example.com/mike/diaspora.git","namespace":"Mike","visibility_level":0,"path_with_namespace":"mike/diaspora","default_branch":"master","ci_config_path":null,"homepage":"http://example.com/mike/diaspora","url":"git@example.com:mike/diaspora.git","ssh_url":"git@example.com:mike/diaspora.git","http_url":"http://example.com/mike/diaspora.git"},"commits":[{"id":"b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327","message":"Update Catalan translation to e38cb41.\n\nSee https://gitlab.com/gitlab-org/gitlab for more information","title":"Update Catalan translation to e38cb41.","timestamp":"2011-12-12T14:27:31+02:00","url":"http://example.com/mike/diaspora/commit/b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327","author":{"name":"Jordi Mallach","email":"jordi@softcatala.org"},"added":["CHANGELOG"],"modified":["app/controller/application.rb"],"removed":[]},{"id":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","message":"fixed readme","title":"fixed readme","timestamp":"2012-01-03T23:36:29+02:00","url":"http://example.com/mike/diaspora/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7","author":{"name":"GitLab dev user","email":"gitlabdev@dv6700.(none)"},"added":["CHANGELOG"],"modified":["app/controller/application.rb"],"removed":[]}],"total_commits_count":4,"push_options":{},"repository":{"name":"Diaspora","url":"git@example.com:mike/diaspora.git","description":"","homepage":"http://example.com/mike/diaspora","git_http_url":"http://example.com/mike/diaspora.git","git_ssh_url":"git@example.com:mike/diaspora.git","visibility_level":0}}`

// gitlabBodies are the bodies every signing test runs over.
var gitlabBodies = []struct{ name, event, body string }{
	{"push", "Push Hook", gitlabPushBody},
	{"merge request", "Merge Request Hook", `{"object_kind":"merge_request","event_type":"merge_request","user":{"id":1,"name":"Administrator"},"object_attributes":{"id":99,"iid":1,"action":"open","state":"opened","title":"MS-Viewport"}}`},
	{"pipeline", "Pipeline Hook", `{"object_kind":"pipeline","object_attributes":{"id":31,"iid":3,"ref":"main","status":"success","created_at":"2016-08-12 15:23:28 UTC"},"builds":[]}`},
	{"note, unicode", "Note Hook", `{"object_kind":"note","object_attributes":{"note":"Überprüfung \u2713 — ok 👍"}}`},
	{"system hook", "System Hook", `{"event_name":"project_create","name":"StoreCloud","path":"storecloud","project_id":74}`},
}

const (
	gitlabIdem    = "f1e3b9c2-6a47-4d0e-9c3b-5a8e2d7f1b64"
	gitlabEventID = "13792a34-cac6-4fda-95a8-c58e00a3954e"
	gitlabHookID  = "9a9f3c64-3d4e-4f13-8f5e-1c1f0d6c2b77"
	gitlabHost    = "https://gitlab.example.com"
)

func gitlabNew(tb testing.TB, o Options) *GitLab {
	tb.Helper()
	return mustNew(tb, NewGitLab, o)
}

// gitlabRequest builds a delivery with the headers GitLab's documentation
// lists for a hook without a signing token (no token set yet).
func gitlabRequest(body []byte, event string) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitLab/18.0.0")
	h.Set(GitLabEventHeader, event)
	h.Set("X-Gitlab-Webhook-Uuid", gitlabHookID)
	h.Set(GitLabEventUUIDHeader, gitlabEventID)
	h.Set(GitLabInstanceHeader, gitlabHost)
	h.Set(GitLabIdempotencyKeyHeader, gitlabIdem)
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// gitlabSig is "v1," + the base64 HMAC-SHA256 of "<id>.<ts>.<body>" under a
// whsec_ key, computed independently of the code under test.
func gitlabSig(tb testing.TB, key []byte, id, ts string, body []byte) string {
	tb.Helper()
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(key), "whsec_"))
	if err != nil {
		tb.Fatal(err)
	}
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// gitlabSignedRequest returns a push delivery signed with key at ts.
func gitlabSignedRequest(tb testing.TB, body []byte, event string, key []byte, ts string) Request {
	tb.Helper()
	r := gitlabRequest(body, event)
	r.Header.Set(GitLabWebhookIDHeader, gitlabIdem)
	r.Header.Set(GitLabWebhookTimestampHeader, ts)
	r.Header.Set(GitLabWebhookSignatureHeader, gitlabSig(tb, key, gitlabIdem, ts, body))
	return r
}

func TestGitLabBodies(t *testing.T) {
	g := gitlabNew(t, Options{})
	for _, b := range gitlabBodies {
		body := []byte(b.body)
		t.Run(b.name, func(t *testing.T) {
			for _, mode := range []struct {
				name string
				key  []byte
			}{{"token", gitlabToken}, {"signing token", gitlabKey}} {
				t.Run(mode.name, func(t *testing.T) {
					r := gitlabRequest(body, b.event)
					if err := g.Sign(&r, mode.key, testNow); err != nil {
						t.Fatalf("Sign: %v", err)
					}
					secrets := [][]byte{gitlabToken, gitlabKey}
					if err := g.Verify(r, secrets, testNow); err != nil {
						t.Fatalf("Verify(signed): got %v, want nil", err)
					}
					got, err := g.Identify(r)
					if err != nil {
						t.Fatalf("Identify: %v", err)
					}
					want := Identity{ID: gitlabIdem, Type: b.event, Attributes: map[string]string{"instance": gitlabHost}}
					checkIdentity(t, got, nil, want)

					for _, i := range []int{0, len(body) / 2, len(body) - 1} {
						flipped := r
						flipped.Body = flipByte(body, i)
						err := g.Verify(flipped, secrets, testNow)
						if mode.name == "token" {
							// A token proves the sender, not the bytes:
							// GitLab's secret token covers no body.
							checkErr(t, err, nil)
							continue
						}
						if !errors.Is(err, ErrNoMatch) {
							t.Errorf("Verify(body with byte %d flipped): got %v, want %v", i, err, ErrNoMatch)
						}
					}
				})
			}
		})
	}
}

// TestGitLabSignVector checks Sign and Verify against the published
// Standard Webhooks vector.
func TestGitLabSignVector(t *testing.T) {
	v := gitlabVector
	ts, _ := strconv.ParseInt(v.ts, 10, 64)
	at := time.Unix(ts, 0)
	g := gitlabNew(t, Options{})

	r := Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(v.payload)}
	r.Header.Set(GitLabWebhookIDHeader, v.id)
	if err := g.Sign(&r, []byte(v.secret), at); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get(GitLabWebhookSignatureHeader); got != v.signature {
		t.Errorf("Sign: got %q, want %q (published vector)", got, v.signature)
	}
	if got := r.Header.Get(GitLabWebhookTimestampHeader); got != v.ts {
		t.Errorf("Sign: got timestamp %q, want %q", got, v.ts)
	}
	if got := r.Header.Get(GitLabIdempotencyKeyHeader); got != v.id {
		t.Errorf("Sign: got Idempotency-Key %q, want %q (GitLab sends webhook-id's value)", got, v.id)
	}

	h := http.Header{}
	h.Set(GitLabWebhookIDHeader, v.id)
	h.Set(GitLabWebhookTimestampHeader, v.ts)
	h.Set(GitLabWebhookSignatureHeader, v.signature)
	vr := Request{Method: http.MethodPost, Header: h, Body: []byte(v.payload)}
	if err := g.Verify(vr, [][]byte{[]byte(v.secret)}, at.Add(time.Minute)); err != nil {
		t.Errorf("Verify(published vector): got %v, want nil", err)
	}
	if err := g.Verify(vr, [][]byte{[]byte(v.secret)}, testNow); !errors.Is(err, ErrTooOld) {
		t.Errorf("Verify(published vector, years later): got %v, want %v", err, ErrTooOld)
	}
}

// TestGitLabCrossCheckStandardWebhooks checks signed deliveries against the
// Standard Webhooks Go library, the reference GitLab's signing token
// follows, in both directions. The library reads the clock itself, so
// those signatures are made at the real time.
func TestGitLabCrossCheckStandardWebhooks(t *testing.T) {
	g := gitlabNew(t, Options{})
	wh, err := standardwebhooks.NewWebhook(string(gitlabKey))
	if err != nil {
		t.Fatal(err)
	}
	other, err := standardwebhooks.NewWebhook(string(gitlabKeyOld))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range gitlabBodies {
		body := []byte(b.body)
		t.Run(b.name, func(t *testing.T) {
			t.Run("library signs", func(t *testing.T) {
				sig, err := wh.Sign(gitlabIdem, testNow, body)
				if err != nil {
					t.Fatal(err)
				}
				r := gitlabRequest(body, b.event)
				r.Header.Set(GitLabWebhookIDHeader, gitlabIdem)
				r.Header.Set(GitLabWebhookTimestampHeader, strconv.FormatInt(testNow.Unix(), 10))
				r.Header.Set(GitLabWebhookSignatureHeader, sig)
				if err := g.Verify(r, [][]byte{gitlabKey}, testNow); err != nil {
					t.Errorf("Verify(library signature %q): got %v, want nil", sig, err)
				}
				if err := g.Verify(r, [][]byte{gitlabKeyOld}, testNow); !errors.Is(err, ErrNoMatch) {
					t.Errorf("Verify(library signature, other key): got %v, want %v", err, ErrNoMatch)
				}
			})
			t.Run("library verifies", func(t *testing.T) {
				now := time.Now()
				r := gitlabRequest(body, b.event)
				if err := g.Sign(&r, gitlabKey, now); err != nil {
					t.Fatal(err)
				}
				if err := wh.Verify(body, r.Header); err != nil {
					t.Errorf("standardwebhooks Verify(our headers): %v", err)
				}
				if err := other.Verify(body, r.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Errorf("standardwebhooks Verify(other key): got %v, want %v", err, standardwebhooks.ErrNoMatchingSignature)
				}
				if err := wh.Verify(flipByte(body, 0), r.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Errorf("standardwebhooks Verify(flipped body): got %v, want %v", err, standardwebhooks.ErrNoMatchingSignature)
				}
			})
		})
	}
}

// TestGitLabTokenHeaders runs the token check on GitLab's documented
// delivery headers.
func TestGitLabTokenHeaders(t *testing.T) {
	body := []byte(gitlabPushBody)
	tests := []struct {
		name    string
		token   []string
		secrets [][]byte
		want    error
	}{
		{"token matches", []string{string(gitlabToken)}, [][]byte{gitlabToken}, nil},
		{"token matches the second secret", []string{string(gitlabToken)}, [][]byte{gitlabTokenOld, gitlabToken}, nil},
		{"previous token during rotation", []string{string(gitlabTokenOld)}, [][]byte{gitlabToken, gitlabTokenOld}, nil},
		{"retired token", []string{string(gitlabTokenOld)}, [][]byte{gitlabToken}, ErrNoMatch},
		{"token is a prefix of the secret", []string{string(gitlabToken[:10])}, [][]byte{gitlabToken}, ErrNoMatch},
		{"secret is a prefix of the token", []string{string(gitlabToken) + "x"}, [][]byte{gitlabToken}, ErrNoMatch},
		{"token differs in case", []string{strings.ToUpper(string(gitlabToken))}, [][]byte{gitlabToken}, ErrNoMatch},
		{"token with trailing space", []string{string(gitlabToken) + " "}, [][]byte{gitlabToken}, ErrNoMatch},
		{"no token header", nil, [][]byte{gitlabToken}, ErrNotSigned},
		{"empty token header", []string{""}, [][]byte{gitlabToken}, ErrNotSigned},
		{"whitespace token header", []string{"   "}, [][]byte{gitlabToken}, ErrNotSigned},
		{"repeated token header", []string{string(gitlabToken), string(gitlabToken)}, [][]byte{gitlabToken}, ErrMalformedHeader},
		{"token 8 KiB + 1", []string{strings.Repeat("t", 8<<10+1)}, [][]byte{gitlabToken}, ErrMalformedHeader},
		{"no secrets", []string{string(gitlabToken)}, nil, ErrNoSecret},
		{"only an empty secret", []string{""}, [][]byte{{}}, ErrNotSigned},
		{"empty secret is skipped", []string{string(gitlabToken)}, [][]byte{{}, gitlabToken}, nil},
		{"source holds only signing keys", []string{string(gitlabToken)}, [][]byte{gitlabKey}, ErrNotSigned},
		{"signing key sent as a token", []string{string(gitlabKey)}, [][]byte{gitlabKey}, ErrNotSigned},
		{"signing key sent as a token, tokens also configured", []string{string(gitlabKey)}, [][]byte{gitlabToken, gitlabKey}, ErrNoMatch},
		{"token and keys configured, token-only delivery", []string{string(gitlabToken)}, [][]byte{gitlabKey, gitlabToken}, nil},
	}
	g := gitlabNew(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gitlabRequest(body, "Push Hook")
			for _, v := range tt.token {
				r.Header.Add(GitLabTokenHeader, v)
			}
			checkVerifyErr(t, verifyNoPanic(t, g, r, tt.secrets, testNow), tt.want)
		})
	}
}

// gitlabSignedCase is one signed-delivery input. id, ts and sig replace the
// webhook-* headers when set ("-" removes one); secrets nil means gitlabKey.
type gitlabSignedCase struct {
	name    string
	id      string
	ts      string
	sig     []string
	token   string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// gitlabSignedCases is shared with the fuzz test as seeds.
func gitlabSignedCases(tb testing.TB, body []byte) []gitlabSignedCase {
	tb.Helper()
	ts := strconv.FormatInt(testNow.Unix(), 10)
	at := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	sig := func(key []byte, ts string) string { return gitlabSig(tb, key, gitlabIdem, ts, body) }
	ok := sig(gitlabKey, ts)
	raw := strings.TrimPrefix(ok, "v1,")
	wrong := sig(gitlabKeyOld, ts)
	trunc := func(b []byte) []byte { return b[:len(b)-1] }
	return []gitlabSignedCase{
		{name: "valid", sig: []string{ok}, want: nil},
		{name: "valid beside a wrong token", sig: []string{ok}, token: "wrong", want: nil},
		{name: "valid among several", sig: []string{wrong + " " + ok}, want: nil},
		{name: "valid after an unknown version", sig: []string{"v1a,c2lnbmF0dXJl " + ok}, want: nil},
		{name: "valid with double spaces", sig: []string{"  " + wrong + "  " + ok + " "}, want: nil},

		// Presence.
		{name: "timestamp without signature (no token fallback)", sig: []string{"-"}, token: string(gitlabToken), secrets: [][]byte{gitlabToken, gitlabKey}, want: ErrNotSigned},
		{name: "empty signature", sig: []string{""}, want: ErrNotSigned},
		{name: "signature without id", id: "-", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "signature without timestamp", ts: "-", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "empty id", id: " ", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "repeated signature header", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "repeated id", id: gitlabIdem + "\n" + gitlabIdem, sig: []string{ok}, want: ErrMalformedHeader},
		{name: "repeated timestamp", ts: ts + "\n" + ts, sig: []string{ok}, want: ErrMalformedHeader},
		{name: "signature of the token-only secrets", sig: []string{ok}, secrets: [][]byte{gitlabToken}, want: ErrNoSecret},
		{name: "no secrets", sig: []string{ok}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "undecodable signing key", sig: []string{ok}, secrets: [][]byte{[]byte("whsec_!!not base64!!")}, want: ErrNoSecret},
		{name: "empty signing key", sig: []string{ok}, secrets: [][]byte{[]byte("whsec_")}, want: ErrNoSecret},

		// Signature format.
		{name: "no version", sig: []string{raw}, want: ErrMalformedHeader},
		{name: "version only", sig: []string{"v1,"}, want: ErrNoMatch},
		{name: "wrong version", sig: []string{"v2," + raw}, want: ErrNoMatch},
		{name: "upper-case version", sig: []string{"V1," + raw}, want: ErrNoMatch},
		{name: "v1a (asymmetric) only", sig: []string{"v1a," + raw}, want: ErrNoMatch},
		{name: "equals instead of comma", sig: []string{"v1=" + raw}, want: ErrMalformedHeader},
		{name: "comma-separated list", sig: []string{wrong + "," + ok}, want: ErrNoMatch},
		{name: "base64 one short", sig: []string{ok[:len(ok)-1]}, want: ErrNoMatch},
		{name: "base64 without padding", sig: []string{strings.TrimRight(ok, "=")}, want: ErrNoMatch},
		{name: "base64url alphabet", sig: []string{"v1," + base64.URLEncoding.EncodeToString(gitlabB64(tb, raw))}, want: gitlabNilIfNoURLChars(raw)},
		{name: "non-zero padding bits (one signature, one encoding)", sig: []string{"v1," + gitlabFlipPadding(raw)}, want: ErrNoMatch},
		{name: "hex instead of base64", sig: []string{"v1," + strings.Repeat("ab", 32)}, want: ErrNoMatch},
		{name: "non-base64 character", sig: []string{"v1,*" + raw[1:]}, want: ErrNoMatch},
		{name: "nine signatures", sig: []string{strings.Repeat(wrong+" ", 8) + ok}, want: ErrMalformedHeader},
		{name: "header 8 KiB + 1", sig: []string{ok + " " + strings.Repeat("x", 8<<10)}, want: ErrMalformedHeader},

		// Timestamp.
		{name: "timestamp not a number", ts: "abc", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp empty", ts: " ", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp negative", ts: "-" + ts, sig: []string{sig(gitlabKey, "-"+ts)}, want: ErrMalformedHeader},
		{name: "timestamp with plus sign", ts: "+" + ts, sig: []string{sig(gitlabKey, "+"+ts)}, want: ErrMalformedHeader},
		{name: "timestamp with leading zero", ts: "0" + ts, sig: []string{sig(gitlabKey, "0"+ts)}, want: ErrMalformedHeader},
		{name: "timestamp with spaces", ts: ts + " ", sig: []string{sig(gitlabKey, ts+" ")}, want: ErrMalformedHeader},
		{name: "timestamp in milliseconds", ts: ts + "000", sig: []string{sig(gitlabKey, ts+"000")}, want: ErrMalformedHeader},
		{name: "timestamp huge", ts: "999999999999", sig: []string{sig(gitlabKey, "999999999999")}, want: ErrTooNew},
		{name: "timestamp overflowing", ts: "99999999999999999999", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp zero", ts: "0", sig: []string{sig(gitlabKey, "0")}, want: ErrTooOld},
		{name: "timestamp unicode digits", ts: "١٦١٤٢٦٥٣٣٠", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp fractional", ts: ts + ".5", sig: []string{ok}, want: ErrMalformedHeader},
		{name: "far future", ts: at(24 * time.Hour), sig: []string{sig(gitlabKey, at(24*time.Hour))}, want: ErrTooNew},
		{name: "far past", ts: at(-24 * time.Hour), sig: []string{sig(gitlabKey, at(-24*time.Hour))}, want: ErrTooOld},
		{name: "signed for another timestamp", ts: at(time.Second), sig: []string{ok}, want: ErrNoMatch},
		{name: "signed for another id", id: "msg_other", sig: []string{ok}, want: ErrNoMatch},

		// Value and body.
		{name: "wrong key", sig: []string{wrong}, want: ErrNoMatch},
		{name: "key bytes used without base64 decoding", sig: []string{func() string {
			mac := hmac.New(sha256.New, gitlabKey)
			mac.Write([]byte(gitlabIdem + "." + ts + "."))
			mac.Write(body)
			return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		}()}, want: ErrNoMatch},
		{name: "body truncated by one byte", sig: []string{ok}, body: trunc, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
	}
}

func gitlabB64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// gitlabFlipPadding sets the lowest of the two unused bits of a 32-byte
// base64 value: lenient decoders read the same bytes, strict ones refuse.
func gitlabFlipPadding(b64 string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := strings.IndexByte(alphabet, b64[42])
	return b64[:42] + string(alphabet[i^1]) + b64[43:]
}

// gitlabNilIfNoURLChars is the expected result of re-encoding a signature in the
// URL alphabet: the same string, and so a match, when it has no '+' or '/'.
func gitlabNilIfNoURLChars(b64 string) error {
	if strings.ContainsAny(b64, "+/") {
		return ErrNoMatch
	}
	return nil
}

// request applies the case to a signed delivery of body.
func (tc gitlabSignedCase) request(body []byte) Request {
	r := gitlabRequest(body, "Push Hook")
	set := func(name, v string) {
		if v == "-" {
			return
		}
		for _, line := range strings.Split(v, "\n") {
			r.Header.Add(name, line)
		}
	}
	id, ts := tc.id, tc.ts
	if id == "" {
		id = gitlabIdem
	}
	if ts == "" {
		ts = strconv.FormatInt(testNow.Unix(), 10)
	}
	set(GitLabWebhookIDHeader, id)
	set(GitLabWebhookTimestampHeader, ts)
	for _, v := range tc.sig {
		if v != "-" {
			r.Header.Add(GitLabWebhookSignatureHeader, v)
		}
	}
	if tc.token != "" {
		r.Header.Set(GitLabTokenHeader, tc.token)
	}
	return r
}

func gitlabMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(gitlabPushBody)
	var cases []verifyCase
	for _, tc := range gitlabSignedCases(tb, body) {
		r := tc.request(changed(body, tc.body))
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, [][]byte{gitlabKey}), tc.want})
	}
	g := gitlabNew(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        g,
		r:        gitlabSignedRequest(tb, body, "Push Hook", gitlabKey, testTS),
		secrets:  [][]byte{gitlabKey},
		wrong:    [][]byte{gitlabKeyOld},
		sig:      signedField{header: GitLabWebhookSignatureHeader, prefix: "v1,", sep: ' '},
		enc:      encBase64,
		versions: []string{"v1a,", "v2,", "v0,"},
		ts:       &signedField{header: GitLabWebhookTimestampHeader},
		id:       &signedField{header: GitLabWebhookIDHeader},
		drop:     spaceListDrops(GitLabWebhookSignatureHeader),
	})
	return []malformedRun{{g, cases}, {g, generic}}
}

func TestGitLabVerifySignedMalformed(t *testing.T) { runMalformed(t, gitlabMalformedRuns(t)) }

func TestGitLabRotation(t *testing.T) {
	body := []byte(gitlabPushBody)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	cur := gitlabSig(t, gitlabKey, gitlabIdem, ts, body)
	old := gitlabSig(t, gitlabKeyOld, gitlabIdem, ts, body)
	req := func(sig string) Request { return gitlabSignedCase{sig: []string{sig}}.request(body) }
	tests := []verifyCase{
		{"two keys, signed by current", req(cur), [][]byte{gitlabKey, gitlabKeyOld}, nil},
		{"two keys, signed by previous", req(old), [][]byte{gitlabKey, gitlabKeyOld}, nil},
		{"two keys reversed", req(cur), [][]byte{gitlabKeyOld, gitlabKey}, nil},
		{"retired key", req(old), [][]byte{gitlabKey}, ErrNoMatch},
		{"both signatures sent, one key", req(old + " " + cur), [][]byte{gitlabKey}, nil},
		{"keys beside tokens", req(cur), [][]byte{gitlabToken, gitlabKey, gitlabTokenOld}, nil},
		{"undecodable key skipped", req(cur), [][]byte{[]byte("whsec_%%%"), gitlabKey}, nil},
	}
	g := gitlabNew(t, Options{})
	runVerifyCases(t, g, testNow, 0, tests)
}

func TestGitLabTolerance(t *testing.T) {
	body := []byte(gitlabPushBody)
	tests := []toleranceCase{
		{"now", 0, 0, nil},
		{"default: 5 min old", 0, DefaultTolerance, nil},
		{"default: 5 min 1 s old", 0, DefaultTolerance + time.Second, ErrTooOld},
		{"default: 5 min ahead", 0, -DefaultTolerance, nil},
		{"default: 5 min 1 s ahead", 0, -DefaultTolerance - time.Second, ErrTooNew},
		{"1 min: 1 min old", time.Minute, time.Minute, nil},
		{"1 min: 61 s old", time.Minute, 61 * time.Second, ErrTooOld},
		{"1 min: 61 s ahead", time.Minute, -61 * time.Second, ErrTooNew},
		{"1 h: 59 min old", time.Hour, 59 * time.Minute, nil},
	}
	runToleranceCases(t, [][]byte{gitlabKey}, tests, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		g := gitlabNew(t, Options{Tolerance: tolerance})
		return g, signed(t, g, gitlabRequest(body, "Push Hook"), gitlabKey, at)
	})
	t.Run("token deliveries ignore the clock", func(t *testing.T) {
		g := gitlabNew(t, Options{Tolerance: time.Second})
		r := gitlabRequest(body, "Push Hook")
		r.Header.Set(GitLabTokenHeader, string(gitlabToken))
		checkErr(t, g.Verify(r, [][]byte{gitlabToken}, time.Unix(0, 0)), nil)
	})
}

func TestNewGitLabOptions(t *testing.T) {
	runOptionsCases(t, NewGitLab, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/gitlab"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Header: "X-Gitlab-Token"}}, true},
	})
}

func TestGitLabSignErrors(t *testing.T) {
	g := gitlabNew(t, Options{})
	tests := []struct {
		name string
		key  []byte
		r    Request
	}{
		{"empty key", nil, gitlabRequest([]byte(`{}`), "Push Hook")},
		{"undecodable signing key", []byte("whsec_%%%"), gitlabRequest([]byte(`{}`), "Push Hook")},
		{"signing key, no id to sign", gitlabKey, Request{Body: []byte(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := g.Sign(&tt.r, tt.key, testNow); err == nil {
				t.Errorf("Sign: got nil, want an error")
			}
		})
	}
}

// gitlabIdentifyCase is one delivery for Identify: header edits applied to
// gitlabRequest (a nil value deletes), optional signing headers, and the
// identity wanted (a zero ID means ErrInvalidPayload).
type gitlabIdentifyCase struct {
	name   string
	header http.Header
	signed bool
	body   string
	want   Identity
}

func gitlabIdentifyCases() []gitlabIdentifyCase {
	inst := map[string]string{"instance": gitlabHost}
	push := func(id string) Identity { return Identity{ID: id, Type: "Push Hook", Attributes: inst} }
	const ok = `{"object_kind":"push"}`
	return []gitlabIdentifyCase{
		{name: "Idempotency-Key", body: ok, want: push(gitlabIdem)},
		{name: "event UUID when no Idempotency-Key", header: http.Header{GitLabIdempotencyKeyHeader: nil}, body: ok, want: push(gitlabEventID)},
		{name: "webhook-id when neither", header: http.Header{GitLabIdempotencyKeyHeader: nil, GitLabEventUUIDHeader: nil, GitLabWebhookIDHeader: {"msg_1"}}, body: ok, want: push("msg_1")},
		{name: "signed: the signed webhook-id, not Idempotency-Key", signed: true, header: http.Header{GitLabIdempotencyKeyHeader: {"replayed-under-a-new-key"}}, body: ok, want: push(gitlabIdem)},
		{name: "no instance", header: http.Header{GitLabInstanceHeader: nil}, body: ok, want: Identity{ID: gitlabIdem, Type: "Push Hook"}},
		{name: "system hook", header: http.Header{GitLabEventHeader: {"System Hook"}}, body: `{"event_name":"project_create"}`, want: Identity{ID: gitlabIdem, Type: "System Hook", Attributes: inst}},

		{name: "no id header", header: http.Header{GitLabIdempotencyKeyHeader: nil, GitLabEventUUIDHeader: nil}, body: ok},
		{name: "empty Idempotency-Key", header: http.Header{GitLabIdempotencyKeyHeader: {""}}, body: ok},
		{name: "repeated Idempotency-Key", header: http.Header{GitLabIdempotencyKeyHeader: {"a", "b"}}, body: ok},
		{name: "Idempotency-Key 513 bytes", header: http.Header{GitLabIdempotencyKeyHeader: {strings.Repeat("k", 513)}}, body: ok},
		{name: "Idempotency-Key invalid UTF-8", header: http.Header{GitLabIdempotencyKeyHeader: {"\xc3("}}, body: ok},
		{name: "signed without webhook-id", signed: true, header: http.Header{GitLabWebhookIDHeader: nil}, body: ok},
		{name: "no event", header: http.Header{GitLabEventHeader: nil}, body: ok},
		{name: "event with a newline", header: http.Header{GitLabEventHeader: {"Push\nHook"}}, body: ok},
		{name: "repeated instance", header: http.Header{GitLabInstanceHeader: {"a", "b"}}, body: ok},
		{name: "empty body", body: ``},
		{name: "array body", body: `[{"object_kind":"push"}]`},
		{name: "truncated body", body: `{"object_kind":"push"`},
		{name: "not JSON", body: `object_kind=push`},
	}
}

func (tc gitlabIdentifyCase) request() Request {
	r := gitlabRequest([]byte(tc.body), "Push Hook")
	if tc.signed {
		r.Header.Set(GitLabWebhookIDHeader, gitlabIdem)
		r.Header.Set(GitLabWebhookTimestampHeader, strconv.FormatInt(testNow.Unix(), 10))
		r.Header.Set(GitLabWebhookSignatureHeader, "v1,AAAA")
	}
	for k, vs := range tc.header {
		r.Header[k] = vs
		if vs == nil {
			delete(r.Header, k)
		}
	}
	return r
}

func TestGitLabIdentify(t *testing.T) {
	g := gitlabNew(t, Options{})
	for _, tc := range gitlabIdentifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, g, tc.request())
			checkIdentity(t, got, err, tc.want)
		})
	}
}

// gitlabExpand replaces {sig} and {old} in a fuzzed signature header by
// the v1 signature of the fuzzed id, timestamp and body.
func gitlabExpand(tb testing.TB, sig, id, ts string, body []byte) string {
	if !strings.Contains(sig, "{") {
		return sig
	}
	return strings.NewReplacer(
		"{sig}", gitlabSig(tb, gitlabKey, id, ts, body),
		"{old}", gitlabSig(tb, gitlabKeyOld, id, ts, body),
	).Replace(sig)
}

func FuzzGitLabVerify(f *testing.F) {
	ts := strconv.FormatInt(testNow.Unix(), 10)
	for _, b := range gitlabBodies {
		f.Add("", "{sig}", ts, gitlabIdem, []byte(b.body))
		f.Add(string(gitlabToken), "", "", "", []byte(b.body))
		f.Add(string(gitlabTokenOld), "{old} {sig}", ts, "msg_1", []byte(b.body))
	}
	body := []byte(gitlabPushBody)
	for _, tc := range gitlabSignedCases(f, body) {
		b := changed(body, tc.body)
		r := tc.request(b)
		sig := strings.Join(r.Header.Values(GitLabWebhookSignatureHeader), "\n")
		if len(sig) > 8<<10+64 {
			continue
		}
		id, tsv := r.Header.Get(GitLabWebhookIDHeader), r.Header.Get(GitLabWebhookTimestampHeader)
		sig = strings.ReplaceAll(sig, gitlabSig(f, gitlabKey, id, tsv, b), "{sig}")
		f.Add(tc.token, sig, tsv, id, b)
	}

	g := gitlabNew(f, Options{})
	secrets := [][]byte{gitlabToken, gitlabTokenOld, gitlabKey, gitlabKeyOld}
	f.Fuzz(func(t *testing.T, token, sig, ts, id string, body []byte) {
		sig = gitlabExpand(t, sig, id, ts, body)
		r := Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
		for name, v := range map[string]string{GitLabTokenHeader: token, GitLabWebhookSignatureHeader: sig, GitLabWebhookTimestampHeader: ts, GitLabWebhookIDHeader: id} {
			for _, line := range fuzzHeaders(v) {
				r.Header.Add(name, line)
			}
		}
		if !fuzzVerify(t, g, r, secrets, testNow) {
			return
		}
		if sig == "" && ts == "" {
			if token != string(gitlabToken) && token != string(gitlabTokenOld) {
				t.Fatalf("Verify(%q): accepted a token that is not configured", r.Header)
			}
			return
		}
		n, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || strings.Contains(sig, "\n") || strings.Contains(id, "\n") {
			t.Fatalf("Verify(%q): accepted a malformed signed delivery", r.Header)
		}
		if d := testNow.Sub(time.Unix(n, 0)); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify(%q): accepted a timestamp %s away from now", r.Header, d)
		}
		for _, entry := range strings.Split(sig, " ") {
			if entry == gitlabSig(t, gitlabKey, id, ts, body) || entry == gitlabSig(t, gitlabKeyOld, id, ts, body) {
				return
			}
		}
		t.Fatalf("Verify(%q): got nil, but no entry is the v1 signature under a configured key", r.Header)
	})
}

func FuzzGitLabIdentify(f *testing.F) {
	for _, b := range gitlabBodies {
		f.Add("", []byte(b.body))
	}
	for _, tc := range gitlabIdentifyCases() {
		f.Add(tc.request().Header.Get(GitLabIdempotencyKeyHeader), []byte(tc.body))
	}
	g := gitlabNew(f, Options{})
	f.Fuzz(func(t *testing.T, key string, body []byte) {
		r := gitlabRequest(body, "Push Hook")
		r.Header.Del(GitLabIdempotencyKeyHeader)
		for _, line := range fuzzHeaders(key) {
			r.Header.Add(GitLabIdempotencyKeyHeader, line)
		}
		id, ok := fuzzIdentify(t, g, r)
		if !ok {
			return
		}
		want := key
		if key == "" {
			want = gitlabEventID
		}
		if id.ID != want || id.Type != "Push Hook" || len(id.ID) > 512 {
			t.Fatalf("Identify(key %q): got %+v, want ID %q", key, id, want)
		}
	})
}

// BenchmarkGitLab measures a signed push delivery against a bare HMAC over
// the same signed string, token deliveries, and the Standard Webhooks
// library's verification of the same headers.
func BenchmarkGitLab(b *testing.B) {
	body := []byte(gitlabPushBody)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	r := gitlabSignedRequest(b, body, "Push Hook", gitlabKey, ts)
	tr := gitlabRequest(body, "Push Hook")
	tr.Header.Set(GitLabTokenHeader, string(gitlabToken))
	g := gitlabNew(b, Options{})
	keys := [][]byte{gitlabKey}
	tokens := [][]byte{gitlabToken}
	wh, err := standardwebhooks.NewWebhook(string(gitlabKey))
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Verify(tr, tokens, testNow); err != nil {
		b.Fatal(err)
	}
	if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		b.Fatal(err)
	}
	key := gitlabB64(b, strings.TrimPrefix(string(gitlabKey), "whsec_"))
	prefix := []byte(gitlabIdem + "." + ts + ".")

	var sum [sha256.Size]byte
	benchScheme(b, g, r, keys, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, key)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
	benchRun(b, "token/verify+identify", len(body), func(b *testing.B) {
		if err := g.Verify(tr, tokens, testNow); err != nil {
			b.Fatal(err)
		}
		if _, err := g.Identify(tr); err != nil {
			b.Fatal(err)
		}
	})
	benchRun(b, "standardwebhooks/VerifyIgnoringTimestamp", len(body), func(b *testing.B) {
		if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			b.Fatal(err)
		}
	})
}
