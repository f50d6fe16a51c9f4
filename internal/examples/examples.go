// Package examples holds the business handlers shipped with webhook-inbox,
// as models for your own. Each is pure: it decodes the verified payload
// and declares its effects as an effects.Plan; none touches storage, the
// environment or the network, so it gives the same plan for the same event
// every time it runs.
//
// Contracts every handler here keeps:
//
//   - A payload it cannot read (not JSON, the wrong shape, a required field
//     missing) is an effects.Permanent error: retrying cannot help.
//   - Every plan it returns passes Plan.Validate; a plan that would not
//     is returned as a permanent error instead.
//   - Identities come from the business object (an invoice id, a commit
//     sha, a subscription id), never from the event id, so every event
//     carrying the same thing declares the same parts.
package examples

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// Routes returns the shipped handlers by source kind and event type: the
// one place they are registered. Events of other types are processed as
// ignored.
func Routes() processor.Routes {
	return processor.Routes{
		"stripe": {
			// Stripe sends both for one successful payment of an invoice;
			// they declare the same parts, so the second changes nothing.
			"invoice.paid":              StripeInvoicePaid,
			"invoice.payment_succeeded": StripeInvoicePaid,

			"customer.subscription.created": StripeSubscription,
			"customer.subscription.updated": StripeSubscription,
			"customer.subscription.deleted": StripeSubscription,
		},
		"github": {
			"push": GitHubPush,
		},
	}
}

// permanentf is a permanent error: for payloads that will never decode.
func permanentf(format string, args ...any) error {
	return effects.Permanent(fmt.Errorf(format, args...))
}

// decode unmarshals a JSON payload into v; malformed JSON, or JSON whose
// values have the wrong types for v, is a permanent error.
func decode(what string, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return permanentf("%s: payload: %w", what, err)
	}
	return nil
}

// validated returns plan if it validates. A plan that does not would be
// built again from the same payload on every try (a key too long, a
// control character where an idempotency key needs none): a permanent
// error.
func validated(what string, plan effects.Plan) (effects.Plan, error) {
	if err := plan.Validate(); err != nil {
		return effects.Plan{}, permanentf("%s: %w", what, err)
	}
	return plan, nil
}

// maxQuoted bounds a payload value quoted in an error: errors are kept
// with the event and logged, and a payload's strings can be long.
const maxQuoted = 64

// quote is s for an error message, quoted and cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		s = strings.ToValidUTF8(s[:maxQuoted], "") + "…"
	}
	return strconv.Quote(s)
}
