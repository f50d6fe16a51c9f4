package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/deploy"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
)

// guideBlock is a fenced block of docs/handlers.md: its info string (the
// language, then what the block is) and its lines.
type guideBlock struct{ info, body string }

func guideBlocks(tb testing.TB) []guideBlock {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs/handlers.md"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []guideBlock
	var cur *guideBlock
	for line := range strings.SplitAfterSeq(string(raw), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &guideBlock{info: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line
		}
	}
	return out
}

// findBlock returns the one block whose info string is info.
func findBlock(tb testing.TB, blocks []guideBlock, info string) string {
	tb.Helper()
	var found []string
	for _, b := range blocks {
		if b.info == info {
			found = append(found, b.body)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("docs/handlers.md: %d blocks ```%s, want one", len(found), info)
	}
	return found[0]
}

// insertAfter returns src with line inserted after the first line that
// contains anchor at or after the first line containing within.
func insertAfter(tb testing.TB, src, within, anchor, line string) string {
	tb.Helper()
	lines := strings.SplitAfter(src, "\n")
	in := false
	for i, l := range lines {
		in = in || strings.Contains(l, within)
		if in && strings.Contains(l, anchor) {
			return strings.Join(slices.Insert(lines, i+1, line), "")
		}
	}
	tb.Fatalf("no %q after %q in internal/handlers/handlers.go", anchor, within)
	return ""
}

// TestGuideAddsAHandler follows docs/handlers.md, "Add a handler with its
// own target", as written: the guide's file and its test, its line in
// Routes() and its line in Targets() — given to the go command as an
// overlay, so no file of the tree changes and no other could — then
// `make run` with the guide's TARGETS and `make send` with the guide's
// flags. The guide's test passes; without the TARGETS entry `make run`
// refuses to start, naming the target; with it, the corpus's
// charge.refunded sent twice is one event, applied, and one notice reaches
// the receiver under the refund's key. The guide's samconfig.toml
// excerpt configures the same targets.
func TestGuideAddsAHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with an overlay and starts the whole local stack")
	}
	blocks := guideBlocks(t)
	dir := t.TempDir()
	overlay := map[string]string{}
	put := func(rel, body string) {
		p := filepath.Join(dir, strings.ReplaceAll(rel, "/", "_"))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		abs, err := filepath.Abs(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Fatal(err)
		}
		overlay[abs] = p
	}
	for _, rel := range []string{"internal/handlers/refund.go", "internal/handlers/refund_test.go"} {
		body := findBlock(t, blocks, "go "+rel)
		if formatted, err := format.Source([]byte(body)); err != nil || !bytes.Equal(formatted, []byte(body)) {
			t.Errorf("docs/handlers.md: %s is not gofmt-clean (%v)", rel, err)
		}
		if _, err := os.Stat(filepath.Join(repoRoot, rel)); err == nil {
			t.Fatalf("%s exists in the tree: the guide's file would not be new", rel)
		}
		put(rel, body)
	}
	handlers, err := os.ReadFile(filepath.Join(repoRoot, "internal/handlers/handlers.go"))
	if err != nil {
		t.Fatal(err)
	}
	edited := insertAfter(t, string(handlers), "func Routes(", `"stripe": {`, findBlock(t, blocks, "go +Routes"))
	edited = insertAfter(t, edited, "func Targets(", "return []effects.Target{", findBlock(t, blocks, "go +Targets"))
	put("internal/handlers/handlers.go", edited)
	spec, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}

	// The guide's unit test, with the room's own.
	test := exec.Command("go", "test", "-count=1", "-overlay", overlayPath, "-run", "TestStripeChargeRefunded|TestRoomImports|TestRoutes", "-v", "./internal/handlers/")
	test.Dir = repoRoot
	if out, err := test.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestStripeChargeRefunded") {
		t.Fatalf("go test ./internal/handlers with the guide's files: %v\n%s", err, out)
	}
	bin := buildRun(t, "-overlay", overlayPath)
	send := filepath.Join(dir, "send")
	build := exec.Command("go", "build", "-o", send, "./infra/local/cmd/send")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build send: %v\n%s", err, out)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TARGETS=") {
			env = append(env, kv)
		}
	}

	// Without the entry: the template's default TARGETS names the receipt
	// only, and make run stops at once, naming the new target.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		awsPort, err := awstest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, bin, "-api", "127.0.0.1:0", "-aws-port", fmt.Sprint(awsPort), "-state", t.TempDir())
		cmd.Dir = repoRoot
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		want := `target "refund_notice", which internal/handlers declares, has no TARGETS entry`
		if err == nil || ctx.Err() != nil || !strings.Contains(string(out), want) {
			t.Errorf("make run without the guide's TARGETS entry: %v, want it to stop saying %q\n%s", err, want, tail(string(out), 3000))
		}
	}

	// With it.
	var mu sync.Mutex
	notices := map[string][]string{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		mu.Lock()
		notices[r.URL.Path+" "+r.Header.Get("Idempotency-Key")] = append(notices[r.URL.Path+" "+r.Header.Get("Idempotency-Key")], b.String())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	m := regexp.MustCompile(`(?m)^TARGETS='([^']*)' make run$`).FindStringSubmatch(findBlock(t, blocks, "sh make-run"))
	if m == nil {
		t.Fatal("docs/handlers.md: the make-run block is not TARGETS='…' make run")
	}
	targets := strings.ReplaceAll(m[1], "http://127.0.0.1:9000", receiver.URL)
	if targets == m[1] {
		t.Fatal("docs/handlers.md: the make-run block's TARGETS has no receiver on http://127.0.0.1:9000")
	}
	awsPort, out, stop := startRun(t, bin, append(env, "TARGETS="+targets)...)
	defer stop()
	api := waitListening(t, 60*time.Second, out)

	var flags []string
	for _, b := range blocks {
		if m := regexp.MustCompile(`make send SEND_FLAGS="([^"]*)"`).FindStringSubmatch(b.body); b.info == "sh" && m != nil {
			flags = strings.Fields(m[1])
		}
	}
	if flags == nil {
		t.Fatal(`docs/handlers.md: no make send SEND_FLAGS="…" block`)
	}
	sent := exec.Command(send, append([]string{"-api", "http://" + api}, flags...)...)
	sent.Dir = repoRoot
	answer, err := sent.CombinedOutput()
	if err != nil || !strings.Contains(string(answer), "202 Accepted") || !strings.Contains(string(answer), "200 OK") || !strings.Contains(string(answer), `"status":"duplicate"`) {
		t.Fatalf("make send %s: %v, want 202 then 200 duplicate\n%s", strings.Join(flags, " "), err, answer)
	}
	guide, err := os.ReadFile(filepath.Join(repoRoot, "docs/handlers.md"))
	if err != nil {
		t.Fatal(err)
	}
	km := regexp.MustCompile("Idempotency-Key: (@[^`]+)`").FindSubmatch(guide)
	if km == nil {
		t.Fatal("docs/handlers.md does not say the notice's Idempotency-Key")
	}
	key := "/refunds " + string(km[1])
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(notices[key])
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The retry's copy, if queued, has time to come through: it must send
	// nothing.
	time.Sleep(2 * time.Second)

	// What the guide says inspect shows.
	em := regexp.MustCompile(`event key: (\S+)`).FindSubmatch(answer)
	if em == nil {
		t.Fatalf("make send printed no event key:\n%s", answer)
	}
	replay := exec.Command("go", "run", "./infra/local/cmd/replay", "-aws-port", fmt.Sprint(awsPort), "-progress", "0",
		fmt.Sprintf(`{"action":"inspect","event_key":%q}`, em[1]))
	replay.Dir = repoRoot
	inspected, err := replay.Output()
	var summary struct {
		Event struct {
			Status, Outcome string
			Rows            []struct{ Target, State string } `json:"outbox_rows"`
		}
	}
	if err != nil || json.Unmarshal(inspected, &summary) != nil {
		t.Fatalf("inspect: %v\n%s", err, inspected)
	}
	if ev := summary.Event; ev.Status != "processed" || ev.Outcome != "applied" || len(ev.Rows) != 1 || ev.Rows[0].Target != "refund_notice" || ev.Rows[0].State != "delivered" {
		t.Errorf("inspect: %+v, want processed, applied, its refund_notice row delivered\n%s", ev, inspected)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 1 || len(notices[key]) != 1 || !strings.Contains(notices[key][0], `"refunded_total":100`) {
		t.Errorf("notices %v, want one under %q\n%s\n%s", notices, key, answer, tail(out.String(), 4000))
	}

	// The guide's samconfig.toml excerpt: the same targets, deployed.
	excerpt := filepath.Join(dir, "samconfig.toml")
	if err := os.WriteFile(excerpt, []byte("[default.deploy.parameters]\nparameter_overrides = [\n"+findBlock(t, blocks, "toml")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := deploy.ReadSamconfig(excerpt, "default")
	if err != nil {
		t.Fatalf("docs/handlers.md's samconfig.toml excerpt: %v", err)
	}
	if got, want := targetNames(t, sc.Values()["Targets"]), targetNames(t, m[1]); !slices.Equal(got, want) {
		t.Errorf("the samconfig.toml excerpt configures %v, make run %v", got, want)
	}
}

func targetNames(tb testing.TB, v string) []string {
	tb.Helper()
	var list []struct{ Name string }
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		tb.Fatalf("TARGETS %q: %v", v, err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}
