package signature

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"time"
)

// PaystackSignatureHeader carries the hex HMAC-SHA512 of the body.
const PaystackSignatureHeader = "X-Paystack-Signature"

// Paystack verifies Paystack's `x-paystack-signature: <hex>`, an
// HMAC-SHA512 of the raw body keyed with the account's secret key. No
// timestamp is signed. An event carries no id of its own ({"event":
// "charge.success","data":{…}}), and one object can have several events
// of one type (invoice.update), so the id is the signed body's hash: a
// retry, byte for byte the same, is a duplicate.
type Paystack struct{}

var (
	_ Scheme = (*Paystack)(nil)
	_ Signer = (*Paystack)(nil)
)

// NewPaystack returns the Paystack scheme. It refuses a tolerance, a URL
// and HMAC options.
func NewPaystack(o Options) (*Paystack, error) {
	if err := checkOptions("paystack", o, 0); err != nil {
		return nil, err
	}
	return &Paystack{}, nil
}

// Verify implements Scheme. now is unused.
func (p *Paystack) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, PaystackSignatureHeader, "", sha512.New, sha512.Size, r.Body, secrets)
}

var paystackFields = []string{"event", "data"}

// Identify implements Scheme. ID is "sha256:<hex>" of the body; Type is
// event ("charge.success"); data must be an object.
func (p *Paystack) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, paystackFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: paystack: body is not a JSON object", ErrInvalidPayload)
	}
	typ, err := identityString("paystack", "event", f[0])
	if err != nil {
		return Identity{}, err
	}
	if len(f[1]) == 0 || f[1][0] != '{' {
		return Identity{}, fmt.Errorf("%w: paystack: no data object", ErrInvalidPayload)
	}
	sum := sha256.Sum256(r.Body)
	return Identity{ID: "sha256:" + hex.EncodeToString(sum[:]), Type: typ}, nil
}

// Sign implements Signer: it sets x-paystack-signature for r.Body.
func (p *Paystack) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, PaystackSignatureHeader, hex.EncodeToString(macOf(sha512.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (p *Paystack) KeptHeaders() []string {
	return []string{PaystackSignatureHeader}
}
