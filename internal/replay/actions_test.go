package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// snapshot is every item of the table, each as JSON, sorted.
func (st stack) snapshot(tb testing.TB) []string {
	tb.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(st.db, &dynamodb.ScanInput{TableName: aws.String(st.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		for _, it := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(it, &m); err != nil {
				tb.Fatal(err)
			}
			b, err := json.Marshal(m)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

func keys(ks ...inbox.Key) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func mustHandle(tb testing.TB, r *replay.Replayer, req replay.Request) replay.Summary {
	tb.Helper()
	sum, err := r.Handle(context.Background(), req)
	if err != nil {
		tb.Fatalf("%+v: %v", req, err)
	}
	if sum.Error != "" {
		tb.Fatalf("%+v: summary error %s", req, sum.Error)
	}
	return sum
}

// TestDryRunsWriteNothing: every action run without "dry_run": false
// leaves the table as it was, sends nothing to the main queue and leaves
// every DLQ message in the DLQ, while reporting what it would do.
func TestDryRunsWriteNothing(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	dead := mustEvent(t, st.store, "evt_dead", inbox.StatusDead, t0)
	failed := mustEvent(t, st.store, "evt_failed", inbox.StatusFailed, t0)
	stranded := mustEvent(t, st.store, "evt_stranded", inbox.StatusReceived, t0)
	done := mustEvent(t, st.store, "evt_done", inbox.StatusProcessed, t0)
	dlqBodies := []string{bodyOf(t, dead), bodyOf(t, done), "not one of ours"}
	for _, b := range dlqBodies {
		if err := st.dlq.Send(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	before := st.snapshot(t)
	r := st.replayer(t0.Add(time.Hour))

	for _, c := range []struct {
		req  replay.Request
		want map[string]int
	}{
		{replay.Request{}, map[string]int{replay.OutcomeRevived: 1, replay.OutcomeProcessed: 1, replay.OutcomePoison: 1}},
		{replay.Request{Action: replay.ActionReplay, Status: "failed"}, map[string]int{replay.OutcomeMadeDue: 1}},
		{replay.Request{Action: replay.ActionReplay, Status: "dead"}, map[string]int{replay.OutcomeRevived: 1}},
		{replay.Request{Action: replay.ActionReplay, Status: "received"}, map[string]int{replay.OutcomeMadeDue: 1}},
		{replay.Request{Action: replay.ActionReplay, EventKeys: keys(done, failed)}, map[string]int{replay.OutcomeProcessed: 1, replay.OutcomeMadeDue: 1}},
		{replay.Request{Action: replay.ActionReplay, EventKeys: keys(done), Force: true}, map[string]int{replay.OutcomeRerun: 1}},
		{replay.Request{Action: replay.ActionSweep}, map[string]int{replay.OutcomeRequeued: 2}},
		{replay.Request{Action: replay.ActionInspect, EventKey: done.String(), IncludePayload: true}, map[string]int{"processed": 1}},
		{replay.Request{Action: replay.ActionOutbox}, map[string]int{}},
	} {
		sum := mustHandle(t, r, c.req)
		if !sum.DryRun && c.req.Action != replay.ActionInspect && c.req.Action != replay.ActionOutbox {
			t.Errorf("%+v: not a dry run", c.req)
		}
		if sum.Moved != 0 || fmt.Sprint(sum.Counts) != fmt.Sprint(c.want) {
			t.Errorf("%+v: moved %d, counts %v; want 0 and %v", c.req, sum.Moved, sum.Counts, c.want)
		}
		if after := st.snapshot(t); !slices.Equal(after, before) {
			t.Fatalf("%+v changed the table:\nbefore %q\nafter  %q", c.req, before, after)
		}
	}
	if got := drainAll(t, st.main); len(got) != 0 {
		t.Errorf("main queue after dry runs: %q", got)
	}
	if got, want := drainAll(t, st.dlq), sorted(dlqBodies); !slices.Equal(got, want) {
		t.Errorf("DLQ after dry runs: got %q, want %q", got, want)
	}
	_ = stranded
}

// TestDrainFilters: only the DLQ messages whose events match the filters
// move; the others stay in the DLQ, untouched, for a later drain.
func TestDrainFilters(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	acct := "acct_1"
	match := mustEventOf(t, st.store, inbox.Key{Source: "stripe", Account: acct, EventID: "evt_match"}, "invoice.paid", inbox.StatusDead, t0)
	others := []inbox.Key{
		mustEventOf(t, st.store, inbox.Key{Source: "github", Account: acct, EventID: "evt_source"}, "invoice.paid", inbox.StatusDead, t0),
		mustEventOf(t, st.store, inbox.Key{Source: "stripe", EventID: "evt_account"}, "invoice.paid", inbox.StatusDead, t0),
		mustEventOf(t, st.store, inbox.Key{Source: "stripe", Account: acct, EventID: "evt_type"}, "customer.created", inbox.StatusDead, t0),
		mustEventOf(t, st.store, inbox.Key{Source: "stripe", Account: acct, EventID: "evt_early"}, "invoice.paid", inbox.StatusDead, t0.Add(-time.Hour)),
		mustEventOf(t, st.store, inbox.Key{Source: "stripe", Account: acct, EventID: "evt_late"}, "invoice.paid", inbox.StatusDead, t0.Add(time.Hour)),
	}
	for _, k := range append([]inbox.Key{match}, others...) {
		if err := st.dlq.Enqueue(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	no := false
	sum := mustHandle(t, st.replayer(t0.Add(2*time.Hour)), replay.Request{
		DryRun: &no, Source: "stripe", Account: &acct, EventType: "invoice.paid",
		ReceivedFrom: t0.Format(time.RFC3339), ReceivedTo: t0.Add(time.Hour).Format(time.RFC3339),
	})
	if sum.Moved != 1 || sum.Counts[replay.OutcomeFiltered] != len(others) || fmt.Sprint(sum.Events) != "["+match.String()+"]" {
		t.Errorf("filtered drain: got %+v; want only %s moved", sum, match)
	}
	if got := drainAll(t, st.main); fmt.Sprint(got) != "["+bodyOf(t, match)+"]" {
		t.Errorf("main queue: got %q", got)
	}
	var want []string
	for _, k := range others {
		want = append(want, bodyOf(t, k))
		if ev, _ := st.store.Get(ctx, k, t0); ev.Status != inbox.StatusDead {
			t.Errorf("%s: %s, want still dead", k, ev.Status)
		}
	}
	if got := drainAll(t, st.dlq); !slices.Equal(got, sorted(want)) {
		t.Errorf("DLQ: got %q, want %q", got, sorted(want))
	}
}

// TestReplayByStatusAndTime: a replay by status and time range makes
// exactly the matching events due and queues exactly their messages; every
// other item of the table is left as it was.
func TestReplayByStatusAndTime(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	from, to := t0, t0.Add(time.Hour)
	var want []inbox.Key
	for i := range 30 {
		// 30 failed events a few minutes apart, several in one millisecond,
		// from before the range to after it.
		at := t0.Add(time.Duration(i-5) * 3 * time.Minute).Add(time.Duration(i%3) * time.Millisecond / 2)
		k := mustEvent(t, st.store, fmt.Sprintf("evt_f%02d", i), inbox.StatusFailed, at)
		if !at.Before(from) && at.Before(to) {
			want = append(want, k)
		}
	}
	for i, status := range []inbox.Status{inbox.StatusDead, inbox.StatusReceived, inbox.StatusProcessed} {
		mustEvent(t, st.store, fmt.Sprintf("evt_other%d", i), status, t0.Add(10*time.Minute))
	}
	untouched := map[string]bool{}
	before := st.snapshot(t)

	no := false
	r := st.replayer(t0.Add(2 * time.Hour))
	sum := mustHandle(t, r, replay.Request{Action: replay.ActionReplay, DryRun: &no, Status: "failed",
		ReceivedFrom: from.Format(time.RFC3339), ReceivedTo: to.Format(time.RFC3339)})
	if got := sorted(sum.Events); !slices.Equal(got, keys(want...)) || sum.Moved != len(want) || sum.Counts[replay.OutcomeMadeDue] != len(want) {
		t.Fatalf("replay: touched %v (%+v), want exactly %v", got, sum.Counts, keys(want...))
	}
	var bodies []string
	for _, k := range want {
		bodies = append(bodies, bodyOf(t, k))
		ev, err := st.store.Get(ctx, k, t0)
		if err != nil || ev.Status != inbox.StatusFailed || ev.Attempts != 1 || !ev.DueAt.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("%s: got %+v, %v; want failed, attempts kept, due now", k, ev, err)
		}
		untouched[pkOf(k)] = true
	}
	if got := drainAll(t, st.main); !slices.Equal(got, sorted(bodies)) {
		t.Errorf("main queue: got %d messages, want %d", len(got), len(bodies))
	}
	// Every item but the replayed events' is byte for byte as it was.
	after := st.snapshot(t)
	if changed := diff(before, after); len(changed) != len(want) {
		t.Errorf("%d items changed, want the %d replayed events: %q", len(changed), len(want), changed)
	} else {
		for _, c := range changed {
			if !untouched[pkFromJSON(t, c)] {
				t.Errorf("item changed that was not replayed: %s", c)
			}
		}
	}
}

func pkOf(k inbox.Key) string { return "event#" + k.String() }

func pkFromJSON(tb testing.TB, item string) string {
	var m struct {
		PK string `json:"pk"`
	}
	if err := json.Unmarshal([]byte(item), &m); err != nil {
		tb.Fatal(err)
	}
	return m.PK
}

// diff lists the items of after that are not in before.
func diff(before, after []string) []string {
	var out []string
	for _, a := range after {
		if _, found := slices.BinarySearch(before, a); !found {
			out = append(out, a)
		}
	}
	return out
}

// budget is a Remaining that has time for n checks, then none.
func budget(n int) func(context.Context) (time.Duration, bool) {
	var calls atomic.Int64
	return func(context.Context) (time.Duration, bool) {
		if calls.Add(1) > int64(n) {
			return time.Second, true
		}
		return time.Hour, true
	}
}

// TestStoppedByTimeResumes: each action stopped by its time budget says so
// and returns the request that continues; running that (and the next…)
// finishes the work, every event queued, none left out.
func TestStoppedByTimeResumes(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	const n = 40
	var all []inbox.Key
	for i := range n {
		k := mustEvent(t, st.store, fmt.Sprintf("evt_%02d", i), inbox.StatusDead, t0.Add(time.Duration(i)*time.Second))
		all = append(all, k)
	}
	no := false
	for _, c := range []struct {
		name string
		req  replay.Request
	}{
		{"by status", replay.Request{Action: replay.ActionReplay, DryRun: &no, Status: "dead"}},
		{"by key", replay.Request{Action: replay.ActionReplay, DryRun: &no, EventKeys: keys(all...), Force: true}},
		{"drain", replay.Request{DryRun: &no}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "drain" {
				for _, k := range all {
					if _, err := st.store.Fail(ctx, k, inbox.Failure{Status: inbox.StatusDead, Cause: "again"}, t0); err != nil {
						t.Fatal(err)
					}
					if err := st.dlq.Enqueue(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
			}
			req, runs := c.req, 0
			seen := map[string]bool{}
			for {
				runs++
				if runs > 20 {
					t.Fatal("not finished after 20 runs")
				}
				r := st.replayer(t0.Add(time.Hour))
				r.Remaining = budget(7)
				sum := mustHandle(t, r, req)
				for _, e := range sum.Events {
					seen[e] = true
				}
				if sum.Stopped == "" {
					break
				}
				if sum.Stopped != replay.StoppedTime || sum.Next == nil {
					t.Fatalf("run %d: stopped %q, next %+v; want time and a request", runs, sum.Stopped, sum.Next)
				}
				req = *sum.Next
			}
			if runs < 3 {
				t.Errorf("%d runs: the budget did not stop it", runs)
			}
			if len(seen) != n {
				t.Errorf("%d of %d events touched", len(seen), n)
			}
			got := drainAll(t, st.main)
			if len(got) < n {
				t.Errorf("main queue: %d messages, want at least %d", len(got), n)
			}
			if c.name == "drain" {
				if left := drainAll(t, st.dlq); len(left) != 0 {
					t.Errorf("DLQ left %d", len(left))
				}
			}
			for _, k := range all {
				if ev, _ := st.store.Get(ctx, k, t0); ev.Status != inbox.StatusFailed {
					t.Errorf("%s: %s, want failed and due", k, ev.Status)
				}
			}
		})
	}
}

// TestReplayByKey: a processed event is left alone without force and
// re-run with it; a missing key is reported; a malformed one refused.
func TestReplayByKey(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	done := mustEvent(t, st.store, "evt_done", inbox.StatusProcessed, t0)
	gone := inbox.Key{Source: "stripe", EventID: "evt_gone"}
	no := false
	r := st.replayer(t0.Add(time.Hour))
	sum := mustHandle(t, r, replay.Request{Action: replay.ActionReplay, DryRun: &no, EventKeys: keys(done, gone)})
	if sum.Moved != 0 || sum.Counts[replay.OutcomeProcessed] != 1 || sum.Counts[replay.OutcomeOrphan] != 1 {
		t.Errorf("without force: got %+v", sum)
	}
	sum = mustHandle(t, r, replay.Request{Action: replay.ActionReplay, DryRun: &no, EventKeys: keys(done), Force: true})
	if sum.Moved != 1 || sum.Counts[replay.OutcomeRerun] != 1 {
		t.Errorf("force: got %+v", sum)
	}
	ev, err := st.store.Get(ctx, done, t0)
	if err != nil || ev.Status != inbox.StatusFailed || ev.PreviousOutcome != inbox.OutcomeIgnored || ev.Reruns != 1 {
		t.Errorf("after force: got %+v, %v; want failed, due, previous outcome kept", ev, err)
	}
	if got := drainAll(t, st.main); fmt.Sprint(got) != "["+bodyOf(t, done)+"]" {
		t.Errorf("main queue: %q", got)
	}
	if _, err := r.Handle(ctx, replay.Request{Action: replay.ActionReplay, EventKeys: []string{"no-hashes"}}); !errors.Is(err, replay.ErrBadRequest) {
		t.Errorf("malformed key: got %v, want ErrBadRequest", err)
	}
}

// TestRequestErrors: what an operator mistypes is refused with a message
// that says what to write instead, and nothing runs.
func TestRequestErrors(t *testing.T) {
	for payload, want := range map[string]string{
		`{"action":"inspect","key":"stripe##evt_1"}`:                        `did you mean "event_key"`,
		`{"action":"drain-dlq","dryrun":false}`:                             `did you mean "dry_run"`,
		`{"action":"drain-dlq","limit":5}`:                                  `did you mean "max"`,
		`{"action":"replay","statsu":"failed"}`:                             `did you mean "status"`,
		`{"action":"sweep","source":"stripe"}`:                              `sweep does not take "source"`,
		`{"action":"inspect","event_key":"a##b","dry_run":false}`:           `inspect does not take "dry_run"`,
		`{"action":"replay"}`:                                               "needs event_keys or a status",
		`{"action":"replay","status":"processed"}`:                          "want failed, dead or received",
		`{"action":"replay","status":"failed","force":true}`:                "force re-runs processed events",
		`{"action":"replay","status":"failed","event_keys":["a##b"]}`:       "not both",
		`{"action":"replay","status":"failed","received_from":"yesterday"}`: "RFC 3339",
		`{"action":"replay","status":"failed","received_from":"2026-12-02T00:00:00Z","received_to":"2026-12-01T00:00:00Z"}`: "is not before",
		`{"action":"outbox-resend"}`:                                "needs outbox_key",
		`{"action":"replay","status":"dead","cursor":"3/x"}`:        "not one a summary gave",
		`{"action":"replay","status":"dead","cursor":"failed/3/5"}`: "continues a selection of failed events",
		`{"action":"purge"}`:                                        "unknown action",
	} {
		req, err := replay.DecodeRequest([]byte(payload))
		if err == nil {
			err = req.Validate(t0)
		}
		if !errors.Is(err, replay.ErrBadRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a bad request saying %q", payload, err, want)
		}
	}
}

// TestNoNextThatRepeats: a run that stopped part-way gives a Next only
// where running it makes progress; elsewhere it says why there is none.
func TestNoNextThatRepeats(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	for i := range 3 {
		if err := st.dlq.Send(ctx, fmt.Sprintf("not ours %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	r := st.replayer(t0)
	no := false
	sum := mustHandle(t, r, replay.Request{DryRun: &no, Max: 2})
	if sum.Stopped != replay.StoppedMax || sum.Next != nil || !strings.Contains(sum.Note, "could leave the DLQ") {
		t.Errorf("drain of poison only: got %+v, want stopped at max, no next, a note", sum)
	}
	sum = mustHandle(t, r, replay.Request{Max: 2})
	if sum.Stopped != replay.StoppedMax || sum.Next != nil || !strings.Contains(sum.Note, "raise max") {
		t.Errorf("preview: got %+v, want no next, a note", sum)
	}
	if got := drainAll(t, st.dlq); len(got) != 3 {
		t.Errorf("DLQ: %d messages, want the 3 left", len(got))
	}
	// A range that starts after now is empty, not an error.
	sum = mustHandle(t, r, replay.Request{Action: replay.ActionReplay, Status: "failed", ReceivedFrom: t0.Add(48 * time.Hour).Format(time.RFC3339)})
	if sum.Examined != 0 || sum.Next != nil {
		t.Errorf("future range: got %+v", sum)
	}
}

// TestReadOnlyAnswers: inspect and the outbox listing say nothing of a dry
// run or of messages moved; the actions that move things say both.
func TestReadOnlyAnswers(t *testing.T) {
	for action, want := range map[string]bool{replay.ActionInspect: false, replay.ActionOutbox: false, replay.ActionSweep: true, replay.ActionDrainDLQ: true} {
		b, err := json.Marshal(replay.Summary{Action: action, DryRun: true, Counts: map[string]int{}})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		_, dry := m["dry_run"]
		_, moved := m["moved"]
		if dry != want || moved != want || m["action"] != action {
			t.Errorf("%s: %s; want dry_run and moved %t", action, b, want)
		}
	}
}
