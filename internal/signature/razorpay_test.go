package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/razorpay/razorpay-go/utils"
)

var (
	razorpaySecret    = []byte("rzp-webhook-secret-7c1e9a3f5b")
	razorpaySecretOld = []byte("rzp-webhook-secret-old-2d4f6a8c0e")
	razorpaySecrets   = [][]byte{razorpaySecret}
)

// razorpayBodies are shaped like the payment.captured and order.paid
// examples of Razorpay's webhook documentation (values made up here).
var razorpayBodies = []struct {
	name string
	body string
	want Identity
}{
	{"payment.captured", `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","entity":"payment","amount":100,"currency":"INR","status":"captured","order_id":"order_DESlLckIVRkHWj","method":"netbanking","captured":true,"email":"gaurav.kumar@example.com","contact":"+919876543210","created_at":1567674599}}},"created_at":1567674606}`,
		Identity{ID: "rzp_evt_1", Type: "payment.captured", Created: time.Unix(1567674606, 0), Attributes: map[string]string{"account_id": "acc_BFQ7uQEaa7j2z7"}}},
	{"order.paid", `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"order.paid","contains":["payment","order"],"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","entity":"payment","amount":100,"currency":"INR","status":"captured","order_id":"order_DESlLckIVRkHWj"}},"order":{"entity":{"id":"order_DESlLckIVRkHWj","entity":"order","amount":100,"amount_paid":100,"amount_due":0,"currency":"INR","receipt":"rcptid #1","status":"paid","attempts":1,"created_at":1567674581}}},"created_at":1567674606}`,
		Identity{ID: "rzp_evt_1", Type: "order.paid", Created: time.Unix(1567674606, 0), Attributes: map[string]string{"account_id": "acc_BFQ7uQEaa7j2z7"}}},
}

func razorpayNew(tb testing.TB) *Razorpay {
	tb.Helper()
	return mustNew(tb, NewRazorpay, Options{})
}

func razorpayRequest(body []byte, sigs ...string) Request {
	return jsonPost(body, map[string][]string{
		"User-Agent":            {"Razorpay-Webhook/v1"},
		RazorpayEventIDHeader:   {"rzp_evt_1"},
		RazorpaySignatureHeader: sigs,
	})
}

// razorpayHex is the signature for body, computed independently of the
// code under test.
func razorpayHex(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// TestRazorpaySDK: every corpus body this package signs verifies with
// Razorpay's razorpay-go (utils.VerifyWebhookSignature) and here; a changed
// body fails both, and a signature the SDK makes for one secret verifies
// here only under that secret.
func TestRazorpaySDK(t *testing.T) {
	p := razorpayNew(t)
	files := walkCorpus(t, corpusDir, 15)
	for _, b := range razorpayBodies {
		files = append(files, corpusFile{name: b.name, body: []byte(b.body)})
	}
	for _, f := range files {
		r := signed(t, p, razorpayRequest(f.body), razorpaySecret, testNow)
		sig := r.Header.Get(RazorpaySignatureHeader)
		if !utils.VerifyWebhookSignature(string(f.body), sig, string(razorpaySecret)) {
			t.Errorf("%s: razorpay-go refuses our %q", f.name, sig)
		}
		if utils.VerifyWebhookSignature(string(f.body), sig, string(razorpaySecretOld)) {
			t.Errorf("%s: razorpay-go accepts our signature under another secret", f.name)
		}
		checkErr(t, verifyNoPanic(t, p, r, razorpaySecrets, testNow), nil)
		checkErr(t, verifyNoPanic(t, p, r, [][]byte{razorpaySecretOld}, testNow), ErrNoMatch)
		if sig != razorpayHex(f.body, razorpaySecret) {
			t.Errorf("%s: Sign: got %q, want %q", f.name, sig, razorpayHex(f.body, razorpaySecret))
		}
		checkFlipsRejected(t, f.name, p, r, razorpaySecrets, testNow)
		flipped := bytes.Clone(f.body)
		flipped[len(flipped)/2] ^= 1
		if utils.VerifyWebhookSignature(string(flipped), sig, string(razorpaySecret)) {
			t.Errorf("%s: razorpay-go accepts a changed body", f.name)
		}
	}
}

func TestRazorpayBodies(t *testing.T) {
	p := razorpayNew(t)
	for _, b := range razorpayBodies {
		t.Run(b.name, func(t *testing.T) {
			r := signed(t, p, razorpayRequest([]byte(b.body)), razorpaySecret, testNow)
			checkErr(t, p.Verify(r, razorpaySecrets, testNow), nil)
			got, err := p.Identify(r)
			checkIdentity(t, got, err, b.want)
		})
	}
}

// TestRazorpayEventIDHeader: the header is the id; without it the signed
// body's hash is, so a byte-identical retry is still a duplicate; a
// repeated, empty, over-long or unprintable header is refused.
func TestRazorpayEventIDHeader(t *testing.T) {
	p := razorpayNew(t)
	body := []byte(razorpayBodies[0].body)
	sum := sha256.Sum256(body)
	without := razorpayRequest(body)
	without.Header.Del(RazorpayEventIDHeader)
	got, err := p.Identify(without)
	checkIdentity(t, got, err, Identity{ID: "sha256:" + hex.EncodeToString(sum[:]), Type: "payment.captured", Created: time.Unix(1567674606, 0), Attributes: map[string]string{"account_id": "acc_BFQ7uQEaa7j2z7"}})
	for name, values := range map[string][]string{
		"two headers":    {"rzp_evt_1", "rzp_evt_2"},
		"empty":          {""},
		"513 bytes":      {strings.Repeat("e", 513)},
		"control char":   {"rzp\x01evt"},
		"trailing space": {"rzp_evt_1 "},
		"invalid UTF-8":  {"rzp\xffevt"},
	} {
		r := razorpayRequest(body)
		r.Header[RazorpayEventIDHeader] = values
		if _, err := identifyNoPanic(t, p, r); err == nil {
			t.Errorf("%s: Identify accepted X-Razorpay-Event-Id %q", name, values)
		}
	}
}

func TestRazorpayRotation(t *testing.T) {
	body := []byte(razorpayBodies[1].body)
	cur, old := razorpayHex(body, razorpaySecret), razorpayHex(body, razorpaySecretOld)
	both := [][]byte{razorpaySecret, razorpaySecretOld}
	req := func(sig string) Request { return razorpayRequest(body, sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{razorpaySecretOld, razorpaySecret}, nil},
		{"retired secret", req(old), razorpaySecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, razorpaySecret}, nil},
		{"empty secret never matches an empty-key signature", req(razorpayHex(body, nil)), [][]byte{{}, razorpaySecret}, ErrNoMatch},
	}
	p := razorpayNew(t)
	runVerifyCases(t, p, testNow, 0, tests)
	t.Run("no clock", func(t *testing.T) {
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, p.Verify(req(cur), razorpaySecrets, now), nil)
		}
	})
}

func TestNewRazorpayOptions(t *testing.T) {
	runOptionsCases(t, NewRazorpay, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/razorpay"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// razorpayMalformedCase is one Verify input; secrets nil means
// razorpaySecrets.
type razorpayMalformedCase struct {
	name    string
	sig     []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// razorpayMalformedCases is shared with the fuzz test as seeds.
func razorpayMalformedCases(body []byte) []razorpayMalformedCase {
	ok := razorpayHex(body, razorpaySecret)
	wrong := razorpayHex(body, []byte("rzp-wrong"))
	return []razorpayMalformedCase{
		{name: "valid", sig: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "two headers", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "sha256= prefix", sig: []string{"sha256=" + ok}, want: ErrMalformedHeader},
		{name: "v1= prefix", sig: []string{"v1=" + ok}, want: ErrMalformedHeader},
		{name: "two signatures joined by a comma", sig: []string{wrong + "," + ok}, want: ErrMalformedHeader},
		{name: "short hex", sig: []string{ok[:62]}, want: ErrMalformedHeader},
		{name: "long hex", sig: []string{ok + "00"}, want: ErrMalformedHeader},
		{name: "non-hex", sig: []string{ok[:63] + "g"}, want: ErrMalformedHeader},
		{name: "uppercase hex is accepted", sig: []string{strings.ToUpper(ok)}, want: nil},
		{name: "base64 instead of hex", sig: []string{strings.Repeat("A", 43) + "="}, want: ErrMalformedHeader},
		{name: "wrong secret", sig: []string{wrong}, want: ErrNoMatch},
		{name: "SHA-1 HMAC", sig: []string{strings.Repeat("a", 40)}, want: ErrMalformedHeader},
		{name: "plain SHA-256 of the body", sig: []string{fmt.Sprintf("%x", sha256.Sum256(body))}, want: ErrNoMatch},
		{name: "signature over the body and a newline", sig: []string{razorpayHex(append(bytes.Clone(body), '\n'), razorpaySecret)}, want: ErrNoMatch},
		{name: "body truncated by one byte", sig: []string{ok}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", sig: []string{ok}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", sig: []string{ok}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body re-indented", sig: []string{ok}, body: func(b []byte) []byte {
			var c bytes.Buffer
			if err := json.Indent(&c, b, "", " "); err != nil {
				panic(err)
			}
			return c.Bytes()
		}, want: ErrNoMatch},
		{name: "only an empty secret", sig: []string{razorpayHex(body, nil)}, secrets: [][]byte{{}}, want: ErrNoSecret},
	}
}

func razorpayMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(razorpayBodies[0].body)
	var cases []verifyCase
	for _, tc := range razorpayMalformedCases(body) {
		r := razorpayRequest(changed(body, tc.body), tc.sig...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, razorpaySecrets), tc.want})
	}
	p := razorpayNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       p,
		r:       signed(tb, p, razorpayRequest(body), razorpaySecret, testNow),
		secrets: razorpaySecrets,
		sig:     signedField{header: RazorpaySignatureHeader},
		enc:     encHex,
	})
	return []malformedRun{{p, cases}, {p, generic}}
}

func TestRazorpayVerifyMalformed(t *testing.T) { runMalformed(t, razorpayMalformedRuns(t)) }

// razorpayIdentifyCases is shared with the fuzz test as seeds; a zero
// want.ID means ErrInvalidPayload. Every request carries
// X-Razorpay-Event-Id rzp_evt_1.
var razorpayIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"entity":"event","event":"payment.failed"}`, want: Identity{ID: "rzp_evt_1", Type: "payment.failed"}},
	{name: "created_at", body: `{"entity":"event","event":"t","created_at":1567674606}`, want: Identity{ID: "rzp_evt_1", Type: "t", Created: time.Unix(1567674606, 0)}},
	{name: "created_at null", body: `{"entity":"event","event":"t","created_at":null}`, want: Identity{ID: "rzp_evt_1", Type: "t"}},
	{name: "account_id empty", body: `{"entity":"event","event":"t","account_id":""}`, want: Identity{ID: "rzp_evt_1", Type: "t"}},
	{name: "payload's event is not the event's", body: `{"payload":{"event":"x"},"entity":"event","event":"t"}`, want: Identity{ID: "rzp_evt_1", Type: "t"}},
	{name: "escaped type is unescaped", body: `{"entity":"ev\u0065nt","event":"a\/b"}`, want: Identity{ID: "rzp_evt_1", Type: "a/b"}},

	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"entity":"event","event":"t"}]`},
	{name: "not JSON", body: `entity=event&event=t`},
	{name: "truncated", body: `{"entity":"event","event":"t"`},
	{name: "missing entity", body: `{"event":"t"}`},
	{name: "entity not event", body: `{"entity":"payment","event":"t"}`},
	{name: "missing event", body: `{"entity":"event"}`},
	{name: "empty event", body: `{"entity":"event","event":""}`},
	{name: "event a number", body: `{"entity":"event","event":1}`},
	{name: "event 513 bytes", body: `{"entity":"event","event":"` + strings.Repeat("e", 513) + `"}`},
	{name: "created_at a string", body: `{"entity":"event","event":"t","created_at":"1567674606"}`},
	{name: "created_at negative", body: `{"entity":"event","event":"t","created_at":-1}`},
	{name: "created_at fractional", body: `{"entity":"event","event":"t","created_at":1.5}`},
	{name: "created_at after year 9999", body: `{"entity":"event","event":"t","created_at":253402300800}`},
	{name: "account_id a number", body: `{"entity":"event","event":"t","account_id":7}`},
}

func TestRazorpayIdentify(t *testing.T) {
	p := razorpayNew(t)
	for _, tc := range razorpayIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, p, razorpayRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzRazorpayVerify(f *testing.F) {
	for _, b := range razorpayBodies {
		f.Add("{sig}", []byte(b.body))
		f.Add("{old}", []byte(b.body))
	}
	body := []byte(razorpayBodies[0].body)
	for _, tc := range razorpayMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.sig, "\n"), razorpayHex(b, razorpaySecret), "{sig}"), b)
	}
	p := razorpayNew(f)
	secrets := [][]byte{razorpaySecret, razorpaySecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer("{sig}", razorpayHex(body, razorpaySecret), "{old}", razorpayHex(body, razorpaySecretOld)).Replace(sig)
		}
		r := razorpayRequest(body, fuzzHeaders(sig)...)
		if !fuzzVerify(t, p, r, secrets, testNow) {
			return
		}
		checkAcceptedHex(t, sig, "", secrets, func(secret []byte) string { return razorpayHex(body, secret) })
	})
}

func FuzzRazorpayIdentify(f *testing.F) {
	for _, b := range razorpayBodies {
		f.Add([]byte(b.body))
	}
	for _, tc := range razorpayIdentifyCases {
		f.Add([]byte(tc.body))
	}
	p := razorpayNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, p, razorpayRequest(body))
		if !ok {
			return
		}
		var doc struct {
			Entity string `json:"entity"`
			Event  string `json:"event"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if doc.Entity != "event" || id.Type != doc.Event || id.ID != "rzp_evt_1" {
			t.Fatalf("Identify(%q): got %+v, want type %q", body, id, doc.Event)
		}
	})
}

// BenchmarkRazorpay compares the scheme with a bare HMAC-SHA256 over the
// same bytes, and with razorpay-go's VerifyWebhookSignature.
func BenchmarkRazorpay(b *testing.B) {
	body := []byte(razorpayBodies[1].body)
	sig := razorpayHex(body, razorpaySecret)
	r := razorpayRequest(body, sig)
	var sum [sha256.Size]byte
	benchScheme(b, razorpayNew(b), r, razorpaySecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, razorpaySecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
	benchRun(b, "razorpay-go/VerifyWebhookSignature", len(body), func(b *testing.B) {
		if !utils.VerifyWebhookSignature(string(body), sig, string(razorpaySecret)) {
			b.Fatal("refused")
		}
	})
}

// ExampleRazorpay_Sign pins the header format; the value was computed with
// openssl (HMAC-SHA256 of the body under "rzp-secret").
func ExampleRazorpay_Sign() {
	r := Request{Body: []byte(`{"entity":"event","event":"payment.captured"}`)}
	s, _ := NewRazorpay(Options{})
	_ = s.Sign(&r, []byte("rzp-secret"), time.Time{})
	fmt.Println(r.Header.Get(RazorpaySignatureHeader))
	// Output: 9d80a87aaa95dacbb4421ee8be391f8d7f366666fb648498235b4de3fa6b61bd
}
