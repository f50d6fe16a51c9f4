package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// Headers of a Linear webhook.
const (
	// LinearSignatureHeader carries hex(HMAC-SHA256(secret, body)), no prefix.
	LinearSignatureHeader = "Linear-Signature"
	// LinearDeliveryHeader is the delivery's UUID, the dedupe key (Linear
	// resends it unchanged when it retries). It is not signed, but Verify
	// requires a valid signature over the body before anything is stored.
	LinearDeliveryHeader = "Linear-Delivery"
	// LinearEventHeader names the entity type ("Issue", "Comment", …).
	LinearEventHeader = "Linear-Event"
)

// LinearDefaultTolerance is the window Linear's SDK allows between the
// body's webhookTimestamp and now, in either direction.
const LinearDefaultTolerance = time.Minute

// Linear verifies Linear webhooks: Linear-Signature is an HMAC of the raw
// body alone, and the replay window comes from the signed body field
// webhookTimestamp (unix milliseconds).
//
// Identity: ID is the Linear-Delivery header (required): Linear's design
// leaves its one delivery id outside the signature, so a captured
// delivery could be stored again under a fresh one — within the signed
// webhookTimestamp's window only (a minute by default). Type is the
// signed body's type (the entity, as Linear-Event names it); the
// Linear-Event header, unsigned, is kept as the attribute linear_event
// and is the type only for a body without one, which then is
// ErrInvalidPayload. Created is the body's createdAt, else
// webhookTimestamp.
type Linear struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Linear)(nil)
	_ Signer = (*Linear)(nil)
)

// NewLinear returns the Linear scheme; the tolerance defaults to
// LinearDefaultTolerance. A URL or generic-HMAC settings are refused.
func NewLinear(o Options) (*Linear, error) {
	if err := checkOptions("linear", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Linear{tolerance: toleranceOr(o, LinearDefaultTolerance)}, nil
}

// Verify implements Scheme. The signature is checked first and the
// timestamp second: the timestamp lives in the body, so before the MAC
// matched it is attacker data that a 401 cause must not be derived from.
// A signed body without a top-level integer webhookTimestamp is
// ErrMalformedHeader (the signed timestamp cannot be read), never accepted
// without one.
func (l *Linear) Verify(r Request, secrets [][]byte, now time.Time) error {
	sigRaw, err := header(r.Header, LinearSignatureHeader)
	if err != nil {
		return err
	}
	var sig [sha256.Size]byte
	if !unhex(sig[:], sigRaw) {
		return fmt.Errorf("%w: %s is not 64 hex digits", ErrMalformedHeader, LinearSignatureHeader)
	}
	if err := matchSHA256(secrets, [][sha256.Size]byte{sig}, r.Body); err != nil {
		return err
	}
	var f [1][]byte
	if err := jsonFields(r.Body, linearTimestampField, f[:]); err != nil {
		return fmt.Errorf("%w: linear: signed body is not a JSON object", ErrMalformedHeader)
	}
	ms, ok := jsonInt(f[0])
	if !ok {
		return fmt.Errorf("%w: linear: signed body has no integer webhookTimestamp", ErrMalformedHeader)
	}
	return checkTimestamp(time.UnixMilli(ms), now, l.tolerance)
}

var linearTimestampField = []string{"webhookTimestamp"}

var linearFields = []string{"type", "createdAt", "webhookTimestamp"}

// Identify implements Scheme with the rules in the type's comment.
func (l *Linear) Identify(r Request) (Identity, error) {
	id := hget(r.Header, LinearDeliveryHeader)
	if !validID(id) || len(hvalues(r.Header, LinearDeliveryHeader)) != 1 {
		return Identity{}, fmt.Errorf("%w: linear: %s missing, repeated, too long or not UTF-8", ErrInvalidPayload, LinearDeliveryHeader)
	}
	var f [3][]byte
	if err := jsonFields(r.Body, linearFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: linear: body is not a JSON object", ErrInvalidPayload)
	}
	typ, ok := jsonString(f[0])
	if !ok || typ == "" {
		return Identity{}, fmt.Errorf("%w: linear: no type in the signed body", ErrInvalidPayload)
	}
	if !validID(typ) {
		return Identity{}, fmt.Errorf("%w: linear: type too long or not UTF-8", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ}
	if h := hget(r.Header, LinearEventHeader); h != "" && validID(h) {
		out.Attributes = map[string]string{"linear_event": h}
	}
	if raw := f[1]; raw != nil && string(raw) != "null" {
		s, ok := jsonString(raw)
		c, err := time.Parse(time.RFC3339Nano, s)
		if !ok || err != nil {
			return Identity{}, fmt.Errorf("%w: linear: createdAt is not RFC 3339", ErrInvalidPayload)
		}
		out.Created = c
	} else if ms, ok := jsonInt(f[2]); ok {
		out.Created = time.UnixMilli(ms)
	}
	return out, nil
}

// Sign implements Signer: it sets Linear-Signature for r's body under key.
// now is not used: Linear's timestamp is the body's webhookTimestamp, which
// the caller writes, since signing must not change the body.
func (l *Linear) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	m := hmac.New(sha256.New, key)
	m.Write(r.Body)
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(LinearSignatureHeader, hex.EncodeToString(m.Sum(nil)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (l *Linear) KeptHeaders() []string {
	return []string{LinearSignatureHeader, LinearDeliveryHeader, LinearEventHeader}
}
