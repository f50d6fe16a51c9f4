package local_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// TestMakeRunReceipts runs `make run` (its command, built as `go run`
// builds it) with TARGETS pointing the receipt at a real HTTP receiver,
// and sends, for each of N invoices, concurrently and shuffled: its
// invoice.paid, the provider's retry of that delivery, and an
// invoice.payment_succeeded for the same invoice. Exactly N receipts
// arrive, one per invoice, under N distinct idempotency keys.
func TestMakeRunReceipts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts moto and the whole local stack")
	}
	const invoices = 15

	var mu sync.Mutex
	receipts := map[string]int{}
	bodies := map[string]string{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		mu.Lock()
		receipts[r.Header.Get("Idempotency-Key")]++
		bodies[r.Header.Get("Idempotency-Key")] = b.String()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	_, out, stop := startRun(t, buildRun(t), fmt.Sprintf(`TARGETS=[{"name":"receipt","url":%q}]`, receiver.URL+"/receipts"))
	defer stop()
	api := waitListening(t, 60*time.Second, out)

	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := sources.Source("stripe")
	if err != nil {
		t.Fatal(err)
	}
	type delivery struct{ body []byte }
	var deliveries []delivery
	for i := range invoices {
		inv := fmt.Sprintf("in_run_%02d", i)
		paid := stripeInvoiceEvent(fmt.Sprintf("evt_run_%02d_paid", i), "invoice.paid", inv)
		succeeded := stripeInvoiceEvent(fmt.Sprintf("evt_run_%02d_succeeded", i), "invoice.payment_succeeded", inv)
		deliveries = append(deliveries, delivery{paid}, delivery{paid}, delivery{succeeded})
	}
	rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })

	var wg sync.WaitGroup
	work := make(chan delivery)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/webhooks/stripe", bytes.NewReader(d.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Stripe-Signature", signature.SignStripe(d.body, []byte(src.Secrets[0]), time.Now()))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
					t.Errorf("delivery: got %d, want 202 or 200", resp.StatusCode)
				}
			}
		}()
	}
	for _, d := range deliveries {
		work <- d
	}
	close(work)
	wg.Wait()

	count := func() (keys, total int) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range receipts {
			total += n
		}
		return len(receipts), total
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if keys, _ := count(); keys >= invoices || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Whatever is still queued (a duplicate, a backed-off copy) has time
	// to come through and must send nothing.
	time.Sleep(3 * time.Second)
	stop()
	keys, total := count()
	if keys != invoices || total != invoices {
		t.Errorf("receipts: got %d under %d keys, want %d under %d\n%s", total, keys, invoices, invoices, tail(out.String(), 4000))
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range invoices {
		key := effects.ScopedKey(inbox.ScopeOf("stripe", inbox.Key{}), fmt.Sprintf("fact#invoice_paid#in_run_%02d/receipt", i))
		if receipts[key] != 1 || !strings.Contains(bodies[key], fmt.Sprintf(`"invoice_id":"in_run_%02d"`, i)) {
			t.Errorf("%s: got %d receipts, body %s", key, receipts[key], bodies[key])
		}
	}
}

// buildRun builds `make run`'s command as `go run` builds it, with the
// go command's extra flags (an -overlay), and returns the binary's path.
func buildRun(tb testing.TB, flags ...string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "run")
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, "./infra/local/cmd/run")...)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// startRun starts `make run`'s command bin with env added to the test's
// own, on free ports, keeping the state under a temporary directory. It
// returns the API's address, the local AWS's port, the command's output,
// and stop, which
// interrupts it as Ctrl-C does (and kills it 20 s later); the caller
// defers stop.
// The API listens on a port the system picks (a port found free and
// released could be taken by another package's emulator before run binds
// it, which then answered the test's requests): waitListening reads it
// from run's banner.
func startRun(tb testing.TB, bin string, env ...string) (awsPort int, out *syncWriter, stop func()) {
	tb.Helper()
	awsPort, err := awstest.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	out = &syncWriter{w: &bytes.Buffer{}}
	cmd := exec.Command(bin, "-api", "127.0.0.1:0", "-aws-port", fmt.Sprint(awsPort), "-state", tb.TempDir(), "-sweep-every", "1h")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return awsPort, out, stop
}

func stripeInvoiceEvent(eventID, typ, invoiceID string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","type":%q,"created":%d,"livemode":false,"data":{"object":{"id":%q,"object":"invoice","amount_paid":1500,"currency":"eur","customer":"cus_run","period_end":1764500000,"lines":{"object":"list","data":[{"object":"line_item","period":{"start":1764500000,"end":1767225600}}]}}}}`,
		eventID, typ, time.Now().Unix(), invoiceID)
}

// waitListening waits for addr to accept connections.
// waitListening waits for run's banner, which it prints once its API
// listens, and returns the API's address from it.
func waitListening(tb testing.TB, within time.Duration, out *syncWriter) string {
	tb.Helper()
	banner := regexp.MustCompile(`API +http://(\S+)/webhooks/`)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m := banner.FindStringSubmatch(out.String()); m != nil {
			if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
				c.Close()
				return m[1]
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	tb.Fatalf("run's API not listening after %s:\n%s", within, out.String())
	return ""
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
