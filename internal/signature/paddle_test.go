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
	paddleSecret    = []byte("pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_current5uFSi9YCD3OLYAShQI90XTI5vEI")
	paddleSecretOld = []byte("pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_previous6h3qd3uFSi9YCD3OLYAShQI9")
	paddleSecrets   = [][]byte{paddleSecret}
)

// paddleSubscriptionCreated is Paddle's subscription.created example event,
// the SubscriptionCreatedMock of PaddleHQ/paddle-node-sdk
// src/__tests__/mocks/notifications/subscription-created.mock.ts written as
// the compact JSON Paddle sends.
const paddleSubscriptionCreated = `{"event_id":"evt_01h7ht60jy5hpdv5x8tfsaxje4","event_type":"subscription.created","occurred_at":"2023-08-11T08:07:38.334150Z","notification_id":"ntf_01h7ht60n4grsa2a5ddd54h1j0","data":{"id":"sub_01h7ht5z5wdg9pz18jx1fagp8k","items":[{"price":{"id":"pri_01gsz8x8sawmvhz1pv30nge1ke","tax_mode":"account_setting","product_id":"pro_01gsz4t5hdjse780zja8vvr7jg","unit_price":{"amount":"3240","currency_code":"USD"},"description":"Monthly (per seat)","trial_period":null,"billing_cycle":{"interval":"month","frequency":1}},"status":"active","quantity":10,"recurring":true,"created_at":"2023-08-11T08:07:36.892823Z","updated_at":"2023-08-11T08:07:36.892823Z","trial_dates":null,"next_billed_at":"2023-09-11T08:07:35.449123Z","previously_billed_at":"2023-08-11T08:07:35.449123Z"},{"price":{"id":"pri_01h1vjfevh5etwq3rb416a23h2","tax_mode":"account_setting","product_id":"pro_01h1vjes1y163xfj1rh1tkfb65","unit_price":{"amount":"10800","currency_code":"USD"},"description":"Monthly (recurring addon)","trial_period":null,"billing_cycle":{"interval":"month","frequency":1}},"status":"active","quantity":1,"recurring":true,"created_at":"2023-08-11T08:07:36.892827Z","updated_at":"2023-08-11T08:07:36.892827Z","trial_dates":null,"next_billed_at":"2023-09-11T08:07:35.449123Z","previously_billed_at":"2023-08-11T08:07:35.449123Z"}],"status":"active","paused_at":null,"address_id":"add_01h7hswbfjqez51ezfhk7s6400","created_at":"2023-08-11T08:07:36.892822Z","started_at":"2023-08-11T08:07:35.449123Z","updated_at":"2023-08-11T08:07:36.892822Z","business_id":"biz_01h7ht30avfmwa4kvkfeg4ef8e","canceled_at":null,"discount":null,"custom_data":null,"customer_id":"ctm_01h7hswb86rtps5ggbq7ybydcw","billing_cycle":{"interval":"month","frequency":1},"currency_code":"USD","next_billed_at":"2023-09-11T08:07:35.449123Z","transaction_id":"txn_01h7hst69d7tar4rm6vyeb0j36","billing_details":null,"collection_mode":"automatic","first_billed_at":"2023-08-11T08:07:35.449123Z","scheduled_change":null,"current_billing_period":{"ends_at":"2023-09-11T08:07:35.449123Z","starts_at":"2023-08-11T08:07:35.449123Z"}}}`

// paddleEvents are Paddle-shaped bodies for Identify: the SDK's example,
// and the same envelope indented and with its keys reordered (Paddle
// promises neither).
func paddleEvents(tb testing.TB) []corpusFile {
	tb.Helper()
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(paddleSubscriptionCreated), "", "  "); err != nil {
		tb.Fatal(err)
	}
	return []corpusFile{
		{name: "subscription.created", body: []byte(paddleSubscriptionCreated)},
		{name: "subscription.created indented", body: indented.Bytes()},
		{name: "transaction.completed, data first", body: []byte(`{"data":{"id":"txn_01h8441jx8x5a0dcmtjv4f9p2k","status":"completed"},"notification_id":"ntf_01h8441k2pk7szd4kdz0ej1ydq","occurred_at":"2023-08-18T10:46:21.098Z","event_type":"transaction.completed","event_id":"evt_01h8441k0jxkkfevn22h6dfsgc"}`)},
	}
}

// paddleAllCorpus returns every JSON file under testdata/corpus, from every
// provider: signatures here cover raw bytes, so any body exercises them.
func paddleAllCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	return walkCorpus(tb, corpusDir, 15)
}

func mustNewPaddle(tb testing.TB, o Options) *Paddle {
	tb.Helper()
	return mustNew(tb, NewPaddle, o)
}

// paddleRequest builds a POST with one Paddle-Signature value per element
// of headers.
func paddleRequest(body []byte, headers ...string) Request {
	return jsonPost(body, map[string][]string{PaddleHeader: headers})
}

// paddleHex is the h1 of body at the raw ts, computed independently of the
// code under test.
func paddleHex(body, secret []byte, ts string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + ":"))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// TestPaddleSDKVectors reproduces the cases of PaddleHQ/paddle-node-sdk
// src/__tests__/notifications/webhooks-validator.node.test.ts (secret
// VALID_SECRET, clock 2023-11-01T00:00:00Z). The SDK answers false or
// throws; the causes are ours.
func TestPaddleSDKVectors(t *testing.T) {
	const (
		h1  = "a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
		h1b = "28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261"
	)
	sdkNow := time.Date(2023, 11, 1, 0, 0, 0, 0, time.UTC)
	secret := [][]byte{[]byte("VALID_SECRET")}
	tests := []struct {
		name    string
		body    string
		header  string
		secrets [][]byte
		now     time.Time
		tol     time.Duration
		want    error
	}{
		{"valid signature", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow, 0, nil},
		{"valid signature with multiple hashes", `{"data": "value"}`, "ts=1698796800;h1=" + h1b + ";h1=" + h1b + ";h2=RANDOM_HASH", secret, sdkNow, 0, nil},
		{"invalid secret", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, [][]byte{[]byte("INVALID_VALID_SECRET")}, sdkNow, 0, ErrNoMatch},
		{"invalid timestamp", `{"data": ["1", "2"]}`, "ts=9876;h1=" + h1, secret, sdkNow, 0, ErrTooOld},
		{"invalid data - has more space", `{ "data": [ "1", "2" ]}`, "ts=1698796800;h1=" + h1, secret, sdkNow, 0, ErrNoMatch},
		{"invalid signature", `{"data": ["1", "2"]}`, "ts=1234;h1=invalid_signature", secret, sdkNow, 0, ErrNoMatch},
		{"header: missing ts and h1", `{"data": ["1", "2"]}`, "invalid_header", secret, sdkNow, 0, ErrMalformedHeader},
		{"header: missing ts", `{"data": ["1", "2"]}`, "h1=invalid_header", secret, sdkNow, 0, ErrMalformedHeader},
		{"header: missing h1", `{"data": ["1", "2"]}`, "ts=1234;h2=invalid_header", secret, sdkNow, 0, ErrNoMatch},
		{"5s SDK window: 1s later", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow.Add(time.Second), 5 * time.Second, nil},
		{"5s SDK window: 5s later", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow.Add(5 * time.Second), 5 * time.Second, nil},
		{"5s SDK window: 6s later", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow.Add(6 * time.Second), 5 * time.Second, ErrTooOld},
		{"5s SDK window: days later", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow.Add(96 * time.Hour), 5 * time.Second, ErrTooOld},
		{"default window: 6s later", `{"data": ["1", "2"]}`, "ts=1698796800;h1=" + h1, secret, sdkNow.Add(6 * time.Second), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustNewPaddle(t, Options{Tolerance: tt.tol})
			checkErr(t, verifyNoPanic(t, p, paddleRequest([]byte(tt.body), tt.header), tt.secrets, tt.now), tt.want)
		})
	}
	t.Run("SignPaddle reproduces the SDK's h1", func(t *testing.T) {
		if got, want := SignPaddle([]byte(`{"data": ["1", "2"]}`), []byte("VALID_SECRET"), sdkNow), "ts=1698796800;h1="+h1; got != want {
			t.Errorf("SignPaddle: got %q, want %q", got, want)
		}
	})
}

// TestPaddleCorpus signs every corpus body (no Paddle corpus exists; the
// signature is over raw bytes, so any body serves) and the Paddle example
// events, and checks Identify on the latter against encoding/json.
func TestPaddleCorpus(t *testing.T) {
	p := mustNewPaddle(t, Options{})
	files := append(paddleAllCorpus(t), paddleEvents(t)...)
	for _, f := range files {
		header := SignPaddle(f.body, paddleSecret, testNow)
		if err := verifyNoPanic(t, p, paddleRequest(f.body, header), paddleSecrets, testNow); err != nil {
			t.Errorf("%s: Verify(signed body): got %v, want nil", f.name, err)
		}
		if want := "ts=" + testTS + ";h1=" + paddleHex(f.body, paddleSecret, testTS); header != want {
			t.Errorf("%s: SignPaddle: got %q, want %q", f.name, header, want)
		}
		checkFlipsRejected(t, f.name, p, paddleRequest(f.body, header), paddleSecrets, testNow)
	}
	for _, f := range paddleEvents(t) {
		t.Run(f.name, func(t *testing.T) {
			var m struct {
				EventID        string    `json:"event_id"`
				EventType      string    `json:"event_type"`
				OccurredAt     time.Time `json:"occurred_at"`
				NotificationID string    `json:"notification_id"`
			}
			if err := json.Unmarshal(f.body, &m); err != nil {
				t.Fatal(err)
			}
			got, err := p.Identify(paddleRequest(f.body))
			if err != nil {
				t.Fatalf("Identify: %v", err)
			}
			if got.ID != m.EventID || got.Type != m.EventType || !got.Created.Equal(m.OccurredAt) || got.Attributes["notification_id"] != m.NotificationID {
				t.Errorf("Identify: got %+v, want %+v", got, m)
			}
		})
	}
}

func TestPaddleRotation(t *testing.T) {
	body := []byte(paddleSubscriptionCreated)
	cur := paddleHex(body, paddleSecret, testTS)
	old := paddleHex(body, paddleSecretOld, testTS)
	wrong := paddleHex(body, []byte("pdl_wrong"), testTS)
	both := [][]byte{paddleSecret, paddleSecretOld}
	req := func(header string) Request { return paddleRequest(body, header) }
	tests := []verifyCase{
		{"two secrets, signed by current", req("ts=" + testTS + ";h1=" + cur), both, nil},
		{"two secrets, signed by previous", req("ts=" + testTS + ";h1=" + old), both, nil},
		{"two secrets reversed", req("ts=" + testTS + ";h1=" + cur), [][]byte{paddleSecretOld, paddleSecret}, nil},
		{"retired secret no longer accepted", req("ts=" + testTS + ";h1=" + old), paddleSecrets, ErrNoMatch},
		{"two h1, wrong then right", req("ts=" + testTS + ";h1=" + wrong + ";h1=" + cur), paddleSecrets, nil},
		{"two h1 from both secrets, one configured", req("ts=" + testTS + ";h1=" + old + ";h1=" + cur), paddleSecrets, nil},
		{"two h1 both wrong", req("ts=" + testTS + ";h1=" + wrong + ";h1=" + old), paddleSecrets, ErrNoMatch},
		{"valid HMAC under h2 (no other versions)", req("ts=" + testTS + ";h2=" + cur), paddleSecrets, ErrNoMatch},
		{"no secrets", req("ts=" + testTS + ";h1=" + cur), nil, ErrNoSecret},
		{"only an empty secret", req("ts=" + testTS + ";h1=" + paddleHex(body, nil, testTS)), [][]byte{{}}, ErrNoSecret},
		{"empty secret skipped, real one used", req("ts=" + testTS + ";h1=" + cur), [][]byte{nil, paddleSecret}, nil},
		{"empty secret never matches empty-key signature", req("ts=" + testTS + ";h1=" + paddleHex(body, nil, testTS)), [][]byte{{}, paddleSecret}, ErrNoMatch},
	}
	p := mustNewPaddle(t, Options{})
	runVerifyCases(t, p, testNow, 0, tests)
}

func TestPaddleTolerance(t *testing.T) {
	body := []byte(paddleSubscriptionCreated)
	tests := append(toleranceEdges(DefaultTolerance), []toleranceCase{
		{"5s, at the edge", 5 * time.Second, 5 * time.Second, nil},
		{"5s, 6s old", 5 * time.Second, 6 * time.Second, ErrTooOld},
		{"5s, 6s in the future", 5 * time.Second, -6 * time.Second, ErrTooNew},
	}...)
	runToleranceCases(t, paddleSecrets, tests, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		p := mustNewPaddle(t, Options{Tolerance: tolerance})
		return p, signed(t, p, paddleRequest(body), paddleSecret, at)
	})
	t.Run("too old and wrong signature reports the age", func(t *testing.T) {
		p := mustNewPaddle(t, Options{})
		header := SignPaddle(body, paddleSecretOld, testNow.Add(-time.Hour))
		checkErr(t, verifyNoPanic(t, p, paddleRequest(body, header), paddleSecrets, testNow), ErrTooOld)
	})
}

func TestNewPaddle(t *testing.T) {
	runOptionsCases(t, NewPaddle, []optionsCase{
		{"defaults", Options{}, false},
		{"5s tolerance", Options{Tolerance: 5 * time.Second}, false},
		{"negative tolerance", Options{Tolerance: -1}, true},
		{"url set", Options{URL: "https://example.com/paddle"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Algorithm: "sha256"}}, true},
	})
}

// paddleCase is one set of Paddle-Signature values and the cause Verify
// must report.
type paddleCase struct {
	name    string
	headers []string
	body    func([]byte) []byte
	want    error
}

// paddleMalformedCases builds the table for body signed at testNow; the
// fuzz test reuses it.
func paddleMalformedCases(body []byte) []paddleCase {
	sig := paddleHex(body, paddleSecret, testTS)
	ok := "ts=" + testTS + ";h1=" + sig
	at := func(ts string) string { return "ts=" + ts + ";h1=" + paddleHex(body, paddleSecret, ts) }
	wrong := paddleHex(body, []byte("pdl_wrong"), testTS)
	h1s := func(n int, last string) string {
		return "ts=" + testTS + strings.Repeat(";h1="+wrong, n-1) + ";h1=" + last
	}
	pad := func(h string, n int) string { return h + ";x=" + strings.Repeat("a", n-len(h)-len(";x=")) }
	return []paddleCase{
		{name: "valid", headers: []string{ok}, want: nil},
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", headers: []string{""}, want: ErrNotSigned},
		{name: "whitespace header", headers: []string{"  "}, want: ErrNotSigned},
		{name: "two headers", headers: []string{ok, ok}, want: ErrMalformedHeader},

		{name: "ts=abc", headers: []string{"ts=abc;h1=" + sig}, want: ErrMalformedHeader},
		{name: "ts empty", headers: []string{"ts=;h1=" + sig}, want: ErrMalformedHeader},
		{name: "ts negative", headers: []string{at("-1")}, want: ErrMalformedHeader},
		{name: "ts arabic-indic digits", headers: []string{at("١٧٢١٩٥٤٤٠٠")}, want: ErrMalformedHeader},
		{name: "ts fullwidth digits", headers: []string{at("１７２１９５４４００")}, want: ErrMalformedHeader},
		{name: "ts leading space", headers: []string{at(" " + testTS)}, want: ErrMalformedHeader},
		{name: "ts leading zero", headers: []string{at("0" + testTS)}, want: ErrMalformedHeader},
		{name: "ts milliseconds", headers: []string{at(testTS + "000")}, want: ErrMalformedHeader},
		{name: "ts overflows int64", headers: []string{at("99999999999999999999")}, want: ErrMalformedHeader},
		{name: "ts 0", headers: []string{at("0")}, want: ErrTooOld},
		{name: "ts far future", headers: []string{at("999999999999")}, want: ErrTooNew},
		{name: "ts missing", headers: []string{"h1=" + sig}, want: ErrMalformedHeader},
		{name: "ts repeated", headers: []string{"ts=" + testTS + ";ts=" + testTS + ";h1=" + sig}, want: ErrMalformedHeader},
		{name: "ts uppercase key", headers: []string{"TS=" + testTS + ";h1=" + sig}, want: ErrMalformedHeader},
		{name: "ts not the signed one", headers: []string{"ts=1721954401;h1=" + sig}, want: ErrNoMatch},
		{name: "Stripe's t= key", headers: []string{"t=" + testTS + ";h1=" + sig}, want: ErrMalformedHeader},

		{name: "h1 too short", headers: []string{"ts=" + testTS + ";h1=" + sig[:62]}, want: ErrNoMatch},
		{name: "h1 too long", headers: []string{ok + "00"}, want: ErrNoMatch},
		{name: "h1 non-hex", headers: []string{"ts=" + testTS + ";h1=" + sig[:63] + "g"}, want: ErrNoMatch},
		{name: "h1 base64 instead of hex", headers: []string{"ts=" + testTS + ";h1=" + strings.Repeat("A", 43) + "="}, want: ErrNoMatch},
		{name: "h1 uppercase hex is accepted", headers: []string{"ts=" + testTS + ";h1=" + strings.ToUpper(sig)}, want: nil},
		{name: "h1 empty", headers: []string{"ts=" + testTS + ";h1="}, want: ErrNoMatch},
		{name: "h1 missing", headers: []string{"ts=" + testTS}, want: ErrNoMatch},
		{name: "wrong secret", headers: []string{"ts=" + testTS + ";h1=" + wrong}, want: ErrNoMatch},
		{name: "8 h1, last right", headers: []string{h1s(8, sig)}, want: nil},
		{name: "9 h1", headers: []string{h1s(9, sig)}, want: ErrMalformedHeader},
		{name: "9 short h1 do not count", headers: []string{"ts=" + testTS + strings.Repeat(";h1=ab", 9) + ";h1=" + sig}, want: nil},

		{name: "comma separator", headers: []string{"ts=" + testTS + ",h1=" + sig}, want: ErrMalformedHeader},
		{name: "space after semicolon", headers: []string{"ts=" + testTS + "; h1=" + sig}, want: ErrNoMatch},
		{name: "trailing semicolon", headers: []string{ok + ";"}, want: ErrMalformedHeader},
		{name: "double semicolon", headers: []string{"ts=" + testTS + ";;h1=" + sig}, want: ErrMalformedHeader},
		{name: "pair without '='", headers: []string{ok + ";h1"}, want: ErrMalformedHeader},
		{name: "reversed order", headers: []string{"h1=" + sig + ";ts=" + testTS}, want: nil},
		{name: "unknown keys ignored", headers: []string{"v=2;" + ok + ";h2=RANDOM_HASH"}, want: nil},
		{name: "header exactly 8 KiB", headers: []string{pad(ok, 8<<10)}, want: nil},
		{name: "header over 8 KiB", headers: []string{pad(ok, 8<<10+1)}, want: ErrMalformedHeader},

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

func paddleMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(paddleSubscriptionCreated)
	var cases []verifyCase
	for _, tc := range paddleMalformedCases(body) {
		cases = append(cases, verifyCase{tc.name, paddleRequest(changed(body, tc.body), tc.headers...), paddleSecrets, tc.want})
	}
	p := mustNewPaddle(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        p,
		r:        signed(tb, p, paddleRequest(body), paddleSecret, testNow),
		secrets:  paddleSecrets,
		sig:      signedField{header: PaddleHeader, prefix: "h1=", sep: ';'},
		enc:      encHex,
		versions: []string{"h0=", "h2=", "v1="},
		ts:       &signedField{header: PaddleHeader, prefix: "ts=", sep: ';'},
		// Two copies joined by a comma split on ';' into ts, an h1 whose
		// value runs into the second copy (not 64 hex digits: skipped)
		// and the second copy's genuine h1; the first ts is the signed one.
		// Paddle's SDKs split the same way and accept it too.
		drop: map[string]string{
			"Paddle-Signature comma-joined duplicate":               "the second copy's h1 is genuine and ts is used once",
			"Paddle-Signature comma-joined duplicate without space": "the second copy's h1 is genuine and ts is used once",
		},
	})
	return []malformedRun{{p, cases}, {p, generic}}
}

func TestPaddleVerifyMalformed(t *testing.T) { runMalformed(t, paddleMalformedRuns(t)) }

// paddleIdentifyCases is shared with the fuzz test as seeds; a zero want.ID
// means ErrInvalidPayload.
var paddleIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"event_id":"evt_1","event_type":"a.b"}]`},
	{name: "not JSON", body: `event_id=evt_1`},
	{name: "truncated", body: `{"event_id":"evt_1","event_type":"a.b"`},
	{name: "empty object", body: `{}`},
	{name: "missing event_id", body: `{"event_type":"transaction.completed"}`},
	{name: "empty event_id", body: `{"event_id":"","event_type":"transaction.completed"}`},
	{name: "event_id a number", body: `{"event_id":1,"event_type":"transaction.completed"}`},
	{name: "event_id 513 bytes", body: `{"event_id":"` + strings.Repeat("e", 513) + `","event_type":"a.b"}`},
	{name: "missing event_type", body: `{"event_id":"evt_1"}`},
	{name: "event_type null", body: `{"event_id":"evt_1","event_type":null}`},
	{name: "id and type only in data", body: `{"data":{"event_id":"evt_1","event_type":"a.b"}}`},
	{name: "occurred_at not RFC 3339", body: `{"event_id":"evt_1","event_type":"a.b","occurred_at":"11/08/2023"}`},
	{name: "occurred_at a number", body: `{"event_id":"evt_1","event_type":"a.b","occurred_at":1691741258}`},
	{
		name: "event_id 512 bytes",
		body: `{"event_id":"` + strings.Repeat("e", 512) + `","event_type":"a.b"}`,
		want: Identity{ID: strings.Repeat("e", 512), Type: "a.b"},
	},
	{
		name: "minimal",
		body: `{"event_id":"evt_1","event_type":"transaction.completed"}`,
		want: Identity{ID: "evt_1", Type: "transaction.completed"},
	},
	{
		name: "occurred_at null",
		body: `{"event_id":"evt_1","event_type":"a.b","occurred_at":null}`,
		want: Identity{ID: "evt_1", Type: "a.b"},
	},
	{
		name: "occurred_at with microseconds",
		body: `{"event_id":"evt_01h7ht60jy5hpdv5x8tfsaxje4","event_type":"subscription.created","occurred_at":"2023-08-11T08:07:38.334150Z"}`,
		want: Identity{ID: "evt_01h7ht60jy5hpdv5x8tfsaxje4", Type: "subscription.created", Created: time.Date(2023, 8, 11, 8, 7, 38, 334150000, time.UTC)},
	},
	{
		name: "escaped id is unescaped",
		body: `{"event_id":"evt_\u0031","event_type":"a\/b"}`,
		want: Identity{ID: "evt_1", Type: "a/b"},
	},
}

func TestPaddleIdentify(t *testing.T) {
	runIdentifyCases(t, mustNewPaddle(t, Options{}), paddleIdentifyCases, func(body []byte) Request { return paddleRequest(body) })
}

// ExampleSignPaddle pins the header format; the h1 was computed with openssl
// (HMAC-SHA256 of "1721954400:" and the body).
func ExampleSignPaddle() {
	body := []byte(`{"event_id":"evt_1","event_type":"transaction.completed"}`)
	fmt.Println(SignPaddle(body, []byte("pdl_example"), time.Unix(1721954400, 0)))
	// Output: ts=1721954400;h1=9007e598bae5e85fe554649eedab79bf53d52f794e3d1a0c72673edc239481ba
}

// Placeholders in a fuzzed Paddle-Signature stand for the h1 of the fuzzed
// body at the line's own ts, under paddleSecret and paddleSecretOld.
const (
	paddleCur = "{h1}"
	paddleOld = "{old}"
)

// paddleParse is the test's own reading of the ts and h1 values of a header.
func paddleParse(line string) (ts string, h1 []string) {
	for part := range strings.SplitSeq(line, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "ts":
			ts = v
		case "h1":
			h1 = append(h1, v)
		}
	}
	return ts, h1
}

func paddleExpand(header string, body []byte) string {
	if !strings.Contains(header, "{") {
		return header
	}
	lines := strings.Split(header, "\n")
	for i, line := range lines {
		ts, _ := paddleParse(line)
		lines[i] = strings.NewReplacer(
			paddleCur, paddleHex(body, paddleSecret, ts),
			paddleOld, paddleHex(body, paddleSecretOld, ts),
		).Replace(line)
	}
	return strings.Join(lines, "\n")
}

func paddlePlacehold(header string, body []byte) string {
	ts, _ := paddleParse(header)
	return strings.NewReplacer(
		paddleHex(body, paddleSecret, ts), paddleCur,
		paddleHex(body, paddleSecretOld, ts), paddleOld,
	).Replace(header)
}

func FuzzPaddleVerify(f *testing.F) {
	for _, c := range paddleEvents(f) {
		f.Add("ts="+testTS+";h1="+paddleCur, c.body)
		f.Add("ts="+testTS+";h1=00;h1="+paddleOld, c.body)
	}
	body := []byte(paddleSubscriptionCreated)
	for _, tc := range paddleMalformedCases(body) {
		h := strings.Join(tc.headers, "\n")
		if len(h) > 8<<10 {
			continue
		}
		b := changed(body, tc.body)
		f.Add(paddlePlacehold(h, b), b)
	}
	p := mustNewPaddle(f, Options{})
	secrets := [][]byte{paddleSecret, paddleSecretOld}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		header = paddleExpand(header, body)
		var values []string
		if header != "" {
			values = strings.Split(header, "\n")
		}
		r := paddleRequest(body, values...)
		if !fuzzVerify(t, p, r, secrets, testNow) {
			return
		}
		if len(values) != 1 {
			t.Fatalf("Verify(%q): accepted %d headers", header, len(values))
		}
		ts, h1 := paddleParse(header)
		n, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || strconv.FormatInt(n, 10) != ts {
			t.Fatalf("Verify(%q): accepted ts %q", header, ts)
		}
		if d := testNow.Sub(time.Unix(n, 0)); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify(%q): accepted a ts %s away from now", header, d)
		}
		for _, secret := range secrets {
			_, want := paddleParse(SignPaddle(body, secret, time.Unix(n, 0)))
			for _, v := range h1 {
				if strings.EqualFold(v, want[0]) {
					return
				}
			}
		}
		t.Fatalf("Verify(%q): got nil, but no h1 equals SignPaddle for a configured secret", header)
	})
}

func FuzzPaddleIdentify(f *testing.F) {
	for _, c := range paddleEvents(f) {
		f.Add(c.body)
	}
	for _, tc := range paddleIdentifyCases {
		f.Add([]byte(tc.body))
	}
	p := mustNewPaddle(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := fuzzIdentify(t, p, paddleRequest(body))
		if !ok {
			return
		}
		if got.ID == "" || got.Type == "" || len(got.ID) > MaxIdentity {
			t.Fatalf("Identify(%q): got %+v", body, got)
		}
	})
}

// BenchmarkPaddle compares the scheme with a bare HMAC over the same bytes
// (Paddle publishes no Go SDK).
func BenchmarkPaddle(b *testing.B) {
	body := []byte(paddleSubscriptionCreated)
	r := paddleRequest(body, SignPaddle(body, paddleSecret, testNow))
	prefix := []byte(testTS + ":")
	var sum [sha256.Size]byte
	benchScheme(b, mustNewPaddle(b, Options{}), r, paddleSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, paddleSecret)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
