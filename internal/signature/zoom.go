package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Headers of a Zoom webhook (Zoom sends them lower-case; these are the
// canonical forms Request.Header holds).
const (
	// ZoomSignatureHeader carries "v0=" + hex(HMAC-SHA256(secret token,
	// "v0:" + timestamp + ":" + body)), Slack's v0 scheme.
	ZoomSignatureHeader = "X-Zm-Signature"
	// ZoomTimestampHeader carries the unix seconds the signature covers.
	ZoomTimestampHeader = "X-Zm-Request-Timestamp"
)

// ZoomURLValidation is the event of Zoom's endpoint validation handshake.
const ZoomURLValidation = "endpoint.url_validation"

// Zoom verifies Zoom's x-zm-signature and reads Zoom event identities.
//
// Zoom bodies carry an event name and event_ts (milliseconds) but no event
// id, and x-zm-trackingid changes with every delivery attempt, so it cannot
// be the key. Zoom's retries resend the same body byte for byte, so the ID
// is event + ":" + event_ts + ":" + hex SHA-256 of the raw body: stable
// across retries, unique for distinct events even when two share a name and
// a millisecond, and still readable. (Were a retry ever re-serialized, it
// would be stored as a second event: delivery stays at-least-once, and
// effects carry their own keys.) Type is event; Created is event_ts.
type Zoom struct {
	v0 slackV0
}

var (
	_ Scheme     = (*Zoom)(nil)
	_ Handshaker = (*Zoom)(nil)
	_ Signer     = (*Zoom)(nil)
)

// NewZoom returns the Zoom scheme; the tolerance defaults to five minutes.
// A URL or generic-HMAC settings are refused.
func NewZoom(o Options) (*Zoom, error) {
	if err := checkOptions("zoom", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Zoom{v0: slackV0{
		sigHeader: ZoomSignatureHeader,
		tsHeader:  ZoomTimestampHeader,
		tolerance: toleranceOr(o, DefaultTolerance),
	}}, nil
}

// Verify implements Scheme: the v0 signature over the raw body must match
// one of secrets, and x-zm-request-timestamp must lie within the tolerance
// around now in either direction.
func (z *Zoom) Verify(r Request, secrets [][]byte, now time.Time) error {
	return z.v0.verify(r, secrets, now)
}

var zoomFields = []string{"event", "event_ts", "payload"}

// Identify implements Scheme with the rules in the type's comment. The
// url_validation handshake is refused: it is answered, never stored.
func (z *Zoom) Identify(r Request) (Identity, error) {
	var f [3][]byte
	if err := jsonFields(r.Body, zoomFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: zoom: body is not a JSON object", ErrInvalidPayload)
	}
	event, ok := jsonString(f[0])
	if !ok || event == "" {
		return Identity{}, fmt.Errorf("%w: zoom: missing event", ErrInvalidPayload)
	}
	if event == ZoomURLValidation {
		return Identity{}, fmt.Errorf("%w: zoom: url_validation is a handshake, not an event", ErrInvalidPayload)
	}
	ms, ok := jsonInt(f[1])
	if !ok || ms < 0 {
		return Identity{}, fmt.Errorf("%w: zoom: event_ts is not unix milliseconds", ErrInvalidPayload)
	}
	sum := sha256.Sum256(r.Body)
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	id := event + ":" + strconv.FormatInt(ms, 10) + ":" + string(buf[:])
	if !validID(id) {
		return Identity{}, fmt.Errorf("%w: zoom: event name too long or not UTF-8", ErrInvalidPayload)
	}
	return Identity{ID: id, Type: event, Created: time.UnixMilli(ms)}, nil
}

var zoomPlainTokenField = []string{"plainToken"}

// Handshake implements Handshaker for endpoint.url_validation: 200 with
// JSON {"plainToken": p, "encryptedToken": hex(HMAC-SHA256(secret, p))},
// keyed with the first usable secret, the current one, whatever secret
// signed the request. The signature is checked again without the clock
// (Handshake does not receive it) so that a wiring mistake cannot make the
// endpoint an HMAC oracle for unsigned tokens; ordinary events are not
// hashed twice because the check runs only for handshakes.
func (z *Zoom) Handshake(r Request, secrets [][]byte) (Reply, bool, error) {
	if !jsonMayHold(r.Body, "validation") {
		return Reply{}, false, nil // ordinary events skip the scan
	}
	var f [3][]byte
	if err := jsonFields(r.Body, zoomFields, f[:]); err != nil {
		return Reply{}, false, nil // not JSON: Identify reports it
	}
	if !jsonStringIs(f[0], ZoomURLValidation) {
		return Reply{}, false, nil
	}
	if err := z.v0.recheck(r, secrets); err != nil {
		return Reply{}, false, err
	}
	var plain string
	if p := f[2]; len(p) > 0 && p[0] == '{' {
		var tok [1][]byte
		if jsonFields(p, zoomPlainTokenField, tok[:]) == nil {
			plain, _ = jsonString(tok[0])
		}
	}
	if plain == "" {
		return Reply{}, false, fmt.Errorf("%w: zoom: url_validation without payload.plainToken", ErrInvalidPayload)
	}
	var key []byte
	for _, s := range secrets {
		if len(s) > 0 {
			key = s
			break
		}
	}
	if key == nil {
		return Reply{}, false, ErrNoSecret
	}
	body, err := json.Marshal(struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{plain, hex.EncodeToString(macOf(sha256.New, key, []byte(plain)))})
	if err != nil {
		return Reply{}, false, fmt.Errorf("zoom: url_validation reply: %w", err)
	}
	return Reply{Status: http.StatusOK, ContentType: "application/json", Body: body}, true, nil
}

// Sign implements Signer: it sets x-zm-request-timestamp to now and
// x-zm-signature for r's body under key.
func (z *Zoom) Sign(r *Request, key []byte, now time.Time) error {
	return z.v0.sign(r, key, now)
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (z *Zoom) KeptHeaders() []string {
	return []string{ZoomSignatureHeader, ZoomTimestampHeader}
}
