package signature

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"
)

// Test keys made for these tests only (P-256; the public halves are in
// SendGrid's form, base64 PKIX DER). The second plays the retired key.
const (
	sendgridPriv    = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgw0fxAsS3hXLvvX0ATDqSV8WnL/pDO1k/LMaHDcX6HpehRANCAAQaZvO3YCX8B8vFb8dLSXghJqJf+E8N8NKPorARQnxpVjAV9NPSOX++6PJpuC8mjowrFBijjgJx4gXRxIXpduNb"
	sendgridPrivEC  = "MHcCAQEEIMNH8QLEt4Vy7719AEw6klfFpy/6QztZPyzGhw3F+h6XoAoGCCqGSM49AwEHoUQDQgAEGmbzt2Al/AfLxW/HS0l4ISaiX/hPDfDSj6KwEUJ8aVYwFfTT0jl/vujyabgvJo6MKxQYo44CceIF0cSF6XbjWw=="
	sendgridPub     = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEGmbzt2Al/AfLxW/HS0l4ISaiX/hPDfDSj6KwEUJ8aVYwFfTT0jl/vujyabgvJo6MKxQYo44CceIF0cSF6XbjWw=="
	sendgridPrivOld = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnCJCsUEv3kM5xqjyK9phHYKEtJCWgO8uVDO6PMfhQYChRANCAARgymATAgoA0Jwb4Z1adfhM4cdL1y/RTF3fLB9UxzMsaMcsfYyVhb55AkgrXLNsGsNa1aZsUZ0IgGkwssCCQCel"
	sendgridPubOld  = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYMpgEwIKANCcG+GdWnX4TOHHS9cv0Uxd3ywfVMczLGjHLH2MlYW+eQJIK1yzbBrDWtWmbFGdCIBpMLLAgkAnpQ=="
	// A P-384 key: well-formed, but not the curve SendGrid uses.
	sendgridPubP384  = "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE1n6QLXxSg67nhB2fRBEn3jY6Dtwki0IcMnxSPawB6joU7GMottv1kxbouwT1BHde9e4oniEtX/YTgFJ6uGdnBLCK82gC9Lxntz7/b04u5SKscGf0hVEgWKYYHS0L9Zc5"
	sendgridPrivP384 = "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDC3qPAJeocx5u/Iqe15SEsI7+MXnYdcq+iiWuzsimJjJ4FP9Ela32zr9aI3Ph1AP2OhZANiAATWfpAtfFKDrueEHZ9EESfeNjoO3CSLQhwyfFI9rAHqOhTsYyi22/WTFui7BPUEd1717iieIS1f9hOAUnq4Z2cEsIrzaAL0vGe3Pv9vTi7lIqxwZ/SFUSBYphgdLQv1lzk="
)

var (
	sendgridKeys = [][]byte{[]byte(sendgridPub)}
	// sendgridTS is testNow as SendGrid's timestamp header.
	sendgridTS = strconv.FormatInt(testNow.Unix(), 10)
)

// The signed example of sendgrid-go's helpers/eventwebhook tests: its
// public key, signature, timestamp and the exact payload bytes its test
// builds (compact JSON, keys sorted, "\r\n" at the end).
const (
	sendgridVectorPub = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
	sendgridVectorSig = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
	sendgridVectorTS  = "1600112502"
	sendgridVector    = `[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n"
)

// sendgridDeliveries are Event Webhook bodies. The project's corpus has no
// SendGrid folder: the first is sendgrid-go's signed example; the second
// has one event of each kind in the fields of SendGrid's Event Webhook
// reference (made-up ids).
var sendgridDeliveries = []struct{ name, body string }{
	{"sendgrid-go example", sendgridVector},
	{"one of each event", `[
  {"email":"example@test.com","timestamp":1721954100,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"processed","category":["cat facts"],"sg_event_id":"rbtnWrG1DVDGGGFHFyun0A==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"},
  {"email":"example@test.com","timestamp":1721954101,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"deferred","category":["cat facts"],"sg_event_id":"KNuUrAgPmAwVq5z-mNpVLQ==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","response":"400 try again later","attempt":"5"},
  {"email":"example@test.com","timestamp":1721954102,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"delivered","category":["cat facts"],"sg_event_id":"d4s6fAvJ5PdRHo7EF1IrOw==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","response":"250 OK"},
  {"email":"example@test.com","timestamp":1721954103,"event":"open","sg_machine_open":false,"category":["cat facts"],"sg_event_id":"FOTFFO0ecsBE-zxFXfs6WA==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","useragent":"Mozilla/4.0 (compatible; MSIE 6.1; Windows XP; .NET CLR 1.1.4322; .NET CLR 2.0.50727)","ip":"255.255.255.255"},
  {"email":"example@test.com","timestamp":1721954104,"event":"click","category":["cat facts"],"sg_event_id":"kCAi1KttyQdEKHhdC-nuEA==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","useragent":"Mozilla/4.0","ip":"255.255.255.255","url":"http://www.sendgrid.com/?q=a%20b&x=\u00fc"},
  {"email":"example@test.com","timestamp":1721954105,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"bounce","category":["cat facts"],"sg_event_id":"6g4ZI7SA-xmRDv57GoPIPw==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","reason":"500 unknown recipient","status":"5.0.0","type":"bounce"},
  {"email":"example@test.com","timestamp":1721954106,"smtp-id":"<14c5d75ce93.dfd.64b469@ismtpd-555>","event":"dropped","category":["cat facts"],"sg_event_id":"zmzJhfJgAfUSOW80yEbPyw==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","reason":"Bounced Address","status":"5.0.0"},
  {"email":"example@test.com","timestamp":1721954107,"event":"spamreport","sg_event_id":"37nvH5QBz858KGVYCM4uOA==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"},
  {"email":"example@test.com","timestamp":1721954108,"event":"unsubscribe","category":["cat facts"],"sg_event_id":"Fc0MqI5mxFXvgANNPQ6HMQ==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"},
  {"email":"example@test.com","timestamp":1721954109,"event":"group_unsubscribe","category":["cat facts"],"sg_event_id":"ahSCB7xYcXFb-hEaawsPRw==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","useragent":"Mozilla/4.0","ip":"255.255.255.255","url":"http://www.sendgrid.com/","asm_group_id":10},
  {"email":"example@test.com","timestamp":1721954109,"event":"group_resubscribe","category":["cat facts"],"sg_event_id":"w_u0vJhLT-OFfprar5N93g==","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0","useragent":"Mozilla/4.0","ip":"255.255.255.255","url":"http://www.sendgrid.com/","asm_group_id":10}
]
`},
}

func mustNewSendGrid(tb testing.TB, o Options) *SendGrid {
	tb.Helper()
	return mustNew(tb, NewSendGrid, o)
}

// sendgridPrivateKey parses a test key with the standard library.
func sendgridPrivateKey(tb testing.TB, b64 string) *ecdsa.PrivateKey {
	tb.Helper()
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		tb.Fatal(err)
	}
	return k.(*ecdsa.PrivateKey)
}

// sendgridSDKSign signs as SendGrid does, with crypto/ecdsa alone: an
// ASN.1 signature of SHA-256(timestamp + payload), base64.
func sendgridSDKSign(tb testing.TB, key *ecdsa.PrivateKey, ts string, body []byte) string {
	tb.Helper()
	digest := sha256.Sum256(append([]byte(ts), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// sendgridRequest builds a POST with the given header values.
func sendgridRequest(body []byte, sigs, tss []string) Request {
	return jsonPost(body, map[string][]string{SendGridSignatureHeader: sigs, SendGridTimestampHeader: tss})
}

// sendgridWant decodes a delivery with encoding/json.
func sendgridWant(tb testing.TB, body []byte) []Identity {
	tb.Helper()
	var events []struct {
		ID        string `json:"sg_event_id"`
		Event     string `json:"event"`
		Timestamp int64  `json:"timestamp"`
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &events); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		tb.Fatal(err)
	}
	out := make([]Identity, len(events))
	for i, e := range events {
		out[i] = Identity{ID: e.ID, Type: e.Event, Created: time.Unix(e.Timestamp, 0), Payload: raw[i]}
	}
	return out
}

func TestSendGridSDKVector(t *testing.T) {
	s := mustNewSendGrid(t, Options{})
	now := time.Unix(1600112502, 0)
	r := sendgridRequest([]byte(sendgridVector), []string{sendgridVectorSig}, []string{sendgridVectorTS})
	keys := [][]byte{[]byte(sendgridVectorPub)}
	checkErr(t, verifyNoPanic(t, s, r, keys, now), nil)
	t.Run("sendgrid-go agrees", func(t *testing.T) {
		pub, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(sendgridVectorPub)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := eventwebhook.VerifySignature(pub, []byte(sendgridVector), sendgridVectorSig, sendgridVectorTS); !ok || err != nil {
			t.Fatalf("VerifySignature(vector): got %t, %v", ok, err)
		}
	})
	t.Run("other timestamp", func(t *testing.T) {
		r := sendgridRequest([]byte(sendgridVector), []string{sendgridVectorSig}, []string{"1600112503"})
		checkErr(t, verifyNoPanic(t, s, r, keys, now), ErrNoMatch)
	})
	t.Run("identify", func(t *testing.T) {
		got, err := s.Identify(r)
		if err != nil {
			t.Fatal(err)
		}
		want := Identity{ID: "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA", Type: "dropped", Created: time.Unix(1600112492, 0)}
		if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) || !json.Valid(got.Payload) {
			t.Errorf("Identify: got %+v, want %+v", got, want)
		}
	})
}

// TestSendGridCrossCheckSendGridGo checks the scheme against sendgrid-go's
// eventwebhook helpers in both directions.
func TestSendGridCrossCheckSendGridGo(t *testing.T) {
	s := mustNewSendGrid(t, Options{})
	priv := sendgridPrivateKey(t, sendgridPriv)
	pub, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(sendgridPub)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sendgridDeliveries {
		t.Run(d.name, func(t *testing.T) {
			body := []byte(d.body)
			t.Run("sendgrid-go verifies", func(t *testing.T) {
				for _, key := range []string{sendgridPriv, sendgridPrivEC, "-----BEGIN PRIVATE KEY-----\n" + sendgridPriv + "\n-----END PRIVATE KEY-----\n"} {
					r := Request{Body: body}
					if err := s.Sign(&r, []byte(key), testNow); err != nil {
						t.Fatalf("Sign: %v", err)
					}
					sig, ts := r.Header.Get(SendGridSignatureHeader), r.Header.Get(SendGridTimestampHeader)
					if ts != sendgridTS {
						t.Errorf("Sign: got timestamp %q, want %q", ts, sendgridTS)
					}
					if ok, err := eventwebhook.VerifySignature(pub, body, sig, ts); !ok || err != nil {
						t.Errorf("VerifySignature(Sign header %q): got %t, %v; want true", sig, ok, err)
					}
					if ok, _ := eventwebhook.VerifySignature(pub, flipByte(body, 0), sig, ts); ok {
						t.Error("VerifySignature(flipped body): got true, want false")
					}
				}
			})
			t.Run("signed as SendGrid does", func(t *testing.T) {
				sig := sendgridSDKSign(t, priv, sendgridTS, body)
				if ok, err := eventwebhook.VerifySignature(pub, body, sig, sendgridTS); !ok || err != nil {
					t.Fatalf("sendgrid-go rejects the test's own signature: %t, %v", ok, err)
				}
				r := sendgridRequest(body, []string{sig}, []string{sendgridTS})
				checkErr(t, verifyNoPanic(t, s, r, sendgridKeys, testNow), nil)
				checkErr(t, verifyNoPanic(t, s, r, [][]byte{[]byte(sendgridPubOld)}, testNow), ErrNoMatch)
			})
		})
	}
}

// TestSendGridDeliveries signs every delivery, verifies it, checks Split
// against encoding/json and that changed bytes are a mismatch.
func TestSendGridDeliveries(t *testing.T) {
	s := mustNewSendGrid(t, Options{})
	priv := sendgridPrivateKey(t, sendgridPriv)
	for _, d := range sendgridDeliveries {
		t.Run(d.name, func(t *testing.T) {
			body := []byte(d.body)
			sig := sendgridSDKSign(t, priv, sendgridTS, body)
			r := sendgridRequest(body, []string{sig}, []string{sendgridTS})
			if err := s.Verify(r, sendgridKeys, testNow); err != nil {
				t.Fatalf("Verify: got %v, want nil", err)
			}
			got, err := s.Split(r)
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			want := sendgridWant(t, body)
			if len(got) != len(want) {
				t.Fatalf("Split: got %d events, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Type != w.Type || !g.Created.Equal(w.Created) || !bytes.Equal(g.Payload, w.Payload) || g.Attributes != nil {
					t.Errorf("Split[%d]: got %+v, want %+v", i, g, w)
				}
			}
			// An ECDSA check costs about 0.1 ms: flip every byte of small
			// bodies, a spread of bytes of large ones.
			step := max(1, len(body)/400)
			for i := 0; i < len(body); i += step {
				r := r
				r.Body = flipByte(body, i)
				if err := s.Verify(r, sendgridKeys, testNow); !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Verify(body with byte %d flipped): got %v, want %v", i, err, ErrNoMatch)
				}
			}
		})
	}
}

func TestSendGridRotation(t *testing.T) {
	body := []byte(sendgridVector)
	cur := sendgridSDKSign(t, sendgridPrivateKey(t, sendgridPriv), sendgridTS, body)
	old := sendgridSDKSign(t, sendgridPrivateKey(t, sendgridPrivOld), sendgridTS, body)
	pemPub := "-----BEGIN PUBLIC KEY-----\n" + sendgridPub[:64] + "\n" + sendgridPub[64:] + "\n-----END PUBLIC KEY-----\n"
	tests := []struct {
		name string
		sig  string
		keys []string
		want error
	}{
		{"two keys, signed by current", cur, []string{sendgridPub, sendgridPubOld}, nil},
		{"two keys, signed by previous", old, []string{sendgridPub, sendgridPubOld}, nil},
		{"two keys reversed", cur, []string{sendgridPubOld, sendgridPub}, nil},
		{"retired key no longer accepted", old, []string{sendgridPub}, ErrNoMatch},
		{"key as PEM", cur, []string{pemPub}, nil},
		{"key with surrounding whitespace", cur, []string{"\n " + sendgridPub + " \n"}, nil},
		{"unparseable key skipped", cur, []string{"not a key", sendgridPub}, nil},
		{"only an unparseable key", cur, []string{"not a key"}, ErrNoSecret},
		{"only a truncated key", cur, []string{sendgridPub[:40]}, ErrNoSecret},
		{"only a P-384 key", cur, []string{sendgridPubP384}, ErrNoSecret},
		{"a private key is not a verification key", cur, []string{sendgridPriv}, ErrNoSecret},
		{"PEM of another type", cur, []string{"-----BEGIN CERTIFICATE-----\n" + sendgridPub + "\n-----END CERTIFICATE-----\n"}, ErrNoSecret},
		{"no keys", cur, nil, ErrNoSecret},
		{"only an empty key", cur, []string{""}, ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNewSendGrid(t, Options{})
			keys := make([][]byte, len(tt.keys))
			for i, k := range tt.keys {
				keys[i] = []byte(k)
			}
			r := sendgridRequest(body, []string{tt.sig}, []string{sendgridTS})
			checkErr(t, verifyNoPanic(t, s, r, keys, testNow), tt.want)
			// The second call is served by the parsed-key cache.
			checkErr(t, verifyNoPanic(t, s, r, keys, testNow), tt.want)
		})
	}
	t.Run("cache stays bounded", func(t *testing.T) {
		s := mustNewSendGrid(t, Options{})
		r := sendgridRequest(body, []string{cur}, []string{sendgridTS})
		for i := range 3 * sendgridMaxKeys {
			_ = s.Verify(r, [][]byte{[]byte("junk " + strconv.Itoa(i))}, testNow)
		}
		checkErr(t, s.Verify(r, sendgridKeys, testNow), nil)
		if n := len(s.keys); n > sendgridMaxKeys {
			t.Errorf("cache: got %d entries, want at most %d", n, sendgridMaxKeys)
		}
	})
}

func TestSendGridTolerance(t *testing.T) {
	body := []byte(sendgridVector)
	tests := append(toleranceEdges(DefaultTolerance), []toleranceCase{
		{"10m, 9m old", 10 * time.Minute, 9 * time.Minute, nil},
		{"10m, 11m old", 10 * time.Minute, 11 * time.Minute, ErrTooOld},
		{"10m, 11m ahead", 10 * time.Minute, -11 * time.Minute, ErrTooNew},
	}...)
	runToleranceCases(t, sendgridKeys, tests, func(t *testing.T, tolerance time.Duration, at time.Time) (Scheme, Request) {
		s := mustNewSendGrid(t, Options{Tolerance: tolerance})
		return s, signed(t, s, Request{Body: body}, []byte(sendgridPriv), at)
	})
}

func TestNewSendGrid(t *testing.T) {
	runOptionsCases(t, NewSendGrid, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/sendgrid"}, true},
		{"HMAC options", Options{HMAC: HMACOptions{Header: "X"}}, true},
	})
}

func TestSendGridSign(t *testing.T) {
	s := mustNewSendGrid(t, Options{})
	for _, key := range []string{"", "not base64!", sendgridPub, sendgridPrivP384, base64.StdEncoding.EncodeToString([]byte("junk"))} {
		r := Request{Body: []byte("[]")}
		checkErr(t, s.Sign(&r, []byte(key), testNow), ErrNoSecret)
	}
	sec1PEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: func() []byte { b, _ := base64.StdEncoding.DecodeString(sendgridPrivEC); return b }()}))
	r := Request{Body: []byte("[]")}
	if err := s.Sign(&r, []byte(sec1PEM), testNow); err != nil {
		t.Fatalf("Sign(SEC1 PEM): %v", err)
	}
	checkErr(t, s.Verify(r, sendgridKeys, testNow), nil)
	if err := s.Sign(&r, []byte(sendgridPriv), time.Unix(-1, 0)); err == nil {
		t.Error("Sign(before 1970): got nil, want an error")
	}
}

// sendgridCase is one request and the cause Verify must report.
type sendgridCase struct {
	name string
	sigs []string
	tss  []string
	body func([]byte) []byte
	keys [][]byte
	want error
}

// sendgridMalformedCases builds the table of bad inputs for the vector
// body signed at testNow; the fuzz test reuses it.
func sendgridMalformedCases(tb testing.TB) []sendgridCase {
	tb.Helper()
	body := []byte(sendgridVector)
	priv := sendgridPrivateKey(tb, sendgridPriv)
	sig := sendgridSDKSign(tb, priv, sendgridTS, body)
	der, _ := base64.StdEncoding.DecodeString(sig)
	at := func(ts string) []string { return []string{sendgridSDKSign(tb, priv, ts, body)} }
	ts := []string{sendgridTS}
	b64 := base64.StdEncoding.EncodeToString
	// rawRS is the signature as r||s, the encoding JWS uses, not DER.
	rawRS := func() string {
		digest := sha256.Sum256(append([]byte(sendgridTS), body...))
		for {
			r, s := make([]byte, 32), make([]byte, 32)
			rr, ss, _ := ecdsa.Sign(rand.Reader, priv, digest[:])
			rr.FillBytes(r)
			ss.FillBytes(s)
			if r[0] != 0x30 { // not even the shape of DER
				return b64(append(r, s...))
			}
		}
	}()
	other := sendgridSDKSign(tb, sendgridPrivateKey(tb, sendgridPrivOld), sendgridTS, body)
	return []sendgridCase{
		{name: "missing signature", tss: ts, want: ErrNotSigned},
		{name: "empty signature", sigs: []string{""}, tss: ts, want: ErrNotSigned},
		{name: "two signatures", sigs: []string{sig, sig}, tss: ts, want: ErrMalformedHeader},
		{name: "signature not base64", sigs: []string{"%%%%"}, tss: ts, want: ErrMalformedHeader},
		{name: "signature base64 without padding", sigs: []string{strings.TrimRight(sig, "=")}, tss: ts, want: sendgridUnlessSame(sig, strings.TrimRight(sig, "="))},
		{name: "signature truncated DER", sigs: []string{b64(der[:len(der)-1])}, tss: ts, want: ErrMalformedHeader},
		{name: "signature with trailing byte", sigs: []string{b64(append(bytes.Clone(der), 0))}, tss: ts, want: ErrMalformedHeader},
		{name: "signature raw r||s", sigs: []string{rawRS}, tss: ts, want: ErrMalformedHeader},
		{name: "signature too long", sigs: []string{b64(bytes.Repeat([]byte{0x30}, 200))}, tss: ts, want: ErrMalformedHeader},
		{name: "signature hex", sigs: []string{"3045" + strings.Repeat("00", 69)}, tss: ts, want: ErrMalformedHeader},
		{name: "signature DER of zeros", sigs: []string{b64([]byte{0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00})}, tss: ts, want: ErrNoMatch},
		{name: "signature DER with junk inside", sigs: []string{b64(append([]byte{0x30, byte(len(der) - 2)}, bytes.Repeat([]byte{0xff}, len(der)-2)...))}, tss: ts, want: ErrNoMatch},
		{name: "signature of another key", sigs: []string{other}, tss: ts, want: ErrNoMatch},
		{name: "missing timestamp", sigs: []string{sig}, want: ErrMalformedHeader},
		{name: "empty timestamp", sigs: []string{sig}, tss: []string{""}, want: ErrMalformedHeader},
		{name: "two timestamps", sigs: []string{sig}, tss: []string{sendgridTS, sendgridTS}, want: ErrMalformedHeader},
		{name: "timestamp abc", sigs: at("abc"), tss: []string{"abc"}, want: ErrMalformedHeader},
		{name: "timestamp negative", sigs: at("-1"), tss: []string{"-1"}, want: ErrMalformedHeader},
		{name: "timestamp leading zero", sigs: at("0" + sendgridTS), tss: []string{"0" + sendgridTS}, want: ErrMalformedHeader},
		{name: "timestamp milliseconds", sigs: at(sendgridTS + "000"), tss: []string{sendgridTS + "000"}, want: ErrMalformedHeader},
		{name: "timestamp fullwidth digits", sigs: at("１７２１９５４４００"), tss: []string{"１７２１９５４４００"}, want: ErrMalformedHeader},
		{name: "timestamp arabic-indic digits", sigs: at("١٧٢١٩٥٤٤٠٠"), tss: []string{"١٧٢١٩٥٤٤٠٠"}, want: ErrMalformedHeader},
		{name: "timestamp with space", sigs: at(sendgridTS + " "), tss: []string{sendgridTS + " "}, want: ErrMalformedHeader},
		{name: "timestamp zero", sigs: at("0"), tss: []string{"0"}, want: ErrTooOld},
		{name: "timestamp far future", sigs: at("999999999999"), tss: []string{"999999999999"}, want: ErrTooNew},
		{name: "timestamp not the signed one", sigs: []string{sig}, tss: []string{strconv.FormatInt(testNow.Unix()-1, 10)}, want: ErrNoMatch},
		{name: "no keys", sigs: []string{sig}, tss: ts, keys: [][]byte{}, want: ErrNoSecret},
		{name: "body truncated", sigs: []string{sig}, tss: ts, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body without CRLF", sigs: []string{sig}, tss: ts, body: func(b []byte) []byte { return bytes.TrimRight(b, "\r\n") }, want: ErrNoMatch},
		{name: "body empty", sigs: []string{sig}, tss: ts, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
	}
}

// sendgridUnlessSame is ErrMalformedHeader, or nil when the altered header
// equals the original.
func sendgridUnlessSame(orig, altered string) error {
	if orig == altered {
		return nil
	}
	return ErrMalformedHeader
}

func sendgridCaseRequest(tc sendgridCase) Request {
	body := []byte(sendgridVector)
	if tc.body != nil {
		body = tc.body(body)
	}
	return sendgridRequest(body, tc.sigs, tc.tss)
}

func sendgridMalformedRuns(tb testing.TB) []malformedRun {
	var cases []verifyCase
	for _, tc := range sendgridMalformedCases(tb) {
		cases = append(cases, verifyCase{tc.name, sendgridCaseRequest(tc), orSecrets(tc.keys, sendgridKeys), tc.want})
	}
	s := mustNewSendGrid(tb, Options{})
	generic := genericMalformed(tb, "", malformedSpec{
		s:       s,
		r:       signed(tb, s, sendgridRequest([]byte(sendgridVector), nil, nil), []byte(sendgridPriv), testNow),
		secrets: sendgridKeys,
		wrong:   [][]byte{[]byte(sendgridPubOld)},
		sig:     signedField{header: SendGridSignatureHeader},
		enc:     encBase64,
		ts:      &signedField{header: SendGridTimestampHeader},
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestSendGridVerifyMalformed(t *testing.T) { runMalformed(t, sendgridMalformedRuns(t)) }

// sendgridSplitCases are bodies Split must refuse (want nil) or read.
var sendgridSplitCases = []splitCase{
	{name: "empty", body: ``},
	{name: "empty array", body: `[]`},
	{name: "object", body: `{"sg_event_id":"a","event":"open"}`},
	{name: "array of string", body: `["a"]`},
	{name: "array of null", body: `[null]`},
	{name: "truncated", body: `[{"sg_event_id":"a","event":"open"}`},
	{name: "trailing comma", body: `[{"sg_event_id":"a","event":"open"},]`},
	{name: "missing sg_event_id", body: `[{"event":"open","timestamp":1}]`},
	{name: "empty sg_event_id", body: `[{"sg_event_id":"","event":"open"}]`},
	{name: "numeric sg_event_id", body: `[{"sg_event_id":7,"event":"open"}]`},
	{name: "sg_event_id too long", body: `[{"sg_event_id":"` + strings.Repeat("a", 513) + `","event":"open"}]`},
	{name: "sg_event_id invalid UTF-8", body: "[{\"sg_event_id\":\"a\xff\",\"event\":\"open\"}]"},
	{name: "missing event", body: `[{"sg_event_id":"a"}]`},
	{name: "event not a string", body: `[{"sg_event_id":"a","event":["open"]}]`},
	{name: "timestamp string", body: `[{"sg_event_id":"a","event":"open","timestamp":"1"}]`},
	{name: "timestamp float", body: `[{"sg_event_id":"a","event":"open","timestamp":1.5}]`},
	{name: "timestamp negative", body: `[{"sg_event_id":"a","event":"open","timestamp":-1}]`},
	{name: "second event bad", body: `[{"sg_event_id":"a","event":"open"},{"event":"click"}]`},

	{name: "minimal", body: `[{"sg_event_id":"a","event":"open"}]`, want: []string{"a"}},
	{name: "sg_event_id of 512 bytes", body: `[{"sg_event_id":"` + strings.Repeat("a", 512) + `","event":"open"}]`, want: []string{strings.Repeat("a", 512)}},
	{name: "escaped id", body: `[{"sg_event_id":"a\/b\u00e9","event":"open"}]`, want: []string{"a/bé"}},
	{name: "timestamp null", body: `[{"sg_event_id":"a","event":"open","timestamp":null}]`, want: []string{"a"}},
	{name: "nested sg_event_id ignored", body: `[{"x":{"sg_event_id":"b"},"sg_event_id":"a","event":"open"}]`, want: []string{"a"}},
	{name: "three events", body: "\n[{\"sg_event_id\":\"a\",\"event\":\"open\"},\n{\"sg_event_id\":\"b\",\"event\":\"click\"},{\"sg_event_id\":\"a\",\"event\":\"open\"}]\r\n", want: []string{"a", "b", "a"}},
}

func TestSendGridSplit(t *testing.T) {
	runSplitCases(t, mustNewSendGrid(t, Options{}), sendgridSplitCases, nil)
}

func FuzzSendGridVerify(f *testing.F) {
	for _, d := range sendgridDeliveries {
		f.Add("{sig}", sendgridTS, []byte(d.body))
		f.Add("{old}", strconv.FormatInt(testNow.Unix()-120, 10), []byte(d.body))
	}
	f.Add("{sig}", "1", []byte("[]"))
	for _, tc := range sendgridMalformedCases(f) {
		r := sendgridCaseRequest(tc)
		f.Add(strings.Join(tc.sigs, "\n"), strings.Join(tc.tss, "\n"), r.Body)
	}

	s := mustNewSendGrid(f, Options{})
	priv := sendgridPrivateKey(f, sendgridPriv)
	privOld := sendgridPrivateKey(f, sendgridPrivOld)
	keys := [][]byte{[]byte(sendgridPub), []byte(sendgridPubOld)}
	var pubs []*ecdsa.PublicKey
	for _, k := range keys {
		p, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(string(k))
		if err != nil {
			f.Fatal(err)
		}
		pubs = append(pubs, p)
	}
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte) {
		if strings.Contains(sig, "{") {
			sig = strings.NewReplacer(
				"{sig}", sendgridSDKSign(t, priv, ts, body),
				"{old}", sendgridSDKSign(t, privOld, ts, body),
			).Replace(sig)
		}
		r := Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
		for _, v := range fuzzHeaders(sig) {
			r.Header.Add(SendGridSignatureHeader, v)
		}
		for _, v := range fuzzHeaders(ts) {
			r.Header.Add(SendGridTimestampHeader, v)
		}
		if !fuzzVerify(t, s, r, keys, testNow) {
			return
		}
		n, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || strconv.FormatInt(n, 10) != ts {
			t.Fatalf("Verify: accepted timestamp %q", ts)
		}
		if d := testNow.Sub(time.Unix(n, 0)); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify: accepted a timestamp %s away", d)
		}
		// sendgrid-go is the oracle: one configured key must verify it.
		for _, p := range pubs {
			if ok, _ := eventwebhook.VerifySignature(p, body, sig, ts); ok {
				return
			}
		}
		t.Fatalf("Verify(%q, %q): got nil, but sendgrid-go verifies it under no key", sig, ts)
	})
}

func FuzzSendGridSplit(f *testing.F) {
	// The deliveries' first events only: large seeds make the minimizer
	// crawl.
	for _, d := range sendgridDeliveries {
		var events []json.RawMessage
		if err := json.Unmarshal([]byte(d.body), &events); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte("[" + string(events[0]) + "]"))
	}
	// Length limits are reached through a placeholder: a seed holding a
	// long run of one byte makes the minimizer crawl for the whole budget.
	for _, tc := range sendgridSplitCases {
		if len(tc.body) <= 512 {
			f.Add([]byte(tc.body))
		}
	}
	f.Add([]byte(`[{"sg_event_id":"{long}","event":"open"}]`))
	s := mustNewSendGrid(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) { fuzzSplit(t, s, body) })
}

// BenchmarkSendGrid compares the scheme with a bare ECDSA verification of
// the same bytes and with sendgrid-go, on the eleven-event delivery.
func BenchmarkSendGrid(b *testing.B) {
	body := []byte(sendgridDeliveries[1].body)
	priv := sendgridPrivateKey(b, sendgridPriv)
	sig := sendgridSDKSign(b, priv, sendgridTS, body)
	r := sendgridRequest(body, []string{sig}, []string{sendgridTS})
	der, _ := base64.StdEncoding.DecodeString(sig)

	// The asymmetric floor: hash the signed bytes, one ecdsa.VerifyASN1.
	// verify+identify times Split, SendGrid's identification.
	ts := []byte(sendgridTS)
	benchScheme(b, mustNewSendGrid(b, Options{}), r, sendgridKeys, testNow, "bare-hmac", func(b *testing.B) {
		h := sha256.New()
		h.Write(ts)
		h.Write(body)
		if !ecdsa.VerifyASN1(&priv.PublicKey, h.Sum(nil), der) {
			b.Fatal("rejected")
		}
	})
	benchRun(b, "sendgrid-go/VerifySignature", len(body), func(b *testing.B) {
		pub, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(sendgridPub)
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := eventwebhook.VerifySignature(pub, body, sig, sendgridTS); !ok || err != nil {
			b.Fatal("rejected")
		}
	})
}
