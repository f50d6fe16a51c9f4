// Package handlers is the team's room: the business handlers (Routes: a
// source kind and an event type to a handler) and the outbound targets
// they send to (Targets). The shipped Stripe and
// GitHub handlers are the starting point; a team's own go beside them.
// It imports only internal/effects and internal/inbox, so upgrading the
// framework never means merging into it. Each handler is pure: it decodes
// the verified payload and declares its effects as an effects.Plan; none
// touches storage, the environment or the network, so it gives the same
// plan for the same event every time it runs.
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
package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Routes returns the shipped handlers by source kind and event type: the
// one place they are registered. Events of other types are processed as
// ignored. The Stripe handlers take only events in their source's mode
// (see StripeModes).
func Routes(modes StripeModes) effects.Routes {
	stripe := func(h effects.Handler) effects.Handler { return modes.guard(h) }
	return effects.Routes{
		"stripe": {
			// Stripe sends both for one successful payment of an invoice;
			// they declare the same parts, so the second changes nothing.
			"invoice.paid":              stripe(StripeInvoicePaid),
			"invoice.payment_succeeded": stripe(StripeInvoicePaid),

			"customer.subscription.created": stripe(StripeSubscription),
			"customer.subscription.updated": stripe(StripeSubscription),
			"customer.subscription.deleted": stripe(StripeSubscription),
		},
		"github": {
			"push": GitHubPush,
		},
	}
}

// Targets returns the outbound targets the handlers here send to
// (effects.Outbound.Target): the one place they are declared. Each
// deployment says where each one is in TARGETS (template parameter
// Targets), one entry per target; the processor refuses to start when a
// target here has no entry, or an entry names none of these.
func Targets() []effects.Target {
	return []effects.Target{
		{Name: ReceiptTarget},
	}
}

// StripeModes says, by source name, which Stripe mode the source's events
// must be in: "live", "test" or "any" (the source's livemode option, see
// source.Set.Livemodes). A test-mode event on a live source, or the
// reverse, is refused — a permanent error: the event is dead, kept for an
// operator, who fixes the source's option (or its secret) and replays it —
// never applied to the live business. A source the map does not name (or
// a nil map) takes both.
type StripeModes map[string]string

// guard runs h only for an event in its source's mode; h itself when
// every source takes both.
func (m StripeModes) guard(h effects.Handler) effects.Handler {
	restricted := false
	for _, mode := range m {
		restricted = restricted || mode == "live" || mode == "test"
	}
	if !restricted {
		return h
	}
	return func(ctx context.Context, ev inbox.Event) (effects.Plan, error) {
		want := m[ev.Key.Source]
		if want == "" || want == "any" {
			return h(ctx, ev)
		}
		var body struct {
			Livemode *bool `json:"livemode"`
		}
		if err := decode("stripe event", ev.Payload, &body); err != nil {
			return effects.Plan{}, err
		}
		switch {
		case body.Livemode == nil:
			return effects.Plan{}, permanentf("stripe event: no livemode, and source %s takes only %s events", quote(ev.Key.Source), want)
		case *body.Livemode != (want == "live"):
			got := "test"
			if *body.Livemode {
				got = "live"
			}
			return effects.Plan{}, permanentf("stripe event: a %s-mode event on source %s, which takes only %s events (its livemode option)", got, quote(ev.Key.Source), want)
		}
		return h(ctx, ev)
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
