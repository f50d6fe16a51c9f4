package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

var (
	metaSecret    = []byte("0f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f")
	metaSecretOld = []byte("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	metaSecrets   = [][]byte{metaSecret}
	metaTokens    = [][]byte{[]byte("verify-token-current"), []byte("verify-token-previous")}
)

// metaBodies are deliveries shaped like the examples in Meta's Graph API
// webhook documentation (values made up here). They keep Meta's wire form:
// compact, with non-ASCII escaped as \uXXXX.
var metaBodies = []struct{ name, object, body string }{
	{"page feed", "page", `{"object":"page","entry":[{"id":"1234567890","time":1721954100,"changes":[{"field":"feed","value":{"item":"status","verb":"add","post_id":"1234567890_987654321","message":"Hej! \u00e4\u00f6\u00e5 \ud83d\ude00","from":{"id":"1111","name":"Test User"},"created_time":1721954100}}]}]}`},
	{"messenger", "page", `{"object":"page","entry":[{"id":"106540352242922","time":1721954100123,"messaging":[{"sender":{"id":"6783201741702951"},"recipient":{"id":"106540352242922"},"timestamp":1721954100000,"message":{"mid":"m_AbCdEfGh123","text":"hello, world!"}}]}]}`},
	{"whatsapp", "whatsapp_business_account", `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1721954100","type":"text","text":{"body":"Does it come in another color? \u00bfY en rojo?"}}]},"field":"messages"}]}]}`},
	{"instagram", "instagram", `{"object":"instagram","entry":[{"id":"17841405793187218","time":1721954100,"changes":[{"field":"comments","value":{"id":"17865799348089039","text":"This is an example.","from":{"id":"232323232","username":"test"},"media":{"id":"123123123","media_product_type":"FEED"}}}]}]}`},
	{"user", "user", `{"object":"user","entry":[{"uid":"1234","id":"1234","time":1721954100,"changed_fields":["email"]}]}`},
}

func metaNew(tb testing.TB) *Meta {
	tb.Helper()
	return mustNew(tb, NewMeta, Options{})
}

func metaRequest(body []byte, sigs ...string) Request {
	return jsonPost(body, map[string][]string{"User-Agent": {"facebookexternalua"}, MetaSignatureHeader: sigs})
}

// metaID is the identity Meta deliveries get, computed without the code
// under test.
func metaID(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestMetaBodies(t *testing.T) {
	m := metaNew(t)
	for _, b := range metaBodies {
		body := []byte(b.body)
		t.Run(b.name, func(t *testing.T) {
			if !json.Valid(body) {
				t.Fatalf("test body is not JSON")
			}
			r := metaRequest(body)
			if err := m.Sign(&r, metaSecret, testNow); err != nil {
				t.Fatal(err)
			}
			if got, want := r.Header.Get(MetaSignatureHeader), githubHex(body, metaSecret); got != want {
				t.Errorf("Sign: got %q, want %q", got, want)
			}
			if err := m.Verify(r, metaSecrets, testNow); err != nil {
				t.Fatalf("Verify(signed): got %v, want nil", err)
			}
			got, err := m.Identify(r)
			checkIdentity(t, got, err, Identity{ID: metaID(body), Type: b.object})
			checkFlipsRejected(t, b.name, m, r, metaSecrets, testNow)
		})
	}
}

// TestMetaEscapedUnicode checks that the signature covers the bytes as
// sent: Meta escapes non-ASCII as \uXXXX, and the same document decoded
// and re-encoded (as encoding/json writes it, with raw UTF-8) is another
// message.
func TestMetaEscapedUnicode(t *testing.T) {
	m := metaNew(t)
	escaped := []byte(`{"object":"page","entry":[{"id":"1","time":1721954100,"changes":[{"field":"feed","value":{"message":"\u00e4\u00f6\u00e5"}}]}]}`)
	var doc any
	if err := json.Unmarshal(escaped, &doc); err != nil {
		t.Fatal(err)
	}
	reencoded, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(reencoded, []byte("äöå")) {
		t.Fatalf("re-encoded body %s: want raw äöå", reencoded)
	}
	upperHex := bytes.ReplaceAll(escaped, []byte(`\u00e4`), []byte(`\u00E4`))
	sig := githubHex(escaped, metaSecret)
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"as sent", escaped, nil},
		{"re-encoded with raw UTF-8", reencoded, ErrNoMatch},
		{"upper-case escape digits", upperHex, ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, m.Verify(metaRequest(tt.body, sig), metaSecrets, testNow), tt.want)
		})
	}
	t.Run("signed over raw UTF-8, sent escaped", func(t *testing.T) {
		checkErr(t, m.Verify(metaRequest(escaped, githubHex(reencoded, metaSecret)), metaSecrets, testNow), ErrNoMatch)
	})
}

func metaMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(metaBodies[2].body)
	var cases []verifyCase
	for _, tc := range githubMalformedCases(body, metaSecret, metaSecretOld) {
		r := metaRequest(changed(body, tc.body), tc.sig...)
		for _, v := range tc.legacy {
			r.Header.Add(MetaLegacySignatureHeader, v)
		}
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, metaSecrets), tc.want})
	}
	m := metaNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:        m,
		r:        signed(tb, m, metaRequest(body), metaSecret, testNow),
		secrets:  metaSecrets,
		sig:      signedField{header: MetaSignatureHeader, prefix: "sha256="},
		enc:      encHex,
		versions: []string{"sha1=", "sha512=", "v1="},
	})
	return []malformedRun{{m, cases}, {m, generic}}
}

func TestMetaVerifyMalformed(t *testing.T) { runMalformed(t, metaMalformedRuns(t)) }

func TestMetaRotation(t *testing.T) {
	body := []byte(metaBodies[0].body)
	cur, old := githubHex(body, metaSecret), githubHex(body, metaSecretOld)
	req := func(sig string) Request { return metaRequest(body, sig) }
	tests := []verifyCase{
		{"two app secrets, signed by current", req(cur), [][]byte{metaSecret, metaSecretOld}, nil},
		{"two app secrets, signed by previous", req(old), [][]byte{metaSecret, metaSecretOld}, nil},
		{"previous first", req(cur), [][]byte{metaSecretOld, metaSecret}, nil},
		{"retired secret", req(old), metaSecrets, ErrNoMatch},
		{"no secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{{}, metaSecret}, nil},
	}
	m := metaNew(t)
	runVerifyCases(t, m, testNow, 0, tests)
	t.Run("no clock", func(t *testing.T) {
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, m.Verify(metaRequest(body, cur), metaSecrets, now), nil)
		}
	})
}

func TestNewMetaOptions(t *testing.T) {
	runOptionsCases(t, NewMeta, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/meta"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Header: "X-Hub-Signature-256"}}, true},
	})
}

// metaIdentifyCases is shared with the fuzz test as seeds; a zero want.ID
// means ErrInvalidPayload. want.ID "hash" stands for metaID(body).
var metaIdentifyCases = []identifyCase{
	{name: "page", body: `{"object":"page","entry":[]}`, want: Identity{ID: "hash", Type: "page"}},
	{name: "entry not empty", body: `{"entry":[{"id":"1"}],"object":"whatsapp_business_account"}`, want: Identity{ID: "hash", Type: "whatsapp_business_account"}},
	{name: "escaped object", body: `{"object":"p\u0061ge","entry":[]}`, want: Identity{ID: "hash", Type: "page"}},
	{name: "indented", body: "{\n  \"object\": \"page\",\n  \"entry\": []\n}\n", want: Identity{ID: "hash", Type: "page"}},

	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"object":"page","entry":[]}]`},
	{name: "not JSON", body: `object=page`},
	{name: "truncated", body: `{"object":"page","entry":[]`},
	{name: "trailing garbage", body: `{"object":"page","entry":[]}]`},
	{name: "no object", body: `{"entry":[]}`},
	{name: "empty object", body: `{"object":"","entry":[]}`},
	{name: "null object", body: `{"object":null,"entry":[]}`},
	{name: "object a number", body: `{"object":1,"entry":[]}`},
	{name: "object invalid UTF-8", body: "{\"object\":\"p\xffge\",\"entry\":[]}"},
	{name: "object 513 bytes", body: `{"object":"` + strings.Repeat("o", 513) + `","entry":[]}`},
	{name: "no entry", body: `{"object":"page"}`},
	{name: "entry an object", body: `{"object":"page","entry":{"id":"1"}}`},
	{name: "entry null", body: `{"object":"page","entry":null}`},
	{name: "entry a string", body: `{"object":"page","entry":"[]"}`},
}

func TestMetaIdentify(t *testing.T) {
	m := metaNew(t)
	for _, tc := range metaIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want.ID == "hash" {
				want.ID = metaID([]byte(tc.body))
			}
			got, err := identifyNoPanic(t, m, metaRequest([]byte(tc.body)))
			checkIdentity(t, got, err, want)
		})
	}
}

// TestMetaIdentityIsTheBytes checks the dedupe rule: a retry (the same
// bytes) is the same event, any change of bytes another.
func TestMetaIdentityIsTheBytes(t *testing.T) {
	m := metaNew(t)
	body := []byte(metaBodies[1].body)
	first, err := m.Identify(metaRequest(body))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := m.Identify(metaRequest(bytes.Clone(body)))
	if err != nil {
		t.Fatal(err)
	}
	spaced, err := m.Identify(metaRequest(append(bytes.Clone(body), '\n')))
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != retry.ID {
		t.Errorf("retry: got id %q, want %q", retry.ID, first.ID)
	}
	if first.ID == spaced.ID {
		t.Errorf("other bytes: got id %q, want one that differs", spaced.ID)
	}
	if !strings.HasPrefix(first.ID, "sha256:") || len(first.ID) != 71 {
		t.Errorf("got id %q, want sha256: and 64 hex digits", first.ID)
	}
}

// metaSubscribeQuery builds a subscription query; "-" leaves a parameter out.
func metaSubscribeQuery(mode, token, challenge string) string {
	q := url.Values{}
	for k, v := range map[string]string{MetaModeParam: mode, MetaVerifyTokenParam: token, MetaChallengeParam: challenge} {
		if v != "-" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

type metaSubscribeCase struct {
	name   string
	method string
	query  string
	tokens [][]byte
	want   error
	reply  string // the challenge echoed when want is nil
}

func metaSubscribeCases() []metaSubscribeCase {
	tok := string(metaTokens[0])
	q := metaSubscribeQuery
	return []metaSubscribeCase{
		{name: "valid", query: q("subscribe", tok, "1158201444"), reply: "1158201444"},
		{name: "previous token", query: q("subscribe", string(metaTokens[1]), "42"), reply: "42"},
		{name: "parameters in Meta's order", query: "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=" + tok, reply: "1158201444"},
		{name: "escaped token", query: q("subscribe", "a b&c=d/é", "7"), tokens: [][]byte{[]byte("a b&c=d/é")}, reply: "7"},
		{name: "challenge 1024 bytes", query: q("subscribe", tok, strings.Repeat("9", 1024)), reply: strings.Repeat("9", 1024)},
		{name: "challenge with punctuation", query: q("subscribe", tok, "abc-123_X.~"), reply: "abc-123_X.~"},
		{name: "extra parameter ignored", query: q("subscribe", tok, "5") + "&x=1", reply: "5"},

		{name: "POST", method: http.MethodPost, query: q("subscribe", tok, "1"), want: ErrNotSigned},
		{name: "empty query", query: "", want: ErrNotSigned},
		{name: "no mode", query: q("-", tok, "1"), want: ErrNotSigned},
		{name: "empty mode", query: q("", tok, "1"), want: ErrNotSigned},
		{name: "mode unsubscribe", query: q("unsubscribe", tok, "1"), want: ErrNoMatch},
		{name: "mode upper-case", query: q("SUBSCRIBE", tok, "1"), want: ErrNoMatch},
		{name: "no token", query: q("subscribe", "-", "1"), want: ErrNotSigned},
		{name: "empty token", query: q("subscribe", "", "1"), tokens: [][]byte{{}}, want: ErrNotSigned},
		{name: "wrong token", query: q("subscribe", "guess", "1"), want: ErrNoMatch},
		{name: "token prefix", query: q("subscribe", tok[:len(tok)-1], "1"), want: ErrNoMatch},
		{name: "token with trailing space", query: q("subscribe", tok+" ", "1"), want: ErrNoMatch},
		{name: "underscored names (PHP)", query: "hub_mode=subscribe&hub_verify_token=" + tok + "&hub_challenge=1", want: ErrNotSigned},
		{name: "repeated token", query: q("subscribe", tok, "1") + "&hub.verify_token=" + tok, want: ErrMalformedHeader},
		{name: "repeated mode", query: q("subscribe", tok, "1") + "&hub.mode=subscribe", want: ErrMalformedHeader},
		{name: "no challenge", query: q("subscribe", tok, "-"), want: ErrMalformedHeader},
		{name: "empty challenge", query: q("subscribe", tok, ""), want: ErrMalformedHeader},
		{name: "repeated challenge", query: q("subscribe", tok, "1") + "&hub.challenge=2", want: ErrMalformedHeader},
		{name: "challenge 1025 bytes", query: q("subscribe", tok, strings.Repeat("9", 1025)), want: ErrMalformedHeader},
		{name: "challenge with a space", query: q("subscribe", tok, "1 2"), want: ErrMalformedHeader},
		{name: "challenge with markup", query: q("subscribe", tok, "<script>"), want: nil, reply: "<script>"},
		{name: "challenge with a newline", query: q("subscribe", tok, "1\r\n2"), want: ErrMalformedHeader},
		{name: "challenge non-ASCII", query: q("subscribe", tok, "١٢٣"), want: ErrMalformedHeader},
		{name: "bad escape", query: "hub.mode=subscribe&hub.verify_token=%zz&hub.challenge=1", want: ErrMalformedHeader},
		{name: "semicolon separator", query: "hub.mode=subscribe;hub.verify_token=" + tok + ";hub.challenge=1", want: ErrMalformedHeader},
		{name: "no tokens configured", query: q("subscribe", tok, "1"), tokens: [][]byte{}, want: ErrNoSecret},
		{name: "only empty tokens configured", query: q("subscribe", tok, "1"), tokens: [][]byte{{}, nil}, want: ErrNoSecret},
	}
}

func TestMetaSubscribe(t *testing.T) {
	m := metaNew(t)
	for _, tc := range metaSubscribeCases() {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			tokens := tc.tokens
			if tokens == nil {
				tokens = metaTokens
			}
			var (
				reply Reply
				err   error
			)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Subscribe(%q) panicked: %v", tc.query, p)
					}
				}()
				reply, err = m.Subscribe(Request{Method: method, Header: http.Header{}, RawQuery: tc.query}, tokens)
			}()
			checkErr(t, err, tc.want)
			if err != nil {
				if !isSentinel(err) {
					t.Errorf("got %v, want one of the Err* causes", err)
				}
				if reply.Status != 0 || reply.Body != nil {
					t.Errorf("Subscribe(%q): got reply %+v with error %v, want no reply", tc.query, reply, err)
				}
				return
			}
			want := Reply{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(tc.reply)}
			if reply.Status != want.Status || reply.ContentType != want.ContentType || !bytes.Equal(reply.Body, want.Body) {
				t.Errorf("Subscribe(%q): got %+v, want %+v", tc.query, reply, want)
			}
		})
	}
}

func FuzzMetaVerify(f *testing.F) {
	for _, b := range metaBodies {
		f.Add("sha256="+githubSigCur, "", []byte(b.body))
		f.Add("sha256="+githubSigOld, "sha1=00", []byte(b.body))
	}
	body := []byte(metaBodies[2].body)
	githubAddMalformedSeeds(f, body, metaSecret, metaSecretOld)
	m := metaNew(f)
	secrets := [][]byte{metaSecret, metaSecretOld}
	f.Fuzz(func(t *testing.T, sig, legacy string, body []byte) {
		sig = githubExpand(sig, body, metaSecret, metaSecretOld)
		r := metaRequest(body, fuzzHeaders(sig)...)
		for _, v := range fuzzHeaders(legacy) {
			r.Header.Add(MetaLegacySignatureHeader, v)
		}
		if !fuzzVerify(t, m, r, secrets, testNow) {
			return
		}
		checkAcceptedHex(t, sig, "sha256=", secrets, func(secret []byte) string { return githubHex(body, secret) })
	})
}

func FuzzMetaIdentify(f *testing.F) {
	for _, b := range metaBodies {
		f.Add([]byte(b.body))
	}
	for _, tc := range metaIdentifyCases {
		f.Add([]byte(tc.body))
	}
	m := metaNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, m, metaRequest(body))
		if !ok {
			return
		}
		var doc struct {
			Object string            `json:"object"`
			Entry  []json.RawMessage `json:"entry"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if id.ID != metaID(body) || id.Type != doc.Object || id.Type == "" {
			t.Fatalf("Identify(%q): got %+v, want ID %s and type %q", body, id, metaID(body), doc.Object)
		}
	})
}

func FuzzMetaSubscribe(f *testing.F) {
	for _, tc := range metaSubscribeCases() {
		f.Add(tc.query)
	}
	m := metaNew(f)
	f.Fuzz(func(t *testing.T, query string) {
		reply, err := m.Subscribe(Request{Method: http.MethodGet, RawQuery: query}, metaTokens)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("Subscribe(%q): got %v, want one of the Err* causes", query, err)
			}
			return
		}
		q, perr := url.ParseQuery(query)
		if perr != nil {
			t.Fatalf("Subscribe(%q): answered a query url.ParseQuery refuses: %v", query, perr)
		}
		tok := q.Get(MetaVerifyTokenParam)
		if q.Get(MetaModeParam) != "subscribe" || (tok != string(metaTokens[0]) && tok != string(metaTokens[1])) {
			t.Fatalf("Subscribe(%q): answered without subscribe mode and a configured token", query)
		}
		if string(reply.Body) != q.Get(MetaChallengeParam) || len(reply.Body) > MetaMaxChallenge || reply.Status != http.StatusOK {
			t.Fatalf("Subscribe(%q): got %+v, want 200 with the challenge", query, reply)
		}
	})
}

// metaBenchBody is a mid-size page delivery: Meta batches entries, here 12.
func metaBenchBody() []byte {
	var b bytes.Buffer
	b.WriteString(`{"object":"page","entry":[`)
	for i := range 12 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"106540352242922","time":%d,"messaging":[{"sender":{"id":"678320174170295%d"},"recipient":{"id":"106540352242922"},"timestamp":%d,"message":{"mid":"m_AbCdEfGh12345678901234567890%d","text":"Bonjour, je voudrais changer ma commande n\u00b0 %d, s'il vous pla\u00eet. Merci beaucoup !"}}]}`,
			1721954100000+i, i, 1721954100000+i, i, 4000+i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkMeta compares the scheme with a bare HMAC-SHA256 over the same
// bytes. There is no official Go SDK that verifies Meta webhooks.
func BenchmarkMeta(b *testing.B) {
	body := metaBenchBody()
	if !json.Valid(body) {
		b.Fatal("bench body is not JSON")
	}
	r := metaRequest(body, githubHex(body, metaSecret))
	var sum [sha256.Size]byte
	benchScheme(b, metaNew(b), r, metaSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, metaSecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}

// ExampleMeta_Sign pins the header format; the value was computed with
// openssl (HMAC-SHA256 of the body under "app-secret").
func ExampleMeta_Sign() {
	r := Request{Body: []byte(`{"object":"page","entry":[]}`)}
	m, _ := NewMeta(Options{})
	_ = m.Sign(&r, []byte("app-secret"), time.Time{})
	fmt.Println(r.Header.Get(MetaSignatureHeader))
	// Output: sha256=e6e9d7a842a48e17f43a34d6125d0d933e2aab92ee37f0993a4d493b50e3d438
}
