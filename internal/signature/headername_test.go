package signature

import (
	"net/http"
	"net/textproto"
	"testing"
)

func TestCanonicalName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"X-Shopify-Hmac-Sha256", true},
		{"Stripe-Signature", true},
		{"X-Hub-Signature-256", true},
		{"Webhook-Id", true},
		{"X-Github-Delivery", true},
		{"X-GitHub-Delivery", false},
		{"x-shopify-hmac-sha256", false},
		{"X-Shopify-Hmac-SHA256", false},
		{"X-9a", true},
		{"X-9A", false},
		{"-X", true},
		{"X--Y", true},
		{"", false},
		{"X Y", false},
		{"X_Y", false},
		{"Ä", false},
	} {
		if got := canonicalName(tc.name); got != tc.want {
			t.Errorf("canonicalName(%q) = %v, want %v", tc.name, got, tc.want)
		}
		if canonicalName(tc.name) && textproto.CanonicalMIMEHeaderKey(tc.name) != tc.name {
			t.Errorf("canonicalName(%q) but CanonicalMIMEHeaderKey gives %q", tc.name, textproto.CanonicalMIMEHeaderKey(tc.name))
		}
	}
}

// FuzzHeaderLookup checks hvalues and hget against http.Header's own
// lookup for any name, canonical or not.
func FuzzHeaderLookup(f *testing.F) {
	for _, s := range []string{"X-Shopify-Hmac-Sha256", "x-github-delivery", "X-GitHub-Delivery", "X 1", "", "-", "a-b-C9d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		h := http.Header{}
		h.Set(name, "v1")
		h.Add("Other-Name", "v2")
		if got, want := hvalues(h, name), h.Values(name); len(got) != len(want) || len(got) > 0 && got[0] != want[0] {
			t.Fatalf("hvalues(%q) = %q, http.Header gives %q", name, got, want)
		}
		if got, want := hget(h, name), h.Get(name); got != want {
			t.Fatalf("hget(%q) = %q, http.Header gives %q", name, got, want)
		}
		if canonicalName(name) && textproto.CanonicalMIMEHeaderKey(name) != name {
			t.Fatalf("canonicalName(%q) but CanonicalMIMEHeaderKey gives %q", name, textproto.CanonicalMIMEHeaderKey(name))
		}
	})
}
