package signature

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
)

// wooCommerceOrder is shaped like an order.updated payload of WooCommerce's
// REST API (values made up here).
const wooCommerceOrder = `{"id":727,"parent_id":0,"status":"processing","currency":"EUR","date_created_gmt":"2024-07-26T00:39:00","date_modified_gmt":"2024-07-26T00:40:00","total":"29.35","customer_id":0,"billing":{"first_name":"Ada","last_name":"Obi","email":"ada@example.com"},"line_items":[{"id":315,"name":"Woo Single #1","product_id":93,"quantity":2,"total":"6.00"}]}`

var wooCommerceAttrs = map[string]string{"delivery_id": "5c6bb1c1a3e1e0f1a8f9e6d0b4a7c2d3", "webhook_id": "12", "source": "https://shop.example.com/"}

var wooCommerceKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewWooCommerce(o) },
	header:    WooCommerceSignatureHeader,
	enc:       encBase64,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("woocommerce-webhook-secret-8Lz3Kq6Wp1"),
	secretOld: []byte("woocommerce-webhook-secret-old-2Vt9"),
	headers: map[string][]string{
		WooCommerceDeliveryHeader:  {"5c6bb1c1a3e1e0f1a8f9e6d0b4a7c2d3"},
		WooCommerceTopicHeader:     {"order.updated"},
		WooCommerceWebhookIDHeader: {"12"},
		WooCommerceSourceHeader:    {"https://shop.example.com/"},
	},
	bodies: []identifyCase{{name: "order.updated", body: wooCommerceOrder, want: Identity{
		ID: "order.updated " + hashID(wooCommerceOrder), Type: "order.updated", Attributes: wooCommerceAttrs}}},
	identify: []identifyCase{
		{name: "any object", body: `{"id":1}`, want: Identity{ID: "order.updated " + hashID(`{"id":1}`), Type: "order.updated", Attributes: wooCommerceAttrs}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "array", body: `[]`},
		{name: "the ping's form", body: `webhook_id=12`},
	},
}

func TestWooCommerce(t *testing.T) { runBodyHMACKind(t, wooCommerceKind) }

// TestWooCommerceSameSecond: WooCommerce gives two deliveries of one
// webhook in one second the same delivery id; two different orders (or
// two states of one) so delivered are still two events.
func TestWooCommerceSameSecond(t *testing.T) {
	w := wooCommerceKind.scheme(t)
	a, errA := w.Identify(wooCommerceKind.request([]byte(wooCommerceOrder)))
	b, errB := w.Identify(wooCommerceKind.request([]byte(strings.Replace(wooCommerceOrder, `"status":"processing"`, `"status":"completed"`, 1))))
	if errA != nil || errB != nil || a.ID == b.ID {
		t.Errorf("two orders under one delivery id: %q and %q (%v, %v), want two events", a.ID, b.ID, errA, errB)
	}
}

// TestWooCommercePing: the unsigned ping is recognized in its exact form
// only; anything else goes to Verify.
func TestWooCommercePing(t *testing.T) {
	w := wooCommerceKind.scheme(t).(*WooCommerce)
	form := func(body string) Request {
		return Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(body)}
	}
	if reply, ok := w.Ping(form("webhook_id=12")); !ok || reply.Status != 200 || len(reply.Body) != 0 {
		t.Errorf("the ping: got %+v, %v", reply, ok)
	}
	if _, ok := w.Ping(form("webhook_id=" + strings.Repeat("9", 20))); !ok {
		t.Error("a 20-digit id: not a ping")
	}
	charset := form("webhook_id=12")
	charset.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8")
	if _, ok := w.Ping(charset); !ok {
		t.Error("with a charset: not a ping")
	}
	signedPing := form("webhook_id=12")
	signedPing.Header.Set(WooCommerceSignatureHeader, "x")
	get := form("webhook_id=12")
	get.Method = http.MethodGet
	json := form("webhook_id=12")
	json.Header.Set("Content-Type", "application/json")
	for name, r := range map[string]Request{
		"empty":            form(""),
		"no id":            form("webhook_id="),
		"21 digits":        form("webhook_id=" + strings.Repeat("9", 21)),
		"not digits":       form("webhook_id=12a"),
		"another field":    form("webhook_id=12&x=1"),
		"another name":     form("webhook=12"),
		"a JSON body":      form(`{"webhook_id":12}`),
		"with a signature": signedPing,
		"a GET":            get,
		"JSON type":        json,
		"trailing newline": form("webhook_id=12\n"),
	} {
		if _, ok := w.Ping(r); ok {
			t.Errorf("%s: taken for a ping", name)
		}
	}
}

func wooCommerceMalformedRuns(tb testing.TB) []malformedRun {
	return bodyHMACMalformedRuns(tb, wooCommerceKind)
}

func TestWooCommerceVerifyMalformed(t *testing.T) { runMalformed(t, wooCommerceMalformedRuns(t)) }

func FuzzWooCommerceVerify(f *testing.F) { fuzzBodyHMACVerify(f, wooCommerceKind) }

func FuzzWooCommerceIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, wooCommerceKind, func(body []byte, id Identity) bool {
		return id.Type == "order.updated" && id.ID == "order.updated "+hashID(string(body))
	})
}

// FuzzWooCommercePing: whatever the body, a ping is exactly
// "webhook_id=<1 to 20 digits>".
func FuzzWooCommercePing(f *testing.F) {
	for _, b := range []string{"webhook_id=12", "webhook_id=", "webhook_id=12&x=1", "x"} {
		f.Add(b)
	}
	w := wooCommerceKind.scheme(f).(*WooCommerce)
	f.Fuzz(func(t *testing.T, body string) {
		r := Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(body)}
		if _, ok := w.Ping(r); !ok {
			return
		}
		id, found := strings.CutPrefix(body, "webhook_id=")
		if !found || id == "" || len(id) > 20 || strings.Trim(id, "0123456789") != "" {
			t.Fatalf("Ping(%q): taken for a ping", body)
		}
	})
}

func BenchmarkWooCommerce(b *testing.B) { benchBodyHMAC(b, wooCommerceKind) }
