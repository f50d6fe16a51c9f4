package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

var (
	t0    = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	evKey = inbox.Key{Source: "stripe", EventID: "evt_1"}
	owner = "req-1/m1/0"
)

// memStore keeps rows as the table does, with the same fencing (the real
// store's semantics are tested over the wire in inboxstore): a claim takes
// a pending or failed row that is due, or a delivering one whose lease
// ended; a finish needs the lease.
type memStore struct {
	mu      sync.Mutex
	rows    map[string]*outbox.Row
	settled []bool
	due     time.Time
	// claimedFrom is each delivering row as its claim found it: a claim
	// of the lease's own owner again returns it, as the store does.
	claimedFrom map[string]outbox.Row
}

func newMemStore(rows ...outbox.Row) *memStore {
	m := &memStore{rows: map[string]*outbox.Row{}, claimedFrom: map[string]outbox.Row{}}
	for _, r := range rows {
		if r.State == "" {
			r.State = outbox.Pending
		}
		m.rows[r.Key] = &r
	}
	return m
}

func (m *memStore) ClaimRow(_ context.Context, key, owner string, now, until time.Time) (outbox.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	switch {
	case !ok:
		return outbox.Row{}, inbox.ErrNotFound
	case r.State.Final():
		return *r, outbox.ErrFinal
	case r.State == outbox.Delivering && r.LeaseOwner == owner:
		return m.claimedFrom[key], nil
	case r.State == outbox.Delivering && !r.LeaseUntil.Before(now):
		return *r, inbox.ErrClaimed
	case r.State != outbox.Delivering && r.DueAt.After(now):
		return *r, inbox.ErrNotDue
	}
	prev := *r
	r.State, r.LeaseOwner, r.LeaseUntil = outbox.Delivering, owner, until
	r.Attempts++
	m.claimedFrom[key] = prev
	return prev, nil
}

func (m *memStore) FinishRow(_ context.Context, key, owner string, res outbox.Result, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[key]
	switch {
	case r == nil:
		return inbox.ErrLeaseLost
	case r.State != outbox.Delivering || r.LeaseOwner != owner:
		return inbox.ErrLeaseLost
	}
	r.State, r.LastError, r.StatusCode, r.DueAt, r.LeaseOwner = res.State, res.Cause, res.StatusCode, res.RetryAt, ""
	r.DeliveredTo = res.DeliveredTo
	return nil
}

func (m *memStore) SettleOutbox(_ context.Context, _ inbox.Key, _ int, settled bool, due, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settled = append(m.settled, settled)
	m.due = due
	return nil
}

func (m *memStore) row(key string) outbox.Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.rows[key]
}

func row(key, target string) outbox.Row {
	return outbox.Row{Key: key, Target: target, Body: []byte(`{"invoice_id":"in_1"}`), Event: evKey}
}

// receiver is an HTTP receiver answering with answer, recording every
// request it reads.
type receiver struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func (rc *receiver) serve(tb testing.TB, answer func(w http.ResponseWriter, r *http.Request, n int)) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, r)
		rc.bodies = append(rc.bodies, string(b))
		n := len(rc.requests)
		rc.mu.Unlock()
		answer(w, r, n)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

func status(code int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(code) }
}

func newDeliverer(tb testing.TB, store outbox.Store, targets map[string]outbox.Target, logs io.Writer) *outbox.Deliverer {
	tb.Helper()
	if logs == nil {
		logs = io.Discard
	}
	d, err := outbox.New(outbox.Config{
		Store: store, Targets: targets, MaxAttempts: 3,
		RetryBase: 30 * time.Second, RetryCap: time.Hour,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Now:    func() time.Time { return t0 },
		Rand:   func() float64 { return 0.5 },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func deliver(tb testing.TB, d *outbox.Deliverer, keys ...string) outbox.Settlement {
	tb.Helper()
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, keys, owner)
	if err != nil {
		tb.Fatalf("deliver: %v", err)
	}
	return st
}

// closedURL is an http URL nothing listens on.
func closedURL(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/receipts"
}

// TestDeliverClassifies: every answer a receiver can give, and every way a
// call can fail, ends the row in the state the contract names.
func TestDeliverClassifies(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(http.ResponseWriter, *http.Request, int)
		url        string // overrides the receiver's
		retry      bool   // the target dedupes
		want       outbox.State
		wantCode   int
		wantCalls  int
		wantSettle bool
	}{
		{name: "200", answer: status(200), want: outbox.Delivered, wantCode: 200, wantCalls: 1, wantSettle: true},
		{name: "204", answer: status(204), want: outbox.Delivered, wantCode: 204, wantCalls: 1, wantSettle: true},
		{name: "503 is retried", answer: status(503), want: outbox.Failed, wantCode: 503, wantCalls: 1},
		{name: "500 may have acted: unknown", answer: status(500), want: outbox.Unknown, wantCode: 500, wantCalls: 1, wantSettle: true},
		{name: "a gateway's 502: unknown", answer: status(502), want: outbox.Unknown, wantCode: 502, wantCalls: 1, wantSettle: true},
		{name: "a gateway's 504: unknown", answer: status(504), want: outbox.Unknown, wantCode: 504, wantCalls: 1, wantSettle: true},
		{name: "500 from a receiver that dedupes is retried", retry: true, answer: status(500), want: outbox.Failed, wantCode: 500, wantCalls: 1},
		{name: "409 from a receiver that dedupes is retried", retry: true, answer: status(409), want: outbox.Failed, wantCode: 409, wantCalls: 1},
		{name: "429 is retried", answer: status(429), want: outbox.Failed, wantCode: 429, wantCalls: 1},
		{name: "408 is retried", answer: status(408), want: outbox.Failed, wantCode: 408, wantCalls: 1},
		{name: "400 is rejected", answer: status(400), want: outbox.Rejected, wantCode: 400, wantCalls: 1, wantSettle: true},
		{name: "409 is rejected", answer: status(409), want: outbox.Rejected, wantCode: 409, wantCalls: 1, wantSettle: true},
		{name: "a redirect is rejected, not followed", answer: func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, want: outbox.Rejected, wantCode: 307, wantCalls: 1, wantSettle: true},
		{name: "connection refused: nothing was sent", url: "closed", want: outbox.Failed, wantCalls: 0},
		{name: "accepted, then no answer in time: unknown", answer: func(_ http.ResponseWriter, r *http.Request, _ int) {
			<-r.Context().Done()
		}, want: outbox.Unknown, wantCalls: 1, wantSettle: true},
		{name: "accepted, then no answer, for a receiver that dedupes: retried", retry: true, answer: func(_ http.ResponseWriter, r *http.Request, _ int) {
			<-r.Context().Done()
		}, want: outbox.Failed, wantCalls: 1},
		{name: "accepted, then the connection dropped: unknown", answer: hangUp, want: outbox.Unknown, wantCalls: 1, wantSettle: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &receiver{}
			url := ""
			if tt.answer != nil {
				url = rc.serve(t, tt.answer).URL + "/receipts"
			}
			if tt.url == "closed" {
				url = closedURL(t)
			}
			store := newMemStore(row("r1", "receipt"))
			d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: url, RetryUnknown: tt.retry, Timeout: 300 * time.Millisecond}}, nil)
			st := deliver(t, d, "r1")
			got := store.row("r1")
			if got.State != tt.want || got.StatusCode != tt.wantCode {
				t.Errorf("row: got %s (%d, %q), want %s (%d)", got.State, got.StatusCode, got.LastError, tt.want, tt.wantCode)
			}
			if n := rc.count(); n != tt.wantCalls {
				t.Errorf("calls: got %d, want %d", n, tt.wantCalls)
			}
			if st.Settled != tt.wantSettle || fmt.Sprint(store.settled) != fmt.Sprint([]bool{tt.wantSettle}) {
				t.Errorf("settled: got %t (store told %v), want %t", st.Settled, store.settled, tt.wantSettle)
			}
			if tt.want == outbox.Failed {
				// Attempt 1 of the backoff: 30 s, drawn from [15 s, 30 s].
				if want := t0.Add(22500 * time.Millisecond); !got.DueAt.Equal(want) || !st.Due.Equal(want) {
					t.Errorf("due: got row %s settlement %s, want %s", got.DueAt, st.Due, want)
				}
			}
		})
	}
}

// hangUp reads the request and closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ *http.Request, _ int) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestDeliverRequest: the call is a JSON POST of the row's body with its
// key as the Idempotency-Key header.
func TestDeliverRequest(t *testing.T) {
	rc := &receiver{}
	srv := rc.serve(t, status(200))
	store := newMemStore(row("fact#invoice_paid#in_1/receipt", "receipt"))
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL + "/receipts"}}, nil)
	st := deliver(t, d, "fact#invoice_paid#in_1/receipt")
	if !st.Settled || st.Sent != 1 || st.States[outbox.Delivered] != 1 {
		t.Errorf("settlement: got %+v", st)
	}
	r := rc.requests[0]
	for name, want := range map[string]string{
		"Method":          http.MethodPost,
		"Path":            "/receipts",
		"Content-Type":    "application/json",
		"Idempotency-Key": "fact#invoice_paid#in_1/receipt",
		"Body":            `{"invoice_id":"in_1"}`,
	} {
		got := r.Header.Get(name)
		switch name {
		case "Method":
			got = r.Method
		case "Path":
			got = r.URL.Path
		case "Body":
			got = rc.bodies[0]
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	if got := store.row("fact#invoice_paid#in_1/receipt").DeliveredTo; got != "http" {
		t.Errorf("delivered to: got %q, want http", got)
	}
}

// TestNoReplayOnReusedConnection: net/http replays a request carrying
// Idempotency-Key when a reused connection fails after the request was
// written; the deliverer must not let it, for a receiver that does not
// dedupe: the second row reaches the receiver once and ends unknown.
func TestNoReplayOnReusedConnection(t *testing.T) {
	for _, tt := range []struct {
		name      string
		retry     bool
		wantCalls int
		want      outbox.State
	}{
		{"a receiver that does not dedupe", false, 2, outbox.Unknown},
		// With RetryUnknown the transport's own replay is allowed: the
		// receiver sees the second row twice and answers it.
		{"a receiver that dedupes", true, 3, outbox.Delivered},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := &receiver{}
			srv := rc.serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 2 {
					hangUp(w, r, n)
					return
				}
				w.WriteHeader(200)
			})
			store := newMemStore(row("r1", "receipt"), row("r2", "receipt"))
			d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL, RetryUnknown: tt.retry}}, nil)
			// One after the other, so the second reuses the first's
			// connection (an event's rows go at once, on connections of
			// their own).
			deliver(t, d, "r1")
			deliver(t, d, "r2")
			if got := rc.count(); got != tt.wantCalls {
				t.Errorf("requests: got %d, want %d", got, tt.wantCalls)
			}
			if got := store.row("r2").State; got != tt.want {
				t.Errorf("second row: got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDeliverNeverResends: a row that is final is never sent again, and a
// row a stopped worker held is unknown without a call (unless its receiver
// dedupes).
func TestDeliverNeverResends(t *testing.T) {
	rc := &receiver{}
	srv := rc.serve(t, status(200))
	stopped := row("held", "receipt")
	stopped.State, stopped.LeaseOwner, stopped.LeaseUntil, stopped.Attempts = outbox.Delivering, "gone", t0.Add(-time.Second), 1
	deduping := stopped
	deduping.Key, deduping.Target = "held-dedupe", "dedupe"
	store := newMemStore(stopped, deduping,
		outbox.Row{Key: "done", Target: "receipt", State: outbox.Delivered},
		outbox.Row{Key: "unknown", Target: "receipt", State: outbox.Unknown},
		outbox.Row{Key: "rejected", Target: "receipt", State: outbox.Rejected},
		outbox.Row{Key: "dead", Target: "receipt", State: outbox.Dead})
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL}, "dedupe": {URL: srv.URL, RetryUnknown: true}}, nil)
	for range 2 {
		st := deliver(t, d, "held", "held-dedupe", "done", "unknown", "rejected", "dead")
		if !st.Settled {
			t.Errorf("settlement: got %+v, want settled", st)
		}
	}
	if got := store.row("held"); got.State != outbox.Unknown || !strings.Contains(got.LastError, "worker stopped") {
		t.Errorf("held row: got %s %q, want unknown", got.State, got.LastError)
	}
	if got := store.row("held-dedupe").State; got != outbox.Delivered {
		t.Errorf("held row of a deduping receiver: got %s, want delivered", got)
	}
	if got := rc.count(); got != 1 {
		t.Errorf("calls: got %d, want 1 (the deduping receiver's row)", got)
	}
}

// TestDeliverBudget: a row failing on every attempt ends dead, on its last
// attempt, and one found over its budget is dead without a call.
func TestDeliverBudget(t *testing.T) {
	rc := &receiver{}
	srv := rc.serve(t, status(503))
	last := row("last", "receipt")
	last.Attempts = 2 // MaxAttempts is 3
	over := row("over", "receipt")
	over.Attempts = 3
	store := newMemStore(last, over)
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL}}, nil)
	st := deliver(t, d, "last", "over")
	if !st.Settled || st.States[outbox.Dead] != 2 {
		t.Errorf("settlement: got %+v, want settled, 2 dead", st)
	}
	if got := store.row("last"); got.State != outbox.Dead || !strings.Contains(got.LastError, "503") {
		t.Errorf("last attempt: got %s %q, want dead with the last cause", got.State, got.LastError)
	}
	if got := rc.count(); got != 1 {
		t.Errorf("calls: got %d, want 1", got)
	}
}

// TestDeliverWithoutReceiver: a target with no URL delivers to the log,
// and a row naming no configured target is retried (a deployment may add
// it), never lost.
func TestDeliverWithoutReceiver(t *testing.T) {
	logs := &bytes.Buffer{}
	store := newMemStore(row("logged", "receipt"), row("orphan", "nowhere"))
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {}}, logs)
	st := deliver(t, d, "logged", "orphan")
	if got := store.row("logged"); got.State != outbox.Delivered || got.DeliveredTo != "log" {
		t.Errorf("logged row: got %s to %q, want delivered to log", got.State, got.DeliveredTo)
	}
	if got := store.row("orphan"); got.State != outbox.Failed || !strings.Contains(got.LastError, `no target "nowhere"`) {
		t.Errorf("row of no target: got %s %q, want failed", got.State, got.LastError)
	}
	if st.Settled {
		t.Error("settled with a failed row")
	}
	// Rows are named by their place in the event's outbox: their keys, and
	// their bodies, hold business identifiers.
	if !strings.Contains(logs.String(), "outbox row delivered to the log") || strings.Contains(logs.String(), "in_1") ||
		strings.Contains(logs.String(), `"logged"`) || strings.Contains(logs.String(), `"orphan"`) {
		t.Errorf("logs: want the delivery logged without the row's key or body, got %s", logs)
	}
}

// TestDeliverWaits: a row held by another worker or not due yet is left
// alone, and the settlement says when to come back; a call that would not
// finish before the caller's deadline is not started.
func TestDeliverWaits(t *testing.T) {
	rc := &receiver{}
	srv := rc.serve(t, status(200))
	held := row("held", "receipt")
	held.State, held.LeaseOwner, held.LeaseUntil = outbox.Delivering, "other", t0.Add(time.Minute)
	later := row("later", "receipt")
	later.State, later.DueAt = outbox.Failed, t0.Add(30*time.Second)
	store := newMemStore(held, later, row("fresh", "receipt"))
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL, Timeout: 5 * time.Second}}, nil)

	work, cancel := context.WithDeadline(context.Background(), time.Now().Add(2*time.Second))
	defer cancel()
	st, err := d.Deliver(work, context.Background(), evKey, 0, []string{"fresh"}, owner)
	if err != nil || st.Settled || store.row("fresh").State != outbox.Pending || rc.count() != 0 {
		t.Errorf("no time for a call: got %+v, %v, row %s, %d calls; want the row left pending", st, err, store.row("fresh").State, rc.count())
	}

	st = deliver(t, d, "held", "later", "fresh")
	if st.Settled || !st.Due.Equal(t0.Add(30*time.Second)) || store.due != st.Due {
		t.Errorf("settlement: got %+v (store due %s), want unsettled, due at t0+30s", st, store.due)
	}
	if store.row("held").LeaseOwner != "other" || store.row("fresh").State != outbox.Delivered {
		t.Errorf("rows: held by %q, fresh %s", store.row("held").LeaseOwner, store.row("fresh").State)
	}
}

// TestDeliverStoreErrors: a claim the store cannot answer leaves the row
// for later and says so; a missing row is reported and not waited for.
func TestDeliverStoreErrors(t *testing.T) {
	store := &failingStore{memStore: newMemStore(row("r1", "receipt")), claimErr: inbox.ErrUnavailable}
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {}}, nil)
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, []string{"r1", "missing"}, owner)
	if !errors.Is(err, inbox.ErrUnavailable) || st.Settled {
		t.Errorf("got %+v, %v; want unsettled with the store's error", st, err)
	}
	store.claimErr = nil
	st, err = d.Deliver(context.Background(), context.Background(), evKey, 0, []string{"r1", "missing"}, owner)
	if err != nil || !st.Settled {
		t.Errorf("got %+v, %v; want settled (the missing row cannot be waited for)", st, err)
	}
}

type failingStore struct {
	*memStore
	claimErr, settleErr error
}

func (f *failingStore) SettleOutbox(ctx context.Context, k inbox.Key, gen int, settled bool, due, now time.Time) error {
	if f.settleErr != nil {
		return f.settleErr
	}
	return f.memStore.SettleOutbox(ctx, k, gen, settled, due, now)
}

// TestDeliverSettleFails: an event not told its outbox settled is not
// settled: the caller comes back, and the next pass tells it.
func TestDeliverSettleFails(t *testing.T) {
	store := &failingStore{memStore: newMemStore(row("r1", "receipt")), settleErr: inbox.ErrUnavailable}
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {}}, nil)
	st, err := d.Deliver(context.Background(), context.Background(), evKey, 0, []string{"r1"}, owner)
	if !errors.Is(err, inbox.ErrUnavailable) || st.Settled || st.Due.IsZero() {
		t.Errorf("got %+v, %v; want unsettled, due, with the store's error", st, err)
	}
	store.settleErr = nil
	if st := deliver(t, d, "r1"); !st.Settled || fmt.Sprint(store.settled) != "[true]" {
		t.Errorf("next pass: got %+v, store told %v; want settled", st, store.settled)
	}
}

// TestDeliverKeepsURLsOut: a receiver's URL may carry a token; a failed
// call's cause, logged and kept on the row, does not show it.
func TestDeliverKeepsURLsOut(t *testing.T) {
	logs := &bytes.Buffer{}
	store := newMemStore(row("r1", "receipt"))
	d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: closedURL(t) + "/T0KEN"}}, logs)
	deliver(t, d, "r1")
	if got := store.row("r1"); got.State != outbox.Failed || strings.Contains(got.LastError, "T0KEN") || strings.Contains(logs.String(), "T0KEN") {
		t.Errorf("got %s %q, logs %s; want failed, the URL in neither", got.State, got.LastError, logs)
	}
}

func (f *failingStore) ClaimRow(ctx context.Context, key, owner string, now, until time.Time) (outbox.Row, error) {
	if f.claimErr != nil {
		return outbox.Row{}, f.claimErr
	}
	return f.memStore.ClaimRow(ctx, key, owner, now, until)
}

func TestNewRejects(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for name, cfg := range map[string]outbox.Config{
		"no store":          {Logger: logger},
		"no logger":         {Store: newMemStore()},
		"relative URL":      {Store: newMemStore(), Logger: logger, Targets: map[string]outbox.Target{"t": {URL: "/receipts"}}},
		"not http":          {Store: newMemStore(), Logger: logger, Targets: map[string]outbox.Target{"t": {URL: "ftp://example.com/x"}}},
		"negative timeout":  {Store: newMemStore(), Logger: logger, Targets: map[string]outbox.Target{"t": {URL: "http://127.0.0.1/", Timeout: -1}}},
		"attempts":          {Store: newMemStore(), Logger: logger, MaxAttempts: -1},
		"negative cap":      {Store: newMemStore(), Logger: logger, RetryCap: -time.Second},
		"negative backoffs": {Store: newMemStore(), Logger: logger, RetryBase: -time.Second},
	} {
		if _, err := outbox.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := outbox.New(outbox.Config{Store: newMemStore(), Logger: logger, Targets: map[string]outbox.Target{"t": {URL: "https://example.com/x"}, "log": {}}}); err != nil {
		t.Errorf("valid config: %v", err)
	}
	// A cap below the base, which template.yaml accepts (refused, the
	// processor would fail at its start).
	if _, err := outbox.New(outbox.Config{Store: newMemStore(), Logger: logger, RetryBase: time.Minute, RetryCap: time.Second}); err != nil {
		t.Errorf("cap below base: %v", err)
	}
}

// brokenConn fails every write while broken is set, writing nothing.
type brokenConn struct {
	net.Conn
	broken *atomic.Bool
}

func (c *brokenConn) Write(p []byte) (int, error) {
	if c.broken.Load() {
		return 0, errors.New("connection reset by peer")
	}
	return c.Conn.Write(p)
}

// TestNothingWrittenIsNotUnknown: a call whose connection took not a byte
// of it cannot have reached the receiver: failed and retried, not left
// unknown — though net/http's trace reports the request written once it
// is buffered.
func TestNothingWrittenIsNotUnknown(t *testing.T) {
	rc := &receiver{}
	srv := rc.serve(t, status(200))
	var broken atomic.Bool
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &brokenConn{Conn: c, broken: &broken}, nil
		},
	}}
	store := newMemStore(row("r1", "receipt"), row("r2", "receipt"))
	d, err := outbox.New(outbox.Config{
		Store: store, Targets: map[string]outbox.Target{"receipt": {URL: srv.URL}}, Client: client,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 }, Rand: func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, d, "r1") // the connection is now pooled
	broken.Store(true)
	deliver(t, d, "r2")
	if got := store.row("r2"); got.State != outbox.Failed {
		t.Errorf("second row: got %s (%q), want failed", got.State, got.LastError)
	}
	if got := rc.count(); got != 1 {
		t.Errorf("requests: got %d, want 1", got)
	}
}

// flaky is a memStore whose first ClaimRow lands but answers an error (its
// answer lost), or whose first FinishRow fails.
type flaky struct {
	*memStore
	loseClaim, failFinish bool
}

func (f *flaky) ClaimRow(ctx context.Context, key, owner string, now, until time.Time) (outbox.Row, error) {
	prev, err := f.memStore.ClaimRow(ctx, key, owner, now, until)
	if f.loseClaim && err == nil {
		f.loseClaim = false
		return outbox.Row{}, fmt.Errorf("claim row: %w: connection reset", inbox.ErrUnavailable)
	}
	return prev, err
}

func (f *flaky) FinishRow(ctx context.Context, key, owner string, res outbox.Result, now time.Time) error {
	if f.failFinish {
		f.failFinish = false
		return fmt.Errorf("finish row: %w: throttled", inbox.ErrUnavailable)
	}
	return f.memStore.FinishRow(ctx, key, owner, res, now)
}

// TestNotSentIsRecorded: where nothing was sent, the row says so. A
// claim whose answer was lost is claimed again as the same owner, which
// returns the row as the claim found it: a pending row is sent then, once;
// a row a stopped worker left delivering is unknown, never sent again. A
// result that sent nothing whose record failed once is recorded on a
// second try, not left for its next claim to take for a delivery cut
// short.
func TestNotSentIsRecorded(t *testing.T) {
	var rc receiver
	srv := rc.serve(t, status(http.StatusOK))
	t.Run("the claim's answer lost, the row pending", func(t *testing.T) {
		store := &flaky{memStore: newMemStore(row("r1", "receipt")), loseClaim: true}
		d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL}}, nil)
		deliver(t, d, "r1")
		if got := store.row("r1"); got.State != outbox.Delivered || rc.count() != 1 {
			t.Errorf("row: %s after %d requests, want delivered once", got.State, rc.count())
		}
	})
	t.Run("the claim's answer lost, the row left delivering", func(t *testing.T) {
		stopped := row("r3", "receipt")
		stopped.State, stopped.LeaseOwner, stopped.LeaseUntil = outbox.Delivering, "stopped-worker", t0.Add(-time.Second)
		store := &flaky{memStore: newMemStore(stopped), loseClaim: true}
		before := rc.count()
		d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL}}, nil)
		deliver(t, d, "r3")
		if got := store.row("r3"); got.State != outbox.Unknown || rc.count() != before {
			t.Errorf("row: %s after %d more requests, want unknown and none (its delivery may have happened)", got.State, rc.count()-before)
		}
	})
	t.Run("a not-sent record failing once", func(t *testing.T) {
		store := &flaky{memStore: newMemStore(row("r2", "nowhere")), failFinish: true}
		d := newDeliverer(t, store, map[string]outbox.Target{"receipt": {URL: srv.URL}}, nil)
		deliver(t, d, "r2")
		if got := store.row("r2"); got.State != outbox.Failed {
			t.Errorf("row: %s, want failed (no target: nothing sent), recorded on the second try", got.State)
		}
	})
}
