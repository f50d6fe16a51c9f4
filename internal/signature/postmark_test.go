package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	postmarkCreds    = []byte("postmark-hook:Kq8Zt2Wx5Lm9Rv1Pn4Hs7Jd3Fg6")
	postmarkCredsOld = []byte("postmark-hook:old-Bc1Nm4Xv7Zq0Lp3Ks6Wr9Ty2")
	postmarkSecrets  = [][]byte{postmarkCreds}
)

// postmarkDelivery is shaped like the Delivery example of Postmark's
// webhook documentation (values made up here).
const postmarkDelivery = `{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"00000000-0000-0000-0000-000000000000","Recipient":"ada@example.com","Tag":"welcome","DeliveredAt":"2024-07-26T00:40:00.9070259Z","Details":"Test delivery webhook details","Metadata":{"a_key":"a_value"}}`

func postmarkRequest(body []byte, auth ...string) Request {
	return jsonPost(body, map[string][]string{"Authorization": auth, "User-Agent": {"Postmark"}})
}

func postmarkBasic(creds []byte) string {
	return "Basic " + base64.StdEncoding.EncodeToString(creds)
}

func TestPostmark(t *testing.T) {
	p := mustNew(t, NewPostmark, Options{})
	for _, f := range append(walkCorpus(t, corpusDir, 15), corpusFile{name: "Delivery", body: []byte(postmarkDelivery)}) {
		r := signed(t, p, postmarkRequest(f.body), postmarkCreds, testNow)
		if got := r.Header.Get("Authorization"); got != postmarkBasic(postmarkCreds) {
			t.Errorf("%s: Sign: got %q", f.name, got)
		}
		checkErr(t, verifyNoPanic(t, p, r, postmarkSecrets, testNow), nil)
	}
	got, err := p.Identify(postmarkRequest([]byte(postmarkDelivery)))
	checkIdentity(t, got, err, Identity{ID: hashID(postmarkDelivery), Type: "Delivery"})
	inbound := `{"FromName":"Ada","MessageID":"22c74902-a0c1-4511-804f-341342852c90","Subject":"Hello"}`
	got, err = p.Identify(postmarkRequest([]byte(inbound)))
	checkIdentity(t, got, err, Identity{ID: hashID(inbound), Type: "Inbound"})
	runOptionsCases(t, NewPostmark, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/x"}, true},
	})
	for _, h := range p.KeptHeaders() {
		if strings.EqualFold(h, "Authorization") {
			t.Errorf("KeptHeaders %v: the credentials must never be kept", p.KeptHeaders())
		}
	}
}

func postmarkMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(postmarkDelivery)
	ok := postmarkBasic(postmarkCreds)
	req := func(auth ...string) Request { return postmarkRequest(body, auth...) }
	raw := base64.StdEncoding.EncodeToString(postmarkCreds)
	var cases []verifyCase
	for _, c := range []struct {
		name    string
		auth    []string
		secrets [][]byte
		want    error
	}{
		{"valid", []string{ok}, nil, nil},
		{"lowercase scheme is accepted", []string{"basic " + raw}, nil, nil},
		{"two secrets, the old one sent", []string{postmarkBasic(postmarkCredsOld)}, [][]byte{postmarkCreds, postmarkCredsOld}, nil},
		{"missing", nil, nil, ErrNotSigned},
		{"empty", []string{""}, nil, ErrNotSigned},
		{"two headers", []string{ok, ok}, nil, ErrMalformedHeader},
		{"Bearer", []string{"Bearer " + raw}, nil, ErrMalformedHeader},
		{"no scheme", []string{raw}, nil, ErrMalformedHeader},
		{"not base64", []string{"Basic !!!"}, nil, ErrMalformedHeader},
		{"unpadded", []string{"Basic " + strings.TrimRight(base64.StdEncoding.EncodeToString([]byte("a:bc")), "=")}, nil, ErrMalformedHeader},
		{"no colon", []string{postmarkBasic([]byte("postmark-hook"))}, nil, ErrMalformedHeader},
		{"two spaces", []string{"Basic  " + raw}, nil, ErrMalformedHeader},
		{"wrong password", []string{postmarkBasic([]byte("postmark-hook:wrong"))}, nil, ErrNoMatch},
		{"wrong user", []string{postmarkBasic([]byte("someone:Kq8Zt2Wx5Lm9Rv1Pn4Hs7Jd3Fg6"))}, nil, ErrNoMatch},
		{"a prefix of the password", []string{postmarkBasic(postmarkCreds[:len(postmarkCreds)-1])}, nil, ErrNoMatch},
		{"the password and more", []string{postmarkBasic(append([]byte(nil), append(postmarkCreds, 'x')...))}, nil, ErrNoMatch},
		{"the digest in place of the password", []string{postmarkBasic([]byte("postmark-hook:" + string(sha256.New().Sum(postmarkCreds))))}, nil, ErrNoMatch},
		{"retired secret", []string{postmarkBasic(postmarkCredsOld)}, nil, ErrNoMatch},
		{"no secrets", []string{ok}, [][]byte{}, ErrNoSecret},
		{"only an empty secret", []string{postmarkBasic([]byte(":"))}, [][]byte{{}}, ErrNoSecret},
	} {
		cases = append(cases, verifyCase{c.name, req(c.auth...), orSecrets(c.secrets, postmarkSecrets), c.want})
	}
	p := mustNew(tb, NewPostmark, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       p,
		r:       signed(tb, p, postmarkRequest(body), postmarkCreds, testNow),
		secrets: postmarkSecrets,
		sig:     signedField{header: PostmarkAuthorizationHeader, prefix: "Basic "},
		enc:     encBase64,
		// The body is not signed: Basic credentials do not depend on it.
		drop: postmarkBodyVariants,
	})
	return []malformedRun{{p, cases}, {p, generic}}
}

func TestPostmarkVerifyMalformed(t *testing.T) { runMalformed(t, postmarkMalformedRuns(t)) }

// postmarkBodyVariants are the generic variants that change the body
// alone, which Basic credentials rightly accept.
var postmarkBodyVariants = map[string]string{
	"body: truncated by one byte": "Basic credentials do not depend on the body",
	"body: one byte appended":     "Basic credentials do not depend on the body",
	"body: first byte flipped":    "Basic credentials do not depend on the body",
	"body: middle byte flipped":   "Basic credentials do not depend on the body",
	"body: last byte flipped":     "Basic credentials do not depend on the body",
	"body: emptied":               "Basic credentials do not depend on the body",
	"body: doubled":               "Basic credentials do not depend on the body",
	"version: upper-cased":        "the Basic scheme's name is case-insensitive (RFC 7617)",
}

var postmarkIdentifyCases = []identifyCase{
	{name: "bounce", body: `{"RecordType":"Bounce","ID":42,"Type":"HardBounce"}`, want: Identity{ID: hashID(`{"RecordType":"Bounce","ID":42,"Type":"HardBounce"}`), Type: "Bounce"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[]`},
	{name: "numeric RecordType", body: `{"RecordType":1}`},
	{name: "empty RecordType", body: `{"RecordType":""}`},
}

func TestPostmarkIdentify(t *testing.T) {
	p := mustNew(t, NewPostmark, Options{})
	for _, tc := range postmarkIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, p, postmarkRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzPostmarkVerify(f *testing.F) {
	f.Add(postmarkBasic(postmarkCreds))
	f.Add("basic x")
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte(":")))
	p := mustNew(f, NewPostmark, Options{})
	secrets := [][]byte{postmarkCreds, postmarkCredsOld}
	f.Fuzz(func(t *testing.T, auth string) {
		r := Request{Method: http.MethodPost, Header: http.Header{"Authorization": fuzzHeaders(auth)}, Body: []byte(postmarkDelivery)}
		if !fuzzVerify(t, p, r, secrets, testNow) {
			return
		}
		_, enc, _ := strings.Cut(auth, " ")
		creds, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || (string(creds) != string(postmarkCreds) && string(creds) != string(postmarkCredsOld)) {
			t.Fatalf("Verify(%q): accepted credentials that are no configured secret", auth)
		}
	})
}

func FuzzPostmarkIdentify(f *testing.F) {
	f.Add([]byte(postmarkDelivery))
	for _, tc := range postmarkIdentifyCases {
		f.Add([]byte(tc.body))
	}
	p := mustNew(f, NewPostmark, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, p, postmarkRequest(body))
		if !ok {
			return
		}
		var doc struct{ RecordType *string }
		if err := json.Unmarshal(body, &doc); err != nil || got.ID != hashID(string(body)) || (doc.RecordType != nil && *doc.RecordType != got.Type) {
			t.Fatalf("Identify(%q): got %+v (%v)", body, got, err)
		}
	})
}

// BenchmarkPostmark compares the scheme with one SHA-256 of the body:
// there is no MAC, and the body's hash is the least a delivery costs (it
// is the id).
func BenchmarkPostmark(b *testing.B) {
	body := []byte(postmarkDelivery)
	r := postmarkRequest(body, postmarkBasic(postmarkCreds))
	benchScheme(b, mustNew(b, NewPostmark, Options{}), r, postmarkSecrets, testNow, "bare-sha256-body", func(*testing.B) {
		_ = sha256.Sum256(body)
	})
}
