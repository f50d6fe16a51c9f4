package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// CalcomSignatureHeader carries the hex HMAC-SHA256 of the body.
const CalcomSignatureHeader = "X-Cal-Signature-256"

// Calcom verifies Cal.com's `X-Cal-Signature-256: <hex>`, an HMAC-SHA256
// of the raw body keyed with the webhook's secret. No timestamp is signed.
// A delivery ({"triggerEvent":"BOOKING_CREATED","createdAt":…,
// "payload":{…}}) carries no event id, so the id is the signed body's
// hash: a retry, byte for byte the same, is a duplicate.
type Calcom struct{}

var (
	_ Scheme = (*Calcom)(nil)
	_ Signer = (*Calcom)(nil)
)

// NewCalcom returns the Cal.com scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewCalcom(o Options) (*Calcom, error) {
	if err := checkOptions("calcom", o, 0); err != nil {
		return nil, err
	}
	return &Calcom{}, nil
}

// Verify implements Scheme. now is unused.
func (c *Calcom) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, CalcomSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var calcomFields = []string{"triggerEvent", "createdAt"}

// Identify implements Scheme. ID is "sha256:<hex>" of the body; Type is
// triggerEvent; Created is createdAt (RFC 3339).
func (c *Calcom) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, calcomFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: calcom: body is not a JSON object", ErrInvalidPayload)
	}
	typ, err := identityString("calcom", "triggerEvent", f[0])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("calcom", "createdAt", f[1])
	if err != nil {
		return Identity{}, err
	}
	sum := sha256.Sum256(r.Body)
	return Identity{ID: "sha256:" + hex.EncodeToString(sum[:]), Type: typ, Created: created}, nil
}

// Sign implements Signer: it sets X-Cal-Signature-256 for r.Body.
func (c *Calcom) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, CalcomSignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (c *Calcom) KeptHeaders() []string {
	return []string{CalcomSignatureHeader}
}
