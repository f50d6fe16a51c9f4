// Package awstest starts the local AWS emulators (internal/emulators) for
// tests: per test, or one per test package, skipped under -short, failing
// with a message naming the fix when an emulator is missing. It is imported
// only by tests.
package awstest

import (
	"sync"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
)

// Start launches the AWS emulator LOCAL_AWS names (kumo by default) for
// the test and stops it in tb.Cleanup. Under `go test -short` the test is
// skipped, so unit tests need nothing installed. Without the emulator the
// test fails with a message naming the fix.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: needs the local AWS emulator (skipped with -short)")
	}
	s, err := emulators.LaunchAWSOnFreePort()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// shared is one emulator for a whole test package, started by the first
// test that asks for it.
type shared struct {
	once   sync.Once
	server *Server
	err    error
}

// get returns the server, launching it on first use; under -short the
// test is skipped (need names what it would have needed).
func (s *shared) get(tb testing.TB, need string, launch func() (*Server, error)) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: needs " + need + " (skipped with -short)")
	}
	s.once.Do(func() { s.server, s.err = launch() })
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.server
}

// Stop stops the server if it was started.
func (s *shared) Stop() {
	if s.server != nil {
		s.server.Stop()
	}
}

// Shared is one AWS emulator (LOCAL_AWS: kumo by default) for a whole
// test package, started by the first test that asks for it. Stop it from
// TestMain after m.Run.
type Shared struct{ shared }

// Get returns the package's server, starting it on first use; under -short
// the test is skipped.
func (s *Shared) Get(tb testing.TB) *Server {
	tb.Helper()
	return s.get(tb, "the local AWS emulator", emulators.LaunchAWSOnFreePort)
}
