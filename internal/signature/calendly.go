package signature

import (
	"fmt"
	"time"
)

// CalendlySignatureHeader carries Calendly's webhook signature.
const CalendlySignatureHeader = "Calendly-Webhook-Signature"

// CalendlyTolerance is the window Calendly's documentation suggests for
// the signed timestamp.
const CalendlyTolerance = 3 * time.Minute

// Calendly verifies `Calendly-Webhook-Signature: t=<unix>,v1=<hex>`: an
// HMAC-SHA256, keyed with the webhook subscription's signing key, over
// "<t>.<body>" — Stripe's format (verifyTV1). The tolerance defaults to
// CalendlyTolerance both ways.
type Calendly struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Calendly)(nil)
	_ Signer = (*Calendly)(nil)
)

// NewCalendly returns the Calendly scheme. Setting o.URL or o.HMAC is an
// error.
func NewCalendly(o Options) (*Calendly, error) {
	if err := checkOptions("calendly", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Calendly{tolerance: toleranceOr(o, CalendlyTolerance)}, nil
}

// Verify implements Scheme.
func (c *Calendly) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, CalendlySignatureHeader)
	if err != nil {
		return err
	}
	return verifyTV1(h, r.Body, secrets, now, c.tolerance)
}

var (
	calendlyFields        = []string{"event", "created_at", "payload"}
	calendlyPayloadFields = []string{"uri"}
)

// Identify implements Scheme. A Calendly event has no id of its own: ID is
// "<event> <payload.uri> <created_at>", all signed — what the event is,
// what it is about, and when it happened, since one resource can have one
// event more than once (an event type updated again, a no-show marked,
// unmarked and marked again); a retry keeps all three. Type is event
// ("invitee.created"); Created is created_at.
func (c *Calendly) Identify(r Request) (Identity, error) {
	var f [3][]byte
	var p [1][]byte
	if err := jsonFieldsNested(r.Body, calendlyFields, f[:], &nested{parent: "payload", keys: calendlyPayloadFields, out: p[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: calendly: body is not a JSON object", ErrInvalidPayload)
	}
	typ, err := identityString("calendly", "event", f[0])
	if err != nil {
		return Identity{}, err
	}
	uri, err := identityString("calendly", "payload.uri", p[0])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("calendly", "created_at", f[1])
	if err != nil {
		return Identity{}, err
	}
	at, _ := jsonString(f[1])
	id := typ + " " + uri
	if at != "" {
		id += " " + at
	}
	if len(id) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: calendly: event key over %d bytes", ErrInvalidPayload, MaxIdentity)
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// SignCalendly returns a Calendly-Webhook-Signature value for body signed
// at t with key.
func SignCalendly(body, key []byte, t time.Time) string { return signTV1(body, key, t) }

// Sign implements Signer.
func (c *Calendly) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, CalendlySignatureHeader, SignCalendly(r.Body, key, now))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (c *Calendly) KeptHeaders() []string {
	return []string{CalendlySignatureHeader}
}
