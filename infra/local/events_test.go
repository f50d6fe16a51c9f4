package local_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
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

// TestShareableTestEvents: the template's shareable test events for the
// replay function are the events in events/, under their names, with the
// request's fields as their schema.
func TestShareableTestEvents(t *testing.T) {
	tpl, err := template.Load(filepath.Join(repoRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := tpl.Resource("ReplayTestEvents")
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != "AWS::EventSchemas::Schema" || r.Properties["Type"] != "OpenApi3" {
		t.Errorf("ReplayTestEvents: %s %v", r.Type, r.Properties["Type"])
	}
	if name := fmt.Sprint(r.Properties["SchemaName"]); name != "map[Fn::Sub:_${ReplayFunction}-schema]" {
		t.Errorf("SchemaName %s: the console looks for _<function name>-schema", name)
	}
	content, _ := r.Properties["Content"].(string)
	evs, err := local.SampleReplayEvents(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	want, err := local.TestEventSchema(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got, w any
	if err := json.Unmarshal([]byte(content), &got); err != nil {
		t.Fatalf("Content is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("template.yaml's ReplayTestEvents is not the events of events/: rewrite its Content with `go run ./infra/local/cmd/events -schema`")
	}
	names := map[string]bool{}
	for _, e := range evs {
		if names[e.Name] {
			t.Errorf("two test events named %s", e.Name)
		}
		names[e.Name] = true
		if !regexp.MustCompile(`^[A-Za-z0-9._-]{1,25}$`).MatchString(e.Name) {
			t.Errorf("test event name %q: the console takes up to 25 letters, digits, . _ -", e.Name)
		}
	}
}
