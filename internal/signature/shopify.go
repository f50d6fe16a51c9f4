package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Shopify's headers. Webhook subscriptions send the X-Shopify-* names;
// newer deliveries (Shopify's "events" webhooks) send the same values under
// un-prefixed Shopify-* names, sometimes alongside the X-Shopify-* ones.
const (
	ShopifyHMACHeader        = "X-Shopify-Hmac-Sha256"
	ShopifyTopicHeader       = "X-Shopify-Topic"
	ShopifyShopDomainHeader  = "X-Shopify-Shop-Domain"
	ShopifyWebhookIDHeader   = "X-Shopify-Webhook-Id"
	ShopifyEventIDHeader     = "X-Shopify-Event-Id"
	ShopifyTriggeredAtHeader = "X-Shopify-Triggered-At"
	ShopifyAPIVersionHeader  = "X-Shopify-Api-Version"

	ShopifyEventsHMACHeader        = "Shopify-Hmac-Sha256"
	ShopifyEventsTopicHeader       = "Shopify-Topic"
	ShopifyEventsShopDomainHeader  = "Shopify-Shop-Domain"
	ShopifyEventsWebhookIDHeader   = "Shopify-Webhook-Id"
	ShopifyEventsEventIDHeader     = "Shopify-Event-Id"
	ShopifyEventsTriggeredAtHeader = "Shopify-Triggered-At"
	ShopifyEventsAPIVersionHeader  = "Shopify-Api-Version"
)

// Limits of Shopify's identity headers: ids and topics become DynamoDB
// keys; a shop domain is a host name.
const (
	ShopifyMaxDomain = 255
)

// Shopify verifies `X-Shopify-Hmac-Sha256: <base64>` (or
// `Shopify-Hmac-Sha256`): an HMAC-SHA256 of the body alone, keyed with the
// app's client secret. Several secrets may be configured and any may match:
// after a secret is rotated Shopify keeps signing with the old one for up to
// an hour, so both must be accepted until then.
//
// Shopify signs neither a timestamp nor its headers. There is no tolerance,
// and the event id, topic and shop domain that Identify reads are not
// covered by the signature: a replayed body is caught by the dedupe key only
// while its id headers are left as sent.
type Shopify struct{}

var (
	_ Scheme = (*Shopify)(nil)
	_ Signer = (*Shopify)(nil)
)

// NewShopify returns the Shopify scheme. Shopify signs no timestamp and no
// URL, so o.Tolerance and o.URL must be unset; o.HMAC must be empty.
func NewShopify(o Options) (*Shopify, error) {
	if err := checkOptions("shopify", o, 0); err != nil {
		return nil, err
	}
	return &Shopify{}, nil
}

// shopifyNames is one header under its prefixed and un-prefixed names.
type shopifyNames struct{ prefixed, plain string }

var (
	shopifyHMAC        = shopifyNames{ShopifyHMACHeader, ShopifyEventsHMACHeader}
	shopifyTopic       = shopifyNames{ShopifyTopicHeader, ShopifyEventsTopicHeader}
	shopifyShopDomain  = shopifyNames{ShopifyShopDomainHeader, ShopifyEventsShopDomainHeader}
	shopifyWebhookID   = shopifyNames{ShopifyWebhookIDHeader, ShopifyEventsWebhookIDHeader}
	shopifyEventID     = shopifyNames{ShopifyEventIDHeader, ShopifyEventsEventIDHeader}
	shopifyTriggeredAt = shopifyNames{ShopifyTriggeredAtHeader, ShopifyEventsTriggeredAtHeader}
	shopifyAPIVersion  = shopifyNames{ShopifyAPIVersionHeader, ShopifyEventsAPIVersionHeader}
)

// shopifyHeader reads a header under both of its names: "" when neither is
// present, ErrMalformedHeader when either is repeated or the two disagree
// (Shopify sends the same value under both).
func shopifyHeader(h http.Header, n shopifyNames) (string, error) {
	a, err := optionalHeader(h, n.prefixed)
	if err != nil {
		return "", err
	}
	b, err := optionalHeader(h, n.plain)
	if err != nil {
		return "", err
	}
	if a != "" && b != "" && a != b {
		return "", fmt.Errorf("%w: %s and %s differ", ErrMalformedHeader, n.prefixed, n.plain)
	}
	if a != "" {
		return a, nil
	}
	return b, nil
}

// shopifyB64 is the strict standard alphabet: one signature, one encoding.
var shopifyB64 = base64.StdEncoding.Strict()

// Verify implements Scheme; now is unused because Shopify signs no
// timestamp. A value that is not the base64 of 32 bytes is
// ErrMalformedHeader.
func (s *Shopify) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := shopifyHeader(r.Header, shopifyHMAC)
	if err != nil {
		return err
	}
	if h == "" {
		return ErrNotSigned
	}
	var (
		src  [44]byte
		want [sha256.Size + 1]byte
	)
	if len(h) != len(src) {
		return fmt.Errorf("%w: HMAC is not base64 of 32 bytes", ErrMalformedHeader)
	}
	if n, err := shopifyB64.Decode(want[:], src[:copy(src[:], h)]); err != nil || n != sha256.Size {
		return fmt.Errorf("%w: HMAC is not base64 of 32 bytes", ErrMalformedHeader)
	}
	return matchSHA256(secrets, [][sha256.Size]byte{[sha256.Size]byte(want[:sha256.Size])}, r.Body)
}

// Identify implements Scheme from the headers, after checking that the body
// is a JSON object. ID is the event id header, which Shopify documents as
// the value that repeats across duplicate deliveries of one event, falling
// back to the webhook id for deliveries that carry none; both are kept in
// Attributes ("event_id", "webhook_id", and "api_version" when sent).
// Account is the shop domain (required: one app endpoint serves many shops),
// which must look like a host name ([a-z0-9.-], at most 255 bytes). Type is
// the topic (required), e.g. "orders/create". Created is the triggered-at
// header when it parses as RFC 3339 and zero otherwise: it is advisory, and
// Shopify has changed its precision before.
func (s *Shopify) Identify(r Request) (Identity, error) {
	bad := func(what string, err error) (Identity, error) {
		if err != nil {
			return Identity{}, fmt.Errorf("%w: shopify: %s: %v", ErrInvalidPayload, what, err)
		}
		return Identity{}, fmt.Errorf("%w: shopify: %s", ErrInvalidPayload, what)
	}
	if err := jsonFields(r.Body, nil, nil); err != nil {
		return bad("body is not a JSON object", nil)
	}
	topic, err := shopifyHeader(r.Header, shopifyTopic)
	if err != nil || topic == "" || len(topic) > MaxIdentity || !utf8.ValidString(topic) {
		return bad("missing or unusable topic", err)
	}
	domain, err := shopifyHeader(r.Header, shopifyShopDomain)
	if err != nil || !shopifyValidDomain(domain) {
		return bad("missing or unusable shop domain", err)
	}
	eventID, err := shopifyHeader(r.Header, shopifyEventID)
	if err != nil || !shopifyValidID(eventID) {
		return bad("unusable event id", err)
	}
	webhookID, err := shopifyHeader(r.Header, shopifyWebhookID)
	if err != nil || !shopifyValidID(webhookID) {
		return bad("unusable webhook id", err)
	}
	apiVersion, err := shopifyHeader(r.Header, shopifyAPIVersion)
	if err != nil || !shopifyValidID(apiVersion) {
		return bad("unusable api version", err)
	}
	triggeredAt, err := shopifyHeader(r.Header, shopifyTriggeredAt)
	if err != nil {
		return bad("triggered-at", err)
	}

	out := Identity{ID: eventID, Type: topic, Account: domain, Attributes: make(map[string]string, 3)}
	if out.ID == "" {
		out.ID = webhookID
	}
	if out.ID == "" {
		return bad("neither an event id nor a webhook id", nil)
	}
	if eventID != "" {
		out.Attributes["event_id"] = eventID
	}
	if webhookID != "" {
		out.Attributes["webhook_id"] = webhookID
	}
	if apiVersion != "" {
		out.Attributes["api_version"] = apiVersion
	}
	if c, err := time.Parse(time.RFC3339Nano, triggeredAt); err == nil {
		out.Created = c
	}
	return out, nil
}

// shopifyValidID accepts "" (absent) or valid UTF-8 of at most MaxIdentity
// bytes.
func shopifyValidID(s string) bool {
	return len(s) <= MaxIdentity && utf8.ValidString(s)
}

// shopifyValidDomain accepts a non-empty host name of lower-case letters,
// digits, dots and hyphens, at most ShopifyMaxDomain bytes.
func shopifyValidDomain(s string) bool {
	if s == "" || len(s) > ShopifyMaxDomain {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// SignShopify returns the X-Shopify-Hmac-Sha256 value for body signed with
// secret.
func SignShopify(body, secret []byte) string {
	return base64.StdEncoding.EncodeToString(macOf(sha256.New, secret, body))
}

// Sign implements Signer: it sets the HMAC header for r's body, under the
// un-prefixed name when the request already uses un-prefixed headers (and
// no prefixed topic) and under X-Shopify-Hmac-Sha256 otherwise; now is
// unused.
func (s *Shopify) Sign(r *Request, key []byte, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	name := ShopifyHMACHeader
	if len(r.Header[ShopifyEventsTopicHeader]) > 0 && len(r.Header[ShopifyTopicHeader]) == 0 {
		name = ShopifyEventsHMACHeader
	}
	r.Header.Set(name, SignShopify(r.Body, key))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Shopify) KeptHeaders() []string {
	return []string{ShopifyHMACHeader, ShopifyTopicHeader, ShopifyShopDomainHeader, ShopifyWebhookIDHeader, ShopifyEventIDHeader, ShopifyTriggeredAtHeader, ShopifyAPIVersionHeader,
		ShopifyEventsHMACHeader, ShopifyEventsTopicHeader, ShopifyEventsShopDomainHeader, ShopifyEventsWebhookIDHeader, ShopifyEventsEventIDHeader, ShopifyEventsTriggeredAtHeader, ShopifyEventsAPIVersionHeader}
}
