package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Sentry integration webhook headers.
const (
	SentrySignatureHeader = "Sentry-Hook-Signature"
	SentryResourceHeader  = "Sentry-Hook-Resource"
	SentryTimestampHeader = "Sentry-Hook-Timestamp"
	SentryRequestIDHeader = "Request-Id"
)

// Sentry verifies Sentry integration platform webhooks:
// `Sentry-Hook-Signature: <hex>`, an HMAC-SHA256 of the raw body keyed
// with the integration's client secret. Sentry-Hook-Timestamp is not
// signed, so there is no tolerance.
type Sentry struct{}

var (
	_ Scheme = (*Sentry)(nil)
	_ Signer = (*Sentry)(nil)
)

// NewSentry returns the Sentry scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewSentry(o Options) (*Sentry, error) {
	if err := checkOptions("sentry", o, 0); err != nil {
		return nil, err
	}
	return &Sentry{}, nil
}

// Verify implements Scheme. now is unused.
func (s *Sentry) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, SentrySignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var sentryFields = []string{"action"}

// Identify implements Scheme. ID is Request-ID (outside the signature: the
// providers table's footnote); Type is Sentry-Hook-Resource and, when the
// signed body has an action, ".action" ("issue.created"); the body must be
// a JSON object.
func (s *Sentry) Identify(r Request) (Identity, error) {
	var f [1][]byte
	if err := jsonFields(r.Body, sentryFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: sentry: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := githubIdentityHeader(r.Header, SentryRequestIDHeader)
	if err != nil {
		return Identity{}, err
	}
	typ, err := githubIdentityHeader(r.Header, SentryResourceHeader)
	if err != nil {
		return Identity{}, err
	}
	if jsonPresent(f[0]) {
		action, ok := jsonString(f[0])
		if !ok || len(typ)+1+len(action) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: sentry: action is not a string", ErrInvalidPayload)
		}
		if action != "" {
			typ += "." + action
		}
	}
	return Identity{ID: id, Type: typ}, nil
}

// Sign implements Signer: it sets Sentry-Hook-Signature for r.Body.
func (s *Sentry) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, SentrySignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Sentry) KeptHeaders() []string {
	return []string{SentrySignatureHeader, SentryResourceHeader, SentryTimestampHeader, SentryRequestIDHeader}
}
