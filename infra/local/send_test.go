package local_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/certfetch"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// TestSignAnyBody is `make send -body` for every local source: a body read
// from a file (a JSON one with the trailing newline editors leave, which a
// shell's $(cat …) would drop) is signed byte for byte, and the source's
// own scheme verifies it and reads its identity.
func TestSignAnyBody(t *testing.T) {
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	providers, err := local.NewProviderHosts(sources, now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	certs := certfetch.New(providers.Client())
	for _, src := range sources.Sources {
		t.Run(src.Name, func(t *testing.T) {
			sample, err := local.LoadSample(repoRoot, src.Name)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := sample.Signed(repoRoot, src, now)
			if err != nil {
				t.Fatal(err)
			}
			body := rendered.Body
			if strings.Contains(sample.ContentType, "json") && !bytes.HasSuffix(body, []byte("\n")) {
				body = append(bytes.Clone(body), '\n')
			}
			path := filepath.Join(t.TempDir(), "payload")
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
			sample.Raw, err = os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			req, err := sample.Signed(repoRoot, src, now)
			if err != nil {
				t.Fatal(err)
			}
			// Adyen's, SNS's and Mailgun's signatures are inside the body:
			// signing rewrites it.
			if src.Kind != "adyen" && src.Kind != "sns" && src.Kind != "mailgun" && !bytes.Equal(req.Body, body) {
				t.Fatalf("sent %d bytes, the file holds %d", len(req.Body), len(body))
			}
			scheme, err := src.Scheme()
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := scheme.(signature.Certified); ok {
				u, err := c.CertificateURL(req)
				if err != nil {
					t.Fatal(err)
				}
				if req.Certificate, err = certs.Certificate(context.Background(), u); err != nil {
					t.Fatal(err)
				}
			}
			if err := scheme.Verify(req, [][]byte{[]byte(src.Secrets[0])}, now); err != nil {
				t.Fatalf("verify: %v", err)
			}
			req.DeliveryID = "the-edge-request-id" // as ingest sets it from API Gateway's
			if sp, ok := scheme.(signature.Splitter); ok {
				if ids, err := sp.Split(req); err != nil || len(ids) == 0 {
					t.Fatalf("split: %d events, %v", len(ids), err)
				}
			} else if _, err := scheme.Identify(req); err != nil {
				t.Fatalf("identify: %v", err)
			}
		})
	}
}
