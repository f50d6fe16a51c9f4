package signature

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Headers of SendGrid's signed Event Webhook.
const (
	// SendGridSignatureHeader carries base64 of an ASN.1 DER ECDSA P-256
	// signature over SHA-256(timestamp + body).
	SendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	// SendGridTimestampHeader carries the signing time in unix seconds.
	SendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// SendGrid verifies SendGrid's signed Event Webhook: ECDSA P-256 with
// SHA-256 over the timestamp header's text followed by the body. The
// configured secrets are verification keys, each the base64 of a PKIX DER
// public key exactly as SendGrid's settings page shows it (a PEM "PUBLIC
// KEY" block is accepted too); several keys may be configured during
// rotation. Being asymmetric, a leaked configuration cannot forge events.
//
// One delivery is a JSON array of events; Split returns one identity per
// event.
type SendGrid struct {
	tolerance time.Duration

	mu   sync.Mutex
	keys map[string]*ecdsa.PublicKey // parsed secrets, bounded
}

// sendgridMaxKeys bounds the parsed-key cache: a source has one or two
// keys, so more entries mean keys that keep changing, which are parsed on
// every call instead.
const sendgridMaxKeys = 16

var (
	_ Scheme   = (*SendGrid)(nil)
	_ Splitter = (*SendGrid)(nil)
	_ Signer   = (*SendGrid)(nil)
)

// NewSendGrid returns the SendGrid scheme. The tolerance on the signed
// timestamp defaults to five minutes (SendGrid documents no window); a URL
// or HMAC options, which the scheme does not use, are refused.
func NewSendGrid(o Options) (*SendGrid, error) {
	if err := checkOptions("sendgrid", o, usesTolerance); err != nil {
		return nil, err
	}
	tol := toleranceOr(o, DefaultTolerance)
	return &SendGrid{tolerance: tol, keys: map[string]*ecdsa.PublicKey{}}, nil
}

// Verify implements Scheme. Secrets that are not P-256 public keys are
// skipped like empty ones; when none is usable the cause is ErrNoSecret.
func (s *SendGrid) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := header(r.Header, SendGridSignatureHeader)
	if err != nil {
		return err
	}
	sig, ok := sendgridSignature(v)
	if !ok {
		return fmt.Errorf("%w: %s is not a base64 DER ECDSA signature", ErrMalformedHeader, SendGridSignatureHeader)
	}
	tsRaw, err := header(r.Header, SendGridTimestampHeader)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformedHeader, SendGridTimestampHeader, err)
	}
	ts, ok := parseUnix(tsRaw)
	// The signature covers the text as sent: one instant, one spelling.
	if !ok || len(tsRaw) > 1 && tsRaw[0] == '0' {
		return fmt.Errorf("%w: %s is not unix seconds", ErrMalformedHeader, SendGridTimestampHeader)
	}
	if err := checkTimestamp(ts, now, s.tolerance); err != nil {
		return err
	}
	digest := sendgridDigest(tsRaw, r.Body)
	usable := false
	for _, secret := range secrets {
		pub := s.publicKey(secret)
		if pub == nil {
			continue
		}
		usable = true
		if ecdsa.VerifyASN1(pub, digest[:], sig) {
			return nil
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

// sendgridSignature decodes the header and checks the outer shape of a DER
// ECDSA P-256 signature: a SEQUENCE of 8 to 72 bytes. Anything else is a
// malformed header, not a mismatch.
func sendgridSignature(v string) ([]byte, bool) {
	if len(v) > base64.StdEncoding.EncodedLen(72) {
		return nil, false
	}
	sig, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(sig) < 8 || len(sig) > 72 || sig[0] != 0x30 || int(sig[1]) != len(sig)-2 {
		return nil, false
	}
	return sig, true
}

func sendgridDigest(ts string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(body)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// publicKey returns the P-256 key a secret encodes, nil when it encodes
// none. Parsing costs more than the signature check's hashing, so parsed
// keys are kept.
func (s *SendGrid) publicKey(secret []byte) *ecdsa.PublicKey {
	if len(bytes.TrimSpace(secret)) == 0 {
		return nil
	}
	s.mu.Lock()
	pub, ok := s.keys[string(secret)]
	s.mu.Unlock()
	if ok {
		return pub
	}
	pub = sendgridParsePublic(secret)
	s.mu.Lock()
	if len(s.keys) < sendgridMaxKeys {
		s.keys[string(secret)] = pub // nil too: a bad secret stays bad
	}
	s.mu.Unlock()
	return pub
}

func sendgridParsePublic(secret []byte) *ecdsa.PublicKey {
	der, ok := sendgridDER(secret, "PUBLIC KEY")
	if !ok {
		return nil
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil
	}
	pub, ok := k.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil
	}
	return pub
}

// sendgridDER returns the DER inside a PEM block of the given type, or
// inside standard base64 (surrounding whitespace ignored).
func sendgridDER(secret []byte, pemType string) ([]byte, bool) {
	secret = bytes.TrimSpace(secret)
	if bytes.HasPrefix(secret, []byte("-----BEGIN ")) {
		b, _ := pem.Decode(secret)
		if b == nil || b.Type != pemType && !(pemType == "PRIVATE KEY" && b.Type == "EC PRIVATE KEY") {
			return nil, false
		}
		return b.Bytes, true
	}
	der := make([]byte, base64.StdEncoding.DecodedLen(len(secret)))
	n, err := base64.StdEncoding.Decode(der, secret)
	if err != nil || n == 0 {
		return nil, false
	}
	return der[:n], true
}

var sendgridFields = []string{"sg_event_id", "event", "timestamp"}

// Split implements Splitter. The body must be a non-empty JSON array of
// objects, each with a non-empty string sg_event_id (SendGrid's id for
// deduplication, at most 512 bytes) and a non-empty string event; its
// Payload is the element's own bytes (a sub-slice of r.Body), Type the
// event, Created its timestamp (unix seconds) when present. One bad
// element fails the delivery: its events are stored together or not at
// all.
func (s *SendGrid) Split(r Request) ([]Identity, error) {
	// Every event names its id once: counting the key sizes the result in
	// one allocation (an estimate, bounded; append grows it if needed).
	capacity := min(max(1, bytes.Count(r.Body, []byte(`"sg_event_id"`))), 1024)
	var f [3][]byte
	return splitEvents("sendgrid", r.Body, sendgridFields, f[:], capacity, func(elem []byte) (Identity, error) {
		return sendgridEvent(elem, f[:])
	})
}

// sendgridEvent reads one event from the values of sendgridFields.
func sendgridEvent(elem []byte, f [][]byte) (Identity, error) {
	id, ok := jsonString(f[0])
	if !ok || id == "" || len(id) > MaxIdentity || !utf8.ValidString(id) {
		return Identity{}, fmt.Errorf("%w: sendgrid: missing sg_event_id", ErrInvalidPayload)
	}
	typ, ok := sendgridEventType(f[1])
	if !ok || typ == "" {
		return Identity{}, fmt.Errorf("%w: sendgrid: missing event", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ, Payload: elem}
	if len(f[2]) > 0 && string(f[2]) != "null" {
		n, ok := jsonInt(f[2])
		if !ok || n < 0 {
			return Identity{}, fmt.Errorf("%w: sendgrid: timestamp is not unix seconds", ErrInvalidPayload)
		}
		out.Created = time.Unix(n, 0).UTC()
	}
	return out, nil
}

// sendgridEventType reads the event field, returning SendGrid's own event
// names without allocating a copy of each.
func sendgridEventType(raw []byte) (string, bool) {
	switch string(raw) {
	case `"processed"`:
		return "processed", true
	case `"dropped"`:
		return "dropped", true
	case `"delivered"`:
		return "delivered", true
	case `"deferred"`:
		return "deferred", true
	case `"bounce"`:
		return "bounce", true
	case `"open"`:
		return "open", true
	case `"click"`:
		return "click", true
	case `"spamreport"`:
		return "spamreport", true
	case `"unsubscribe"`:
		return "unsubscribe", true
	case `"group_unsubscribe"`:
		return "group_unsubscribe", true
	case `"group_resubscribe"`:
		return "group_resubscribe", true
	}
	return jsonString(raw)
}

// Identify implements Scheme for a delivery of exactly one event; ingest
// uses Split, which accepts any number.
func (s *SendGrid) Identify(r Request) (Identity, error) {
	ids, err := s.Split(r)
	return oneEvent("sendgrid", ids, err)
}

// Sign implements Signer. key is the P-256 private key whose public half is
// the configured secret: base64 of PKCS#8 DER or of SEC1 DER ("EC PRIVATE
// KEY"), or the same in a PEM block. It sets the timestamp header to now in
// unix seconds and the signature header to a fresh (randomized) signature.
func (s *SendGrid) Sign(r *Request, key []byte, now time.Time) error {
	priv, err := sendgridParsePrivate(key)
	if err != nil {
		return err
	}
	if now.Unix() < 0 {
		return errors.New("signature: sendgrid: cannot sign a time before 1970")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	digest := sendgridDigest(ts, r.Body)
	sig, err := ecdsa.SignASN1(rand.Reader, priv, digest[:])
	if err != nil {
		return fmt.Errorf("signature: sendgrid: sign: %w", err)
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(SendGridTimestampHeader, ts)
	r.Header.Set(SendGridSignatureHeader, base64.StdEncoding.EncodeToString(sig))
	return nil
}

func sendgridParsePrivate(key []byte) (*ecdsa.PrivateKey, error) {
	der, ok := sendgridDER(key, "PRIVATE KEY")
	if !ok {
		return nil, fmt.Errorf("%w: sendgrid: key is not base64 or PEM", ErrNoSecret)
	}
	var priv *ecdsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		priv, _ = k.(*ecdsa.PrivateKey)
	} else if k, err := x509.ParseECPrivateKey(der); err == nil {
		priv = k
	}
	if priv == nil || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: sendgrid: key is not a P-256 private key (PKCS#8 or SEC1)", ErrNoSecret)
	}
	return priv, nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *SendGrid) KeptHeaders() []string {
	return []string{SendGridSignatureHeader, SendGridTimestampHeader}
}
