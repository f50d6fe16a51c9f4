package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

var (
	twitchSecret    = []byte("twitch_test_current_0123456789")
	twitchSecretOld = []byte("twitch_test_previous_9876543210")
	twitchSecrets   = [][]byte{twitchSecret}

	// twitchTS is testNow as Twitch writes it.
	twitchTS = testNow.UTC().Format(time.RFC3339Nano)
)

// The message id and timestamp of Twitch's "Handling webhook events"
// guide, and bodies in the shapes it documents for the three message types
// (channel.follow). There is no Go SDK to cross-check with; the vectors
// below were computed with openssl.
const (
	twitchDocID        = "e76c6bd4-55c9-4987-8304-da1588d8988b"
	twitchDocTimestamp = "2019-11-16T10:11:12.634234626Z"
)

var twitchBodies = []struct {
	name, messageType string
	body              []byte
}{
	{"notification", TwitchNotification, []byte(`{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"enabled","type":"channel.follow","version":"2","cost":0,"condition":{"broadcaster_user_id":"1337","moderator_user_id":"1337"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"},"event":{"user_id":"1234","user_login":"cool_user","user_name":"Cool_User","broadcaster_user_id":"1337","broadcaster_user_login":"cooler_user","broadcaster_user_name":"Cooler_User","followed_at":"2020-07-15T18:16:11.17106713Z"}}`)},
	{"webhook_callback_verification", TwitchVerification, []byte("{\n  \"challenge\": \"pogchamp-kappa-360noscope-vohiyo\",\n  \"subscription\": {\n    \"id\": \"f1c2a387-161a-49f9-a165-0f21d7a4e1c4\",\n    \"status\": \"webhook_callback_verification_pending\",\n    \"type\": \"channel.follow\",\n    \"version\": \"2\",\n    \"cost\": 0,\n    \"condition\": {\"broadcaster_user_id\": \"12826\", \"moderator_user_id\": \"12826\"},\n    \"transport\": {\"method\": \"webhook\", \"callback\": \"https://example.com/webhooks/callback\"},\n    \"created_at\": \"2019-11-16T09:11:12.634234626Z\"\n  }\n}\n")},
	{"revocation", TwitchRevocation, []byte(`{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"authorization_revoked","type":"channel.follow","cost":0,"version":"2","condition":{"broadcaster_user_id":"12826","moderator_user_id":"12826"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T09:11:12.634234626Z"}}`)},
}

func mustNewTwitch(tb testing.TB, o Options) *Twitch {
	tb.Helper()
	return mustNew(tb, NewTwitch, o)
}

// twitchHex is the hex HMAC-SHA256 of id + ts + body, computed
// independently of the code under test.
func twitchHex(secret []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + ts))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// twitchHeaders builds a request from header values: one per element of
// each slice, none when it is empty.
func twitchHeaders(body []byte, ids, tss, sigs, types []string) Request {
	return jsonPost(body, map[string][]string{
		TwitchMessageIDHeader: ids, TwitchTimestampHeader: tss,
		TwitchSignatureHeader: sigs, TwitchTypeHeader: types,
	})
}

// twitchRequest is a message signed with secret.
func twitchRequest(body, secret []byte, id, ts, messageType string) Request {
	return twitchHeaders(body, []string{id}, []string{ts},
		[]string{"sha256=" + twitchHex(secret, id, ts, body)}, []string{messageType})
}

func TestTwitchVectors(t *testing.T) {
	s := mustNewTwitch(t, Options{})
	secret := []byte("s3cRe7")
	body := []byte(`{"challenge":"pogchamp-kappa-360noscope-vohiyo"}`)
	const sig = "sha256=4c0adcd82df4e7d4c4c1f02b22f9f8a67ca5e65298f568c834787af89857af0f"
	sent, err := time.Parse(time.RFC3339Nano, twitchDocTimestamp)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Verify", func(t *testing.T) {
		r := twitchHeaders(body, []string{twitchDocID}, []string{twitchDocTimestamp}, []string{sig}, []string{TwitchVerification})
		checkVerifyErr(t, verifyNoPanic(t, s, r, [][]byte{secret}, sent.Add(time.Second)), nil)
		checkVerifyErr(t, verifyNoPanic(t, s, r, [][]byte{secret}, sent.Add(11*time.Minute)), ErrTooOld)
	})
	t.Run("Sign", func(t *testing.T) {
		r := Request{Header: http.Header{TwitchMessageIDHeader: {twitchDocID}, TwitchTypeHeader: {TwitchVerification}}, Body: body}
		if err := s.Sign(&r, secret, sent); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(TwitchTimestampHeader); got != twitchDocTimestamp {
			t.Errorf("Sign timestamp: got %q, want %q", got, twitchDocTimestamp)
		}
		if got := r.Header.Get(TwitchSignatureHeader); got != sig {
			t.Errorf("Sign: got %q, want %q (openssl)", got, sig)
		}
		if got := r.Header.Get(TwitchTypeHeader); got != TwitchVerification {
			t.Errorf("Sign changed the message type to %q", got)
		}
	})
	t.Run("Sign defaults the type and needs an id", func(t *testing.T) {
		r := Request{Header: http.Header{TwitchMessageIDHeader: {"m1"}}, Body: body}
		if err := s.Sign(&r, secret, testNow); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(TwitchTypeHeader); got != TwitchNotification {
			t.Errorf("Sign type: got %q, want %q", got, TwitchNotification)
		}
		if err := s.Sign(&Request{Body: body}, secret, testNow); err == nil {
			t.Error("Sign without a message id: got nil, want an error")
		}
		if err := s.Sign(&r, nil, testNow); !errors.Is(err, ErrNoSecret) {
			t.Errorf("Sign with no key: got %v, want %v", err, ErrNoSecret)
		}
	})
}

func TestTwitchMessages(t *testing.T) {
	s := mustNewTwitch(t, Options{})
	for _, m := range twitchBodies {
		t.Run(m.name, func(t *testing.T) {
			r := twitchRequest(m.body, twitchSecret, twitchDocID, twitchTS, m.messageType)
			checkVerifyErr(t, verifyNoPanic(t, s, r, twitchSecrets, testNow), nil)

			got, err := identifyNoPanic(t, s, r)
			switch m.messageType {
			case TwitchVerification:
				checkErr(t, err, ErrInvalidPayload)
				reply, ok, err := s.Handshake(r, twitchSecrets)
				if err != nil || !ok || string(reply.Body) != "pogchamp-kappa-360noscope-vohiyo" || reply.ContentType != "text/plain" || reply.Status != http.StatusOK {
					t.Errorf("Handshake: got %+v, %t, %v; want 200 text/plain with the challenge", reply, ok, err)
				}
			default:
				if err != nil {
					t.Fatalf("Identify: %v", err)
				}
				want := Identity{ID: twitchDocID, Type: "channel.follow", Created: testNow, Attributes: map[string]string{"message_type": m.messageType}}
				if m.messageType == TwitchRevocation {
					want.Type = "revocation:channel.follow"
				}
				slackCheckIdentity(t, got, want)
				checkValidIdentity(t, got)
				if _, ok, err := s.Handshake(r, twitchSecrets); ok || err != nil {
					t.Errorf("Handshake: got %t, %v; want not a handshake", ok, err)
				}
			}

			checkFlipsRejected(t, m.name, s, r, twitchSecrets, testNow)
			// The id and the timestamp are signed too.
			changed := twitchHeaders(m.body, []string{twitchDocID + "0"}, r.Header.Values(TwitchTimestampHeader), r.Header.Values(TwitchSignatureHeader), nil)
			checkVerifyErr(t, verifyNoPanic(t, s, changed, twitchSecrets, testNow), ErrNoMatch)
			later := testNow.Add(time.Millisecond).UTC().Format(time.RFC3339Nano)
			changed = twitchHeaders(m.body, []string{twitchDocID}, []string{later}, r.Header.Values(TwitchSignatureHeader), nil)
			checkVerifyErr(t, verifyNoPanic(t, s, changed, twitchSecrets, testNow), ErrNoMatch)
		})
	}
}

// twitchCase is one Twitch input and the cause Verify must report.
type twitchCase struct {
	name           string
	ids, tss, sigs []string
	body           func([]byte) []byte
	secrets        [][]byte
	want           error
}

func twitchMalformedCases(body []byte) []twitchCase {
	const id = twitchDocID
	sig := twitchHex(twitchSecret, id, twitchTS, body)
	ok := "sha256=" + sig
	ids, tss := []string{id}, []string{twitchTS}
	at := func(name, ts string, want error) twitchCase {
		return twitchCase{name: name, ids: ids, tss: []string{ts}, sigs: []string{"sha256=" + twitchHex(twitchSecret, id, ts, body)}, want: want}
	}
	withSig := func(name, s string, want error) twitchCase {
		return twitchCase{name: name, ids: ids, tss: tss, sigs: []string{s}, want: want}
	}
	mac := func(msg string) string {
		m := hmac.New(sha256.New, twitchSecret)
		m.Write([]byte(msg))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	sha1mac := hmac.New(sha1.New, twitchSecret)
	sha1mac.Write([]byte(id + twitchTS))
	sha1mac.Write(body)
	sha1Hex := hex.EncodeToString(sha1mac.Sum(nil))
	bodyCase := func(name string, change func([]byte) []byte) twitchCase {
		return twitchCase{name: name, ids: ids, tss: tss, sigs: []string{ok}, body: change, want: ErrNoMatch}
	}

	return []twitchCase{
		// Presence.
		{name: "no headers", want: ErrNotSigned},
		{name: "signature missing", ids: ids, tss: tss, want: ErrNotSigned},
		{name: "signature empty", ids: ids, tss: tss, sigs: []string{""}, want: ErrNotSigned},
		{name: "two signatures", ids: ids, tss: tss, sigs: []string{ok, ok}, want: ErrMalformedHeader},
		{name: "message id missing", tss: tss, sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "message id empty", ids: []string{""}, tss: tss, sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "two message ids", ids: []string{id, id}, tss: tss, sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp missing", ids: ids, sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp empty", ids: ids, tss: []string{""}, sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "two timestamps", ids: ids, tss: []string{twitchTS, twitchTS}, sigs: []string{ok}, want: ErrMalformedHeader},

		// Timestamp.
		at("timestamp in unix seconds", testTS, ErrMalformedHeader),
		at("timestamp RFC 1123", testNow.UTC().Format(time.RFC1123), ErrMalformedHeader),
		at("timestamp without zone", "2024-07-26T00:40:00.5", ErrMalformedHeader),
		at("timestamp with a space for T", "2024-07-26 00:40:00Z", ErrMalformedHeader),
		at("timestamp leading space", " "+twitchTS, ErrMalformedHeader),
		at("timestamp trailing space", twitchTS+" ", ErrMalformedHeader),
		at("timestamp fullwidth digits", "２０２４-07-26T00:40:00Z", ErrMalformedHeader),
		at("timestamp arabic-indic digits", "٢٠٢٤-07-26T00:40:00Z", ErrMalformedHeader),
		at("timestamp month 13", "2024-13-26T00:40:00Z", ErrMalformedHeader),
		at("timestamp 41 bytes", "2024-07-26T00:40:00."+strings.Repeat("0", 20)+"Z", ErrMalformedHeader),
		at("timestamp year 0001", "0001-01-01T00:00:00Z", ErrTooOld),
		at("timestamp epoch", "1970-01-01T00:00:00Z", ErrTooOld),
		at("timestamp year 9999", "9999-12-31T23:59:59.999999999Z", ErrTooNew),
		at("timestamp 11 minutes old", testNow.Add(-11*time.Minute).UTC().Format(time.RFC3339Nano), ErrTooOld),
		at("timestamp with an offset is the same instant", testNow.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano), nil),
		at("timestamp without fraction", testNow.UTC().Format(time.RFC3339), nil),
		{name: "timestamp not the signed one", ids: ids, tss: []string{testNow.Add(time.Second).UTC().Format(time.RFC3339Nano)}, sigs: []string{ok}, want: ErrNoMatch},

		// Signature.
		withSig("no '='", "sha256"+sig, ErrMalformedHeader),
		withSig("empty algorithm", "="+sig, ErrMalformedHeader),
		withSig("algorithm sha1 (no downgrade)", "sha1="+sha1Hex, ErrNoMatch),
		withSig("algorithm SHA256 (case)", "SHA256="+sig, ErrNoMatch),
		withSig("v0 prefix", "v0="+sig, ErrNoMatch),
		withSig("value empty", "sha256=", ErrMalformedHeader),
		withSig("too short", "sha256="+sig[:62], ErrMalformedHeader),
		withSig("too long", ok+"00", ErrMalformedHeader),
		withSig("odd length", "sha256="+sig[:63], ErrMalformedHeader),
		withSig("non-hex", "sha256="+sig[:63]+"z", ErrMalformedHeader),
		withSig("base64", "sha256="+slackHexToBase64(sig), ErrMalformedHeader),
		withSig("SHA-1 digits under sha256=", "sha256="+sha1Hex, ErrMalformedHeader),
		withSig("uppercase hex is the same signature", "sha256="+strings.ToUpper(sig), nil),
		withSig("trailing space", ok+" ", ErrMalformedHeader),
		withSig("two joined by a comma", ok+","+ok, ErrMalformedHeader),
		withSig("signed without the id", "sha256="+mac(twitchTS), ErrNoMatch),
		withSig("signed with separators", "sha256="+mac(id+"."+twitchTS+"."), ErrNoMatch),
		withSig("signed over the body alone", "sha256="+mac(""), ErrNoMatch),
		withSig("wrong secret", "sha256="+twitchHex([]byte("wrong"), id, twitchTS, body), ErrNoMatch),
		withSig("header 1 MiB", ok+strings.Repeat("0", 1<<20), ErrMalformedHeader),
		{name: "no secrets", ids: ids, tss: tss, sigs: []string{ok}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "signature for another id", ids: []string{"other"}, tss: tss, sigs: []string{ok}, want: ErrNoMatch},

		// Body.
		bodyCase("body truncated", func(b []byte) []byte { return b[:len(b)-1] }),
		bodyCase("body with a newline appended", func(b []byte) []byte { return append(bytes.Clone(b), '\n') }),
		bodyCase("body empty", func([]byte) []byte { return nil }),
		bodyCase("body with the message id prepended", func(b []byte) []byte { return append([]byte(id), b...) }),
	}
}

func twitchMalformedRuns(tb testing.TB) []malformedRun {
	body := twitchBodies[0].body
	var cases []verifyCase
	for _, tc := range twitchMalformedCases(body) {
		r := twitchHeaders(changed(body, tc.body), tc.ids, tc.tss, tc.sigs, []string{TwitchNotification})
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, twitchSecrets), tc.want})
	}
	s := mustNewTwitch(tb, Options{})
	unsigned := twitchHeaders(body, []string{"befa7b53-d79d-478f-86b9-120f112b044e"}, nil, nil, []string{TwitchNotification})
	generic := genericMalformed(tb, "", malformedSpec{
		s:        s,
		r:        signed(tb, s, unsigned, twitchSecret, testNow),
		secrets:  twitchSecrets,
		sig:      signedField{header: TwitchSignatureHeader, prefix: "sha256="},
		enc:      encHex,
		versions: []string{"sha1=", "sha512=", "v1="},
		ts:       &signedField{header: TwitchTimestampHeader},
		tsFormat: func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		tsWant:   map[string]error{"0": ErrMalformedHeader}, // not RFC 3339
		id:       &signedField{header: TwitchMessageIDHeader},
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestTwitchVerifyMalformed(t *testing.T) { runMalformed(t, twitchMalformedRuns(t)) }

func TestTwitchRotation(t *testing.T) {
	body := twitchBodies[0].body
	both := [][]byte{twitchSecret, twitchSecretOld}
	req := func(signer []byte) Request {
		return twitchRequest(body, signer, twitchDocID, twitchTS, TwitchNotification)
	}
	tests := []verifyCase{
		{"two secrets, signed by current", req(twitchSecret), both, nil},
		{"two secrets, signed by previous", req(twitchSecretOld), both, nil},
		{"retired secret no longer accepted", req(twitchSecretOld), twitchSecrets, ErrNoMatch},
		{"empty secret skipped", req(twitchSecret), [][]byte{{}, twitchSecret}, nil},
		{"no secrets", req(twitchSecret), nil, ErrNoSecret},
		{"empty-key signature never matches", req(nil), [][]byte{{}, twitchSecret}, ErrNoMatch},
	}
	s := mustNewTwitch(t, Options{})
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestTwitchTolerance(t *testing.T) {
	body := twitchBodies[0].body
	cases := append(slackToleranceCases(TwitchDefaultTolerance),
		toleranceCase{"default is ten minutes, not five", 0, 9 * time.Minute, nil},
		toleranceCase{"sub-second precision counts", 0, TwitchDefaultTolerance + time.Millisecond, ErrTooOld},
	)
	runToleranceCases(t, twitchSecrets, cases, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		s := mustNewTwitch(t, Options{Tolerance: tolerance})
		return s, signed(t, s, Request{Header: http.Header{TwitchMessageIDHeader: {twitchDocID}}, Body: body}, twitchSecret, at)
	})
}

func TestNewTwitch(t *testing.T) { runOptionsCases(t, NewTwitch, slackOptionsCases) }

func TestTwitchHandshake(t *testing.T) {
	s := mustNewTwitch(t, Options{})
	verification := twitchBodies[1].body
	tests := []struct {
		name     string
		r        Request
		wantBody string // "" means no answer
		wantErr  error
	}{
		{name: "verification answered", r: twitchRequest(verification, twitchSecret, "m1", twitchTS, TwitchVerification), wantBody: "pogchamp-kappa-360noscope-vohiyo"},
		{name: "signed by the previous secret", r: twitchRequest(verification, twitchSecretOld, "m1", twitchTS, TwitchVerification), wantBody: "pogchamp-kappa-360noscope-vohiyo"},
		{name: "notification is not a handshake", r: twitchRequest(twitchBodies[0].body, twitchSecret, "m1", twitchTS, TwitchNotification)},
		{name: "challenge body under notification type is not a handshake", r: twitchRequest(verification, twitchSecret, "m1", twitchTS, TwitchNotification)},
		{name: "type header missing", r: twitchRequest(verification, twitchSecret, "m1", twitchTS, "")},
		{name: "unsigned verification", r: twitchHeaders(verification, []string{"m1"}, []string{twitchTS}, nil, []string{TwitchVerification}), wantErr: ErrNotSigned},
		{name: "verification under another secret", r: twitchRequest(verification, []byte("attacker"), "m1", twitchTS, TwitchVerification), wantErr: ErrNoMatch},
		{name: "challenge missing", r: twitchRequest([]byte(`{"subscription":{"type":"channel.follow"}}`), twitchSecret, "m1", twitchTS, TwitchVerification), wantErr: ErrInvalidPayload},
		{name: "challenge not a string", r: twitchRequest([]byte(`{"challenge":1}`), twitchSecret, "m1", twitchTS, TwitchVerification), wantErr: ErrInvalidPayload},
		{name: "body not JSON", r: twitchRequest([]byte(`challenge=x`), twitchSecret, "m1", twitchTS, TwitchVerification), wantErr: ErrInvalidPayload},
		{name: "expired verification is refused by Verify", r: twitchRequest(verification, twitchSecret, "m1", testNow.Add(-time.Hour).UTC().Format(time.RFC3339Nano), TwitchVerification), wantErr: ErrTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, ok, err := slackAnswer(s, tt.r, [][]byte{twitchSecret, twitchSecretOld}, testNow)
			checkErr(t, err, tt.wantErr)
			if ok != (tt.wantBody != "") || string(reply.Body) != tt.wantBody {
				t.Fatalf("answer: got %t %q, want %q", ok, reply.Body, tt.wantBody)
			}
			if ok && (reply.Status != http.StatusOK || reply.ContentType != "text/plain") {
				t.Errorf("answer: got %d %q, want 200 text/plain", reply.Status, reply.ContentType)
			}
		})
	}
}

// twitchIdentifyCases is shared with the fuzz test as seeds. A zero
// want.ID means ErrInvalidPayload.
var twitchIdentifyCases = []struct {
	name        string
	ids         []string
	messageType string
	retry       string
	body        string
	want        Identity
}{
	{name: "body empty", ids: []string{"m1"}, messageType: TwitchNotification, body: ``},
	{name: "body not JSON", ids: []string{"m1"}, messageType: TwitchNotification, body: `subscription=x`},
	{name: "subscription missing", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"event":{}}`},
	{name: "subscription not an object", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":"channel.follow","event":{}}`},
	{name: "subscription.type missing", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":{},"event":{}}`},
	{name: "subscription.type empty", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":{"type":""},"event":{}}`},
	{name: "subscription.type a number", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":{"type":1},"event":{}}`},
	{name: "subscription.type too long", ids: []string{"m1"}, messageType: TwitchRevocation, body: `{"subscription":{"type":"` + strings.Repeat("t", 510) + `"}}`},
	{name: "notification without event", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"}}`},
	{name: "notification with null event", ids: []string{"m1"}, messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"},"event":null}`},
	{name: "revocation with an event", ids: []string{"m1"}, messageType: TwitchRevocation, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "revocation with a challenge", ids: []string{"m1"}, messageType: TwitchRevocation, body: `{"subscription":{"type":"channel.follow"},"challenge":"x"}`},
	{name: "verification is a handshake", ids: []string{"m1"}, messageType: TwitchVerification, body: `{"subscription":{"type":"channel.follow"},"challenge":"x"}`},
	{name: "unknown message type", ids: []string{"m1"}, messageType: "notification ", body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "message type missing", ids: []string{"m1"}, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "message id missing", messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "two message ids", ids: []string{"m1", "m2"}, messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "message id 513 bytes", ids: []string{strings.Repeat("m", 513)}, messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},
	{name: "message id not UTF-8", ids: []string{"m\xff"}, messageType: TwitchNotification, body: `{"subscription":{"type":"channel.follow"},"event":{}}`},

	{
		name: "notification", ids: []string{"m1"}, messageType: TwitchNotification,
		body: `{"subscription":{"type":"channel.follow"},"event":{"user_id":"1"}}`,
		want: Identity{ID: "m1", Type: "channel.follow", Created: testNow, Attributes: map[string]string{"message_type": TwitchNotification}},
	},
	{
		name: "retry count is kept", ids: []string{"m1"}, messageType: TwitchNotification, retry: "2",
		body: `{"subscription":{"type":"channel.follow"},"event":{"user_id":"1"}}`,
		want: Identity{ID: "m1", Type: "channel.follow", Created: testNow, Attributes: map[string]string{"message_type": TwitchNotification, "message_retry": "2"}},
	},
	{
		name: "retry count that is not a number is dropped", ids: []string{"m1"}, messageType: TwitchNotification, retry: "two",
		body: `{"subscription":{"type":"channel.follow"},"event":{"user_id":"1"}}`,
		want: Identity{ID: "m1", Type: "channel.follow", Created: testNow, Attributes: map[string]string{"message_type": TwitchNotification}},
	},
	{
		name: "revocation", ids: []string{"m1"}, messageType: TwitchRevocation,
		body: `{"subscription":{"type":"channel.follow","status":"authorization_revoked"}}`,
		want: Identity{ID: "m1", Type: "revocation:channel.follow", Created: testNow, Attributes: map[string]string{"message_type": TwitchRevocation}},
	},
	{
		name: "message id of 512 bytes", ids: []string{strings.Repeat("m", 512)}, messageType: TwitchNotification,
		body: `{"subscription":{"type":"channel.follow"},"event":{}}`,
		want: Identity{ID: strings.Repeat("m", 512), Type: "channel.follow", Created: testNow, Attributes: map[string]string{"message_type": TwitchNotification}},
	},
}

func TestTwitchIdentify(t *testing.T) {
	s := mustNewTwitch(t, Options{})
	for _, tt := range twitchIdentifyCases {
		t.Run(tt.name, func(t *testing.T) {
			r := twitchHeaders([]byte(tt.body), tt.ids, []string{twitchTS}, nil, nil)
			if tt.messageType != "" {
				r.Header.Set(TwitchTypeHeader, tt.messageType)
			}
			if tt.retry != "" {
				r.Header.Set(TwitchRetryHeader, tt.retry)
			}
			got, err := identifyNoPanic(t, s, r)
			checkIdentity(t, got, err, tt.want)
			if err == nil {
				checkValidIdentity(t, got)
			}
		})
	}
}

func FuzzTwitchVerify(f *testing.F) {
	body := twitchBodies[0].body
	for _, m := range twitchBodies {
		f.Add(twitchDocID, twitchTS, "sha256="+sigCur, m.body)
	}
	f.Add("m", testNow.Add(-time.Minute).UTC().Format(time.RFC3339Nano), "sha256="+sigOld, body)
	for _, tc := range twitchMalformedCases(body) {
		b := changed(body, tc.body)
		id, ts := strings.Join(tc.ids, "\n"), strings.Join(tc.tss, "\n")
		sig := strings.Join(tc.sigs, "\n")
		if len(sig) > 8<<10 {
			continue
		}
		firstID, _, _ := strings.Cut(id, "\n")
		firstTS, _, _ := strings.Cut(ts, "\n")
		cur := twitchHex(twitchSecret, firstID, firstTS, b)
		sig = strings.NewReplacer(cur, sigCur, strings.ToUpper(cur), sigUpper, twitchHex(twitchSecretOld, firstID, firstTS, b), sigOld).Replace(sig)
		f.Add(id, ts, sig, b)
	}

	s := mustNewTwitch(f, Options{})
	secrets := [][]byte{twitchSecret, twitchSecretOld}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		firstID, _, _ := strings.Cut(id, "\n")
		firstTS, _, _ := strings.Cut(ts, "\n")
		cur := twitchHex(twitchSecret, firstID, firstTS, body)
		sig = strings.NewReplacer(sigCur, cur, sigOld, twitchHex(twitchSecretOld, firstID, firstTS, body), sigUpper, strings.ToUpper(cur)).Replace(sig)
		r := twitchHeaders(body, fuzzHeaders(id), fuzzHeaders(ts), fuzzHeaders(sig), []string{TwitchNotification})

		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		if strings.ContainsRune(id+ts+sig, '\n') {
			t.Fatalf("Verify(%q, %q, %q): accepted repeated headers", id, ts, sig)
		}
		at, perr := time.Parse(time.RFC3339Nano, ts)
		if perr != nil {
			t.Fatalf("Verify: accepted timestamp %q: %v", ts, perr)
		}
		if d := testNow.Sub(at); d > TwitchDefaultTolerance || d < -TwitchDefaultTolerance {
			t.Fatalf("Verify: accepted a timestamp %s away from now", d)
		}
		// Re-sign: over the raw headers, and with Sign when the timestamp
		// is in Sign's own format.
		for _, secret := range secrets {
			if !strings.EqualFold(sig, "sha256="+twitchHex(secret, id, ts, body)) {
				continue
			}
			if at.UTC().Format(time.RFC3339Nano) == ts {
				signed := Request{Header: http.Header{TwitchMessageIDHeader: {id}}, Body: body}
				if err := s.Sign(&signed, secret, at); err != nil {
					t.Fatal(err)
				}
				if !strings.EqualFold(signed.Header.Get(TwitchSignatureHeader), sig) {
					t.Fatalf("Sign: got %q, want %q", signed.Header.Get(TwitchSignatureHeader), sig)
				}
			}
			return
		}
		t.Fatalf("Verify(%q, %q, %q): got nil, but no secret reproduces the signature", id, ts, sig)
	})
}

func FuzzTwitchIdentify(f *testing.F) {
	for _, m := range twitchBodies {
		f.Add(m.messageType, "m1", m.body)
	}
	for _, tc := range twitchIdentifyCases {
		f.Add(tc.messageType, strings.Join(tc.ids, "\n"), []byte(tc.body))
	}
	s := mustNewTwitch(f, Options{})
	f.Fuzz(func(t *testing.T, messageType, id string, body []byte) {
		r := twitchHeaders(body, fuzzHeaders(id), []string{twitchTS}, nil, []string{messageType})
		fuzzIdentifyValid(t, s, r)
		// Handshake re-checks the (absent) signature: never an answer here.
		if _, ok, err := s.Handshake(r, twitchSecrets); ok || (err != nil && !isSentinel(err) && !errors.Is(err, ErrInvalidPayload)) {
			t.Fatalf("Handshake of an unsigned message: got %t, %v", ok, err)
		}
	})
}

func BenchmarkTwitch(b *testing.B) {
	body := twitchBodies[0].body
	r := twitchRequest(body, twitchSecret, twitchDocID, twitchTS, TwitchNotification)
	pre := []byte(twitchDocID + twitchTS)
	var sum [sha256.Size]byte
	benchScheme(b, mustNewTwitch(b, Options{}), r, twitchSecrets, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha256.New, twitchSecret)
		m.Write(pre)
		m.Write(body)
		m.Sum(sum[:0])
	})
}
