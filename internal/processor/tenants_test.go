package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// Tenants apart, over the wire: the parts of an event are stored in its
// source's and account's scope by the store, whatever its handler names.

// insertFor stores an event of the stripe source under account, in
// scope if one is given (a source sharing another's key space), as
// ingest would.
func (b *business) insertFor(tb testing.TB, account, scope, id, typ string, payload []byte) inbox.Key {
	tb.Helper()
	k := inbox.Key{Source: "stripe", Account: account, EventID: id}
	now := b.clock.now()
	_, err := b.s.Insert(context.Background(), inbox.Event{
		Key: k, Kind: "stripe", Type: typ, Created: time.Unix(1764500000, 0), Payload: payload, Scope: scope,
		Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}, now)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// outcomes counts the events' outcomes.
func (b *business) outcomes(tb testing.TB, keys ...inbox.Key) map[inbox.Outcome]int {
	tb.Helper()
	out := map[inbox.Outcome]int{}
	for _, k := range keys {
		out[b.event(tb, k).Outcome]++
	}
	return out
}

// tenantInvoice is an invoice.paid naming invoice in_shared and customer
// cus_shared, whichever tenant sends it.
func tenantInvoice(eventID, typ string, periodEnd int64) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":1764500000,"livemode":false,"data":{"object":{"id":"in_shared","object":"invoice","amount_paid":1500,"currency":"eur","customer":"cus_shared","period_end":1764500000,"lines":{"object":"list","data":[{"object":"line_item","period":{"start":1764500000,"end":%d}}]}}}}`,
		eventID, typ, periodEnd)
}

// tenantParts are the IDs of what an invoice.paid for in_shared writes in
// scope: its fact, the customer's membership and ledger, and the key of
// its receipt row.
func tenantParts(scope string) (fact, member, ledger, receipt string) {
	f := effects.Fact{Kind: handlers.InvoicePaidKind, Key: "in_shared"}.ID()
	return effects.ScopedID(scope, f),
		effects.ScopedID(scope, effects.Update{Entity: handlers.MembershipEntity, Key: "cus_shared"}.ID()),
		effects.ScopedID(scope, effects.Update{Entity: handlers.LedgerEntity, Key: "cus_shared"}.ID()),
		effects.ScopedKey(scope, effects.KeyOf(f, handlers.ReceiptTarget))
}

// TestTenantCannotWriteAnothersParts: tenant A signs an invoice.paid with
// its own secret naming tenant B's invoice and customer. It is applied —
// in A's scope: B's fact, membership, ledger and receipt are untouched,
// and B's own event for that invoice, arriving later, is applied, not a
// duplicate_effect. A second event of B's for the invoice still dedupes.
func TestTenantCannotWriteAnothersParts(t *testing.T) {
	b := newBusiness(t)
	p := b.processor(t, nil, nil)
	a := b.insertFor(t, "acct_a", "", "evt_a", "invoice.paid", tenantInvoice("evt_a", "invoice.paid", periodEnd+100))
	if got := b.handle(t, p, sqsMessage(t, "ma", a)); len(got) != 0 {
		t.Fatalf("A: retries %v", got)
	}
	scopeA, scopeB := inbox.ScopeOf("stripe", a), inbox.ScopeOf("stripe", inbox.Key{Account: "acct_b"})
	factA, memberA, _, receiptA := tenantParts(scopeA)
	factB, memberB, ledgerB, receiptB := tenantParts(scopeB)
	if got := b.event(t, a); got.Outcome != inbox.OutcomeApplied || got.PartScope() != scopeA {
		t.Fatalf("A's event: got %s in scope %q, want applied in %q", got.Outcome, got.PartScope(), scopeA)
	}
	for _, id := range []string{factB, memberB, ledgerB, "outbox#" + receiptB} {
		if _, err := b.s.Part(context.Background(), id); err == nil {
			t.Errorf("A's event wrote B's %s", id)
		}
	}
	if got := b.part(t, factA)["event_key"]; got != a.String() {
		t.Errorf("A's fact: recorded by %v, want %s", got, a)
	}
	if got := b.part(t, memberA)["paid_through"]; got != int64(periodEnd+100) {
		t.Errorf("A's membership: paid_through %v, want %d", got, periodEnd+100)
	}

	// B's own events: the first is applied, its second dedupes.
	paid := b.insertFor(t, "acct_b", "", "evt_b", "invoice.paid", tenantInvoice("evt_b", "invoice.paid", periodEnd))
	succeeded := b.insertFor(t, "acct_b", "", "evt_b2", "invoice.payment_succeeded", tenantInvoice("evt_b2", "invoice.payment_succeeded", periodEnd))
	if got := b.handle(t, p, sqsMessage(t, "mb", paid), sqsMessage(t, "mb2", succeeded)); len(got) != 0 {
		t.Fatalf("B: retries %v", got)
	}
	if got := b.outcomes(t, paid, succeeded); got[inbox.OutcomeApplied] != 1 || got[inbox.OutcomeDuplicateEffect] != 1 {
		t.Errorf("B's two events for one invoice: got %v, want one applied, one duplicate_effect", got)
	}
	if got := b.part(t, memberB)["paid_through"]; got != int64(periodEnd) {
		t.Errorf("B's membership: paid_through %v, want %d (B's own invoice, not A's)", got, periodEnd)
	}
	if got := b.part(t, ledgerB)["invoices_paid"]; got != int64(1) {
		t.Errorf("B's ledger: %v invoices, want 1", got)
	}
	if got := b.part(t, memberA)["paid_through"]; got != int64(periodEnd+100) {
		t.Errorf("A's membership moved by B: paid_through %v", got)
	}
	if requests, accepted := b.rc.counts(); requests != 2 || accepted[receiptA] != 1 || accepted[receiptB] != 1 {
		t.Errorf("receipts: got %d requests, %v; want one under each tenant's key", requests, accepted)
	}
}

// TestSharedScopeIsOneKeySpace: two sources that opt into one scope (a
// live source and its second endpoint, say) dedupe one fact between them,
// account by account.
func TestSharedScopeIsOneKeySpace(t *testing.T) {
	b := newBusiness(t)
	p := b.processor(t, nil, nil)
	shared := inbox.ScopeOf("billing", inbox.Key{Account: "acct_1"})
	first := b.insertFor(t, "acct_1", shared, "evt_s1", "invoice.paid", tenantInvoice("evt_s1", "invoice.paid", periodEnd))
	second := b.insertFor(t, "acct_1", shared, "evt_s2", "invoice.paid", tenantInvoice("evt_s2", "invoice.paid", periodEnd))
	if got := b.handle(t, p, sqsMessage(t, "m1", first), sqsMessage(t, "m2", second)); len(got) != 0 {
		t.Fatalf("retries %v", got)
	}
	if got := b.outcomes(t, first, second); got[inbox.OutcomeApplied] != 1 || got[inbox.OutcomeDuplicateEffect] != 1 {
		t.Errorf("got %v, want one applied, one duplicate_effect", got)
	}
	fact, _, _, _ := tenantParts(shared)
	if _, err := b.s.Part(context.Background(), fact); err != nil {
		t.Errorf("the shared scope's fact: %v", err)
	}
}

// TestUnscopedEventKeepsItsKeys: an event stored before parts had scopes
// (its item has no scope) is processed, and re-run by force, under the
// unscoped IDs its parts were first written under: the re-run meets its
// fact and duplicates nothing.
func TestUnscopedEventKeepsItsKeys(t *testing.T) {
	b := newBusiness(t)
	k := b.insert(t, "stripe", "evt_old", "invoice.paid", time.Unix(1764500000, 0), invoiceEvent("evt_old", "invoice.paid", "in_old", periodEnd))
	// As an earlier release stored it: no scope attribute.
	b.removeScope(t, k)
	if got := b.handle(t, b.processor(t, nil, nil), sqsMessage(t, "m1", k)); len(got) != 0 {
		t.Fatalf("retries %v", got)
	}
	ev := b.event(t, k)
	legacy := effects.Fact{Kind: handlers.InvoicePaidKind, Key: "in_old"}.ID()
	if !ev.Unscoped || ev.Outcome != inbox.OutcomeApplied {
		t.Fatalf("event: unscoped %t, outcome %s; want unscoped, applied", ev.Unscoped, ev.Outcome)
	}
	if _, err := b.s.Part(context.Background(), legacy); err != nil {
		t.Errorf("its fact under the unscoped %s: %v", legacy, err)
	}
	if _, err := b.s.Part(context.Background(), effects.ScopedID(stripeScope, legacy)); err == nil {
		t.Errorf("its fact written in a scope as well")
	}

	b.clock.advance(10 * time.Minute)
	sent := &recordingQueue{}
	no := false
	if sum := b.run(t, b.replayer(sent), replay.Request{Action: replay.ActionReplay, DryRun: &no, Force: true, EventKeys: []string{k.String()}}); sum.Moved != 1 {
		t.Fatalf("force: got %+v", sum)
	}
	b.deliver(t, sent)
	if got := b.event(t, k).Outcome; got != inbox.OutcomeDuplicateEffect {
		t.Errorf("re-run: got %s, want duplicate_effect", got)
	}
	if requests, _ := b.rc.counts(); requests != 1 {
		t.Errorf("receipts: %d requests, want 1", requests)
	}
}

// removeScope makes an event's item look as an earlier release wrote it.
func (b *business) removeScope(tb testing.TB, k inbox.Key) {
	tb.Helper()
	ev, err := b.s.Get(context.Background(), k, b.clock.now())
	if err != nil {
		tb.Fatal(err)
	}
	ev.Unscoped, ev.Scope = true, ""
	if err := b.s.PutWhole(context.Background(), ev); err != nil {
		tb.Fatal(err)
	}
}
