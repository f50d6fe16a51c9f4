package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var (
	shopifySecret    = []byte("shpss_current_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d")
	shopifySecretOld = []byte("shpss_previous_9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c")
	shopifySecrets   = [][]byte{shopifySecret}
)

// shopifyOrder is an orders/create body in the shape Shopify documents
// (values are illustrative: the corpus has no Shopify bodies, see
// testdata/corpus/README.md).
const shopifyOrder = `{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","app_id":null,"browser_ip":null,"buyer_accepts_marketing":true,"cancel_reason":"customer","cancelled_at":"2021-12-31T19:00:00-05:00","cart_token":null,"checkout_id":null,"checkout_token":null,"confirmed":false,"contact_email":"jon@example.com","created_at":"2021-12-31T19:00:00-05:00","currency":"USD","current_subtotal_price":"398.00","current_total_price":"403.00","email":"jon@example.com","financial_status":"voided","fulfillment_status":"pending","name":"#9999","note":null,"number":234,"order_number":1234,"processed_at":"2021-12-31T19:00:00-05:00","subtotal_price":"388.00","tags":"tag1, tag2","test":true,"total_price":"403.00","total_tax":"0.00","total_weight":0,"updated_at":"2021-12-31T19:00:00-05:00","line_items":[{"id":866550311766439020,"name":"Example T-Shirt","price":"199.00","product_id":788032119674292922,"quantity":1,"sku":"example-shirt-s","title":"Example T-Shirt","variant_id":642667041472713922}],"shipping_address":{"address1":"123 Shipping Street","city":"Shippington","country":"United States","zip":"40003"}}`

// shopifyRequest builds a POST with the given headers, each "Name: value"
// (a name may repeat).
func shopifyRequest(body []byte, headers ...string) Request {
	h := http.Header{"Content-Type": {"application/json"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ": ")
		h.Add(k, v)
	}
	return Request{Method: http.MethodPost, Header: h, Body: body}
}

// shopifyB64Of is the HMAC of body, computed independently of the code
// under test.
func shopifyB64Of(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func mustNewShopify(tb testing.TB) *Shopify {
	tb.Helper()
	return mustNew(tb, NewShopify, Options{})
}

// shopifyLibHeaders are the headers of Shopify/shopify-app-js
// packages/apps/shopify-api/lib/webhooks/__tests__/utils.ts headers(), with
// its defaults, under the X-Shopify-* names ("webhooks") or under both
// names ("events").
func shopifyLibHeaders(hmac string, events bool) []string {
	h := []string{
		"X-Shopify-Api-Version: 2023-01",
		"X-Shopify-Shop-Domain: shop1.myshopify.io",
		"X-Shopify-Hmac-Sha256: " + hmac,
		"X-Shopify-Topic: products/create",
		"X-Shopify-Webhook-Id: 123456789",
	}
	if events {
		h = append(h,
			"Shopify-Api-Version: 2023-01",
			"Shopify-Shop-Domain: shop1.myshopify.io",
			"Shopify-Hmac-Sha256: "+hmac,
			"Shopify-Topic: products/create",
			"Shopify-Event-Id: 123456789",
		)
	}
	return h
}

// TestShopifyLibraryVector reproduces Shopify/shopify-app-js
// packages/apps/shopify-api/lib/webhooks/__tests__/validate.test.ts: body
// {"foo": "bar"} signed with the test config's apiSecretKey
// "test_secret_key" (lib/__tests__/test-config.ts) gives the HMAC the test
// expects back.
func TestShopifyLibraryVector(t *testing.T) {
	const (
		body   = `{"foo": "bar"}`
		secret = "test_secret_key"
		want   = "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
	)
	s := mustNewShopify(t)
	if got := SignShopify([]byte(body), []byte(secret)); got != want {
		t.Fatalf("SignShopify: got %q, want %q", got, want)
	}
	keys := [][]byte{[]byte(secret)}
	for _, events := range []bool{false, true} {
		t.Run(fmt.Sprintf("events headers %t", events), func(t *testing.T) {
			r := shopifyRequest([]byte(body), shopifyLibHeaders(want, events)...)
			checkErr(t, verifyNoPanic(t, s, r, keys, testNow), nil)
			got, err := s.Identify(r)
			if err != nil {
				t.Fatal(err)
			}
			wantAttrs := map[string]string{"webhook_id": "123456789", "api_version": "2023-01"}
			if events {
				wantAttrs["event_id"] = "123456789"
			}
			if got.ID != "123456789" || got.Type != "products/create" || got.Account != "shop1.myshopify.io" || !got.Created.IsZero() || fmt.Sprint(got.Attributes) != fmt.Sprint(wantAttrs) {
				t.Errorf("Identify: got %+v, want id 123456789, type products/create, account shop1.myshopify.io, attributes %v", got, wantAttrs)
			}
		})
	}
	// The library's failure cases; it answers valid: false, the causes are
	// ours.
	tests := []struct {
		name string
		r    Request
		want error
	}{
		{"missing body", shopifyRequest(nil, shopifyLibHeaders(want, false)...), ErrNoMatch},
		{"missing HMAC", shopifyRequest([]byte(body), shopifyLibHeaders("", false)...), ErrNotSigned},
		{"invalid HMAC (the default 'fake')", shopifyRequest([]byte(body), shopifyLibHeaders("fake", false)...), ErrMalformedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, verifyNoPanic(t, s, tt.r, keys, testNow), tt.want)
		})
	}
	for _, missing := range []string{"X-Shopify-Shop-Domain", "X-Shopify-Topic", "X-Shopify-Webhook-Id"} {
		t.Run("Identify without "+missing, func(t *testing.T) {
			r := shopifyRequest([]byte(body), shopifyLibHeaders(want, false)...)
			r.Header.Del(missing)
			if got, err := s.Identify(r); !errors.Is(err, ErrInvalidPayload) {
				t.Errorf("Identify: got %+v, %v; want %v", got, err, ErrInvalidPayload)
			}
		})
	}
}

// TestShopifyCorpus signs every corpus body (no Shopify corpus exists; the
// HMAC covers raw bytes only) under both header names.
func TestShopifyCorpus(t *testing.T) {
	s := mustNewShopify(t)
	files := append(paddleAllCorpus(t), corpusFile{name: "orders/create", body: []byte(shopifyOrder)})
	for _, f := range files {
		for _, name := range []string{ShopifyHMACHeader, ShopifyEventsHMACHeader} {
			sig := SignShopify(f.body, shopifySecret)
			if want := shopifyB64Of(f.body, shopifySecret); sig != want {
				t.Errorf("%s: SignShopify: got %q, want %q", f.name, sig, want)
			}
			if err := verifyNoPanic(t, s, shopifyRequest(f.body, name+": "+sig), shopifySecrets, testNow); err != nil {
				t.Errorf("%s: Verify(%s): got %v, want nil", f.name, name, err)
			}
			checkFlipsRejected(t, f.name+" under "+name, s, shopifyRequest(f.body, name+": "+sig), shopifySecrets, testNow)
		}
	}
}

// TestShopifyRotation checks the hour after a secret is rotated, when
// Shopify may still sign with the old one.
func TestShopifyRotation(t *testing.T) {
	body := []byte(shopifyOrder)
	s := mustNewShopify(t)
	cur := shopifyB64Of(body, shopifySecret)
	old := shopifyB64Of(body, shopifySecretOld)
	both := [][]byte{shopifySecret, shopifySecretOld}
	req := func(sig string) Request { return shopifyRequest(body, ShopifyHMACHeader+": "+sig) }
	tests := []verifyCase{
		{"both configured, signed by new", req(cur), both, nil},
		{"both configured, signed by old (within the hour)", req(old), both, nil},
		{"both configured in the other order", req(old), [][]byte{shopifySecretOld, shopifySecret}, nil},
		{"old removed after the hour", req(old), shopifySecrets, ErrNoMatch},
		{"new not yet configured", req(cur), [][]byte{shopifySecretOld}, ErrNoMatch},
		{"no secrets", req(cur), nil, ErrNoSecret},
		{"only empty secrets", req(shopifyB64Of(body, nil)), [][]byte{{}, nil}, ErrNoSecret},
		{"empty secret never matches empty-key signature", req(shopifyB64Of(body, nil)), [][]byte{{}, shopifySecret}, ErrNoMatch},
	}
	runVerifyCases(t, s, testNow, 0, tests)
}

func TestNewShopify(t *testing.T) {
	runOptionsCases(t, NewShopify, []optionsCase{
		{"defaults", Options{}, false},
		{"tolerance set", Options{Tolerance: time.Minute}, true},
		{"url set", Options{URL: "https://example.com/shopify"}, true},
		{"hmac options set", Options{HMAC: HMACOptions{Header: ShopifyHMACHeader}}, true},
	})
}

// shopifyCase is one request and the cause Verify must report. Header
// values may hold the placeholders shopifyCur and shopifyOld.
type shopifyCase struct {
	name    string
	headers []string // "Name: value"
	body    func([]byte) []byte
	want    error
}

// Placeholders for the HMAC of the request's body under shopifySecret and
// shopifySecretOld.
const (
	shopifyCur = "{sig}"
	shopifyOld = "{old}"
)

func shopifyExpand(s string, body []byte) string {
	if !strings.Contains(s, "{") {
		return s
	}
	return strings.NewReplacer(shopifyCur, shopifyB64Of(body, shopifySecret), shopifyOld, shopifyB64Of(body, shopifySecretOld)).Replace(s)
}

// shopifyMalformedCases is the table of bad (and a few surprising but
// valid) HMAC headers; the fuzz test reuses it.
func shopifyMalformedCases(body []byte) []shopifyCase {
	x, p := ShopifyHMACHeader+": ", ShopifyEventsHMACHeader+": "
	sig := shopifyB64Of(body, shopifySecret)
	next := func(c byte) string {
		const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		return string(a[strings.IndexByte(a, c)+1])
	}
	return []shopifyCase{
		{name: "valid", headers: []string{x + shopifyCur}, want: nil},
		{name: "valid, un-prefixed name", headers: []string{p + shopifyCur}, want: nil},
		{name: "valid, both names agree", headers: []string{x + shopifyCur, p + shopifyCur}, want: nil},
		{name: "valid, old secret", headers: []string{x + shopifyOld}, want: nil},
		{name: "missing", want: ErrNotSigned},
		{name: "empty", headers: []string{x}, want: ErrNotSigned},
		{name: "whitespace", headers: []string{x + "   "}, want: ErrNotSigned},
		{name: "empty prefixed, valid un-prefixed", headers: []string{x, p + shopifyCur}, want: nil},
		{name: "repeated", headers: []string{x + shopifyCur, x + shopifyCur}, want: ErrMalformedHeader},
		{name: "repeated un-prefixed", headers: []string{p + shopifyCur, p + shopifyOld}, want: ErrMalformedHeader},
		{name: "both names disagree", headers: []string{x + shopifyCur, p + shopifyOld}, want: ErrMalformedHeader},
		{name: "both names, one malformed", headers: []string{x + shopifyCur, p + "fake"}, want: ErrMalformedHeader},
		{name: "wrong secret", headers: []string{x + shopifyB64Of(body, []byte("wrong"))}, want: ErrNoMatch},
		{name: "hex instead of base64", headers: []string{x + fmt.Sprintf("%x", sha256.Sum256(body))}, want: ErrMalformedHeader},
		{name: "truncated", headers: []string{x + sig[:43]}, want: ErrMalformedHeader},
		{name: "without padding", headers: []string{x + strings.TrimSuffix(sig, "=")}, want: ErrMalformedHeader},
		{name: "one character too long", headers: []string{x + sig + "="}, want: ErrMalformedHeader},
		{name: "url-safe alphabet", headers: []string{x + sig[:5] + "-" + sig[6:]}, want: ErrMalformedHeader},
		{name: "non-canonical last character", headers: []string{x + sig[:42] + next(sig[42]) + "="}, want: ErrMalformedHeader},
		{name: "sha256= prefix", headers: []string{x + "sha256=" + sig}, want: ErrMalformedHeader},
		{name: "leading space", headers: []string{x + " " + sig}, want: ErrMalformedHeader},
		{name: "unicode", headers: []string{x + strings.Repeat("ü", 22)}, want: ErrMalformedHeader},
		{name: "over 8 KiB", headers: []string{x + strings.Repeat("A", 8<<10+1)}, want: ErrMalformedHeader},
		{name: "SHA-1 length", headers: []string{x + "1z2n3DEJJiUPKcPzQo1ftvbxGdw="}, want: ErrMalformedHeader},
		{name: "body truncated by one byte", headers: []string{x + sig}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body with appended newline", headers: []string{x + sig}, body: func(b []byte) []byte { return append(bytes.Clone(b), '\n') }, want: ErrNoMatch},
		{name: "body empty", headers: []string{x + sig}, body: func([]byte) []byte { return nil }, want: ErrNoMatch},
	}
}

func shopifyMalformedRuns(tb testing.TB) []malformedRun {
	body := []byte(shopifyOrder)
	secrets := [][]byte{shopifySecret, shopifySecretOld}
	var cases []verifyCase
	for _, tc := range shopifyMalformedCases(body) {
		headers := make([]string, len(tc.headers))
		for i, h := range tc.headers {
			headers[i] = shopifyExpand(h, body)
		}
		cases = append(cases, verifyCase{tc.name, shopifyRequest(changed(body, tc.body), headers...), secrets, tc.want})
	}
	s := mustNewShopify(tb)
	generic := genericMalformed(tb, "", malformedSpec{
		s:       s,
		r:       signed(tb, s, shopifyRequest(body), shopifySecret, testNow),
		secrets: shopifySecrets,
		sig:     signedField{header: ShopifyHMACHeader},
		enc:     encBase64,
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestShopifyVerifyMalformed(t *testing.T) { runMalformed(t, shopifyMalformedRuns(t)) }

// shopifyHeaders is a full set of identity headers under the X-Shopify-*
// names; tests change or delete single entries.
func shopifyHeaders() http.Header {
	return http.Header{
		ShopifyTopicHeader:       {"orders/create"},
		ShopifyShopDomainHeader:  {"example-shop.myshopify.com"},
		ShopifyWebhookIDHeader:   {"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
		ShopifyEventIDHeader:     {"98880550-7158-44d4-b7cd-2c97c8a091b5"},
		ShopifyTriggeredAtHeader: {"2023-03-29T18:00:27.877041743Z"},
		ShopifyAPIVersionHeader:  {"2025-07"},
	}
}

func TestShopifyIdentify(t *testing.T) {
	s := mustNewShopify(t)
	body := []byte(shopifyOrder)
	full := Identity{
		ID:      "98880550-7158-44d4-b7cd-2c97c8a091b5",
		Type:    "orders/create",
		Account: "example-shop.myshopify.com",
		Created: time.Date(2023, 3, 29, 18, 0, 27, 877041743, time.UTC),
		Attributes: map[string]string{
			"event_id":    "98880550-7158-44d4-b7cd-2c97c8a091b5",
			"webhook_id":  "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			"api_version": "2025-07",
		},
	}
	with := func(f func(*Identity)) Identity {
		w := full
		w.Attributes = map[string]string{}
		for k, v := range full.Attributes {
			w.Attributes[k] = v
		}
		f(&w)
		return w
	}
	// unprefix moves every X-Shopify-* header to its un-prefixed name.
	unprefix := func(h http.Header) {
		for k, v := range h {
			if rest, ok := strings.CutPrefix(k, "X-"); ok {
				delete(h, k)
				h[rest] = v
			}
		}
	}
	tests := []struct {
		name   string
		change func(h http.Header)
		body   string    // "" keeps shopifyOrder
		want   *Identity // nil means ErrInvalidPayload
	}{
		{"all headers", func(http.Header) {}, "", &full},
		{"un-prefixed names", unprefix, "", &full},
		{"both names, same values", func(h http.Header) {
			for k, v := range shopifyHeaders() {
				h[strings.TrimPrefix(k, "X-")] = v
			}
		}, "", &full},
		{"no event id: webhook id", func(h http.Header) { h.Del(ShopifyEventIDHeader) }, "", shopifyPtr(with(func(w *Identity) {
			w.ID = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
			delete(w.Attributes, "event_id")
		}))},
		{"no webhook id", func(h http.Header) { h.Del(ShopifyWebhookIDHeader) }, "", shopifyPtr(with(func(w *Identity) { delete(w.Attributes, "webhook_id") }))},
		{"no api version", func(h http.Header) { h.Del(ShopifyAPIVersionHeader) }, "", shopifyPtr(with(func(w *Identity) { delete(w.Attributes, "api_version") }))},
		{"no triggered-at", func(h http.Header) { h.Del(ShopifyTriggeredAtHeader) }, "", shopifyPtr(with(func(w *Identity) { w.Created = time.Time{} }))},
		{"unparseable triggered-at is ignored", func(h http.Header) { h.Set(ShopifyTriggeredAtHeader, "yesterday") }, "", shopifyPtr(with(func(w *Identity) { w.Created = time.Time{} }))},
		{"triggered-at with offset", func(h http.Header) { h.Set(ShopifyTriggeredAtHeader, "2023-03-29T20:00:27+02:00") }, "", shopifyPtr(with(func(w *Identity) { w.Created = time.Date(2023, 3, 29, 18, 0, 27, 0, time.UTC) }))},
		{"event id 512 bytes", func(h http.Header) { h.Set(ShopifyEventIDHeader, strings.Repeat("e", 512)) }, "", shopifyPtr(with(func(w *Identity) {
			w.ID = strings.Repeat("e", 512)
			w.Attributes["event_id"] = w.ID
		}))},
		{"empty JSON object body", func(http.Header) {}, `{}`, &full},

		{"neither id", func(h http.Header) { h.Del(ShopifyEventIDHeader); h.Del(ShopifyWebhookIDHeader) }, "", nil},
		{"event id 513 bytes", func(h http.Header) { h.Set(ShopifyEventIDHeader, strings.Repeat("e", 513)) }, "", nil},
		{"webhook id 513 bytes", func(h http.Header) { h.Set(ShopifyWebhookIDHeader, strings.Repeat("w", 513)) }, "", nil},
		{"event id invalid UTF-8", func(h http.Header) { h.Set(ShopifyEventIDHeader, "evt\xff") }, "", nil},
		{"event id repeated", func(h http.Header) { h.Add(ShopifyEventIDHeader, "other") }, "", nil},
		{"event ids disagree across names", func(h http.Header) { h.Set(ShopifyEventsEventIDHeader, "other") }, "", nil},
		{"no topic", func(h http.Header) { h.Del(ShopifyTopicHeader) }, "", nil},
		{"topic invalid UTF-8", func(h http.Header) { h.Set(ShopifyTopicHeader, "orders/\xc3") }, "", nil},
		{"no shop domain", func(h http.Header) { h.Del(ShopifyShopDomainHeader) }, "", nil},
		{"shop domain upper case", func(h http.Header) { h.Set(ShopifyShopDomainHeader, "Example.myshopify.com") }, "", nil},
		{"shop domain with scheme", func(h http.Header) { h.Set(ShopifyShopDomainHeader, "https://example.myshopify.com") }, "", nil},
		{"shop domain with path", func(h http.Header) { h.Set(ShopifyShopDomainHeader, "example.myshopify.com/admin") }, "", nil},
		{"shop domain with space", func(h http.Header) { h.Set(ShopifyShopDomainHeader, "example .myshopify.com") }, "", nil},
		{"shop domain 256 bytes", func(h http.Header) { h.Set(ShopifyShopDomainHeader, strings.Repeat("a", 256)) }, "", nil},
		{"shop domain unicode", func(h http.Header) { h.Set(ShopifyShopDomainHeader, "exämple.myshopify.com") }, "", nil},
		{"body not JSON", func(http.Header) {}, `id=1`, nil},
		{"body an array", func(http.Header) {}, `[{"id":1}]`, nil},
		{"body truncated JSON", func(http.Header) {}, `{"id":1`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := shopifyHeaders()
			tt.change(h)
			b := body
			if tt.body != "" {
				b = []byte(tt.body)
			}
			got, err := s.Identify(Request{Method: http.MethodPost, Header: h, Body: b})
			if tt.want == nil {
				if !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("Identify: got %+v, %v; want %v", got, err, ErrInvalidPayload)
				}
				return
			}
			if err != nil {
				t.Fatalf("Identify: got %v, want nil", err)
			}
			w := *tt.want
			if got.ID != w.ID || got.Type != w.Type || got.Account != w.Account || !got.Created.Equal(w.Created) || fmt.Sprint(got.Attributes) != fmt.Sprint(w.Attributes) {
				t.Errorf("Identify: got %+v, want %+v", got, w)
			}
		})
	}
}

// shopifyPtr returns a pointer to a copy of v.
func shopifyPtr[T any](v T) *T { return &v }

func TestShopifySign(t *testing.T) {
	s := mustNewShopify(t)
	body := []byte(shopifyOrder)
	tests := []struct {
		name     string
		headers  []string
		wantName string
	}{
		{"no headers", nil, ShopifyHMACHeader},
		{"X-Shopify-* request", []string{ShopifyTopicHeader + ": orders/create"}, ShopifyHMACHeader},
		{"Shopify-* request", []string{ShopifyEventsTopicHeader + ": orders/create"}, ShopifyEventsHMACHeader},
		{"both", []string{ShopifyTopicHeader + ": orders/create", ShopifyEventsTopicHeader + ": orders/create"}, ShopifyHMACHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := shopifyRequest(body, tt.headers...)
			if tt.headers == nil {
				r.Header = nil
			}
			if err := s.Sign(&r, shopifySecret, testNow); err != nil {
				t.Fatal(err)
			}
			if got := r.Header.Get(tt.wantName); got != shopifyB64Of(body, shopifySecret) {
				t.Errorf("%s: got %q, want the body's HMAC", tt.wantName, got)
			}
			checkErr(t, s.Verify(r, shopifySecrets, time.Time{}), nil)
		})
	}
}

// ExampleSignShopify pins the value; it was computed with openssl
// (HMAC-SHA256 of the body, base64).
func ExampleSignShopify() {
	fmt.Println(SignShopify([]byte(`{"id":1}`), []byte("shpss_example")))
	// Output: QvBzlTPo5RYh0lGvEXvN6nLJRmU2XrsL6x7vnfUCHCs=
}

func FuzzShopifyVerify(f *testing.F) {
	f.Add(ShopifyHMACHeader+": "+shopifyCur, []byte(shopifyOrder))
	f.Add(ShopifyEventsHMACHeader+": "+shopifyOld, []byte(`{"foo": "bar"}`))
	body := []byte(shopifyOrder)
	for _, tc := range shopifyMalformedCases(body) {
		h := strings.Join(tc.headers, "\n")
		if len(h) > 8<<10 {
			continue
		}
		b := changed(body, tc.body)
		h = strings.NewReplacer(shopifyB64Of(b, shopifySecret), shopifyCur).Replace(h)
		f.Add(h, b)
	}
	s := mustNewShopify(f)
	secrets := [][]byte{shopifySecret, shopifySecretOld}
	f.Fuzz(func(t *testing.T, headers string, body []byte) {
		headers = shopifyExpand(headers, body)
		var lines []string
		if headers != "" {
			lines = strings.Split(headers, "\n")
		}
		r := shopifyRequest(body, lines...)
		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		// Accepted: every non-blank HMAC value is SignShopify for one
		// configured secret.
		values := append(r.Header.Values(ShopifyHMACHeader), r.Header.Values(ShopifyEventsHMACHeader)...)
		matched := 0
		for _, v := range values {
			if strings.TrimSpace(v) == "" {
				continue
			}
			if v != SignShopify(body, shopifySecret) && v != SignShopify(body, shopifySecretOld) {
				t.Fatalf("Verify(%q): accepted HMAC value %q that is not SignShopify for a configured secret", headers, v)
			}
			matched++
		}
		if matched == 0 {
			t.Fatalf("Verify(%q): got nil without an HMAC value", headers)
		}
	})
}

func FuzzShopifyIdentify(f *testing.F) {
	h := shopifyHeaders()
	f.Add(h.Get(ShopifyTopicHeader), h.Get(ShopifyShopDomainHeader), h.Get(ShopifyEventIDHeader), h.Get(ShopifyWebhookIDHeader), h.Get(ShopifyTriggeredAtHeader), []byte(shopifyOrder))
	f.Add("products/create", "shop1.myshopify.io", "", "123456789", "", []byte(`{"foo": "bar"}`))
	f.Add("", "", "", "", "", []byte(``))
	f.Add("0", "0", " ", "0", "0", []byte(`{}`)) // a blank event id falls back to the webhook id
	s := mustNewShopify(f)
	f.Fuzz(func(t *testing.T, topic, domain, eventID, webhookID, triggeredAt string, body []byte) {
		hdr := http.Header{}
		for k, v := range map[string]string{ShopifyTopicHeader: topic, ShopifyShopDomainHeader: domain, ShopifyEventIDHeader: eventID, ShopifyWebhookIDHeader: webhookID, ShopifyTriggeredAtHeader: triggeredAt} {
			if v != "" {
				hdr.Set(k, v)
			}
		}
		got, ok := fuzzIdentify(t, s, Request{Header: hdr, Body: body})
		if !ok {
			return
		}
		if got.ID == "" || len(got.ID) > MaxIdentity || !utf8.ValidString(got.ID) || got.Type == "" || !utf8.ValidString(got.Type) || !shopifyValidDomain(got.Account) {
			t.Fatalf("Identify: got %+v", got)
		}
		// A blank header counts as absent, as header() treats it.
		if got.ID != eventID && (strings.TrimSpace(eventID) != "" || got.ID != webhookID) {
			t.Fatalf("Identify: got id %q from event id %q, webhook id %q", got.ID, eventID, webhookID)
		}
	})
}

// BenchmarkShopify compares the scheme with a bare HMAC over the same bytes
// (Shopify publishes no Go library).
func BenchmarkShopify(b *testing.B) {
	body := []byte(shopifyOrder)
	h := shopifyHeaders()
	h.Set(ShopifyHMACHeader, SignShopify(body, shopifySecret))
	r := Request{Method: http.MethodPost, Header: h, Body: body}
	var sum [sha256.Size]byte
	benchScheme(b, mustNewShopify(b), r, shopifySecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, shopifySecret)
		mac.Write(body)
		mac.Sum(sum[:0])
	})
}
