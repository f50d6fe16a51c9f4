package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StripeHeader is the header carrying Stripe's signature.
const StripeHeader = "Stripe-Signature"

// Stripe verifies `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`: an
// HMAC-SHA256, keyed with the whole `whsec_…` secret, over "<t>.<body>".
// Any v1 may match (Stripe signs with every active secret during rotation);
// v0 and unknown schemes are ignored, never a fallback.
type Stripe struct {
	tolerance time.Duration
}

var _ Scheme = (*Stripe)(nil)

// NewStripe returns the Stripe scheme.
func NewStripe(o Options) (*Stripe, error) {
	if err := checkOptions("stripe", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Stripe{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme.
func (s *Stripe) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, StripeHeader)
	if err != nil {
		return err
	}
	return verifyTV1(h, r.Body, secrets, now, s.tolerance)
}

// verifyTV1 verifies a `t=<unix>,v1=<hex>[,v1=<hex>…]` header value: an
// HMAC-SHA256 over "<t>.<body>", any v1 of at most eight matching any
// secret, t within tolerance of now. Other keys are ignored, never a
// fallback. Stripe's format, which Mux and Calendly took as it is.
func verifyTV1(h string, body []byte, secrets [][]byte, now time.Time, tolerance time.Duration) error {
	var (
		tsRaw string
		seenT bool
		sigs  [8][sha256.Size]byte
		n     int
	)
	for part := range strings.SplitSeq(h, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%w: pair without '='", ErrMalformedHeader)
		}
		switch k {
		case "t":
			if seenT {
				return fmt.Errorf("%w: repeated t", ErrMalformedHeader)
			}
			seenT, tsRaw = true, v
		case "v1":
			if n == len(sigs) {
				return fmt.Errorf("%w: too many signatures", ErrMalformedHeader)
			}
			if len(v) != hex.EncodedLen(sha256.Size) {
				continue // cannot match; other v1 values may
			}
			if _, err := hex.Decode(sigs[n][:], []byte(v)); err != nil {
				continue
			}
			n++
		}
	}
	ts, ok := parseUnix(tsRaw)
	// The HMAC covers tsRaw as sent. Stripe signs the canonical decimal, so a
	// leading zero is refused: one timestamp, one signed string.
	if !ok || (len(tsRaw) > 1 && tsRaw[0] == '0') {
		return fmt.Errorf("%w: bad timestamp", ErrMalformedHeader)
	}
	if n == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrNoMatch)
	}
	if err := checkTimestamp(ts, now, tolerance); err != nil {
		return err
	}
	var prefix [13]byte // ≤12 digits and '.'
	pre := append(append(prefix[:0], tsRaw...), '.')
	return matchSHA256(secrets, sigs[:n], pre, body)
}

var stripeFields = []string{"id", "object", "type", "created"}

// Identify implements Scheme: the body's id, type and created, read in one
// pass that also validates the JSON. An object field, when present and not
// null, must name an event: "event", or "v2.core.event" for thin events.
func (s *Stripe) Identify(r Request) (Identity, error) {
	var f [4][]byte
	if err := jsonFields(r.Body, stripeFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: stripe: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("stripe", "id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("stripe", "type", f[2])
	if err != nil {
		return Identity{}, err
	}
	if jsonPresent(f[1]) {
		if !jsonStringIs(f[1], "event") && !jsonStringIs(f[1], "v2.core.event") {
			return Identity{}, fmt.Errorf("%w: stripe: object is not an event", ErrInvalidPayload)
		}
	}
	out := Identity{ID: id, Type: typ}
	if jsonPresent(f[3]) {
		c, err := parseCreated(f[3])
		if err != nil {
			return Identity{}, fmt.Errorf("%w: stripe: created: %v", ErrInvalidPayload, err)
		}
		out.Created = c
	}
	return out, nil
}

// parseCreated accepts unix seconds (v1 events) or an RFC 3339 string (v2
// event notifications).
func parseCreated(raw []byte) (time.Time, error) {
	if raw[0] == '"' {
		s, ok := jsonString(raw)
		if !ok {
			return time.Time{}, errors.New("not a string")
		}
		return time.Parse(time.RFC3339Nano, s)
	}
	n, ok := jsonInt(raw)
	if !ok {
		return time.Time{}, errors.New("not unix seconds in int64 range")
	}
	return time.Unix(n, 0).UTC(), nil
}

// SignStripe returns a Stripe-Signature header value for body signed at t
// with secret — the counterpart of Verify for tests and local tooling.
func SignStripe(body, secret []byte, t time.Time) string { return signTV1(body, secret, t) }

// signTV1 returns a `t=<unix>,v1=<hex>` value for body signed at t (see
// verifyTV1).
func signTV1(body, secret []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Sign implements Signer: it sets Stripe-Signature for r's body.
func (s *Stripe) Sign(r *Request, key []byte, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(StripeHeader, SignStripe(r.Body, key, now))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Stripe) KeptHeaders() []string {
	return []string{StripeHeader}
}

var stripeTenantFields = []string{"account"}

// Tenant returns the connected account a Connect event names (top-level
// "account"); see Tenanter.
func (s *Stripe) Tenant(r Request) (string, bool) {
	var f [1][]byte
	if err := jsonFields(r.Body, stripeTenantFields, f[:]); err != nil || !jsonPresent(f[0]) {
		return "", false
	}
	a, ok := jsonString(f[0])
	return a, ok && a != ""
}
