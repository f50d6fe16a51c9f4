package signature

import (
	"testing"
	"time"
)

// TestOptionsRefusedWhereMeaningless checks every kind against the options
// it does not use: each must be refused by New, never silently ignored.
func TestOptionsRefusedWhereMeaningless(t *testing.T) {
	noTimestamp := map[string]bool{"adyen": true, "bitbucket": true, "calcom": true, "coinbasecommerce": true, "dropbox": true, "gitea": true, "github": true, "intercom": true, "jira": true, "meta": true, "okta": true, "pagerduty": true, "paystack": true, "postmark": true, "razorpay": true, "sentry": true, "shopify": true, "square": true, "twilio": true, "typeform": true, "vercel": true, "woocommerce": true, "xero": true}
	needsURL := map[string]string{
		"square":  "https://hooks.example.com/webhooks/square",
		"twilio":  "https://hooks.example.com/webhooks/twilio",
		"hubspot": "https://hooks.example.com/webhooks/hubspot",
	}
	for _, kind := range Kinds() {
		if kind == "hmac" {
			continue // the generic kind takes every option; hmac_test.go covers it
		}
		base := Options{URL: needsURL[kind]}
		if _, err := New(kind, base); err != nil {
			t.Errorf("%s: New with its own options: %v", kind, err)
			continue
		}
		withHMAC := base
		withHMAC.HMAC = HMACOptions{Header: "X-Signature"}
		if _, err := New(kind, withHMAC); err == nil {
			t.Errorf("%s: hmac options accepted", kind)
		}
		negative := base
		negative.Tolerance = -time.Minute
		if _, err := New(kind, negative); err == nil {
			t.Errorf("%s: negative tolerance accepted", kind)
		}
		tol := base
		tol.Tolerance = time.Minute
		if _, err := New(kind, tol); (err == nil) == noTimestamp[kind] {
			t.Errorf("%s: tolerance on a kind that signs no timestamp=%v: err = %v", kind, noTimestamp[kind], err)
		}
		if needsURL[kind] == "" {
			withURL := base
			withURL.URL = "https://hooks.example.com/x"
			if _, err := New(kind, withURL); err == nil {
				t.Errorf("%s: url accepted by a kind that signs none", kind)
			}
		}
	}
}
