package ingest

// Certificate-signed deliveries (signature.Certified, signature.Confirmer).
// The invariants:
//   - nothing is fetched from a URL the scheme's allow-list refuses, and no
//     secret is looked up for it: it is a bad signature (401);
//   - a certificate the provider does not serve is a bad signature (401);
//     one that cannot be fetched now is a 503, so the provider retries;
//     either way nothing is stored;
//   - every fetch and confirmation is bounded by the invocation's deadline
//     less the answer's margin;
//   - a subscription is confirmed only after its delivery verified, and a
//     confirmation stores nothing; one the provider refuses is a 400, one
//     that cannot be made now a 503.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/certfetch"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// certScheme is a certificate-signed scheme driven by fields.
type certScheme struct {
	certURL      func(signature.Request) (string, error)
	precheck     func(signature.Request) error
	verify       func(signature.Request) error
	confirmation func(signature.Request) (string, signature.Reply, bool, error)
}

func (c *certScheme) CertificateURL(r signature.Request) (string, error) { return c.certURL(r) }
func (c *certScheme) Precheck(r signature.Request, _ [][]byte, _ time.Time) error {
	return c.precheck(r)
}
func (c *certScheme) Verify(r signature.Request, _ [][]byte, _ time.Time) error {
	return c.verify(r)
}
func (c *certScheme) Identify(r signature.Request) (signature.Identity, error) {
	return signature.Identity{ID: "msg-" + string(r.Body), Type: "Notification"}, nil
}
func (c *certScheme) Confirmation(r signature.Request) (string, signature.Reply, bool, error) {
	return c.confirmation(r)
}

// fakeRemote records what ingest asks of the provider.
type fakeRemote struct {
	mu          sync.Mutex
	certificate func(url string) (*x509.Certificate, error)
	confirm     func(url string) error
	fetched     []string
	confirmed   []string
	deadlines   []time.Time
}

func (f *fakeRemote) Certificate(ctx context.Context, url string) (*x509.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, _ := ctx.Deadline()
	f.fetched, f.deadlines = append(f.fetched, url), append(f.deadlines, d)
	return f.certificate(url)
}

func (f *fakeRemote) Confirm(ctx context.Context, url string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, _ := ctx.Deadline()
	f.confirmed, f.deadlines = append(f.confirmed, url), append(f.deadlines, d)
	return f.confirm(url)
}

// countingSecrets counts lookups.
type countingSecrets struct {
	fakeSecrets
	gets int
}

func (c *countingSecrets) Get(ctx context.Context, id string) (source.Keys, error) {
	c.gets++
	return c.fakeSecrets.Get(ctx, id)
}

var testCertificate = &x509.Certificate{Subject: pkix.Name{CommonName: "the provider's"}}

func TestCertifiedDeliveries(t *testing.T) {
	const certURL = "https://certs.provider.example/signing.pem"
	errRefused := errors.New("404 Not Found")
	errTransient := errors.New("timeout")
	for _, tc := range []struct {
		name          string
		body          string
		urlErr        error
		precheckErr   error
		fetchErr      error
		verifyErr     error
		confirm       bool
		confirmationE error
		confirmErr    error
		wantStatus    int
		wantFetch     bool
		wantConfirm   bool
		wantStored    bool
		wantSecretGet bool
	}{
		{name: "notification", body: "n1", wantStatus: 202, wantFetch: true, wantStored: true, wantSecretGet: true},
		{name: "certificate URL refused", body: "n1", urlErr: signature.ErrUntrustedCertificate, wantStatus: 401},
		{name: "unsigned", body: "n1", urlErr: signature.ErrNotSigned, wantStatus: 401},
		{name: "another topic", body: "n1", precheckErr: signature.ErrNoMatch, wantStatus: 401, wantSecretGet: true},
		{name: "out of its window", body: "n1", precheckErr: signature.ErrTooOld, wantStatus: 401, wantSecretGet: true},
		{name: "certificate refused by the provider", body: "n1", fetchErr: errRefused, wantStatus: 401, wantFetch: true, wantSecretGet: true},
		{name: "certificate unavailable", body: "n1", fetchErr: errTransient, wantStatus: 503, wantFetch: true, wantSecretGet: true},
		{name: "bad signature", body: "n1", verifyErr: signature.ErrNoMatch, wantStatus: 401, wantFetch: true, wantSecretGet: true},
		{name: "forged confirmation", body: "c1", confirm: true, verifyErr: signature.ErrNoMatch, wantStatus: 401, wantFetch: true, wantSecretGet: true},
		{name: "confirmation", body: "c1", confirm: true, wantStatus: 200, wantFetch: true, wantConfirm: true, wantSecretGet: true},
		{name: "confirmation refused by the provider", body: "c1", confirm: true, confirmErr: errRefused, wantStatus: 400, wantFetch: true, wantConfirm: true, wantSecretGet: true},
		{name: "confirmation unavailable", body: "c1", confirm: true, confirmErr: errTransient, wantStatus: 503, wantFetch: true, wantConfirm: true, wantSecretGet: true},
		{name: "confirmation URL refused", body: "c1", confirm: true, confirmationE: signature.ErrUntrustedCertificate, wantStatus: 400, wantFetch: true, wantSecretGet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var verified *x509.Certificate
			cs := &certScheme{
				certURL: func(signature.Request) (string, error) { return certURL, tc.urlErr },
				precheck: func(r signature.Request) error {
					if r.Certificate != nil {
						t.Error("Precheck given a certificate: it must run before the fetch")
					}
					return tc.precheckErr
				},
				verify: func(r signature.Request) error {
					verified = r.Certificate
					return tc.verifyErr
				},
				confirmation: func(r signature.Request) (string, signature.Reply, bool, error) {
					if r.Certificate != testCertificate {
						t.Error("Confirmation asked of a delivery not verified with the fetched certificate")
					}
					return "https://confirm.provider.example/?token=t", signature.Reply{Status: 200, ContentType: "text/plain", Body: []byte("confirmed")}, tc.confirm && tc.confirmationE == nil, tc.confirmationE
				},
			}
			remote := &fakeRemote{
				certificate: func(string) (*x509.Certificate, error) {
					switch {
					case tc.fetchErr == errTransient:
						return nil, errors.Join(inbox.ErrUnavailable, tc.fetchErr)
					case tc.fetchErr != nil:
						return nil, tc.fetchErr
					}
					return testCertificate, nil
				},
				confirm: func(string) error {
					if tc.confirmErr == errTransient {
						return errors.Join(inbox.ErrUnavailable, tc.confirmErr)
					}
					return tc.confirmErr
				},
			}
			f := newFixture(t)
			set, err := source.NewSet("wi/", &source.Source{Name: "certified", Kind: "certified", Scheme: cs})
			if err != nil {
				t.Fatal(err)
			}
			secrets := &countingSecrets{fakeSecrets: fakeSecrets{"wi/certified": {[]byte("topic")}}}
			f.h.cfg.Sources, f.h.cfg.Secrets, f.h.cfg.Remote = set, secrets, remote
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(3*time.Second))
			defer cancel()
			req := fakeRequest("POST", tc.body, map[string]string{"source": "certified"})
			resp, err := f.h.HandleV2(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, resp.Body, tc.wantStatus)
			}
			if got := len(remote.fetched) > 0; got != tc.wantFetch {
				t.Errorf("fetched %v, want a fetch %v", remote.fetched, tc.wantFetch)
			}
			if got := len(remote.confirmed) > 0; got != tc.wantConfirm {
				t.Errorf("confirmed %v, want a confirmation %v", remote.confirmed, tc.wantConfirm)
			}
			if got := secrets.gets > 0; got != tc.wantSecretGet {
				t.Errorf("%d secret lookups, want some %v", secrets.gets, tc.wantSecretGet)
			}
			if got := len(f.store.events) > 0; got != tc.wantStored || len(f.queue.sent) > 0 != tc.wantStored {
				t.Errorf("stored %d, queued %d; want stored %v", len(f.store.events), len(f.queue.sent), tc.wantStored)
			}
			if tc.wantFetch && tc.fetchErr == nil && verified != testCertificate {
				t.Errorf("Verify saw certificate %v, want the fetched one", verified)
			}
			limit, _ := ctx.Deadline()
			for _, d := range remote.deadlines {
				if d.IsZero() || d.After(limit.Add(-answerMargin)) {
					t.Errorf("a call to the provider bounded by %v, want by the deadline less %s (%v)", d, answerMargin, limit.Add(-answerMargin))
				}
			}
		})
	}
}

func TestNewRequiresRemoteForCertifiedSources(t *testing.T) {
	f := newFixture(t)
	cfg := f.h.cfg
	set, err := source.Parse(`[{"name":"topics","kind":"sns"}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sources, cfg.Remote = set, nil
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "topics") {
		t.Fatalf("New without Remote for an sns source: %v, want an error naming it", err)
	}
	cfg.Remote = &fakeRemote{}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
}

// snsProvider is SNS as a loopback HTTPS server: it serves the signing
// certificate at its real URL on sns.us-east-1.amazonaws.com and records
// ConfirmSubscription calls. Its client resolves that host to the server
// and trusts the test's CA: the URLs are the real ones, checked by the
// real allow-list.
type snsProvider struct {
	srv       *httptest.Server
	client    *http.Client
	key       []byte // PEM private key of the signing certificate
	mu        sync.Mutex
	certHits  int
	confirmed []url.Values
}

const (
	snsHost        = "sns.us-east-1.amazonaws.com"
	snsTopic       = "arn:aws:sns:us-east-1:123456789012:orders"
	snsCertURL     = "https://" + snsHost + "/SimpleNotificationService-0123456789abcdef.pem"
	snsSubscribeTo = "https://" + snsHost + "/?Action=ConfirmSubscription&TopicArn=" + snsTopic + "&Token=2336412f37fb687f"
)

func newSNSProvider(t *testing.T) *snsProvider {
	t.Helper()
	ca, caKey := testCA(t)
	signer, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signerCert := issue(t, ca, caKey, signer.Public(), "sns.amazonaws.com")
	tlsKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tlsCert := issue(t, ca, caKey, tlsKey.Public(), snsHost)
	der, _ := x509.MarshalPKCS8PrivateKey(signer)
	p := &snsProvider{key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case r.Host != snsHost:
			http.Error(w, "wrong host", http.StatusBadRequest)
		case r.URL.Path == "/SimpleNotificationService-0123456789abcdef.pem":
			p.certHits++
			w.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: signerCert.Raw}))
		case r.URL.Path == "/" && r.URL.Query().Get("Action") == "ConfirmSubscription":
			p.confirmed = append(p.confirmed, r.URL.Query())
			w.Write([]byte("<ConfirmSubscriptionResponse/>"))
		default:
			http.NotFound(w, r)
		}
	}))
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{tlsCert.Raw}, PrivateKey: tlsKey}}}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p.client = certfetch.Client(pool)
	addr := p.srv.Listener.Addr().String()
	p.client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, hostport string) (net.Conn, error) {
		if hostport != snsHost+":443" {
			return nil, errors.New("the test provider serves " + snsHost + " only, not " + hostport)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return p
}

func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, pub any, name string) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// snsDelivery is an SNS message of type typ, signed by p at now.
func (p *snsProvider) delivery(t *testing.T, s signature.Scheme, typ, id, topic string, now time.Time) events.APIGatewayV2HTTPRequest {
	t.Helper()
	m := map[string]string{"Type": typ, "MessageId": id, "TopicArn": topic, "Message": `{"order":"ord_1"}`, "SigningCertURL": snsCertURL}
	if typ != signature.SNSNotification {
		m["Token"], m["SubscribeURL"] = "2336412f37fb687f", strings.Replace(snsSubscribeTo, snsTopic, topic, 1)
	}
	body, _ := json.Marshal(m)
	r := signature.Request{Body: body}
	if err := s.(signature.Signer).Sign(&r, p.key, now); err != nil {
		t.Fatal(err)
	}
	return events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/topics", PathParameters: map[string]string{"source": "topics"},
		Headers: map[string]string{"content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": typ},
		Body:    string(r.Body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost},
		},
	}
}

// TestSNSOverHTTPS runs SNS's whole exchange through the real scheme and
// the real certificate fetcher over TLS: a subscription confirmed once
// verified, notifications stored once, the certificate fetched once, and
// a topic the endpoint does not accept refused and never confirmed.
func TestSNSOverHTTPS(t *testing.T) {
	p := newSNSProvider(t)
	f := newFixture(t)
	set, err := source.Parse(`[{"name":"topics","kind":"sns"}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.h.cfg.Sources, f.h.cfg.Remote, f.h.cfg.Now = set, certfetch.New(p.client), func() time.Time { return now }
	f.h.cfg.Secrets = fakeSecrets{"wi/topics": {[]byte(snsTopic)}}
	s, _ := set.Lookup("topics", "")
	send := func(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := f.h.HandleV2(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	other := "arn:aws:sns:us-east-1:999999999999:orders"
	if resp := send(p.delivery(t, s.Scheme, signature.SNSSubscriptionConfirmation, "m0", other, now)); resp.StatusCode != 401 {
		t.Fatalf("another account's topic: %d %s, want 401", resp.StatusCode, resp.Body)
	}
	if resp := send(p.delivery(t, s.Scheme, signature.SNSSubscriptionConfirmation, "m1", snsTopic, now)); resp.StatusCode != 200 || !strings.Contains(resp.Body, "confirmed") {
		t.Fatalf("confirmation: %d %s", resp.StatusCode, resp.Body)
	}
	for i, want := range []int{202, 200} {
		if resp := send(p.delivery(t, s.Scheme, signature.SNSNotification, "m2", snsTopic, now)); resp.StatusCode != want {
			t.Fatalf("notification, delivery %d: %d %s, want %d", i+1, resp.StatusCode, resp.Body, want)
		}
	}
	if resp := send(p.delivery(t, s.Scheme, signature.SNSUnsubscribeConfirmation, "m3", snsTopic, now)); resp.StatusCode != 202 {
		t.Fatalf("unsubscribe confirmation: %d %s", resp.StatusCode, resp.Body)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.confirmed) != 1 || p.confirmed[0].Get("TopicArn") != snsTopic || p.confirmed[0].Get("Token") != "2336412f37fb687f" {
		t.Fatalf("confirmations %v, want one, of %s", p.confirmed, snsTopic)
	}
	if p.certHits != 1 {
		t.Fatalf("certificate fetched %d times, want once (cached)", p.certHits)
	}
	var types []string
	for _, e := range f.store.events {
		types = append(types, e.Type)
	}
	if len(f.store.events) != 2 {
		t.Fatalf("stored %v; want the notification and the unsubscribe confirmation", types)
	}
}
