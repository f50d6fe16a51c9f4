package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Headers of a Twitch EventSub webhook.
const (
	// TwitchMessageIDHeader identifies the message; Twitch resends the same
	// id when it retries, so it is the dedupe key. It is signed.
	TwitchMessageIDHeader = "Twitch-Eventsub-Message-Id"
	// TwitchTimestampHeader is when Twitch sent the message, RFC 3339 with
	// fractional seconds. It is signed.
	TwitchTimestampHeader = "Twitch-Eventsub-Message-Timestamp"
	// TwitchTypeHeader is the message type: TwitchNotification,
	// TwitchVerification or TwitchRevocation. It is not signed.
	TwitchTypeHeader = "Twitch-Eventsub-Message-Type"
	// TwitchSignatureHeader carries "sha256=" + hex(HMAC-SHA256(secret,
	// message id + timestamp + body)).
	TwitchSignatureHeader = "Twitch-Eventsub-Message-Signature"
	// TwitchRetryHeader counts Twitch's delivery attempts; Identify keeps it
	// as the attribute "message_retry".
	TwitchRetryHeader = "Twitch-Eventsub-Message-Retry"
)

// Twitch EventSub message types (TwitchTypeHeader values).
const (
	TwitchNotification = "notification"
	TwitchVerification = "webhook_callback_verification"
	TwitchRevocation   = "revocation"
)

// TwitchDefaultTolerance is the age Twitch's guide tells receivers to
// refuse beyond (ten minutes); skew into the future gets the same window.
const TwitchDefaultTolerance = 10 * time.Minute

// Twitch verifies Twitch EventSub webhook signatures and reads their
// identity: ID is the message id; Type is subscription.type from the body,
// prefixed "revocation:" for revocations; Created is the signed message
// timestamp (EventSub bodies have no common event time); the attribute
// "message_type" keeps the message type.
//
// The message type header is not signed, so Identify checks it against the
// signed body: a notification must carry an event, a revocation must not,
// and a verification carries a challenge. A replayed notification cannot be
// passed off as a revocation.
type Twitch struct {
	tolerance time.Duration
}

var (
	_ Scheme     = (*Twitch)(nil)
	_ Handshaker = (*Twitch)(nil)
	_ Signer     = (*Twitch)(nil)
)

// NewTwitch returns the Twitch EventSub scheme; the tolerance defaults to
// TwitchDefaultTolerance. A URL or generic-HMAC settings are refused.
func NewTwitch(o Options) (*Twitch, error) {
	if err := checkOptions("twitch", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Twitch{tolerance: toleranceOr(o, TwitchDefaultTolerance)}, nil
}

// twitchMaxTimestamp bounds the timestamp header: RFC 3339 with
// nanoseconds and a numeric offset is 35 bytes.
const twitchMaxTimestamp = 40

// parse reads the signed headers: message id, raw timestamp, and the
// signature. Another algorithm than sha256 is ErrNoMatch, never tried.
func (t *Twitch) parse(h http.Header, sig *[sha256.Size]byte) (id, tsRaw string, ts time.Time, err error) {
	sigRaw, err := header(h, TwitchSignatureHeader)
	if err != nil {
		return "", "", time.Time{}, err
	}
	id, err = twitchSignedHeader(h, TwitchMessageIDHeader)
	if err != nil {
		return "", "", time.Time{}, err
	}
	tsRaw, err = twitchSignedHeader(h, TwitchTimestampHeader)
	if err != nil {
		return "", "", time.Time{}, err
	}
	if len(tsRaw) > twitchMaxTimestamp {
		return "", "", time.Time{}, fmt.Errorf("%w: %s too long", ErrMalformedHeader, TwitchTimestampHeader)
	}
	ts, perr := time.Parse(time.RFC3339Nano, tsRaw)
	if perr != nil {
		return "", "", time.Time{}, fmt.Errorf("%w: %s is not RFC 3339", ErrMalformedHeader, TwitchTimestampHeader)
	}
	alg, hexSig, ok := cutByte(sigRaw, '=')
	if !ok || alg == "" {
		return "", "", time.Time{}, fmt.Errorf("%w: %s has no algorithm", ErrMalformedHeader, TwitchSignatureHeader)
	}
	if alg != "sha256" {
		return "", "", time.Time{}, fmt.Errorf("%w: %s algorithm is not sha256", ErrNoMatch, TwitchSignatureHeader)
	}
	if !unhex(sig[:], hexSig) {
		return "", "", time.Time{}, fmt.Errorf("%w: %s is not 64 hex digits", ErrMalformedHeader, TwitchSignatureHeader)
	}
	return id, tsRaw, ts, nil
}

// twitchSignedHeader reads a header the signature covers: present once.
func twitchSignedHeader(h http.Header, name string) (string, error) {
	v, err := header(h, name)
	if errors.Is(err, ErrNotSigned) {
		return "", fmt.Errorf("%w: missing %s", ErrMalformedHeader, name)
	}
	return v, err
}

// Verify implements Scheme: the signature over message id + timestamp +
// raw body must match one of secrets, and the timestamp must lie within the
// tolerance around now in either direction.
func (t *Twitch) Verify(r Request, secrets [][]byte, now time.Time) error {
	var sig [sha256.Size]byte
	id, tsRaw, ts, err := t.parse(r.Header, &sig)
	if err != nil {
		return err
	}
	if err := checkTimestamp(ts, now, t.tolerance); err != nil {
		return err
	}
	return twitchMatch(id, tsRaw, r.Body, &sig, secrets)
}

func twitchMatch(id, tsRaw string, body []byte, sig *[sha256.Size]byte, secrets [][]byte) error {
	pre := append(append(make([]byte, 0, len(id)+len(tsRaw)), id...), tsRaw...)
	return matchSHA256(secrets, [][sha256.Size]byte{*sig}, pre, body)
}

var twitchFields = []string{"subscription", "event", "challenge"}

// Identify implements Scheme with the rules in the type's comment.
// Verification messages are refused: they are answered, never stored.
func (t *Twitch) Identify(r Request) (Identity, error) {
	ids := hvalues(r.Header, TwitchMessageIDHeader)
	var id string
	if len(ids) == 1 {
		id = ids[0]
	}
	if !validID(id) {
		return Identity{}, fmt.Errorf("%w: twitch: message id missing, repeated, too long or not UTF-8", ErrInvalidPayload)
	}
	mt := hget(r.Header, TwitchTypeHeader)
	var f [3][]byte
	var st [1][]byte // subscription.type, read in the same pass
	if err := jsonFieldsNested(r.Body, twitchFields, f[:], &nested{parent: "subscription", keys: twitchTypeField, out: st[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: twitch: body is not a JSON object", ErrInvalidPayload)
	}
	subType, ok := jsonString(st[0])
	ok = ok && subType != "" && len(f[0]) > 0 && f[0][0] == '{'
	if !ok {
		return Identity{}, fmt.Errorf("%w: twitch: missing subscription.type", ErrInvalidPayload)
	}
	hasEvent := f[1] != nil && string(f[1]) != "null"
	typ := subType
	switch mt {
	case TwitchNotification:
		if !hasEvent {
			return Identity{}, fmt.Errorf("%w: twitch: notification without event", ErrInvalidPayload)
		}
	case TwitchRevocation:
		if hasEvent || f[2] != nil {
			return Identity{}, fmt.Errorf("%w: twitch: revocation body carries an event or challenge", ErrInvalidPayload)
		}
		typ = "revocation:" + subType
	case TwitchVerification:
		return Identity{}, fmt.Errorf("%w: twitch: callback verification is a handshake, not an event", ErrInvalidPayload)
	default:
		return Identity{}, fmt.Errorf("%w: twitch: unknown message type", ErrInvalidPayload)
	}
	if !validID(typ) {
		return Identity{}, fmt.Errorf("%w: twitch: subscription.type too long", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ, Attributes: map[string]string{"message_type": mt}}
	if retry := hget(r.Header, TwitchRetryHeader); retry != "" && len(retry) <= 16 {
		if _, ok := parseUnix(retry); ok { // a small decimal count
			out.Attributes["message_retry"] = retry
		}
	}
	if ts, err := time.Parse(time.RFC3339Nano, hget(r.Header, TwitchTimestampHeader)); err == nil {
		out.Created = ts
	}
	return out, nil
}

var twitchTypeField = []string{"type"}

var twitchChallengeField = []string{"challenge"}

// Handshake implements Handshaker for webhook_callback_verification: 200
// text/plain with the body's challenge, as Twitch's guide requires. The
// signature is checked again without the clock (Handshake does not receive
// it), and only for verification messages, so notifications are not hashed
// twice.
func (t *Twitch) Handshake(r Request, secrets [][]byte) (Reply, bool, error) {
	if hget(r.Header, TwitchTypeHeader) != TwitchVerification {
		return Reply{}, false, nil
	}
	var sig [sha256.Size]byte
	id, tsRaw, _, err := t.parse(r.Header, &sig)
	if err != nil {
		return Reply{}, false, err
	}
	if err := twitchMatch(id, tsRaw, r.Body, &sig, secrets); err != nil {
		return Reply{}, false, err
	}
	var f [1][]byte
	if err := jsonFields(r.Body, twitchChallengeField, f[:]); err != nil {
		return Reply{}, false, fmt.Errorf("%w: twitch: verification body is not a JSON object", ErrInvalidPayload)
	}
	challenge, ok := jsonString(f[0])
	if !ok || challenge == "" {
		return Reply{}, false, fmt.Errorf("%w: twitch: verification without a challenge", ErrInvalidPayload)
	}
	return Reply{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}, true, nil
}

// Sign implements Signer: it sets the timestamp header to now (UTC, RFC
// 3339 with nanoseconds, as Twitch sends it) and the signature for r's body
// under key. The message id is the caller's: r must carry
// TwitchMessageIDHeader. TwitchTypeHeader defaults to notification.
func (t *Twitch) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	id := hget(r.Header, TwitchMessageIDHeader)
	if id == "" {
		return fmt.Errorf("signature: twitch: Sign needs a %s header", TwitchMessageIDHeader)
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + ts))
	m.Write(r.Body)
	r.Header.Set(TwitchTimestampHeader, ts)
	r.Header.Set(TwitchSignatureHeader, "sha256="+hex.EncodeToString(m.Sum(nil)))
	if hget(r.Header, TwitchTypeHeader) == "" {
		r.Header.Set(TwitchTypeHeader, TwitchNotification)
	}
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (t *Twitch) KeptHeaders() []string {
	return []string{TwitchMessageIDHeader, TwitchTimestampHeader, TwitchTypeHeader, TwitchSignatureHeader, TwitchRetryHeader}
}
