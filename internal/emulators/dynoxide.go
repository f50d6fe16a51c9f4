package emulators

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
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
	return findBinary("DYNOXIDE", "dynoxide", "dynoxide not found: run `make dynoxide` or set DYNOXIDE", ".tools", "node_modules", "@dynoxide", "linux-x64", "dynoxide")
}

// LaunchDynoxide starts an in-memory dynoxide on a free loopback port and
// waits until it answers.
func LaunchDynoxide(bin string) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Kind: "dynoxide", cmd: cmd, Atomic: true}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("dynoxide on port %d did not answer within 10s: %w", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LaunchDynamoDB starts dynoxide, or moto where dynoxide is missing (with
// a note).
func LaunchDynamoDB() (*Server, error) {
	if bin, err := DynoxideBinary(); err == nil {
		return LaunchDynoxide(bin)
	}
	fmt.Fprintln(os.Stderr, "emulators: dynoxide not found (`make dynoxide` installs it): DynamoDB tests run against moto, slower")
	return LaunchMotoOnFreePort()
}
