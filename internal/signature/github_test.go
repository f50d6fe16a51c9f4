package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// githubCorpusDir is the project's copy of octokit/webhooks' payload
// examples (see testdata/corpus/README.md).
const githubCorpusDir = "../../testdata/corpus/github"

var (
	githubSecret    = []byte("gh_test_current_7c1e0b9a58d34f26")
	githubSecretOld = []byte("gh_test_previous_e4d2a9c07b6f1358")
	githubSecrets   = [][]byte{githubSecret}
)

// githubFile is one corpus payload and the event its folder names.
type githubFile struct {
	name  string // path under the corpus, e.g. "pull_request/opened.payload.json"
	event string
	body  []byte
}

// githubLoadCorpus returns every payload of the GitHub corpus in path order.
func githubLoadCorpus(tb testing.TB) []githubFile {
	tb.Helper()
	var out []githubFile
	for _, f := range walkCorpus(tb, githubCorpusDir, 273) {
		out = append(out, githubFile{name: f.name, event: path.Base(path.Dir(f.name)), body: f.body})
	}
	if len(out) != 273 {
		tb.Fatalf("github corpus: got %d payloads in %s, want 273", len(out), githubCorpusDir)
	}
	return out
}

// githubPROpened is the mid-size body (28 KB) most single-payload tests sign.
func githubPROpened(tb testing.TB) []byte {
	tb.Helper()
	return mustReadFile(tb, filepath.Join(githubCorpusDir, "pull_request", "opened.payload.json"))
}

// githubGUID makes up a delivery GUID for a corpus file, stable across runs
// so that a redelivery reuses it.
func githubGUID(name string) string {
	sum := sha256.Sum256([]byte(name))
	s := hex.EncodeToString(sum[:16])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

func githubNew(tb testing.TB) *GitHub {
	tb.Helper()
	return mustNew(tb, NewGitHub, Options{})
}

// githubRequest builds a JSON delivery of event with one X-Hub-Signature-256
// value per element of sigs.
func githubRequest(body []byte, event, delivery string, sigs ...string) Request {
	h := http.Header{
		"Content-Type":     {"application/json"},
		"User-Agent":       {"GitHub-Hookshot/5f6c9a1"},
		"X-Github-Event":   {event},
		"X-Github-Hook-Id": {"109948940"},
	}
	if delivery != "" {
		h.Set(GitHubDeliveryHeader, delivery)
	}
	for _, s := range sigs {
		h.Add(GitHubSignatureHeader, s)
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// githubForm is body as GitHub sends it for a form-encoded hook.
func githubForm(body []byte) []byte {
	return []byte("payload=" + url.QueryEscape(string(body)))
}

// githubHex is the X-Hub-Signature-256 value for body under secret,
// computed independently of the code under test.
func githubHex(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// githubAction reads the body's action without the code under test.
func githubAction(tb testing.TB, body []byte) string {
	tb.Helper()
	var m struct {
		Action *string `json:"action"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	if m.Action == nil {
		return ""
	}
	return *m.Action
}

func TestGitHubCorpus(t *testing.T) {
	g := githubNew(t)
	withAction := 0
	for _, f := range githubLoadCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			guid := githubGUID(f.name)
			action := githubAction(t, f.body)
			if action != "" {
				withAction++
			}
			for _, enc := range []struct {
				name, contentType string
				body              []byte
			}{
				{"json", "application/json", f.body},
				{"form", "application/x-www-form-urlencoded", githubForm(f.body)},
			} {
				t.Run(enc.name, func(t *testing.T) {
					r := githubRequest(enc.body, f.event, guid)
					r.Header.Set("Content-Type", enc.contentType)
					if err := g.Sign(&r, githubSecret, testNow); err != nil {
						t.Fatalf("Sign: %v", err)
					}
					if got, want := r.Header.Get(GitHubSignatureHeader), githubHex(enc.body, githubSecret); got != want {
						t.Fatalf("Sign: got %s %q, want %q", GitHubSignatureHeader, got, want)
					}
					if err := g.Verify(r, githubSecrets, testNow); err != nil {
						t.Fatalf("Verify(signed body): got %v, want nil", err)
					}

					got, err := g.Identify(r)
					if err != nil {
						t.Fatalf("Identify: %v", err)
					}
					if got.ID != guid || got.Type != f.event || !got.Created.IsZero() || got.Payload != nil {
						t.Errorf("Identify: got %+v, want ID %q, Type %q, no Created, no Payload", got, guid, f.event)
					}
					if got.Attributes["action"] != action {
						t.Errorf("Identify: got action %q, want %q (body)", got.Attributes["action"], action)
					}
					if _, ok := got.Attributes["action"]; ok != (action != "") {
						t.Errorf("Identify: got attributes %v, want an action attribute only when the body has one", got.Attributes)
					}
					if got.Attributes["hook_id"] != "109948940" {
						t.Errorf("Identify: got hook_id %q, want %q", got.Attributes["hook_id"], "109948940")
					}

					checkFlipsRejected(t, enc.name, g, r, githubSecrets, testNow)
				})
			}
		})
	}
	if withAction != 242 {
		t.Errorf("got %d payloads with an action, want 242", withAction)
	}
}

// TestGitHubRedelivery checks that a redelivery (same GUID, same bytes)
// identifies as the same event, and a new delivery of the same bytes as
// another.
func TestGitHubRedelivery(t *testing.T) {
	g := githubNew(t)
	body := githubPROpened(t)
	first, err := g.Identify(githubRequest(body, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := g.Identify(githubRequest(body, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Identify(githubRequest(body, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0959"))
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != again.ID {
		t.Errorf("redelivery: got id %q, want %q", again.ID, first.ID)
	}
	if first.ID == other.ID {
		t.Errorf("new delivery: got id %q, want one that differs from %q", other.ID, first.ID)
	}
}

func TestGitHubRotation(t *testing.T) {
	body := githubPROpened(t)
	cur := githubHex(body, githubSecret)
	old := githubHex(body, githubSecretOld)
	both := [][]byte{githubSecret, githubSecretOld}
	req := func(sig string) Request { return githubRequest(body, "pull_request", "d1", sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"two secrets reversed, signed by current", req(cur), [][]byte{githubSecretOld, githubSecret}, nil},
		{"retired secret no longer accepted", req(old), githubSecrets, ErrNoMatch},
		{"no secrets (nil)", req(cur), nil, ErrNoSecret},
		{"no secrets (empty)", req(cur), [][]byte{}, ErrNoSecret},
		{"only an empty secret", req(githubHex(body, nil)), [][]byte{{}}, ErrNoSecret},
		{"empty secret is skipped, real one used", req(cur), [][]byte{{}, githubSecret}, nil},
		{"empty secret never matches empty-key signature", req(githubHex(body, nil)), [][]byte{nil, githubSecret}, ErrNoMatch},
	}
	g := githubNew(t)
	runVerifyCases(t, g, testNow, 0, tests)
}

// TestGitHubNoTolerance checks that verification ignores the clock:
// GitHub signs no time, so any now gives the same answer.
func TestGitHubNoTolerance(t *testing.T) {
	body := githubPROpened(t)
	r := githubRequest(body, "pull_request", "d1", githubHex(body, githubSecret))
	g := githubNew(t)
	for _, now := range []time.Time{{}, time.Unix(0, 0), testNow, testNow.AddDate(10, 0, 0), time.Unix(-1<<40, 0)} {
		if err := g.Verify(r, githubSecrets, now); err != nil {
			t.Errorf("Verify at %v: got %v, want nil", now, err)
		}
	}
}

func TestNewGitHubOptions(t *testing.T) {
	runOptionsCases(t, NewGitHub, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"negative tolerance", Options{Tolerance: -time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/github"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Header: "X-Signature"}}, true},
	})
}

// githubMalformedCase is one Verify input. sig and legacy are the values of
// X-Hub-Signature-256 and X-Hub-Signature (none when nil); secrets nil
// means githubSecrets.
type githubMalformedCase struct {
	name    string
	sig     []string
	legacy  []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// githubMalformedCases is shared with the fuzz test as seeds, and with
// Meta, whose header is the same: cur signs, old is a retired secret.
func githubMalformedCases(body, cur, old []byte) []githubMalformedCase {
	ok := githubHex(body, cur)
	hexSig := strings.TrimPrefix(ok, "sha256=")
	sha1Sig := "sha1=" + hex.EncodeToString(macOf(sha1.New, cur, body))
	plain := sha256.Sum256(body)
	arabic := strings.NewReplacer("0", "٠", "1", "١", "2", "٢", "3", "٣", "4", "٤", "5", "٥", "6", "٦", "7", "٧", "8", "٨", "9", "٩").Replace(hexSig)
	fullwidth := strings.NewReplacer("0", "０", "1", "１", "2", "２", "3", "３", "4", "４", "5", "５", "6", "６", "7", "７", "8", "８", "9", "９").Replace(hexSig)
	trunc := func(b []byte) []byte { return b[:len(b)-1] }
	return []githubMalformedCase{
		{name: "valid", sig: []string{ok}, want: nil},
		{name: "valid, upper-case hex", sig: []string{"sha256=" + strings.ToUpper(hexSig)}, want: nil},
		{name: "valid beside a SHA-1 header", sig: []string{ok}, legacy: []string{sha1Sig}, want: nil},

		// Presence.
		{name: "no header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "whitespace header", sig: []string{"  \t"}, want: ErrNotSigned},
		{name: "only the SHA-1 header (no downgrade)", legacy: []string{sha1Sig}, want: ErrNotSigned},
		{name: "valid SHA-1 header, wrong SHA-256", sig: []string{githubHex(body, old)}, legacy: []string{sha1Sig}, want: ErrNoMatch},
		{name: "SHA-1 value in the SHA-256 header", sig: []string{sha1Sig}, want: ErrMalformedHeader},
		{name: "duplicated header, both valid", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "duplicated header, wrong then valid", sig: []string{githubHex(body, old), ok}, want: ErrMalformedHeader},
		{name: "two values joined by a comma", sig: []string{ok + "," + ok}, want: ErrMalformedHeader},

		// Prefix and encoding.
		{name: "no prefix", sig: []string{hexSig}, want: ErrMalformedHeader},
		{name: "prefix without '='", sig: []string{"sha256" + hexSig}, want: ErrMalformedHeader},
		{name: "upper-case prefix", sig: []string{"SHA256=" + hexSig}, want: ErrMalformedHeader},
		{name: "sha512 prefix (wrong version)", sig: []string{"sha512=" + hex.EncodeToString(macOf(sha512.New, cur, body))}, want: ErrMalformedHeader},
		{name: "sha1 prefix on a sha256 value", sig: []string{"sha1=" + hexSig}, want: ErrMalformedHeader},
		{name: "empty signature", sig: []string{"sha256="}, want: ErrMalformedHeader},
		{name: "hex one short", sig: []string{ok[:len(ok)-1]}, want: ErrMalformedHeader},
		{name: "hex one long", sig: []string{ok + "0"}, want: ErrMalformedHeader},
		{name: "hex doubled", sig: []string{ok + hexSig}, want: ErrMalformedHeader},
		{name: "non-hex digit", sig: []string{ok[:len(ok)-1] + "g"}, want: ErrMalformedHeader},
		{name: "base64 instead of hex", sig: []string{"sha256=" + "dXNlIGhleCBub3QgYmFzZTY0IGZvciB0aGlzIGhlYWRlcg=="}, want: ErrMalformedHeader},
		{name: "arabic-indic digits", sig: []string{"sha256=" + arabic}, want: ErrMalformedHeader},
		{name: "fullwidth digits", sig: []string{"sha256=" + fullwidth}, want: ErrMalformedHeader},
		{name: "leading space", sig: []string{" " + ok}, want: ErrMalformedHeader},
		{name: "trailing space", sig: []string{ok + " "}, want: ErrMalformedHeader},
		{name: "trailing newline", sig: []string{ok + "\n"}, want: ErrMalformedHeader},
		{name: "space after '='", sig: []string{"sha256= " + hexSig}, want: ErrMalformedHeader},
		{name: "NUL inside", sig: []string{ok[:20] + "\x00" + ok[21:]}, want: ErrMalformedHeader},
		{name: "header 8 KiB + 1", sig: []string{ok + strings.Repeat("0", 8<<10+1-len(ok))}, want: ErrMalformedHeader},
		{name: "header 1 MiB", sig: []string{strings.Repeat("a", 1<<20)}, want: ErrMalformedHeader},

		// Value.
		{name: "wrong secret", sig: []string{githubHex(body, []byte("not the secret"))}, want: ErrNoMatch},
		{name: "signature of another body", sig: []string{githubHex([]byte(`{"zen":"x"}`), cur)}, want: ErrNoMatch},
		{name: "plain SHA-256 of the body", sig: []string{"sha256=" + hex.EncodeToString(plain[:])}, want: ErrNoMatch},
		{name: "all zeros", sig: []string{"sha256=" + strings.Repeat("0", 64)}, want: ErrNoMatch},
		{name: "no secrets", sig: []string{ok}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "only empty secrets", sig: []string{githubHex(body, nil)}, secrets: [][]byte{{}, nil}, want: ErrNoSecret},

		// Body.
		{name: "body truncated by one byte", sig: []string{ok}, body: trunc, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body re-indented", sig: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Indent(&c, b, "", "\t"); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
		{name: "body re-encoded by encoding/json", sig: []string{ok}, body: func(b []byte) []byte {
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				panic(err)
			}
			c, err := json.Marshal(doc)
			if err != nil {
				panic(err)
			}
			return c
		}, want: ErrNoMatch},
		{name: "body form-encoded", sig: []string{ok}, body: githubForm, want: ErrNoMatch},
	}
}

func githubMalformedRuns(tb testing.TB) []malformedRun {
	body := githubPROpened(tb)
	var cases []verifyCase
	for _, tc := range githubMalformedCases(body, githubSecret, githubSecretOld) {
		r := githubRequest(changed(body, tc.body), "pull_request", "d1", tc.sig...)
		for _, v := range tc.legacy {
			r.Header.Add(GitHubLegacySignatureHeader, v)
		}
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, githubSecrets), tc.want})
	}
	g := githubNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:        g,
		r:        signed(tb, g, githubRequest(body, "pull_request", "d1"), githubSecret, testNow),
		secrets:  githubSecrets,
		sig:      signedField{header: GitHubSignatureHeader, prefix: "sha256="},
		enc:      encHex,
		versions: []string{"sha1=", "sha512=", "v1="},
	})
	return []malformedRun{{g, cases}, {g, generic}}
}

func TestGitHubVerifyMalformed(t *testing.T) { runMalformed(t, githubMalformedRuns(t)) }

// TestGitHubHeaderName checks that the header is found under any spelling a
// net/http server canonicalizes.
func TestGitHubHeaderName(t *testing.T) {
	body := githubPROpened(t)
	g := githubNew(t)
	for _, name := range []string{"X-Hub-Signature-256", "x-hub-signature-256", "X-HUB-SIGNATURE-256"} {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			h.Set(name, githubHex(body, githubSecret))
			checkErr(t, g.Verify(Request{Method: http.MethodPost, Header: h, Body: body}, githubSecrets, testNow), nil)
		})
	}
}

// githubIdentifyCase is one delivery and the identity Identify must return;
// a zero want.ID means ErrInvalidPayload. Headers not given default to a
// valid delivery GUID, event and hook id.
type githubIdentifyCase struct {
	name        string
	header      http.Header
	contentType string
	body        string
	want        Identity
}

// githubIdentifyCases is shared with the fuzz test as seeds.
func githubIdentifyCases() []githubIdentifyCase {
	const guid = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	ok := `{"action":"opened","number":1}`
	pr := func(attrs map[string]string) Identity {
		return Identity{ID: guid, Type: "pull_request", Attributes: attrs}
	}
	both := map[string]string{"action": "opened", "hook_id": "109948940"}
	form := "application/x-www-form-urlencoded"
	return []githubIdentifyCase{
		{name: "json", body: ok, want: pr(both)},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: ok, want: pr(both)},
		{name: "no content type is JSON", contentType: "-", body: ok, want: pr(both)},
		{name: "no action (push)", body: `{"ref":"refs/heads/main"}`, want: pr(map[string]string{"hook_id": "109948940"})},
		{name: "null action", body: `{"action":null}`, want: pr(map[string]string{"hook_id": "109948940"})},
		{name: "no hook id", header: http.Header{GitHubHookIDHeader: nil}, body: ok, want: pr(map[string]string{"action": "opened"})},
		{name: "neither action nor hook id", header: http.Header{GitHubHookIDHeader: nil}, body: `{}`, want: pr(nil)},
		{name: "nested action is not the event's", body: `{"pull_request":{"action":"x"}}`, want: pr(map[string]string{"hook_id": "109948940"})},
		{name: "escaped action", body: `{"action":"open\u0065d"}`, want: pr(both)},
		{name: "ping", header: http.Header{GitHubEventHeader: {"ping"}}, body: `{"zen":"Design for failure.","hook_id":1}`,
			want: Identity{ID: guid, Type: "ping", Attributes: map[string]string{"hook_id": "109948940"}}},
		{name: "form", contentType: form, body: string(githubForm([]byte(ok))), want: pr(both)},
		{name: "form, upper-case content type", contentType: "Application/X-WWW-Form-Urlencoded", body: string(githubForm([]byte(ok))), want: pr(both)},
		{name: "form with other fields", contentType: form, body: "a=1&&" + string(githubForm([]byte(ok))) + "&b=%20", want: pr(both)},
		{name: "form, escaped key", contentType: form, body: "p%61yload=" + url.QueryEscape(ok), want: pr(both)},
		{name: "form, '+' as space", contentType: form, body: "payload=" + strings.ReplaceAll(url.QueryEscape(`{"action": "opened"}`), "%20", "+"), want: pr(both)},

		{name: "missing delivery", header: http.Header{GitHubDeliveryHeader: nil}, body: ok},
		{name: "empty delivery", header: http.Header{GitHubDeliveryHeader: {""}}, body: ok},
		{name: "repeated delivery", header: http.Header{GitHubDeliveryHeader: {guid, guid}}, body: ok},
		{name: "delivery 513 bytes", header: http.Header{GitHubDeliveryHeader: {strings.Repeat("a", 513)}}, body: ok},
		{name: "delivery invalid UTF-8", header: http.Header{GitHubDeliveryHeader: {"\xff\xfe"}}, body: ok},
		{name: "delivery with a control character", header: http.Header{GitHubDeliveryHeader: {"a\x00b"}}, body: ok},
		{name: "delivery with surrounding space", header: http.Header{GitHubDeliveryHeader: {" " + guid}}, body: ok},
		{name: "missing event", header: http.Header{GitHubEventHeader: nil}, body: ok},
		{name: "repeated event", header: http.Header{GitHubEventHeader: {"push", "ping"}}, body: ok},
		{name: "repeated hook id", header: http.Header{GitHubHookIDHeader: {"1", "2"}}, body: ok},
		{name: "empty body", body: ``},
		{name: "not JSON", body: `action=opened`},
		{name: "array", body: `[{"action":"opened"}]`},
		{name: "truncated JSON", body: `{"action":"opened"`},
		{name: "trailing garbage", body: `{"action":"opened"} x`},
		{name: "action a number", body: `{"action":1}`},
		{name: "action empty", body: `{"action":""}`},
		{name: "action invalid UTF-8", body: "{\"action\":\"\xff\"}"},
		{name: "form body sent as JSON", body: string(githubForm([]byte(ok)))},
		{name: "JSON body sent as form", contentType: form, body: ok},
		{name: "form without payload", contentType: form, body: "a=1&b=2"},
		{name: "form with two payloads", contentType: form, body: string(githubForm([]byte(ok))) + "&" + string(githubForm([]byte(ok)))},
		{name: "form with a bad escape", contentType: form, body: "payload=%7B%zz"},
		{name: "form with a truncated escape", contentType: form, body: "payload=%7"},
		{name: "form with a semicolon", contentType: form, body: "a=1;" + string(githubForm([]byte(ok)))},
		{name: "form payload not JSON", contentType: form, body: "payload=hello"},
		{name: "form empty", contentType: form, body: ""},
	}
}

func (tc githubIdentifyCase) request() Request {
	r := githubRequest([]byte(tc.body), "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	switch tc.contentType {
	case "":
	case "-":
		r.Header.Del("Content-Type")
	default:
		r.Header.Set("Content-Type", tc.contentType)
	}
	for k, vs := range tc.header {
		r.Header[k] = vs
		if vs == nil {
			delete(r.Header, k)
		}
	}
	return r
}

func TestGitHubIdentify(t *testing.T) {
	g := githubNew(t)
	for _, tc := range githubIdentifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, g, tc.request())
			checkIdentity(t, got, err, tc.want)
		})
	}
}

// githubPlaceholders stand for signatures of the fuzzed body, so that the
// fuzzer reaches the accepted path without a literal signature pinning
// every byte of a large seed body (see fuzz_test.go).
const (
	githubSigCur   = "{sig}"
	githubSigOld   = "{old}"
	githubSigUpper = "{SIG}"
)

func githubExpand(header string, body, cur, old []byte) string {
	if !strings.Contains(header, "{") {
		return header
	}
	c := strings.TrimPrefix(githubHex(body, cur), "sha256=")
	return strings.NewReplacer(
		githubSigCur, c,
		githubSigOld, strings.TrimPrefix(githubHex(body, old), "sha256="),
		githubSigUpper, strings.ToUpper(c),
	).Replace(header)
}

func githubPlacehold(header string, body, cur, old []byte) string {
	c := strings.TrimPrefix(githubHex(body, cur), "sha256=")
	return strings.NewReplacer(
		c, githubSigCur,
		strings.ToUpper(c), githubSigUpper,
		strings.TrimPrefix(githubHex(body, old), "sha256="), githubSigOld,
	).Replace(header)
}

// githubAddMalformedSeeds adds githubMalformedCases(body, cur, old) as seeds
// (signatures with placeholders, legacy signatures, body) of a fuzz target
// of the X-Hub-Signature-256 family.
func githubAddMalformedSeeds(f *testing.F, body, cur, old []byte) {
	for _, tc := range githubMalformedCases(body, cur, old) {
		h := strings.Join(tc.sig, "\n")
		if len(h) > 8<<10+64 {
			continue // a long seed makes every mutation crawl
		}
		b := changed(body, tc.body)
		f.Add(githubPlacehold(h, b, cur, old), strings.Join(tc.legacy, "\n"), b)
	}
}

func FuzzGitHubVerify(f *testing.F) {
	for _, c := range githubLoadCorpus(f)[:40] {
		f.Add("sha256="+githubSigCur, "", c.body)
		f.Add("sha256="+githubSigOld, "sha1=00", c.body)
	}
	body := githubPROpened(f)
	githubAddMalformedSeeds(f, body, githubSecret, githubSecretOld)

	g := githubNew(f)
	secrets := [][]byte{githubSecret, githubSecretOld}
	f.Fuzz(func(t *testing.T, sig, legacy string, body []byte) {
		sig = githubExpand(sig, body, githubSecret, githubSecretOld)
		r := githubRequest(body, "pull_request", "d1")
		for _, v := range fuzzHeaders(sig) {
			r.Header.Add(GitHubSignatureHeader, v)
		}
		for _, v := range fuzzHeaders(legacy) {
			r.Header.Add(GitHubLegacySignatureHeader, v)
		}
		if !fuzzVerify(t, g, r, secrets, testNow) {
			return
		}
		if strings.Contains(sig, "\n") {
			t.Fatalf("Verify(%q): accepted several %s headers", sig, GitHubSignatureHeader)
		}
		checkAcceptedHex(t, sig, "sha256=", secrets, func(secret []byte) string { return SignGitHub(body, secret) })
	})
}

func FuzzGitHubIdentify(f *testing.F) {
	for _, c := range githubLoadCorpus(f)[:40] {
		f.Add("application/json", c.body)
	}
	for _, tc := range githubIdentifyCases() {
		f.Add(tc.contentType, []byte(tc.body))
	}

	g := githubNew(f)
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		r := githubRequest(body, "pull_request", "d1")
		r.Header.Set("Content-Type", contentType)
		id, ok := fuzzIdentify(t, g, r)
		if !ok {
			return
		}
		if id.ID != "d1" || id.Type != "pull_request" {
			t.Fatalf("Identify(%q): got %+v, want the header's id and type", body, id)
		}
		payload := body
		if githubIsForm(r.Header) {
			v, err := url.ParseQuery(string(body))
			if err != nil || len(v["payload"]) != 1 {
				t.Fatalf("Identify(%q): accepted a form url.ParseQuery refuses (%v) or without one payload", body, err)
			}
			payload = []byte(v.Get("payload"))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatalf("Identify(%q): accepted a payload encoding/json refuses: %v", payload, err)
		}
		if a, ok := id.Attributes["action"]; ok {
			var want string
			if err := json.Unmarshal(m["action"], &want); err != nil || want != a {
				t.Fatalf("Identify(%q): got action %q, want %q (%v)", payload, a, want, err)
			}
		}
	})
}

// BenchmarkGitHub compares the scheme with a bare HMAC-SHA256 over the same
// bytes (the floor).
func BenchmarkGitHub(b *testing.B) {
	body := githubPROpened(b)
	sig := githubHex(body, githubSecret)
	r := githubRequest(body, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", sig)
	var sum [sha256.Size]byte
	benchScheme(b, githubNew(b), r, githubSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, githubSecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}

// ExampleSignGitHub reproduces the test vector in GitHub's documentation
// ("Validating webhook deliveries"): secret "It's a Secret to Everybody",
// payload "Hello, World!".
func ExampleSignGitHub() {
	fmt.Println(SignGitHub([]byte("Hello, World!"), []byte("It's a Secret to Everybody")))
	// Output: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17
}
