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
	if err := s.Verify(r, stripeSecrets, testNow); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Identify(r); err != nil {
		b.Fatal(err)
	}
	if err := webhook.ValidatePayloadIgnoringTolerance(body, header, secret); err != nil {
		b.Fatal(err)
	}
	if _, err := webhook.ConstructEventWithOptions(body, header, secret, eventOpts); err != nil {
		b.Fatal(err)
	}

	b.Run("bare-hmac", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		ts := []byte(testTS)
		var sum [sha256.Size]byte
		for b.Loop() {
			mac := hmac.New(sha256.New, stripeSecret)
			mac.Write(ts)
			mac.Write([]byte{'.'})
			mac.Write(body)
			mac.Sum(sum[:0])
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := s.Verify(r, stripeSecrets, testNow); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify+identify", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := s.Verify(r, stripeSecrets, testNow); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Identify(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stripe-go/ValidatePayload", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := webhook.ValidatePayloadIgnoringTolerance(body, header, secret); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stripe-go/ConstructEvent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			// The corpus is api_version 2024-06-20, older than the SDK's, so
			// ConstructEventIgnoringTolerance would refuse it.
			if _, err := webhook.ConstructEventWithOptions(body, header, secret, eventOpts); err != nil {
				b.Fatal(err)
			}
		}
	})
}
