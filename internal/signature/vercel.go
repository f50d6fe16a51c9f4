package signature

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"
)

// VercelSignatureHeader carries the hex HMAC-SHA1 of the body.
const VercelSignatureHeader = "X-Vercel-Signature"

// Vercel verifies Vercel's `x-vercel-signature: <hex>`, an HMAC-SHA1 of
// the raw body keyed with the webhook's secret (or the integration's
// client secret). SHA-1 is the only MAC Vercel offers; HMAC-SHA1 remains
// sound as a MAC. No timestamp is signed.
type Vercel struct{}

var (
	_ Scheme = (*Vercel)(nil)
	_ Signer = (*Vercel)(nil)
)

// NewVercel returns the Vercel scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewVercel(o Options) (*Vercel, error) {
	if err := checkOptions("vercel", o, 0); err != nil {
		return nil, err
	}
	return &Vercel{}, nil
}

// Verify implements Scheme. now is unused.
func (v *Vercel) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, VercelSignatureHeader, "", sha1.New, sha1.Size, r.Body, secrets)
}

var vercelFields = []string{"id", "type", "createdAt"}

// Identify implements Scheme. ID is the body's id, the event's; Type is
// type ("deployment.created"); Created is createdAt (milliseconds).
func (v *Vercel) Identify(r Request) (Identity, error) {
	var f [3][]byte
	if err := jsonFields(r.Body, vercelFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: vercel: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("vercel", "id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("vercel", "type", f[1])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ}
	if jsonPresent(f[2]) {
		ms, ok := jsonInt(f[2])
		if !ok || ms < 0 || ms/1000 > maxUnixSeconds {
			return Identity{}, fmt.Errorf("%w: vercel: createdAt is not unix milliseconds", ErrInvalidPayload)
		}
		out.Created = time.UnixMilli(ms).UTC()
	}
	return out, nil
}

// Sign implements Signer: it sets x-vercel-signature for r.Body.
func (v *Vercel) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, VercelSignatureHeader, hex.EncodeToString(macOf(sha1.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (v *Vercel) KeptHeaders() []string {
	return []string{VercelSignatureHeader}
}
