package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// CoinbaseCommerceSignatureHeader carries the hex HMAC-SHA256 of the body.
const CoinbaseCommerceSignatureHeader = "X-Cc-Webhook-Signature"

// CoinbaseCommerce verifies Coinbase Commerce's `X-CC-Webhook-Signature:
// <hex>`, an HMAC-SHA256 of the raw body keyed with the endpoint's shared
// secret, as Coinbase's own coinbase-commerce libraries do
// (WebhookSignature.verify_sig_header). No timestamp is signed, so there
// is no tolerance: a replay is a duplicate of its event id (R9). While a
// secret is changed, configure both and either verifies.
type CoinbaseCommerce struct{}

var (
	_ Scheme = (*CoinbaseCommerce)(nil)
	_ Signer = (*CoinbaseCommerce)(nil)
)

// NewCoinbaseCommerce returns the Coinbase Commerce scheme. It refuses a
// tolerance, a URL and HMAC options.
func NewCoinbaseCommerce(o Options) (*CoinbaseCommerce, error) {
	if err := checkOptions("coinbasecommerce", o, 0); err != nil {
		return nil, err
	}
	return &CoinbaseCommerce{}, nil
}

// Verify implements Scheme. now is unused.
func (c *CoinbaseCommerce) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, CoinbaseCommerceSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var (
	coinbaseCommerceFields      = []string{"event"}
	coinbaseCommerceEventFields = []string{"id", "type", "created_at"}
)

// Identify implements Scheme. The body is one delivery of an event (its
// own id, scheduled_for and attempt_number change on every retry); ID is
// event.id, the event's, the same on every retry; Type is event.type
// ("charge:confirmed"); Created is event.created_at.
func (c *CoinbaseCommerce) Identify(r Request) (Identity, error) {
	var f [1][]byte
	var e [3][]byte
	if err := jsonFieldsNested(r.Body, coinbaseCommerceFields, f[:], &nested{parent: "event", keys: coinbaseCommerceEventFields, out: e[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: coinbasecommerce: body is not a JSON object", ErrInvalidPayload)
	}
	if len(f[0]) == 0 || f[0][0] != '{' {
		return Identity{}, fmt.Errorf("%w: coinbasecommerce: no event object", ErrInvalidPayload)
	}
	id, err := identityString("coinbasecommerce", "event.id", e[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("coinbasecommerce", "event.type", e[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("coinbasecommerce", "event.created_at", e[2])
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// Sign implements Signer: it sets X-CC-Webhook-Signature for r.Body.
func (c *CoinbaseCommerce) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(CoinbaseCommerceSignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (c *CoinbaseCommerce) KeptHeaders() []string {
	return []string{CoinbaseCommerceSignatureHeader}
}
