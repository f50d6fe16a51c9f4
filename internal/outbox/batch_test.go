package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// answerEach answers a request entry by entry: accepted where code gives
// "", refused with the code it gives otherwise.
func answerEach(code func(entry map[string]any) string) func(http.ResponseWriter, []map[string]any) {
	return func(w http.ResponseWriter, entries []map[string]any) {
		type result struct {
			EventId      string `json:",omitempty"`
			ErrorCode    string `json:",omitempty"`
			ErrorMessage string `json:",omitempty"`
		}
		var out struct {
			FailedEntryCount int
			Entries          []result
		}
		for i, e := range entries {
			if c := code(e); c != "" {
				out.FailedEntryCount++
				out.Entries = append(out.Entries, result{ErrorCode: c, ErrorMessage: "no"})
				continue
			}
			out.Entries = append(out.Entries, result{EventId: fmt.Sprintf("id-%d", i)})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func acceptAll(map[string]any) string { return "" }

// fanOut forwards events along routes: their rows, in a store, and a
// deliverer with each route's target (calls bounded by timeout), putting
// to url.
func fanOut(tb testing.TB, url string, timeout time.Duration, routes forward.Routes, events ...inbox.Event) (*memStore, *outbox.Deliverer, map[inbox.Key][]string) {
	tb.Helper()
	var rows []outbox.Row
	keys := map[inbox.Key][]string{}
	stored := memEvents{}
	for _, ev := range events {
		out, err := forward.Outbound(ev, routes)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range out {
			rows = append(rows, outbox.Row{Key: o.Key, Action: o.Action, Target: o.Target, Body: o.Body, Event: ev.Key})
			keys[ev.Key] = append(keys[ev.Key], o.Key)
		}
		stored[ev.Key] = ev
	}
	targets := map[string]outbox.Target{}
	for _, r := range routes {
		targets[forward.TargetOf(r)] = outbox.Target{RetryUnknown: r.RetryUnknown, Timeout: timeout}
	}
	store := newMemStore(rows...)
	d, err := outbox.New(outbox.Config{
		Store: store, Targets: targets,
		Bus: eventBridgeClient(url), Events: stored,
		MaxAttempts: 3, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return t0 }, Rand: func() float64 { return 0.5 },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return store, d, keys
}

// threeBuses forwards stripe's events to three buses; the second's route
// retries unknowns.
var threeBuses = forward.Routes{
	{Source: "stripe", Bus: "billing"},
	{Source: "stripe", Bus: "audit", RetryUnknown: true},
	{Source: "stripe", Bus: "analytics"},
}

// rowOf is the row forwarding ev to bus.
func rowOf(store *memStore, ev inbox.Key, bus string) outbox.Row {
	return store.row(effects.KeyOf(ev.String(), forward.TargetOf(forward.Route{Source: ev.Source, Bus: bus})))
}

// TestForwardBatchesAnEventsRoutes: an event's rows for three routes are
// put in one request, each entry to its own bus, and each row is
// delivered.
func TestForwardBatchesAnEventsRoutes(t *testing.T) {
	bus := &fakeBus{answerBatch: answerEach(acceptAll)}
	store, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, forwarded)
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner)
	if err != nil || !st.Settled || st.Sent != 3 {
		t.Fatalf("settlement %+v, %v: want three rows sent and settled", st, err)
	}
	if got := bus.sizes(); !slices.Equal(got, []int{3}) {
		t.Fatalf("requests of %v entries, want one of 3", got)
	}
	var buses []string
	for _, e := range bus.requests[0] {
		buses = append(buses, e["EventBusName"].(string))
	}
	slices.Sort(buses)
	if !slices.Equal(buses, []string{"analytics", "audit", "billing"}) {
		t.Errorf("buses %v", buses)
	}
	for _, r := range threeBuses {
		if got := rowOf(store, evKey, r.Bus); got.State != outbox.Delivered {
			t.Errorf("row to %s: %s, want delivered", r.Bus, got.State)
		}
	}
	if got := d.PutRequests(); got != 1 {
		t.Errorf("PutRequests %d, want 1", got)
	}
}

// TestForwardBatchOutcomes: each row of a request ends as its own entry's
// answer says; a request that fails whole ends each row as its own route
// says (unknown, or failed for the route that retries unknowns).
func TestForwardBatchOutcomes(t *testing.T) {
	t.Run("entry by entry", func(t *testing.T) {
		codes := map[string]string{"billing": "", "audit": "InternalFailure", "analytics": "MalformedDetail"}
		bus := &fakeBus{answerBatch: answerEach(func(e map[string]any) string { return codes[e["EventBusName"].(string)] })}
		store, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, forwarded)
		deliver := func() outbox.Settlement {
			st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		if st := deliver(); st.Settled {
			t.Fatalf("settled with a refused entry: %+v", st)
		}
		for bus, want := range map[string]outbox.State{"billing": outbox.Delivered, "audit": outbox.Failed, "analytics": outbox.Rejected} {
			if got := rowOf(store, evKey, bus); got.State != want {
				t.Errorf("row to %s: %s (%s), want %s", bus, got.State, got.LastError, want)
			}
		}
		if got := bus.sizes(); !slices.Equal(got, []int{3}) {
			t.Errorf("requests of %v entries, want one of 3", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		bus := &fakeBus{answerBatch: func(http.ResponseWriter, []map[string]any) { time.Sleep(time.Second) }}
		store, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, forwarded)
		if _, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner); err != nil {
			t.Fatal(err)
		}
		for bus, want := range map[string]outbox.State{"billing": outbox.Unknown, "audit": outbox.Failed, "analytics": outbox.Unknown} {
			if got := rowOf(store, evKey, bus); got.State != want {
				t.Errorf("row to %s: %s (%s), want %s", bus, got.State, got.LastError, want)
			}
		}
		if got := bus.sizes(); !slices.Equal(got, []int{3}) {
			t.Errorf("requests of %v entries, want one of 3 (no SDK retry)", got)
		}
	})
	t.Run("fewer answers than entries", func(t *testing.T) {
		bus := &fakeBus{answerBatch: func(w http.ResponseWriter, entries []map[string]any) {
			answerEach(acceptAll)(w, entries[:1])
		}}
		store, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, forwarded)
		if _, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner); err != nil {
			t.Fatal(err)
		}
		// No entry's answer can be told from another's.
		for bus, want := range map[string]outbox.State{"billing": outbox.Unknown, "audit": outbox.Failed, "analytics": outbox.Unknown} {
			if got := rowOf(store, evKey, bus); got.State != want {
				t.Errorf("row to %s: %s (%s), want %s", bus, got.State, got.LastError, want)
			}
		}
	})
}

// TestForwardBatchSize: entries are gathered only up to EventBridge's
// bound on a whole request; three entries of 400 kB go in two requests.
func TestForwardBatchSize(t *testing.T) {
	big := forwarded
	big.Payload = []byte(`{"id":"evt_1","padding":"` + strings.Repeat("x", 400_000) + `"}`)
	bus := &fakeBus{answerBatch: answerEach(acceptAll)}
	_, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, big)
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner)
	if err != nil || !st.Settled {
		t.Fatalf("settlement %+v, %v", st, err)
	}
	got := bus.sizes()
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("requests of %v entries, want one of 2 and one of 1", got)
	}
	for _, req := range bus.requests {
		total := 0
		for _, e := range req {
			total += 14 + len(e["Source"].(string)) + len(e["DetailType"].(string)) + len(e["Detail"].(string))
		}
		if total > forward.MaxEntryBytes {
			t.Errorf("a request of %d bytes, over %d", total, forward.MaxEntryBytes)
		}
	}
}

// TestForwardBatchesAcrossEvents: rows of many events delivered at once
// (the records of one SQS batch) are put in requests of up to ten
// entries, each entry exactly once. The first request is held until
// every other entry is either put or waiting, so what is gathered does
// not depend on timing.
func TestForwardBatchesAcrossEvents(t *testing.T) {
	const n = 25
	release := make(chan struct{})
	var once sync.Once
	bus := &fakeBus{}
	bus.answerBatch = func(w http.ResponseWriter, entries []map[string]any) {
		first := false
		once.Do(func() { first = true })
		if first {
			<-release
		}
		answerEach(acceptAll)(w, entries)
	}
	srv := bus.serve(t)
	var evs []inbox.Event
	for i := range n {
		ev := forwarded
		ev.Key = inbox.Key{Source: "stripe", EventID: fmt.Sprintf("evt_%02d", i)}
		ev.Payload = []byte(fmt.Sprintf(`{"id":"evt_%02d"}`, i))
		evs = append(evs, ev)
	}
	routes := forward.Routes{{Source: "stripe", Bus: "billing"}}
	// The held request needs longer than a timeout kept short for the
	// other tests.
	store, d, keys := fanOut(t, srv.URL, 20*time.Second, routes, evs...)

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, ev := range evs {
		wg.Go(func() {
			st, err := d.Deliver(context.Background(), context.Background(), ev.Key, 0, keys[ev.Key], fmt.Sprintf("owner-%s", ev.Key.EventID))
			if err == nil && !st.Settled {
				err = fmt.Errorf("%s not settled: %+v", ev.Key, st)
			}
			errs <- err
		})
	}
	// Wait (bounded) until every entry is in a request or waiting.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		bus.mu.Lock()
		put := len(bus.entries)
		bus.mu.Unlock()
		if put+d.Waiting() == n {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d entries put and %d waiting, want %d in all", put, d.Waiting(), n)
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	sizes := bus.sizes()
	total := 0
	for _, s := range sizes {
		if s > outbox.MaxBatchEntries {
			t.Errorf("a request of %d entries", s)
		}
		total += s
	}
	// One request held, full ones while it is, and one for the rest.
	if total != n || len(sizes) > 2+n/outbox.MaxBatchEntries {
		t.Errorf("requests of %v entries, want %d entries in at most %d requests", sizes, n, 2+n/outbox.MaxBatchEntries)
	}
	seen := map[string]int{}
	for _, e := range bus.entries {
		var detail map[string]any
		if err := json.Unmarshal([]byte(e["Detail"].(string)), &detail); err != nil {
			t.Fatal(err)
		}
		seen[detail["id"].(string)]++
	}
	for _, ev := range evs {
		if seen[ev.Key.EventID] != 1 {
			t.Errorf("%s put %d times, want once", ev.Key.EventID, seen[ev.Key.EventID])
		}
		if got := store.row(keys[ev.Key][0]); got.State != outbox.Delivered {
			t.Errorf("%s: row %s", ev.Key.EventID, got.State)
		}
	}
}
