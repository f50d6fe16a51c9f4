package signature

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"time"
)

// Telnyx's webhook headers.
const (
	// TelnyxSignatureHeader carries base64(Ed25519 signature of
	// "<timestamp>|<body>").
	TelnyxSignatureHeader = "Telnyx-Signature-Ed25519"
	// TelnyxTimestampHeader carries the unix seconds the signature covers.
	TelnyxTimestampHeader = "Telnyx-Timestamp"
)

// Telnyx verifies Telnyx's API v2 webhooks: an Ed25519 signature, base64 in
// Telnyx-Signature-Ed25519, over "<Telnyx-Timestamp>|<body>". The secret is
// the account's public key as the portal shows it (base64 of 32 bytes);
// several may be configured. The timestamp must be within the tolerance
// (5 minutes by default, the window of Telnyx's SDKs) both ways.
type Telnyx struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Telnyx)(nil)
	_ Signer = (*Telnyx)(nil)
)

// NewTelnyx returns the Telnyx scheme. Setting o.URL or o.HMAC is an error.
func NewTelnyx(o Options) (*Telnyx, error) {
	if err := checkOptions("telnyx", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Telnyx{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme.
func (t *Telnyx) Verify(r Request, secrets [][]byte, now time.Time) error {
	sigRaw, err := header(r.Header, TelnyxSignatureHeader)
	if err != nil {
		return err
	}
	tsRaw, err := twitchSignedHeader(r.Header, TelnyxTimestampHeader)
	if err != nil {
		return err
	}
	ts, ok := canonicalUnix(tsRaw)
	if !ok {
		return fmt.Errorf("%w: bad %s", ErrMalformedHeader, TelnyxTimestampHeader)
	}
	sig, ok := decodeBase64(sigRaw, ed25519.SignatureSize)
	if !ok {
		return fmt.Errorf("%w: %s is not base64 of 64 bytes", ErrMalformedHeader, TelnyxSignatureHeader)
	}
	if err := checkTimestamp(ts, now, t.tolerance); err != nil {
		return err
	}
	var msg []byte
	usable := false
	for _, secret := range secrets {
		key, ok := decodeBase64(string(secret), ed25519.PublicKeySize)
		if !ok {
			continue // not a public key
		}
		if !usable {
			usable = true
			msg = make([]byte, 0, len(tsRaw)+1+len(r.Body))
			msg = append(append(append(msg, tsRaw...), '|'), r.Body...)
		}
		if ed25519.Verify(key, msg, sig) {
			return nil
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

var (
	telnyxFields     = []string{"data"}
	telnyxDataFields = []string{"id", "event_type", "occurred_at", "record_type"}
)

// Identify implements Scheme. ID is data.id, the event's, kept on every
// retry (meta.attempt counts them); Type is data.event_type
// ("message.received"); Created is data.occurred_at. data.record_type,
// when present, must be "event".
func (t *Telnyx) Identify(r Request) (Identity, error) {
	var f [1][]byte
	var d [4][]byte
	if err := jsonFieldsNested(r.Body, telnyxFields, f[:], &nested{parent: "data", keys: telnyxDataFields, out: d[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: telnyx: body is not a JSON object", ErrInvalidPayload)
	}
	if len(f[0]) == 0 || f[0][0] != '{' {
		return Identity{}, fmt.Errorf("%w: telnyx: no data object", ErrInvalidPayload)
	}
	if jsonPresent(d[3]) && !jsonStringIs(d[3], "event") {
		return Identity{}, fmt.Errorf("%w: telnyx: data.record_type is not \"event\"", ErrInvalidPayload)
	}
	id, err := identityString("telnyx", "data.id", d[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("telnyx", "data.event_type", d[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("telnyx", "data.occurred_at", d[2])
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// Sign implements Signer: key is the Ed25519 private key (64 bytes) or its
// 32-byte seed whose public half, base64, is the configured secret.
func (t *Telnyx) Sign(r *Request, key []byte, now time.Time) error {
	priv, err := ed25519Private("telnyx", key)
	if err != nil {
		return err
	}
	ts, err := formatCanonicalUnix(now)
	if err != nil {
		return err
	}
	msg := append(append([]byte(ts), '|'), r.Body...)
	setHeader(r, TelnyxTimestampHeader, ts)
	setHeader(r, TelnyxSignatureHeader, base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg)))
	return nil
}

// TelnyxPublicKey is the secret to configure for the private key (or seed)
// key: the base64 of its public half.
func TelnyxPublicKey(key []byte) string {
	priv := ed25519.PrivateKey(key)
	if len(key) == ed25519.SeedSize {
		priv = ed25519.NewKeyFromSeed(key)
	}
	return base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (t *Telnyx) KeptHeaders() []string {
	return []string{TelnyxSignatureHeader, TelnyxTimestampHeader}
}
