package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	dropboxSecret    = []byte("dbx-app-secret-k2m9x4q7w1")
	dropboxSecretOld = []byte("dbx-app-secret-old-p5r8t3v6")
	dropboxSecrets   = [][]byte{dropboxSecret}
)

// dropboxNotification is shaped like the notification of Dropbox's webhook
// documentation (account ids made up here).
const dropboxNotification = `{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "dbid:AAA1Ng6-xEzDu2hldtzTwmCMDQtvMdfDcCY"]}, "delta": {"users": [12345678, 23456789]}}`

func dropboxNew(tb testing.TB) *Dropbox {
	tb.Helper()
	return mustNew(tb, NewDropbox, Options{})
}

// dropboxDelivery is the edge's request id the tests' requests carry.
const dropboxDelivery = "Zx3mWg1YIAMEbsw="

func dropboxRequest(body []byte, sigs ...string) Request {
	r := jsonPost(body, map[string][]string{"User-Agent": {"DropboxWebhooks/1.0"}, DropboxSignatureHeader: sigs})
	r.DeliveryID = dropboxDelivery
	return r
}

// dropboxHex is the signature for body, computed independently of the
// code under test (Dropbox publishes no vector and no Go library).
func dropboxHex(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func TestDropboxCorpus(t *testing.T) {
	d := dropboxNew(t)
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "notification", body: []byte(dropboxNotification)})
	for _, f := range files {
		r := signed(t, d, dropboxRequest(f.body), dropboxSecret, testNow)
		if got, want := r.Header.Get(DropboxSignatureHeader), dropboxHex(f.body, dropboxSecret); got != want {
			t.Errorf("%s: Sign: got %q, want %q", f.name, got, want)
		}
		checkErr(t, verifyNoPanic(t, d, r, dropboxSecrets, testNow), nil)
		checkFlipsRejected(t, f.name, d, r, dropboxSecrets, testNow)
	}
	got, err := d.Identify(dropboxRequest([]byte(dropboxNotification)))
	checkIdentity(t, got, err, Identity{ID: "delivery:" + dropboxDelivery, Type: "list_folder"})
}

// TestDropboxNotificationsNeverMerge: two notifications for one account
// are byte for byte the same, and must still be two events; a request
// without the edge's id is refused rather than keyed by its body.
func TestDropboxNotificationsNeverMerge(t *testing.T) {
	d := dropboxNew(t)
	first, second := dropboxRequest([]byte(dropboxNotification)), dropboxRequest([]byte(dropboxNotification))
	second.DeliveryID = "Zx3mWg1YIAMEbsx="
	a, errA := d.Identify(first)
	b, errB := d.Identify(second)
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("two notifications: ids %q and %q (%v, %v), want two", a.ID, b.ID, errA, errB)
	}
	none := dropboxRequest([]byte(dropboxNotification))
	none.DeliveryID = ""
	if _, err := d.Identify(none); err == nil {
		t.Error("no delivery id: Identify accepted it")
	}
}

// TestDropboxChallenge: the verification GET is echoed for a word, and
// refused for anything else; a POST is not a challenge.
func TestDropboxChallenge(t *testing.T) {
	d := dropboxNew(t)
	get := func(q string) Request { return Request{Method: http.MethodGet, Header: http.Header{}, RawQuery: q} }
	reply, err := d.Subscribe(get("challenge=7hT3-a_9Zq"), nil)
	if err != nil || reply.Status != 200 || string(reply.Body) != "7hT3-a_9Zq" || reply.ContentType != "text/plain" {
		t.Errorf("Subscribe: got %+v, %v", reply, err)
	}
	for name, q := range map[string]string{
		"missing":           "",
		"empty":             "challenge=",
		"repeated":          "challenge=a&challenge=b",
		"257 bytes":         "challenge=" + strings.Repeat("a", 257),
		"html":              "challenge=%3Cscript%3E",
		"space":             "challenge=a+b",
		"dot":               "challenge=a.b",
		"non-ASCII":         "challenge=%C3%A9",
		"bad escape":        "challenge=%zz",
		"other name only":   "hub.challenge=abc",
		"semicolon in name": "challenge;x=abc",
	} {
		if _, err := d.Subscribe(get(q), nil); !errorsIsAny(err) {
			t.Errorf("%s (%q): got %v, want a refusal", name, q, err)
		}
	}
	if r, err := d.Subscribe(get("challenge="+strings.Repeat("Z", 256)), nil); err != nil || len(r.Body) != 256 {
		t.Errorf("256 bytes: got %d bytes, %v", len(r.Body), err)
	}
	post := get("challenge=abc")
	post.Method = http.MethodPost
	checkErr(t, func() error { _, err := d.Subscribe(post, nil); return err }(), ErrNotSigned)
}

// errorsIsAny reports whether err is one of the Err* causes.
func errorsIsAny(err error) bool {
	for _, c := range []error{ErrNotSigned, ErrMalformedHeader, ErrNoMatch, ErrNoSecret, ErrTooOld, ErrTooNew} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

func TestDropboxRotation(t *testing.T) {
	body := []byte(dropboxNotification)
	cur, old := dropboxHex(body, dropboxSecret), dropboxHex(body, dropboxSecretOld)
	both := [][]byte{dropboxSecret, dropboxSecretOld}
	req := func(sig string) Request { return dropboxRequest(body, sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{dropboxSecretOld, dropboxSecret}, nil},
		{"retired secret", req(old), dropboxSecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, dropboxSecret}, nil},
		{"empty secret never matches an empty-key signature", req(dropboxHex(body, nil)), [][]byte{{}, dropboxSecret}, ErrNoMatch},
	}
	d := dropboxNew(t)
	runVerifyCases(t, d, testNow, 0, tests)
	t.Run("no clock", func(t *testing.T) {
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, d.Verify(req(cur), dropboxSecrets, now), nil)
		}
	})
}

func TestNewDropboxOptions(t *testing.T) {
	runOptionsCases(t, NewDropbox, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/dropbox"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// dropboxMalformedCase is one Verify input; secrets nil means
// dropboxSecrets.
type dropboxMalformedCase struct {
	name    string
	sig     []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// dropboxMalformedCases is shared with the fuzz test as seeds.
func dropboxMalformedCases(body []byte) []dropboxMalformedCase {
	ok := dropboxHex(body, dropboxSecret)
	wrong := dropboxHex(body, []byte("dbx-wrong"))
	return []dropboxMalformedCase{
		{name: "valid", sig: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "two headers", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "sha256= prefix", sig: []string{"sha256=" + ok}, want: ErrMalformedHeader},
		{name: "two signatures joined by a comma", sig: []string{wrong + "," + ok}, want: ErrMalformedHeader},
		{name: "short hex", sig: []string{ok[:62]}, want: ErrMalformedHeader},
		{name: "long hex", sig: []string{ok + "00"}, want: ErrMalformedHeader},
		{name: "non-hex", sig: []string{ok[:63] + "g"}, want: ErrMalformedHeader},
		{name: "uppercase hex is accepted", sig: []string{strings.ToUpper(ok)}, want: nil},
		{name: "base64 instead of hex", sig: []string{strings.Repeat("A", 43) + "="}, want: ErrMalformedHeader},
		{name: "wrong secret", sig: []string{wrong}, want: ErrNoMatch},
		{name: "plain SHA-256 of the body", sig: []string{fmt.Sprintf("%x", sha256.Sum256(body))}, want: ErrNoMatch},
		{name: "body truncated by one byte", sig: []string{ok}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body compacted", sig: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Compact(&c, b); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
		{name: "only an empty secret", sig: []string{dropboxHex(body, nil)}, secrets: [][]byte{{}}, want: ErrNoSecret},
	}
}

func dropboxMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(dropboxNotification)
	var cases []verifyCase
	for _, tc := range dropboxMalformedCases(body) {
		r := dropboxRequest(changed(body, tc.body), tc.sig...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, dropboxSecrets), tc.want})
	}
	d := dropboxNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       d,
		r:       signed(tb, d, dropboxRequest(body), dropboxSecret, testNow),
		secrets: dropboxSecrets,
		sig:     signedField{header: DropboxSignatureHeader},
		enc:     encHex,
	})
	return []malformedRun{{d, cases}, {d, generic}}
}

func TestDropboxVerifyMalformed(t *testing.T) { runMalformed(t, dropboxMalformedRuns(t)) }

// dropboxIdentifyCases is shared with the fuzz test as seeds; a zero
// want.ID means ErrInvalidPayload; an ID of "hash" means the delivery's.
var dropboxIdentifyCases = []identifyCase{
	{name: "list_folder", body: `{"list_folder":{"accounts":["dbid:a"]}}`, want: Identity{ID: "hash", Type: "list_folder"}},
	{name: "delta only", body: `{"delta":{"users":[1]}}`, want: Identity{ID: "hash", Type: "delta"}},
	{name: "both", body: `{"delta":{"users":[1]},"list_folder":{"accounts":["dbid:a"]}}`, want: Identity{ID: "hash", Type: "list_folder"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"list_folder":{}}]`},
	{name: "not JSON", body: `list_folder=1`},
	{name: "truncated", body: `{"list_folder":{"accounts":[]}`},
	{name: "empty object", body: `{}`},
	{name: "list_folder an array", body: `{"list_folder":["dbid:a"]}`},
	{name: "list_folder null", body: `{"list_folder":null}`},
	{name: "nested only", body: `{"x":{"list_folder":{}}}`},
}

func TestDropboxIdentify(t *testing.T) {
	d := dropboxNew(t)
	for _, tc := range dropboxIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want.ID == "hash" {
				want.ID = "delivery:" + dropboxDelivery
			}
			got, err := identifyNoPanic(t, d, dropboxRequest([]byte(tc.body)))
			checkIdentity(t, got, err, want)
		})
	}
}

func FuzzDropboxVerify(f *testing.F) {
	f.Add("{sig}", []byte(dropboxNotification))
	f.Add("{old}", []byte(dropboxNotification))
	body := []byte(dropboxNotification)
	for _, tc := range dropboxMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.sig, "\n"), dropboxHex(b, dropboxSecret), "{sig}"), b)
	}
	d := dropboxNew(f)
	secrets := [][]byte{dropboxSecret, dropboxSecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", dropboxHex(body, dropboxSecret), "{old}", dropboxHex(body, dropboxSecretOld)).Replace(sig)
		}
		r := dropboxRequest(body, fuzzHeaders(sig)...)
		if !fuzzVerify(t, d, r, secrets, testNow) {
			return
		}
		checkAcceptedHex(t, sig, "", secrets, func(secret []byte) string { return dropboxHex(body, secret) })
	})
}

func FuzzDropboxIdentify(f *testing.F) {
	f.Add([]byte(dropboxNotification))
	for _, tc := range dropboxIdentifyCases {
		f.Add([]byte(tc.body))
	}
	d := dropboxNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, d, dropboxRequest(body))
		if !ok {
			return
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if got.ID != "delivery:"+dropboxDelivery || (got.Type != "list_folder" && got.Type != "delta") {
			t.Fatalf("Identify(%q): got %+v", body, got)
		}
	})
}

// FuzzDropboxChallenge: whatever the query, an echoed challenge is a word
// of at most DropboxMaxChallenge bytes, and the query's only challenge.
func FuzzDropboxChallenge(f *testing.F) {
	for _, q := range []string{"challenge=abc", "challenge=%3Cb%3E", "challenge=a&challenge=b", "", "challenge=" + strings.Repeat("x", 300)} {
		f.Add(q)
	}
	d := dropboxNew(f)
	f.Fuzz(func(t *testing.T, q string) {
		reply, err := d.Subscribe(Request{Method: http.MethodGet, RawQuery: q}, nil)
		if err != nil {
			return
		}
		if len(reply.Body) == 0 || len(reply.Body) > DropboxMaxChallenge || reply.Status != 200 {
			t.Fatalf("Subscribe(%q): got %+v", q, reply)
		}
		for _, b := range reply.Body {
			if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
				t.Fatalf("Subscribe(%q): echoed %q", q, reply.Body)
			}
		}
	})
}

// BenchmarkDropbox compares the scheme with a bare HMAC-SHA256 over the
// same bytes.
func BenchmarkDropbox(b *testing.B) {
	body := []byte(dropboxNotification)
	r := dropboxRequest(body, dropboxHex(body, dropboxSecret))
	var sum [sha256.Size]byte
	benchScheme(b, dropboxNew(b), r, dropboxSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, dropboxSecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
