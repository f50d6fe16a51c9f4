package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PagerDuty/go-pagerduty/webhookv3"
)

var (
	pagerDutySecret    = []byte("pd-webhook-secret-3f9a1c7e5b2d8a4f6c0e9b1d3a5f7c9e")
	pagerDutySecretOld = []byte("pd-webhook-secret-old-8b2e4d6f0a1c3e5a7b9d1f3a5c7e9b1d")
	pagerDutySecrets   = [][]byte{pagerDutySecret}
)

// pagerDutySDKSecret and pagerDutySDKBody are the vector of PagerDuty's
// go-pagerduty webhookv3/webhookv3_test.go (v1.8.0): the SDK's own test
// accepts pagerDutySDKSig for that body and secret.
const (
	pagerDutySDKSecret = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK"
	pagerDutySDKSig    = "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd"
	pagerDutySDKBody   = `{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.priority_updated","resource_type":"incident","occurred_at":"2021-04-26T17:36:27.458Z","agent":{"html_url":"https://acme.pagerduty.com/users/PLH1HKV","id":"PLH1HKV","self":"https://api.pagerduty.com/users/PLH1HKV","summary":"Tenex Engineer","type":"user_reference"},"client":null,"data":{"id":"PGR0VU2","type":"incident","self":"https://api.pagerduty.com/incidents/PGR0VU2","html_url":"https://acme.pagerduty.com/incidents/PGR0VU2","number":2,"status":"triggered","title":"A little bump in the road","service":{"html_url":"https://acme.pagerduty.com/services/PF9KMXH","id":"PF9KMXH","self":"https://api.pagerduty.com/services/PF9KMXH","summary":"API Service","type":"service_reference"},"assignees":[{"html_url":"https://acme.pagerduty.com/users/PTUXL6G","id":"PTUXL6G","self":"https://api.pagerduty.com/users/PTUXL6G","summary":"User 123","type":"user_reference"}],"escalation_policy":{"html_url":"https://acme.pagerduty.com/escalation_policies/PUS0KTE","id":"PUS0KTE","self":"https://api.pagerduty.com/escalation_policies/PUS0KTE","summary":"Default","type":"escalation_policy_reference"},"teams":[{"html_url":"https://acme.pagerduty.com/teams/PFCVPS0","id":"PFCVPS0","self":"https://api.pagerduty.com/teams/PFCVPS0","summary":"Engineering","type":"team_reference"}],"priority":{"html_url":"https://acme.pagerduty.com/account/incident_priorities","id":"PSO75BM","self":"https://api.pagerduty.com/priorities/PSO75BM","summary":"P1","type":"priority_reference"},"urgency":"high","conference_bridge":{"conference_number":1000,"conference_url":"https://example.com"},"resolve_reason":null}}}`
)

// pagerDutyBodies are V3 webhook bodies: the SDK's incident event, and a
// test ping as PagerDuty documents it (values made up here).
var pagerDutyBodies = []struct {
	name string
	body string
	want Identity
}{
	{"incident.priority_updated (go-pagerduty)", pagerDutySDKBody,
		Identity{ID: "01BWDWL3NYY7LUFPZCC28QUCMK", Type: "incident.priority_updated", Created: time.Date(2021, 4, 26, 17, 36, 27, 458000000, time.UTC), Attributes: map[string]string{"resource_type": "incident"}}},
	{"pagey.ping", `{"event":{"id":"01DEN1HNLBC1VITKCXZT1FS6U6","event_type":"pagey.ping","resource_type":"pagey","occurred_at":"2024-07-26T00:40:00.000Z","agent":null,"client":null,"data":{"message":"Hello from your friend Pagey!","type":"ping"}}}`,
		Identity{ID: "01DEN1HNLBC1VITKCXZT1FS6U6", Type: "pagey.ping", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC), Attributes: map[string]string{"resource_type": "pagey"}}},
}

func pagerDutyNew(tb testing.TB) *PagerDuty {
	tb.Helper()
	return mustNew(tb, NewPagerDuty, Options{})
}

func pagerDutyRequest(body []byte, sigs ...string) Request {
	return jsonPost(body, map[string][]string{
		"User-Agent":                {"PagerDuty-Webhook/V3.0"},
		PagerDutyWebhookIDHeader:    {"PF9KMXH-webhook"},
		PagerDutySignatureHeader:    sigs,
		PagerDutyWebhookSubscHeader: {"PWIXJZS"},
	})
}

// pagerDutyV1 is one v1 entry for body, computed independently of the
// code under test.
func pagerDutyV1(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// sdkVerifyPagerDuty asks go-pagerduty whether it accepts sig for body.
func sdkVerifyPagerDuty(t *testing.T, body []byte, sig string, secret []byte) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://hooks.example.com/pagerduty", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-PagerDuty-Signature", sig)
	return webhookv3.VerifySignature(req, string(secret))
}

// TestPagerDutySDK: the SDK's published vector verifies here, and every
// corpus body this package signs (one secret, then two while rotating)
// verifies with go-pagerduty, and here; a one-byte change fails both.
func TestPagerDutySDK(t *testing.T) {
	p := pagerDutyNew(t)
	sdkSecrets := [][]byte{[]byte(pagerDutySDKSecret)}
	checkErr(t, p.Verify(pagerDutyRequest([]byte(pagerDutySDKBody), pagerDutySDKSig), sdkSecrets, testNow), nil)
	if got := SignPagerDuty([]byte(pagerDutySDKBody), []byte(pagerDutySDKSecret)); got != pagerDutySDKSig {
		t.Errorf("SignPagerDuty(the SDK's vector): got %q, want %q", got, pagerDutySDKSig)
	}
	files := walkCorpus(t, corpusDir, 15)
	for _, b := range pagerDutyBodies {
		files = append(files, corpusFile{name: b.name, body: []byte(b.body)})
	}
	for _, f := range files {
		for _, sig := range []string{SignPagerDuty(f.body, pagerDutySecret), SignPagerDuty(f.body, pagerDutySecretOld, pagerDutySecret)} {
			if err := sdkVerifyPagerDuty(t, f.body, sig, pagerDutySecret); err != nil {
				t.Errorf("%s: go-pagerduty refuses our %q: %v", f.name, sig, err)
			}
			checkErr(t, verifyNoPanic(t, p, pagerDutyRequest(f.body, sig), pagerDutySecrets, testNow), nil)
		}
		if want := pagerDutyV1(f.body, pagerDutySecret); SignPagerDuty(f.body, pagerDutySecret) != want {
			t.Errorf("%s: SignPagerDuty: got %q, want %q", f.name, SignPagerDuty(f.body, pagerDutySecret), want)
		}
		r := pagerDutyRequest(f.body, SignPagerDuty(f.body, pagerDutySecret))
		checkFlipsRejected(t, f.name, p, r, pagerDutySecrets, testNow)
		flipped := bytes.Clone(f.body)
		flipped[len(flipped)/2] ^= 1
		if err := sdkVerifyPagerDuty(t, flipped, SignPagerDuty(f.body, pagerDutySecret), pagerDutySecret); err == nil {
			t.Errorf("%s: go-pagerduty accepts a changed body", f.name)
		}
	}
}

func TestPagerDutyBodies(t *testing.T) {
	p := pagerDutyNew(t)
	for _, b := range pagerDutyBodies {
		t.Run(b.name, func(t *testing.T) {
			r := signed(t, p, pagerDutyRequest([]byte(b.body)), pagerDutySecret, testNow)
			checkErr(t, p.Verify(r, pagerDutySecrets, testNow), nil)
			got, err := p.Identify(r)
			checkIdentity(t, got, err, b.want)
		})
	}
}

func TestPagerDutyRotation(t *testing.T) {
	body := []byte(pagerDutyBodies[1].body)
	cur, old := pagerDutyV1(body, pagerDutySecret), pagerDutyV1(body, pagerDutySecretOld)
	wrong := pagerDutyV1(body, []byte("pd-wrong"))
	both := [][]byte{pagerDutySecret, pagerDutySecretOld}
	req := func(sig string) Request { return pagerDutyRequest(body, sig) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{pagerDutySecretOld, pagerDutySecret}, nil},
		{"retired secret", req(old), pagerDutySecrets, ErrNoMatch},
		{"both entries, one secret configured", req(old + "," + cur), pagerDutySecrets, nil},
		{"both entries, the other configured", req(old + "," + cur), [][]byte{pagerDutySecretOld}, nil},
		{"wrong then right", req(wrong + "," + cur), pagerDutySecrets, nil},
		{"both wrong", req(wrong + "," + old), pagerDutySecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, pagerDutySecret}, nil},
		{"empty secret never matches an empty-key signature", req(pagerDutyV1(body, nil)), [][]byte{{}, pagerDutySecret}, ErrNoMatch},
	}
	p := pagerDutyNew(t)
	runVerifyCases(t, p, testNow, 0, tests)
	t.Run("no clock", func(t *testing.T) {
		for _, now := range []time.Time{{}, testNow.AddDate(30, 0, 0)} {
			checkErr(t, p.Verify(req(cur), pagerDutySecrets, now), nil)
		}
	})
}

func TestNewPagerDutyOptions(t *testing.T) {
	runOptionsCases(t, NewPagerDuty, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/pagerduty"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// pagerDutyMalformedCase is one Verify input; secrets nil means
// pagerDutySecrets.
type pagerDutyMalformedCase struct {
	name    string
	sig     []string
	body    func([]byte) []byte
	secrets [][]byte
	want    error
}

// pagerDutyMalformedCases is shared with the fuzz test as seeds.
func pagerDutyMalformedCases(body []byte) []pagerDutyMalformedCase {
	ok := pagerDutyV1(body, pagerDutySecret)
	hexSig := strings.TrimPrefix(ok, "v1=")
	wrong := pagerDutyV1(body, []byte("pd-wrong"))
	list := func(n int) string { return strings.Repeat(wrong+",", n-1) + ok }
	return []pagerDutyMalformedCase{
		{name: "valid", sig: []string{ok}},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", sig: []string{""}, want: ErrNotSigned},
		{name: "two headers", sig: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "no v1= prefix", sig: []string{hexSig}, want: ErrNoMatch},
		{name: "v0= prefix", sig: []string{"v0=" + hexSig}, want: ErrNoMatch},
		{name: "v2= prefix", sig: []string{"v2=" + hexSig}, want: ErrNoMatch},
		{name: "V1= uppercase key", sig: []string{"V1=" + hexSig}, want: ErrNoMatch},
		{name: "sha256= prefix", sig: []string{"sha256=" + hexSig}, want: ErrNoMatch},
		{name: "space after comma", sig: []string{wrong + ", " + ok}, want: ErrNoMatch},
		{name: "semicolon separator", sig: []string{wrong + ";" + ok}, want: ErrNoMatch},
		{name: "trailing comma", sig: []string{ok + ","}, want: nil},
		{name: "leading comma", sig: []string{"," + ok}, want: nil},
		{name: "short hex", sig: []string{ok[:len(ok)-2]}, want: ErrNoMatch},
		{name: "long hex", sig: []string{ok + "00"}, want: ErrNoMatch},
		{name: "non-hex", sig: []string{ok[:len(ok)-1] + "g"}, want: ErrNoMatch},
		{name: "uppercase hex is accepted", sig: []string{"v1=" + strings.ToUpper(hexSig)}, want: nil},
		{name: "base64 instead of hex", sig: []string{"v1=" + strings.Repeat("A", 43) + "="}, want: ErrNoMatch},
		{name: "empty v1", sig: []string{"v1="}, want: ErrNoMatch},
		{name: "wrong secret", sig: []string{wrong}, want: ErrNoMatch},
		{name: "8 entries, last right", sig: []string{list(8)}, want: nil},
		{name: "9 entries", sig: []string{list(9)}, want: ErrMalformedHeader},
		{name: "9 short entries do not count", sig: []string{strings.Repeat("v1=ab,", 9) + ok}, want: nil},
		{name: "SHA-1 HMAC", sig: []string{"v1=" + strings.Repeat("a", 40)}, want: ErrNoMatch},
		{name: "plain SHA-256 of the body", sig: []string{"v1=" + fmt.Sprintf("%x", sha256.Sum256(body))}, want: ErrNoMatch},
		{name: "signature over the body and a newline", sig: []string{pagerDutyV1(append(bytes.Clone(body), '\n'), pagerDutySecret)}, want: ErrNoMatch},
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
		{name: "only an empty secret", sig: []string{pagerDutyV1(body, nil)}, secrets: [][]byte{{}}, want: ErrNoSecret},
	}
}

func pagerDutyMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(pagerDutyBodies[0].body)
	var cases []verifyCase
	for _, tc := range pagerDutyMalformedCases(body) {
		r := pagerDutyRequest(changed(body, tc.body), tc.sig...)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, pagerDutySecrets), tc.want})
	}
	p := pagerDutyNew(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:        p,
		r:        signed(tb, p, pagerDutyRequest(body), pagerDutySecret, testNow),
		secrets:  pagerDutySecrets,
		sig:      signedField{header: PagerDutySignatureHeader, prefix: "v1=", sep: ','},
		enc:      encHex,
		versions: []string{"v0=", "v2=", "sha256="},
		// Two copies joined by a comma are two v1 entries, each genuine,
		// as PagerDuty sends while rotating.
		drop: map[string]string{
			"X-Pagerduty-Signature comma-joined duplicate":               "a list of two genuine v1 entries",
			"X-Pagerduty-Signature comma-joined duplicate without space": "a list of two genuine v1 entries",
		},
	})
	return []malformedRun{{p, cases}, {p, generic}}
}

func TestPagerDutyVerifyMalformed(t *testing.T) { runMalformed(t, pagerDutyMalformedRuns(t)) }

// pagerDutyIdentifyCases is shared with the fuzz test as seeds; a zero
// want.ID means ErrInvalidPayload.
var pagerDutyIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"event":{"id":"01A","event_type":"incident.triggered"}}`, want: Identity{ID: "01A", Type: "incident.triggered"}},
	{name: "occurred_at", body: `{"event":{"id":"01A","event_type":"t","occurred_at":"2021-04-26T17:36:27.458Z"}}`, want: Identity{ID: "01A", Type: "t", Created: time.Date(2021, 4, 26, 17, 36, 27, 458000000, time.UTC)}},
	{name: "occurred_at null", body: `{"event":{"id":"01A","event_type":"t","occurred_at":null}}`, want: Identity{ID: "01A", Type: "t"}},
	{name: "data's id is not the event's", body: `{"event":{"data":{"id":"PGR0VU2"},"id":"01A","event_type":"t"}}`, want: Identity{ID: "01A", Type: "t"}},
	{name: "fields in any order", body: `{"event":{"event_type":"t","resource_type":"incident","id":"01A"}}`, want: Identity{ID: "01A", Type: "t", Attributes: map[string]string{"resource_type": "incident"}}},
	{name: "escaped id is unescaped", body: `{"event":{"id":"01\u0041","event_type":"a\/b"}}`, want: Identity{ID: "01A", Type: "a/b"}},
	{name: "id 512 bytes", body: `{"event":{"id":"` + strings.Repeat("e", 512) + `","event_type":"t"}}`, want: Identity{ID: strings.Repeat("e", 512), Type: "t"}},

	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"event":{"id":"01A","event_type":"t"}}]`},
	{name: "not JSON", body: `event=01A`},
	{name: "truncated", body: `{"event":{"id":"01A","event_type":"t"}`},
	{name: "no event", body: `{"id":"01A","event_type":"t"}`},
	{name: "event null", body: `{"event":null}`},
	{name: "event a string", body: `{"event":"01A"}`},
	{name: "event an array", body: `{"event":[{"id":"01A","event_type":"t"}]}`},
	{name: "missing id", body: `{"event":{"event_type":"t"}}`},
	{name: "empty id", body: `{"event":{"id":"","event_type":"t"}}`},
	{name: "numeric id", body: `{"event":{"id":1,"event_type":"t"}}`},
	{name: "id 513 bytes", body: `{"event":{"id":"` + strings.Repeat("e", 513) + `","event_type":"t"}}`},
	{name: "id invalid UTF-8", body: "{\"event\":{\"id\":\"01\xff\",\"event_type\":\"t\"}}"},
	{name: "missing event_type", body: `{"event":{"id":"01A"}}`},
	{name: "event_type null", body: `{"event":{"id":"01A","event_type":null}}`},
	{name: "occurred_at not RFC 3339", body: `{"event":{"id":"01A","event_type":"t","occurred_at":"04/26/2021"}}`},
	{name: "occurred_at a number", body: `{"event":{"id":"01A","event_type":"t","occurred_at":1619458587}}`},
}

func TestPagerDutyIdentify(t *testing.T) {
	p := pagerDutyNew(t)
	for _, tc := range pagerDutyIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, p, pagerDutyRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

func FuzzPagerDutyVerify(f *testing.F) {
	for _, b := range pagerDutyBodies {
		f.Add("v1={sig}", []byte(b.body))
		f.Add("v1=00,v1={old}", []byte(b.body))
	}
	body := []byte(pagerDutyBodies[0].body)
	for _, tc := range pagerDutyMalformedCases(body) {
		b := changed(body, tc.body)
		cur := strings.TrimPrefix(pagerDutyV1(b, pagerDutySecret), "v1=")
		f.Add(strings.ReplaceAll(strings.Join(tc.sig, "\n"), cur, "{sig}"), b)
	}
	p := pagerDutyNew(f)
	secrets := [][]byte{pagerDutySecret, pagerDutySecretOld}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer(
				"{sig}", strings.TrimPrefix(pagerDutyV1(body, pagerDutySecret), "v1="),
				"{old}", strings.TrimPrefix(pagerDutyV1(body, pagerDutySecretOld), "v1="),
			).Replace(sig)
		}
		r := pagerDutyRequest(body, fuzzHeaders(sig)...)
		if !fuzzVerify(t, p, r, secrets, testNow) {
			return
		}
		for entry := range strings.SplitSeq(sig, ",") {
			for _, secret := range secrets {
				if strings.EqualFold(entry, pagerDutyV1(body, secret)) && strings.HasPrefix(entry, "v1=") {
					return
				}
			}
		}
		t.Fatalf("Verify(%q): got nil, but no v1 entry is the body's HMAC under a configured secret", sig)
	})
}

func FuzzPagerDutyIdentify(f *testing.F) {
	for _, b := range pagerDutyBodies {
		f.Add([]byte(b.body))
	}
	for _, tc := range pagerDutyIdentifyCases {
		f.Add([]byte(tc.body))
	}
	p := pagerDutyNew(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, p, pagerDutyRequest(body))
		if !ok {
			return
		}
		var doc struct {
			Event struct {
				ID        string `json:"id"`
				EventType string `json:"event_type"`
			} `json:"event"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		if id.ID != doc.Event.ID || id.Type != doc.Event.EventType || id.ID == "" || len(id.ID) > MaxIdentity {
			t.Fatalf("Identify(%q): got %+v, want %+v", body, id, doc.Event)
		}
	})
}

// BenchmarkPagerDuty compares the scheme with a bare HMAC-SHA256 over the
// same bytes, and with go-pagerduty's VerifySignature.
func BenchmarkPagerDuty(b *testing.B) {
	body := []byte(pagerDutySDKBody)
	sig := SignPagerDuty(body, pagerDutySecret)
	r := pagerDutyRequest(body, sig)
	var sum [sha256.Size]byte
	benchScheme(b, pagerDutyNew(b), r, pagerDutySecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, pagerDutySecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
	req, _ := http.NewRequest(http.MethodPost, "https://hooks.example.com/pagerduty", nil)
	req.Header.Set("X-PagerDuty-Signature", sig)
	benchRun(b, "go-pagerduty/VerifySignature", len(body), func(b *testing.B) {
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err := webhookv3.VerifySignature(req, string(pagerDutySecret)); err != nil {
			b.Fatal(err)
		}
	})
}

// ExampleSignPagerDuty pins the header format with the SDK's own vector.
func ExampleSignPagerDuty() {
	fmt.Println(SignPagerDuty([]byte(pagerDutySDKBody), []byte(pagerDutySDKSecret)))
	// Output: v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd
}
