package signature

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Headers of a Discord interaction request.
const (
	// DiscordSignatureHeader carries hex(Ed25519 signature of timestamp +
	// body) under the application's key pair.
	DiscordSignatureHeader = "X-Signature-Ed25519"
	// DiscordTimestampHeader carries the unix seconds the signature covers.
	DiscordTimestampHeader = "X-Signature-Timestamp"
)

// discordEpochMs is the start of Discord's snowflake clock (2015-01-01
// UTC) in unix milliseconds.
const discordEpochMs = 1420070400000

// discordPing is the interaction type of Discord's endpoint check.
const discordPing = 1

// Discord verifies Discord interaction requests (Ed25519) and reads their
// identity.
//
// The configured secrets are the application's public keys, each as the 64
// hex digits the developer portal shows; several may be configured during a
// key change, and secrets that are not such a key are skipped (none usable
// is ErrNoSecret). The signed timestamp gets the default five minutes in
// either direction.
//
// Identity: ID is the body's id, the interaction's snowflake, unique and
// unchanged if the same request is delivered again; Type is "interaction:"
// + the type number (2 application command, 3 message component, 4
// autocomplete, 5 modal submit), a number because it is present in every
// interaction, where a command name is not; Created is the time encoded in
// the snowflake. PING (type 1) is a handshake and refused by Identify.
// Discord's separate "webhook events" endpoint (event bodies without an
// id) is not this scheme.
type Discord struct {
	tolerance time.Duration
}

var (
	_ Scheme     = (*Discord)(nil)
	_ Handshaker = (*Discord)(nil)
	_ Signer     = (*Discord)(nil)
)

// NewDiscord returns the Discord interactions scheme; the tolerance
// defaults to five minutes. A URL or generic-HMAC settings are refused.
func NewDiscord(o Options) (*Discord, error) {
	if err := checkOptions("discord", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Discord{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// parse reads the signature and the raw timestamp.
func (d *Discord) parse(h http.Header, sig *[ed25519.SignatureSize]byte) (tsRaw string, ts time.Time, err error) {
	sigRaw, err := header(h, DiscordSignatureHeader)
	if err != nil {
		return "", time.Time{}, err
	}
	tsRaw, err = twitchSignedHeader(h, DiscordTimestampHeader)
	if err != nil {
		return "", time.Time{}, err
	}
	ts, ok := canonicalUnix(tsRaw)
	if !ok {
		return "", time.Time{}, fmt.Errorf("%w: bad %s", ErrMalformedHeader, DiscordTimestampHeader)
	}
	if !unhex(sig[:], sigRaw) {
		return "", time.Time{}, fmt.Errorf("%w: %s is not 128 hex digits", ErrMalformedHeader, DiscordSignatureHeader)
	}
	return tsRaw, ts, nil
}

// Verify implements Scheme: the Ed25519 signature over timestamp + raw body
// must verify under one of the public keys in secrets (a bad signature is
// ErrNoMatch, the 401 Discord's endpoint check expects), and the timestamp
// must lie within the tolerance around now.
func (d *Discord) Verify(r Request, secrets [][]byte, now time.Time) error {
	var sig [ed25519.SignatureSize]byte
	tsRaw, ts, err := d.parse(r.Header, &sig)
	if err != nil {
		return err
	}
	if err := checkTimestamp(ts, now, d.tolerance); err != nil {
		return err
	}
	return discordMatch(tsRaw, r.Body, &sig, secrets)
}

func discordMatch(tsRaw string, body []byte, sig *[ed25519.SignatureSize]byte, secrets [][]byte) error {
	var msg []byte
	usable := false
	for _, secret := range secrets {
		var key [ed25519.PublicKeySize]byte
		if !unhex(key[:], secret) {
			continue // not a public key
		}
		if !usable {
			usable = true
			msg = make([]byte, 0, len(tsRaw)+len(body))
			msg = append(append(msg, tsRaw...), body...)
		}
		if ed25519.Verify(key[:], msg, sig[:]) {
			return nil
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

var discordFields = []string{"id", "type"}

// Identify implements Scheme with the rules in the type's comment.
func (d *Discord) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, discordFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: discord: body is not a JSON object", ErrInvalidPayload)
	}
	typ, ok := jsonInt(f[1])
	if !ok || typ < 1 || typ > 1000 {
		return Identity{}, fmt.Errorf("%w: discord: type is not an interaction type", ErrInvalidPayload)
	}
	if typ == discordPing {
		return Identity{}, fmt.Errorf("%w: discord: PING is a handshake, not an event", ErrInvalidPayload)
	}
	id, ok := jsonString(f[0])
	if !ok || !validID(id) {
		return Identity{}, fmt.Errorf("%w: discord: missing id", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: "interaction:" + strconv.FormatInt(typ, 10)}
	if n, err := strconv.ParseUint(id, 10, 64); err == nil {
		out.Created = time.UnixMilli(int64(n>>22) + discordEpochMs)
	}
	return out, nil
}

var discordTypeField = []string{"type"}

// discordPong is the answer to PING.
var discordPong = []byte(`{"type":1}`)

// Handshake implements Handshaker: a PING (type 1) is answered with 200
// and JSON {"type":1}. The signature is checked again without the clock
// (Handshake does not receive it), and only for PINGs.
func (d *Discord) Handshake(r Request, secrets [][]byte) (Reply, bool, error) {
	var f [1][]byte
	if err := jsonFields(r.Body, discordTypeField, f[:]); err != nil {
		return Reply{}, false, nil // not JSON: Identify reports it
	}
	if typ, ok := jsonInt(f[0]); !ok || typ != discordPing {
		return Reply{}, false, nil
	}
	var sig [ed25519.SignatureSize]byte
	tsRaw, _, err := d.parse(r.Header, &sig)
	if err != nil {
		return Reply{}, false, err
	}
	if err := discordMatch(tsRaw, r.Body, &sig, secrets); err != nil {
		return Reply{}, false, err
	}
	return Reply{Status: http.StatusOK, ContentType: "application/json", Body: append([]byte(nil), discordPong...)}, true, nil
}

// Sign implements Signer: it sets X-Signature-Timestamp to now and
// X-Signature-Ed25519 for r's body. key is the Ed25519 private key (64
// bytes) or its 32-byte seed; its public half, as hex, is the secret
// Verify takes.
func (d *Discord) Sign(r *Request, key []byte, now time.Time) error {
	priv, err := ed25519Private("discord", key)
	if err != nil {
		return err
	}
	ts, err := formatCanonicalUnix(now)
	if err != nil {
		return err
	}
	msg := append([]byte(ts), r.Body...)
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(DiscordTimestampHeader, ts)
	r.Header.Set(DiscordSignatureHeader, hex.EncodeToString(ed25519.Sign(priv, msg)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (d *Discord) KeptHeaders() []string {
	return []string{DiscordSignatureHeader, DiscordTimestampHeader}
}
