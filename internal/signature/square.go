package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// SquareHeader is the header carrying Square's HMAC-SHA256 signature.
const SquareHeader = "X-Square-Hmacsha256-Signature"

// SquareLegacyHeader carries Square's older HMAC-SHA1 signature. Verify
// never reads it: a request that has only this header is ErrNotSigned.
const SquareLegacyHeader = "X-Square-Signature"

// Square verifies `x-square-hmacsha256-signature: <base64>`: an
// HMAC-SHA256, keyed with the subscription's signature key, over the
// notification URL followed by the body. The URL is the one registered with
// Square, byte for byte, and comes from configuration (Options.URL): the
// request's own path cannot be trusted to match it behind API Gateway's
// custom domains. Square signs no timestamp, so there is no tolerance and
// replays are absorbed only by the event_id dedupe key. Several configured
// keys are tried in turn, so a regenerated key can be rolled out without a
// gap.
type Square struct {
	url  string
	urlb []byte // url as bytes, converted once rather than per secret
}

var (
	_ Scheme = (*Square)(nil)
	_ Signer = (*Square)(nil)
)

// NewSquare returns the Square scheme for the notification URL o.URL, which
// is required and must be an absolute http(s) URL. Square signs no
// timestamp, so o.Tolerance must be zero; o.HMAC must be empty.
func NewSquare(o Options) (*Square, error) {
	if err := checkOptions("square", o, usesURL); err != nil {
		return nil, err
	}
	if o.URL == "" {
		return nil, errors.New("signature: square: url (the notification URL registered with Square) is required")
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("signature: square: url: %v", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("signature: square: url %q is not an absolute http(s) URL without fragment", o.URL)
	}
	return &Square{url: o.URL, urlb: []byte(o.URL)}, nil
}

// squareB64 is the strict standard alphabet: one signature, one encoding.
var squareB64 = base64.StdEncoding.Strict()

// Verify implements Scheme; now is unused because Square signs no
// timestamp. A value that is not the base64 of 32 bytes is
// ErrMalformedHeader.
func (s *Square) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, SquareHeader)
	if err != nil {
		return err
	}
	var (
		src  [44]byte
		want [sha256.Size + 1]byte
	)
	if len(h) != len(src) {
		return fmt.Errorf("%w: %s is not base64 of 32 bytes", ErrMalformedHeader, SquareHeader)
	}
	if n, err := squareB64.Decode(want[:], src[:copy(src[:], h)]); err != nil || n != sha256.Size {
		return fmt.Errorf("%w: %s is not base64 of 32 bytes", ErrMalformedHeader, SquareHeader)
	}
	return matchSHA256(secrets, [][sha256.Size]byte{[sha256.Size]byte(want[:sha256.Size])}, s.urlb, r.Body)
}

var squareFields = []string{"event_id", "type", "created_at", "merchant_id"}

// Identify implements Scheme: ID is the body's event_id, which Square keeps
// across retries; Type is type; Created is created_at (RFC 3339). The
// merchant the event belongs to is kept as Attributes["merchant_id"].
func (s *Square) Identify(r Request) (Identity, error) {
	var f [4][]byte
	if err := jsonFields(r.Body, squareFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: square: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("square", "event_id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("square", "type", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("square", "created_at", f[2])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ, Created: created}
	if m, ok := jsonString(f[3]); ok && m != "" {
		out.Attributes = map[string]string{"merchant_id": m}
	}
	return out, nil
}

// SignSquare returns the x-square-hmacsha256-signature value for body sent
// to notificationURL, signed with key.
func SignSquare(notificationURL string, body, key []byte) string {
	return base64.StdEncoding.EncodeToString(macOf(sha256.New, key, []byte(notificationURL), body))
}

// Sign implements Signer: it sets x-square-hmacsha256-signature for r's
// body and the scheme's URL; now is unused.
func (s *Square) Sign(r *Request, key []byte, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(SquareHeader, SignSquare(s.url, r.Body, key))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Square) KeptHeaders() []string {
	return []string{SquareHeader, SquareLegacyHeader}
}
