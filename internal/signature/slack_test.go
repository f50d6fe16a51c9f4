package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// slackCorpusDir is the project's copy of the Slack corpus (see
// testdata/corpus/README.md).
const slackCorpusDir = "../../testdata/corpus/slack"

var (
	slackSecret    = []byte("slack_test_current_8f742231b10e8888")
	slackSecretOld = []byte("slack_test_previous_0c1d2e3f4a5b6c7d")
	slackSecrets   = [][]byte{slackSecret}
)

// slackVector is signature-vector.json: python-slack-sdk's signing vector.
type slackVector struct {
	Secret    string `json:"signing_secret"`
	Timestamp string `json:"timestamp"`
	Body      string `json:"body"`
	Signature string `json:"valid_signature"`
}

func loadSlackVector(tb testing.TB) slackVector {
	tb.Helper()
	var v slackVector
	if err := json.Unmarshal(mustReadFile(tb, filepath.Join(slackCorpusDir, "signature-vector.json")), &v); err != nil {
		tb.Fatal(err)
	}
	if v.Secret == "" || v.Timestamp == "" || v.Body == "" || v.Signature == "" {
		tb.Fatalf("signature-vector.json: got %+v, want every field set", v)
	}
	return v
}

// loadSlackCorpus returns the corpus payloads (not the signing vector),
// sorted by name.
func loadSlackCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	out := loadCorpus(tb, slackCorpusDir, "signature-vector.json", 8)
	if len(out) != 8 {
		tb.Fatalf("slack corpus: got %d payloads in %s, want 8", len(out), slackCorpusDir)
	}
	return out
}

// slackMessage is the body most single-payload tests sign.
func slackMessage(tb testing.TB) []byte {
	tb.Helper()
	return mustReadFile(tb, filepath.Join(slackCorpusDir, "message.channels.json"))
}

func mustNewSlack(tb testing.TB, o Options) *Slack {
	tb.Helper()
	return mustNew(tb, NewSlack, o)
}

// slackV0Hex is the hex HMAC-SHA256 of "v0:<ts>:<body>", computed independently
// of the code under test (Slack's and Zoom's signed string).
func slackV0Hex(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// slackV0Request builds a POST with one value per element of sigs and tss under
// the given header names (none when a slice is empty).
func slackV0Request(sigHeader, tsHeader string, body []byte, sigs, tss []string) Request {
	return jsonPost(body, map[string][]string{sigHeader: sigs, tsHeader: tss})
}

// slackRequest is a Slack request signed with secret at ts.
func slackRequest(body, secret []byte, ts string) Request {
	return slackV0Request(SlackSignatureHeader, SlackTimestampHeader, body,
		[]string{"v0=" + slackV0Hex(secret, ts, body)}, []string{ts})
}

// slackCheckIdentity compares the fields a dedupe key and a handler rely on.
func slackCheckIdentity(tb testing.TB, got, want Identity) {
	tb.Helper()
	if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) {
		tb.Errorf("Identify: got {ID:%q Type:%q Created:%v}, want {ID:%q Type:%q Created:%v}",
			got.ID, got.Type, got.Created, want.ID, want.Type, want.Created)
	}
	if !reflect.DeepEqual(got.Attributes, want.Attributes) {
		tb.Errorf("Identify attributes: got %v, want %v", got.Attributes, want.Attributes)
	}
}

// slackWantIdentity decodes body with encoding/json, independently of the
// code under test; ok is false when Identify must refuse it.
func slackWantIdentity(tb testing.TB, body []byte) (Identity, bool) {
	tb.Helper()
	var m struct {
		Type              string          `json:"type"`
		EventID           string          `json:"event_id"`
		EventTime         int64           `json:"event_time"`
		TeamID            string          `json:"team_id"`
		MinuteRateLimited int64           `json:"minute_rate_limited"`
		Event             json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	switch {
	case m.Type == "app_rate_limited":
		return Identity{
			ID:      "app_rate_limited:" + m.TeamID + ":" + strconv.FormatInt(m.MinuteRateLimited, 10),
			Type:    m.Type,
			Created: time.Unix(m.MinuteRateLimited, 0),
		}, true
	case m.EventID == "":
		return Identity{}, false
	}
	var inner struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(m.Event, &inner); err != nil {
		tb.Fatal(err)
	}
	return Identity{ID: m.EventID, Type: inner.Type, Created: time.Unix(m.EventTime, 0)}, true
}

// TestSlackSignatureVector verifies python-slack-sdk's published vector
// exactly, at its own fixed clock.
func TestSlackSignatureVector(t *testing.T) {
	v := loadSlackVector(t)
	sec, err := strconv.ParseInt(v.Timestamp, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(sec, 0)
	body := []byte(v.Body)
	secrets := [][]byte{[]byte(v.Secret)}
	s := mustNewSlack(t, Options{})
	req := func(sig string, b []byte) Request {
		return slackV0Request(SlackSignatureHeader, SlackTimestampHeader, b, []string{sig}, []string{v.Timestamp})
	}

	t.Run("verifies", func(t *testing.T) {
		checkVerifyErr(t, verifyNoPanic(t, s, req(v.Signature, body), secrets, now), nil)
	})
	t.Run("Sign reproduces the signature", func(t *testing.T) {
		r := Request{Body: body}
		if err := s.Sign(&r, []byte(v.Secret), now); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(SlackSignatureHeader); got != v.Signature {
			t.Errorf("Sign: got %q, want %q (python-slack-sdk)", got, v.Signature)
		}
		if got := r.Header.Get(SlackTimestampHeader); got != v.Timestamp {
			t.Errorf("Sign timestamp: got %q, want %q", got, v.Timestamp)
		}
	})
	t.Run("independent HMAC agrees", func(t *testing.T) {
		if got := "v0=" + slackV0Hex([]byte(v.Secret), v.Timestamp, body); got != v.Signature {
			t.Errorf("got %q, want %q", got, v.Signature)
		}
	})
	for _, tc := range []struct {
		name    string
		r       Request
		secrets [][]byte
		now     time.Time
		want    error
	}{
		{"wrong secret", req(v.Signature, body), [][]byte{[]byte(v.Secret + "x")}, now, ErrNoMatch},
		{"body changed", req(v.Signature, flipByte(body, len(body)-1)), secrets, now, ErrNoMatch},
		{"five minutes later", req(v.Signature, body), secrets, now.Add(5 * time.Minute), nil},
		{"five minutes and a second later", req(v.Signature, body), secrets, now.Add(5*time.Minute + time.Second), ErrTooOld},
		{"five minutes and a second earlier", req(v.Signature, body), secrets, now.Add(-5*time.Minute - time.Second), ErrTooNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkVerifyErr(t, verifyNoPanic(t, s, tc.r, tc.secrets, tc.now), tc.want)
		})
	}
	t.Run("identity of the slash command", func(t *testing.T) {
		got, err := identifyNoPanic(t, s, req(v.Signature, body))
		if err != nil {
			t.Fatalf("Identify: %v", err)
		}
		q, err := url.ParseQuery(v.Body)
		if err != nil {
			t.Fatal(err)
		}
		slackCheckIdentity(t, got, Identity{ID: q.Get("trigger_id"), Type: q.Get("command")})
		if got.Type != "/webhook-collect" {
			t.Errorf("Identify type: got %q, want %q", got.Type, "/webhook-collect")
		}
	})
}

// slackGoSign has slack-go compute a signature. slack-go exposes no signer,
// but NewSecretsVerifier keys an HMAC with the secret and "v0:<ts>:", and
// Write feeds it the body; the sum is read from the verifier's unexported
// hash, so the bytes are slack-go's own. The header it starts from carries
// a placeholder signature, which slack-go only stores. slack-go reads the
// clock itself, so ts must be near time.Now.
func slackGoSign(tb testing.TB, secret []byte, ts string, body []byte) string {
	tb.Helper()
	h := http.Header{}
	h.Set(SlackTimestampHeader, ts)
	h.Set(SlackSignatureHeader, "v0="+strings.Repeat("00", sha256.Size))
	sv, err := slack.NewSecretsVerifier(h, string(secret))
	if err != nil {
		tb.Fatalf("slack.NewSecretsVerifier: %v", err)
	}
	if _, err := sv.Write(body); err != nil {
		tb.Fatal(err)
	}
	f := reflect.ValueOf(&sv).Elem().FieldByName("hmac")
	if !f.IsValid() || !f.Type().Implements(reflect.TypeFor[hash.Hash]()) {
		tb.Fatalf("slack.SecretsVerifier has no hmac hash.Hash field any more; update slackGoSign")
	}
	mac := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(hash.Hash)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// slackGoVerify runs slack-go's verifier over a request's headers and body.
func slackGoVerify(h http.Header, secret, body []byte) error {
	sv, err := slack.NewSecretsVerifier(h, string(secret))
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}

// TestSlackCrossCheckSlackGo checks the scheme against slack-go in both
// directions, and Identify against slack-go's parsers.
func TestSlackCrossCheckSlackGo(t *testing.T) {
	s := mustNewSlack(t, Options{})
	files := append(loadSlackCorpus(t), corpusFile{name: "signature-vector body", body: []byte(loadSlackVector(t).Body)})
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			// slack-go reads the clock itself, so both sides use the real time.
			now := time.Now()
			ts := strconv.FormatInt(now.Unix(), 10)

			t.Run("slack-go signs", func(t *testing.T) {
				sig := slackGoSign(t, slackSecret, ts, f.body)
				r := slackV0Request(SlackSignatureHeader, SlackTimestampHeader, f.body, []string{sig}, []string{ts})
				checkVerifyErr(t, verifyNoPanic(t, s, r, slackSecrets, now), nil)
				if err := slackGoVerify(r.Header, slackSecret, f.body); err != nil {
					t.Errorf("slack-go rejects its own signature %q: %v (extraction broken)", sig, err)
				}
				checkVerifyErr(t, verifyNoPanic(t, s, r, [][]byte{slackSecretOld}, now), ErrNoMatch)
			})
			t.Run("slack-go verifies", func(t *testing.T) {
				r := Request{Body: f.body}
				if err := s.Sign(&r, slackSecret, now); err != nil {
					t.Fatal(err)
				}
				if err := slackGoVerify(r.Header, slackSecret, f.body); err != nil {
					t.Errorf("slack-go verify of Sign's headers: got %v, want nil", err)
				}
				err := slackGoVerify(r.Header, slackSecret, flipByte(f.body, len(f.body)/2))
				if !errors.Is(err, slack.ErrInvalidSignature) {
					t.Errorf("slack-go verify of a changed body: got %v, want %v", err, slack.ErrInvalidSignature)
				}
				err = slackGoVerify(r.Header, slackSecretOld, f.body)
				if !errors.Is(err, slack.ErrInvalidSignature) {
					t.Errorf("slack-go verify with another secret: got %v, want %v", err, slack.ErrInvalidSignature)
				}
			})
			t.Run("identity matches slack-go", func(t *testing.T) {
				r := slackRequest(f.body, slackSecret, testTS)
				got, gotErr := identifyNoPanic(t, s, r)
				if !slackIsJSON(f.body) {
					hr, err := http.NewRequest(http.MethodPost, "https://example.test/", bytes.NewReader(f.body))
					if err != nil {
						t.Fatal(err)
					}
					hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					sc, err := slack.SlashCommandParse(hr)
					if err != nil {
						t.Fatal(err)
					}
					if gotErr != nil {
						t.Fatalf("Identify: %v", gotErr)
					}
					slackCheckIdentity(t, got, Identity{ID: sc.TriggerID, Type: sc.Command})
					return
				}
				ev, err := slackevents.ParseEvent(json.RawMessage(f.body), slackevents.OptionNoVerifyToken())
				if err != nil {
					t.Fatalf("slackevents.ParseEvent: %v", err)
				}
				switch d := ev.Data.(type) {
				case *slackevents.EventsAPICallbackEvent:
					if d.EventID == "" {
						checkErr(t, gotErr, ErrInvalidPayload)
						return
					}
					if gotErr != nil {
						t.Fatalf("Identify: %v", gotErr)
					}
					slackCheckIdentity(t, got, Identity{ID: d.EventID, Type: ev.InnerEvent.Type, Created: time.Unix(int64(d.EventTime), 0)})
				case *slackevents.EventsAPIAppRateLimited:
					if gotErr != nil {
						t.Fatalf("Identify: %v", gotErr)
					}
					slackCheckIdentity(t, got, Identity{
						ID:      "app_rate_limited:" + d.TeamID + ":" + strconv.Itoa(d.MinuteRateLimited),
						Type:    slackevents.AppRateLimited,
						Created: time.Unix(int64(d.MinuteRateLimited), 0),
					})
				case *slackevents.EventsAPIURLVerificationEvent:
					checkErr(t, gotErr, ErrInvalidPayload)
					reply, ok, err := s.Handshake(r, slackSecrets)
					if err != nil || !ok || string(reply.Body) != d.Challenge {
						t.Errorf("Handshake: got %q, %t, %v; want challenge %q (slack-go)", reply.Body, ok, err, d.Challenge)
					}
				default:
					t.Fatalf("slackevents.ParseEvent: unexpected data %T", ev.Data)
				}
			})
		})
	}
}

func TestSlackCorpus(t *testing.T) {
	s := mustNewSlack(t, Options{})
	for _, f := range loadSlackCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			r := slackRequest(f.body, slackSecret, testTS)
			checkVerifyErr(t, verifyNoPanic(t, s, r, slackSecrets, testNow), nil)

			want, ok := slackWantIdentity(t, f.body)
			got, err := identifyNoPanic(t, s, r)
			if !ok {
				checkErr(t, err, ErrInvalidPayload)
			} else {
				if err != nil {
					t.Fatalf("Identify: %v", err)
				}
				slackCheckIdentity(t, got, want)
				checkValidIdentity(t, got)
			}

			reply, isHandshake, err := s.Handshake(r, slackSecrets)
			if err != nil {
				t.Fatalf("Handshake: %v", err)
			}
			if wantHS := strings.HasPrefix(f.name, "url_verification"); isHandshake != wantHS {
				t.Errorf("Handshake: got ok %t, want %t", isHandshake, wantHS)
			}
			if isHandshake {
				var m struct{ Challenge string }
				if err := json.Unmarshal(f.body, &m); err != nil {
					t.Fatal(err)
				}
				if reply.Status != http.StatusOK || reply.ContentType != "text/plain" || string(reply.Body) != m.Challenge {
					t.Errorf("Handshake: got %d %q %q, want 200 text/plain %q", reply.Status, reply.ContentType, reply.Body, m.Challenge)
				}
			}

			checkFlipsRejected(t, f.name, s, r, slackSecrets, testNow)
		})
	}
	t.Run("the two app_mention captures share one event id", func(t *testing.T) {
		var ids []string
		for _, name := range []string{"app_mention.json", "app_mention.assistant_thread.json"} {
			got, err := s.Identify(slackRequest(mustReadFile(t, filepath.Join(slackCorpusDir, name)), slackSecret, testTS))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got.ID)
		}
		if ids[0] != ids[1] || ids[0] != "Ev08MFMKH6" {
			t.Errorf("got ids %q, want both %q", ids, "Ev08MFMKH6")
		}
	})
}

// slackV0Case is one v0-scheme input (Slack's and Zoom's) and the cause Verify
// must report.
type slackV0Case struct {
	name    string
	sigs    []string            // signature header values
	tss     []string            // timestamp header values
	body    func([]byte) []byte // changes the signed body; nil keeps it
	secrets [][]byte            // nil means the scheme's test secrets
	want    error
}

// slackV0MalformedCases builds the table of bad (and a few surprising but
// valid) v0 headers for body, signed with secret at testNow. Slack's and
// Zoom's tests and fuzz targets share it.
func slackV0MalformedCases(body, secret []byte) []slackV0Case {
	sig := slackV0Hex(secret, testTS, body)
	ok := "v0=" + sig
	at := func(ts string) slackV0Case {
		return slackV0Case{sigs: []string{"v0=" + slackV0Hex(secret, ts, body)}, tss: []string{ts}}
	}
	with := func(c slackV0Case, name string, want error) slackV0Case {
		c.name, c.want = name, want
		return c
	}
	one := []string{testTS}
	mac := func(h func() hash.Hash, msg string) string {
		m := hmac.New(h, secret)
		m.Write([]byte(msg))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	sha1Hex := mac(func() hash.Hash { return slackMustHash("sha1") }, "v0:"+testTS+":")
	sha512Hex := mac(func() hash.Hash { return slackMustHash("sha512") }, "v0:"+testTS+":")
	appendByte := func(c byte) func([]byte) []byte {
		return func(b []byte) []byte { return append(bytes.Clone(b), c) }
	}

	return []slackV0Case{
		// Presence.
		{name: "no headers", want: ErrNotSigned},
		{name: "signature missing", tss: one, want: ErrNotSigned},
		{name: "signature empty", sigs: []string{""}, tss: one, want: ErrNotSigned},
		{name: "signature blank", sigs: []string{"  "}, tss: one, want: ErrNotSigned},
		{name: "two signature headers", sigs: []string{ok, ok}, tss: one, want: ErrMalformedHeader},
		{name: "timestamp missing", sigs: []string{ok}, want: ErrMalformedHeader},
		{name: "timestamp empty", sigs: []string{ok}, tss: []string{""}, want: ErrMalformedHeader},
		{name: "two timestamp headers", sigs: []string{ok}, tss: []string{testTS, testTS}, want: ErrMalformedHeader},

		// Timestamp.
		with(at("abc"), "timestamp abc", ErrMalformedHeader),
		with(at("-1"), "timestamp negative", ErrMalformedHeader),
		with(at("+"+testTS), "timestamp with plus sign", ErrMalformedHeader),
		with(at("0"+testTS), "timestamp leading zero", ErrMalformedHeader),
		with(at("١٧٢١٩٥٤٤٠٠"), "timestamp arabic-indic digits", ErrMalformedHeader),
		with(at("１７２１９５４４００"), "timestamp fullwidth digits", ErrMalformedHeader),
		with(at(" "+testTS), "timestamp leading space", ErrMalformedHeader),
		with(at(testTS+" "), "timestamp trailing space", ErrMalformedHeader),
		with(at(testTS+".5"), "timestamp decimal", ErrMalformedHeader),
		with(at("1.7e9"), "timestamp exponent", ErrMalformedHeader),
		with(at(testTS+"000"), "timestamp in milliseconds", ErrMalformedHeader),
		with(at("99999999999999999999"), "timestamp overflows int64", ErrMalformedHeader),
		with(at(testTS+"\x00"), "timestamp with NUL", ErrMalformedHeader),
		with(at("0"), "timestamp zero", ErrTooOld),
		with(at("1000000000"), "timestamp in 2001", ErrTooOld),
		with(at("99999999999"), "timestamp far future", ErrTooNew),
		with(at("999999999999"), "timestamp twelve nines", ErrTooNew),
		{name: "timestamp not the signed one", sigs: []string{ok}, tss: []string{strconv.FormatInt(testNow.Unix()+1, 10)}, want: ErrNoMatch},

		// Signature.
		{name: "no '='", sigs: []string{"v0" + sig}, tss: one, want: ErrMalformedHeader},
		{name: "empty version", sigs: []string{"=" + sig}, tss: one, want: ErrMalformedHeader},
		{name: "version v1 (unknown)", sigs: []string{"v1=" + sig}, tss: one, want: ErrNoMatch},
		{name: "version V0 (case)", sigs: []string{"V0=" + sig}, tss: one, want: ErrNoMatch},
		{name: "prefix sha256=", sigs: []string{"sha256=" + sig}, tss: one, want: ErrNoMatch},
		{name: "leading space", sigs: []string{" " + ok}, tss: one, want: ErrNoMatch},
		{name: "trailing space", sigs: []string{ok + " "}, tss: one, want: ErrMalformedHeader},
		{name: "value empty", sigs: []string{"v0="}, tss: one, want: ErrMalformedHeader},
		{name: "too short", sigs: []string{"v0=" + sig[:62]}, tss: one, want: ErrMalformedHeader},
		{name: "too long", sigs: []string{ok + "00"}, tss: one, want: ErrMalformedHeader},
		{name: "odd length", sigs: []string{"v0=" + sig[:63]}, tss: one, want: ErrMalformedHeader},
		{name: "non-hex digit", sigs: []string{"v0=" + sig[:63] + "g"}, tss: one, want: ErrMalformedHeader},
		{name: "fullwidth hex digit", sigs: []string{"v0=" + sig[:61] + "０"}, tss: one, want: ErrMalformedHeader},
		{name: "base64 instead of hex", sigs: []string{"v0=" + slackHexToBase64(sig)}, tss: one, want: ErrMalformedHeader},
		{name: "uppercase hex is the same signature", sigs: []string{"v0=" + strings.ToUpper(sig)}, tss: one, want: nil},
		{name: "two signatures joined by a comma", sigs: []string{ok + "," + ok}, tss: one, want: ErrMalformedHeader},
		{name: "HMAC-SHA1 (no downgrade)", sigs: []string{"v0=" + sha1Hex}, tss: one, want: ErrMalformedHeader},
		{name: "HMAC-SHA512", sigs: []string{"v0=" + sha512Hex}, tss: one, want: ErrMalformedHeader},
		{name: "signed without the v0: prefix", sigs: []string{"v0=" + mac(sha256.New, testTS+":")}, tss: one, want: ErrNoMatch},
		{name: "signed as Stripe does", sigs: []string{"v0=" + mac(sha256.New, testTS+".")}, tss: one, want: ErrNoMatch},
		{name: "signature of the body alone", sigs: []string{"v0=" + mac(sha256.New, "")}, tss: one, want: ErrNoMatch},
		{name: "header 1 MiB", sigs: []string{ok + strings.Repeat("0", 1<<20)}, tss: one, want: ErrMalformedHeader},
		{name: "wrong secret", sigs: []string{"v0=" + slackV0Hex([]byte("wrong"), testTS, body)}, tss: one, want: ErrNoMatch},
		{name: "no secrets", sigs: []string{ok}, tss: one, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "only an empty secret", sigs: []string{"v0=" + slackV0Hex(nil, testTS, body)}, tss: one, secrets: [][]byte{{}}, want: ErrNoSecret},

		// Body.
		{name: "body truncated", sigs: []string{ok}, tss: one, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with a newline appended", sigs: []string{ok}, tss: one, body: appendByte('\n'), want: ErrNoMatch},
		{name: "body with a NUL appended", sigs: []string{ok}, tss: one, body: appendByte(0), want: ErrNoMatch},
		{name: "body empty", sigs: []string{ok}, tss: one, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body CRLF", sigs: []string{ok}, tss: one, body: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }, want: ErrNoMatch},
		{name: "body trimmed", sigs: []string{ok}, tss: one, body: bytes.TrimSpace, want: ErrNoMatch},
	}
}

// slackMustHash returns a new hash by configuration name.
func slackMustHash(name string) hash.Hash {
	h, err := hashByName(name)
	if err != nil {
		panic(err)
	}
	return h()
}

// slackHexToBase64 re-encodes a hex string as standard base64.
func slackHexToBase64(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// slackV0MalformedRuns is slackV0MalformedCases against s under the given
// headers, followed by the generic variants.
func slackV0MalformedRuns(tb testing.TB, s Scheme, sigHeader, tsHeader string, body, secret []byte) []malformedRun {
	tb.Helper()
	var cases []verifyCase
	for _, tc := range slackV0MalformedCases(body, secret) {
		r := slackV0Request(sigHeader, tsHeader, changed(body, tc.body), tc.sigs, tc.tss)
		cases = append(cases, verifyCase{tc.name, r, orSecrets(tc.secrets, [][]byte{secret}), tc.want})
	}
	generic := genericMalformed(tb, "", malformedSpec{
		s:        s,
		r:        signed(tb, s, jsonPost(body, nil), secret, testNow),
		secrets:  [][]byte{secret},
		sig:      signedField{header: sigHeader, prefix: "v0="},
		enc:      encHex,
		versions: []string{"v1=", "v0:", "sha256="},
		ts:       &signedField{header: tsHeader},
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func slackMalformedRuns(tb testing.TB) []malformedRun {
	return slackV0MalformedRuns(tb, mustNewSlack(tb, Options{}), SlackSignatureHeader, SlackTimestampHeader, slackMessage(tb), slackSecret)
}

func TestSlackVerifyMalformed(t *testing.T) { runMalformed(t, slackMalformedRuns(t)) }

func TestSlackRotation(t *testing.T) {
	body := slackMessage(t)
	both := [][]byte{slackSecret, slackSecretOld}
	req := func(signer []byte) Request { return slackRequest(body, signer, testTS) }
	tests := []verifyCase{
		{"two secrets, signed by current", req(slackSecret), both, nil},
		{"two secrets, signed by previous", req(slackSecretOld), both, nil},
		{"two secrets reversed, signed by current", req(slackSecret), [][]byte{slackSecretOld, slackSecret}, nil},
		{"retired secret no longer accepted", req(slackSecretOld), slackSecrets, ErrNoMatch},
		{"three secrets, signed by the last", req(slackSecretOld), [][]byte{[]byte("a"), slackSecret, slackSecretOld}, nil},
		{"nil secrets", req(slackSecret), nil, ErrNoSecret},
		{"empty secret skipped, real one used", req(slackSecret), [][]byte{{}, slackSecret}, nil},
		{"empty-key signature never matches", req(nil), [][]byte{{}, slackSecret}, ErrNoMatch},
	}
	s := mustNewSlack(t, Options{})
	runVerifyCases(t, s, testNow, 0, tests)
}

// slackToleranceCases are the edges of a window whose default is def.
func slackToleranceCases(def time.Duration) []toleranceCase {
	return []toleranceCase{
		{"default, now", 0, 0, nil},
		{"default, exactly at the edge", 0, def, nil},
		{"default, one second too old", 0, def + time.Second, ErrTooOld},
		{"default, a day old", 0, 24 * time.Hour, ErrTooOld},
		{"default, future at the edge", 0, -def, nil},
		{"default, one second too far in the future", 0, -def - time.Second, ErrTooNew},
		{"default, a year in the future", 0, -365 * 24 * time.Hour, ErrTooNew},
		{"30s, at the edge", 30 * time.Second, 30 * time.Second, nil},
		{"30s, one second too old", 30 * time.Second, 31 * time.Second, ErrTooOld},
		{"30s, future at the edge", 30 * time.Second, -30 * time.Second, nil},
		{"30s, one second too far in the future", 30 * time.Second, -31 * time.Second, ErrTooNew},
		{"1h, 59m old", time.Hour, 59 * time.Minute, nil},
		{"1h, one second too old", time.Hour, time.Hour + time.Second, ErrTooOld},
		{"1ns, now", time.Nanosecond, 0, nil},
		{"1ns, one second old", time.Nanosecond, time.Second, ErrTooOld},
	}
}

func TestSlackTolerance(t *testing.T) {
	body := slackMessage(t)
	runToleranceCases(t, slackSecrets, slackToleranceCases(DefaultTolerance), func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		s := mustNewSlack(t, Options{Tolerance: tolerance})
		return s, signed(t, s, Request{Body: body}, slackSecret, at)
	})
	t.Run("too old and wrong signature reports the age", func(t *testing.T) {
		s := mustNewSlack(t, Options{})
		r := slackRequest(body, slackSecretOld, strconv.FormatInt(testNow.Add(-time.Hour).Unix(), 10))
		checkVerifyErr(t, verifyNoPanic(t, s, r, slackSecrets, testNow), ErrTooOld)
	})
}

// slackOptionsCases are the option sets every scheme in this family judges
// alike: only the tolerance may be set, and it must not be negative.
var slackOptionsCases = []optionsCase{
	{"defaults", Options{}, false},
	{"custom tolerance", Options{Tolerance: time.Minute}, false},
	{"negative tolerance", Options{Tolerance: -time.Second}, true},
	{"negative 1ns tolerance", Options{Tolerance: -1}, true},
	{"URL set", Options{URL: "https://example.test/webhooks/x"}, true},
	{"generic HMAC header set", Options{HMAC: HMACOptions{Header: "X-Signature"}}, true},
	{"generic HMAC id path set", Options{HMAC: HMACOptions{IDPath: "id"}}, true},
}

func TestNewSlack(t *testing.T) { runOptionsCases(t, NewSlack, slackOptionsCases) }

// slackAnswer is the ingest's order, for handshake tests: Verify first, and
// Handshake only for a request Verify accepted.
func slackAnswer(s Scheme, r Request, secrets [][]byte, now time.Time) (Reply, bool, error) {
	if err := s.Verify(r, secrets, now); err != nil {
		return Reply{}, false, err
	}
	return s.(Handshaker).Handshake(r, secrets)
}

func TestSlackHandshake(t *testing.T) {
	s := mustNewSlack(t, Options{})
	challenge := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	old := strconv.FormatInt(testNow.Add(-time.Hour).Unix(), 10)
	tests := []struct {
		name     string
		r        Request
		wantBody string // the answer's body; "" means no answer
		wantErr  error  // from answer: Verify, then Handshake
		// Handshake alone, which re-checks the signature but not the clock.
		wantHSOK  bool
		wantHSErr error
	}{
		{name: "url_verification answered", r: slackRequest([]byte(challenge), slackSecret, testTS), wantBody: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", wantHSOK: true},
		{name: "challenge with escapes is decoded", r: slackRequest([]byte(`{"type":"url_verification","challenge":"a\u00e9\/b"}`), slackSecret, testTS), wantBody: "aé/b", wantHSOK: true},
		{name: "event_callback is not a handshake", r: slackRequest(slackMessage(t), slackSecret, testTS)},
		{name: "type spelt with a \\u escape is answered", r: slackRequest([]byte(`{"type":"url\u005fverification","challenge":"c"}`), slackSecret, testTS), wantBody: "c", wantHSOK: true},
		{name: "type spelt with a \\u escape, other text unescaped", r: slackRequest([]byte(`{"type":"\u0075rl_verification","challenge":"c"}`), slackSecret, testTS), wantBody: "c", wantHSOK: true},
		{name: "form body is not a handshake", r: slackRequest([]byte("type=url_verification&challenge=x"), slackSecret, testTS)},
		{name: "invalid JSON is not a handshake", r: slackRequest([]byte(`{"type":"url_verification"`), slackSecret, testTS)},
		{name: "type in a nested object is not a handshake", r: slackRequest([]byte(`{"event":{"type":"url_verification","challenge":"x"},"type":"event_callback"}`), slackSecret, testTS)},
		{name: "challenge missing", r: slackRequest([]byte(`{"type":"url_verification"}`), slackSecret, testTS), wantErr: ErrInvalidPayload, wantHSErr: ErrInvalidPayload},
		{name: "challenge empty", r: slackRequest([]byte(`{"type":"url_verification","challenge":""}`), slackSecret, testTS), wantErr: ErrInvalidPayload, wantHSErr: ErrInvalidPayload},
		{name: "challenge not a string", r: slackRequest([]byte(`{"type":"url_verification","challenge":42}`), slackSecret, testTS), wantErr: ErrInvalidPayload, wantHSErr: ErrInvalidPayload},
		{name: "unsigned url_verification", r: slackV0Request(SlackSignatureHeader, SlackTimestampHeader, []byte(challenge), nil, nil), wantErr: ErrNotSigned, wantHSErr: ErrNotSigned},
		{name: "url_verification under another secret", r: slackRequest([]byte(challenge), []byte("attacker"), testTS), wantErr: ErrNoMatch, wantHSErr: ErrNoMatch},
		{name: "url_verification with a bad signature header", r: slackV0Request(SlackSignatureHeader, SlackTimestampHeader, []byte(challenge), []string{"v0=zz"}, []string{testTS}), wantErr: ErrMalformedHeader, wantHSErr: ErrMalformedHeader},
		// Only Verify knows the clock: the ingest must call it first.
		{name: "expired url_verification is refused by Verify", r: slackRequest([]byte(challenge), slackSecret, old), wantErr: ErrTooOld, wantHSOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply, ok, err := slackAnswer(s, tt.r, slackSecrets, testNow)
			checkErr(t, err, tt.wantErr)
			if ok != (tt.wantBody != "") || string(reply.Body) != tt.wantBody {
				t.Errorf("answer: got %t %q, want body %q", ok, reply.Body, tt.wantBody)
			}
			if ok && (reply.Status != http.StatusOK || reply.ContentType != "text/plain") {
				t.Errorf("answer: got %d %q, want 200 text/plain", reply.Status, reply.ContentType)
			}
			_, hsOK, hsErr := s.Handshake(tt.r, slackSecrets)
			checkErr(t, hsErr, tt.wantHSErr)
			if hsOK != tt.wantHSOK {
				t.Errorf("Handshake: got ok %t, want %t", hsOK, tt.wantHSOK)
			}
		})
	}
}

// slackIdentifyCases is shared with the fuzz test as seeds. A zero want.ID
// means ErrInvalidPayload.
var slackIdentifyCases = []struct {
	name   string
	body   string
	header http.Header
	want   Identity
}{
	{name: "empty", body: ``},
	{name: "whitespace", body: " \n"},
	{name: "null", body: `null`},
	{name: "array", body: `[{"type":"event_callback","event_id":"Ev1"}]`},
	{name: "empty object", body: `{}`},
	{name: "truncated JSON", body: `{"type":"event_callback","event_id":"Ev1"`},
	{name: "trailing garbage", body: `{"type":"event_callback","event_id":"Ev1"} x`},
	{name: "type missing", body: `{"event_id":"Ev1"}`},
	{name: "type not a string", body: `{"type":1,"event_id":"Ev1"}`},
	{name: "event_callback without event_id", body: `{"type":"event_callback","event":{"type":"message"}}`},
	{name: "event_id empty", body: `{"type":"event_callback","event_id":""}`},
	{name: "event_id null", body: `{"type":"event_callback","event_id":null}`},
	{name: "event_id a number", body: `{"type":"event_callback","event_id":7}`},
	{name: "event_id invalid UTF-8", body: "{\"type\":\"event_callback\",\"event_id\":\"\xff\"}"},
	{name: "event_id 513 bytes", body: `{"type":"event_callback","event_id":"` + strings.Repeat("E", 513) + `"}`},
	{name: "event_time a string", body: `{"type":"event_callback","event_id":"Ev1","event_time":"1234567890"}`},
	{name: "event_time negative", body: `{"type":"event_callback","event_id":"Ev1","event_time":-1}`},
	{name: "event_time float", body: `{"type":"event_callback","event_id":"Ev1","event_time":1.5}`},
	{name: "url_verification", body: `{"type":"url_verification","challenge":"x"}`},
	{name: "app_rate_limited without team", body: `{"type":"app_rate_limited","minute_rate_limited":1518467820}`},
	{name: "app_rate_limited without minute", body: `{"type":"app_rate_limited","team_id":"T1"}`},
	{name: "app_rate_limited minute a string", body: `{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":"1518467820"}`},
	{name: "form without command", body: `trigger_id=1.2.3&team_id=T1`},
	{name: "form without trigger_id", body: `command=%2Fdeploy&team_id=T1`},
	{name: "form with two trigger_ids", body: `command=%2Fdeploy&trigger_id=1&trigger_id=2`},
	{name: "form with bad escape", body: `command=%2&trigger_id=1`},
	{name: "form with semicolon", body: `command=/a;trigger_id=1`},
	{name: "form trigger_id invalid UTF-8", body: `command=%2Fdeploy&trigger_id=%FF`},
	{name: "payload not JSON", body: `payload=not+json`},
	{name: "payload without type", body: `payload=%7B%22trigger_id%22%3A%221.2%22%7D`},
	{name: "two payloads", body: `payload=%7B%7D&payload=%7B%7D`},
	{name: "plain text", body: `hello`},

	{
		name: "event_callback",
		body: `{"type":"event_callback","event_id":"Ev1","event_time":1721954100,"event":{"type":"message","text":"hi"}}`,
		want: Identity{ID: "Ev1", Type: "message", Created: time.Unix(1721954100, 0)},
	},
	{
		name: "event without type falls back to the envelope type",
		body: `{"type":"event_callback","event_id":"Ev1","event":{"text":"hi"}}`,
		want: Identity{ID: "Ev1", Type: "event_callback"},
	},
	{
		name: "event null",
		body: `{"type":"event_callback","event_id":"Ev1","event":null,"event_time":null}`,
		want: Identity{ID: "Ev1", Type: "event_callback"},
	},
	{
		name: "event_id with escapes",
		body: `{"type":"event_callback","event_id":"Ev\u00e9\/1","event":{"type":"message"}}`,
		want: Identity{ID: "Evé/1", Type: "message"},
	},
	{
		name: "event_id of 512 bytes",
		body: `{"type":"event_callback","event_id":"` + strings.Repeat("E", 512) + `","event":{"type":"message"}}`,
		want: Identity{ID: strings.Repeat("E", 512), Type: "message"},
	},
	{
		name: "nested event_id is not the envelope's",
		body: `{"type":"event_callback","event":{"type":"message","event_id":"inner"},"event_id":"Ev2"}`,
		want: Identity{ID: "Ev2", Type: "message"},
	},
	{
		name: "last duplicate key wins, as in encoding/json",
		body: `{"type":"event_callback","event_id":"Ev1","event_id":"Ev2","event":{"type":"message"}}`,
		want: Identity{ID: "Ev2", Type: "message"},
	},
	{
		name: "app_rate_limited",
		body: `{"token":"t","type":"app_rate_limited","team_id":"T123456","minute_rate_limited":1518467820,"api_app_id":"A1"}`,
		want: Identity{ID: "app_rate_limited:T123456:1518467820", Type: "app_rate_limited", Created: time.Unix(1518467820, 0)},
	},
	{
		name: "retry headers become attributes",
		body: `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`,
		header: http.Header{
			SlackRetryNumHeader:    {"2"},
			SlackRetryReasonHeader: {"http_timeout"},
		},
		want: Identity{ID: "Ev1", Type: "message", Attributes: map[string]string{"retry_num": "2", "retry_reason": "http_timeout"}},
	},
	{
		name:   "retry headers that are not short UTF-8 are dropped",
		body:   `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`,
		header: http.Header{SlackRetryNumHeader: {"1"}, SlackRetryReasonHeader: {"\xff"}},
		want:   Identity{ID: "Ev1", Type: "message", Attributes: map[string]string{"retry_num": "1"}},
	},
	{
		name: "slash command",
		body: `token=x&team_id=T1&command=%2Fdeploy&text=prod&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c`,
		want: Identity{ID: "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c", Type: "/deploy"},
	},
	{
		name: "block_actions payload",
		body: "payload=" + url.QueryEscape(`{"type":"block_actions","trigger_id":"13345224609.738474920.8088930838d88f008e0","team":{"id":"T1"},"actions":[{"action_id":"a","action_ts":"1548426417.840180"}]}`),
		want: Identity{ID: "13345224609.738474920.8088930838d88f008e0", Type: "block_actions"},
	},
	{
		name: "view_closed payload without trigger_id is keyed by the body hash",
		body: "payload=" + url.QueryEscape(`{"type":"view_closed","team":{"id":"T1"},"view":{"id":"V1"}}`),
		want: Identity{ID: "sha256:" + slackSHA256Hex("payload="+url.QueryEscape(`{"type":"view_closed","team":{"id":"T1"},"view":{"id":"V1"}}`)), Type: "view_closed"},
	},
}

func slackSHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestSlackIdentify(t *testing.T) {
	s := mustNewSlack(t, Options{})
	for _, tt := range slackIdentifyCases {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Method: http.MethodPost, Header: tt.header, Body: []byte(tt.body)}
			if r.Header == nil {
				r.Header = http.Header{}
			}
			got, err := identifyNoPanic(t, s, r)
			checkIdentity(t, got, err, tt.want)
			if err == nil {
				checkValidIdentity(t, got)
			}
		})
	}
	t.Run("interactivity payload agrees with slack-go", func(t *testing.T) {
		payload := `{"type":"block_actions","trigger_id":"13345224609.738474920.8088930838d88f008e0","user":{"id":"U1"},"actions":[]}`
		var ic slack.InteractionCallback
		if err := json.Unmarshal([]byte(payload), &ic); err != nil {
			t.Fatal(err)
		}
		got, err := s.Identify(Request{Header: http.Header{}, Body: []byte("payload=" + url.QueryEscape(payload))})
		if err != nil {
			t.Fatal(err)
		}
		slackCheckIdentity(t, got, Identity{ID: ic.TriggerID, Type: string(ic.Type)})
	})
}

// slackV0Fuzz is the body of FuzzSlackVerify and FuzzZoomVerify: a fuzzed
// signature header (one value per line; placeholders as in fuzz_test.go,
// computed over the first timestamp line), timestamp header and body.
func slackV0Fuzz(f *testing.F, s Scheme, sigHeader, tsHeader string, body, secret, secretOld []byte) {
	wrong := slackV0Hex([]byte("other"), testTS, []byte("other body"))
	f.Add("v0="+sigCur, testTS, body)
	f.Add("v0="+sigOld, strconv.FormatInt(testNow.Unix()-60, 10), body)
	f.Add("v0="+wrong, testTS, body)
	for _, tc := range slackV0MalformedCases(body, secret) {
		b := changed(body, tc.body)
		sig := strings.Join(tc.sigs, "\n")
		if len(sig) > 8<<10 {
			continue // a 1 MiB seed makes every mutation crawl
		}
		ts := strings.Join(tc.tss, "\n")
		first, _, _ := strings.Cut(ts, "\n")
		cur := slackV0Hex(secret, first, b)
		sig = strings.NewReplacer(cur, sigCur, strings.ToUpper(cur), sigUpper, slackV0Hex(secretOld, first, b), sigOld).Replace(sig)
		f.Add(sig, ts, b)
	}

	secrets := [][]byte{secret, secretOld}
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		first, _, _ := strings.Cut(ts, "\n")
		cur := slackV0Hex(secret, first, body)
		sig = strings.NewReplacer(sigCur, cur, sigOld, slackV0Hex(secretOld, first, body), sigUpper, strings.ToUpper(cur)).Replace(sig)
		r := slackV0Request(sigHeader, tsHeader, body, fuzzHeaders(sig), fuzzHeaders(ts))

		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		// Accepted: one header each, a canonical timestamp within the
		// window, and a signature Sign reproduces for one of the secrets.
		if strings.Contains(sig, "\n") || strings.Contains(ts, "\n") {
			t.Fatalf("Verify(%q, %q): accepted repeated headers", sig, ts)
		}
		at := acceptedUnix(t, ts)
		for _, secret := range secrets {
			signed := Request{Body: body}
			if err := s.(Signer).Sign(&signed, secret, at); err != nil {
				t.Fatal(err)
			}
			if strings.EqualFold(signed.Header.Get(sigHeader), sig) && signed.Header.Get(tsHeader) == ts {
				return
			}
		}
		t.Fatalf("Verify(%q, %q): got nil, but Sign reproduces neither secret's signature", sig, ts)
	})
}

func FuzzSlackVerify(f *testing.F) {
	s := mustNewSlack(f, Options{})
	slackV0Fuzz(f, s, SlackSignatureHeader, SlackTimestampHeader, slackMessage(f), slackSecret, slackSecretOld)
}

func FuzzSlackIdentify(f *testing.F) {
	for _, c := range loadSlackCorpus(f) {
		f.Add(c.body, "")
	}
	f.Add([]byte(loadSlackVector(f).Body), "1")
	for _, tc := range slackIdentifyCases {
		f.Add([]byte(tc.body), tc.header.Get(SlackRetryNumHeader))
	}
	s := mustNewSlack(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte, retry string) {
		h := http.Header{}
		if retry != "" {
			h.Set(SlackRetryNumHeader, retry)
			h.Set(SlackRetryReasonHeader, retry)
		}
		r := Request{Header: h, Body: body}
		fuzzIdentifyValid(t, s, r)
		// Handshake must not panic either, and answers only url_verification.
		if reply, ok, err := s.Handshake(r, slackSecrets); ok && (err != nil || reply.Status != http.StatusOK) {
			t.Fatalf("Handshake(%q): got %+v, %v", body, reply, err)
		}
	})
}

// BenchmarkSlack compares the scheme with a bare HMAC (the floor) and with
// slack-go on one corpus body.
func BenchmarkSlack(b *testing.B) {
	body := slackMessage(b)
	s := mustNewSlack(b, Options{})
	r := slackRequest(body, slackSecret, testTS)
	// slack-go reads the clock: its request is signed at the real time.
	live := Request{Body: body}
	if err := s.Sign(&live, slackSecret, time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := slackGoVerify(live.Header, slackSecret, body); err != nil {
		b.Fatal(err)
	}

	pre := []byte("v0:" + testTS + ":")
	var sum [sha256.Size]byte
	benchScheme(b, s, r, slackSecrets, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha256.New, slackSecret)
		m.Write(pre)
		m.Write(body)
		m.Sum(sum[:0])
	})
	secret := string(slackSecret)
	benchRun(b, "slack-go/SecretsVerifier", len(body), func(b *testing.B) {
		sv, err := slack.NewSecretsVerifier(live.Header, secret)
		if err != nil {
			b.Fatal(err)
		}
		sv.Write(body)
		if err := sv.Ensure(); err != nil {
			b.Fatal(err)
		}
	})
}
