package awstest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// DynoxideVersion is the dynoxide the Makefile installs where none is on
// PATH (npm package @dynoxide/linux-x64).
const DynoxideVersion = "1.2.1"

// DynoxideBinary finds dynoxide, a SQLite-backed DynamoDB emulator that,
// unlike moto, answers concurrent transactions and stays fast as a table
// grows: $DYNOXIDE, then the project's .tools (where `make dynoxide`
// installs it), then PATH.
func DynoxideBinary() (string, error) {
	if p := os.Getenv("DYNOXIDE"); p != "" {
		return p, nil
	}
	if root, err := ModuleRoot(); err == nil {
		p := filepath.Join(root, ".tools", "node_modules", "@dynoxide", "linux-x64", "dynoxide")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("dynoxide")
	if err != nil {
		return "", errors.New("dynoxide not found: run `make dynoxide` or set DYNOXIDE")
	}
	return p, nil
}

// StartDynoxide launches an in-memory dynoxide on a free loopback port for
// the test (DynamoDB only) and stops it in tb.Cleanup. Without dynoxide the
// test is skipped: only benchmarks use it so far.
func StartDynoxide(tb testing.TB) *Server {
	tb.Helper()
	bin, err := DynoxideBinary()
	if err != nil {
		tb.Skip(err)
	}
	port, err := FreePort()
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd}
	tb.Cleanup(s.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("dynoxide on port %d did not answer within 10s: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
