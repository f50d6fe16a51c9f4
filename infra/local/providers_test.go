package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// TestEveryKindIsComplete holds docs/providers.md's checklist for the
// steps outside internal/signature: every kind has a local source named
// after it in infra/local/sources.json, a sample to send, and its row in
// docs/providers.md's table. (The malformed suites, the options and
// the kept headers are held by internal/signature's and internal/ingest's
// own tests.)
func TestEveryKindIsComplete(t *testing.T) {
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs/providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range signature.Kinds() {
		src, err := sources.Source(kind)
		switch {
		case err != nil:
			t.Errorf("%s: no local source named after it in infra/local/sources.json", kind)
		case src.Kind != kind:
			t.Errorf("%s: the local source of that name is of kind %s", kind, src.Kind)
		}
		if _, err := local.LoadSample(repoRoot, kind); err != nil {
			t.Errorf("%s: no sample to send: %v", kind, err)
		}
		if !strings.Contains(string(readme), "\n| `"+kind+"` |") {
			t.Errorf("%s: no row in docs/providers.md's table", kind)
		}
	}
}
