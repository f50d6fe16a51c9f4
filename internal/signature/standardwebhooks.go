package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Header names of the Standard Webhooks specification. Svix, and the
// providers built on it (Clerk, Resend), send the same three values under
// the Svix-* names; OpenAI sends the Webhook-* names.
const (
	StandardWebhooksIDHeader        = "Webhook-Id"
	StandardWebhooksTimestampHeader = "Webhook-Timestamp"
	StandardWebhooksSignatureHeader = "Webhook-Signature"

	SvixIDHeader        = "Svix-Id"
	SvixTimestampHeader = "Svix-Timestamp"
	SvixSignatureHeader = "Svix-Signature"
)

// Prefixes of Standard Webhooks keys. A secret is "whsec_" + base64 of the
// HMAC key (a bare base64 key is read the same way, as the reference
// libraries do); a public key is "whpk_" + base64 of a 32-byte Ed25519 key; a
// signing key for Sign is "whsk_" + base64 of a 64-byte Ed25519 private key.
const (
	StandardWebhooksSecretPrefix     = "whsec_"
	StandardWebhooksPublicKeyPrefix  = "whpk_"
	StandardWebhooksPrivateKeyPrefix = "whsk_"
)

// standardWebhooksMaxSigs bounds the signatures one header may carry that
// Verify would try: each costs a comparison or an Ed25519 verification.
const standardWebhooksMaxSigs = 16

// StandardWebhooks verifies the Standard Webhooks scheme
// (https://www.standardwebhooks.com), used by Svix, Clerk, Resend and
// OpenAI: webhook-signature is a space-separated list of "v1,<base64
// HMAC-SHA256>" and "v1a,<base64 Ed25519>" entries over
// "<webhook-id>.<webhook-timestamp>.<body>".
//
// Verify reads the Webhook-* headers, or the Svix-* headers when no
// Webhook-* header is present; it never combines an id from one set with a
// signature from the other. A v1 entry is checked only against HMAC secrets
// ("whsec_…" or bare base64) and a v1a entry only against Ed25519 public
// keys ("whpk_…"), so neither kind of key stands in for the other; unknown
// versions are ignored, never a fallback. A configured secret that does not
// decode is skipped like an empty one: if none is left, Verify returns
// ErrNoSecret, so a mistyped secret shows in logs and metrics as missing
// configuration rather than as a stream of ErrNoMatch.
type StandardWebhooks struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*StandardWebhooks)(nil)
	_ Signer = (*StandardWebhooks)(nil)
)

// NewStandardWebhooks returns the Standard Webhooks scheme with o.Tolerance
// (default 5 minutes, the specification's recommendation) applied to
// webhook-timestamp in both directions. The scheme signs no URL and has no
// generic HMAC settings: setting o.URL or o.HMAC is an error.
func NewStandardWebhooks(o Options) (*StandardWebhooks, error) {
	if err := checkOptions("standardwebhooks", o, usesTolerance); err != nil {
		return nil, err
	}
	return &StandardWebhooks{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// standardWebhooksNames is one set of header names.
type standardWebhooksNames struct{ id, ts, sig string }

var (
	standardWebhooksSpec = standardWebhooksNames{StandardWebhooksIDHeader, StandardWebhooksTimestampHeader, StandardWebhooksSignatureHeader}
	standardWebhooksSvix = standardWebhooksNames{SvixIDHeader, SvixTimestampHeader, SvixSignatureHeader}
)

// standardWebhooksSet picks the header set a request uses: the
// specification's when any of its headers is present or when neither set
// is, Svix's otherwise. The choice is made once, so a request cannot pair a
// signature from one set with an id or timestamp from the other.
func standardWebhooksSet(h http.Header) standardWebhooksNames {
	n := standardWebhooksSpec
	if len(h[n.id]) > 0 || len(h[n.ts]) > 0 || len(h[n.sig]) > 0 {
		return n
	}
	s := standardWebhooksSvix
	if len(h[s.id]) > 0 || len(h[s.ts]) > 0 || len(h[s.sig]) > 0 {
		return s
	}
	return n
}

// Verify implements Scheme.
func (s *StandardWebhooks) Verify(r Request, secrets [][]byte, now time.Time) error {
	n := standardWebhooksSet(r.Header)
	sigHeader, err := header(r.Header, n.sig)
	if err != nil {
		return err
	}
	id, err := header(r.Header, n.id)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformedHeader, n.id, err)
	}
	tsRaw, err := header(r.Header, n.ts)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformedHeader, n.ts, err)
	}
	ts, ok := parseUnix(tsRaw)
	// The signed string holds the timestamp as sent; senders write the
	// canonical decimal, so a leading zero is refused: one timestamp, one
	// signed string.
	if !ok || (len(tsRaw) > 1 && tsRaw[0] == '0') {
		return fmt.Errorf("%w: bad %s", ErrMalformedHeader, n.ts)
	}

	var (
		v1   [standardWebhooksMaxSigs][sha256.Size]byte
		v1a  [standardWebhooksMaxSigs][ed25519.SignatureSize]byte
		nv1  int
		nv1a int
		buf  [ed25519.SignatureSize + 2]byte
	)
	for entry := range strings.SplitSeq(sigHeader, " ") {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok {
			continue // empty (a double space) or not versioned: cannot match
		}
		switch version {
		case "v1":
			if !standardWebhooksDecode(buf[:], sig, sha256.Size) {
				continue // cannot match; other entries may
			}
			if nv1+nv1a == standardWebhooksMaxSigs {
				return fmt.Errorf("%w: more than %d signatures", ErrMalformedHeader, standardWebhooksMaxSigs)
			}
			copy(v1[nv1][:], buf[:sha256.Size])
			nv1++
		case "v1a":
			if !standardWebhooksDecode(buf[:], sig, ed25519.SignatureSize) {
				continue
			}
			if nv1+nv1a == standardWebhooksMaxSigs {
				return fmt.Errorf("%w: more than %d signatures", ErrMalformedHeader, standardWebhooksMaxSigs)
			}
			copy(v1a[nv1a][:], buf[:ed25519.SignatureSize])
			nv1a++
		}
	}
	if nv1+nv1a == 0 {
		return fmt.Errorf("%w: no v1 or v1a signature", ErrNoMatch)
	}
	if err := checkTimestamp(ts, now, s.tolerance); err != nil {
		return err
	}

	// "<id>.<ts>." is built once and shared by every key.
	prefix := make([]byte, 0, len(id)+len(tsRaw)+2)
	prefix = append(append(append(append(prefix, id...), '.'), tsRaw...), '.')
	var (
		sum    [sha256.Size]byte
		signed []byte // prefix+body, built on the first public key
		usable bool
	)
	for _, secret := range secrets {
		kind, key := standardWebhooksKey(secret)
		switch kind {
		case standardWebhooksHMAC:
			usable = true
			if nv1 == 0 {
				continue
			}
			mac := hmac.New(sha256.New, key)
			mac.Write(prefix)
			mac.Write(r.Body)
			mac.Sum(sum[:0])
			for i := range nv1 {
				if hmac.Equal(sum[:], v1[i][:]) {
					return nil
				}
			}
		case standardWebhooksPublic:
			usable = true
			if nv1a == 0 {
				continue
			}
			if signed == nil {
				signed = append(append(make([]byte, 0, len(prefix)+len(r.Body)), prefix...), r.Body...)
			}
			for i := range nv1a {
				if ed25519.Verify(ed25519.PublicKey(key), signed, v1a[i][:]) {
					return nil
				}
			}
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

// standardWebhooksB64 is the strict standard alphabet: one signature has
// exactly one encoding, as the reference libraries (which compare the
// encoded strings) require.
var standardWebhooksB64 = base64.StdEncoding.Strict()

// standardWebhooksDecode decodes a padded base64 value of exactly n bytes
// into buf (at least n+2 bytes long).
func standardWebhooksDecode(buf []byte, s string, n int) bool {
	if len(s) != base64.StdEncoding.EncodedLen(n) {
		return false
	}
	var src [2 * ed25519.SignatureSize]byte
	m, err := standardWebhooksB64.Decode(buf, src[:copy(src[:], s)])
	return err == nil && m == n
}

// Kinds of configured keys.
const (
	standardWebhooksSkip = iota
	standardWebhooksHMAC
	standardWebhooksPublic
)

// standardWebhooksKey decodes one configured key: an HMAC key from
// "whsec_<base64>" or bare base64, an Ed25519 public key from
// "whpk_<base64>". Anything else (empty, not base64, a wrong-length public
// key, a "whsk_" private key, which belongs to the sender) is skipped.
func standardWebhooksKey(secret []byte) (int, []byte) {
	kind := standardWebhooksHMAC
	switch {
	case len(secret) == 0:
		return standardWebhooksSkip, nil
	case bytes.HasPrefix(secret, []byte(StandardWebhooksPublicKeyPrefix)):
		kind, secret = standardWebhooksPublic, secret[len(StandardWebhooksPublicKeyPrefix):]
	case bytes.HasPrefix(secret, []byte(StandardWebhooksPrivateKeyPrefix)):
		return standardWebhooksSkip, nil
	case bytes.HasPrefix(secret, []byte(StandardWebhooksSecretPrefix)):
		secret = secret[len(StandardWebhooksSecretPrefix):]
	}
	key := make([]byte, base64.StdEncoding.DecodedLen(len(secret)))
	n, err := base64.StdEncoding.Decode(key, secret)
	if err != nil || n == 0 {
		return standardWebhooksSkip, nil
	}
	key = key[:n]
	if kind == standardWebhooksPublic && len(key) != ed25519.PublicKeySize {
		return standardWebhooksSkip, nil
	}
	return kind, key
}

var standardWebhooksFields = []string{"type", "timestamp"}

// Identify implements Scheme. ID is the webhook-id (or svix-id) header:
// the specification makes it the idempotency key, stable across retries of
// one message. Type is the body's type, which the specification requires.
// Created is the body's timestamp when it is an RFC 3339 string; a numeric
// timestamp (Clerk sends milliseconds) or none leaves Created zero, and a
// string that is not RFC 3339 is ErrInvalidPayload.
func (s *StandardWebhooks) Identify(r Request) (Identity, error) {
	n := standardWebhooksSet(r.Header)
	id, err := header(r.Header, n.id)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: standardwebhooks: %s: %v", ErrInvalidPayload, n.id, err)
	}
	if len(id) > MaxIdentity || !utf8.ValidString(id) {
		return Identity{}, fmt.Errorf("%w: standardwebhooks: %s is not a usable id", ErrInvalidPayload, n.id)
	}
	var f [2][]byte
	if err := jsonFields(r.Body, standardWebhooksFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: standardwebhooks: body is not a JSON object", ErrInvalidPayload)
	}
	typ, ok := jsonString(f[0])
	if !ok || typ == "" {
		return Identity{}, fmt.Errorf("%w: standardwebhooks: missing type", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ}
	if len(f[1]) > 0 && f[1][0] == '"' {
		v, ok := jsonString(f[1])
		if !ok {
			return Identity{}, fmt.Errorf("%w: standardwebhooks: bad timestamp", ErrInvalidPayload)
		}
		c, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return Identity{}, fmt.Errorf("%w: standardwebhooks: timestamp: %v", ErrInvalidPayload, err)
		}
		out.Created = c
	}
	return out, nil
}

// SignStandardWebhooks returns a webhook-signature value for body sent as
// message id at t: "v1,<base64>" for an HMAC secret ("whsec_…" or bare
// base64), "v1a,<base64>" for an Ed25519 signing key ("whsk_…"). Any other
// key is ErrNoSecret (wrapped).
func SignStandardWebhooks(id string, body, key []byte, t time.Time) (string, error) {
	signed := make([]byte, 0, len(id)+len(body)+24)
	signed = append(signed, id...)
	signed = append(signed, '.')
	signed = strconv.AppendInt(signed, t.Unix(), 10)
	signed = append(signed, '.')
	signed = append(signed, body...)

	if rest, ok := bytes.CutPrefix(key, []byte(StandardWebhooksPrivateKeyPrefix)); ok {
		priv, err := base64.StdEncoding.DecodeString(string(rest))
		if err != nil || len(priv) != ed25519.PrivateKeySize {
			return "", fmt.Errorf("%w: standardwebhooks: whsk_ key is not base64 of a 64-byte Ed25519 private key", ErrNoSecret)
		}
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.PrivateKey(priv), signed)), nil
	}
	kind, k := standardWebhooksKey(key)
	if kind != standardWebhooksHMAC {
		return "", fmt.Errorf("%w: standardwebhooks: key is neither an HMAC secret nor a whsk_ signing key", ErrNoSecret)
	}
	return "v1," + base64.StdEncoding.EncodeToString(macOf(sha256.New, k, signed)), nil
}

// Sign implements Signer. It keeps the request's message id when it has one
// (set Webhook-Id or Svix-Id first to control it) and otherwise derives a
// deterministic "msg_…" id from the timestamp and body, so that signing is
// reproducible. It writes the header set the request already uses, the
// specification's by default.
func (s *StandardWebhooks) Sign(r *Request, key []byte, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	n := standardWebhooksSet(r.Header)
	id := hget(r.Header, n.id)
	if id == "" {
		h := sha256.New()
		h.Write(strconv.AppendInt(nil, now.Unix(), 10))
		h.Write([]byte{'.'})
		h.Write(r.Body)
		id = "msg_" + hex.EncodeToString(h.Sum(nil)[:16])
	}
	sig, err := SignStandardWebhooks(id, r.Body, key, now)
	if err != nil {
		return err
	}
	r.Header.Set(n.id, id)
	r.Header.Set(n.ts, strconv.FormatInt(now.Unix(), 10))
	r.Header.Set(n.sig, sig)
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *StandardWebhooks) KeptHeaders() []string {
	return []string{StandardWebhooksIDHeader, StandardWebhooksTimestampHeader, StandardWebhooksSignatureHeader, SvixIDHeader, SvixTimestampHeader, SvixSignatureHeader}
}
