package awstest

import (
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
)

// StartDynoxide launches an in-memory dynoxide on a free loopback port for
// the test (DynamoDB only) and stops it in tb.Cleanup. Without dynoxide the
// test is skipped.
func StartDynoxide(tb testing.TB) *Server {
	tb.Helper()
	bin, err := emulators.DynoxideBinary()
	if err != nil {
		tb.Skip(err)
	}
	s, err := emulators.LaunchDynoxide(bin)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// SharedDynamoDB is one DynamoDB emulator for a whole test package,
// started by the first test that asks for it: dynoxide where it is
// installed, else moto (with a note, once). Tests sharing it name their
// tables apart. Stop it from TestMain after m.Run.
type SharedDynamoDB struct{ shared }

// Get returns the package's emulator, starting it on first use; under
// -short the test is skipped.
func (s *SharedDynamoDB) Get(tb testing.TB) *Server {
	tb.Helper()
	return s.get(tb, "a DynamoDB emulator", emulators.LaunchDynamoDB)
}

// StartDynamoDB launches a DynamoDB emulator for the test alone, dynoxide
// where it is installed, else moto (with a note, once), and stops it in
// tb.Cleanup; under -short the test is skipped. Its clients take
// SafeConfig.
func StartDynamoDB(tb testing.TB) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: needs a DynamoDB emulator (skipped with -short)")
	}
	s, err := emulators.LaunchDynamoDB()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}
