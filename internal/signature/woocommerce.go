package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"time"
)

// WooCommerce's webhook headers.
const (
	WooCommerceSignatureHeader = "X-Wc-Webhook-Signature"
	WooCommerceDeliveryHeader  = "X-Wc-Webhook-Delivery-Id"
	WooCommerceTopicHeader     = "X-Wc-Webhook-Topic"
	WooCommerceWebhookIDHeader = "X-Wc-Webhook-Id"
	WooCommerceSourceHeader    = "X-Wc-Webhook-Source"
)

// wooCommercePingMax bounds the digits of a ping's webhook id.
const wooCommercePingMax = 20

// WooCommerce verifies WooCommerce's `X-WC-Webhook-Signature: <base64>`, an
// HMAC-SHA256 of the raw body keyed with the webhook's secret. No
// timestamp is signed.
//
// When a webhook is saved, WooCommerce pings its URL with an unsigned,
// form-encoded "webhook_id=<n>" and shows an error unless it is answered
// 2xx. That request (Ping) is answered 200 with nothing stored; it is
// recognized only in that exact form, so it can neither store an event
// nor be answered with anything.
type WooCommerce struct{}

var (
	_ Scheme = (*WooCommerce)(nil)
	_ Signer = (*WooCommerce)(nil)
	_ Pinger = (*WooCommerce)(nil)
)

// NewWooCommerce returns the WooCommerce scheme. It refuses a tolerance, a
// URL and HMAC options.
func NewWooCommerce(o Options) (*WooCommerce, error) {
	if err := checkOptions("woocommerce", o, 0); err != nil {
		return nil, err
	}
	return &WooCommerce{}, nil
}

// Verify implements Scheme. now is unused.
func (w *WooCommerce) Verify(r Request, secrets [][]byte, now time.Time) error {
	return base64BodyVerify(r.Header, WooCommerceSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

// Ping implements Pinger: an unsigned POST whose whole body is
// "webhook_id=" and 1 to 20 ASCII digits, sent form-encoded, with no
// signature header.
func (w *WooCommerce) Ping(r Request) (Reply, bool) {
	if r.Method != http.MethodPost || len(hvalues(r.Header, WooCommerceSignatureHeader)) != 0 {
		return Reply{}, false
	}
	if mt, _, err := mime.ParseMediaType(hget(r.Header, "Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return Reply{}, false
	}
	const prefix = "webhook_id="
	b := r.Body
	if len(b) <= len(prefix) || len(b) > len(prefix)+wooCommercePingMax || string(b[:len(prefix)]) != prefix {
		return Reply{}, false
	}
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			return Reply{}, false
		}
	}
	return Reply{Status: http.StatusOK}, true
}

// Identify implements Scheme. WooCommerce's X-WC-Webhook-Delivery-ID is a
// hash of the webhook's id and the current second, the same for two
// deliveries in one second (a bulk update), so it cannot key an event:
// ID is the topic and the signed body's hash, "<topic> sha256:<hex>" (two
// bodies alike under one topic are one state, merged harmlessly; an order
// changed carries its new date_modified). Type is X-WC-Webhook-Topic
// ("order.updated"); the body must be a JSON object. The delivery id, the
// webhook's id and the store's URL are kept as "delivery_id",
// "webhook_id" and "source".
func (w *WooCommerce) Identify(r Request) (Identity, error) {
	if err := jsonFields(r.Body, nil, nil); err != nil {
		return Identity{}, fmt.Errorf("%w: woocommerce: body is not a JSON object", ErrInvalidPayload)
	}
	topic, err := githubIdentityHeader(r.Header, WooCommerceTopicHeader)
	if err != nil {
		return Identity{}, err
	}
	sum := sha256.Sum256(r.Body)
	id := Identity{ID: topic + " sha256:" + hex.EncodeToString(sum[:]), Type: topic}
	if len(id.ID) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: woocommerce: topic too long", ErrInvalidPayload)
	}
	for attr, name := range map[string]string{"delivery_id": WooCommerceDeliveryHeader, "webhook_id": WooCommerceWebhookIDHeader, "source": WooCommerceSourceHeader} {
		if v := hget(r.Header, name); v != "" && len(v) <= MaxIdentity && githubPrintable(v) {
			if id.Attributes == nil {
				id.Attributes = map[string]string{}
			}
			id.Attributes[attr] = v
		}
	}
	return id, nil
}

// Sign implements Signer: it sets X-WC-Webhook-Signature for r.Body.
func (w *WooCommerce) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, WooCommerceSignatureHeader, base64.StdEncoding.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (w *WooCommerce) KeptHeaders() []string {
	return []string{WooCommerceSignatureHeader, WooCommerceDeliveryHeader, WooCommerceTopicHeader, WooCommerceWebhookIDHeader, WooCommerceSourceHeader}
}
