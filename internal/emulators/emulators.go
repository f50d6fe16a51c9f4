// Package emulators starts the local AWS emulators on loopback ports:
// kumo (or moto when LOCAL_AWS=moto) for SQS, S3, Secrets Manager and
// EventBridge, and dynoxide for DynamoDB, and gives their clients'
// settings. The local stack (make run), the torture run and the tools use
// it; tests use it through internal/awstest, which adds the testing.TB
// helpers, so nothing that runs links the testing package.
package emulators

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region every emulated client uses.
const Region = "us-east-1"

// Server is a running emulator bound to 127.0.0.1: kumo or moto_server
// (SQS, S3, Secrets Manager, EventBridge; moto serves DynamoDB too), or
// dynoxide (DynamoDB only).
type Server struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:40123.
	Endpoint string
	// Kind is Kumo, Moto or "dynoxide".
	Kind string
	// Atomic says the emulator evaluates a write's condition and applies
	// it atomically, as DynamoDB does (dynoxide); moto does not, so its
	// clients go one request at a time (SerialConfig).
	Atomic bool
	cmd    *exec.Cmd
}

// LaunchAWSOnFreePort starts the emulator LOCAL_AWS names on a free
// loopback port.
func LaunchAWSOnFreePort() (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	return LaunchAWS(context.Background(), port, nil)
}

// LaunchMotoOnFreePort starts moto_server on a free loopback port.
func LaunchMotoOnFreePort() (*Server, error) {
	bin, err := MotoBinary()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	return Launch(context.Background(), bin, port, nil)
}

// MotoBinary finds moto_server: $MOTO_SERVER, then the project virtualenv
// (.venv/bin/moto_server, which `make` creates where moto is missing), then PATH.
func MotoBinary() (string, error) {
	if p := os.Getenv("MOTO_SERVER"); p != "" {
		return p, nil
	}
	if root, err := ModuleRoot(); err == nil {
		p := filepath.Join(root, ".venv", "bin", "moto_server")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("moto_server")
	if err != nil {
		return "", errors.New("moto_server not found: run `make test` (it installs moto[server] into .venv) or set MOTO_SERVER")
	}
	return p, nil
}

// Launch starts moto_server on 127.0.0.1:port and waits until it answers.
// stdout and stderr go to out when it is non-nil.
func Launch(ctx context.Context, bin string, port int, out *os.File) (*Server, error) {
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	return launch(ctx, cmd, Moto, port, out, "/moto-api/data.json", 30*time.Second)
}

// launch starts cmd, an emulator of the kind named that serves on
// 127.0.0.1:port, in a process group of its own, and waits up to within
// for a GET of path to be answered 2xx.
func launch(ctx context.Context, cmd *exec.Cmd, kind string, port int, out *os.File, path string, within time.Duration) (*Server, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Kind: kind, cmd: cmd}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(within)
	for {
		if err := s.getOK(ctx, path); err == nil {
			return s, nil
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("%s exited before it answered (is port %d taken?): %v", kind, port, err)
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("%s on port %d did not answer within %s", kind, port, within)
		}
	}
}

// Stop kills moto_server and its process group.
func (s *Server) Stop() { s.kill() }

// Pid is the emulator's process ID (its process group's leader), for
// reading what it uses from /proc.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// Config returns an aws.Config with static test credentials whose clients
// all talk to this server, retrying as the SDK's standard retryer does but
// bounded for tests: at most 3 attempts, at most 50 ms apart, and no retry
// quota (a quota drained by one failing test would fail the next). A
// transient transport error against an emulator (a kept-alive connection it
// closed: "use of closed network connection", "connection reset") is then
// absorbed as it would be in production, not failed on. A test that
// depends on one attempt per call uses NoRetryConfig.
func (s *Server) Config() aws.Config {
	cfg := s.NoRetryConfig()
	cfg.Retryer = func() aws.Retryer { return newRetryer() }
	return cfg
}

// NoRetryConfig is Config without retries: each call makes one attempt and
// returns its error. For tests about failures, where a retry would only
// repeat the failure (an unreachable endpoint) or blur what is counted.
func (s *Server) NoRetryConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(s.Endpoint),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		HTTPClient:   KeepRequestBody(awshttp.NewBuildableClient()),
	}
}

// Bounds of Config's retryer: enough to absorb a transient error, while a
// call that keeps failing costs at most (retryAttempts-1) * retryMaxBackoff
// more than one attempt.
const (
	retryAttempts   = 3
	retryMaxBackoff = 50 * time.Millisecond
)

// newRetryer returns the retryer of Config's clients: the SDK's standard
// one, which decides what is retryable, within the bounds above and
// without a retry quota.
func newRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = retryAttempts
		o.MaxBackoff = retryMaxBackoff
		o.RateLimiter = ratelimit.None
	})
}

// SerialConfig is Config with every request sent one at a time. moto
// checks a write's condition and then writes without a lock, so two
// overlapping requests can both pass a condition DynamoDB evaluates
// atomically. Serializing the round trips restores per-request atomicity;
// callers' goroutines still interleave between requests, so race tests still
// catch code that decides anything outside its conditional writes. Do not
// use it for long polls: they would hold up every other request.
func (s *Server) SerialConfig() aws.Config {
	cfg := s.Config()
	cfg.HTTPClient = Serial(cfg.HTTPClient)
	return cfg
}

// SafeConfig is the configuration for clients whose conditional writes
// must be atomic, as DynamoDB's are: Config for an atomic emulator,
// SerialConfig for moto.
func (s *Server) SafeConfig() aws.Config {
	if s.Atomic {
		return s.Config()
	}
	return s.SerialConfig()
}

// Serial returns an HTTP client that sends one request through next at a
// time. The lock is held until the response headers arrive, by which time
// moto has done the request's work.
func Serial(next aws.HTTPClient) aws.HTTPClient {
	return &serialClient{next: next}
}

type serialClient struct {
	mu   sync.Mutex
	next aws.HTTPClient
}

func (s *serialClient) Do(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next.Do(r)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ModuleRoot returns the directory holding go.mod, found from this source file.
func ModuleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("awstest: cannot locate source file")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("awstest: go.mod not found")
		}
		dir = parent
	}
}

// KeepRequestBody returns an HTTP client that hands next each request with
// a body whose Close does nothing. The SDK (smithy-go) closes a request's
// body as soon as the response's headers are in; against an emulator that
// answers within microseconds of the last byte sent (kumo, dynoxide), that
// can come before net/http's writer has finished with the body, which
// then ends the connection under the response being read: "use of closed
// network connection" on a 200 (aws-sdk-go-v2 #2737). For a
// ReceiveMessage that loses the answer, and with it messages that stay in
// flight for a visibility timeout with one more receive counted. Measured
// here against kumo: 3 of 300 ten-message receives without it, 0 of 900
// with it. The body is still closed by the SDK, through the original.
func KeepRequestBody(next aws.HTTPClient) aws.HTTPClient {
	return keepBody{next: next}
}

type keepBody struct{ next aws.HTTPClient }

func (k keepBody) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return k.next.Do(r)
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(r.Body)
	return k.next.Do(out)
}
