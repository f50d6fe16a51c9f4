package processor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/obs/emftest"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// The operator's actions (internal/replay) against the shipped examples:
// whatever an operator replays, the processor's claim and commit decide,
// so no effect is written twice.

func (b *business) replayer(main *recordingQueue) *replay.Replayer {
	return &replay.Replayer{Store: b.s, Main: main, SweepAfter: 5 * time.Minute, Logger: slog.New(slog.DiscardHandler), Now: b.clock.now}
}

func (b *business) run(tb testing.TB, r *replay.Replayer, req replay.Request) replay.Summary {
	tb.Helper()
	sum, err := r.Handle(context.Background(), req)
	if err != nil || sum.Error != "" {
		tb.Fatalf("%+v: got %+v, %v", req, sum, err)
	}
	return sum
}

// deliver hands the processor the messages an action sent.
func (b *business) deliver(tb testing.TB, sent *recordingQueue) {
	tb.Helper()
	for i, body := range sent.sent {
		m := events.SQSMessage{MessageId: fmt.Sprintf("replayed-%d", i), Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		if got := b.handle(tb, b.processor(tb, nil, nil), m); len(got) != 0 {
			tb.Fatalf("replayed message: retries %v", got)
		}
	}
	sent.sent = nil
}

// TestForcedRerunDuplicatesNothing: a processed invoice re-run with force
// is claimed and committed again, and its fact decides: no second fact,
// no second receipt, the membership and ledger as they were.
func TestForcedRerunDuplicatesNothing(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_rerun", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_rerun", "invoice.paid", "in_rerun", periodEnd))
	if got := b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m1", k)); len(got) != 0 {
		t.Fatalf("first delivery: retries %v", got)
	}
	fact := effects.ScopedID(stripeScope, effects.Fact{Kind: handlers.InvoicePaidKind, Key: "in_rerun"}.ID())
	factBefore, memberBefore, ledgerBefore := b.part(t, fact), membership(b, t), ledger(b, t)

	b.clock.advance(10 * time.Minute)
	sent := &recordingQueue{}
	r := b.replayer(sent)
	no := false
	req := replay.Request{Action: replay.ActionReplay, DryRun: &no, EventKeys: []string{k.String()}}
	if sum := b.run(t, r, req); sum.Moved != 0 || sum.Counts[replay.OutcomeProcessed] != 1 {
		t.Fatalf("without force: got %+v; want the processed event left alone", sum)
	}
	req.Force = true
	if sum := b.run(t, r, req); sum.Moved != 1 || sum.Counts[replay.OutcomeRerun] != 1 {
		t.Fatalf("force: got %+v", sum)
	}
	b.deliver(t, sent)

	ev := b.event(t, k)
	if ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeDuplicateEffect || ev.PreviousOutcome != inbox.OutcomeApplied || ev.Reruns != 1 {
		t.Errorf("after the re-run: status %s, outcome %s, previous %s, reruns %d; want processed, duplicate_effect, applied, 1",
			ev.Status, ev.Outcome, ev.PreviousOutcome, ev.Reruns)
	}
	if requests, accepted := b.rc.counts(); requests != 1 || accepted[receiptKey("in_rerun")] != 1 {
		t.Errorf("receiver: %d requests, %v; want the one receipt of the first run", requests, accepted)
	}
	for name, c := range map[string][2]map[string]any{
		"fact": {factBefore, b.part(t, fact)}, "membership": {memberBefore, membership(b, t)}, "ledger": {ledgerBefore, ledger(b, t)},
	} {
		if fmt.Sprint(c[0]) != fmt.Sprint(c[1]) {
			t.Errorf("%s changed by the re-run:\nbefore %v\nafter  %v", name, c[0], c[1])
		}
	}
	// Re-run again: still single.
	if sum := b.run(t, r, req); sum.Counts[replay.OutcomeRerun] != 1 {
		t.Fatalf("second force: got %+v", sum)
	}
	b.deliver(t, sent)
	if requests, _ := b.rc.counts(); requests != 1 {
		t.Errorf("receiver after a second re-run: %d requests, want 1", requests)
	}
	if ev := b.event(t, k); ev.Reruns != 2 || ev.Outcome != inbox.OutcomeDuplicateEffect {
		t.Errorf("after the second re-run: %+v", ev)
	}
}

// TestInspectShowsWhatAnEventWrote: inspect lists the event's state, the
// fact and entities its commit wrote as stored, and its outbox row with
// its state; the payload only when asked for.
func TestInspectShowsWhatAnEventWrote(t *testing.T) {
	b := newBusiness(t)
	payload := invoiceEvent("evt_inspect", "invoice.paid", "in_inspect", periodEnd)
	k := b.insert(t, "stripe", "evt_inspect", "invoice.paid", time.Unix(1764500000, 0), payload)
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m1", k))

	r := b.replayer(&recordingQueue{})
	sum := b.run(t, r, replay.Request{Action: replay.ActionInspect, EventKey: k.String()})
	v := sum.Event
	if v == nil || v.Status != "processed" || v.Outcome != "applied" || v.Attempts != 1 || v.Type != "invoice.paid" || v.ProcessedAt == "" || v.Outbox != "settled" {
		t.Fatalf("inspect: got %+v", v)
	}
	if v.Payload != nil || v.PayloadText != "" {
		t.Error("payload shown without include_payload")
	}
	var parts []string
	for _, p := range v.Parts {
		if p.Error != "" || len(p.Attributes) == 0 {
			t.Errorf("part %s: %+v", p.ID, p)
		}
		parts = append(parts, p.ID)
	}
	slices.Sort(parts)
	want := []string{
		effects.ScopedID(stripeScope, effects.Update{Entity: handlers.LedgerEntity, Key: "cus_1"}.ID()),
		effects.ScopedID(stripeScope, effects.Update{Entity: handlers.MembershipEntity, Key: "cus_1"}.ID()),
		effects.ScopedID(stripeScope, effects.Fact{Kind: handlers.InvoicePaidKind, Key: "in_inspect"}.ID()),
	}
	slices.Sort(want)
	if !slices.Equal(parts, want) {
		t.Errorf("parts: got %v, want %v", parts, want)
	}
	if len(v.OutboxRows) != 1 || v.OutboxRows[0].Key != receiptKey("in_inspect") || v.OutboxRows[0].State != string(outbox.Delivered) ||
		v.OutboxRows[0].Target != handlers.ReceiptTarget || v.OutboxRows[0].Event != k.String() || v.OutboxRows[0].DeliveredAt == "" {
		t.Errorf("outbox rows: got %+v", v.OutboxRows)
	}
	sum = b.run(t, r, replay.Request{Action: replay.ActionInspect, EventKey: k.String(), IncludePayload: true})
	var got, sent any
	if err := json.Unmarshal(sum.Event.Payload, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(payload, &sent); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(sent) {
		t.Errorf("payload: got %s", sum.Event.Payload)
	}
	if _, err := r.Handle(context.Background(), replay.Request{Action: replay.ActionInspect, EventKey: "stripe##evt_never"}); err != nil {
		t.Fatal(err)
	} else if sum, _ := r.Handle(context.Background(), replay.Request{Action: replay.ActionInspect, EventKey: "stripe##evt_never"}); sum.Error == "" || sum.Event != nil {
		t.Errorf("inspect of a missing event: got %+v, want an error saying so", sum)
	}
}

// TestOutboxReview: a rejected receipt is listed for review and resent
// deliberately, delivered once; an unknown one is resolved with a note,
// never sent again, and leaves the review list.
func TestOutboxReview(t *testing.T) {
	b := newBusiness(t)
	b.rc.set("reject")
	rejected := b.insert(t, "stripe", "evt_rej", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_rej", "invoice.paid", "in_rej", periodEnd))
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m1", rejected))
	b.rc.set("hang")
	unknown := b.insert(t, "stripe", "evt_unk", "invoice.paid", time.Unix(1764500001, 0), invoiceEvent("evt_unk", "invoice.paid", "in_unk", periodEnd+1))
	b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m2", unknown))
	b.rc.set("ok")
	b.clock.advance(10 * time.Minute)

	sent := &recordingQueue{}
	r := b.replayer(sent)
	list := b.run(t, r, replay.Request{Action: replay.ActionOutbox})
	states := map[string]string{}
	for _, row := range list.Rows {
		states[row.Key] = row.State
	}
	if want := map[string]string{receiptKey("in_rej"): "rejected", receiptKey("in_unk"): "unknown"}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("for review: got %v, want %v", states, want)
	}

	// Preview, then resend the rejected receipt.
	if sum := b.run(t, r, replay.Request{Action: replay.ActionOutboxResend, OutboxKey: receiptKey("in_rej")}); !sum.DryRun || len(sent.sent) != 0 || sum.Counts[replay.OutcomeResent] != 1 {
		t.Fatalf("resend preview: got %+v, sent %v", sum, sent.sent)
	}
	if row, _ := b.s.Row(context.Background(), receiptKey("in_rej")); row.State != outbox.Rejected {
		t.Fatalf("preview changed the row: %s", row.State)
	}
	no := false
	sum := b.run(t, r, replay.Request{Action: replay.ActionOutboxResend, DryRun: &no, OutboxKey: receiptKey("in_rej")})
	if sum.Moved != 1 || len(sent.sent) != 1 {
		t.Fatalf("resend: got %+v", sum)
	}
	b.deliver(t, sent)
	if _, accepted := b.rc.counts(); accepted[receiptKey("in_rej")] != 1 {
		t.Errorf("receipts accepted: %v, want the resent one once", accepted)
	}
	if row, _ := b.s.Row(context.Background(), receiptKey("in_rej")); row.State != outbox.Delivered || row.Resent != 1 {
		t.Errorf("resent row: got %+v, want delivered", row)
	}
	if ev := b.event(t, rejected); ev.Status != inbox.StatusProcessed || ev.OutboxPending {
		t.Errorf("event after resend: %s, outbox pending %t", ev.Status, ev.OutboxPending)
	}

	// Resolve the unknown receipt: its receiver confirmed it by hand.
	sum = b.run(t, r, replay.Request{Action: replay.ActionOutboxResolve, DryRun: &no, OutboxKey: receiptKey("in_unk"), Note: "receiver confirmed"})
	if sum.Counts[replay.OutcomeResolved] != 1 || len(sum.Rows) != 1 || sum.Rows[0].State != string(outbox.Resolved) || sum.Rows[0].ResolvedFrom != "unknown" || sum.Rows[0].Resolution != "receiver confirmed" || len(sent.sent) != 0 {
		t.Fatalf("resolve: got %+v", sum)
	}
	// Neither is for review now; a second resolve or resend is refused.
	if list := b.run(t, r, replay.Request{Action: replay.ActionOutbox}); len(list.Rows) != 0 {
		t.Errorf("for review after: %+v", list.Rows)
	}
	for _, a := range []string{replay.ActionOutboxResolve, replay.ActionOutboxResend} {
		if sum, _ := r.Handle(context.Background(), replay.Request{Action: a, DryRun: &no, OutboxKey: receiptKey("in_unk")}); sum.Error == "" || sum.Counts[replay.OutcomeNotForReview] != 1 {
			t.Errorf("%s of a resolved row: got %+v, want refused", a, sum)
		}
	}
	requests, _ := b.rc.counts()
	if requests != 3 {
		t.Errorf("receiver: %d requests, want 3 (rejected, unanswered, resent)", requests)
	}
}

// TestMetricsInLogLines: with a namespace, every record line, outbox row
// line and sweep line is valid EMF with its documented dimensions, and the
// counts add up to what happened.
func TestMetricsInLogLines(t *testing.T) {
	b := newBusiness(t)
	b.metrics = obs.Metrics{Namespace: "WebhookInbox", Now: b.clock.now}
	paid := b.insert(t, "stripe", "evt_m1", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_m1", "invoice.paid", "in_m1", periodEnd))
	p := b.processor(t, nil, nil)
	b.handle(t, p, sqsMessage(t, "m1", paid))
	b.handle(t, p, sqsMessage(t, "m1-again", paid))
	b.rc.set("reject")
	rej := b.insert(t, "stripe", "evt_m2", "invoice.paid", time.Unix(1764500001, 0), invoiceEvent("evt_m2", "invoice.paid", "in_m2", periodEnd+1))
	b.handle(t, p, sqsMessage(t, "m2", rej))
	b.handle(t, p, events.SQSMessage{MessageId: "poison", Body: "not ours", Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	r := b.replayer(&recordingQueue{})
	r.Logger, r.Metrics = slog.New(slog.NewJSONHandler(&lockedBuffer{b: b.logs, mu: &b.mu}, nil)), b.metrics
	no := false
	b.run(t, r, replay.Request{Action: replay.ActionSweep, DryRun: &no})

	b.mu.Lock()
	logs := slices.Clone(b.logs.Bytes())
	b.mu.Unlock()
	lines, err := emftest.Lines(logs)
	if err != nil {
		t.Fatal(err)
	}
	records, rows := map[string]float64{}, map[string]float64{}
	var sweeps int
	for _, l := range lines {
		if l.Namespace != "WebhookInbox" {
			t.Errorf("namespace %q", l.Namespace)
		}
		switch l.Msg {
		case "record":
			if !l.HasSets([]string{"Source", "Outcome"}, []string{"Outcome"}, []string{}) {
				t.Errorf("record dimensions: %v", l.Dimensions)
			}
			records[l.Values["Source"]+"/"+l.Values["Outcome"]] += l.Metrics["Records"]
		case "outbox row":
			if !l.HasSets([]string{"Target", "State"}, []string{"State"}) {
				t.Errorf("outbox dimensions: %v", l.Dimensions)
			}
			rows[l.Values["State"]] += l.Metrics["OutboxRows"]
			if _, ok := l.Metrics["DeliveryLatency"]; ok != (l.Values["State"] == "delivered") || l.Units["DeliveryLatency"] != map[bool]string{true: "Milliseconds"}[ok] {
				t.Errorf("delivery latency on a %s row: %v", l.Values["State"], l.Metrics)
			}
		case "replay":
			sweeps++
			if !l.HasSets([]string{"Action"}) || l.Values["Action"] != "sweep" || l.Units["OldestUnfinishedAge"] != "Seconds" {
				t.Errorf("sweep line: %+v", l)
			}
			if _, ok := l.Metrics["OutboxForReview"]; !ok || l.Metrics["OutboxForReview"] != 1 {
				t.Errorf("sweep: outbox for review %v, want 1 (the rejected receipt)", l.Metrics)
			}
		default:
			t.Errorf("metrics on an undocumented line %q", l.Msg)
		}
	}
	want := map[string]float64{"stripe/applied": 2, "stripe/already_processed": 1, "unknown/poison": 1}
	if fmt.Sprint(records) != fmt.Sprint(want) {
		t.Errorf("records: got %v, want %v", records, want)
	}
	if fmt.Sprint(rows) != fmt.Sprint(map[string]float64{"delivered": 1, "rejected": 1}) {
		t.Errorf("outbox rows: got %v", rows)
	}
	if sweeps != 1 {
		t.Errorf("%d sweep lines", sweeps)
	}
}

// TestSweptFailedEventIsClaimed: a failed event whose message was lost is
// swept; the sweep moves its own clock (an hour on, for an old event) and
// sends a message, which claims the event at once — its backoff ended long
// ago — and it is processed. (The sweep's clock was once the claim's "not
// before" too: the swept message was turned away until it ran out of
// receives, and the event was stranded.)
func TestSweptFailedEventIsClaimed(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_swept", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_swept", "invoice.paid", "in_swept", periodEnd))
	failing := processor.Routes{"stripe": {"invoice.paid": func(context.Context, inbox.Event) (effects.Plan, error) {
		return effects.Plan{}, errors.New("upstream down")
	}}}
	if got := b.handle(t, b.processor(t, nil, failing), sqsMessage(t, "m1", k)); len(got) != 1 {
		t.Fatalf("first try: retries %v, want the message back", got)
	}
	if ev := b.event(t, k); ev.Status != inbox.StatusFailed || ev.RetryAt.IsZero() {
		t.Fatalf("after the failure: %s, retry at %v", ev.Status, ev.RetryAt)
	}
	// Its message is lost; two hours on, the sweep finds it, and its
	// first copies are lost too: the copy after the quick ones moves the
	// sweep's clock on, by the event's age.
	b.clock.advance(2 * time.Hour)
	sent := &recordingQueue{}
	no := false
	for i := 0; i <= inboxstore.QuickCopies; i++ {
		sent.sent = nil
		if sum := b.run(t, b.replayer(sent), replay.Request{Action: replay.ActionSweep, DryRun: &no}); sum.Moved != 1 {
			t.Fatalf("sweep %d: %+v, want it moved", i, sum)
		}
		if i < inboxstore.QuickCopies {
			b.clock.advance(6 * time.Minute)
		}
	}
	if ev := b.event(t, k); !ev.DueAt.After(b.clock.now().Add(30 * time.Minute)) {
		t.Fatalf("the sweep's clock: due %v, want it moved on", ev.DueAt)
	}
	b.deliver(t, sent)
	if ev := b.event(t, k); ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied {
		t.Errorf("after the swept message: %s/%s, want processed/applied", ev.Status, ev.Outcome)
	}
}
