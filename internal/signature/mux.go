package signature

import (
	"fmt"
	"net/http"
	"time"
)

// MuxSignatureHeader carries Mux's webhook signature.
const MuxSignatureHeader = "Mux-Signature"

// Mux verifies `Mux-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`: an
// HMAC-SHA256, keyed with the webhook's signing secret, over
// "<t>.<body>" — Stripe's format (verifyTV1). Any v1 may match; other
// versions are ignored, as @mux/mux-node's webhooks.verifySignature does.
// The tolerance defaults to 5 minutes both ways, the SDK's threshold (which
// checks only the past).
type Mux struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Mux)(nil)
	_ Signer = (*Mux)(nil)
)

// NewMux returns the Mux scheme. Setting o.URL or o.HMAC is an error.
func NewMux(o Options) (*Mux, error) {
	if err := checkOptions("mux", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Mux{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme.
func (m *Mux) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, MuxSignatureHeader)
	if err != nil {
		return err
	}
	return verifyTV1(h, r.Body, secrets, now, m.tolerance)
}

var muxFields = []string{"id", "type", "created_at"}

// Identify implements Scheme. ID is the body's id, the event's UUID, kept
// on every retry (the attempts array grows instead); Type is type
// ("video.asset.ready"); Created is created_at.
func (m *Mux) Identify(r Request) (Identity, error) {
	var f [3][]byte
	if err := jsonFields(r.Body, muxFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: mux: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("mux", "id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("mux", "type", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("mux", "created_at", f[2])
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// SignMux returns a Mux-Signature value for body signed at t with secret.
func SignMux(body, secret []byte, t time.Time) string { return signTV1(body, secret, t) }

// Sign implements Signer: it sets Mux-Signature for r's body.
func (m *Mux) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(MuxSignatureHeader, SignMux(r.Body, key, now))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (m *Mux) KeptHeaders() []string {
	return []string{MuxSignatureHeader}
}
