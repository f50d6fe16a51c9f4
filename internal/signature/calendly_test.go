package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	calendlySecret    = []byte("calendly-webhook-signing-secret-4e2a9c7b1d")
	calendlySecretOld = []byte("calendly-webhook-signing-secret-old-8f3b5d")
	calendlySecrets   = [][]byte{calendlySecret}
)

// calendlyInviteeCreated is shaped like the invitee.created example of
// Calendly's webhook documentation (ids made up here).
const calendlyInviteeCreated = `{"created_at":"2024-07-26T00:40:00.000000Z","created_by":"https://api.calendly.com/users/AAAAAAAAAAAAAAAA","event":"invitee.created","payload":{"cancel_url":"https://calendly.com/cancellations/AAAAAAAAAAAAAAAA","created_at":"2024-07-26T00:39:59.000000Z","email":"ada@example.com","event":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2","name":"Ada Obi","status":"active","timezone":"Europe/Paris","uri":"https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA","questions_and_answers":[],"tracking":{"utm_campaign":null}}}`

func mustNewCalendly(tb testing.TB, o Options) *Calendly {
	tb.Helper()
	return mustNew(tb, NewCalendly, o)
}

func calendlyRequest(body []byte, headers ...string) Request {
	return jsonPost(body, map[string][]string{CalendlySignatureHeader: headers})
}

// calendlyHex is the v1 of body at the raw ts, computed independently of the
// code under test.
func calendlyHex(body, secret []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// TestCalendlyCorpus signs every corpus body and the example event, checks the
// v1 against an independent HMAC, and that a flipped byte fails.
func TestCalendlyCorpus(t *testing.T) {
	m := mustNewCalendly(t, Options{})
	files := append(walkCorpus(t, corpusDir, 15), corpusFile{name: "invitee.created", body: []byte(calendlyInviteeCreated)})
	for _, f := range files {
		header := SignCalendly(f.body, calendlySecret, testNow)
		if want := "t=" + testTS + ",v1=" + calendlyHex(f.body, calendlySecret, testTS); header != want {
			t.Errorf("%s: SignCalendly: got %q, want %q", f.name, header, want)
		}
		checkErr(t, verifyNoPanic(t, m, calendlyRequest(f.body, header), calendlySecrets, testNow), nil)
		checkFlipsRejected(t, f.name, m, calendlyRequest(f.body, header), calendlySecrets, testNow)
	}
	got, err := m.Identify(calendlyRequest([]byte(calendlyInviteeCreated)))
	checkIdentity(t, got, err, Identity{ID: "invitee.created https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA 2024-07-26T00:40:00.000000Z", Type: "invitee.created", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC)})
}

// TestCalendlyEventAgain: one resource can have one event twice (an event
// type updated again); the two are two events.
func TestCalendlyEventAgain(t *testing.T) {
	m := mustNewCalendly(t, Options{})
	first := `{"event":"event_type.updated","created_at":"2024-07-26T00:40:00.000000Z","payload":{"uri":"https://api.calendly.com/event_types/ET1"}}`
	again := strings.Replace(first, "00:40:00", "00:41:00", 1)
	a, errA := m.Identify(calendlyRequest([]byte(first)))
	b, errB := m.Identify(calendlyRequest([]byte(again)))
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("one event type updated twice: %q and %q (%v, %v), want two events", a.ID, b.ID, errA, errB)
	}
}

func TestCalendlyRotation(t *testing.T) {
	body := []byte(calendlyInviteeCreated)
	cur, old := calendlyHex(body, calendlySecret, testTS), calendlyHex(body, calendlySecretOld, testTS)
	wrong := calendlyHex(body, []byte("calendly-wrong"), testTS)
	both := [][]byte{calendlySecret, calendlySecretOld}
	req := func(v1s ...string) Request {
		return calendlyRequest(body, "t="+testTS+",v1="+strings.Join(v1s, ",v1="))
	}
	tests := []verifyCase{
		{"two secrets, signed by current", req(cur), both, nil},
		{"two secrets, signed by previous", req(old), both, nil},
		{"previous first", req(cur), [][]byte{calendlySecretOld, calendlySecret}, nil},
		{"retired secret", req(old), calendlySecrets, ErrNoMatch},
		{"two v1, wrong then right", req(wrong, cur), calendlySecrets, nil},
		{"two v1 both wrong", req(wrong, old), calendlySecrets, ErrNoMatch},
		{"nil secrets", req(cur), nil, ErrNoSecret},
		{"empty secret skipped", req(cur), [][]byte{nil, calendlySecret}, nil},
		{"empty secret never matches an empty-key signature", req(calendlyHex(body, nil, testTS)), [][]byte{{}, calendlySecret}, ErrNoMatch},
	}
	runVerifyCases(t, mustNewCalendly(t, Options{}), testNow, 0, tests)
}

func TestCalendlyTolerance(t *testing.T) {
	body := []byte(calendlyInviteeCreated)
	runToleranceCases(t, calendlySecrets, toleranceEdges(CalendlyTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		m := mustNewCalendly(t, Options{Tolerance: tolerance})
		return m, signed(t, m, calendlyRequest(body), calendlySecret, at)
	})
}

func TestNewCalendly(t *testing.T) {
	runOptionsCases(t, NewCalendly, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -1}, true},
		{"url set", Options{URL: "https://example.com/calendly"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// calendlyCase is one set of Calendly-Signature values and the cause Verify must
// report.
type calendlyCase struct {
	name    string
	headers []string
	body    func([]byte) []byte
	want    error
}

// calendlyMalformedCases builds the table for body signed at testNow; the fuzz
// test reuses it.
func calendlyMalformedCases(body []byte) []calendlyCase {
	sig := calendlyHex(body, calendlySecret, testTS)
	ok := "t=" + testTS + ",v1=" + sig
	at := func(ts string) string { return "t=" + ts + ",v1=" + calendlyHex(body, calendlySecret, ts) }
	wrong := calendlyHex(body, []byte("calendly-wrong"), testTS)
	v1s := func(n int) string { return "t=" + testTS + strings.Repeat(",v1="+wrong, n-1) + ",v1=" + sig }
	return []calendlyCase{
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
		{name: "signed with ':' not '.'", headers: []string{"t=" + testTS + ",v1=" + hex.EncodeToString(macOf(sha256.New, calendlySecret, []byte(testTS+":"), body))}, want: ErrNoMatch},
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

func calendlyMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(calendlyInviteeCreated)
	var cases []verifyCase
	for _, tc := range calendlyMalformedCases(body) {
		cases = append(cases, verifyCase{tc.name, calendlyRequest(changed(body, tc.body), tc.headers...), calendlySecrets, tc.want})
	}
	m := mustNewCalendly(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        m,
		r:        signed(tb, m, calendlyRequest(body), calendlySecret, testNow),
		secrets:  calendlySecrets,
		sig:      signedField{header: CalendlySignatureHeader, prefix: "v1=", sep: ','},
		enc:      encHex,
		versions: []string{"v0=", "v2=", "v1a="},
		ts:       &signedField{header: CalendlySignatureHeader, prefix: "t=", sep: ','},
		drop: map[string]string{
			// As for Stripe: the second copy's " t" key is unknown and
			// ignored, leaving one t and two identical, valid v1.
			"Calendly-Webhook-Signature comma-joined duplicate": "one t and two genuine v1, as the SDK parses it too",
		},
	})
	return []malformedRun{{m, cases}, {m, generic}}
}

func TestCalendlyVerifyMalformed(t *testing.T) { runMalformed(t, calendlyMalformedRuns(t)) }

// calendlyIdentifyCases is shared with the fuzz test as seeds; a zero want.ID
// means ErrInvalidPayload.
var calendlyIdentifyCases = []identifyCase{
	{name: "minimal", body: `{"event":"invitee.canceled","payload":{"uri":"https://api.calendly.com/i/1"}}`, want: Identity{ID: "invitee.canceled https://api.calendly.com/i/1", Type: "invitee.canceled"}},
	{name: "created_at", body: `{"event":"e","created_at":"2024-07-26T00:40:00Z","payload":{"uri":"u"}}`, want: Identity{ID: "e u 2024-07-26T00:40:00Z", Type: "e", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC)}},
	{name: "the payload's event is not the type", body: `{"payload":{"event":"x","uri":"u"},"event":"e"}`, want: Identity{ID: "e u", Type: "e"}},
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[]`},
	{name: "missing event", body: `{"payload":{"uri":"u"}}`},
	{name: "missing payload", body: `{"event":"e"}`},
	{name: "missing uri", body: `{"event":"e","payload":{}}`},
	{name: "numeric uri", body: `{"event":"e","payload":{"uri":1}}`},
	{name: "uri only at the top", body: `{"event":"e","uri":"u","payload":{}}`},
	{name: "key over 512 bytes", body: `{"event":"e","payload":{"uri":"` + strings.Repeat("u", 511) + `"}}`},
	{name: "created_at unix seconds", body: `{"event":"e","created_at":1721954400,"payload":{"uri":"u"}}`},
}

func TestCalendlyIdentify(t *testing.T) {
	m := mustNewCalendly(t, Options{})
	for _, tc := range calendlyIdentifyCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := identifyNoPanic(t, m, calendlyRequest([]byte(tc.body)))
			checkIdentity(t, got, err, tc.want)
		})
	}
}

// calendlyParse is the test's own reading of the t and v1 values of a header.
func calendlyParse(line string) (ts string, v1 []string) {
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

func FuzzCalendlyVerify(f *testing.F) {
	f.Add("t="+testTS+",v1={v1}", []byte(calendlyInviteeCreated))
	f.Add("t="+testTS+",v1=00,v1={old}", []byte(calendlyInviteeCreated))
	body := []byte(calendlyInviteeCreated)
	for _, tc := range calendlyMalformedCases(body) {
		b := changed(body, tc.body)
		f.Add(strings.ReplaceAll(strings.Join(tc.headers, "\n"), calendlyHex(b, calendlySecret, testTS), "{v1}"), b)
	}
	m := mustNewCalendly(f, Options{})
	secrets := [][]byte{calendlySecret, calendlySecretOld}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if strings.Contains(header, "{") {
			ts, _ := calendlyParse(header)
			header = strings.NewReplacer("{v1}", calendlyHex(body, calendlySecret, ts), "{old}", calendlyHex(body, calendlySecretOld, ts)).Replace(header)
		}
		values := fuzzHeaders(header)
		if !fuzzVerify(t, m, calendlyRequest(body, values...), secrets, testNow) {
			return
		}
		if len(values) != 1 {
			t.Fatalf("Verify(%q): accepted %d headers", header, len(values))
		}
		ts, v1 := calendlyParse(header)
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != ts {
			t.Fatalf("Verify(%q): accepted t %q", header, ts)
		}
		if d := testNow.Sub(time.Unix(n, 0)); d > CalendlyTolerance || d < -CalendlyTolerance {
			t.Fatalf("Verify(%q): accepted a t %s away from now", header, d)
		}
		for _, secret := range secrets {
			for _, v := range v1 {
				if strings.EqualFold(v, calendlyHex(body, secret, ts)) {
					return
				}
			}
		}
		t.Fatalf("Verify(%q): got nil, but no v1 is the HMAC for a configured secret", header)
	})
}

func FuzzCalendlyIdentify(f *testing.F) {
	f.Add([]byte(calendlyInviteeCreated))
	for _, tc := range calendlyIdentifyCases {
		f.Add([]byte(tc.body))
	}
	m := mustNewCalendly(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, m, calendlyRequest(body))
		if !ok {
			return
		}
		var doc struct {
			Event     string
			CreatedAt string `json:"created_at"`
			Payload   struct{ URI string }
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("Identify(%q): accepted a body encoding/json refuses: %v", body, err)
		}
		want := doc.Event + " " + doc.Payload.URI
		if doc.CreatedAt != "" {
			want += " " + doc.CreatedAt
		}
		if got.ID != want || got.Type != doc.Event {
			t.Fatalf("Identify(%q): got %+v, want %+v", body, got, doc)
		}
	})
}

// BenchmarkCalendly compares the scheme with a bare HMAC over the same bytes
// (Calendly publishes no Go library, and no vector).
func BenchmarkCalendly(b *testing.B) {
	body := []byte(calendlyInviteeCreated)
	r := calendlyRequest(body, SignCalendly(body, calendlySecret, testNow))
	prefix := []byte(testTS + ".")
	var sum [sha256.Size]byte
	benchScheme(b, mustNewCalendly(b, Options{}), r, calendlySecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, calendlySecret)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
