//go:build linux

// Command torture is `make torture`: the whole system under every fault at
// once, then an audit of what it stored and sent.
//
// It starts the local AWS (kumo and dynoxide behind the one router, with
// its faults switched on), the HTTP API with the real ingest handler, the
// sweep on a short schedule, a receipt receiver that accepts, fails or
// hangs, and the processor as separate worker processes, each polling the
// main queue as Lambda's event source mapping does, one of them SIGKILLed
// every couple of seconds and restarted at once. It sends a workload of
// the shipped examples' events (each delivered one to five times, some in
// bursts of 20 identical deliveries at once), waits for the system to
// settle, and audits from the table, the queues and the receiver's log —
// never from the workers' own counts — printing one verdict line:
//
//	torture: 10000 events, N deliveries, K kills, F faults — 0 lost, 0 duplicate effects, 0 regressions
//
// It exits 1 when the audit finds anything, 2 when the run itself fails.
// With -load, faults and kills are off and it is the load benchmark: the
// same work beside a floor of the minimal calls per event on the same
// emulators, measured in the same run.
//
// The workload, the fault stream and the kill times come from -seed; the
// interleaving of processes is the machine's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
)

func main() {
	if spec, ok := os.LookupEnv(workerEnv); ok {
		if err := runWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "torture worker:", err)
			os.Exit(1)
		}
		return
	}
	opts := defaults()
	flag.IntVar(&opts.Events, "events", opts.Events, "events in the workload")
	flag.Uint64Var(&opts.Seed, "seed", opts.Seed, "seed of the workload, the faults and the kills")
	flag.IntVar(&opts.Workers, "workers", opts.Workers, "processor worker processes")
	flag.DurationVar(&opts.KillEvery, "kill-every", opts.KillEvery, "mean time between SIGKILLs of a random worker (0: none)")
	flag.Float64Var(&opts.FaultRate, "fault-rate", opts.FaultRate, "fraction of AWS calls given a fault")
	rates := flag.String("fault-rates", "", "per call type rates, e.g. DynamoDB.TransactWriteItems=0.2,SQS.DeleteMessage=0.1")
	flag.IntVar(&opts.Senders, "senders", opts.Senders, "deliveries in flight at once (a burst counts as one)")
	flag.IntVar(&opts.Backlog, "backlog", opts.Backlog, "senders wait while the main queue holds more messages than this (0: never)")
	flag.DurationVar(&opts.Settle, "settle", opts.Settle, "longest wait, after the last delivery, for every event to finish")
	flag.DurationVar(&opts.Visibility, "visibility", opts.Visibility, "the main queue's visibility timeout (at least the processor's timeout)")
	flag.DurationVar(&opts.ProcessorTimeout, "processor-timeout", opts.ProcessorTimeout, "the processor function's timeout (0: the template's)")
	flag.StringVar(&opts.Params, "params", opts.Params, "retry and sweep settings: drawn (from -seed, within template.yaml's ranges), fixed, or e.g. RetryBaseSeconds=2,RetryCapSeconds=9,MaxReceiveCount=2,SweepAfterSeconds=1")
	flag.DurationVar(&opts.Operator, "operator", opts.Operator, "mean time between operator actions (forced re-runs, sweeps, drain-dlq, outbox review) while the run goes on (0: none)")
	flag.DurationVar(&opts.OperatorAfter, "operator-after", opts.OperatorAfter, "how long the operator goes on acting after the last delivery")
	flag.Float64Var(&opts.LargeFraction, "large", opts.LargeFraction, "fraction of invoice events with a payload large enough for the S3 claim check")
	flag.BoolVar(&opts.Load, "load", false, "the load benchmark: no faults, no kills, beside the floor of minimal calls")
	flag.StringVar(&opts.Dir, "dir", opts.Dir, "directory for the emulators' and workers' logs")
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (senders, API, ingest, router, sweep) to the file")
	flag.Parse()
	if *rates != "" {
		r, err := local.ParseRates(*rates)
		if err != nil {
			fmt.Fprintln(os.Stderr, "torture: -fault-rates:", err)
			os.Exit(2)
		}
		opts.FaultRates = r
	}
	if err := opts.check(); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "torture: -cpuprofile:", err)
			os.Exit(2)
		}
	}
	os.Exit(runMain(opts))
}

// runMain runs the torture run and returns the exit code: 0 clean, 1 a
// verdict with damage, 2 a run that could not be made.
func runMain(opts options) int {
	defer pprof.StopCPUProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, opts, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	if !rep.Clean() {
		return 1
	}
	return 0
}

// options are the run's knobs; defaults() gives the full run's.
type options struct {
	Events     int
	Seed       uint64
	Workers    int
	KillEvery  time.Duration
	FaultRate  float64
	FaultRates map[string]float64
	Senders    int
	// Backlog is the most messages the main queue may hold before the
	// senders wait (0: no limit); see send.
	Backlog int
	// Visibility is the main queue's visibility timeout for the run: the
	// template's 180 s would keep a killed worker's messages away for
	// three minutes; the run's is shorter, and still longer than the
	// function's timeout, as Lambda requires.
	Visibility time.Duration
	// ProcessorTimeout, when positive, is the processor function's
	// timeout in place of the template's: each invocation's deadline, and
	// with it a killed worker's lease (the deadline and 10 s), are that
	// much shorter. The visibility timeout must be at least as long, as
	// Lambda requires.
	ProcessorTimeout time.Duration
	// SweepEvery is the sweep's schedule (the template's is 1 to 5
	// minutes).
	SweepEvery time.Duration
	// Params is -params: "drawn" (from the seed, within the template's
	// ranges), "fixed", or explicit values; see parseParams. The load
	// benchmark uses the fixed set.
	Params string
	// Operator is the mean time between operator actions while the run
	// goes on (0: none); see operate.
	Operator time.Duration
	// OperatorAfter is how long the operator goes on acting after the
	// last delivery (it stops earlier if every event is finished first):
	// an operator who never stops re-running events keeps some unfinished,
	// and the run would measure that instead.
	OperatorAfter time.Duration
	// LargeFraction is the fraction of invoice events sent with a payload
	// large enough for the S3 claim check.
	LargeFraction float64
	// Hang is how long the receiver's hanging answers wait.
	Hang   time.Duration
	Settle time.Duration
	Load   bool
	Dir    string
	// Root is the repository, where template.yaml and the local sources
	// are.
	Root string
	// inspect, if set, is called after the audit, with its report and
	// the system still up (the tests corrupt it and audit again).
	inspect func(*system, *workload, *sendStats, *report)
}

func defaults() options {
	root, err := emulators.ModuleRoot()
	if err != nil {
		root = "."
	}
	return options{
		Events: 10000, Seed: 1, Workers: 2, KillEvery: 2 * time.Second, FaultRate: 0.05, Senders: 16, Backlog: 0,
		Visibility: 40 * time.Second, SweepEvery: 10 * time.Second, Params: "drawn", Operator: time.Second, OperatorAfter: time.Minute, LargeFraction: 0.03,
		Hang: 12 * time.Second, Settle: 6 * time.Minute,
		Dir: filepath.Join(root, ".build", "torture"), Root: root,
	}
}

func (o options) check() error {
	switch {
	case o.Events < 10:
		return fmt.Errorf("-events %d: want at least 10", o.Events)
	case o.Workers < 1:
		return fmt.Errorf("-workers %d: want at least 1", o.Workers)
	case o.KillEvery < 0:
		return fmt.Errorf("-kill-every %s: want 0 or more", o.KillEvery)
	case o.FaultRate < 0 || o.FaultRate > 1:
		return fmt.Errorf("-fault-rate %g: want a fraction from 0 to 1", o.FaultRate)
	case o.Senders < 1:
		return fmt.Errorf("-senders %d: want at least 1", o.Senders)
	case o.Visibility < 0 || o.ProcessorTimeout < 0:
		return fmt.Errorf("-visibility %s, -processor-timeout %s: want 0 or more", o.Visibility, o.ProcessorTimeout)
	case o.Visibility > 0 && o.ProcessorTimeout > o.Visibility:
		return fmt.Errorf("-processor-timeout %s over -visibility %s: Lambda requires the queue's visibility timeout to be at least the function's timeout", o.ProcessorTimeout, o.Visibility)
	case o.Operator < 0 || o.OperatorAfter < 0:
		return fmt.Errorf("-operator %s, -operator-after %s: want 0 or more", o.Operator, o.OperatorAfter)
	case o.LargeFraction < 0 || o.LargeFraction > 1:
		return fmt.Errorf("-large %g: want a fraction from 0 to 1", o.LargeFraction)
	case o.Settle <= 0:
		return fmt.Errorf("-settle %s: want a positive duration", o.Settle)
	}
	return nil
}
