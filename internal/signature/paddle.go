package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PaddleHeader is the header carrying Paddle Billing's signature.
const PaddleHeader = "Paddle-Signature"

// paddleMaxSigs bounds the h1 values one header may carry.
const paddleMaxSigs = 8

// Paddle verifies Paddle Billing's `Paddle-Signature: ts=<unix>;h1=<hex>`:
// an HMAC-SHA256, keyed with the notification destination's whole secret
// ("pdl_ntfset_…"), over "<ts>:<body>". Several h1 values may be sent while
// a secret is rotated; any may match. Other keys (h2, …) are ignored, never
// a fallback.
//
// Tolerance: Paddle's SDKs refuse a ts older than 5 seconds
// (MAX_VALID_TIME_DIFFERENCE in paddle-node-sdk
// src/notifications/helpers/webhooks-validator.ts, maximum_variance in
// paddle-python-sdk paddle_billing/Notifications/Verifier.py) and do not
// check the future; Paddle's documentation states no window. The default
// here is DefaultTolerance (5 minutes) in both directions: 5 seconds is
// shorter than a Lambda cold start plus ordinary clock skew, and a replay
// inside the window is absorbed by the event_id dedupe key (R9). Set
// Options.Tolerance to 5*time.Second for the SDKs' behaviour.
type Paddle struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Paddle)(nil)
	_ Signer = (*Paddle)(nil)
)

// NewPaddle returns the Paddle Billing scheme. Setting o.URL or o.HMAC is an
// error: the scheme uses neither.
func NewPaddle(o Options) (*Paddle, error) {
	if err := checkOptions("paddle", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Paddle{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme.
func (p *Paddle) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, PaddleHeader)
	if err != nil {
		return err
	}
	var (
		tsRaw string
		seenT bool
		sigs  [paddleMaxSigs][sha256.Size]byte
		n     int
		src   [2 * sha256.Size]byte
	)
	for part := range strings.SplitSeq(h, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%w: pair without '='", ErrMalformedHeader)
		}
		switch k {
		case "ts":
			if seenT {
				return fmt.Errorf("%w: repeated ts", ErrMalformedHeader)
			}
			seenT, tsRaw = true, v
		case "h1":
			if len(v) != hex.EncodedLen(sha256.Size) {
				continue // cannot match; other h1 values may
			}
			var d [sha256.Size]byte
			if _, err := hex.Decode(d[:], src[:copy(src[:], v)]); err != nil {
				continue
			}
			if n == len(sigs) {
				return fmt.Errorf("%w: more than %d h1 signatures", ErrMalformedHeader, paddleMaxSigs)
			}
			sigs[n] = d
			n++
		}
	}
	ts, ok := parseUnix(tsRaw)
	// The HMAC covers ts as sent; Paddle writes the canonical decimal, so a
	// leading zero is refused: one timestamp, one signed string.
	if !ok || (len(tsRaw) > 1 && tsRaw[0] == '0') {
		return fmt.Errorf("%w: bad ts", ErrMalformedHeader)
	}
	if n == 0 {
		return fmt.Errorf("%w: no h1 signature", ErrNoMatch)
	}
	if err := checkTimestamp(ts, now, p.tolerance); err != nil {
		return err
	}
	var prefix [13]byte // ≤12 digits and ':'
	pre := append(append(prefix[:0], tsRaw...), ':')
	return matchSHA256(secrets, sigs[:n], pre, r.Body)
}

var paddleFields = []string{"event_id", "event_type", "occurred_at", "notification_id"}

// Identify implements Scheme: ID is the body's event_id, which Paddle keeps
// across retries of one event; Type is event_type; Created is occurred_at
// (RFC 3339). The notification_id, which names one delivery of the event to
// one destination, is kept as Attributes["notification_id"].
func (p *Paddle) Identify(r Request) (Identity, error) {
	var f [4][]byte
	if err := jsonFields(r.Body, paddleFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: paddle: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("paddle", "event_id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("paddle", "event_type", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("paddle", "occurred_at", f[2])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ, Created: created}
	if ntf, ok := jsonString(f[3]); ok && ntf != "" {
		out.Attributes = map[string]string{"notification_id": ntf}
	}
	return out, nil
}

// SignPaddle returns a Paddle-Signature value for body signed at t with
// secret, as Paddle sends it.
func SignPaddle(body, secret []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{':'})
	mac.Write(body)
	return "ts=" + ts + ";h1=" + hex.EncodeToString(mac.Sum(nil))
}

// Sign implements Signer: it sets Paddle-Signature for r's body.
func (p *Paddle) Sign(r *Request, key []byte, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(PaddleHeader, SignPaddle(r.Body, key, now))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (p *Paddle) KeptHeaders() []string {
	return []string{PaddleHeader}
}
