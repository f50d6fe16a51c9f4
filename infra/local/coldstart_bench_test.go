package local_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// BenchmarkColdStart starts each real bootstrap under the Runtime Interface
// Emulator, once per iteration, and times start to first answer, beside a
// hello-world bootstrap (testdata/hello) measured the same way in the same
// run, round robin: the ratios to it are reported as name/hello. Each event is answered
// without an AWS call (an unknown source, an empty batch, a request
// refused as bad), so what is timed is the process start, the cold start's
// configuration and client construction, and the runtime's first
// round-trip. One AWS call comes before the first event: the processor's
// read of the table's layout (app.CommitStore), answered on loopback as
// DynamoDB would; the endpoint counts any other call, and the benchmark
// fails if one came.
func BenchmarkColdStart(b *testing.B) {
	rie := rieBinary(b)
	defer func(p time.Duration) { startPoll = p }(startPoll)
	startPoll = 200 * time.Microsecond
	var calls atomic.Int32
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.GetItem" {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, `{"Item":{"pk":{"S":"`+inboxstore.LayoutPK+`"},"unscoped_facts":{"BOOL":false}}}`)
			return
		}
		calls.Add(1)
		http.Error(w, `{"__type":"com.amazon.coral.validate#ValidationException","message":"no call before the first event"}`, http.StatusBadRequest)
	}))
	defer endpoint.Close()
	defer func() {
		if n := calls.Load(); n > 0 {
			b.Errorf("%d AWS calls other than the layout's read before a first event that needs none", n)
		}
	}()
	env := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL": endpoint.URL,
		"INBOX_TABLE":      "inbox", "PAYLOAD_BUCKET": "payloads", "QUEUE_URL": "http://127.0.0.1:9/000000000000/main", "DLQ_URL": "http://127.0.0.1:9/000000000000/dlq",
		"SOURCES": `[{"name":"stripe","kind":"stripe"}]`, "SECRETS_PREFIX": "webhook-inbox/",
		"MAX_RECEIVE_COUNT": "10", "AWS_LAMBDA_FUNCTION_TIMEOUT": "30",
		// The template's default: the receipt to the log.
		"TARGETS": `[{"name":"receipt"}]`,
	}
	fns := []struct {
		name, pkg string
		event     string
	}{
		{"hello", "./infra/local/testdata/hello", `{}`},
		{"ingest", "./functions/ingest", `{"version":"2.0","rawPath":"/webhooks/nope","pathParameters":{"source":"nope"},"requestContext":{"http":{"method":"POST","path":"/webhooks/nope"},"requestId":"x"},"body":"{}"}`},
		{"processor", "./functions/processor", `{"Records":[]}`},
		{"replay", "./functions/replay", `{"action":"inspect"}`},
	}
	bins := make([]string, len(fns))
	for i, f := range fns {
		bins[i] = buildPackage(b, f.pkg)
	}
	total := make([]time.Duration, len(fns))
	b.ResetTimer()
	for range b.N {
		// Round robin, so that the machine's drift touches all alike.
		for i, f := range fns {
			start := time.Now()
			fn := startFunction(b, rie, bins[i], env)
			resp, err := http.Post(fn.url, "application/json", bytes.NewReader([]byte(f.event)))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			total[i] += time.Since(start)
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s: HTTP %d %s", f.name, resp.StatusCode, body)
			}
			fn.stop()
		}
	}
	for i, f := range fns {
		b.ReportMetric(float64(total[i].Microseconds())/1000/float64(b.N), f.name+"-ms")
		if i > 0 {
			b.ReportMetric(float64(total[i])/float64(total[0]), f.name+"/hello")
		}
	}
}

// buildPackage builds a main package of the module for this machine.
func buildPackage(tb testing.TB, pkg string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-gcflags=github.com/aws/aws-sdk-go-v2/...=-l", "-gcflags=github.com/aws/smithy-go/...=-l", "-o", out, pkg)
	cmd.Dir = repoRoot
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}
