package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

// TypeformSignatureHeader carries `sha256=<base64 HMAC-SHA256 of the body>`.
const TypeformSignatureHeader = "Typeform-Signature"

// Typeform verifies Typeform's `Typeform-Signature: sha256=<base64>`, an
// HMAC-SHA256 of the raw body keyed with the webhook's secret. No
// timestamp is signed. The body's event_id names the event on every retry.
type Typeform struct{}

var (
	_ Scheme = (*Typeform)(nil)
	_ Signer = (*Typeform)(nil)
)

// NewTypeform returns the Typeform scheme. It refuses a tolerance, a URL
// and HMAC options.
func NewTypeform(o Options) (*Typeform, error) {
	if err := checkOptions("typeform", o, 0); err != nil {
		return nil, err
	}
	return &Typeform{}, nil
}

// Verify implements Scheme. now is unused.
func (t *Typeform) Verify(r Request, secrets [][]byte, now time.Time) error {
	return base64BodyVerify(r.Header, TypeformSignatureHeader, "sha256=", sha256.New, sha256.Size, r.Body, secrets)
}

var (
	typeformFields         = []string{"event_id", "event_type", "form_response"}
	typeformResponseFields = []string{"submitted_at", "form_id"}
)

// Identify implements Scheme. ID is event_id; Type is event_type
// ("form_response"); Created is form_response.submitted_at when present;
// form_response.form_id is kept as an attribute.
func (t *Typeform) Identify(r Request) (Identity, error) {
	var f [3][]byte
	var fr [2][]byte
	if err := jsonFieldsNested(r.Body, typeformFields, f[:], &nested{parent: "form_response", keys: typeformResponseFields, out: fr[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: typeform: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("typeform", "event_id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("typeform", "event_type", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("typeform", "form_response.submitted_at", fr[0])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ, Created: created}
	if form, ok := jsonString(fr[1]); ok && form != "" && len(form) <= MaxIdentity {
		out.Attributes = map[string]string{"form_id": form}
	}
	return out, nil
}

// Sign implements Signer: it sets Typeform-Signature for r.Body.
func (t *Typeform) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(TypeformSignatureHeader, "sha256="+base64.StdEncoding.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (t *Typeform) KeptHeaders() []string {
	return []string{TypeformSignatureHeader}
}
