package local_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// TestReplayEventsAreCurrent: every replay test event in events/ is what
// `make events` writes, decodes strictly and is a request the replay
// function takes; and events/ holds no replay event the table has not.
func TestReplayEventsAreCurrent(t *testing.T) {
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := local.SampleEvents(repoRoot, sources, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range evs {
		if !strings.HasPrefix(name, "replay-") {
			continue
		}
		got := readEvent(t, name)
		if !bytes.Equal(got, want) {
			t.Errorf("events/%s is not what `make events` writes:\n%s\nwant:\n%s", name, got, want)
		}
		req, err := replay.DecodeRequest(got)
		if err != nil {
			t.Errorf("events/%s: %v", name, err)
			continue
		}
		if err := req.Validate(time.Now()); err != nil {
			t.Errorf("events/%s: %v", name, err)
		}
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "events", "replay-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := evs[filepath.Base(f)]; !ok {
			t.Errorf("%s: not a replay event `make events` writes (remove it or add it to local.ReplayEvents)", f)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "events", local.EventReplaySweep)); err != nil {
		t.Error(err)
	}
}
