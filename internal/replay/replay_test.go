package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func drainAll(tb testing.TB, q *queue.Queue) []string {
	tb.Helper()
	var bodies []string
	for {
		msgs, err := q.Receive(context.Background(), 10, 30, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if len(msgs) == 0 {
			sort.Strings(bodies)
			return bodies
		}
		for _, m := range msgs {
			bodies = append(bodies, m.Body)
			if err := q.Delete(context.Background(), m.ReceiptHandle); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// stack is the table and queues of template.yaml, provisioned in a fresh
// DynamoDB emulator (dynoxide) and a fresh local AWS (kumo), with the
// handles the tests use.
type stack struct {
	store     *inboxstore.Store
	dlq, main *queue.Queue
	db        *dynamodb.Client
	table     string
}

func mustStack(tb testing.TB) stack {
	tb.Helper()
	cfg := awstest.Start(tb).Config()
	dbCfg := awstest.StartDynamoDB(tb).SafeConfig()
	root, err := awstest.ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	tpl, err := template.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	db, client := dynamodb.NewFromConfig(dbCfg), sqs.NewFromConfig(cfg)
	res, err := template.Provision(context.Background(), db, client, tpl, template.ProvisionOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return stack{
		store: inboxstore.New(db, res.TableName, 24*time.Hour),
		dlq:   queue.New(client, res.DLQURL),
		main:  queue.New(client, res.QueueURL),
		db:    db,
		table: res.TableName,
	}
}

func (st stack) replayer(now time.Time) *replay.Replayer {
	return &replay.Replayer{
		DLQ: st.dlq, Main: st.main, Store: st.store, SweepAfter: 5 * time.Minute,
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)),
		Now:    func() time.Time { return now },
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// mustEvent stores an event and brings it to status: received, failed,
// processed or dead (by message "m-<id>").
func mustEvent(tb testing.TB, s *inboxstore.Store, id string, status inbox.Status, at time.Time) inbox.Key {
	tb.Helper()
	return mustEventOf(tb, s, inbox.Key{Source: "stripe", EventID: id}, "invoice.paid", status, at)
}

// mustEventOf is mustEvent for any key and event type.
func mustEventOf(tb testing.TB, s *inboxstore.Store, k inbox.Key, typ string, status inbox.Status, at time.Time) inbox.Key {
	tb.Helper()
	ctx := context.Background()
	id := k.EventID
	ev := inbox.Event{Key: k, Kind: "stripe", Type: typ, Payload: []byte(`{}`), Status: inbox.StatusReceived, ReceivedAt: at, UpdatedAt: at}
	if _, err := s.Insert(ctx, ev, at); err != nil {
		// The SDK retries a put whose answer was lost (moto under a loaded
		// machine): the retry finds the event it stored, which is this one.
		got, gerr := s.Get(ctx, k, at)
		if !errors.Is(err, inbox.ErrDuplicate) || gerr != nil || got.Status != inbox.StatusReceived || got.Type != typ {
			tb.Fatal(err)
		}
	}
	if status == inbox.StatusReceived {
		return k
	}
	claimed, err := s.Claim(ctx, k, "w", at, at.Add(time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	switch status {
	case inbox.StatusProcessed:
		err = s.Complete(ctx, claimed, "w", effects.Plan{}, inbox.OutcomeIgnored, at)
	case inbox.StatusFailed:
		_, err = s.Fail(ctx, k, inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "boom", RetryAt: at.Add(time.Minute)}, at)
	case inbox.StatusDead:
		_, err = s.Fail(ctx, k, inbox.Failure{Owner: "w", Status: inbox.StatusDead, Cause: "boom", MessageID: "m-" + id}, at)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func bodyOf(tb testing.TB, k inbox.Key) string {
	tb.Helper()
	b, err := inbox.EncodeMessage(k)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestDrainDLQ: dead events are revived and their messages moved; a
// processed event's message is deleted; orphans and poison stay in the DLQ
// for an operator, never cycled.
func TestDrainDLQ(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	const n = 13
	var dead []string
	for i := range n {
		k := mustEvent(t, st.store, fmt.Sprintf("evt_%02d", i), inbox.StatusDead, t0)
		dead = append(dead, bodyOf(t, k))
		if err := st.dlq.Enqueue(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	done := mustEvent(t, st.store, "evt_done", inbox.StatusProcessed, t0)
	for _, body := range []string{"not one of ours", bodyOf(t, done), bodyOf(t, inbox.Key{Source: "stripe", EventID: "evt_gone"})} {
		if err := st.dlq.Send(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	r := st.replayer(t0.Add(time.Hour))

	// The default is a dry run: it reports and moves nothing.
	sum, err := r.Handle(ctx, replay.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.DryRun || sum.Examined != n+3 || sum.Moved != 0 || sum.Counts[replay.OutcomePoison] != 1 || sum.Counts[replay.OutcomeOrphan] != 1 ||
		sum.Counts[replay.OutcomeProcessed] != 1 || sum.Counts[replay.OutcomeRevived] != n || len(sum.Events) != n+2 || len(sum.Poison) != 1 || sum.Error != "" {
		t.Fatalf("dry run: got %+v", sum)
	}
	if got := drainAll(t, st.main); len(got) != 0 {
		t.Fatalf("dry run moved %d messages", len(got))
	}
	if ev, _ := st.store.Get(ctx, inbox.Key{Source: "stripe", EventID: "evt_00"}, t0); ev.Status != inbox.StatusDead {
		t.Fatalf("dry run revived an event: %s", ev.Status)
	}

	// A limited run moves only that many.
	no := false
	sum, err = r.Handle(ctx, replay.Request{DryRun: &no, Max: 4})
	if err != nil || sum.Examined != 4 || sum.Stopped != replay.StoppedMax || sum.Next == nil || total(sum.Counts) != 4 {
		t.Fatalf("limited: got %+v, %v", sum, err)
	}
	sum2, err := r.Handle(ctx, replay.Request{DryRun: &no})
	if err != nil || sum.Moved+sum2.Moved != n {
		t.Fatalf("rest: got %+v, %v; want %d moved in all", sum2, err, n)
	}
	moved := drainAll(t, st.main)
	sort.Strings(dead)
	if fmt.Sprint(moved) != fmt.Sprint(dead) {
		t.Errorf("main queue: got %q, want the dead events' bodies %q", moved, dead)
	}
	for i := range n {
		ev, err := st.store.Get(ctx, inbox.Key{Source: "stripe", EventID: fmt.Sprintf("evt_%02d", i)}, t0)
		if err != nil || ev.Status != inbox.StatusFailed || ev.Attempts != 1 || ev.LastError != "boom" {
			t.Errorf("evt_%02d after drain: got %+v, %v; want failed with attempts and error kept", i, ev, err)
		}
	}
	left := drainAll(t, st.dlq)
	if want := fmt.Sprint([]string{"not one of ours", bodyOf(t, inbox.Key{Source: "stripe", EventID: "evt_gone"})}); fmt.Sprint(left) != want {
		t.Errorf("DLQ left: got %q, want %s", left, want)
	}
}

// TestSweep: an event stored but never queued is re-enqueued once it is
// overdue by the threshold, once per threshold; young, leased and finished
// events are left alone.
func TestSweep(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	now := t0.Add(time.Hour)
	stranded := mustEvent(t, st.store, "evt_stranded", inbox.StatusReceived, t0)
	failed := mustEvent(t, st.store, "evt_failed", inbox.StatusFailed, t0.Add(time.Minute))
	mustEvent(t, st.store, "evt_young", inbox.StatusReceived, now.Add(-time.Minute))
	mustEvent(t, st.store, "evt_done", inbox.StatusProcessed, t0)
	mustEvent(t, st.store, "evt_dead", inbox.StatusDead, t0)
	leased := mustEvent(t, st.store, "evt_leased", inbox.StatusReceived, t0.Add(10*time.Second))
	if _, err := st.store.Claim(ctx, leased, "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	r := st.replayer(now)
	sum, err := r.Handle(ctx, replay.Request{Action: replay.ActionSweep})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.DryRun || sum.Examined != 2 || sum.Moved != 0 || sum.OldestUnfinished != stranded.String() || sum.OldestUnfinishedAgeSeconds != 3600 {
		t.Fatalf("dry run: got %+v", sum)
	}
	no := false
	sum, err = r.Handle(ctx, replay.Request{Action: replay.ActionSweep, DryRun: &no})
	if err != nil || sum.Moved != 2 || sum.Error != "" {
		t.Fatalf("sweep: got %+v, %v", sum, err)
	}
	got := drainAll(t, st.main)
	want := []string{bodyOf(t, failed), bodyOf(t, stranded)}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("enqueued: got %q, want %q", got, want)
	}
	// Swept events are not due again at once.
	sum, _ = r.Handle(ctx, replay.Request{Action: replay.ActionSweep, DryRun: &no})
	if sum.Moved != 0 {
		t.Errorf("second sweep at once: moved %d, want 0", sum.Moved)
	}
	// Their copies were received and lost (drained): a threshold later
	// they are sent again, with the young event, now 7 minutes old. So
	// are the first inboxstore.QuickCopies copies since a claim.
	sweepAt := func(d time.Duration) []string {
		t.Helper()
		sum, err := st.replayer(now.Add(d)).Handle(ctx, replay.Request{Action: replay.ActionSweep, DryRun: &no})
		if err != nil || sum.Error != "" {
			t.Fatalf("sweep at +%s: %+v, %v", d, sum, err)
		}
		drainAll(t, st.main)
		sort.Strings(sum.Events)
		return sum.Events
	}
	keys := func(ks ...string) string { sort.Strings(ks); return fmt.Sprint(ks) }
	if got, want := fmt.Sprint(sweepAt(6*time.Minute)), keys(failed.String(), stranded.String(), "stripe##evt_young"); got != want {
		t.Errorf("a threshold later: moved %s, want %s", got, want)
	}
	// A shorter threshold on request: the leased event, whose lease ended
	// 5 minutes ago, is overdue by more than 1 s.
	sum, _ = st.replayer(now.Add(6*time.Minute)).Handle(ctx, replay.Request{Action: replay.ActionSweep, OlderThanSeconds: 1})
	if fmt.Sprint(sum.Events) != "["+leased.String()+"]" {
		t.Errorf("threshold 1 s: examined %v, want only %s", sum.Events, leased)
	}
	if got, want := fmt.Sprint(sweepAt(12*time.Minute)), keys(failed.String(), stranded.String(), "stripe##evt_young", leased.String()); got != want {
		t.Errorf("two thresholds later: moved %s, want %s", got, want)
	}
	// The fourth copy of the failed and stranded events is sent, and an
	// event unfinished after that many is most likely waiting in a deep
	// queue: its next copy waits as long as it is old (an hour at most).
	if got, want := fmt.Sprint(sweepAt(18*time.Minute)), keys(failed.String(), stranded.String(), "stripe##evt_young", leased.String()); got != want {
		t.Errorf("three thresholds later: moved %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(sweepAt(24*time.Minute)), keys("stripe##evt_young", leased.String()); got != want {
		t.Errorf("four thresholds later: moved %s, want %s (the others' copies spaced out)", got, want)
	}
	if got := sweepAt(84 * time.Minute); !slices.Contains(got, failed.String()) || !slices.Contains(got, stranded.String()) {
		t.Errorf("an hour later: moved %v, want the failed and stranded events again", got)
	}
}

// TestSweepEndsAnEventItCannotQueue: an event stored before a rule its key
// breaks (here a NUL in its id) can never be queued; the sweep makes it
// dead with the reason instead of leaving it unfinished forever.
func TestSweepEndsAnEventItCannotQueue(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	bad := inbox.Key{Source: "stripe", EventID: "evt_\x00old"}
	ev := inbox.Event{Key: bad, Kind: "stripe", Type: "invoice.paid", Payload: []byte(`{}`), Status: inbox.StatusReceived, ReceivedAt: t0, UpdatedAt: t0}
	if _, err := st.store.Insert(ctx, ev, t0); err != nil {
		t.Fatal(err)
	}
	good := mustEvent(t, st.store, "evt_good", inbox.StatusReceived, t0)
	no := false
	sum, err := st.replayer(t0.Add(time.Hour)).Handle(ctx, replay.Request{Action: replay.ActionSweep, DryRun: &no})
	if err != nil || sum.Error != "" || sum.Counts[replay.OutcomeDead] != 1 || sum.Moved != 1 {
		t.Fatalf("sweep: got %+v, %v; want one dead, one moved", sum, err)
	}
	got, err := st.store.Get(ctx, bad, t0.Add(time.Hour))
	if err != nil || got.Status != inbox.StatusDead || !strings.Contains(got.LastError, "cannot be queued") {
		t.Errorf("bad key: got %+v, %v; want dead with the reason", got, err)
	}
	if msgs := drainAll(t, st.main); fmt.Sprint(msgs) != "["+bodyOf(t, good)+"]" {
		t.Errorf("main queue: got %q", msgs)
	}
}

func TestBadRequests(t *testing.T) {
	r := &replay.Replayer{Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	for _, req := range []replay.Request{{Action: "purge"}, {Max: -1}, {Max: replay.MaxMax + 1}, {OlderThanSeconds: 5}, {Action: replay.ActionSweep, OlderThanSeconds: -1}, {Action: replay.ActionSweep, OlderThanSeconds: 2e9}} {
		if _, err := r.Handle(context.Background(), req); !errors.Is(err, replay.ErrBadRequest) {
			t.Errorf("%+v: got %v, want ErrBadRequest", req, err)
		}
	}
	for _, payload := range []string{`{"dry_rnu":false}`, `[]`, `{"limit":"x"}`} {
		if _, err := replay.DecodeRequest([]byte(payload)); !errors.Is(err, replay.ErrBadRequest) {
			t.Errorf("%s: got %v, want ErrBadRequest", payload, err)
		}
	}
	for _, payload := range []string{``, `{}`, `{"action":"drain-dlq","dry_run":true,"max":5}`, `{"action":"sweep","dry_run":false,"older_than_seconds":300}`} {
		if _, err := replay.DecodeRequest([]byte(payload)); err != nil {
			t.Errorf("%s: got %v, want nil", payload, err)
		}
	}
}

// TestStopsBeforeDeadline: a drain that runs out of time stops with a
// summary instead of being cut off by the function timeout.
func TestStopsBeforeDeadline(t *testing.T) {
	r := &replay.Replayer{Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Second))
	defer cancel()
	no := false
	sum, err := r.Handle(ctx, replay.Request{DryRun: &no})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Examined != 0 || sum.Stopped != replay.StoppedTime || sum.Next == nil || sum.Error != "" {
		t.Errorf("got %+v, want nothing examined, stopped for time, and the request that continues", sum)
	}
	// A preview stopped part-way would show the same messages again: no
	// Next, a note.
	sum, _ = r.Handle(ctx, replay.Request{})
	if sum.Stopped != replay.StoppedTime || sum.Next != nil || sum.Note == "" {
		t.Errorf("preview: got %+v, want stopped for time with a note and no next", sum)
	}
}

// TestInvokeRefusesBadRequests: the function's handler answers a request
// that does not validate as refused, naming the problem, with nothing done
// and no invocation error (which would count as a Lambda error and page
// the errors alarm).
func TestInvokeRefusesBadRequests(t *testing.T) {
	r := &replay.Replayer{Logger: slog.New(slog.DiscardHandler)}
	for payload, want := range map[string]string{
		`{"dry_rnu": false}`:                             "dry_rnu",
		`{"action": "explode"}`:                          "explode",
		`{"action":"replay","event_keys":["no-hashes"]}`: "no-hashes",
		`not json`: "bad request",
	} {
		s, err := r.Invoke(context.Background(), json.RawMessage(payload))
		if err != nil {
			t.Errorf("%s: invocation error %v, want a refused answer", payload, err)
			continue
		}
		if !strings.Contains(s.Refused, want) || s.Moved != 0 || s.Examined != 0 {
			t.Errorf("%s: got %+v, want refused naming %q, nothing done", payload, s, want)
		}
	}
}

// bodyNotKept is the store with every reschedule landing and the body's
// extension after it failing, as in an outage between the two writes.
type bodyNotKept struct{ *inboxstore.Store }

func (b bodyNotKept) Reschedule(ctx context.Context, k inbox.Key, was, quick, spaced time.Time) (bool, error) {
	ok, err := b.Store.Reschedule(ctx, k, was, quick, spaced)
	if ok && err == nil {
		err = fmt.Errorf("reschedule %s: extend the body: %w", k, inbox.ErrUnavailable)
	}
	return ok, err
}

// TestSweepSendsWhatItRescheduled: a reschedule that lands, with the
// body's extension after it failing, still sends the event's copy (its
// claim extends the body) before the run stops with the error; the event
// is not left a whole reschedule with no copy on its way.
func TestSweepSendsWhatItRescheduled(t *testing.T) {
	st := mustStack(t)
	ctx := context.Background()
	stranded := mustEvent(t, st.store, "evt_stranded", inbox.StatusReceived, t0)
	r := st.replayer(t0.Add(time.Hour))
	r.Store = bodyNotKept{st.store}
	no := false
	sum, err := r.Handle(ctx, replay.Request{Action: replay.ActionSweep, DryRun: &no})
	if err == nil && sum.Error == "" {
		t.Errorf("sweep: got %+v, want the extension's error reported", sum)
	}
	if msgs := drainAll(t, st.main); fmt.Sprint(msgs) != "["+bodyOf(t, stranded)+"]" {
		t.Errorf("main queue: got %q, want the rescheduled event's copy", msgs)
	}
}
