package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// Razorpay's webhook headers.
const (
	// RazorpaySignatureHeader carries the hex HMAC-SHA256 of the body.
	RazorpaySignatureHeader = "X-Razorpay-Signature"
	// RazorpayEventIDHeader carries the event's id, the same on every
	// retry of it.
	RazorpayEventIDHeader = "X-Razorpay-Event-Id"
)

// Razorpay verifies `X-Razorpay-Signature: <hex>`, an HMAC-SHA256 of the raw
// body keyed with the webhook's secret, as Razorpay's SDKs do
// (razorpay-go's utils.VerifyWebhookSignature). Razorpay signs no
// timestamp, so there is no tolerance, and sends one signature: while a
// secret is changed, configure both and either verifies.
type Razorpay struct{}

var (
	_ Scheme = (*Razorpay)(nil)
	_ Signer = (*Razorpay)(nil)
)

// NewRazorpay returns the Razorpay scheme. It refuses a tolerance, a URL
// and HMAC options.
func NewRazorpay(o Options) (*Razorpay, error) {
	if err := checkOptions("razorpay", o, 0); err != nil {
		return nil, err
	}
	return &Razorpay{}, nil
}

// Verify implements Scheme. now is unused.
func (p *Razorpay) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, RazorpaySignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var razorpayFields = []string{"entity", "event", "created_at", "account_id"}

// Identify implements Scheme. ID is X-Razorpay-Event-Id, the id Razorpay
// documents for deduplicating retries; it is outside the signature (see
// the providers table's footnote). A delivery without it is keyed by the
// SHA-256 of its signed body ("sha256:<hex>"): a retry of it is then a
// duplicate if it is byte for byte the same. Type is the body's event
// ("payment.captured"); Created is created_at (unix seconds); the
// account_id is kept as an attribute. The body's entity must be "event".
func (p *Razorpay) Identify(r Request) (Identity, error) {
	var f [4][]byte
	if err := jsonFields(r.Body, razorpayFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: razorpay: body is not a JSON object", ErrInvalidPayload)
	}
	if !jsonStringIs(f[0], "event") {
		return Identity{}, fmt.Errorf("%w: razorpay: entity is not \"event\"", ErrInvalidPayload)
	}
	typ, err := identityString("razorpay", "event", f[1])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{Type: typ}
	if jsonPresent(f[2]) {
		n, ok := jsonInt(f[2])
		if !ok || n < 0 || n > maxUnixSeconds {
			return Identity{}, fmt.Errorf("%w: razorpay: created_at is not unix seconds", ErrInvalidPayload)
		}
		out.Created = time.Unix(n, 0).UTC()
	}
	if jsonPresent(f[3]) {
		acct, ok := jsonString(f[3])
		if !ok || len(acct) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: razorpay: account_id is not a string", ErrInvalidPayload)
		}
		if acct != "" {
			out.Attributes = map[string]string{"account_id": acct}
		}
	}
	if len(hvalues(r.Header, RazorpayEventIDHeader)) == 0 {
		sum := sha256.Sum256(r.Body)
		out.ID = "sha256:" + hex.EncodeToString(sum[:])
		return out, nil
	}
	if out.ID, err = githubIdentityHeader(r.Header, RazorpayEventIDHeader); err != nil {
		return Identity{}, err
	}
	return out, nil
}

// Sign implements Signer: it sets X-Razorpay-Signature for r.Body.
func (p *Razorpay) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(RazorpaySignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (p *Razorpay) KeptHeaders() []string {
	return []string{RazorpaySignatureHeader, RazorpayEventIDHeader}
}
