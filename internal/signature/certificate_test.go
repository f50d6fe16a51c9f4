package signature

// Keys and certificates the certificate-signed schemes' tests (SNS,
// PayPal) make for themselves, and the tests of the pieces those schemes
// share.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"
)

// testRSAKeys are generated once per test binary: two 2048-bit keys (the
// signer's and another) and a 1024-bit one, too weak to be trusted.
var testRSAKeys = sync.OnceValue(func() [3]*rsa.PrivateKey {
	var ks [3]*rsa.PrivateKey
	for i, bits := range []int{2048, 2048, 1024} {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		ks[i] = k
	}
	return ks
})

func testRSA() *rsa.PrivateKey      { return testRSAKeys()[0] }
func testRSAOther() *rsa.PrivateKey { return testRSAKeys()[1] }
func testRSAWeak() *rsa.PrivateKey  { return testRSAKeys()[2] }

// testCertificate is a self-signed certificate for pub valid from
// notBefore to notAfter.
func testCertificate(tb testing.TB, key crypto.Signer, notBefore, notAfter time.Time) *x509.Certificate {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "webhook-inbox test signer"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// testCert is testCertificate valid for a year around testNow.
func testCert(tb testing.TB, key crypto.Signer) *x509.Certificate {
	return testCertificate(tb, key, testNow.Add(-180*24*time.Hour), testNow.Add(180*24*time.Hour))
}

// pemPKCS8 is key as a PEM PKCS #8 private key, Sign's form.
func pemPKCS8(tb testing.TB, key any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestVerifyCertRSA(t *testing.T) {
	key := testRSA()
	digest := sha256.Sum256([]byte("signed"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := testCert(t, key)
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		now  time.Time
		h    crypto.Hash
		sig  []byte
		want error
	}{
		{"valid", good, testNow, crypto.SHA256, sig, nil},
		{"first instant of validity", good, good.NotBefore, crypto.SHA256, sig, nil},
		{"last instant of validity", good, good.NotAfter, crypto.SHA256, sig, nil},
		{"no certificate", nil, testNow, crypto.SHA256, sig, ErrUntrustedCertificate},
		{"not yet valid", good, good.NotBefore.Add(-time.Second), crypto.SHA256, sig, ErrUntrustedCertificate},
		{"expired", good, good.NotAfter.Add(time.Second), crypto.SHA256, sig, ErrUntrustedCertificate},
		{"another key's certificate", testCert(t, testRSAOther()), testNow, crypto.SHA256, sig, ErrNoMatch},
		{"a 1024-bit key", testCert(t, testRSAWeak()), testNow, crypto.SHA256, sig, ErrUntrustedCertificate},
		{"an ECDSA key", testCert(t, ec), testNow, crypto.SHA256, sig, ErrUntrustedCertificate},
		{"another hash", good, testNow, crypto.SHA1, sig, ErrNoMatch},
		{"signature truncated", good, testNow, crypto.SHA256, sig[:len(sig)-1], ErrNoMatch},
		{"signature flipped", good, testNow, crypto.SHA256, flipByte(sig, 7), ErrNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := digest[:]
			if tc.h == crypto.SHA1 {
				d = d[:20]
			}
			err := verifyCertRSA(tc.cert, tc.now, tc.h, d, tc.sig)
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestProviderURL(t *testing.T) {
	hosts := []string{"sns.us-east-1.amazonaws.com", "api.paypal.com"}
	for _, tc := range []struct {
		raw   string
		query bool
		ok    bool
	}{
		{"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem", false, true},
		{"https://api.paypal.com/v1/notifications/certs/CERT-1", false, true},
		{"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=x", true, true},
		{"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=x", false, false},
		{"http://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem", false, false},
		{"HTTPS://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem", false, false},
		{"https://SNS.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com:443/SimpleNotificationService-abc.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-abc.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com./SimpleNotificationService-abc.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com.evil.example/x.pem", false, false},
		{"https://evil.example/sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"https://evil.example#@sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com@evil.example/x.pem", false, false},
		{"https://user:pw@sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"https://evil.example\\@sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com/x.pem#frag", false, false},
		{"https://sns.us-east-1.amazonaws.com/x.pem?", false, false},
		{"https://sns.us-east-1.amazonaws.com/%78.pem", false, false},
		{"https://sns.us-east-1.amazonaws.com/a/../x.pem", false, true}, // the path is the scheme's to check
		{"https://sns.us-east-1.amazonaws.com/x .pem", false, false},
		{"https://sns.us-east-1.amazonaws.com/x\x00.pem", false, false},
		{"https://[::1]/x.pem", false, false},
		{"https://127.0.0.1/x.pem", false, false},
		{"//sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"sns.us-east-1.amazonaws.com/x.pem", false, false},
		{"", false, false},
	} {
		_, err := providerURL(tc.raw, hosts, tc.query)
		if (err == nil) != tc.ok {
			t.Errorf("providerURL(%q, query %v): %v, want ok %v", tc.raw, tc.query, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUntrustedCertificate) {
			t.Errorf("providerURL(%q): %v, want ErrUntrustedCertificate", tc.raw, err)
		}
	}
}
