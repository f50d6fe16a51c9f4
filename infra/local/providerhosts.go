package local

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// ProviderHosts stands in for the hosts that certificate-signed providers
// serve from (SNS, PayPal), as the emulators stand in for AWS: ingest's
// certificate fetcher reaches it through Client instead of the internet.
// It serves each local certificate-signed source's certificate (made for
// its signing_key) at the source's certificate_url, and answers SNS's
// ConfirmSubscription; any other URL is a 404. The allow-lists that decide
// what ingest may fetch are the schemes' own, unchanged.
type ProviderHosts struct {
	log   *slog.Logger
	certs map[string][]byte // URL → PEM certificate

	mu        sync.Mutex
	confirmed []string
}

// NewProviderHosts makes the certificates of the sources that need one,
// valid from an hour before now for ten years.
func NewProviderHosts(f SourcesFile, now time.Time, log *slog.Logger) (*ProviderHosts, error) {
	p := &ProviderHosts{log: log, certs: map[string][]byte{}}
	for _, s := range f.Sources {
		scheme, err := s.Scheme()
		if err != nil {
			return nil, err
		}
		if _, ok := scheme.(signature.Certified); !ok {
			if s.CertificateURL != "" {
				return nil, fmt.Errorf("source %s: certificate_url set, but kind %s fetches no certificate", s.Name, s.Kind)
			}
			continue
		}
		if s.CertificateURL == "" || s.SigningKey == "" {
			return nil, fmt.Errorf("source %s: kind %s needs certificate_url and signing_key", s.Name, s.Kind)
		}
		cert, err := selfSigned(s.SigningKey, now)
		if err != nil {
			return nil, fmt.Errorf("source %s: signing_key: %w", s.Name, err)
		}
		p.certs[s.CertificateURL] = cert
	}
	return p, nil
}

// selfSigned is a certificate for the PEM private key keyPEM, signed by
// itself.
func selfSigned(keyPEM string, now time.Time) ([]byte, error) {
	block, _ := pem.Decode([]byte(keyPEM))
	if block == nil {
		return nil, errors.New("not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("not a signing key")
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.Unix()),
		Subject:      pkix.Name{CommonName: "webhook-inbox local provider (dev only)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, signer.Public(), signer)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Client is the HTTP client ingest fetches through.
func (p *ProviderHosts) Client() *http.Client { return &http.Client{Transport: p} }

// Confirmed lists the subscription confirmation URLs visited.
func (p *ProviderHosts) Confirmed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.confirmed...)
}

// RoundTrip implements http.RoundTripper.
func (p *ProviderHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		return respond(r, http.StatusMethodNotAllowed, nil), nil
	}
	u := r.URL.String()
	if c, ok := p.certs[u]; ok {
		return respond(r, http.StatusOK, c), nil
	}
	q := r.URL.Query()
	if strings.HasPrefix(r.URL.Host, "sns.") && r.URL.Path == "/" && q.Get("Action") == "ConfirmSubscription" {
		p.mu.Lock()
		p.confirmed = append(p.confirmed, u)
		p.mu.Unlock()
		p.log.Info("subscription confirmed (local stand-in for SNS)", "topic_arn", q.Get("TopicArn"))
		return respond(r, http.StatusOK, []byte("<ConfirmSubscriptionResponse/>")), nil
	}
	return respond(r, http.StatusNotFound, nil), nil
}

func respond(r *http.Request, status int, body []byte) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}
