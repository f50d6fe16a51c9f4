package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Names of the parts the Stripe handlers declare.
const (
	// InvoicePaidKind is the fact kind of a paid invoice, keyed by the
	// invoice id.
	InvoicePaidKind = "invoice_paid"
	// MembershipEntity is a customer's membership, keyed by the customer
	// id: paid_through and last_invoice.
	MembershipEntity = "membership"
	// LedgerEntity is a customer's count of paid invoices, keyed by the
	// customer id: invoices_paid, added to once per invoice.
	LedgerEntity = "ledger"
	// SubscriptionEntity is a Stripe subscription, keyed by its id:
	// status, customer and current_period_end.
	SubscriptionEntity = "subscription"
	// ReceiptTarget is the outbound target a paid invoice's receipt is
	// sent to.
	ReceiptTarget = "receipt"
	// SubscriptionStatusAttr is the subscription attribute the status
	// machine moves.
	SubscriptionStatusAttr = "status"
)

// StripeInvoicePaid handles invoice.paid and invoice.payment_succeeded. It
// declares, for the invoice in data.object:
//
//   - the fact InvoicePaidKind, keyed by the invoice id, with invoice_id,
//     customer (when there is one), amount_paid, currency, livemode and
//     period_end (the end of the period paid for, when known: the latest
//     line period end, else the invoice's period_end — see below);
//   - when the invoice has a customer and a period end, an update of the
//     customer's MembershipEntity setting paid_through (epoch seconds)
//     and last_invoice, ordered by the period end (ties by invoice id) so
//     that paid_through only moves forward, and applied only with the
//     fact, so once per invoice;
//   - when the invoice has a customer, an update of the customer's
//     LedgerEntity adding 1 to invoices_paid, applied only with the
//     fact: whatever the order invoices arrive in, the count is that of
//     the customer's invoices paid, each once;
//   - a receipt to ReceiptTarget, belonging to the fact and keyed by it,
//     so one row, with one idempotency key, per invoice whichever events
//     carry it.
//
// Both event types, and every retry or re-send of either, declare the same
// parts, so only the first to commit has an effect.
func StripeInvoicePaid(_ context.Context, ev inbox.Event) (effects.Plan, error) {
	const what = "stripe invoice"
	var body struct {
		Livemode bool `json:"livemode"`
		Data     struct {
			Object struct {
				Object     string    `json:"object"`
				ID         string    `json:"id"`
				Customer   stripeRef `json:"customer"`
				AmountPaid *int64    `json:"amount_paid"`
				Currency   string    `json:"currency"`
				PeriodEnd  int64     `json:"period_end"`
				Lines      struct {
					Data []struct {
						Period struct {
							End int64 `json:"end"`
						} `json:"period"`
					} `json:"data"`
				} `json:"lines"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := decode(what, ev.Payload, &body); err != nil {
		return effects.Plan{}, err
	}
	inv := body.Data.Object
	if inv.Object != "invoice" || inv.ID == "" || inv.AmountPaid == nil {
		return effects.Plan{}, permanentf("%s: data.object is not an invoice with an id and amount_paid", what)
	}
	if inv.Currency == "" {
		return effects.Plan{}, permanentf("%s: invoice %s has no currency", what, quote(inv.ID))
	}

	// The largest line period end is the date the invoice pays up to.
	// The invoice's own period_end is not: for a subscription invoice it
	// is the end of the period during which its items accrued — the
	// previous billing period, when the invoice pays the next one in
	// advance — so it lags a period behind. It serves only when there
	// are no lines with periods. Lines past the first page (has_more) are
	// not in the event: the largest is that of the lines present.
	periodEnd := inv.PeriodEnd
	var lineEnd int64
	for _, l := range inv.Lines.Data {
		lineEnd = max(lineEnd, l.Period.End)
	}
	if lineEnd > 0 {
		periodEnd = lineEnd
	}

	fact := effects.Fact{
		Kind: InvoicePaidKind,
		Key:  inv.ID,
		Attributes: map[string]any{
			"invoice_id":  inv.ID,
			"amount_paid": *inv.AmountPaid,
			"currency":    inv.Currency,
			"livemode":    body.Livemode,
		},
	}
	customer := string(inv.Customer)
	if customer != "" {
		fact.Attributes["customer"] = customer
	}
	if periodEnd > 0 {
		fact.Attributes["period_end"] = periodEnd
	}
	plan := effects.Plan{Facts: []effects.Fact{fact}}

	// Without a customer there is no membership to extend, and without a
	// period end nothing to extend it to (Stripe always sends period_end;
	// its absence leaves the membership alone rather than guessing).
	if customer != "" && periodEnd > 0 {
		plan.Updates = append(plan.Updates, effects.Update{
			Entity: MembershipEntity,
			Key:    customer,
			Set:    map[string]any{"paid_through": periodEnd, "last_invoice": inv.ID},
			Order:  &effects.Order{Seq: periodEnd, Tie: inv.ID},
			After:  fact.ID(),
		})
	}

	if customer != "" {
		plan.Updates = append(plan.Updates, effects.Update{
			Entity: LedgerEntity,
			Key:    customer,
			Add:    map[string]any{"invoices_paid": 1},
			After:  fact.ID(),
		})
	}

	receipt, err := json.Marshal(struct {
		InvoiceID  string `json:"invoice_id"`
		Customer   string `json:"customer,omitempty"`
		AmountPaid int64  `json:"amount_paid"`
		Currency   string `json:"currency"`
	}{inv.ID, customer, *inv.AmountPaid, inv.Currency})
	if err != nil {
		return effects.Plan{}, permanentf("%s: receipt: %w", what, err)
	}
	plan.Outbound = append(plan.Outbound, effects.Outbound{
		Target: ReceiptTarget,
		Key:    effects.KeyOf(fact.ID(), ReceiptTarget),
		Body:   receipt,
		Of:     fact.ID(),
	})
	return validated(what, plan)
}

// subscriptionStatuses is the machine of Stripe subscription statuses
// (https://docs.stripe.com/billing/subscriptions/overview): each status's
// allowed successors.
//
// The transition guard compares an event's status with the stored one,
// which may be several real transitions behind: an event in between may
// be late, lost, filtered out by the endpoint's event selection, or
// refused as stale by the order. So the machine holds only the rules
// true whatever was missed:
//
//   - canceled and incomplete_expired are final: nothing revives them;
//   - incomplete is only ever a subscription's first status (until its
//     first invoice is paid), so no status leads back to it, and any may
//     follow it;
//   - incomplete_expired follows only incomplete (the first invoice
//     went unpaid for 23 hours);
//   - trialing, active, past_due, unpaid and paused move freely among
//     themselves and to canceled (a trial ends, a payment fails or
//     succeeds, a paused trial is resumed, a trial is added again): the
//     order by event time decides among them.
var subscriptionStatuses = effects.Machine{
	"incomplete":         {"incomplete_expired", "trialing", "active", "past_due", "unpaid", "paused", "canceled"},
	"incomplete_expired": nil,
	"trialing":           {"active", "past_due", "unpaid", "paused", "canceled"},
	"active":             {"trialing", "past_due", "unpaid", "paused", "canceled"},
	"past_due":           {"trialing", "active", "unpaid", "paused", "canceled"},
	"unpaid":             {"trialing", "active", "past_due", "paused", "canceled"},
	"paused":             {"trialing", "active", "past_due", "unpaid", "canceled"},
	"canceled":           nil,
}

// StripeSubscription handles customer.subscription.created, .updated and
// .deleted. It declares one update of the SubscriptionEntity keyed by the
// subscription id in data.object: SubscriptionStatusAttr moves to the
// object's status along subscriptionStatuses (for deleted, Stripe's
// status is canceled), and customer and current_period_end (when present)
// are set. The update is ordered by the event's creation time (ties by
// event id), so an older event never undoes a newer one; and the
// transition guard refuses what the order alone might let through — a
// late updated, or one whose order ties, never revives a canceled
// subscription.
//
// A status the machine does not know (one Stripe added) is a permanent
// error: the event waits, dead, for a machine that knows it and a replay,
// rather than being dropped or applied without a guard. So is an event
// with no creation time, which has no order.
func StripeSubscription(_ context.Context, ev inbox.Event) (effects.Plan, error) {
	const what = "stripe subscription"
	var body struct {
		Data struct {
			Object struct {
				Object           string    `json:"object"`
				ID               string    `json:"id"`
				Customer         stripeRef `json:"customer"`
				Status           string    `json:"status"`
				CurrentPeriodEnd int64     `json:"current_period_end"`
				Items            struct {
					Data []struct {
						CurrentPeriodEnd int64 `json:"current_period_end"`
					} `json:"data"`
				} `json:"items"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := decode(what, ev.Payload, &body); err != nil {
		return effects.Plan{}, err
	}
	sub := body.Data.Object
	if sub.Object != "subscription" || sub.ID == "" {
		return effects.Plan{}, permanentf("%s: data.object is not a subscription with an id", what)
	}
	if _, known := subscriptionStatuses[sub.Status]; !known {
		return effects.Plan{}, permanentf("%s: %s has status %s, not one of the known Stripe statuses", what, quote(sub.ID), quote(sub.Status))
	}
	if ev.Created.IsZero() {
		return effects.Plan{}, permanentf("%s: event %s has no creation time to order it by", what, quote(ev.Key.EventID))
	}

	set := map[string]any{}
	if sub.Customer != "" {
		set["customer"] = string(sub.Customer)
	}
	// API versions from 2025-03-31 moved current_period_end from the
	// subscription onto its items; take the subscription's, else the
	// latest of its items'.
	periodEnd := sub.CurrentPeriodEnd
	if periodEnd <= 0 {
		for _, it := range sub.Items.Data {
			periodEnd = max(periodEnd, it.CurrentPeriodEnd)
		}
	}
	if periodEnd > 0 {
		set["current_period_end"] = periodEnd
	}
	return validated(what, effects.Plan{Updates: []effects.Update{{
		Entity:     SubscriptionEntity,
		Key:        sub.ID,
		Set:        set,
		Transition: subscriptionStatuses.Into(SubscriptionStatusAttr, sub.Status),
		Order:      effects.ByCreated(ev),
	}}})
}

// stripeRef is a reference to another Stripe object: its id, or, when the
// request that caused the event expanded it, the object itself, whose id
// it keeps. Null or absent is no reference ("").
type stripeRef string

func (r *stripeRef) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*r = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var id string
		if err := json.Unmarshal(b, &id); err != nil {
			return err
		}
		*r = stripeRef(id)
		return nil
	case len(b) > 0 && b[0] == '{':
		var obj struct {
			ID *string `json:"id"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		if obj.ID == nil {
			return errors.New("a reference (customer) is an expanded object without an id")
		}
		*r = stripeRef(*obj.ID)
		return nil
	}
	return errors.New("a reference (customer) is neither an id nor an expanded object")
}
