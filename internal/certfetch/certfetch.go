// Package certfetch is the adapter to the providers that sign with a
// certificate they serve by URL (SNS, PayPal): it fetches those
// certificates over HTTPS, caches them, and visits SNS's subscription
// confirmation URLs. It never decides which URLs may be fetched: the
// schemes in internal/signature allow-list every URL before ingest passes
// it here. Like the AWS adapters it classifies its failures once: an error
// wrapping inbox.ErrUnavailable may pass on a retry (a timeout, a 5xx), any
// other is the provider's refusal (ErrRefused).
package certfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// ErrRefused means the provider answered, and the answer is no
// certificate (a 4xx, a redirect, a body that is not one) or a refused
// confirmation: asking again soon gives the same answer.
var ErrRefused = errors.New("certfetch: refused")

// Limits of the cache and of a response.
const (
	// TTL is how long a fetched certificate is used before it is fetched
	// again (never past its NotAfter). Providers rotate by publishing a
	// new URL, so an entry is only refreshed, never wrong.
	TTL = 24 * time.Hour
	// RefusedTTL is how long a refusal is remembered, so that deliveries
	// naming an allow-listed URL that serves no certificate are answered
	// without a fetch each.
	RefusedTTL = 5 * time.Minute
	// MaxEntries bounds the cache: a provider serves a few certificates
	// per region at once.
	MaxEntries = 64
	// MaxBody bounds a response read: a PEM certificate (with its chain)
	// is a few KB.
	MaxBody = 64 << 10
)

// Fetcher fetches and caches certificates, and confirms subscriptions.
// It is safe for concurrent use; concurrent requests for one URL share
// one fetch.
type Fetcher struct {
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
	fetches int // fetches started, for tests
}

type entry struct {
	done    chan struct{} // closed once cert or err is set
	cert    *x509.Certificate
	err     error // a refusal; transient failures are not cached
	expires time.Time
}

// New returns a Fetcher that uses client, or Client() when it is nil.
func New(client *http.Client) *Fetcher {
	if client == nil {
		client = Client(nil)
	}
	return &Fetcher{client: client, now: time.Now, entries: map[string]*entry{}}
}

// Client is the HTTP client a Fetcher uses: TLS 1.2 or later, verified
// against roots (the system's when nil), redirects not followed (a
// redirect could leave the allow-listed host), no timeout of its own
// (every call is bounded by its context).
func Client(roots *x509.CertPool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	t.MaxIdleConnsPerHost = 2
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Certificate returns the certificate served at url: from the cache, or
// fetched with ctx.
func (f *Fetcher) Certificate(ctx context.Context, url string) (*x509.Certificate, error) {
	for {
		f.mu.Lock()
		e, ok := f.entries[url]
		if ok {
			select {
			case <-e.done:
				if f.now().Before(e.expires) {
					f.mu.Unlock()
					return e.cert, e.err
				}
				delete(f.entries, url) // stale: fetch again
				ok = false
			default:
			}
		}
		if ok {
			f.mu.Unlock()
			select {
			case <-e.done:
				continue // finished, or failed and removed: look again
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: certificate %s: %v", inbox.ErrUnavailable, url, ctx.Err())
			}
		}
		e = &entry{done: make(chan struct{})}
		f.evictLocked()
		f.entries[url] = e
		f.fetches++
		f.mu.Unlock()

		cert, err := f.settle(ctx, url, e)
		return cert, err
	}
}

// settle fetches url for its entry e and records the outcome: a
// certificate until TTL (never past its NotAfter), a refusal until
// RefusedTTL; a transient failure, or a panic, removes e so that the
// next caller fetches again. Either way e's waiters are released.
func (f *Fetcher) settle(ctx context.Context, url string, e *entry) (cert *x509.Certificate, err error) {
	settled := false
	defer func() {
		if !settled {
			f.mu.Lock()
			if f.entries[url] == e {
				delete(f.entries, url)
			}
			close(e.done)
			f.mu.Unlock()
		}
	}()
	cert, err = f.fetch(ctx, url)
	f.mu.Lock()
	defer f.mu.Unlock()
	settled = true
	now := f.now()
	switch {
	case err == nil:
		e.cert, e.expires = cert, now.Add(TTL)
		if cert.NotAfter.Before(e.expires) {
			e.expires = cert.NotAfter
		}
	case errors.Is(err, ErrRefused):
		e.err, e.expires = err, now.Add(RefusedTTL)
	case f.entries[url] == e:
		delete(f.entries, url) // transient: the next delivery tries again
	}
	close(e.done)
	return cert, err
}

// evictLocked makes room for one entry: it drops the expired ones and,
// if the cache is still full, the finished one that expires first.
func (f *Fetcher) evictLocked() {
	if len(f.entries) < MaxEntries {
		return
	}
	now := f.now()
	var first string
	var firstAt time.Time
	for url, e := range f.entries {
		select {
		case <-e.done:
		default:
			continue // in flight
		}
		if !now.Before(e.expires) {
			delete(f.entries, url)
			continue
		}
		if first == "" || e.expires.Before(firstAt) {
			first, firstAt = url, e.expires
		}
	}
	if len(f.entries) >= MaxEntries && first != "" {
		delete(f.entries, first)
	}
}

// fetch GETs url and parses the first certificate of the PEM it serves.
func (f *Fetcher) fetch(ctx context.Context, url string) (*x509.Certificate, error) {
	body, err := f.get(ctx, url)
	if err != nil {
		return nil, err
	}
	for rest := body; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%w: %s serves no PEM certificate", ErrRefused, url)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrRefused, url, err)
		}
		return cert, nil
	}
}

// Confirm visits a subscription's confirmation URL with ctx.
func (f *Fetcher) Confirm(ctx context.Context, url string) error {
	_, err := f.get(ctx, url)
	return err
}

// get GETs url and returns its body, at most MaxBody bytes, when the
// answer is 200; otherwise an error classified as transient (no answer, a
// 5xx, a 429) or ErrRefused (any other status, a longer body).
func (f *Fetcher) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRefused, url, err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", inbox.ErrUnavailable, url, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: GET %s: %s", inbox.ErrUnavailable, url, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: GET %s: %s", ErrRefused, url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: GET %s: %v", inbox.ErrUnavailable, url, err)
	case len(body) > MaxBody:
		return nil, fmt.Errorf("%w: GET %s: body over %d bytes", ErrRefused, url, MaxBody)
	}
	return body, nil
}
