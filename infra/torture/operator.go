//go:build linux

package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// operator acts as the runbook's operator while the run goes on, through
// the replay function's own handler (its AWS calls under the run's
// faults): it re-runs processed events with force, sweeps with short
// thresholds, drains the DLQ, and reviews the outbox, asking the receiver
// whether it acted on each row's key before resolving it, and resending
// it if it did not.
type operator struct {
	sys   *system
	w     *workload
	rand  *rand.Rand
	every time.Duration

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}

	mu sync.Mutex
	// Tally counts, per action, the outcomes its summaries gave.
	tally map[string]map[string]int
	// Actions counts the requests per action; Errors those whose summary
	// had an error (a fault, mostly: the run goes on).
	actions, errors map[string]int
	// lastErr is each action's last error, for the report.
	lastErr map[string]string
	// Rerun holds the events a forced re-run was made for.
	rerun map[string]bool
	// Resolved and Resent hold the rows reviewed.
	resolved, resent map[string]bool
}

// The operator's actions, as the report names them.
const (
	opRerun  = "replay force"
	opSweep  = "sweep"
	opDrain  = "drain-dlq"
	opReview = "outbox review"
)

func newOperator(sys *system, w *workload, seed uint64, every time.Duration) *operator {
	return &operator{sys: sys, w: w, rand: rand.New(rand.NewPCG(seed, 0x6f706572)), every: every,
		stopCh: make(chan struct{}), done: make(chan struct{}),
		tally: map[string]map[string]int{}, actions: map[string]int{}, errors: map[string]int{}, lastErr: map[string]string{},
		rerun: map[string]bool{}, resolved: map[string]bool{}, resent: map[string]bool{}}
}

// run acts every so often (every ±50 %) until stop. An action under way
// when stop comes is finished: the operator does not walk away mid-way.
func (op *operator) run() {
	defer close(op.done)
	for {
		d := op.every/2 + time.Duration(op.rand.Int64N(int64(op.every)+1))
		select {
		case <-op.stopCh:
			return
		case <-time.After(d):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		switch x := op.rand.IntN(10); {
		case x < 4:
			op.rerunOne(ctx)
		case x < 6:
			op.act(ctx, opSweep, replay.Request{Action: replay.ActionSweep, OlderThanSeconds: 1 + op.rand.IntN(5)})
		case x < 8:
			op.act(ctx, opDrain, replay.Request{Action: replay.ActionDrainDLQ})
		default:
			op.review(ctx)
		}
		cancel()
	}
}

// stop ends the actions and waits for the one under way.
func (op *operator) stop() {
	op.stopOnce.Do(func() { close(op.stopCh) })
	<-op.done
}

// act runs one request for real and tallies its summary.
func (op *operator) act(ctx context.Context, name string, req replay.Request) replay.Summary {
	if req.Action != replay.ActionOutbox { // the listing only reads, and takes no dry_run
		no := false
		req.DryRun = &no
	}
	s, err := op.sys.stack.Replay.Handle(ctx, req)
	op.mu.Lock()
	defer op.mu.Unlock()
	op.actions[name]++
	switch {
	case err != nil:
		op.errors[name]++
		op.lastErr[name] = err.Error()
	case s.Error != "":
		op.errors[name]++
		op.lastErr[name] = s.Error
	}
	if op.tally[name] == nil {
		op.tally[name] = map[string]int{}
	}
	for k, n := range s.Counts {
		op.tally[name][k] += n
	}
	return s
}

// rerunOne re-runs one event of the workload with force: a processed
// one is re-run, others are counted as the replay found them.
func (op *operator) rerunOne(ctx context.Context) {
	k := op.w.Events[op.rand.IntN(len(op.w.Events))].key()
	s := op.act(ctx, opRerun, replay.Request{Action: replay.ActionReplay, EventKeys: []string{k}, Force: true})
	if s.Counts[replay.OutcomeRerun] > 0 {
		op.mu.Lock()
		op.rerun[k] = true
		op.mu.Unlock()
	}
}

// review lists the rows for review and settles up to five, as the
// runbook says: resolved when the receiver acted on the row's key,
// resent when it did not.
func (op *operator) review(ctx context.Context) {
	s := op.act(ctx, opReview, replay.Request{Action: replay.ActionOutbox})
	for i, row := range s.Rows {
		if i == 5 {
			break
		}
		if op.sys.receiver.acted(row.Key) {
			if r := op.act(ctx, "outbox-resolve", replay.Request{Action: replay.ActionOutboxResolve, OutboxKey: row.Key, Note: "receiver confirmed"}); r.Error == "" {
				op.mu.Lock()
				op.resolved[row.Key] = true
				op.mu.Unlock()
			}
			continue
		}
		if r := op.act(ctx, "outbox-resend", replay.Request{Action: replay.ActionOutboxResend, OutboxKey: row.Key}); r.Error == "" {
			op.mu.Lock()
			op.resent[row.Key] = true
			op.mu.Unlock()
		}
	}
}

// opReport is what the operator did, for the audit.
type opReport struct {
	Actions, Errors  map[string]int
	LastErr          map[string]string
	Tally            map[string]map[string]int
	Rerun            map[string]bool
	Resolved, Resent map[string]bool
}

func (op *operator) report() *opReport {
	op.mu.Lock()
	defer op.mu.Unlock()
	tally := map[string]map[string]int{}
	for k, v := range op.tally {
		tally[k] = maps.Clone(v)
	}
	return &opReport{Actions: maps.Clone(op.actions), Errors: maps.Clone(op.errors), LastErr: maps.Clone(op.lastErr), Tally: tally,
		Rerun: maps.Clone(op.rerun), Resolved: maps.Clone(op.resolved), Resent: maps.Clone(op.resent)}
}

// line is the operator's part of the report: each action's requests and
// what they found.
func (r *opReport) line() string {
	if r == nil || len(r.Actions) == 0 {
		return "none"
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(r.Actions)) {
		p := fmt.Sprintf("%s %d", a, r.Actions[a])
		if n := r.Errors[a]; n > 0 {
			p += fmt.Sprintf(" (%d with an error, the last: %s)", n, clip(r.LastErr[a], 120))
		}
		if t := r.Tally[a]; len(t) > 0 {
			p += " [" + counts(t) + "]"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
