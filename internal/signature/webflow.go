package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// Webflow's webhook headers.
const (
	WebflowSignatureHeader = "X-Webflow-Signature"
	WebflowTimestampHeader = "X-Webflow-Timestamp"
)

// Webflow verifies Webflow's webhooks: `x-webflow-timestamp: <unix ms>` and
// `x-webflow-signature: <hex>`, an HMAC-SHA256, keyed with the webhook's
// secret, over "<timestamp>:<body>". The tolerance, 5 minutes by default
// as Webflow's documentation suggests, applies both ways. The timestamp is
// checked before the MAC.
type Webflow struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Webflow)(nil)
	_ Signer = (*Webflow)(nil)
)

// NewWebflow returns the Webflow scheme. Setting o.URL or o.HMAC is an
// error.
func NewWebflow(o Options) (*Webflow, error) {
	if err := checkOptions("webflow", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Webflow{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme.
func (w *Webflow) Verify(r Request, secrets [][]byte, now time.Time) error {
	sigHex, err := header(r.Header, WebflowSignatureHeader)
	if err != nil {
		return err
	}
	raw, ts, err := headerMillis(r.Header, WebflowTimestampHeader)
	if err != nil {
		return err
	}
	var sig [1][sha256.Size]byte
	if !unhex(sig[0][:], sigHex) {
		return fmt.Errorf("%w: %s is not 32 hex bytes", ErrMalformedHeader, WebflowSignatureHeader)
	}
	if err := checkTimestamp(ts, now, w.tolerance); err != nil {
		return err
	}
	return matchSHA256(secrets, sig[:], []byte(raw), []byte{':'}, r.Body)
}

var webflowFields = []string{"triggerType", "payload"}

// Identify implements Scheme. A delivery has no event id, and a body can
// repeat one for a different event (inventory back to a quantity it had):
// ID is the signed x-webflow-timestamp and the body's hash,
// "<timestamp> sha256:<hex>", so two events are never merged; a retry,
// signed at a new timestamp, is stored again. Type is triggerType
// ("form_submission"). payload must be an object.
func (w *Webflow) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, webflowFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: webflow: body is not a JSON object", ErrInvalidPayload)
	}
	typ, err := identityString("webflow", "triggerType", f[0])
	if err != nil {
		return Identity{}, err
	}
	if len(f[1]) == 0 || f[1][0] != '{' {
		return Identity{}, fmt.Errorf("%w: webflow: no payload object", ErrInvalidPayload)
	}
	ts, _, err := headerMillis(r.Header, WebflowTimestampHeader)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: webflow: %v", ErrInvalidPayload, err)
	}
	sum := sha256.Sum256(r.Body)
	return Identity{ID: ts + " sha256:" + hex.EncodeToString(sum[:]), Type: typ}, nil
}

// SignWebflow returns the x-webflow-signature of body at t (and the
// timestamp header's value).
func SignWebflow(body, key []byte, t time.Time) (sig, ts string) {
	ts = strconv.FormatInt(t.UnixMilli(), 10)
	return hex.EncodeToString(macOf(sha256.New, key, []byte(ts), []byte{':'}, body)), ts
}

// Sign implements Signer: it sets both headers for r.Body at now.
func (w *Webflow) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	sig, ts := SignWebflow(r.Body, key, now)
	setHeader(r, WebflowTimestampHeader, ts)
	setHeader(r, WebflowSignatureHeader, sig)
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (w *Webflow) KeptHeaders() []string {
	return []string{WebflowSignatureHeader, WebflowTimestampHeader}
}
