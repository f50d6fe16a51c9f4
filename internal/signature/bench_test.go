package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/stripe/stripe-go/v82/webhook"
)

// BenchmarkStripe compares the scheme with a bare HMAC (the floor) and with
// stripe-go on one real body. Every variant ignores the clock: ours takes a
// fixed now, stripe-go's run with tolerance disabled.
func BenchmarkStripe(b *testing.B) {
	body := invoicePaid(b)
	header := SignStripe(body, stripeSecret, testNow)
	r := stripeRequest(body, header)
	s := mustNewStripe(b, Options{})
	secret := string(stripeSecret)
	eventOpts := webhook.ConstructEventOptions{IgnoreTolerance: true, IgnoreAPIVersionMismatch: true}

	// Each variant must succeed once before it is timed.
	if err := webhook.ValidatePayloadIgnoringTolerance(body, header, secret); err != nil {
		b.Fatal(err)
	}
	if _, err := webhook.ConstructEventWithOptions(body, header, secret, eventOpts); err != nil {
		b.Fatal(err)
	}

	ts := []byte(testTS)
	var sum [sha256.Size]byte
	benchScheme(b, s, r, stripeSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, stripeSecret)
		mac.Write(ts)
		mac.Write([]byte{'.'})
		mac.Write(body)
		mac.Sum(sum[:0])
	})
	benchRun(b, "stripe-go/ValidatePayload", len(body), func(b *testing.B) {
		if err := webhook.ValidatePayloadIgnoringTolerance(body, header, secret); err != nil {
			b.Fatal(err)
		}
	})
	benchRun(b, "stripe-go/ConstructEvent", len(body), func(b *testing.B) {
		// The corpus is api_version 2024-06-20, older than the SDK's, so
		// ConstructEventIgnoringTolerance would refuse it.
		if _, err := webhook.ConstructEventWithOptions(body, header, secret, eventOpts); err != nil {
			b.Fatal(err)
		}
	})
}
