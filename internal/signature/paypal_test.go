package signature

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	paypalWebhookID = "8PT597110X687430LK"
	paypalTestCert  = "https://api-m.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-bb9bdc1b"
	paypalTransID   = "69cd13f0-d67a-11e5-baa3-778b53f4ae55"
	paypalEvent     = `{"id":"WH-58D329510W468432D-8HN650336L201105X","event_version":"1.0","create_time":"2024-07-26T00:39:58.000Z","resource_type":"capture","resource_version":"2.0","event_type":"PAYMENT.CAPTURE.COMPLETED","summary":"Payment completed for $ 11.30 USD","resource":{"id":"42311647XV020574X","status":"COMPLETED","amount":{"currency_code":"USD","value":"11.30"}}}`
)

var paypalSecrets = [][]byte{[]byte("1JE4291016473214C"), []byte(paypalWebhookID)}

var paypalTime = testNow.UTC().Format(time.RFC3339)

// paypalSignAs signs as PayPal documents it, without Sign:
// "<id>|<time>|<webhook id>|<crc32 of body, decimal>", RSA SHA-256.
func paypalSignAs(tb testing.TB, key *rsa.PrivateKey, id, ts, webhookID string, body []byte) string {
	tb.Helper()
	d := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%s|%d", id, ts, webhookID, crc32.ChecksumIEEE(body)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// paypalRequest is a delivery with these headers; "-" leaves one out.
func paypalRequest(body []byte, cert *x509.Certificate, sig, id, ts, certURL, algo string) Request {
	h := http.Header{"Content-Type": {"application/json"}}
	for name, v := range map[string]string{
		PayPalTransmissionSigHeader:  sig,
		PayPalTransmissionIDHeader:   id,
		PayPalTransmissionTimeHeader: ts,
		PayPalCertURLHeader:          certURL,
		PayPalAuthAlgoHeader:         algo,
	} {
		if v != "-" {
			h.Set(name, v)
		}
	}
	return Request{Method: http.MethodPost, Header: h, Body: body, Certificate: cert}
}

func TestPayPalSignVerifies(t *testing.T) {
	p := mustNew(t, NewPayPal, Options{})
	key, _ := json.Marshal(PayPalSigningKey{WebhookID: paypalWebhookID, PrivateKey: string(pemPKCS8(t, testRSA()))})
	r := signed(t, p, paypalRequest([]byte(paypalEvent), testCert(t, testRSA()), "-", "-", "-", paypalTestCert, "-"), key, testNow)
	if err := p.Verify(r, paypalSecrets, testNow); err != nil {
		t.Fatalf("Sign then Verify: %v", err)
	}
	// Sign's signature verifies by PayPal's documented string.
	want := paypalSignAs(t, testRSA(), r.Header.Get(PayPalTransmissionIDHeader), r.Header.Get(PayPalTransmissionTimeHeader), paypalWebhookID, r.Body)
	sig, _ := base64.StdEncoding.DecodeString(r.Header.Get(PayPalTransmissionSigHeader))
	w, _ := base64.StdEncoding.DecodeString(want)
	if !bytes.Equal(sig, w) || r.Header.Get(PayPalTransmissionTimeHeader) != paypalTime {
		t.Fatalf("Sign wrote %q, want %q at %s", r.Header, want, paypalTime)
	}
	for _, bad := range [][]byte{[]byte("{}"), []byte(`{"webhook_id":"x","private_key":"no"}`), []byte(`{"private_key":"` + strings.ReplaceAll(string(pemPKCS8(t, testRSA())), "\n", `\n`) + `"}`)} {
		r := paypalRequest([]byte(paypalEvent), nil, "-", "-", "-", paypalTestCert, "-")
		if err := p.Sign(&r, bad, testNow); err == nil {
			t.Errorf("Sign with key %.40q: no error", bad)
		}
	}
}

func paypalMalformedRuns(tb testing.TB) []malformedRun {
	p := mustNew(tb, NewPayPal, Options{})
	key := testRSA()
	cert := testCert(tb, key)
	body := []byte(paypalEvent)
	ok := paypalSignAs(tb, key, paypalTransID, paypalTime, paypalWebhookID, body)
	req := func(sig, id, ts, certURL, algo string) Request {
		return paypalRequest(body, cert, sig, id, ts, certURL, algo)
	}
	at := func(ts string) Request {
		return req(paypalSignAs(tb, key, paypalTransID, ts, paypalWebhookID, body), paypalTransID, ts, paypalTestCert, "SHA256withRSA")
	}
	valid := req(ok, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA")
	var cases []verifyCase
	add := func(name string, r Request, want error) {
		cases = append(cases, verifyCase{name, r, paypalSecrets, want})
	}
	add("valid", valid, nil)
	add("valid, signed for the other webhook id", req(paypalSignAs(tb, key, paypalTransID, paypalTime, string(paypalSecrets[0]), body), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), nil)
	add("valid, time in milliseconds", at(testNow.UTC().Format("2006-01-02T15:04:05.000Z")), nil)
	add("valid, time with an offset", at(testNow.In(time.FixedZone("", 2*3600)).Format(time.RFC3339)), nil)
	add("valid, 4 days old less a second", at(testNow.Add(-PayPalDefaultTolerance+time.Second).UTC().Format(time.RFC3339)), nil)
	add("valid, on the sandbox host", paypalRequest(body, cert, ok, paypalTransID, paypalTime, strings.Replace(paypalTestCert, "api-m.", "api.sandbox.", 1), "SHA256withRSA"), nil)
	raw, _ := base64.StdEncoding.DecodeString(ok)
	for _, i := range []int{0, 1, 31, 64, 128, 200, 254, 255} {
		add(fmt.Sprintf("signature byte %d flipped", i), req(base64.StdEncoding.EncodeToString(flipByte(raw, i)), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	}
	add("signature truncated", req(base64.StdEncoding.EncodeToString(raw[:255]), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	add("signature URL-safe", req(base64.URLEncoding.EncodeToString(raw), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), errRejected)
	add("signature unpadded", req(base64.RawStdEncoding.EncodeToString(raw[:254]), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrMalformedHeader)
	add("signature hex", req(fmt.Sprintf("%x", raw), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), errRejected)
	add("signature 2 KB", req(base64.StdEncoding.EncodeToString(make([]byte, 2048)), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrMalformedHeader)
	add("no signature", req("-", paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNotSigned)
	add("signature blank", req(" ", paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNotSigned)
	add("no transmission id", req(ok, "-", paypalTime, paypalTestCert, "SHA256withRSA"), errRejected)
	add("no transmission time", req(ok, paypalTransID, "-", paypalTestCert, "SHA256withRSA"), errRejected)
	add("no certificate URL", req(ok, paypalTransID, paypalTime, "-", "SHA256withRSA"), ErrNotSigned)
	add("no algorithm", req(ok, paypalTransID, paypalTime, paypalTestCert, "-"), ErrMalformedHeader)
	for _, algo := range []string{"SHA1withRSA", "sha256withrsa", "SHA256withRSA ", "SHA512withRSA", "RS256"} {
		add("algorithm "+algo, req(ok, paypalTransID, paypalTime, paypalTestCert, algo), ErrMalformedHeader)
	}
	add("transmission id changed", req(ok, "69cd13f0-d67a-11e5-baa3-778b53f4ae56", paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	add("transmission id with a '|'", req(ok, paypalTransID+"|x", paypalTime, paypalTestCert, "SHA256withRSA"), ErrMalformedHeader)
	add("id and time moved across the '|'", req(paypalSignAs(tb, key, paypalTransID+"|"+paypalTime[:4], paypalTime[4:], paypalWebhookID, body), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	add("time changed by a second", req(ok, paypalTransID, testNow.Add(time.Second).UTC().Format(time.RFC3339), paypalTestCert, "SHA256withRSA"), errRejected)
	add("time rewritten with milliseconds", req(ok, paypalTransID, testNow.UTC().Format("2006-01-02T15:04:05.000Z"), paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	add("time with a '|'", req(ok, paypalTransID, paypalTime+"|", paypalTestCert, "SHA256withRSA"), ErrMalformedHeader)
	add("time unix seconds", at(testTS), ErrMalformedHeader)
	add("time without a zone", at("2024-07-26T00:40:00"), ErrMalformedHeader)
	add("time 4 days and a second old", at(testNow.Add(-PayPalDefaultTolerance-time.Second).UTC().Format(time.RFC3339)), ErrTooOld)
	add("time 6 minutes ahead", at(testNow.Add(6*time.Minute).UTC().Format(time.RFC3339)), ErrTooNew)
	add("signed for an unknown webhook id", req(paypalSignAs(tb, key, paypalTransID, paypalTime, "3XW12345AB678901C", body), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	add("signed over the body's CRC in hex", req(base64.StdEncoding.EncodeToString(mustRSA(tb, key, fmt.Sprintf("%s|%s|%s|%x", paypalTransID, paypalTime, paypalWebhookID, crc32.ChecksumIEEE(body)))), paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	for name, b := range map[string][]byte{
		"body changed":          bytes.Replace(body, []byte("11.30"), []byte("11.31"), 2),
		"body truncated":        body[:len(body)-1],
		"body with a newline":   append(bytes.Clone(body), '\n'),
		"body re-encoded":       mustReencode(tb, body),
		"body empty":            nil,
		"another event's body":  []byte(strings.Replace(paypalEvent, "WH-58D", "WH-59D", 1)),
		"body with a BOM":       append([]byte("\ufeff"), body...),
		"body in another order": []byte(`{"event_type":"PAYMENT.CAPTURE.COMPLETED",` + paypalEvent[1:]),
	} {
		add(name, paypalRequest(b, cert, ok, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), ErrNoMatch)
	}
	for _, u := range []string{
		"http://api-m.paypal.com/v1/notifications/certs/CERT-1",
		"https://api-m.paypal.com.evil.example/v1/notifications/certs/CERT-1",
		"https://evil.example/v1/notifications/certs/CERT-1",
		"https://www.paypal.com/v1/notifications/certs/CERT-1",
		"https://paypal.com/v1/notifications/certs/CERT-1",
		"https://api-m.paypal.com/v1/notifications/certs/",
		"https://api-m.paypal.com/v1/notifications/certs/CERT-1/x",
		"https://api-m.paypal.com/v1/notifications/CERT-1",
		"https://api-m.paypal.com/v1/notifications/certs/CERT-1?x=1",
		"https://api-m.paypal.com:443/v1/notifications/certs/CERT-1",
		"https://api-m.paypal.com/v1/notifications/certs/%2e%2e",
		"https://x@api-m.paypal.com/v1/notifications/certs/CERT-1",
		"https://API-M.PAYPAL.COM/v1/notifications/certs/CERT-1",
		"https://api-m.paypal.com/v1/notifications/certs/../../../x",
	} {
		add("certificate at "+u, req(ok, paypalTransID, paypalTime, u, "SHA256withRSA"), ErrUntrustedCertificate)
	}
	cases = append(cases,
		verifyCase{"no certificate fetched", paypalRequest(body, nil, ok, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), paypalSecrets, ErrUntrustedCertificate},
		verifyCase{"another key's certificate", paypalRequest(body, testCert(tb, testRSAOther()), ok, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), paypalSecrets, ErrNoMatch},
		verifyCase{"expired certificate", paypalRequest(body, testCertificate(tb, key, testNow.Add(-48*time.Hour), testNow.Add(-time.Hour)), ok, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA"), paypalSecrets, ErrUntrustedCertificate},
		verifyCase{"no webhook ids", valid, nil, ErrNoSecret},
		verifyCase{"only a webhook id with a '|'", valid, [][]byte{[]byte(paypalWebhookID + "|x")}, ErrNoSecret},
		verifyCase{"only another webhook id", valid, paypalSecrets[:1], ErrNoMatch},
	)
	return []malformedRun{{p, cases}}
}

func mustRSA(tb testing.TB, key *rsa.PrivateKey, s string) []byte {
	d := sha256.Sum256([]byte(s))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	if err != nil {
		tb.Fatal(err)
	}
	return sig
}

func mustReencode(tb testing.TB, body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		tb.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestPayPalVerifyMalformed(t *testing.T) { runMalformed(t, paypalMalformedRuns(t)) }

func TestPayPalTolerance(t *testing.T) {
	key := testRSA()
	cert := testCert(t, key)
	body := []byte(paypalEvent)
	for _, tc := range []struct {
		tol, age time.Duration
		want     error
	}{
		{0, PayPalDefaultTolerance, nil},
		{0, PayPalDefaultTolerance + time.Second, ErrTooOld},
		{time.Hour, time.Hour, nil},
		{time.Hour, time.Hour + time.Second, ErrTooOld},
		{time.Hour, -5 * time.Minute, nil},
		{time.Hour, -5*time.Minute - time.Second, ErrTooNew},
	} {
		ts := testNow.Add(-tc.age).UTC().Format(time.RFC3339)
		r := paypalRequest(body, cert, paypalSignAs(t, key, paypalTransID, ts, paypalWebhookID, body), paypalTransID, ts, paypalTestCert, "SHA256withRSA")
		err := mustNew(t, NewPayPal, Options{Tolerance: tc.tol}).Verify(r, paypalSecrets, testNow)
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("tolerance %s, age %s: %v, want %v", tc.tol, tc.age, err, tc.want)
		}
	}
}

// TestPayPalProviderVectors verifies a delivery PayPal signed, with the
// certificate its URL served, as PayPal's own Node SDK recorded them (see
// testdata/vectors/README.md), at the instant it was sent.
func TestPayPalProviderVectors(t *testing.T) {
	dir := "testdata/vectors/paypal/paypal-node-sdk/"
	body := mustReadFile(t, dir+"body.json")
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(mustReadFile(t, dir+"headers.txt")))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		h.Set(k, v)
	}
	webhookID := strings.TrimSpace(string(mustReadFile(t, dir+"webhook_id.txt")))
	r := Request{Method: http.MethodPost, Header: h, Body: body, Certificate: mustCertificate(t, dir+"cert.pem")}
	at, err := time.Parse(time.RFC3339, h.Get(PayPalTransmissionTimeHeader))
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, NewPayPal, Options{})
	if u, err := p.CertificateURL(r); err != nil || u != h.Get(PayPalCertURLHeader) {
		t.Fatalf("CertificateURL: %q, %v", u, err)
	}
	if err := p.Verify(r, [][]byte{[]byte(webhookID)}, at.Add(time.Minute)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if id, err := p.Identify(r); err != nil || !strings.HasPrefix(id.ID, "WH-") || id.Type == "" {
		t.Fatalf("Identify: %+v, %v", id, err)
	}
	if err := p.Verify(r, paypalSecrets, at); !errors.Is(err, ErrNoMatch) {
		t.Errorf("Verify for other webhook ids: %v, want ErrNoMatch", err)
	}
	for i := 0; i < len(body); i += 1 + len(body)/64 {
		c := r
		c.Body = flipByte(body, i)
		if err := p.Verify(c, [][]byte{[]byte(webhookID)}, at); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("body byte %d changed: %v, want ErrNoMatch", i, err)
		}
	}
}

var paypalIdentifyCases = []identifyCase{
	{"capture completed", paypalEvent, Identity{ID: "WH-58D329510W468432D-8HN650336L201105X", Type: "PAYMENT.CAPTURE.COMPLETED", Created: time.Date(2024, 7, 26, 0, 39, 58, 0, time.UTC)}},
	{"create_time with an offset", `{"id":"WH-1","event_type":"X","create_time":"2024-07-26T02:39:58+02:00"}`, Identity{ID: "WH-1", Type: "X", Created: time.Date(2024, 7, 26, 0, 39, 58, 0, time.UTC)}},
	{"no create_time", `{"id":"WH-1","event_type":"X"}`, Identity{ID: "WH-1", Type: "X"}},
	{"no id", `{"event_type":"X"}`, Identity{}},
	{"id a number", `{"id":1,"event_type":"X"}`, Identity{}},
	{"no event_type", `{"id":"WH-1"}`, Identity{}},
	{"create_time not RFC 3339", `{"id":"WH-1","event_type":"X","create_time":"today"}`, Identity{}},
	{"not JSON", `id=WH-1`, Identity{}},
	{"an array", `[{"id":"WH-1","event_type":"X"}]`, Identity{}},
}

func TestPayPalIdentify(t *testing.T) {
	runIdentifyCases(t, mustNew(t, NewPayPal, Options{}), paypalIdentifyCases, func(b []byte) Request {
		return paypalRequest(b, nil, "-", "-", "-", "-", "-")
	})
}

func FuzzPayPalVerify(f *testing.F) {
	key := testRSA()
	body := []byte(paypalEvent)
	f.Add(body, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA", true)
	f.Add(body, paypalTransID+"|", "x", "https://api.paypal.com/v1/notifications/certs/A", "SHA1withRSA", false)
	p := mustNew(f, NewPayPal, Options{})
	cert := testCert(f, key)
	f.Fuzz(func(t *testing.T, body []byte, id, ts, certURL, algo string, sign bool) {
		sig := "AAAA"
		if sign {
			sig = paypalSignAs(t, key, id, ts, paypalWebhookID, body)
		}
		r := paypalRequest(body, cert, sig, id, ts, certURL, algo)
		u, uerr := p.CertificateURL(r)
		if !fuzzVerify(t, p, r, paypalSecrets, testNow) {
			return
		}
		if uerr != nil || u != certURL || algo != "SHA256withRSA" || strings.Contains(id+ts, "|") {
			t.Fatalf("Verify accepted id %q, time %q, certificate %q (%v), algorithm %q", id, ts, certURL, uerr, algo)
		}
	})
}

func FuzzPayPalIdentify(f *testing.F) {
	for _, tc := range paypalIdentifyCases {
		f.Add([]byte(tc.body))
	}
	p := mustNew(f, NewPayPal, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzIdentifyValid(t, p, paypalRequest(body, nil, "-", "-", "-", "-", "-"))
	})
}

// BenchmarkPayPal compares the scheme, with its certificate as a warm
// cache holds it, with the RSA verification of PayPal's string alone.
func BenchmarkPayPal(b *testing.B) {
	key := testRSA()
	body := []byte(paypalEvent)
	sigText := paypalSignAs(b, key, paypalTransID, paypalTime, paypalWebhookID, body)
	r := paypalRequest(body, testCert(b, key), sigText, paypalTransID, paypalTime, paypalTestCert, "SHA256withRSA")
	sig, _ := base64.StdEncoding.DecodeString(sigText)
	signed := fmt.Appendf(nil, "%s|%s|%s|%d", paypalTransID, paypalTime, paypalWebhookID, crc32.ChecksumIEEE(body))
	benchScheme(b, mustNew(b, NewPayPal, Options{}), r, [][]byte{[]byte(paypalWebhookID)}, testNow, "bare-rsa-sha256", func(b *testing.B) {
		d := sha256.Sum256(signed)
		if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, d[:], sig) != nil {
			b.Fatal("no match")
		}
	})
}
