package certfetch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// certPEM is a self-signed certificate valid until notAfter, as PEM.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "signer"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// server is a loopback HTTPS server answering each path with its route,
// counting the requests it serves.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, routes map[string]http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if h, ok := routes[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func serve(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// fetcher trusts s's certificate (Client's settings, s's roots) and reads
// the clock from *now.
func fetcher(s *server, now *time.Time) *Fetcher {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	f := New(Client(pool))
	f.now = func() time.Time { return *now }
	return f
}

func TestCertificateCachedAndShared(t *testing.T) {
	pemCert := certPEM(t, time.Now().Add(365*24*time.Hour))
	release := make(chan struct{})
	s := newServer(t, map[string]http.HandlerFunc{"/c.pem": func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write(pemCert)
	}})
	now := time.Now()
	f := fetcher(s, &now)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			c, err := f.Certificate(context.Background(), s.URL+"/c.pem")
			if err == nil && c.Subject.CommonName != "signer" {
				err = fmt.Errorf("got %v", c.Subject)
			}
			errs <- err
		})
	}
	time.Sleep(50 * time.Millisecond) // let them all wait on one fetch
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Certificate(context.Background(), s.URL+"/c.pem"); err != nil {
		t.Fatal(err)
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("%d fetches for 11 calls, want 1", n)
	}
	now = now.Add(TTL)
	if _, err := f.Certificate(context.Background(), s.URL+"/c.pem"); err != nil || s.hits.Load() != 2 {
		t.Fatalf("after the TTL: %v, %d fetches; want a second fetch", err, s.hits.Load())
	}
}

func TestCertificateNotCachedPastNotAfter(t *testing.T) {
	notAfter := time.Now().Add(time.Hour)
	s := newServer(t, map[string]http.HandlerFunc{"/c.pem": serve(certPEM(t, notAfter))})
	now := time.Now()
	f := fetcher(s, &now)
	f.Certificate(context.Background(), s.URL+"/c.pem")
	now = notAfter
	f.Certificate(context.Background(), s.URL+"/c.pem")
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2: an entry lives no longer than its certificate", n)
	}
}

func TestCertificateFailures(t *testing.T) {
	good := certPEM(t, time.Now().Add(time.Hour))
	keyFirst := append(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1}}), good...)
	s := newServer(t, map[string]http.HandlerFunc{
		"/missing.pem":  status(http.StatusNotFound),
		"/forbidden":    status(http.StatusForbidden),
		"/redirect":     func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/good.pem", http.StatusFound) },
		"/good.pem":     serve(good),
		"/key-first":    serve(keyFirst),
		"/not-pem":      serve([]byte("hello")),
		"/bad-der":      serve(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})),
		"/huge":         serve([]byte(strings.Repeat("A", MaxBody+1))),
		"/error":        status(http.StatusInternalServerError),
		"/unavailable":  status(http.StatusServiceUnavailable),
		"/throttled":    status(http.StatusTooManyRequests),
		"/slow":         func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"/empty-200":    serve(nil),
		"/created-201":  func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated); w.Write(good) },
		"/pem-at-64kib": serve(append(good, strings.Repeat("\n", MaxBody-len(good))...)),
	})
	now := time.Now()
	for _, tc := range []struct {
		path string
		want error // nil: a certificate
	}{
		{"/good.pem", nil},
		{"/key-first", nil},
		{"/pem-at-64kib", nil},
		{"/missing.pem", ErrRefused},
		{"/forbidden", ErrRefused},
		{"/redirect", ErrRefused},
		{"/not-pem", ErrRefused},
		{"/bad-der", ErrRefused},
		{"/huge", ErrRefused},
		{"/empty-200", ErrRefused},
		{"/created-201", ErrRefused},
		{"/error", inbox.ErrUnavailable},
		{"/unavailable", inbox.ErrUnavailable},
		{"/throttled", inbox.ErrUnavailable},
		{"/slow", inbox.ErrUnavailable},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f := fetcher(s, &now)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			before := s.hits.Load()
			c, err := f.Certificate(ctx, s.URL+tc.path)
			switch {
			case tc.want == nil && (err != nil || c == nil):
				t.Fatalf("got %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// A refusal is remembered for RefusedTTL, a transient failure
			// not at all.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel2()
			f.Certificate(ctx2, s.URL+tc.path)
			fetched := s.hits.Load() - before
			// (A redirect is not followed: one hit per fetch there too.)
			want := int64(1)
			if errors.Is(tc.want, inbox.ErrUnavailable) {
				want = 2
			}
			if fetched != want {
				t.Fatalf("%d fetches for two calls, want %d", fetched, want)
			}
			if tc.want == ErrRefused {
				now = now.Add(RefusedTTL)
				f.Certificate(context.Background(), s.URL+tc.path)
				if s.hits.Load()-before != want+1 {
					t.Fatalf("a refusal remembered past RefusedTTL")
				}
			}
		})
	}
}

func TestCertificateUntrustedTLS(t *testing.T) {
	s := newServer(t, map[string]http.HandlerFunc{"/c.pem": serve(certPEM(t, time.Now().Add(time.Hour)))})
	f := New(Client(x509.NewCertPool())) // trusts nothing
	if _, err := f.Certificate(context.Background(), s.URL+"/c.pem"); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable: nothing is read over a TLS connection that does not verify", err)
	}
	if s.hits.Load() != 0 {
		t.Fatal("a request was served over an unverified connection")
	}
	if _, err := New(nil).Certificate(context.Background(), "http://127.0.0.1:1/c.pem"); err == nil {
		t.Fatal("no error for a URL nothing serves")
	}
}

func TestCacheBounded(t *testing.T) {
	s := newServer(t, nil)
	good := certPEM(t, time.Now().Add(time.Hour))
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.hits.Add(1); w.Write(good) })
	now := time.Now()
	f := fetcher(s, &now)
	for i := range MaxEntries + 10 {
		if _, err := f.Certificate(context.Background(), fmt.Sprintf("%s/%d.pem", s.URL, i)); err != nil {
			t.Fatal(err)
		}
		if len(f.entries) > MaxEntries {
			t.Fatalf("%d entries, want at most %d", len(f.entries), MaxEntries)
		}
	}
}

func TestConfirm(t *testing.T) {
	s := newServer(t, map[string]http.HandlerFunc{
		"/":      serve([]byte("<ConfirmSubscriptionResponse/>")),
		"/gone":  status(http.StatusForbidden),
		"/later": status(http.StatusServiceUnavailable),
	})
	now := time.Now()
	f := fetcher(s, &now)
	ctx := context.Background()
	if err := f.Confirm(ctx, s.URL+"/?Action=ConfirmSubscription"); err != nil {
		t.Fatal(err)
	}
	if err := f.Confirm(ctx, s.URL+"/gone"); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v, want ErrRefused", err)
	}
	if err := f.Confirm(ctx, s.URL+"/later"); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if err := f.Confirm(ctx, s.URL+"/"); err != nil || s.hits.Load() != 4 {
		t.Fatalf("confirmations are never cached: %v, %d hits", err, s.hits.Load())
	}
}

// TestWaiterKeepsItsOwnDeadline: a caller waiting on another's fetch gives
// up at its own deadline, and the fetch goes on for the one who started it.
func TestWaiterKeepsItsOwnDeadline(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, map[string]http.HandlerFunc{"/c.pem": func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write(certPEM(t, time.Now().Add(time.Hour)))
	}})
	now := time.Now()
	f := fetcher(s, &now)
	leader := make(chan error, 1)
	go func() {
		_, err := f.Certificate(context.Background(), s.URL+"/c.pem")
		leader <- err
	}()
	for s.hits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := f.Certificate(ctx, s.URL+"/c.pem"); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("waiter: %v, want ErrUnavailable at its deadline", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("waiter waited %s, past its own deadline", waited)
	}
	close(release)
	if err := <-leader; err != nil {
		t.Fatalf("leader: %v", err)
	}
}

// panicky panics on its first round trip, then passes to next.
type panicky struct {
	next   http.RoundTripper
	panics atomic.Int64
}

func (p *panicky) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.panics.Add(1) == 1 {
		panic("injected")
	}
	return p.next.RoundTrip(r)
}

// TestPanicLeavesNoEntryInFlight: a fetch that panics releases its
// waiters and leaves nothing behind, so the next caller fetches.
func TestPanicLeavesNoEntryInFlight(t *testing.T) {
	s := newServer(t, map[string]http.HandlerFunc{"/c.pem": serve(certPEM(t, time.Now().Add(time.Hour)))})
	now := time.Now()
	f := fetcher(s, &now)
	f.client.Transport = &panicky{next: f.client.Transport}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		f.Certificate(context.Background(), s.URL+"/c.pem")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := f.Certificate(ctx, s.URL+"/c.pem"); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
}
