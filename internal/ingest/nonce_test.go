package ingest

// Deliveries whose signature covers a nonce, not the body's bytes
// (signature.Nonced). The invariants:
//   - a verified nonce is taken with the body it came with: the same nonce
//     with another body is a bad signature (401), nothing stored, at any
//     source of the kind (one key may sign for several endpoints);
//   - the provider's retry of one delivery (same nonce, same body) is
//     answered as any retry: stored once, then a duplicate;
//   - a claim is made only for a verified delivery, and one that cannot be
//     made now is a 503 with nothing stored; a claim whose event was not
//     stored is made again by the retry.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"hash/crc32"
	"math/big"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// memNonces is ClaimNonce in memory, with an injectable failure.
type memNonces struct {
	mu     sync.Mutex
	claims map[string]string
	calls  int
	err    error
}

func (m *memNonces) ClaimNonce(_ context.Context, id, binding string, _, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.err != nil {
		return m.err
	}
	if b, ok := m.claims[id]; ok && b != binding {
		return inbox.ErrNonceUsed
	}
	m.claims[id] = binding
	return nil
}

// noncedScheme verifies "signed:<nonce>:<id>" bodies... as a provider
// whose signature covers only the nonce header would: the body is free.
type noncedScheme struct{}

func (noncedScheme) Verify(r signature.Request, _ [][]byte, _ time.Time) error {
	if r.Header.Get("X-Sig") != "good" {
		return signature.ErrNoMatch
	}
	return nil
}
func (noncedScheme) Identify(r signature.Request) (signature.Identity, error) {
	var b struct{ ID string }
	if json.Unmarshal(r.Body, &b) != nil || b.ID == "" {
		return signature.Identity{}, signature.ErrInvalidPayload
	}
	return signature.Identity{ID: b.ID, Type: "t"}, nil
}
func (noncedScheme) Nonce(r signature.Request) (string, time.Time) {
	return r.Header.Get("X-Nonce"), testNow.Add(time.Hour)
}

func noncedRequest(sig, nonce, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/nonced", PathParameters: map[string]string{"source": "nonced"},
		Headers: map[string]string{"x-sig": sig, "x-nonce": nonce}, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}},
	}
}

// noncedTo sends req to another source.
func noncedTo(name string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	req.RawPath, req.PathParameters = "/webhooks/"+name, map[string]string{"source": name}
	return req
}

func TestNoncedDeliveries(t *testing.T) {
	f := newFixture(t)
	set, err := source.NewSet("wi/", &source.Source{Name: "nonced", Kind: "nonced", Scheme: noncedScheme{}},
		&source.Source{Name: "nonced2", Kind: "nonced", Scheme: noncedScheme{}})
	if err != nil {
		t.Fatal(err)
	}
	nonces := &memNonces{claims: map[string]string{}}
	f.h.cfg.Sources, f.h.cfg.Nonces = set, nonces
	f.h.cfg.Secrets = fakeSecrets{"wi/nonced": {[]byte("k")}, "wi/nonced2": {[]byte("k")}}
	send := func(req events.APIGatewayV2HTTPRequest) int {
		resp, err := f.h.HandleV2(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for _, step := range []struct {
		name      string
		req       events.APIGatewayV2HTTPRequest
		claimErr  error
		want      int
		wantCalls int
		stored    int
	}{
		{"forged signature: no claim", noncedRequest("bad", "n1", `{"ID":"e1"}`), nil, 401, 0, 0},
		{"claim unavailable", noncedRequest("good", "n1", `{"ID":"e1"}`), inbox.ErrUnavailable, 503, 1, 0},
		{"the retry", noncedRequest("good", "n1", `{"ID":"e1"}`), nil, 202, 2, 1},
		{"the retry again", noncedRequest("good", "n1", `{"ID":"e1"}`), nil, 200, 3, 1},
		{"another body under the nonce", noncedRequest("good", "n1", `{"ID":"e2"}`), nil, 401, 4, 1},
		{"the same id, another body", noncedRequest("good", "n1", `{"ID":"e1","amount":99}`), nil, 401, 5, 1},
		{"another body under the nonce, at another source of the kind", noncedTo("nonced2", noncedRequest("good", "n1", `{"ID":"e2"}`)), nil, 401, 6, 1},
		{"the same delivery at another source of the kind", noncedTo("nonced2", noncedRequest("good", "n1", `{"ID":"e1"}`)), nil, 202, 7, 2},
		{"another nonce", noncedRequest("good", "n2", `{"ID":"e2"}`), nil, 202, 8, 3},
		{"an unidentifiable body: no claim", noncedRequest("good", "n3", `{}`), nil, 400, 8, 3},
	} {
		nonces.err = step.claimErr
		if got := send(step.req); got != step.want {
			t.Fatalf("%s: %d, want %d", step.name, got, step.want)
		}
		if nonces.calls != step.wantCalls || len(f.store.events) != step.stored {
			t.Fatalf("%s: %d claims, %d stored; want %d, %d", step.name, nonces.calls, len(f.store.events), step.wantCalls, step.stored)
		}
	}
	cfg := f.h.cfg
	cfg.Nonces = nil
	if _, err := New(cfg); err == nil {
		t.Fatal("New without Nonces for a nonced source: no error")
	}
}

// TestPayPalCRCForgeryRefused: a PayPal body covered only by its CRC32
// can be rewritten with the same CRC32 (a few chosen trailing bytes), and
// the signature still verifies; ingest takes the transmission id once,
// with the first body, so the forgery is refused.
func TestPayPalCRCForgeryRefused(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "paypal"}, NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	cert, _ := x509.ParseCertificate(der)
	f := newFixture(t)
	set, err := source.Parse(`[{"name":"paypal","kind":"paypal"}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	nonces := &memNonces{claims: map[string]string{}}
	f.h.cfg.Sources, f.h.cfg.Nonces = set, nonces
	f.h.cfg.Remote = &fakeRemote{certificate: func(string) (*x509.Certificate, error) { return cert, nil }}
	f.h.cfg.Secrets = fakeSecrets{"wi/paypal": {[]byte("WH-1")}}
	src, _ := set.Lookup("paypal", "")
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	signing, _ := json.Marshal(signature.PayPalSigningKey{WebhookID: "WH-1", PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))})
	genuine := signature.Request{Header: http.Header{signature.PayPalCertURLHeader: {"https://api.paypal.com/v1/notifications/certs/CERT-1"}},
		Body: []byte(`{"id":"WH-genuine","event_type":"PAYMENT.CAPTURE.COMPLETED","create_time":"2026-11-30T12:00:00Z","resource":{"amount":{"value":"1.00"}}}`)}
	if err := src.Scheme.(signature.Signer).Sign(&genuine, signing, testNow); err != nil {
		t.Fatal(err)
	}
	forged := genuine
	forged.Body = matchCRC32([]byte(`{"id":"WH-forged","event_type":"PAYMENT.CAPTURE.COMPLETED","create_time":"2026-11-30T12:00:00Z","resource":{"amount":{"value":"99999.00"}}}`), crc32.ChecksumIEEE(genuine.Body))
	forged.Certificate = cert
	if err := src.Scheme.Verify(forged, [][]byte{[]byte("WH-1")}, testNow); err != nil {
		t.Fatalf("the forgery does not verify (%v): the test no longer shows what it guards against", err)
	}
	send := func(r signature.Request) int {
		h := map[string]string{}
		for k := range r.Header {
			h[k] = r.Header.Get(k)
		}
		resp, err := f.h.HandleV2(context.Background(), events.APIGatewayV2HTTPRequest{
			RawPath: "/webhooks/paypal", PathParameters: map[string]string{"source": "paypal"}, Headers: h, Body: string(r.Body),
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	if got := send(genuine); got != 202 {
		t.Fatalf("genuine: %d", got)
	}
	if got := send(forged); got != 401 {
		t.Fatalf("forged body under the genuine signature: %d, want 401", got)
	}
	if got := send(genuine); got != 200 {
		t.Fatalf("genuine retry: %d, want 200", got)
	}
	for _, e := range f.store.events {
		if e.Key.EventID != "WH-genuine" {
			t.Fatalf("stored %s", e.Key.EventID)
		}
		if _, kept := e.Headers[signature.PayPalTransmissionSigHeader]; kept {
			t.Fatal("the signature is kept with the event")
		}
	}
}

// matchCRC32 appends 32 spaces or tabs to prefix so that its CRC32 is
// want: CRC32 is affine over GF(2), and swapping one space for a tab flips
// a fixed set of CRC bits, so a choice of swaps solves a linear system.
func matchCRC32(prefix []byte, want uint32) []byte {
	const n = 48
	base := append(append([]byte(nil), prefix...), make([]byte, n)...)
	for i := len(prefix); i < len(base); i++ {
		base[i] = ' '
	}
	c0 := crc32.ChecksumIEEE(base)
	type row struct {
		v   uint32
		sel uint64
	}
	var basis [32]*row
	for i := range n {
		b := append([]byte(nil), base...)
		b[len(prefix)+i] = '\t'
		r := &row{v: crc32.ChecksumIEEE(b) ^ c0, sel: 1 << i}
		for bit := 31; bit >= 0 && r.v != 0; bit-- {
			if r.v>>bit&1 == 0 {
				continue
			}
			if basis[bit] == nil {
				basis[bit] = r
				break
			}
			r.v ^= basis[bit].v
			r.sel ^= basis[bit].sel
		}
	}
	target, sel := c0^want, uint64(0)
	for bit := 31; bit >= 0; bit-- {
		if target>>bit&1 == 1 && basis[bit] != nil {
			target ^= basis[bit].v
			sel ^= basis[bit].sel
		}
	}
	for i := range n {
		if sel>>i&1 == 1 {
			base[len(prefix)+i] = '\t'
		}
	}
	if crc32.ChecksumIEEE(base) != want {
		panic(errors.New("no solution"))
	}
	return base
}
