// Package examples holds the business handlers shipped with webhook-inbox,
// as models for your own: each reads the verified payload and declares its
// effects; none touches storage or the network.
package examples

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// Routes returns the shipped handlers by source kind and event type.
func Routes() processor.Routes {
	return processor.Routes{
		"stripe": {
			"invoice.paid": StripeInvoicePaid,
		},
	}
}

// InvoicePaidKind is the effect record kind of a paid invoice.
const InvoicePaidKind = "invoice_paid"

// StripeInvoicePaid records a paid invoice once, keyed by the invoice id:
// invoice.paid and invoice.payment_succeeded for one invoice, or a second
// invoice.paid with a new event id, can never record it twice.
func StripeInvoicePaid(_ context.Context, ev inbox.Event) (effects.Plan, error) {
	var body struct {
		Data struct {
			Object struct {
				ID         string `json:"id"`
				Object     string `json:"object"`
				Customer   any    `json:"customer"`
				AmountPaid *int64 `json:"amount_paid"`
				Currency   string `json:"currency"`
				Status     string `json:"status"`
			} `json:"object"`
		} `json:"data"`
		Livemode bool `json:"livemode"`
	}
	if err := json.Unmarshal(ev.Payload, &body); err != nil {
		return effects.Plan{}, effects.Permanent(fmt.Errorf("invoice.paid: %w", err))
	}
	inv := body.Data.Object
	if inv.ID == "" || inv.Object != "invoice" || inv.AmountPaid == nil {
		return effects.Plan{}, effects.Permanent(fmt.Errorf("invoice.paid: data.object is not an invoice with id and amount_paid"))
	}
	attrs := map[string]any{
		"invoice_id":  inv.ID,
		"amount_paid": *inv.AmountPaid,
		"currency":    inv.Currency,
		"livemode":    body.Livemode,
	}
	// customer is an id, or an expanded object with one.
	switch c := inv.Customer.(type) {
	case string:
		attrs["customer"] = c
	case map[string]any:
		if id, ok := c["id"].(string); ok {
			attrs["customer"] = id
		}
	}
	return effects.Plan{Records: []effects.Record{{Kind: InvoicePaidKind, Key: inv.ID, Attributes: attrs}}}, nil
}
