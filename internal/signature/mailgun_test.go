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

	"github.com/mailgun/mailgun-go/v4"
)

const (
	mailgunKey    = "key-local-test-webhook-signing-key"
	mailgunKeyOld = "key-previous-webhook-signing-key"
	mailgunToken  = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
	// mailgunDelivered is the event-data of a delivered event in the shape
	// Mailgun's documentation shows.
	mailgunDelivered = `{"id":"DACSsAdVSeGpLid7TN03WA","event":"delivered","timestamp":1721954399.329574,"log-level":"info","envelope":{"transport":"smtp","sender":"bob@sandbox.mailgun.org","sending-ip":"209.61.154.250","targets":"alice@example.com"},"flags":{"is-routed":false,"is-authenticated":true,"is-system-test":false,"is-test-mode":false},"delivery-status":{"tls":true,"mx-host":"smtp-in.example.com","code":250,"description":"","session-seconds":0.433,"utf8":true,"attempt-no":1,"message":"OK","certificate-verified":true},"message":{"headers":{"to":"Alice <alice@example.com>","message-id":"20130503182626.18666.16540@sandbox.mailgun.org","from":"Bob <bob@sandbox.mailgun.org>","subject":"Test delivered webhook"},"attachments":[],"size":111},"recipient":"alice@example.com","recipient-domain":"example.com","storage":{"url":"https://se.api.mailgun.net/v3/domains/sandbox.mailgun.org/messages/message_key","key":"message_key"},"campaigns":[],"tags":["my_tag_1","my_tag_2"],"user-variables":{"my_var_1":"Mailgun Variable #1","my-var-2":"awesome"}}`
)

var mailgunSecrets = [][]byte{[]byte(mailgunKeyOld), []byte(mailgunKey)}

// mailgunHex is the signature of ts and token under key, computed here.
func mailgunHex(key, ts, token string) string {
	return hex.EncodeToString(macOf(sha256.New, []byte(key), []byte(ts+token)))
}

// mailgunBody is a webhook body with this signature object (raw JSON).
func mailgunBody(sigObject string) []byte {
	return []byte(`{"signature":` + sigObject + `,"event-data":` + mailgunDelivered + `}`)
}

func mailgunSig(ts, token, sig string) string {
	return `{"timestamp":"` + ts + `","token":"` + token + `","signature":"` + sig + `"}`
}

func mailgunRequest(body []byte) Request {
	return Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// TestMailgunSDK: mailgun-go, Mailgun's own library, verifies what Sign
// writes and reads the same event from it; and the scheme accepts the
// signature the library's own construction gives.
func TestMailgunSDK(t *testing.T) {
	s := mustNew(t, NewMailgun, Options{})
	r := signed(t, s, mailgunRequest(mailgunBody(`{}`)), []byte(mailgunKey), testNow)
	var payload mailgun.WebhookPayload
	if err := json.Unmarshal(r.Body, &payload); err != nil {
		t.Fatal(err)
	}
	mg := mailgun.NewMailgun("example.com", "api-key")
	mg.SetWebhookSigningKey(mailgunKey)
	if ok, err := mg.VerifyWebhookSignature(payload.Signature); !ok || err != nil {
		t.Fatalf("mailgun-go does not verify Sign's %+v: %v", payload.Signature, err)
	}
	mg.SetWebhookSigningKey(mailgunKeyOld)
	if ok, _ := mg.VerifyWebhookSignature(payload.Signature); ok {
		t.Fatal("mailgun-go verifies under another key")
	}
	if err := s.Verify(r, mailgunSecrets, testNow); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	ev, err := mailgun.ParseEvent(payload.EventData)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Identify(r)
	if err != nil {
		t.Fatal(err)
	}
	if id.ID != ev.GetID() || id.Type != ev.GetName() || id.Created.Sub(ev.GetTimestamp()).Abs() > time.Microsecond {
		t.Fatalf("Identify %+v; mailgun-go reads %s %s %s", id, ev.GetID(), ev.GetName(), ev.GetTimestamp())
	}
	if nonce, until := s.Nonce(r); nonce != payload.Signature.Token || !until.Equal(testNow.Add(MailgunDefaultTolerance)) {
		t.Fatalf("Nonce %q until %s", nonce, until)
	}
}

func mailgunMalformedRuns(tb testing.TB) []malformedRun {
	s := mustNew(tb, NewMailgun, Options{})
	ok := mailgunHex(mailgunKey, testTS, mailgunToken)
	raw, _ := hex.DecodeString(ok)
	body := func(sig string) []byte { return mailgunBody(sig) }
	var cases []verifyCase
	add := func(name string, b []byte, want error) {
		cases = append(cases, verifyCase{name, mailgunRequest(b), mailgunSecrets, want})
	}
	at := func(ts string) []byte {
		return body(mailgunSig(ts, mailgunToken, mailgunHex(mailgunKey, ts, mailgunToken)))
	}
	add("valid", body(mailgunSig(testTS, mailgunToken, ok)), nil)
	add("valid, upper-case hex", body(mailgunSig(testTS, mailgunToken, strings.ToUpper(ok))), nil)
	add("valid, the previous key", body(mailgunSig(testTS, mailgunToken, mailgunHex(mailgunKeyOld, testTS, mailgunToken))), nil)
	add("valid, 11 hours old", at(strconv.FormatInt(testNow.Add(-11*time.Hour).Unix(), 10)), nil)
	add("valid, members in another order", []byte(`{"event-data":`+mailgunDelivered+`,"signature":{"signature":"`+ok+`","token":"`+mailgunToken+`","timestamp":"`+testTS+`"}}`), nil)
	for i := range raw {
		add(fmt.Sprintf("signature byte %d flipped", i), body(mailgunSig(testTS, mailgunToken, hex.EncodeToString(flipByte(raw, i)))), ErrNoMatch)
	}
	for name, c := range map[string]struct {
		body []byte
		want error
	}{
		"13 hours old":                     {at(strconv.FormatInt(testNow.Add(-13*time.Hour).Unix(), 10)), ErrTooOld},
		"6 minutes ahead":                  {at(strconv.FormatInt(testNow.Add(6*time.Minute).Unix(), 10)), ErrTooNew},
		"timestamp a number":               {body(`{"timestamp":` + testTS + `,"token":"` + mailgunToken + `","signature":"` + ok + `"}`), ErrMalformedHeader},
		"timestamp with a leading zero":    {at("0" + testTS), ErrMalformedHeader},
		"timestamp in milliseconds":        {at(testTS + "000"), errRejected},
		"timestamp fractional":             {at(testTS + ".5"), ErrMalformedHeader},
		"timestamp negative":               {at("-1"), ErrMalformedHeader},
		"timestamp empty":                  {at(""), ErrMalformedHeader},
		"timestamp changed":                {body(mailgunSig(strconv.FormatInt(testNow.Unix()+1, 10), mailgunToken, ok)), ErrNoMatch},
		"token changed":                    {body(mailgunSig(testTS, mailgunToken[:49]+"1", ok)), ErrNoMatch},
		"token empty":                      {body(mailgunSig(testTS, "", mailgunHex(mailgunKey, testTS, ""))), ErrMalformedHeader},
		"token with a hyphen":              {body(mailgunSig(testTS, "a-b", mailgunHex(mailgunKey, testTS, "a-b"))), ErrMalformedHeader},
		"token with a '#'":                 {body(mailgunSig(testTS, "a#b", mailgunHex(mailgunKey, testTS, "a#b"))), ErrMalformedHeader},
		"token 257 bytes":                  {body(mailgunSig(testTS, strings.Repeat("a", 257), mailgunHex(mailgunKey, testTS, strings.Repeat("a", 257)))), ErrMalformedHeader},
		"token a number":                   {body(`{"timestamp":"` + testTS + `","token":1,"signature":"` + ok + `"}`), ErrMalformedHeader},
		"token and timestamp swapped":      {body(mailgunSig(testTS, mailgunToken, mailgunHex(mailgunKey, mailgunToken, testTS))), ErrNoMatch},
		"signed with a separator":          {body(mailgunSig(testTS, mailgunToken, mailgunHex(mailgunKey, testTS+".", mailgunToken))), ErrNoMatch},
		"signed over the body":             {body(mailgunSig(testTS, mailgunToken, hex.EncodeToString(macOf(sha256.New, []byte(mailgunKey), []byte(mailgunDelivered))))), ErrNoMatch},
		"signature base64":                 {body(mailgunSig(testTS, mailgunToken, "ASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4mrze8=")), ErrMalformedHeader},
		"signature one byte short":         {body(mailgunSig(testTS, mailgunToken, ok[:62])), ErrMalformedHeader},
		"signature one digit long":         {body(mailgunSig(testTS, mailgunToken, ok+"0")), ErrMalformedHeader},
		"signature empty":                  {body(mailgunSig(testTS, mailgunToken, "")), ErrMalformedHeader},
		"signature sha256= prefix":         {body(mailgunSig(testTS, mailgunToken, "sha256="+ok)), ErrMalformedHeader},
		"signature null":                   {body(`{"timestamp":"` + testTS + `","token":"` + mailgunToken + `","signature":null}`), ErrMalformedHeader},
		"no signature member":              {body(`{"timestamp":"` + testTS + `","token":"` + mailgunToken + `"}`), ErrMalformedHeader},
		"no signature object":              {[]byte(`{"event-data":` + mailgunDelivered + `}`), ErrNotSigned},
		"signature object null":            {body(`null`), ErrNotSigned},
		"signature object a string":        {body(`"` + ok + `"`), ErrMalformedHeader},
		"signature object an array":        {body(`[]`), ErrMalformedHeader},
		"legacy form-encoded webhook":      {[]byte("timestamp=" + testTS + "&token=" + mailgunToken + "&signature=" + ok), ErrMalformedHeader},
		"empty body":                       {nil, ErrMalformedHeader},
		"truncated":                        {body(mailgunSig(testTS, mailgunToken, ok))[:80], ErrMalformedHeader},
		"trailing garbage":                 {append(body(mailgunSig(testTS, mailgunToken, ok)), 'x'), ErrMalformedHeader},
		"a JSON array":                     {[]byte(`[` + string(body(mailgunSig(testTS, mailgunToken, ok))) + `]`), ErrMalformedHeader},
		"signed under the empty key":       {body(mailgunSig(testTS, mailgunToken, mailgunHex("", testTS, mailgunToken))), ErrNoMatch},
		"signature object given twice":     {[]byte(`{"signature":` + mailgunSig(testTS, mailgunToken, "00") + `,"event-data":` + mailgunDelivered + `,"signature":` + mailgunSig(testTS, mailgunToken, ok) + `}`), nil},
		"another key":                      {body(mailgunSig(testTS, mailgunToken, mailgunHex("key-someone-else", testTS, mailgunToken))), ErrNoMatch},
		"token with a unicode escape of a": {body(`{"timestamp":"` + testTS + `","token":"\u0061` + mailgunToken[1:] + `","signature":"` + ok + `"}`), nil},
	} {
		add(name, c.body, c.want)
	}
	cases = append(cases,
		verifyCase{"no keys", mailgunRequest(body(mailgunSig(testTS, mailgunToken, ok))), nil, ErrNoSecret},
		verifyCase{"only empty keys", mailgunRequest(body(mailgunSig(testTS, mailgunToken, ok))), [][]byte{{}}, ErrNoSecret},
	)
	return []malformedRun{{s, cases}}
}

func TestMailgunVerifyMalformed(t *testing.T) { runMalformed(t, mailgunMalformedRuns(t)) }

func TestMailgunTolerance(t *testing.T) {
	for _, tc := range []struct {
		tol, age time.Duration
		want     error
	}{
		{0, MailgunDefaultTolerance, nil},
		{0, MailgunDefaultTolerance + time.Second, ErrTooOld},
		{time.Hour, time.Hour, nil},
		{time.Hour, time.Hour + time.Second, ErrTooOld},
		{time.Hour, -5 * time.Minute, nil},
		{time.Hour, -5*time.Minute - time.Second, ErrTooNew},
	} {
		ts := strconv.FormatInt(testNow.Add(-tc.age).Unix(), 10)
		s := mustNew(t, NewMailgun, Options{Tolerance: tc.tol})
		r := mailgunRequest(mailgunBody(mailgunSig(ts, mailgunToken, mailgunHex(mailgunKey, ts, mailgunToken))))
		err := s.Verify(r, mailgunSecrets, testNow)
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("tolerance %s, age %s: %v, want %v", tc.tol, tc.age, err, tc.want)
		}
		if nonce, until := s.Nonce(r); nonce != mailgunToken || !until.Equal(testNow.Add(-tc.age).Truncate(time.Second).Add(toleranceOr(Options{Tolerance: tc.tol}, MailgunDefaultTolerance))) {
			t.Errorf("Nonce: %q until %s", nonce, until)
		}
	}
}

func mailgunEventBody(eventData string) string {
	return `{"signature":` + mailgunSig(testTS, mailgunToken, "00") + `,"event-data":` + eventData + `}`
}

var mailgunIdentifyCases = []identifyCase{
	{"delivered", mailgunEventBody(mailgunDelivered), Identity{ID: "DACSsAdVSeGpLid7TN03WA", Type: "delivered", Created: time.Unix(1721954399, 329574000).UTC()}},
	{"whole seconds", mailgunEventBody(`{"id":"a","event":"opened","timestamp":1721954399}`), Identity{ID: "a", Type: "opened", Created: time.Unix(1721954399, 0).UTC()}},
	{"nanoseconds and more", mailgunEventBody(`{"id":"a","event":"opened","timestamp":1721954399.1234567891}`), Identity{ID: "a", Type: "opened", Created: time.Unix(1721954399, 123456789).UTC()}},
	{"no timestamp", mailgunEventBody(`{"id":"a","event":"failed"}`), Identity{ID: "a", Type: "failed"}},
	{"timestamp with an exponent", mailgunEventBody(`{"id":"a","event":"opened","timestamp":1.7e9}`), Identity{}},
	{"timestamp negative", mailgunEventBody(`{"id":"a","event":"opened","timestamp":-1}`), Identity{}},
	{"timestamp a string", mailgunEventBody(`{"id":"a","event":"opened","timestamp":"1721954399"}`), Identity{}},
	{"no id", mailgunEventBody(`{"event":"opened"}`), Identity{}},
	{"id empty", mailgunEventBody(`{"id":"","event":"opened"}`), Identity{}},
	{"id a number", mailgunEventBody(`{"id":1,"event":"opened"}`), Identity{}},
	{"no event", mailgunEventBody(`{"id":"a"}`), Identity{}},
	{"no event-data", `{"signature":{}}`, Identity{}},
	{"event-data an array", mailgunEventBody(`[]`), Identity{}},
	{"not JSON", `event=opened`, Identity{}},
}

func TestMailgunIdentify(t *testing.T) {
	runIdentifyCases(t, mustNew(t, NewMailgun, Options{}), mailgunIdentifyCases, mailgunRequest)
}

func TestDecimalSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"0", time.Unix(0, 0), true},
		{"1721954399.329574", time.Unix(1721954399, 329574000), true},
		{"1.000000001", time.Unix(1, 1), true},
		{"253402300799", time.Unix(253402300799, 0), true},
		{"253402300800", time.Time{}, false},
		{"1.", time.Time{}, false},
		{".5", time.Time{}, false},
		{"1.5e3", time.Time{}, false},
		{"-1", time.Time{}, false},
		{"1.2.3", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := decimalSeconds(tc.in)
		if ok != tc.ok || ok && !got.Equal(tc.want) {
			t.Errorf("decimalSeconds(%q) = %s, %v", tc.in, got, ok)
		}
	}
}

func FuzzMailgunVerify(f *testing.F) {
	f.Add(testTS, mailgunToken, true, []byte(mailgunDelivered))
	f.Add("0"+testTS, "a-b", false, []byte(`{}`))
	s := mustNew(f, NewMailgun, Options{})
	f.Fuzz(func(t *testing.T, ts, token string, sign bool, eventData []byte) {
		sig := "00"
		if sign {
			sig = mailgunHex(mailgunKey, ts, token)
		}
		tsJSON, _ := json.Marshal(ts)
		tokenJSON, _ := json.Marshal(token)
		body := []byte(`{"signature":{"timestamp":` + string(tsJSON) + `,"token":` + string(tokenJSON) + `,"signature":"` + sig + `"},"event-data":` + string(eventData) + `}`)
		r := mailgunRequest(body)
		if !fuzzVerify(t, s, r, mailgunSecrets, testNow) {
			return
		}
		at := acceptedUnix(t, ts)
		if nonce, until := s.Nonce(r); nonce != token || !isAlnum(nonce, mailgunMaxToken) || !until.Equal(at.Add(MailgunDefaultTolerance)) {
			t.Fatalf("accepted token %q: Nonce %q until %s", token, nonce, until)
		}
	})
}

func FuzzMailgunIdentify(f *testing.F) {
	for _, tc := range mailgunIdentifyCases {
		f.Add([]byte(tc.body))
	}
	s := mustNew(f, NewMailgun, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzIdentifyValid(t, s, mailgunRequest(body))
	})
}

// BenchmarkMailgun compares the scheme with a bare HMAC of what Mailgun
// signs (timestamp and token, 60 bytes): reading the body's identity is
// the rest, as for Adyen.
func BenchmarkMailgun(b *testing.B) {
	body := mailgunBody(mailgunSig(testTS, mailgunToken, mailgunHex(mailgunKey, testTS, mailgunToken)))
	signed := []byte(testTS + mailgunToken)
	key := []byte(mailgunKey)
	var sum [sha256.Size]byte
	benchScheme(b, mustNew(b, NewMailgun, Options{}), mailgunRequest(body), [][]byte{key}, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		mac.Sum(sum[:0])
	})
}
