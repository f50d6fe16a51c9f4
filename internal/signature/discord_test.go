package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Deterministic test key pairs: the configured secret is the public key in
// hex, as Discord's developer portal shows it.
var (
	discordKey    = discordKeyFrom("discord test key, current")
	discordKeyOld = discordKeyFrom("discord test key, previous")
	discordPub    = discordPublicHex(discordKey)
	discordPubOld = discordPublicHex(discordKeyOld)
	discordPubs   = [][]byte{discordPub}
)

func discordKeyFrom(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func discordPublicHex(k ed25519.PrivateKey) []byte {
	return []byte(hex.EncodeToString(k.Public().(ed25519.PublicKey)))
}

// discordBodies are interactions in the shapes of Discord's interaction
// reference (the project has no Discord corpus). The command's id is the
// snowflake Discord's reference uses as its example (created 2016-04-30
// 11:18:25.796 UTC).
var discordBodies = []struct {
	name string
	body []byte
	want Identity // zero ID: a PING, refused by Identify
}{
	{"PING", []byte(`{"id":"1264288009117892608","application_id":"1136359014290182144","type":1,"token":"aW50ZXJhY3Rpb246MTI2NDI4ODAwOTExNzg5MjYwODp0b2tlbg","version":1,"user":{"id":"0","username":"discord"}}`), Identity{}},
	{"APPLICATION_COMMAND", []byte(`{"app_permissions":"442368","application_id":"775799577604522054","channel_id":"772908445358620702","data":{"id":"866818195033292850","name":"blep","options":[{"name":"animal","type":3,"value":"animal_dog"}],"type":1},"guild_id":"772904309264089089","guild_locale":"en-US","id":"175928847299117063","locale":"en-US","member":{"nick":null,"permissions":"2147483647","roles":[],"user":{"id":"53908232506183680","username":"Mason"}},"token":"A_UNIQUE_TOKEN","type":2,"version":1}`),
		Identity{ID: "175928847299117063", Type: "interaction:2", Created: time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)}},
	{"MESSAGE_COMPONENT", []byte("{\n  \"type\": 3,\n  \"id\": \"1264288009117892609\",\n  \"application_id\": \"775799577604522054\",\n  \"data\": {\"custom_id\": \"click_one\", \"component_type\": 2},\n  \"message\": {\"id\": \"1264287000000000000\", \"content\": \"Pick\"},\n  \"token\": \"A_UNIQUE_TOKEN\",\n  \"version\": 1\n}\n"),
		Identity{ID: "1264288009117892609", Type: "interaction:3", Created: time.UnixMilli(1264288009117892609>>22 + 1420070400000)}},
	{"MODAL_SUBMIT", []byte(`{"type":5,"id":"1264288009117892610","application_id":"775799577604522054","data":{"custom_id":"cool_modal","components":[{"type":1,"components":[{"type":4,"custom_id":"name","value":"Mason"}]}]},"token":"A_UNIQUE_TOKEN","version":1}`),
		Identity{ID: "1264288009117892610", Type: "interaction:5", Created: time.UnixMilli(1264288009117892610>>22 + 1420070400000)}},
}

func mustNewDiscord(tb testing.TB, o Options) *Discord {
	tb.Helper()
	return mustNew(tb, NewDiscord, o)
}

// discordHex is the hex Ed25519 signature of ts + body, computed with the
// standard library independently of the code under test.
func discordHex(key ed25519.PrivateKey, ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(key, append([]byte(ts), body...)))
}

// discordHeaders builds a request with one value per element of sigs and
// tss.
func discordHeaders(body []byte, sigs, tss []string) Request {
	return slackV0Request(DiscordSignatureHeader, DiscordTimestampHeader, body, sigs, tss)
}

// discordRequest is an interaction signed with key at ts.
func discordRequest(body []byte, key ed25519.PrivateKey, ts string) Request {
	return discordHeaders(body, []string{discordHex(key, ts, body)}, []string{ts})
}

// discordgoVerify runs discordgo's verifier on r.
func discordgoVerify(r Request, pubHex []byte) bool {
	pub, err := hex.DecodeString(string(pubHex))
	if err != nil {
		panic(err)
	}
	hr := &http.Request{Method: http.MethodPost, Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body))}
	return discordgo.VerifyInteraction(hr, ed25519.PublicKey(pub))
}

// TestDiscordCrossCheckDiscordgo checks the scheme against discordgo:
// discordgo accepts what Sign produces, and both verifiers agree on
// changed requests. discordgo cannot sign; standard-library signatures
// stand in for Discord's.
func TestDiscordCrossCheckDiscordgo(t *testing.T) {
	d := mustNewDiscord(t, Options{})
	for _, b := range discordBodies {
		t.Run(b.name, func(t *testing.T) {
			t.Run("discordgo verifies Sign", func(t *testing.T) {
				r := Request{Body: b.body}
				if err := d.Sign(&r, discordKey, testNow); err != nil {
					t.Fatal(err)
				}
				if !discordgoVerify(r, discordPub) {
					t.Error("discordgo.VerifyInteraction(Sign's request): got false, want true")
				}
				if got, want := r.Header.Get(DiscordSignatureHeader), discordHex(discordKey, testTS, b.body); got != want {
					t.Errorf("Sign: got %q, want %q (crypto/ed25519)", got, want)
				}
				if discordgoVerify(r, discordPubOld) {
					t.Error("discordgo.VerifyInteraction under another key: got true, want false")
				}
			})
			// discordgo ignores the timestamp's age, so every request here
			// is signed at testNow and judged against testNow.
			sig := discordHex(discordKey, testTS, b.body)
			for _, tc := range []struct {
				name string
				r    Request
			}{
				{"as signed", discordRequest(b.body, discordKey, testTS)},
				{"signed with seed-derived key", discordRequest(b.body, ed25519.NewKeyFromSeed(discordKey.Seed()), testTS)},
				{"body changed", discordHeaders(flipByte(b.body, len(b.body)/2), []string{sig}, []string{testTS})},
				{"timestamp changed", discordHeaders(b.body, []string{sig}, []string{strconv.FormatInt(testNow.Unix()+1, 10)})},
				{"signed by another key", discordRequest(b.body, discordKeyOld, testTS)},
				{"signature truncated", discordHeaders(b.body, []string{sig[:126]}, []string{testTS})},
				{"signature not hex", discordHeaders(b.body, []string{sig[:127] + "x"}, []string{testTS})},
				{"uppercase signature", discordHeaders(b.body, []string{strings.ToUpper(sig)}, []string{testTS})},
				{"no signature", discordHeaders(b.body, nil, []string{testTS})},
				{"no timestamp", discordHeaders(b.body, []string{sig}, nil)},
			} {
				t.Run("agree: "+tc.name, func(t *testing.T) {
					ours := verifyNoPanic(t, d, tc.r, discordPubs, testNow) == nil
					if theirs := discordgoVerify(tc.r, discordPub); ours != theirs {
						t.Errorf("Verify accepts: %t; discordgo accepts: %t", ours, theirs)
					}
				})
			}
		})
	}
}

func TestDiscordBodies(t *testing.T) {
	d := mustNewDiscord(t, Options{})
	for _, b := range discordBodies {
		t.Run(b.name, func(t *testing.T) {
			r := discordRequest(b.body, discordKey, testTS)
			checkVerifyErr(t, verifyNoPanic(t, d, r, discordPubs, testNow), nil)

			got, err := identifyNoPanic(t, d, r)
			if b.want.ID == "" {
				checkErr(t, err, ErrInvalidPayload)
			} else {
				if err != nil {
					t.Fatalf("Identify: %v", err)
				}
				slackCheckIdentity(t, got, b.want)
				checkValidIdentity(t, got)
			}

			reply, ok, err := d.Handshake(r, discordPubs)
			if err != nil {
				t.Fatalf("Handshake: %v", err)
			}
			if wantOK := b.name == "PING"; ok != wantOK {
				t.Errorf("Handshake: got ok %t, want %t", ok, wantOK)
			}
			if ok && (reply.Status != http.StatusOK || reply.ContentType != "application/json" || string(reply.Body) != `{"type":1}`) {
				t.Errorf("Handshake: got %d %q %q, want 200 application/json {\"type\":1}", reply.Status, reply.ContentType, reply.Body)
			}

			checkFlipsRejected(t, b.name, d, r, discordPubs, testNow)
		})
	}
}

// discordMalleable returns sig with L added to its S half: the same point
// equation holds, but RFC 8032 requires S < L, and so must Verify.
func discordMalleable(sigHex string) string {
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		panic(err)
	}
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	le := func(b []byte) *big.Int {
		r := make([]byte, len(b))
		for i := range b {
			r[len(b)-1-i] = b[i]
		}
		return new(big.Int).SetBytes(r)
	}
	s := new(big.Int).Add(le(sig[32:]), l)
	be := s.FillBytes(make([]byte, 32))
	for i := range 32 {
		sig[32+i] = be[31-i]
	}
	return hex.EncodeToString(sig)
}

// discordCase is one Discord input and the cause Verify must report.
type discordCase struct {
	name      string
	sigs, tss []string
	body      func([]byte) []byte
	secrets   [][]byte
	want      error
}

func discordMalformedCases(body []byte) []discordCase {
	sig := discordHex(discordKey, testTS, body)
	one := []string{testTS}
	at := func(name, ts string, want error) discordCase {
		return discordCase{name: name, sigs: []string{discordHex(discordKey, ts, body)}, tss: []string{ts}, want: want}
	}
	withSig := func(name, s string, want error) discordCase {
		return discordCase{name: name, sigs: []string{s}, tss: one, want: want}
	}
	withSecrets := func(name string, secrets [][]byte, want error) discordCase {
		return discordCase{name: name, sigs: []string{sig}, tss: one, secrets: secrets, want: want}
	}
	signedOver := func(msg []byte) string { return hex.EncodeToString(ed25519.Sign(discordKey, msg)) }
	bodyCase := func(name string, change func([]byte) []byte) discordCase {
		return discordCase{name: name, sigs: []string{sig}, tss: one, body: change, want: ErrNoMatch}
	}
	privHex := []byte(hex.EncodeToString(discordKey))
	rawPub := []byte(discordKey.Public().(ed25519.PublicKey))

	return []discordCase{
		// Presence.
		{name: "no headers", want: ErrNotSigned},
		{name: "signature missing", tss: one, want: ErrNotSigned},
		{name: "signature empty", sigs: []string{""}, tss: one, want: ErrNotSigned},
		{name: "two signatures", sigs: []string{sig, sig}, tss: one, want: ErrMalformedHeader},
		{name: "timestamp missing", sigs: []string{sig}, want: ErrMalformedHeader},
		{name: "timestamp empty", sigs: []string{sig}, tss: []string{""}, want: ErrMalformedHeader},
		{name: "two timestamps", sigs: []string{sig}, tss: []string{testTS, testTS}, want: ErrMalformedHeader},

		// Timestamp.
		at("timestamp abc", "abc", ErrMalformedHeader),
		at("timestamp negative", "-1", ErrMalformedHeader),
		at("timestamp leading zero", "0"+testTS, ErrMalformedHeader),
		at("timestamp fullwidth digits", "１７２１９５４４００", ErrMalformedHeader),
		at("timestamp arabic-indic digits", "١٧٢١٩٥٤٤٠٠", ErrMalformedHeader),
		at("timestamp leading space", " "+testTS, ErrMalformedHeader),
		at("timestamp decimal", testTS+".0", ErrMalformedHeader),
		at("timestamp RFC 3339", testNow.UTC().Format(time.RFC3339), ErrMalformedHeader),
		at("timestamp in milliseconds", testTS+"000", ErrMalformedHeader),
		at("timestamp overflows int64", "99999999999999999999", ErrMalformedHeader),
		at("timestamp zero", "0", ErrTooOld),
		at("timestamp six minutes old", strconv.FormatInt(testNow.Unix()-360, 10), ErrTooOld),
		at("timestamp far future", "99999999999", ErrTooNew),
		{name: "timestamp not the signed one", sigs: []string{sig}, tss: []string{strconv.FormatInt(testNow.Unix()-1, 10)}, want: ErrNoMatch},

		// Signature.
		withSig("too short", sig[:126], ErrMalformedHeader),
		withSig("too long", sig+"00", ErrMalformedHeader),
		withSig("odd length", sig[:127], ErrMalformedHeader),
		withSig("non-hex", sig[:127]+"g", ErrMalformedHeader),
		withSig("base64", slackHexToBase64(sig), ErrMalformedHeader),
		withSig("with a sha256= prefix", "sha256="+sig, ErrMalformedHeader),
		withSig("leading space", " "+sig, ErrMalformedHeader),
		withSig("uppercase hex is the same signature", strings.ToUpper(sig), nil),
		withSig("all zeros", strings.Repeat("0", 128), ErrNoMatch),
		withSig("S + L (malleated)", discordMalleable(sig), ErrNoMatch),
		withSig("signed over the body alone", signedOver(body), ErrNoMatch),
		withSig("signed with a separator", signedOver(append([]byte(testTS+"."), body...)), ErrNoMatch),
		withSig("signed by another key", discordHex(discordKeyOld, testTS, body), ErrNoMatch),
		withSig("header 1 MiB", sig+strings.Repeat("0", 1<<20), ErrMalformedHeader),

		// Configured keys.
		withSecrets("no keys", [][]byte{}, ErrNoSecret),
		withSecrets("empty key", [][]byte{{}}, ErrNoSecret),
		withSecrets("key not hex", [][]byte{[]byte(strings.Repeat("z", 64))}, ErrNoSecret),
		withSecrets("key as raw 32 bytes", [][]byte{rawPub}, ErrNoSecret),
		withSecrets("key 63 hex digits", [][]byte{discordPub[:63]}, ErrNoSecret),
		withSecrets("private key instead of public", [][]byte{privHex}, ErrNoSecret),
		withSecrets("uppercase key is the same key", [][]byte{bytes.ToUpper(discordPub)}, nil),
		withSecrets("bad key skipped, good one used", [][]byte{[]byte("nope"), discordPub}, nil),
		withSecrets("only another key", [][]byte{discordPubOld}, ErrNoMatch),

		// Body.
		bodyCase("body truncated", func(b []byte) []byte { return b[:len(b)-1] }),
		bodyCase("body with a newline appended", func(b []byte) []byte { return append(bytes.Clone(b), '\n') }),
		bodyCase("body empty", func([]byte) []byte { return nil }),
		bodyCase("timestamp moved into the body", func(b []byte) []byte { return append([]byte(testTS), b...) }),
	}
}

func discordMalformedRuns(tb testing.TB) []malformedRun {
	body := discordBodies[2].body
	var cases []verifyCase
	for _, tc := range discordMalformedCases(body) {
		r := discordHeaders(changed(body, tc.body), tc.sigs, tc.tss)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, discordPubs), tc.want})
	}
	d := mustNewDiscord(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       d,
		r:       signed(tb, d, jsonPost(body, nil), discordKey, testNow),
		secrets: discordPubs,
		wrong:   [][]byte{discordPubOld},
		sig:     signedField{header: DiscordSignatureHeader},
		enc:     encHex,
		ts:      &signedField{header: DiscordTimestampHeader},
	})
	return []malformedRun{{d, cases}, {d, generic}}
}

func TestDiscordVerifyMalformed(t *testing.T) { runMalformed(t, discordMalformedRuns(t)) }

func TestDiscordRotation(t *testing.T) {
	body := discordBodies[1].body
	both := [][]byte{discordPub, discordPubOld}
	req := func(signer ed25519.PrivateKey) Request { return discordRequest(body, signer, testTS) }
	tests := []verifyCase{
		{"two keys, signed by current", req(discordKey), both, nil},
		{"two keys, signed by previous", req(discordKeyOld), both, nil},
		{"two keys reversed", req(discordKey), [][]byte{discordPubOld, discordPub}, nil},
		{"retired key no longer accepted", req(discordKeyOld), discordPubs, ErrNoMatch},
		{"no keys", req(discordKey), nil, ErrNoSecret},
	}
	d := mustNewDiscord(t, Options{})
	runVerifyCases(t, d, testNow, 0, tests)
}

func TestDiscordTolerance(t *testing.T) {
	body := discordBodies[1].body
	runToleranceCases(t, discordPubs, slackToleranceCases(DefaultTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		d := mustNewDiscord(t, Options{Tolerance: tolerance})
		return d, signed(t, d, Request{Body: body}, discordKey, at)
	})
}

func TestNewDiscord(t *testing.T) { runOptionsCases(t, NewDiscord, slackOptionsCases) }

func TestDiscordSign(t *testing.T) {
	d := mustNewDiscord(t, Options{})
	body := discordBodies[1].body
	tests := []struct {
		name    string
		key     []byte
		now     time.Time
		wantErr error
	}{
		{"64-byte private key", discordKey, testNow, nil},
		{"32-byte seed", discordKey.Seed(), testNow, nil},
		{"empty key", nil, testNow, ErrNoSecret},
		{"hex public key is not a private key", discordPub[:40], testNow, ErrNoSecret},
		{"before 1970", discordKey, time.Unix(-1, 0), errDiscordAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Body: body}
			err := d.Sign(&r, tt.key, tt.now)
			if tt.wantErr == errDiscordAny {
				if err == nil {
					t.Fatal("got nil, want an error")
				}
				return
			}
			checkErr(t, err, tt.wantErr)
			if err == nil {
				checkVerifyErr(t, verifyNoPanic(t, d, r, discordPubs, testNow), nil)
			}
		})
	}
}

// errDiscordAny marks an expectation of some error, whichever.
var errDiscordAny = errors.New("any error")

func TestDiscordHandshake(t *testing.T) {
	d := mustNewDiscord(t, Options{})
	ping := discordBodies[0].body
	tests := []struct {
		name     string
		r        Request
		wantBody string // "" means no answer
		wantErr  error
	}{
		{name: "PING answered", r: discordRequest(ping, discordKey, testTS), wantBody: `{"type":1}`},
		{name: "minimal PING answered", r: discordRequest([]byte(`{"type":1}`), discordKey, testTS), wantBody: `{"type":1}`},
		{name: "PING signed by the previous key", r: discordRequest(ping, discordKeyOld, testTS), wantBody: `{"type":1}`},
		{name: "command is not a handshake", r: discordRequest(discordBodies[1].body, discordKey, testTS)},
		{name: "type as a string is not a handshake", r: discordRequest([]byte(`{"type":"1"}`), discordKey, testTS)},
		{name: "type 1.0 is not a handshake", r: discordRequest([]byte(`{"type":1.0}`), discordKey, testTS)},
		{name: "nested type is not a handshake", r: discordRequest([]byte(`{"data":{"type":1},"type":2,"id":"1"}`), discordKey, testTS)},
		{name: "not JSON is not a handshake", r: discordRequest([]byte(`type=1`), discordKey, testTS)},
		{name: "unsigned PING", r: discordHeaders(ping, nil, []string{testTS}), wantErr: ErrNotSigned},
		{name: "PING under an unknown key", r: discordRequest(ping, discordKeyFrom("attacker"), testTS), wantErr: ErrNoMatch},
		{name: "PING with a malformed signature", r: discordHeaders(ping, []string{"00"}, []string{testTS}), wantErr: ErrMalformedHeader},
		{name: "expired PING is refused by Verify", r: discordRequest(ping, discordKey, strconv.FormatInt(testNow.Unix()-3600, 10)), wantErr: ErrTooOld},
	}
	secrets := [][]byte{discordPub, discordPubOld}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, ok, err := slackAnswer(d, tt.r, secrets, testNow)
			checkErr(t, err, tt.wantErr)
			if ok != (tt.wantBody != "") || string(reply.Body) != tt.wantBody {
				t.Fatalf("answer: got %t %q, want %q", ok, reply.Body, tt.wantBody)
			}
			if ok && (reply.Status != http.StatusOK || reply.ContentType != "application/json") {
				t.Errorf("answer: got %d %q, want 200 application/json", reply.Status, reply.ContentType)
			}
		})
	}
	t.Run("Handshake alone re-checks the signature", func(t *testing.T) {
		_, ok, err := d.Handshake(discordRequest(ping, discordKeyFrom("attacker"), testTS), secrets)
		if ok || !errors.Is(err, ErrNoMatch) {
			t.Errorf("Handshake: got %t, %v; want false, %v", ok, err, ErrNoMatch)
		}
	})
	t.Run("the reply body is the caller's to keep", func(t *testing.T) {
		reply, _, _ := d.Handshake(discordRequest(ping, discordKey, testTS), secrets)
		reply.Body[0] = 'x'
		again, _, _ := d.Handshake(discordRequest(ping, discordKey, testTS), secrets)
		if string(again.Body) != `{"type":1}` {
			t.Errorf("second reply: got %q", again.Body)
		}
	})
}

// discordIdentifyCases is shared with the fuzz test as seeds. A zero
// want.ID means ErrInvalidPayload.
var discordIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "not JSON", body: `id=1&type=2`},
	{name: "array", body: `[{"id":"1","type":2}]`},
	{name: "PING", body: `{"id":"1","type":1}`},
	{name: "type missing", body: `{"id":"1"}`},
	{name: "type zero", body: `{"id":"1","type":0}`},
	{name: "type negative", body: `{"id":"1","type":-2}`},
	{name: "type a string", body: `{"id":"1","type":"2"}`},
	{name: "type float", body: `{"id":"1","type":2.5}`},
	{name: "type huge", body: `{"id":"1","type":99999999999999999999}`},
	{name: "type 1001", body: `{"id":"1","type":1001}`},
	{name: "id missing", body: `{"type":2}`},
	{name: "id empty", body: `{"id":"","type":2}`},
	{name: "id a number", body: `{"id":175928847299117063,"type":2}`},
	{name: "id 513 bytes", body: `{"id":"` + strings.Repeat("1", 513) + `","type":2}`},
	{name: "id not UTF-8", body: "{\"id\":\"\xff\",\"type\":2}"},

	{name: "command", body: `{"id":"175928847299117063","type":2}`, want: Identity{ID: "175928847299117063", Type: "interaction:2", Created: time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)}},
	{name: "autocomplete", body: `{"type":4,"id":"175928847299117063"}`, want: Identity{ID: "175928847299117063", Type: "interaction:4", Created: time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)}},
	{name: "future type number is kept", body: `{"id":"175928847299117063","type":9}`, want: Identity{ID: "175928847299117063", Type: "interaction:9", Created: time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)}},
	{name: "id that is not a snowflake has no Created", body: `{"id":"abc","type":2}`, want: Identity{ID: "abc", Type: "interaction:2"}},
	{name: "nested id is not the interaction's", body: `{"data":{"id":"9"},"id":"175928847299117063","type":2}`, want: Identity{ID: "175928847299117063", Type: "interaction:2", Created: time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)}},
}

func TestDiscordIdentify(t *testing.T) {
	runIdentifyCases(t, mustNewDiscord(t, Options{}), discordIdentifyCases, func(body []byte) Request {
		return Request{Header: http.Header{}, Body: body}
	})
}

func FuzzDiscordVerify(f *testing.F) {
	for _, b := range discordBodies {
		f.Add(sigCur, testTS, b.body)
	}
	body := discordBodies[2].body
	f.Add(sigOld, strconv.FormatInt(testNow.Unix()-60, 10), body)
	for _, tc := range discordMalformedCases(body) {
		if tc.secrets != nil {
			continue // the fuzz target fixes the keys
		}
		b := changed(body, tc.body)
		sig, ts := strings.Join(tc.sigs, "\n"), strings.Join(tc.tss, "\n")
		if len(sig) > 8<<10 {
			continue
		}
		first, _, _ := strings.Cut(ts, "\n")
		cur := discordHex(discordKey, first, b)
		sig = strings.NewReplacer(cur, sigCur, strings.ToUpper(cur), sigUpper, discordHex(discordKeyOld, first, b), sigOld).Replace(sig)
		f.Add(sig, ts, b)
	}

	d := mustNewDiscord(f, Options{})
	secrets := [][]byte{discordPub, discordPubOld}
	keys := []ed25519.PrivateKey{discordKey, discordKeyOld}
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		if strings.Contains(sig, "{") {
			first, _, _ := strings.Cut(ts, "\n")
			cur := discordHex(discordKey, first, body)
			sig = strings.NewReplacer(sigCur, cur, sigOld, discordHex(discordKeyOld, first, body), sigUpper, strings.ToUpper(cur)).Replace(sig)
		}
		r := discordHeaders(body, fuzzHeaders(sig), fuzzHeaders(ts))
		if !fuzzVerify(t, d, r, secrets, testNow) {
			return
		}
		if strings.Contains(sig, "\n") || strings.Contains(ts, "\n") {
			t.Fatalf("Verify(%q, %q): accepted repeated headers", sig, ts)
		}
		at := acceptedUnix(t, ts)
		for _, k := range keys {
			signed := Request{Body: body}
			if err := d.Sign(&signed, k, at); err != nil {
				t.Fatal(err)
			}
			if strings.EqualFold(signed.Header.Get(DiscordSignatureHeader), sig) {
				return
			}
		}
		t.Fatalf("Verify(%q, %q): got nil, but Sign reproduces neither key's signature", sig, ts)
	})
}

func FuzzDiscordIdentify(f *testing.F) {
	for _, b := range discordBodies {
		f.Add(b.body)
	}
	for _, tc := range discordIdentifyCases {
		f.Add([]byte(tc.body))
	}
	d := mustNewDiscord(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := discordRequest(body, discordKey, testTS)
		fuzzIdentifyValid(t, d, r)
		reply, ok, err := d.Handshake(r, discordPubs)
		if err != nil {
			t.Fatalf("Handshake of a signed body: %v", err)
		}
		if ok && string(reply.Body) != `{"type":1}` {
			t.Fatalf("Handshake(%q): got %q", body, reply.Body)
		}
	})
}

func BenchmarkDiscord(b *testing.B) {
	body := discordBodies[1].body
	d := mustNewDiscord(b, Options{})
	r := discordRequest(body, discordKey, testTS)
	if !discordgoVerify(r, discordPub) {
		b.Fatal("discordgo rejects the request")
	}
	pub := discordKey.Public().(ed25519.PublicKey)
	msg := append([]byte(testTS), body...)
	sig, _ := hex.DecodeString(r.Header.Get(DiscordSignatureHeader))

	// The bare primitive is ed25519.Verify over the same bytes.
	benchScheme(b, d, r, discordPubs, testNow, "bare-ed25519", func(b *testing.B) {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("ed25519.Verify: false")
		}
	})
	benchRun(b, "discordgo/VerifyInteraction", len(body), func(b *testing.B) {
		hr := &http.Request{Method: http.MethodPost, Header: r.Header, Body: io.NopCloser(bytes.NewReader(body))}
		if !discordgo.VerifyInteraction(hr, pub) {
			b.Fatal("discordgo.VerifyInteraction: false")
		}
	})
}
