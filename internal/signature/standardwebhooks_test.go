package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	svix "github.com/svix/svix-webhooks/go"
)

// standardWebhooksCorpusDir is the project's copy of the Standard Webhooks
// corpus (see testdata/corpus/README.md).
const standardWebhooksCorpusDir = "../../testdata/corpus/standard-webhooks"

var (
	// standardWebhooksKey32 is the secret of the published vector, which
	// every test reuses; standardWebhooksSecret is it with the prefix.
	standardWebhooksKey32       = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	standardWebhooksSecret      = []byte("whsec_" + standardWebhooksKey32)
	standardWebhooksSecretOld   = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("previous-secret-0123456789abcdef")))
	standardWebhooksSecretWrong = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("wrong-secret")))

	// The Ed25519 pair for v1a, from a fixed seed: whsk_ signs, whpk_
	// verifies.
	standardWebhooksPriv = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	standardWebhooksSK   = []byte(StandardWebhooksPrivateKeyPrefix + base64.StdEncoding.EncodeToString(standardWebhooksPriv))
	standardWebhooksPK   = []byte(StandardWebhooksPublicKeyPrefix + base64.StdEncoding.EncodeToString(standardWebhooksPriv.Public().(ed25519.PublicKey)))

	// standardWebhooksSecrets is what most tests configure: one HMAC secret
	// and one public key.
	standardWebhooksSecrets = [][]byte{standardWebhooksSecret, standardWebhooksPK}

	// standardWebhooksID is the message id of the specification's example.
	standardWebhooksID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
)

// standardWebhooksVectorFile is vectors.json.
type standardWebhooksVectorFile struct {
	Vectors []struct {
		Name      string `json:"name"`
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"`
		Secret    string `json:"secret"`
		Payload   string `json:"payload"`
		Signature string `json:"signature"`
	} `json:"vectors"`
	SignatureHeaderCases struct {
		Cases []struct {
			Name   string `json:"name"`
			Header string `json:"webhook-signature"`
			Valid  bool   `json:"valid"`
		} `json:"cases"`
	} `json:"signature_header_cases"`
	SpecExampleHeaders struct {
		ID        string `json:"webhook-id"`
		Timestamp string `json:"webhook-timestamp"`
		Signature string `json:"webhook-signature"`
	} `json:"spec_example_headers"`
}

func standardWebhooksVectors(tb testing.TB) standardWebhooksVectorFile {
	tb.Helper()
	var v standardWebhooksVectorFile
	if err := json.Unmarshal(mustReadFile(tb, filepath.Join(standardWebhooksCorpusDir, "vectors.json")), &v); err != nil {
		tb.Fatal(err)
	}
	if len(v.Vectors) == 0 || len(v.SignatureHeaderCases.Cases) == 0 {
		tb.Fatalf("vectors.json: got %d vectors and %d header cases, want some of each", len(v.Vectors), len(v.SignatureHeaderCases.Cases))
	}
	return v
}

// standardWebhooksCorpus returns the specification's payloads (every JSON
// file but vectors.json), sorted by name.
func standardWebhooksCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	out := loadCorpus(tb, standardWebhooksCorpusDir, "vectors.json", 4)
	if len(out) != 4 {
		tb.Fatalf("standard-webhooks corpus: got %d payloads in %s, want 4", len(out), standardWebhooksCorpusDir)
	}
	return out
}

// standardWebhooksFull is the body most single-payload tests sign.
func standardWebhooksFull(tb testing.TB) []byte {
	tb.Helper()
	return mustReadFile(tb, filepath.Join(standardWebhooksCorpusDir, "contact.created.full.json"))
}

func mustNewStandardWebhooks(tb testing.TB, o Options) *StandardWebhooks {
	tb.Helper()
	return mustNew(tb, NewStandardWebhooks, o)
}

// Header modes of standardWebhooksRequest.
const (
	standardWebhooksModeSpec  = iota // Webhook-* headers
	standardWebhooksModeSvix         // Svix-* headers
	standardWebhooksModeMixed        // Svix-Id and Svix-Timestamp, Webhook-Signature
	standardWebhooksModes
)

// standardWebhooksRequest builds a POST with the three headers; an empty
// value leaves its header out, and each line of a value becomes one header
// value, so that tests reach the repeated-header paths.
func standardWebhooksRequest(mode int, id, ts, sig string, body []byte) Request {
	n := standardWebhooksSpec
	switch mode {
	case standardWebhooksModeSvix:
		n = standardWebhooksSvix
	case standardWebhooksModeMixed:
		n = standardWebhooksNames{SvixIDHeader, SvixTimestampHeader, StandardWebhooksSignatureHeader}
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for _, kv := range [][2]string{{n.id, id}, {n.ts, ts}, {n.sig, sig}} {
		if kv[1] == "" {
			continue
		}
		for _, line := range strings.Split(kv[1], "\n") {
			h.Add(kv[0], line)
		}
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// standardWebhooksV1 is the v1 entry for body at the raw id and timestamp,
// computed independently of the code under test.
func standardWebhooksV1(id, ts string, body, secret []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(secret), "whsec_"))
	if err != nil {
		panic(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// standardWebhooksV1a is the v1a entry for body at the raw id and timestamp.
func standardWebhooksV1a(id, ts string, body []byte) string {
	msg := append([]byte(id+"."+ts+"."), body...)
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(standardWebhooksPriv, msg))
}

// Placeholders in a signature header stand for entries over the request's
// own (first) id, timestamp and body: they let table rows and fuzz seeds
// carry valid signatures without pinning the body's bytes.
const (
	standardWebhooksCur   = "{v1}"    // v1 under standardWebhooksSecret
	standardWebhooksOld   = "{old}"   // v1 under standardWebhooksSecretOld
	standardWebhooksEd    = "{v1a}"   // v1a under standardWebhooksPriv
	standardWebhooksWrong = "{wrong}" // v1 under standardWebhooksSecretWrong
)

// standardWebhooksExpand replaces the placeholders in sig.
func standardWebhooksExpand(sig, id, ts string, body []byte) string {
	if !strings.Contains(sig, "{") {
		return sig
	}
	id, _, _ = strings.Cut(id, "\n")
	ts, _, _ = strings.Cut(ts, "\n")
	return strings.NewReplacer(
		standardWebhooksCur, standardWebhooksV1(id, ts, body, standardWebhooksSecret),
		standardWebhooksOld, standardWebhooksV1(id, ts, body, standardWebhooksSecretOld),
		standardWebhooksEd, standardWebhooksV1a(id, ts, body),
		standardWebhooksWrong, standardWebhooksV1(id, ts, body, standardWebhooksSecretWrong),
	).Replace(sig)
}

// TestStandardWebhooksVector checks the signing vector that every reference
// library tests, exactly, at its own fixed clock.
func TestStandardWebhooksVector(t *testing.T) {
	vf := standardWebhooksVectors(t)
	s := mustNewStandardWebhooks(t, Options{})
	for _, v := range vf.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			at := time.Unix(v.Timestamp, 0)
			ts := strconv.FormatInt(v.Timestamp, 10)
			body := []byte(v.Payload)

			got, err := SignStandardWebhooks(v.ID, body, []byte(v.Secret), at)
			if err != nil || got != v.Signature {
				t.Fatalf("SignStandardWebhooks: got %q, %v; want %q", got, err, v.Signature)
			}
			bare := strings.TrimPrefix(v.Secret, StandardWebhooksSecretPrefix)
			if got, err := SignStandardWebhooks(v.ID, body, []byte(bare), at); err != nil || got != v.Signature {
				t.Errorf("SignStandardWebhooks(bare base64 secret): got %q, %v; want %q", got, err, v.Signature)
			}

			tests := []struct {
				name    string
				mode    int
				secrets [][]byte
				now     time.Time
				want    error
			}{
				{"webhook-* headers", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, at, nil},
				{"svix-* headers", standardWebhooksModeSvix, [][]byte{[]byte(v.Secret)}, at, nil},
				{"bare base64 secret", standardWebhooksModeSpec, [][]byte{[]byte(bare)}, at, nil},
				{"edge of tolerance, past", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, at.Add(DefaultTolerance), nil},
				{"edge of tolerance, future", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, at.Add(-DefaultTolerance), nil},
				{"one second too old", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, at.Add(DefaultTolerance + time.Second), ErrTooOld},
				{"one second too new", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, at.Add(-DefaultTolerance - time.Second), ErrTooNew},
				{"at testNow (2024)", standardWebhooksModeSpec, [][]byte{[]byte(v.Secret)}, testNow, ErrTooOld},
				{"other secret", standardWebhooksModeSpec, [][]byte{standardWebhooksSecretOld}, at, ErrNoMatch},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := standardWebhooksRequest(tt.mode, v.ID, ts, v.Signature, body)
					checkErr(t, verifyNoPanic(t, s, r, tt.secrets, tt.now), tt.want)
				})
			}
		})
	}
}

// TestStandardWebhooksHeaderCases checks every signature_header_cases row
// of vectors.json against the vector's id, timestamp, secret and payload.
func TestStandardWebhooksHeaderCases(t *testing.T) {
	vf := standardWebhooksVectors(t)
	v := vf.Vectors[0]
	s := mustNewStandardWebhooks(t, Options{})
	at := time.Unix(v.Timestamp, 0)
	for _, c := range vf.SignatureHeaderCases.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r := standardWebhooksRequest(standardWebhooksModeSpec, v.ID, strconv.FormatInt(v.Timestamp, 10), c.Header, []byte(v.Payload))
			var want error
			if !c.Valid {
				want = ErrNoMatch
			}
			checkErr(t, verifyNoPanic(t, s, r, [][]byte{[]byte(v.Secret)}, at), want)
		})
	}
}

// TestStandardWebhooksSpecExample uses the specification's example headers,
// whose secret is not published: they must parse, match no test key, and
// identify the specification's thin payload.
func TestStandardWebhooksSpecExample(t *testing.T) {
	vf := standardWebhooksVectors(t)
	e := vf.SpecExampleHeaders
	body := mustReadFile(t, filepath.Join(standardWebhooksCorpusDir, "contact.created.thin.min.json"))
	ts, _ := strconv.ParseInt(e.Timestamp, 10, 64)
	at := time.Unix(ts, 0)
	s := mustNewStandardWebhooks(t, Options{})
	r := standardWebhooksRequest(standardWebhooksModeSpec, e.ID, e.Timestamp, e.Signature, body)

	checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, at), ErrNoMatch)
	checkErr(t, verifyNoPanic(t, s, r, nil, at), ErrNoSecret)
	checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), ErrTooOld)

	got, err := s.Identify(r)
	if err != nil {
		t.Fatalf("Identify: %v", err)
	}
	want := Identity{ID: e.ID, Type: "contact.created", Created: time.Date(2022, 11, 3, 20, 26, 10, 344522000, time.UTC)}
	if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) {
		t.Errorf("Identify: got %+v, want %+v", got, want)
	}
}

// standardWebhooksWant decodes the identity from body without the code
// under test.
func standardWebhooksWant(tb testing.TB, id string, body []byte) Identity {
	tb.Helper()
	var m struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	return Identity{ID: id, Type: m.Type, Created: m.Timestamp}
}

func TestStandardWebhooksCorpus(t *testing.T) {
	s := mustNewStandardWebhooks(t, Options{})
	keys := []struct {
		name string
		key  []byte
	}{{"v1", standardWebhooksSecret}, {"v1a", standardWebhooksSK}}
	modes := []struct {
		name string
		mode int
	}{{"webhook-*", standardWebhooksModeSpec}, {"svix-*", standardWebhooksModeSvix}}
	for _, f := range standardWebhooksCorpus(t) {
		for _, k := range keys {
			for _, m := range modes {
				t.Run(f.name+"/"+k.name+"/"+m.name, func(t *testing.T) {
					r := standardWebhooksRequest(m.mode, standardWebhooksID, "", "", f.body)
					if err := s.Sign(&r, k.key, testNow); err != nil {
						t.Fatalf("Sign: %v", err)
					}
					if err := verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow); err != nil {
						t.Fatalf("Verify(signed body): got %v, want nil", err)
					}

					got, err := s.Identify(r)
					if err != nil {
						t.Fatalf("Identify: %v", err)
					}
					want := standardWebhooksWant(t, standardWebhooksID, f.body)
					if got.ID != want.ID || got.Type != want.Type || !got.Created.Equal(want.Created) {
						t.Errorf("Identify: got %+v, want %+v", got, want)
					}

					checkFlipsRejected(t, f.name, s, r, standardWebhooksSecrets, testNow)
				})
			}
		}
	}
}

// TestStandardWebhooksCrossCheckLibrary checks the scheme against the
// specification's Go library in both directions.
func TestStandardWebhooksCrossCheckLibrary(t *testing.T) {
	s := mustNewStandardWebhooks(t, Options{})
	lib, err := standardwebhooks.NewWebhook(string(standardWebhooksSecret))
	if err != nil {
		t.Fatal(err)
	}
	other, err := standardwebhooks.NewWebhook(string(standardWebhooksSecretOld))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range standardWebhooksCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			t.Run("library signs", func(t *testing.T) {
				sig, err := lib.Sign(standardWebhooksID, testNow, f.body)
				if err != nil {
					t.Fatal(err)
				}
				r := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, testTS, sig, f.body)
				checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), nil)
				ours, err := SignStandardWebhooks(standardWebhooksID, f.body, standardWebhooksSecret, testNow)
				if err != nil || ours != sig {
					t.Errorf("signature: got %q, %v (SignStandardWebhooks), want %q (library)", ours, err, sig)
				}
				sig, _ = other.Sign(standardWebhooksID, testNow, f.body)
				r = standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, testTS, sig, f.body)
				checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), ErrNoMatch)
			})
			t.Run("library verifies", func(t *testing.T) {
				// The library reads the clock itself, so sign at the real time.
				r := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, "", "", f.body)
				if err := s.Sign(&r, standardWebhooksSecret, time.Now()); err != nil {
					t.Fatal(err)
				}
				if err := lib.Verify(f.body, r.Header); err != nil {
					t.Errorf("library Verify(Sign headers %q): got %v, want nil", r.Header, err)
				}
				if err := lib.Verify(flipByte(f.body, 0), r.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Errorf("library Verify(flipped body): got %v, want %v", err, standardwebhooks.ErrNoMatchingSignature)
				}
				if err := other.Verify(f.body, r.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
					t.Errorf("library Verify(other secret): got %v, want %v", err, standardwebhooks.ErrNoMatchingSignature)
				}
			})
		})
	}
}

type standardWebhooksSvixOp struct {
	Op, Secret, ID string
	TS             int64
	Body           []byte
	Headers        map[string]string
}

type standardWebhooksSvixResult struct{ Sig, Err string }

// standardWebhooksRunSvix runs ops through svix-webhooks' own Go verifier
// and signer.
func standardWebhooksRunSvix(t *testing.T, ops []standardWebhooksSvixOp) []standardWebhooksSvixResult {
	t.Helper()
	out := make([]standardWebhooksSvixResult, len(ops))
	for i, o := range ops {
		wh, err := svix.NewWebhook(o.Secret)
		if err != nil {
			out[i].Err = err.Error()
			continue
		}
		switch o.Op {
		case "sign":
			out[i].Sig, err = wh.Sign(o.ID, time.Unix(o.TS, 0), o.Body)
			if err != nil {
				t.Fatalf("svix Sign: %v", err)
			}
		case "verify":
			h := http.Header{}
			for k, v := range o.Headers {
				h.Set(k, v)
			}
			if err := wh.Verify(o.Body, h); err != nil {
				out[i].Err = err.Error()
			}
		}
	}
	return out
}

// TestStandardWebhooksCrossCheckSvix checks the scheme against Svix's own Go
// verifier in both directions, under both header sets.
func TestStandardWebhooksCrossCheckSvix(t *testing.T) {
	s := mustNewStandardWebhooks(t, Options{})
	corpus := standardWebhooksCorpus(t)
	now := time.Now() // Svix's Verify reads the clock itself.

	type check struct {
		name  string
		op    standardWebhooksSvixOp
		after func(t *testing.T, r standardWebhooksSvixResult)
	}
	var checks []check
	for _, f := range corpus {
		checks = append(checks, check{
			name: f.name + "/svix signs",
			op:   standardWebhooksSvixOp{Op: "sign", Secret: string(standardWebhooksSecret), ID: standardWebhooksID, TS: testNow.Unix(), Body: f.body},
			after: func(t *testing.T, res standardWebhooksSvixResult) {
				for _, mode := range []int{standardWebhooksModeSpec, standardWebhooksModeSvix} {
					r := standardWebhooksRequest(mode, standardWebhooksID, testTS, res.Sig, f.body)
					checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), nil)
				}
				if ours, _ := SignStandardWebhooks(standardWebhooksID, f.body, standardWebhooksSecret, testNow); ours != res.Sig {
					t.Errorf("signature: got %q (SignStandardWebhooks), want %q (svix)", ours, res.Sig)
				}
			},
		})
		for mode, set := range []string{"webhook-*", "svix-*"} {
			r := standardWebhooksRequest(mode, standardWebhooksID, "", "", f.body)
			if err := s.Sign(&r, standardWebhooksSecret, now); err != nil {
				t.Fatal(err)
			}
			h := map[string]string{}
			for k := range r.Header {
				h[k] = r.Header.Get(k)
			}
			name := f.name + "/svix verifies " + set
			checks = append(checks,
				check{name: name, op: standardWebhooksSvixOp{Op: "verify", Secret: string(standardWebhooksSecret), Body: f.body, Headers: h},
					after: func(t *testing.T, res standardWebhooksSvixResult) {
						if res.Err != "" {
							t.Errorf("svix Verify(Sign headers %q): got %q, want no error", h, res.Err)
						}
					}},
				check{name: name + ", flipped body", op: standardWebhooksSvixOp{Op: "verify", Secret: string(standardWebhooksSecret), Body: flipByte(f.body, 0), Headers: h},
					after: func(t *testing.T, res standardWebhooksSvixResult) {
						if res.Err == "" {
							t.Errorf("svix Verify(flipped body): got no error, want one")
						}
					}},
				check{name: name + ", other secret", op: standardWebhooksSvixOp{Op: "verify", Secret: string(standardWebhooksSecretOld), Body: f.body, Headers: h},
					after: func(t *testing.T, res standardWebhooksSvixResult) {
						if res.Err == "" {
							t.Errorf("svix Verify(other secret): got no error, want one")
						}
					}},
			)
		}
	}
	ops := make([]standardWebhooksSvixOp, len(checks))
	for i, c := range checks {
		ops[i] = c.op
	}
	res := standardWebhooksRunSvix(t, ops)
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.after(t, res[i]) })
	}
}

func TestStandardWebhooksRotation(t *testing.T) {
	body := standardWebhooksFull(t)
	undecodable := []byte("whsec_not*base64")
	pk2 := []byte(StandardWebhooksPublicKeyPrefix + base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey)))
	// A whpk_ key whose bytes are the HMAC secret's key, and the reverse:
	// neither kind of key may verify the other kind of entry.
	pkFromHMAC := []byte(StandardWebhooksPublicKeyPrefix + strings.TrimPrefix(string(standardWebhooksSecretOld), StandardWebhooksSecretPrefix))
	hmacFromPK := []byte(StandardWebhooksSecretPrefix + strings.TrimPrefix(string(standardWebhooksPK), StandardWebhooksPublicKeyPrefix))

	req := func(sig string) Request {
		return standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, testTS, standardWebhooksExpand(sig, standardWebhooksID, testTS, body), body)
	}
	tests := []verifyCase{
		{"two secrets, signed by current", req(standardWebhooksCur), [][]byte{standardWebhooksSecret, standardWebhooksSecretOld}, nil},
		{"two secrets, signed by previous", req(standardWebhooksOld), [][]byte{standardWebhooksSecret, standardWebhooksSecretOld}, nil},
		{"two secrets reversed", req(standardWebhooksCur), [][]byte{standardWebhooksSecretOld, standardWebhooksSecret}, nil},
		{"retired secret no longer accepted", req(standardWebhooksOld), [][]byte{standardWebhooksSecret}, ErrNoMatch},
		{"two entries, wrong then right", req(standardWebhooksWrong + " " + standardWebhooksCur), [][]byte{standardWebhooksSecret}, nil},
		{"two entries from both secrets, one configured", req(standardWebhooksOld + " " + standardWebhooksCur), [][]byte{standardWebhooksSecret}, nil},
		{"two entries both wrong", req(standardWebhooksWrong + " " + standardWebhooksOld), [][]byte{standardWebhooksSecret}, ErrNoMatch},
		{"v1a with its public key", req(standardWebhooksEd), [][]byte{standardWebhooksPK}, nil},
		{"v1a with two public keys", req(standardWebhooksEd), [][]byte{pk2, standardWebhooksPK}, nil},
		{"v1a with another public key", req(standardWebhooksEd), [][]byte{pk2}, ErrNoMatch},
		{"v1a with only an HMAC secret", req(standardWebhooksEd), [][]byte{standardWebhooksSecret}, ErrNoMatch},
		{"v1 with only a public key", req(standardWebhooksCur), [][]byte{standardWebhooksPK}, ErrNoMatch},
		{"v1 with the HMAC key as a public key", req(standardWebhooksOld), [][]byte{pkFromHMAC}, ErrNoMatch},
		{"v1a with the public key as an HMAC secret", req(standardWebhooksEd), [][]byte{hmacFromPK}, ErrNoMatch},
		{"v1 and v1a, only HMAC secret", req(standardWebhooksEd + " " + standardWebhooksCur), [][]byte{standardWebhooksSecret}, nil},
		{"v1 and v1a, only public key", req(standardWebhooksCur + " " + standardWebhooksEd), [][]byte{standardWebhooksPK}, nil},
		{"whsk_ private key is not a verification key", req(standardWebhooksEd), [][]byte{standardWebhooksSK}, ErrNoSecret},
		{"undecodable secret is skipped", req(standardWebhooksCur), [][]byte{undecodable, standardWebhooksSecret}, nil},
		{"only an undecodable secret", req(standardWebhooksCur), [][]byte{undecodable}, ErrNoSecret},
		{"whpk_ of 31 bytes is skipped", req(standardWebhooksEd), [][]byte{[]byte("whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31)))}, ErrNoSecret},
		{"whsec_ with nothing after it", req(standardWebhooksCur), [][]byte{[]byte("whsec_")}, ErrNoSecret},
		{"no secrets (nil)", req(standardWebhooksCur), nil, ErrNoSecret},
		{"no secrets (empty)", req(standardWebhooksCur), [][]byte{}, ErrNoSecret},
		{"only an empty secret", req(standardWebhooksCur), [][]byte{{}}, ErrNoSecret},
		{"empty secret is skipped, real one used", req(standardWebhooksCur), [][]byte{nil, standardWebhooksSecret}, nil},
	}
	s := mustNewStandardWebhooks(t, Options{})
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestStandardWebhooksTolerance(t *testing.T) {
	body := standardWebhooksFull(t)
	tests := append(toleranceEdges(DefaultTolerance), []toleranceCase{
		{"default, a year old", 0, 365 * 24 * time.Hour, ErrTooOld},
		{"10s, at the edge", 10 * time.Second, 10 * time.Second, nil},
		{"10s, 11s old", 10 * time.Second, 11 * time.Second, ErrTooOld},
		{"10s, 11s in the future", 10 * time.Second, -11 * time.Second, ErrTooNew},
		{"1h, 59m old", time.Hour, 59 * time.Minute, nil},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNewStandardWebhooks(t, Options{Tolerance: tt.tolerance})
			for _, key := range [][]byte{standardWebhooksSecret, standardWebhooksSK} {
				r := signed(t, s, standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, "", "", body), key, testNow.Add(-tt.age))
				checkVerifyErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), tt.want)
			}
		})
	}
	t.Run("too old and wrong signature reports the age", func(t *testing.T) {
		s := mustNewStandardWebhooks(t, Options{})
		old := strconv.FormatInt(testNow.Add(-time.Hour).Unix(), 10)
		r := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, old, standardWebhooksV1(standardWebhooksID, old, body, standardWebhooksSecretWrong), body)
		checkErr(t, verifyNoPanic(t, s, r, standardWebhooksSecrets, testNow), ErrTooOld)
	})
}

func TestNewStandardWebhooks(t *testing.T) {
	runOptionsCases(t, NewStandardWebhooks, []optionsCase{
		{"defaults", Options{}, false},
		{"custom tolerance", Options{Tolerance: time.Minute}, false},
		{"negative tolerance", Options{Tolerance: -time.Second}, true},
		{"url set", Options{URL: "https://example.com/hook"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Header: "X-Signature"}}, true},
	})
}

// standardWebhooksAlphabet is the standard base64 alphabet in order.
const standardWebhooksAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// standardWebhooksCase is one request and the cause Verify must report.
// Header values may hold placeholders and several lines (repeated headers);
// "" leaves a header out.
type standardWebhooksCase struct {
	name        string
	mode        int
	id, ts, sig string
	body        func([]byte) []byte // changes the body after signing; nil keeps it
	secrets     [][]byte            // nil means standardWebhooksSecrets
	want        error
}

// standardWebhooksMalformedCases is the table of bad (and a few surprising
// but valid) requests, signed over body at testNow. The fuzz test reuses it.
func standardWebhooksMalformedCases(body []byte) []standardWebhooksCase {
	id, ts := standardWebhooksID, testTS
	// at signs with a timestamp other than the header's.
	at := func(ts string) string { return standardWebhooksV1(id, ts, body, standardWebhooksSecret) }
	b64 := strings.TrimPrefix(at(ts), "v1,")
	entries := func(n int, last string) string {
		return strings.Repeat(standardWebhooksWrong+" ", n-1) + last
	}
	trunc := func(b []byte) []byte { return b[:len(b)-1] }
	c := func(name string, id, ts, sig string, want error) standardWebhooksCase {
		return standardWebhooksCase{name: name, id: id, ts: ts, sig: sig, want: want}
	}
	cases := []standardWebhooksCase{
		c("valid v1", id, ts, standardWebhooksCur, nil),
		c("valid v1a", id, ts, standardWebhooksEd, nil),

		// Presence.
		c("no headers", "", "", "", ErrNotSigned),
		c("missing signature", id, ts, "", ErrNotSigned),
		c("whitespace signature", id, ts, " ", ErrNotSigned),
		c("missing id", "", ts, standardWebhooksCur, ErrMalformedHeader),
		c("whitespace id", " ", ts, standardWebhooksCur, ErrMalformedHeader),
		c("missing timestamp", id, "", standardWebhooksCur, ErrMalformedHeader),
		c("two signature headers", id, ts, standardWebhooksCur+"\n"+standardWebhooksCur, ErrMalformedHeader),
		c("two id headers", id+"\n"+id, ts, standardWebhooksCur, ErrMalformedHeader),
		c("two timestamp headers", id, ts+"\n"+ts, standardWebhooksCur, ErrMalformedHeader),
		{name: "svix id and timestamp with webhook signature (never mixed)", mode: standardWebhooksModeMixed, id: id, ts: ts, sig: standardWebhooksCur, want: ErrMalformedHeader},
		{name: "svix headers alone", mode: standardWebhooksModeSvix, id: id, ts: ts, sig: standardWebhooksCur, want: nil},

		// Timestamp.
		c("timestamp abc", id, "abc", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp negative", id, "-1", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp plus sign", id, "+"+ts, standardWebhooksCur, ErrMalformedHeader),
		c("timestamp arabic-indic digits", id, "١٧٢١٩٥٤٤٠٠", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp fullwidth digits", id, "１７２１９５４４００", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp leading space", id, " "+ts, standardWebhooksCur, ErrMalformedHeader),
		c("timestamp trailing space", id, ts+" ", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp decimal", id, ts+".0", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp leading zero", id, "0"+ts, standardWebhooksCur, ErrMalformedHeader),
		c("timestamp milliseconds", id, ts+"000", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp overflows int64", id, "99999999999999999999", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp RFC 3339", id, "2024-07-26T00:40:00Z", standardWebhooksCur, ErrMalformedHeader),
		c("timestamp 0", id, "0", standardWebhooksCur, ErrTooOld),
		c("timestamp far future", id, "999999999999", standardWebhooksCur, ErrTooNew),
		c("timestamp not the signed one", id, "1721954401", at(ts), ErrNoMatch),
		c("id not the signed one", "msg_other", ts, at(ts), ErrNoMatch),

		// Signatures.
		c("wrong secret", id, ts, standardWebhooksWrong, ErrNoMatch),
		c("v1 without comma", id, ts, "v1"+b64, ErrNoMatch),
		c("v1 with '=' separator", id, ts, "v1="+b64, ErrNoMatch),
		c("v1 empty", id, ts, "v1,", ErrNoMatch),
		c("v1 truncated", id, ts, "v1,"+b64[:43], ErrNoMatch),
		c("v1 without padding", id, ts, "v1,"+strings.TrimSuffix(b64, "="), ErrNoMatch),
		c("v1 one char too long", id, ts, "v1,"+b64+"A", ErrNoMatch),
		c("v1 url-safe alphabet", id, ts, "v1,"+b64[:10]+"-"+b64[11:], ErrNoMatch),
		c("v1 hex instead of base64", id, ts, "v1,"+strings.Repeat("ab", 32), ErrNoMatch),
		// The last character carries two zero bits; setting one decodes to
		// the same bytes in a lax decoder, and is refused here.
		c("v1 non-canonical last character", id, ts, "v1,"+b64[:42]+string(standardWebhooksAlphabet[strings.IndexByte(standardWebhooksAlphabet, b64[42])+1])+"=", ErrNoMatch),
		c("v1 uppercase version", id, ts, "V1,"+b64, ErrNoMatch),
		c("v2 with a valid HMAC (no other versions)", id, ts, "v2,"+b64, ErrNoMatch),
		c("v1a holding a v1 HMAC", id, ts, "v1a,"+b64, ErrNoMatch),
		c("v1 holding a v1a signature", id, ts, "v1,"+strings.TrimPrefix(standardWebhooksV1a(id, ts, body), "v1a,"), ErrNoMatch),
		c("comma separator instead of space", id, ts, standardWebhooksWrong+","+standardWebhooksCur, ErrNoMatch),
		c("double space between entries", id, ts, standardWebhooksWrong+"  "+standardWebhooksCur, nil),
		c("leading and trailing spaces", id, ts, " "+standardWebhooksCur+" ", nil),
		c("tab separator", id, ts, standardWebhooksWrong+"\t"+standardWebhooksCur, ErrNoMatch),
		c("unknown entries ignored", id, ts, "v0,abc x "+standardWebhooksCur+" v2,"+b64, nil),
		c("16 entries, last right", id, ts, entries(16, standardWebhooksCur), nil),
		c("17 entries", id, ts, entries(17, standardWebhooksCur), ErrMalformedHeader),
		c("17 short entries do not count", id, ts, strings.Repeat("v1,ab ", 17)+standardWebhooksCur, nil),
		c("header over 8 KiB", id, ts, standardWebhooksCur+" "+strings.Repeat("x", 8<<10), ErrMalformedHeader),
		c("id over 8 KiB", strings.Repeat("m", 8<<10+1), ts, standardWebhooksCur, ErrMalformedHeader),
		c("id with unicode is signed as bytes", "msg_ü€", ts, standardWebhooksCur, nil),

		// Body.
		{name: "body truncated by one byte", id: id, ts: ts, sig: standardWebhooksCur, body: trunc, want: ErrNoMatch},
		{name: "body with appended newline", id: id, ts: ts, sig: standardWebhooksCur, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", id: id, ts: ts, sig: standardWebhooksEd, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
		{name: "body CRLF line endings", id: id, ts: ts, sig: standardWebhooksEd, body: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }, want: ErrNoMatch},
	}
	return cases
}

// request builds the case's request: placeholders are expanded over the body as
// signed, then the body is changed.
func (tc standardWebhooksCase) request(body []byte) Request {
	sig := standardWebhooksExpand(tc.sig, tc.id, tc.ts, body)
	if tc.body != nil {
		body = tc.body(body)
	}
	return standardWebhooksRequest(tc.mode, tc.id, tc.ts, sig, body)
}

func standardWebhooksMalformedRuns(tb testing.TB) []malformedRun {
	body := standardWebhooksFull(tb)
	var cases []verifyCase
	for _, tc := range standardWebhooksMalformedCases(body) {
		cases = append(cases, verifyCase{tc.name, tc.request(body), orSecrets(tc.secrets, standardWebhooksSecrets), tc.want})
	}
	s := mustNewStandardWebhooks(tb, Options{})
	runs := []malformedRun{{s, cases}}
	// v1 signs with the HMAC secret, v1a with the Ed25519 private key; the
	// configured secrets hold the HMAC secret and the public key.
	otherSecret := []byte("whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 24)))
	otherPK := []byte(StandardWebhooksPublicKeyPrefix + base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)).Public().(ed25519.PublicKey)))
	for _, v := range []struct {
		version string
		key     []byte
	}{{"v1", standardWebhooksSecret}, {"v1a", standardWebhooksSK}} {
		runs = append(runs, malformedRun{s, genericMalformed(tb, v.version+": ", malformedSpec{
			s:        s,
			r:        signed(tb, s, jsonPost(body, map[string][]string{StandardWebhooksIDHeader: {"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}}), v.key, testNow),
			secrets:  standardWebhooksSecrets,
			wrong:    [][]byte{otherSecret, otherPK},
			sig:      signedField{header: StandardWebhooksSignatureHeader, prefix: v.version + ",", sep: ' '},
			enc:      encBase64,
			versions: []string{"v2,", "v0,", "v1b,"},
			ts:       &signedField{header: StandardWebhooksTimestampHeader},
			id:       &signedField{header: StandardWebhooksIDHeader},
			drop:     spaceListDrops(StandardWebhooksSignatureHeader),
		})})
	}
	return runs
}

func TestStandardWebhooksVerifyMalformed(t *testing.T) {
	runMalformed(t, standardWebhooksMalformedRuns(t))
}

// TestStandardWebhooksHeaderSets checks which header set is read.
func TestStandardWebhooksHeaderSets(t *testing.T) {
	body := standardWebhooksFull(t)
	s := mustNewStandardWebhooks(t, Options{})
	spec := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, testTS, standardWebhooksExpand(standardWebhooksCur, standardWebhooksID, testTS, body), body)
	svix := standardWebhooksRequest(standardWebhooksModeSvix, "msg_svix", testTS, standardWebhooksExpand(standardWebhooksCur, "msg_svix", testTS, body), body)
	merge := func(rs ...Request) Request {
		h := http.Header{}
		for _, r := range rs {
			for k, v := range r.Header {
				h[k] = v
			}
		}
		return Request{Method: http.MethodPost, Header: h, Body: body}
	}
	without := func(r Request, name string) Request {
		h := r.Header.Clone()
		h.Del(name)
		return Request{Method: r.Method, Header: h, Body: r.Body}
	}
	tests := []struct {
		name   string
		r      Request
		want   error
		wantID string
	}{
		{"webhook-* only", spec, nil, standardWebhooksID},
		{"svix-* only", svix, nil, "msg_svix"},
		{"both complete: webhook-* wins", merge(spec, svix), nil, standardWebhooksID},
		{"webhook-* without signature, svix-* complete", merge(without(spec, StandardWebhooksSignatureHeader), svix), ErrNotSigned, standardWebhooksID},
		{"webhook-* without id, svix-* complete", merge(without(spec, StandardWebhooksIDHeader), svix), ErrMalformedHeader, ""},
		{"webhook-* signature only, svix id and timestamp", merge(without(without(spec, StandardWebhooksIDHeader), StandardWebhooksTimestampHeader), without(svix, SvixSignatureHeader)), ErrMalformedHeader, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, verifyNoPanic(t, s, tt.r, standardWebhooksSecrets, testNow), tt.want)
			got, err := s.Identify(tt.r)
			if tt.wantID == "" {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Errorf("Identify: got %+v, %v; want %v", got, err, ErrInvalidPayload)
				}
				return
			}
			if err != nil || got.ID != tt.wantID {
				t.Errorf("Identify: got %+v, %v; want id %q", got, err, tt.wantID)
			}
		})
	}
	t.Run("lower-case names through http.Header.Set", func(t *testing.T) {
		h := http.Header{}
		h.Set("webhook-id", standardWebhooksID)
		h.Set("webhook-timestamp", testTS)
		h.Set("webhook-signature", standardWebhooksExpand(standardWebhooksCur, standardWebhooksID, testTS, body))
		checkErr(t, verifyNoPanic(t, s, Request{Header: h, Body: body}, standardWebhooksSecrets, testNow), nil)
	})
}

// standardWebhooksIdentifyCases is shared with the fuzz test as seeds; a
// zero want.ID means ErrInvalidPayload.
var standardWebhooksIdentifyCases = []identifyCase{
	{name: "empty", body: ``},
	{name: "null", body: `null`},
	{name: "array", body: `[{"type":"a"}]`},
	{name: "string", body: `"contact.created"`},
	{name: "not JSON", body: `type=contact.created`},
	{name: "truncated", body: `{"type":"contact.created"`},
	{name: "trailing garbage", body: `{"type":"contact.created"}}`},
	{name: "empty object", body: `{}`},
	{name: "missing type", body: `{"timestamp":"2022-11-03T20:26:10.344522Z","data":{}}`},
	{name: "empty type", body: `{"type":"","data":{}}`},
	{name: "null type", body: `{"type":null}`},
	{name: "type not a string", body: `{"type":1}`},
	{name: "type invalid UTF-8 escape", body: `{"type":"\ud800"}`, want: Identity{ID: standardWebhooksID, Type: "\uFFFD"}},
	{name: "timestamp not RFC 3339", body: `{"type":"a.b","timestamp":"yesterday"}`},
	{name: "timestamp date only", body: `{"type":"a.b","timestamp":"2022-11-03"}`},
	{name: "timestamp with bad escape", body: `{"type":"a.b","timestamp":"\x"}`},
	{
		name: "spec thin payload",
		body: `{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}`,
		want: Identity{ID: standardWebhooksID, Type: "contact.created", Created: time.Date(2022, 11, 3, 20, 26, 10, 344522000, time.UTC)},
	},
	{
		name: "timestamp with offset",
		body: `{"type":"a.b","timestamp":"2022-11-03T22:26:10+02:00"}`,
		want: Identity{ID: standardWebhooksID, Type: "a.b", Created: time.Date(2022, 11, 3, 20, 26, 10, 0, time.UTC)},
	},
	{name: "no timestamp", body: `{"type":"email.sent","created_at":"2024-01-01T00:00:00Z"}`, want: Identity{ID: standardWebhooksID, Type: "email.sent"}},
	{name: "null timestamp", body: `{"type":"a.b","timestamp":null}`, want: Identity{ID: standardWebhooksID, Type: "a.b"}},
	{name: "numeric timestamp (Clerk, milliseconds) is ignored", body: `{"data":{},"object":"event","type":"user.created","timestamp":1654012591835}`, want: Identity{ID: standardWebhooksID, Type: "user.created"}},
	{name: "nested type is not the event type", body: `{"data":{"type":"contact"},"type":"contact.created"}`, want: Identity{ID: standardWebhooksID, Type: "contact.created"}},
	{name: "last type wins, as in encoding/json", body: `{"type":"a","type":"b"}`, want: Identity{ID: standardWebhooksID, Type: "b"}},
}

func TestStandardWebhooksIdentify(t *testing.T) {
	s := mustNewStandardWebhooks(t, Options{})
	runIdentifyCases(t, s, standardWebhooksIdentifyCases, func(body []byte) Request {
		return standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, testTS, "v1,x", body)
	})

	body := []byte(`{"type":"a.b"}`)
	idTests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"512 bytes", strings.Repeat("m", 512), true},
		{"513 bytes", strings.Repeat("m", 513), false},
		{"missing", "", false},
		{"repeated", "msg_1\nmsg_1", false},
		{"invalid UTF-8", "msg_\xff", false},
		{"unicode", "msg_ü", true},
	}
	for _, tt := range idTests {
		t.Run("id "+tt.name, func(t *testing.T) {
			got, err := s.Identify(standardWebhooksRequest(standardWebhooksModeSvix, tt.id, testTS, "v1,x", body))
			if tt.ok && (err != nil || got.ID != tt.id) {
				t.Errorf("Identify: got %+v, %v; want id %q", got, err, tt.id)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidPayload) {
				t.Errorf("Identify: got %+v, %v; want %v", got, err, ErrInvalidPayload)
			}
		})
	}
}

func TestStandardWebhooksSign(t *testing.T) {
	body := standardWebhooksFull(t)
	s := mustNewStandardWebhooks(t, Options{})

	t.Run("derives a deterministic id", func(t *testing.T) {
		var a, b Request
		a.Body, b.Body = body, body
		if err := s.Sign(&a, standardWebhooksSecret, testNow); err != nil {
			t.Fatal(err)
		}
		if err := s.Sign(&b, standardWebhooksSecret, testNow); err != nil {
			t.Fatal(err)
		}
		id := a.Header.Get(StandardWebhooksIDHeader)
		if !strings.HasPrefix(id, "msg_") || id != b.Header.Get(StandardWebhooksIDHeader) {
			t.Errorf("Sign ids: got %q and %q, want one msg_ id", id, b.Header.Get(StandardWebhooksIDHeader))
		}
		if got := a.Header.Get(StandardWebhooksTimestampHeader); got != testTS {
			t.Errorf("timestamp: got %q, want %q", got, testTS)
		}
		var c Request
		c.Body = body
		_ = s.Sign(&c, standardWebhooksSecret, testNow.Add(time.Second))
		if c.Header.Get(StandardWebhooksIDHeader) == id {
			t.Errorf("Sign at another time: got the same id %q, want another", id)
		}
	})
	t.Run("keeps the request's id", func(t *testing.T) {
		r := standardWebhooksRequest(standardWebhooksModeSvix, "msg_kept", "", "", body)
		if err := s.Sign(&r, standardWebhooksSK, testNow); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(SvixIDHeader); got != "msg_kept" {
			t.Errorf("Svix-Id: got %q, want msg_kept", got)
		}
		if got := r.Header.Get(SvixSignatureHeader); !strings.HasPrefix(got, "v1a,") {
			t.Errorf("Svix-Signature: got %q, want a v1a entry", got)
		}
		if len(r.Header.Values(StandardWebhooksSignatureHeader)) != 0 {
			t.Errorf("Sign added Webhook-Signature to a Svix request")
		}
	})
	for _, key := range [][]byte{standardWebhooksPK, []byte("whsk_AAAA"), []byte("not base64!"), nil} {
		t.Run("refuses key "+string(key), func(t *testing.T) {
			r := Request{Body: body}
			if err := s.Sign(&r, key, testNow); !errors.Is(err, ErrNoSecret) {
				t.Errorf("Sign: got %v, want %v", err, ErrNoSecret)
			}
		})
	}
}

func FuzzStandardWebhooksVerify(f *testing.F) {
	for _, c := range standardWebhooksCorpus(f) {
		f.Add(standardWebhooksID, testTS, standardWebhooksCur, uint8(standardWebhooksModeSpec), c.body)
		f.Add("msg_x", testTS, standardWebhooksWrong+" "+standardWebhooksEd, uint8(standardWebhooksModeSvix), c.body)
		f.Add(standardWebhooksID, strconv.FormatInt(testNow.Unix()-60, 10), standardWebhooksOld, uint8(standardWebhooksModeSpec), c.body)
	}
	body := standardWebhooksFull(f)
	for _, tc := range standardWebhooksMalformedCases(body) {
		if len(tc.sig)+len(tc.id) > 8<<10 {
			continue // a huge seed makes every mutation crawl
		}
		b := changed(body, tc.body)
		f.Add(tc.id, tc.ts, tc.sig, uint8(tc.mode), b)
	}

	s := mustNewStandardWebhooks(f, Options{})
	secrets := [][]byte{standardWebhooksSecret, standardWebhooksSecretOld, standardWebhooksPK}
	f.Fuzz(func(t *testing.T, id, ts, sig string, mode uint8, body []byte) {
		m := int(mode % standardWebhooksModes)
		sig = standardWebhooksExpand(sig, id, ts, body)
		r := standardWebhooksRequest(m, id, ts, sig, body)

		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}

		// Accepted: one value per header, from one set, a timestamp inside
		// the window, and an entry equal to what SignStandardWebhooks makes.
		if m == standardWebhooksModeMixed {
			t.Fatalf("Verify accepted svix id/timestamp with a webhook signature")
		}
		if strings.Contains(id+ts+sig, "\n") {
			t.Fatalf("Verify accepted repeated headers")
		}
		at := acceptedUnix(t, ts)
		entries := strings.Split(sig, " ")
		for _, key := range [][]byte{standardWebhooksSecret, standardWebhooksSecretOld, standardWebhooksSK} {
			want, err := SignStandardWebhooks(id, body, key, at)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e == want {
					return
				}
			}
		}
		t.Fatalf("Verify(id %q, ts %q, sig %q): got nil, but no entry equals SignStandardWebhooks for a configured key", id, ts, sig)
	})
}

func FuzzStandardWebhooksIdentify(f *testing.F) {
	for _, c := range standardWebhooksCorpus(f) {
		f.Add(standardWebhooksID, c.body)
	}
	for _, tc := range standardWebhooksIdentifyCases {
		f.Add(standardWebhooksID, []byte(tc.body))
	}
	s := mustNewStandardWebhooks(f, Options{})
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		got, ok := fuzzIdentify(t, s, standardWebhooksRequest(standardWebhooksModeSpec, id, testTS, "v1,x", body))
		if !ok {
			return
		}
		if got.ID != id || got.Type == "" || len(got.ID) > MaxIdentity || !utf8.ValidString(got.ID+got.Type) {
			t.Fatalf("Identify(%q, %q): got %+v", id, body, got)
		}
	})
}

// BenchmarkStandardWebhooks compares the v1 (HMAC) path with a bare HMAC
// over the same bytes and with the specification's Go library, on the
// specification's full example payload.
func BenchmarkStandardWebhooks(b *testing.B) {
	body := standardWebhooksFull(b)
	s := mustNewStandardWebhooks(b, Options{})
	r := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, "", "", body)
	if err := s.Sign(&r, standardWebhooksSecret, testNow); err != nil {
		b.Fatal(err)
	}
	secrets := [][]byte{standardWebhooksSecret}
	lib, err := standardwebhooks.NewWebhook(string(standardWebhooksSecret))
	if err != nil {
		b.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(standardWebhooksKey32)
	prefix := []byte(standardWebhooksID + "." + testTS + ".")

	sv, err := svix.NewWebhook(string(standardWebhooksSecret))
	if err != nil {
		b.Fatal(err)
	}

	// Each variant must succeed once before it is timed.
	if err := lib.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		b.Fatal(err)
	}
	if err := sv.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		b.Fatal(err)
	}

	var sum [sha256.Size]byte
	benchScheme(b, s, r, secrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, key)
		mac.Write(prefix)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
	benchRun(b, "standard-webhooks-lib/Verify", len(body), func(b *testing.B) {
		if err := lib.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			b.Fatal(err)
		}
	})
	benchRun(b, "svix/Verify", len(body), func(b *testing.B) {
		if err := sv.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStandardWebhooksV1a is the asymmetric variant: a v1a entry and a
// whpk_ key, beside a bare ed25519.Verify over the same bytes.
func BenchmarkStandardWebhooksV1a(b *testing.B) {
	body := standardWebhooksFull(b)
	s := mustNewStandardWebhooks(b, Options{})
	ra := standardWebhooksRequest(standardWebhooksModeSpec, standardWebhooksID, "", "", body)
	if err := s.Sign(&ra, standardWebhooksSK, testNow); err != nil {
		b.Fatal(err)
	}
	signed := append([]byte(standardWebhooksID+"."+testTS+"."), body...)
	edSig, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(ra.Header.Get(StandardWebhooksSignatureHeader), "v1a,"))
	pub := standardWebhooksPriv.Public().(ed25519.PublicKey)
	benchScheme(b, s, ra, [][]byte{standardWebhooksPK}, testNow, "bare-ed25519", func(b *testing.B) {
		if !ed25519.Verify(pub, signed, edSig) {
			b.Fatal("ed25519.Verify failed")
		}
	})
}
