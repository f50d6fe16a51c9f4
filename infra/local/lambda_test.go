package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs/emftest"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// rieBinary finds the Runtime Interface Emulator that `make test` installs
// into bin/ (or $AWS_LAMBDA_RIE).
func rieBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		return p
	}
	p, err := filepath.Abs(filepath.Join(repoRoot, "bin", "aws-lambda-rie"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s missing: `make test` installs it (make bin/aws-lambda-rie)", p)
	}
	return p
}

// buildBootstrap builds a function's real main package, as the Makefile
// does for Lambda but for this machine's architecture.
func buildBootstrap(tb testing.TB, fn string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, "./functions/"+fn)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", fn, err, b)
	}
	return out
}

// function is one bootstrap running under the emulator.
type function struct {
	url  string
	logs *syncBuffer
	// stop kills it (the test's cleanup does too).
	stop func()
}

// syncBuffer collects a child process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startPoll is how often startFunction checks the emulator is up; the
// cold-start benchmark polls finer.
var startPoll = 50 * time.Millisecond

// startFunction runs bootstrap under aws-lambda-rie on loopback ports with
// the given environment, and stops it when the test ends.
func startFunction(tb testing.TB, rie, bootstrap string, env map[string]string) *function {
	tb.Helper()
	port, err := awstest.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	apiPort, err := awstest.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort),
		bootstrap)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The function sees only what Lambda would give it: its configuration
	// and the SDK's standard settings pointing at the emulator.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tb.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	tb.Cleanup(func() {
		stop()
		if tb.Failed() {
			tb.Logf("%s output:\n%s", filepath.Base(filepath.Dir(bootstrap)), logs)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("emulator on %s did not start:\n%s", addr, logs)
		}
		time.Sleep(startPoll)
	}
	return &function{url: "http://" + addr + "/2015-03-31/functions/function/invocations", logs: logs, stop: stop}
}

// invoke sends one event and decodes the function's answer into out.
func (f *function) invoke(tb testing.TB, event []byte, out any) {
	tb.Helper()
	resp, err := http.Post(f.url, "application/json", bytes.NewReader(event))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("invoke: HTTP %d: %s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		tb.Fatalf("invoke: answer %s: %v", b, err)
	}
}

func readEvent(tb testing.TB, name string) []byte {
	tb.Helper()
	return mustRead(tb, filepath.Join("events", name))
}

// TestBootstrapsUnderRIE builds each real bootstrap and invokes it through
// the Runtime Interface Emulator with the files in events/, the path `sam
// local invoke` takes, against moto.
func TestBootstrapsUnderRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs moto_server and aws-lambda-rie (skipped with -short)")
	}
	rie := rieBinary(t)
	e := mustEnv(t)
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"AWS_ENDPOINT_URL":            e.endpoint,
		"AWS_REGION":                  awstest.Region,
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "30",
	}
	for k, v := range e.stack.Env {
		env[k] = v
	}

	// Every file in events/ is exercised below.
	files, err := filepath.Glob(filepath.Join(repoRoot, "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	replayEvents, err := local.SampleReplayEvents(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + len(replayEvents); len(files) != want {
		t.Fatalf("events/: got %d files, want the %d this test invokes", len(files), want)
	}

	ingest := startFunction(t, rie, buildBootstrap(t, "ingest"), env)
	// The processor forwards as events/env/processor-forward.json (sam
	// local invoke's --env-vars) says, not as the stack's own settings.
	processorEnv := maps.Clone(env)
	delete(processorEnv, "FORWARD")
	delete(processorEnv, "FORWARD_BUS")
	var envVars map[string]map[string]string
	if err := json.Unmarshal(mustRead(t, filepath.Join("events", "env", "processor-forward.json")), &envVars); err != nil {
		t.Fatal(err)
	}
	if len(envVars["ProcessorFunction"]) == 0 {
		t.Fatal("events/env/processor-forward.json: no ProcessorFunction settings")
	}
	maps.Copy(processorEnv, envVars["ProcessorFunction"])
	processor := startFunction(t, rie, buildBootstrap(t, "processor"), processorEnv)
	replayFn := startFunction(t, rie, buildBootstrap(t, "replay"), env)

	t.Run("ingest", func(t *testing.T) {
		committed := readEvent(t, local.EventIngest)
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(committed, &ev); err != nil {
			t.Fatal(err)
		}
		// The committed file's signature is as old as the file: 401 once it
		// has expired, 202 if `make events` just ran. Near the 5-minute
		// edge either answer is right.
		ts, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(ev.Headers["stripe-signature"], ",")[0], "t="), 10, 64)
		age := time.Since(time.Unix(ts, 0))
		var resp events.APIGatewayV2HTTPResponse
		ingest.invoke(t, committed, &resp)
		switch {
		case age < 4*time.Minute && resp.StatusCode != 202,
			age > 6*time.Minute && resp.StatusCode != 401,
			resp.StatusCode != 202 && resp.StatusCode != 401:
			t.Fatalf("committed event (signed %s ago): got %d %s", age.Round(time.Second), resp.StatusCode, resp.Body)
		}
		accepted := resp.StatusCode == 202
		// Re-signed now, as `make events` would write it.
		evs, err := local.SampleEvents(repoRoot, sources, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ingest.invoke(t, evs[local.EventIngest], &resp)
		if want := map[bool]int{true: 200, false: 202}[accepted]; resp.StatusCode != want {
			t.Fatalf("fresh event: got %d %s, want %d", resp.StatusCode, resp.Body, want)
		}
		ingest.invoke(t, evs[local.EventIngest], &resp)
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"duplicate"`) {
			t.Fatalf("again: got %d %s, want 200 duplicate", resp.StatusCode, resp.Body)
		}
		if !strings.Contains(ingest.logs.String(), `"outcome":"accepted"`) {
			t.Errorf("no JSON log line for the accepted request:\n%s", ingest.logs)
		}
	})

	t.Run("processor", func(t *testing.T) {
		var resp events.SQSEventResponse
		processor.invoke(t, readEvent(t, local.EventProcessor), &resp)
		// The foreign message goes to the DLQ for an operator, not back to
		// the main queue.
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("batch failures: got %+v, want none", resp.BatchItemFailures)
		}
		_, key, invoice, err := local.SampleStripe(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		store := inboxstore.New(e.db, e.stack.Resources.TableName, 24*time.Hour)
		ev, err := store.Get(context.Background(), key, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied {
			t.Errorf("event: got %s/%s, want processed/applied", ev.Status, ev.Outcome)
		}
		if _, err := store.Fact(context.Background(), ev.PartScope(), handlers.InvoicePaidKind, invoice); err != nil {
			t.Errorf("effect: %v", err)
		}
		// The same batch again: acknowledged, no second effect.
		processor.invoke(t, readEvent(t, local.EventProcessor), &resp)
		if len(resp.BatchItemFailures) != 0 {
			t.Errorf("redelivered batch: got %+v", resp.BatchItemFailures)
		}
		if n := e.effects(t); n != 1 {
			t.Errorf("effect records: got %d, want 1", n)
		}
		// Forwarded once, through both invocations, to the bus the
		// env-vars file names.
		if got := forwardedKeys(t, e); len(got[key.String()]) != 1 || len(got) != 1 {
			t.Errorf("forwarded: %v, want %s once", got, key)
		}
	})

	t.Run("replay", func(t *testing.T) {
		client := sqs.NewFromConfig(e.awsConfig)
		dlq := queue.New(client, e.stack.Resources.DLQURL)
		ctx := context.Background()
		dead := inbox.Key{Source: "stripe", EventID: "evt_dead"}
		store := inboxstore.New(e.db, e.stack.Resources.TableName, 24*time.Hour)
		now := time.Now()
		if _, err := store.Insert(ctx, inbox.Event{Key: dead, Kind: "stripe", Type: "ping", Payload: []byte(`{}`), Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Fail(ctx, dead, inbox.Failure{Status: inbox.StatusDead, Cause: "boom", MessageID: "m"}, now); err != nil {
			t.Fatal(err)
		}
		if err := dlq.Enqueue(ctx, dead); err != nil {
			t.Fatal(err)
		}
		// The DLQ also holds the processor's foreign message, once per
		// invocation above.
		var sum replay.Summary
		replayFn.invoke(t, readEvent(t, local.EventReplayDryRun), &sum)
		if !sum.DryRun || sum.Examined != 3 || sum.Counts[replay.OutcomePoison] != 2 || sum.Moved != 0 || len(sum.Events) != 1 || sum.Events[0] != "stripe##evt_dead" {
			t.Fatalf("dry run: got %+v", sum)
		}
		sum = replay.Summary{}
		replayFn.invoke(t, readEvent(t, local.EventReplayDrain), &sum)
		if sum.DryRun || sum.Moved != 1 || sum.Counts[replay.OutcomePoison] != 2 {
			t.Fatalf("drain: got %+v, want 1 moved and the foreign message left", sum)
		}
		if ev, err := store.Get(ctx, dead, time.Now()); err != nil || ev.Status != inbox.StatusFailed {
			t.Fatalf("replayed event: got %+v, %v; want revived to failed", ev, err)
		}
		sum = replay.Summary{}
		replayFn.invoke(t, readEvent(t, local.EventReplaySweep), &sum)
		if sum.Action != replay.ActionSweep || sum.DryRun || sum.Error != "" || sum.OldestUnfinished == "" {
			t.Fatalf("sweep: got %+v, want a real sweep reporting the oldest unfinished event", sum)
		}
		main := queue.New(client, e.stack.Resources.QueueURL)
		msgs, err := main.Receive(context.Background(), 10, 30, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The ingest invocations above queued their own messages too.
		found := false
		for _, m := range msgs {
			if msg, err := inbox.DecodeMessage(m.Body); err == nil && msg.Key.EventID == "evt_dead" {
				found = true
			}
		}
		if !found {
			t.Fatalf("main queue: the replayed message is not among %d messages", len(msgs))
		}
		// Every other replay event answers with its action's summary.
		for _, ev := range replayEvents {
			switch ev.File {
			case local.EventReplayDryRun, local.EventReplayDrain, local.EventReplaySweep:
				continue
			}
			var got replay.Summary
			replayFn.invoke(t, readEvent(t, ev.File), &got)
			if got.Action != ev.Request.Action || got.Counts == nil {
				t.Errorf("%s: got %+v", ev.File, got)
			}
			if ev.Request.Action == replay.ActionInspect && (got.Event == nil || got.Event.Status != "processed" || (got.Event.Payload != nil) != ev.Request.IncludePayload) {
				t.Errorf("%s: got %+v, want the committed sample event", ev.File, got.Event)
			}
		}
		// The functions' log lines carry valid EMF metrics.
		for name, fn := range map[string]*function{"ingest": ingest, "processor": processor, "replay": replayFn} {
			lines, err := emftest.Lines([]byte(fn.logs.String()))
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if len(lines) == 0 || lines[0].Namespace != "WebhookInbox" {
				t.Errorf("%s: %d lines with metrics, want some in the template's namespace", name, len(lines))
			}
		}
		// A bad console event is refused, not a silent dry run, and not an
		// invocation error that would page the errors alarm.
		var refused struct {
			replay.Summary
			ErrorMessage string `json:"errorMessage"`
		}
		replayFn.invoke(t, []byte(`{"dry_rnu": false}`), &refused)
		if refused.ErrorMessage != "" || !strings.Contains(refused.Refused, "bad request") || !strings.Contains(refused.Refused, "dry_rnu") {
			t.Errorf("misspelt field: got %+v, want it refused, naming the field", refused)
		}
	})
}
