package processor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// claimBound is the longest a failed event waits for its next claim,
// from the failure, with no backlog in the queue:
//
//	min(RetryCapSeconds, 11 h 40 min) + SweepAfterSeconds + the sweep's period (+1 s)
//
// The failure sets its claim's "not before" (retry_ms) to the end of its
// backoff, at most the cap (SQS hides a message at most 11 h 40 min from
// here; a copy back sooner is refused, and delayed until then plus a
// second). Its message comes back then; if it does not (lost, or the
// last receive, acknowledged), its due_ms is that same time, so the first
// sweep at least SweepAfterSeconds later sends a copy, claimed at once:
// the sweep's reschedule moves only due_ms, never retry_ms.
// MaxReceiveCount does not enter it. Before issue 28 it did: the claim
// waited for due_ms, which the sweep moves on, and an event could wait
// for ever.
//
// Each of the sweep's first inboxstore.QuickCopies copies after a claim
// that is lost before it is received adds at most SweepAfterSeconds and a
// period: the event is due again at once after each (lost copies).
func claimBound(retryCap, sweepAfter, period time.Duration, lost int) time.Duration {
	return min(retryCap, processor.MaxRetryCap-20*time.Minute) + time.Duration(1+lost)*(sweepAfter+period) + time.Second
}

// boundVisibility records the delays the processor sets, by receipt
// handle.
type boundVisibility struct {
	mu     sync.Mutex
	delays map[string]time.Duration
}

func (v *boundVisibility) Delay(_ context.Context, handle string, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.delays[handle] = d
	return nil
}

// simMessage is a message in the simulated main queue.
type simMessage struct {
	id, body  string
	visibleAt time.Time
	receives  int
}

// TestFailedEventClaimBound: for every combination of the template's
// retry and sweep settings at the ends of their ranges and at their
// defaults (RetryBaseSeconds 1, 30, 43200; RetryCapSeconds 1, 3600,
// 43200; MaxReceiveCount 2, 10, 1000; SweepAfterSeconds 1, 300, 86400),
// with the sweep every 5 minutes (the longest the template allows), an
// event whose handler fails three times and then succeeds is claimed
// again within claimBound of each failure, and ends processed or dead.
// Each combination runs three times: with its messages behaving as SQS
// does (back after the delay the processor sets, to the DLQ after
// MaxReceiveCount receives); with every message lost after its receive,
// the sweep the only way back; and that, with the sweep's first
// QuickCopies copies after each failure lost before any receive (with
// MaxReceiveCount 2 only: the budget does not enter it). The real store on the emulator,
// the real processor and the real sweep, on a simulated clock; the
// backoff at its longest.
func TestFailedEventClaimBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against the DynamoDB emulator")
	}
	const period = 5 * time.Minute
	b := newBusiness(t)
	n := 0
	for _, base := range []int{1, 30, 43200} {
		for _, retryCap := range []int{1, 3600, 43200} {
			for _, receives := range []int{2, 10, 1000} {
				for _, after := range []int{1, 300, 86400} {
					for _, mode := range []string{"kept", "lost", "dropped"} {
						if mode == "dropped" && receives != 2 {
							continue // the receive budget does not enter it: one is enough
						}
						n++
						name := fmt.Sprintf("base %d cap %d receives %d sweep after %d messages %s", base, retryCap, receives, after, mode)
						simulateFailures(t, b, name, fmt.Sprintf("evt_bound_%d", n),
							time.Duration(base)*time.Second, time.Duration(retryCap)*time.Second, receives, time.Duration(after)*time.Second, period, mode)
					}
				}
			}
		}
	}
}

func simulateFailures(t *testing.T, b *business, name, id string, base, retryCap time.Duration, maxReceives int, after, period time.Duration, mode string) {
	t.Helper()
	k := b.insert(t, "stripe", id, "invoice.paid", time.Unix(1764500000, 0), invoiceEvent(id, "invoice.paid", "in_"+id, periodEnd))
	var claims []time.Time
	routes := processor.Routes{"stripe": {"invoice.paid": func(context.Context, inbox.Event) (effects.Plan, error) {
		claims = append(claims, b.clock.now())
		if len(claims) <= 3 {
			return effects.Plan{}, errors.New("upstream down")
		}
		return effects.Plan{}, nil
	}}}
	vis := &boundVisibility{delays: map[string]time.Duration{}}
	log := slog.New(slog.DiscardHandler)
	d, err := outbox.New(outbox.Config{Store: b.s, Logger: log, Now: b.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	p, err := processor.New(processor.Config{
		Store: b.s, Outbox: d, DeadLetters: b.dlq, Visibility: vis, Routes: routes,
		MaxReceiveCount: maxReceives, RetryBase: base, RetryCap: retryCap, Rand: func() float64 { return 1 },
		Logger: log, Now: b.clock.now,
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sent := &recordingQueue{}
	r := b.replayer(sent)
	r.SweepAfter = after
	body, _ := inbox.EncodeMessage(k)
	start := b.clock.now()
	queue := []*simMessage{{id: id + "-0", body: body, visibleAt: start}}
	lost := mode != "kept"
	dropped := 0
	bound := claimBound(retryCap, after, period, 0)
	if mode == "dropped" {
		bound = claimBound(retryCap, after, period, inboxstore.QuickCopies)
	}
	no := false
	for step := 0; ; step++ {
		ev := b.event(t, k)
		if ev.Status == inbox.StatusProcessed || ev.Status == inbox.StatusDead {
			if len(claims) < 2 {
				t.Errorf("%s: %s after %d claims: the scenario never failed twice", name, ev.Status, len(claims))
			}
			return
		}
		if step == 100 {
			t.Fatalf("%s: still %s after 100 steps, %d claims", name, ev.Status, len(claims))
		}
		now := b.clock.now()
		// The next sweep that can find the event: sweeps run on the
		// period's ticks, and one finds an event whose due_ms is more
		// than SweepAfter before it (the ticks before find nothing of
		// it, so they are skipped).
		tick := start.Add(max(ev.DueAt.Add(after).Sub(start)/period+1, 1) * period)
		for !tick.After(now) {
			tick = tick.Add(period)
		}
		slices.SortFunc(queue, func(x, y *simMessage) int { return x.visibleAt.Compare(y.visibleAt) })
		next := tick
		if len(queue) > 0 && !queue[0].visibleAt.After(tick) {
			next = queue[0].visibleAt
		}
		if len(claims) > 0 && ev.Status == inbox.StatusFailed && next.Sub(claims[len(claims)-1]) > bound {
			t.Fatalf("%s: failed at %s, nothing can claim it before %s: %s, over the bound %s (retry at %s, due at %s)",
				name, claims[len(claims)-1].Sub(start), next.Sub(start), next.Sub(claims[len(claims)-1]), bound, ev.RetryAt.Sub(start), ev.DueAt.Sub(start))
		}
		b.clock.advance(max(next.Sub(now), 0))
		if next.Equal(tick) && (len(queue) == 0 || queue[0].visibleAt.After(tick)) {
			b.run(t, r, replay.Request{Action: replay.ActionSweep, DryRun: &no})
			for i, body := range sent.sent {
				if dropped > 0 {
					dropped-- // lost before any receive
					continue
				}
				queue = append(queue, &simMessage{id: fmt.Sprintf("%s-s%d-%d", id, step, i), body: body, visibleAt: b.clock.now()})
			}
			sent.sent = nil
			continue
		}
		m := queue[0]
		queue = queue[1:]
		m.receives++
		if m.receives > maxReceives {
			continue // the queue's redrive: to the DLQ, never handed over
		}
		before := len(claims)
		resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: m.id, ReceiptHandle: m.id, Body: m.body,
			Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(m.receives)},
		}}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(claims) > before && mode == "dropped" {
			dropped = inboxstore.QuickCopies
		}
		if len(claims) > before && before > 0 {
			if gap := claims[len(claims)-1].Sub(claims[before-1]); gap > bound {
				t.Fatalf("%s: claimed %s after its failure, over the bound %s", name, gap, bound)
			}
		}
		retry := len(resp.BatchItemFailures) > 0
		if lost || !retry {
			continue // deleted, or lost
		}
		wait := 180 * time.Second // the template's visibility timeout
		if d, ok := vis.delays[m.id]; ok {
			wait = d
			delete(vis.delays, m.id)
		}
		m.visibleAt = b.clock.now().Add(wait)
		queue = append(queue, m)
	}
}
