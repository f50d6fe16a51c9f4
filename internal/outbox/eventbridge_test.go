package outbox_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/eventbus"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// memEvents is the stored events a forwarding row reads its payload from.
type memEvents map[inbox.Key]inbox.Event

func (m memEvents) ReadEvent(_ context.Context, k inbox.Key, _ time.Time) (inbox.Event, error) {
	if ev, ok := m[k]; ok {
		return ev, nil
	}
	return inbox.Event{}, inbox.ErrNotFound
}

func (memEvents) Payload(_ context.Context, ev inbox.Event) ([]byte, error) { return ev.Payload, nil }

// fakeBus plays EventBridge's PutEvents over loopback: the real SDK
// client talks to it, so the outbox's classification sees real SDK
// errors. answer is called with the number of the put (from 1) for a
// request of one entry; answerBatch, if set, with every request's
// entries instead. requests holds each request's entries.
type fakeBus struct {
	mu          sync.Mutex
	entries     []map[string]any
	requests    [][]map[string]any
	answer      func(w http.ResponseWriter, n int)
	answerBatch func(w http.ResponseWriter, entries []map[string]any)
	// holdFirst, if set, holds the first request until it is closed.
	holdFirst chan struct{}
}

func (b *fakeBus) serve(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
			http.Error(w, "unexpected "+got, http.StatusBadRequest)
			return
		}
		var in struct{ Entries []map[string]any }
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.entries = append(b.entries, in.Entries...)
		b.requests = append(b.requests, in.Entries)
		n := len(b.entries)
		first := len(b.requests) == 1
		b.mu.Unlock()
		if first && b.holdFirst != nil {
			<-b.holdFirst
		}
		if b.answerBatch != nil {
			b.answerBatch(w, in.Entries)
			return
		}
		if len(in.Entries) != 1 {
			http.Error(w, "this fake answers one entry", http.StatusBadRequest)
			return
		}
		b.answer(w, n)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// count is how many entries were put; first the first of them.
func (b *fakeBus) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// sizes is the number of entries of each request, in the order they came.
func (b *fakeBus) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n []int
	for _, r := range b.requests {
		n = append(n, len(r))
	}
	return n
}

func (b *fakeBus) first() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries[0]
}

func putOK(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	io.WriteString(w, `{"FailedEntryCount":0,"Entries":[{"EventId":"id-`+string(rune('0'+n))+`"}]}`)
}

func entryFailed(code string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		io.WriteString(w, `{"FailedEntryCount":1,"Entries":[{"ErrorCode":"`+code+`","ErrorMessage":"no"}]}`)
	}
}

func apiError(status int, typ string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		io.WriteString(w, `{"__type":"`+typ+`","message":"no"}`)
	}
}

// eventBridgeClient is the EventBridge adapter over the real SDK client,
// talking to url.
func eventBridgeClient(url string) *eventbus.Client {
	return eventbus.New(eventbridge.NewFromConfig((&awstest.Server{Endpoint: url}).NoRetryConfig()))
}

var forwarded = inbox.Event{
	Key: evKey, Type: "invoice.paid", Created: time.Unix(1764500000, 0), ReceivedAt: t0,
	Payload: []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`),
}

// forwardRow is the outbox row forwarding the event to bus "inbox".
func forwardRow(tb testing.TB) outbox.Row {
	tb.Helper()
	rows, err := forward.Outbound(forwarded, forward.Routes{{Source: "stripe", Bus: "inbox"}})
	if err != nil {
		tb.Fatal(err)
	}
	o := rows[0]
	return outbox.Row{Key: o.Key, Action: o.Action, Target: o.Target, Body: o.Body, Event: evKey}
}

func newForwarder(tb testing.TB, store outbox.Store, url string, retryUnknown bool, events outbox.Events) *outbox.Deliverer {
	tb.Helper()
	d, err := outbox.New(outbox.Config{
		Store:   store,
		Targets: map[string]outbox.Target{forward.TargetOf(forward.Route{Source: "stripe", Bus: "inbox"}): {RetryUnknown: retryUnknown, Timeout: 300 * time.Millisecond}},
		Bus:     eventBridgeClient(url), Events: events,
		MaxAttempts: 3, RetryBase: 30 * time.Second, RetryCap: time.Hour,
		Logger: slog.New(slog.DiscardHandler),
		Now:    func() time.Time { return t0 },
		Rand:   func() float64 { return 0.5 },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// TestForwardPut: a forwarding row is put as one entry — the bus, source,
// detail type and provider time of its row, the Detail built from the
// stored payload with the event key — and is delivered once.
func TestForwardPut(t *testing.T) {
	bus := &fakeBus{answer: putOK}
	srv := bus.serve(t)
	r := forwardRow(t)
	store := newMemStore(r)
	d := newForwarder(t, store, srv.URL, true, memEvents{evKey: forwarded})
	if st := deliver(t, d, r.Key); !st.Settled || st.Sent != 1 {
		t.Fatalf("settlement %+v, want settled after one put", st)
	}
	if got := store.row(r.Key); got.State != outbox.Delivered || got.DeliveredTo != "eventbridge" {
		t.Fatalf("row %+v, want delivered to eventbridge", got)
	}
	if bus.count() != 1 {
		t.Fatalf("%d entries put, want 1", bus.count())
	}
	e := bus.first()
	if e["EventBusName"] != "inbox" || e["Source"] != "webhook-inbox.stripe" || e["DetailType"] != "invoice.paid" || e["Time"] != float64(1764500000) {
		t.Errorf("entry %v", e)
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(e["Detail"].(string)), &detail); err != nil {
		t.Fatal(err)
	}
	if detail["id"] != "evt_1" || detail[forward.MetaKey].(map[string]any)["event_key"] != evKey.String() {
		t.Errorf("detail %v: want the payload's members and the event key", detail)
	}
	// Delivered: another pass puts nothing.
	deliver(t, d, r.Key)
	if bus.count() != 1 {
		t.Errorf("%d entries after a second pass, want 1", bus.count())
	}
}

// TestForwardClassifies: what each answer of PutEvents, or its absence,
// makes of the row, for a route that retries unknowns and one that does
// not.
func TestForwardClassifies(t *testing.T) {
	// An answer that would accept the entry, after the call's timeout.
	hang := func(w http.ResponseWriter, n int) { time.Sleep(time.Second); putOK(w, n) }
	for _, tc := range []struct {
		name         string
		answer       func(http.ResponseWriter, int)
		retryUnknown bool
		want         outbox.State
	}{
		{"accepted", putOK, false, outbox.Delivered},
		{"entry failed (InternalFailure)", entryFailed("InternalFailure"), false, outbox.Failed},
		{"entry throttled", entryFailed("ThrottlingException"), false, outbox.Failed},
		{"entry malformed", entryFailed("MalformedDetail"), false, outbox.Rejected},
		{"throttled whole", apiError(400, "ThrottlingException"), false, outbox.Failed},
		{"no such bus", apiError(400, "ResourceNotFoundException"), false, outbox.Failed},
		{"denied", apiError(400, "AccessDeniedException"), false, outbox.Failed},
		{"invalid request", apiError(400, "ValidationException"), false, outbox.Rejected},
		{"internal error", apiError(500, "InternalException"), false, outbox.Unknown},
		{"internal error, retrying unknowns", apiError(500, "InternalException"), true, outbox.Failed},
		{"timeout", hang, false, outbox.Unknown},
		{"timeout, retrying unknowns", hang, true, outbox.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := &fakeBus{answer: tc.answer}
			srv := bus.serve(t)
			r := forwardRow(t)
			store := newMemStore(r)
			d := newForwarder(t, store, srv.URL, tc.retryUnknown, memEvents{evKey: forwarded})
			deliver(t, d, r.Key)
			got := store.row(r.Key)
			if got.State != tc.want {
				t.Fatalf("row %s (%s), want %s", got.State, got.LastError, tc.want)
			}
			if tc.want == outbox.Failed && !got.DueAt.After(t0) {
				t.Errorf("failed row due %s, want a backoff", got.DueAt)
			}
			if bus.count() != 1 {
				t.Errorf("%d puts, want exactly 1 (no SDK retry)", bus.count())
			}
		})
	}
	t.Run("not sent", func(t *testing.T) {
		r := forwardRow(t)
		store := newMemStore(r)
		d := newForwarder(t, store, closedURL(t), false, memEvents{evKey: forwarded})
		deliver(t, d, r.Key)
		if got := store.row(r.Key); got.State != outbox.Failed {
			t.Errorf("connection refused: row %s (%s), want failed", got.State, got.LastError)
		}
	})
	t.Run("event gone", func(t *testing.T) {
		bus := &fakeBus{answer: putOK}
		r := forwardRow(t)
		store := newMemStore(r)
		d := newForwarder(t, store, bus.serve(t).URL, false, memEvents{})
		deliver(t, d, r.Key)
		if got := store.row(r.Key); got.State != outbox.Rejected || bus.count() != 0 {
			t.Errorf("row %s, %d puts; want rejected and nothing put", got.State, bus.count())
		}
	})
}

// TestForwardRetriedUntilDelivered: an entry EventBridge refuses
// (FailedEntryCount) is put again after its backoff until it is accepted,
// and then never again.
func TestForwardRetriedUntilDelivered(t *testing.T) {
	bus := &fakeBus{answer: func(w http.ResponseWriter, n int) {
		if n < 3 {
			entryFailed("InternalFailure")(w, n)
			return
		}
		putOK(w, n)
	}}
	srv := bus.serve(t)
	r := forwardRow(t)
	store := newMemStore(r)
	now := t0
	d, err := outbox.New(outbox.Config{
		Store:   store,
		Targets: map[string]outbox.Target{forward.TargetOf(forward.Route{Source: "stripe", Bus: "inbox"}): {RetryUnknown: true}},
		Bus:     eventBridgeClient(srv.URL), Events: memEvents{evKey: forwarded},
		MaxAttempts: 5, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return now }, Rand: func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 6 {
		st := deliver(t, d, r.Key)
		if st.Settled {
			break
		}
		if pass == 5 {
			t.Fatalf("not settled after %d passes: %+v", pass+1, store.row(r.Key))
		}
		now = st.Due.Add(time.Second)
	}
	if got := store.row(r.Key); got.State != outbox.Delivered || got.Attempts != 3 || bus.count() != 3 {
		t.Errorf("row %s after %d attempts and %d puts, want delivered on the third", got.State, got.Attempts, bus.count())
	}
	deliver(t, d, r.Key)
	if bus.count() != 3 {
		t.Errorf("%d puts after delivery, want 3", bus.count())
	}
}

// TestForwardNeedsClient: a forwarding row with no EventBridge client
// configured fails (and is retried once one is), never delivered to the
// log.
func TestForwardNeedsClient(t *testing.T) {
	r := forwardRow(t)
	store := newMemStore(r)
	d := newDeliverer(t, store, map[string]outbox.Target{forward.TargetOf(forward.Route{Source: "stripe", Bus: "inbox"}): {}}, nil)
	deliver(t, d, r.Key)
	if got := store.row(r.Key); got.State != outbox.Failed || !strings.Contains(got.LastError, "EventBridge") {
		t.Errorf("row %s (%s), want failed for want of a client", got.State, got.LastError)
	}
	if r.Action != effects.ActionEventBridge {
		t.Errorf("action %q", r.Action)
	}
}
