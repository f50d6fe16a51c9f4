// Package signature proves who sent a webhook. Each provider's scheme is a
// small value built from data (header names, signed string, encoding,
// tolerance), verifies the raw request bytes with constant-time comparison and
// extracts the provider's own event identity. The package is pure: no AWS, no
// clock reads (now is an argument), no logging.
package signature

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// Causes of a failed verification. They are distinct for logs and metrics;
// the HTTP answer is the same 401 for every one of them.
var (
	// ErrNotSigned means the request carries no signature header.
	ErrNotSigned = errors.New("signature: request not signed")
	// ErrMalformedHeader means the signature header cannot be parsed.
	ErrMalformedHeader = errors.New("signature: malformed signature header")
	// ErrTooOld means the signed timestamp is older than the tolerance.
	ErrTooOld = errors.New("signature: timestamp older than tolerance")
	// ErrTooNew means the signed timestamp is further in the future than the
	// tolerance allows for clock skew.
	ErrTooNew = errors.New("signature: timestamp in the future beyond tolerance")
	// ErrNoMatch means no signature matched any configured secret.
	ErrNoMatch = errors.New("signature: no signature matches")
	// ErrNoSecret means the source has no usable signing secret configured.
	ErrNoSecret = errors.New("signature: no signing secret configured")
)

// ErrInvalidPayload is returned by Identify when a verified body lacks the
// fields that identify the event (the HTTP edge answers 400).
var ErrInvalidPayload = errors.New("signature: invalid payload")

// DefaultTolerance is the timestamp window used when a source sets none.
const DefaultTolerance = 5 * time.Minute

// Request is the part of an HTTP request a scheme needs: the raw body bytes
// exactly as sent, and headers with canonical names.
type Request struct {
	Method string
	Header http.Header
	Body   []byte
}

// Identity is what a provider says about an event: its id (the dedupe key),
// its type and, where the payload carries it, its creation time.
type Identity struct {
	ID      string
	Type    string
	Created time.Time
}

// Scheme verifies one provider's signatures and reads its event identity.
type Scheme interface {
	// Verify returns nil when any signature on r matches any of secrets,
	// within the scheme's tolerance around now; otherwise one of the Err*
	// causes above, possibly wrapped.
	Verify(r Request, secrets [][]byte, now time.Time) error
	// Identify extracts the provider's event identity from a verified
	// request; ErrInvalidPayload (wrapped) when it cannot.
	Identify(r Request) (Identity, error)
}

// Options tune a scheme. The zero value means the scheme's defaults.
type Options struct {
	// Tolerance is the accepted age, and clock skew into the future, of a
	// signed timestamp. Zero means DefaultTolerance; negative is invalid.
	Tolerance time.Duration
}

type constructor func(Options) (Scheme, error)

var kinds = map[string]constructor{
	"stripe": func(o Options) (Scheme, error) { return NewStripe(o) },
}

// New returns the scheme of the given kind.
func New(kind string, o Options) (Scheme, error) {
	c, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("signature: unknown kind %q (known: %v)", kind, Kinds())
	}
	if o.Tolerance < 0 {
		return nil, fmt.Errorf("signature: %s: negative tolerance %s", kind, o.Tolerance)
	}
	return c(o)
}

// Kinds lists the scheme kinds New accepts, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkTimestamp enforces tolerance in both directions.
func checkTimestamp(ts, now time.Time, tol time.Duration) error {
	if now.Sub(ts) > tol {
		return ErrTooOld
	}
	if ts.Sub(now) > tol {
		return ErrTooNew
	}
	return nil
}

// parseUnix parses a non-negative decimal of ASCII digits only (no sign, no
// spaces, no unicode digits) as seconds since the epoch.
func parseUnix(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 12 {
		return time.Time{}, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		n = n*10 + int64(c-'0')
	}
	return time.Unix(n, 0), true
}
