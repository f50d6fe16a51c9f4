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
		out, err := forward.Outbound(ev, routes.Match(ev.Key.Source, ev.Type))
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

// events are n events of source, evt_00 on, with payloads of their ids.
func events(source string, n int) []inbox.Event {
	var evs []inbox.Event
	for i := range n {
		ev := forwarded
		ev.Key = inbox.Key{Source: source, EventID: fmt.Sprintf("evt_%02d", i)}
		ev.Payload = []byte(fmt.Sprintf(`{"id":"evt_%02d"}`, i))
		evs = append(evs, ev)
	}
	return evs
}

// deliverGathered delivers the events at once, as the records of one SQS
// batch, with the bus holding its first request until every other entry
// is put or waiting. The first request carries the entries ready when it
// started (one, or more if the others' tickets were out), the rest go in
// full requests while it is held, and one more takes what is left. It
// fails the test if a delivery fails, if a full request's count of
// entries waits behind the held one, or if it leaves entries counted on
// their way.
func deliverGathered(t *testing.T, d *outbox.Deliverer, bus *fakeBus, keys map[inbox.Key][]string, evs []inbox.Event) {
	t.Helper()
	total := 0
	for _, ev := range evs {
		total += len(keys[ev.Key])
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for _, ev := range evs {
		wg.Go(func() {
			_, err := d.Deliver(context.Background(), context.Background(), ev.Key, 0, keys[ev.Key], "owner-"+ev.Key.EventID)
			errs <- err
		})
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		bus.mu.Lock()
		put := len(bus.entries)
		bus.mu.Unlock()
		if put+d.Waiting() == total {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d entries put and %d waiting, want %d in all", put, d.Waiting(), total)
		}
	}
	// A request full in entries or bytes goes even while one is in
	// flight: what waits is less than one.
	if w := d.Waiting(); w >= outbox.MaxBatchEntries {
		t.Errorf("%d entries waiting behind a request in flight, want every full request of them sent", w)
	}
	for name, size := range d.WaitingBytes() {
		if size > forward.MaxEntryBytes {
			t.Errorf("%d bytes waiting for bus %s behind a request in flight, want every full request of them sent", size, name)
		}
	}
	close(bus.holdFirst)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := d.Coming(); n != 0 {
		t.Errorf("%d entries still counted on their way", n)
	}
}

// TestForwardBusesApart: an event's rows for three routes go in three
// requests, one bus each, so that a request refused whole for one bus (a
// missing bus: moto refuses the request after putting the entries before
// it) decides only that bus's row.
func TestForwardBusesApart(t *testing.T) {
	bus := &fakeBus{answerBatch: func(w http.ResponseWriter, entries []map[string]any) {
		if entries[0]["EventBusName"] == "analytics" {
			apiError(400, "ResourceNotFoundException")(w, 0)
			return
		}
		answerEach(acceptAll)(w, entries)
	}}
	store, d, keys := fanOut(t, bus.serve(t).URL, 300*time.Millisecond, threeBuses, forwarded)
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys[evKey], owner)
	if err != nil || st.Settled || st.Sent != 3 {
		t.Fatalf("settlement %+v, %v: want three rows sent, one not final", st, err)
	}
	for _, req := range bus.requests {
		if len(req) != 1 {
			t.Errorf("a request of %d entries for one event's routes, want one a bus", len(req))
		}
	}
	for bus, want := range map[string]outbox.State{"billing": outbox.Delivered, "audit": outbox.Delivered, "analytics": outbox.Failed} {
		if got := rowOf(store, evKey, bus); got.State != want {
			t.Errorf("row to %s: %s (%s), want %s", bus, got.State, got.LastError, want)
		}
	}
	if n := d.Coming(); n != 0 {
		t.Errorf("%d entries still counted on their way", n)
	}
	if got := len(bus.sizes()); got != 3 {
		t.Errorf("%d PutEvents requests, want 3", got)
	}
}

// TestForwardBatchOutcomes: each row of a request ends as its own entry's
// answer says; a request that fails whole ends each row as its own route
// says (unknown, or failed for the route that retries unknowns); a
// request of several entries refused as invalid is made again one entry
// at a time.
func TestForwardBatchOutcomes(t *testing.T) {
	stripe := forward.Route{Source: "stripe", Bus: "billing"}
	github := forward.Route{Source: "github", Bus: "billing", RetryUnknown: true}
	routes := forward.Routes{stripe, github}
	evs := events("stripe", 4)
	idOf := func(e map[string]any) string {
		var detail map[string]any
		_ = json.Unmarshal([]byte(e["Detail"].(string)), &detail)
		return detail["id"].(string)
	}
	t.Run("entry by entry", func(t *testing.T) {
		codes := map[string]string{"evt_02": "InternalFailure", "evt_03": "MalformedDetail"}
		bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: answerEach(func(e map[string]any) string { return codes[idOf(e)] })}
		store, d, keys := fanOut(t, bus.serve(t).URL, 5*time.Second, routes, evs...)
		deliverGathered(t, d, bus, keys, evs)
		if got := bus.sizes(); len(got) > 2 {
			t.Errorf("requests of %v entries, want at most two", got)
		}
		for id, want := range map[string]outbox.State{"evt_00": outbox.Delivered, "evt_01": outbox.Delivered, "evt_02": outbox.Failed, "evt_03": outbox.Rejected} {
			if got := rowOf(store, inbox.Key{Source: "stripe", EventID: id}, "billing"); got.State != want {
				t.Errorf("%s: %s (%s), want %s", id, got.State, got.LastError, want)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		// Two stripe events and two github events to one bus, every
		// request timing out: each row is decided by its own route.
		mixed := append(events("stripe", 2), events("github", 2)...)
		bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: func(w http.ResponseWriter, entries []map[string]any) {
			time.Sleep(2 * time.Second) // then accept: only the timeout makes it unknown
			answerEach(acceptAll)(w, entries)
		}}
		store, d, keys := fanOut(t, bus.serve(t).URL, time.Second, routes, mixed...)
		deliverGathered(t, d, bus, keys, mixed)
		if got := bus.sizes(); slices.Max(got) < 2 {
			t.Fatalf("requests of %v entries, want routes sharing one", got)
		}
		for _, ev := range mixed {
			want := map[string]outbox.State{"stripe": outbox.Unknown, "github": outbox.Failed}[ev.Key.Source]
			if got := rowOf(store, ev.Key, "billing"); got.State != want {
				t.Errorf("%s: %s (%s), want %s", ev.Key, got.State, got.LastError, want)
			}
		}
	})
	t.Run("invalid together, each alone", func(t *testing.T) {
		bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: func(w http.ResponseWriter, entries []map[string]any) {
			if len(entries) > 1 {
				apiError(400, "ValidationException")(w, 0)
				return
			}
			answerEach(acceptAll)(w, entries)
		}}
		store, d, keys := fanOut(t, bus.serve(t).URL, 5*time.Second, routes, evs...)
		deliverGathered(t, d, bus, keys, evs)
		// However they were gathered, some request had several entries
		// (the held one's followers wait for it), and was refused.
		got := bus.sizes()
		singles, total := 0, 0
		for _, n := range got {
			if n == 1 {
				singles++
			}
			total += n
		}
		if singles != len(evs) || total <= len(evs) {
			t.Errorf("requests of %v entries, want every entry alone after a refused request of several", got)
		}
		for _, ev := range evs {
			if got := rowOf(store, ev.Key, "billing"); got.State != outbox.Delivered {
				t.Errorf("%s: %s (%s), want delivered", ev.Key, got.State, got.LastError)
			}
		}
	})
	t.Run("fewer answers than entries", func(t *testing.T) {
		bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: func(w http.ResponseWriter, entries []map[string]any) {
			answerEach(acceptAll)(w, entries[:1])
		}}
		store, d, keys := fanOut(t, bus.serve(t).URL, 5*time.Second, routes, evs...)
		deliverGathered(t, d, bus, keys, evs)
		// In a request of several, no entry's answer can be told from
		// another's; one alone is answered.
		several := 0
		for _, req := range bus.requests {
			want := outbox.Delivered
			if len(req) > 1 {
				want = outbox.Unknown
				several++
			}
			for _, e := range req {
				k := inbox.Key{Source: "stripe", EventID: idOf(e)}
				if got := rowOf(store, k, "billing"); got.State != want {
					t.Errorf("%s in a request of %d: %s (%s), want %s", k, len(req), got.State, got.LastError, want)
				}
			}
		}
		if several == 0 {
			t.Errorf("requests of %v entries, want one of several", bus.sizes())
		}
	})
}

// TestForwardBatchSize: entries are gathered only up to EventBridge's
// bound on a whole request: entries of 400 kB go two to a request, and
// two go while a request is in flight, as three would be too many bytes.
func TestForwardBatchSize(t *testing.T) {
	evs := events("stripe", 5)
	for i := range evs {
		evs[i].Payload = []byte(fmt.Sprintf(`{"id":"evt_%02d","padding":"%s"}`, i, strings.Repeat("x", 400_000)))
	}
	bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: answerEach(acceptAll)}
	_, d, keys := fanOut(t, bus.serve(t).URL, 5*time.Second, forward.Routes{{Source: "stripe", Bus: "billing"}}, evs...)
	deliverGathered(t, d, bus, keys, evs)
	// Two fit in 1 MB.
	if got := bus.sizes(); slices.Max(got) != 2 || len(bus.entries) != len(evs) {
		t.Fatalf("requests of %v entries, want two at most and some of two", got)
	}
	for _, req := range bus.requests {
		total := 0
		for _, e := range req {
			r := forward.Row{Source: e["Source"].(string), DetailType: e["DetailType"].(string)}
			if e["Time"] != nil {
				r.Time = "sent" // Size counts a Time, whatever its value
			}
			total += forward.Size(r, []byte(e["Detail"].(string)))
		}
		if total > forward.MaxEntryBytes {
			t.Errorf("a request of %d bytes, over %d", total, forward.MaxEntryBytes)
		}
	}
}

// TestForwardBatchesAcrossEvents: rows of many events delivered at once
// (the records of one SQS batch) are put in requests of up to ten
// entries, each entry exactly once.
func TestForwardBatchesAcrossEvents(t *testing.T) {
	const n = 25
	evs := events("stripe", n)
	bus := &fakeBus{holdFirst: make(chan struct{}), answerBatch: answerEach(acceptAll)}
	store, d, keys := fanOut(t, bus.serve(t).URL, 20*time.Second, forward.Routes{{Source: "stripe", Bus: "billing"}}, evs...)
	deliverGathered(t, d, bus, keys, evs)
	// The held one, full ones while it is, and one for the rest.
	got := bus.sizes()
	if slices.Max(got) > outbox.MaxBatchEntries || len(got) > 2+n/outbox.MaxBatchEntries {
		t.Errorf("requests of %v entries, want at most %d, of at most %d", got, 2+n/outbox.MaxBatchEntries, outbox.MaxBatchEntries)
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

// TestTicketsReturned: a row that does not reach the batcher — an HTTP
// row, a forwarding row whose event is gone, a row not due — gives back
// its place among the entries on their way, or every later request would
// wait the linger.
func TestTicketsReturned(t *testing.T) {
	bus := &fakeBus{answerBatch: answerEach(acceptAll)}
	route := forward.Route{Source: "stripe", Bus: "inbox"} // forwardRow's
	gone := forwardRow(t)
	notDue := row("later", "receipt")
	notDue.DueAt = t0.Add(time.Hour)
	store := newMemStore(row("r1", "receipt"), gone, notDue)
	d, err := outbox.New(outbox.Config{
		Store:   store,
		Targets: map[string]outbox.Target{"receipt": {}, forward.TargetOf(route): {Timeout: time.Second}},
		Bus:     eventBridgeClient(bus.serve(t).URL), Events: memEvents{},
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	st := deliver(t, d, "r1", gone.Key, "later")
	if st.States[outbox.Delivered] != 1 || st.States[outbox.Rejected] != 1 {
		t.Fatalf("states %v, want the HTTP row delivered to the log and the forwarding row rejected", st.States)
	}
	if n := d.Coming(); n != 0 {
		t.Errorf("%d entries still counted on their way", n)
	}
}
