package signature

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// MailgunDefaultTolerance is the age a Mailgun signature's timestamp may
// have. Mailgun retries a delivery for 8 hours and does not document
// whether a retry is signed again; a shorter window would refuse, and
// lose, retries that are not. The token is a nonce (see Nonced), so the
// window is not what stops a replay.
const MailgunDefaultTolerance = 12 * time.Hour

// mailgunMaxToken bounds a token: Mailgun's are 50 hex digits.
const mailgunMaxToken = 256

// Mailgun verifies Mailgun's webhooks (the JSON ones): the body's
// signature object holds timestamp, token and signature, the hex
// HMAC-SHA256, keyed with the account's HTTP webhook signing key, of
// timestamp followed by token. The body itself is not signed, so the
// token is a nonce (see Nonced): ingest accepts each token with the one
// body it first came with, and a captured signature cannot carry another.
// The timestamp must be within the tolerance (12 hours by default, see
// MailgunDefaultTolerance) old, and at most 5 minutes ahead.
type Mailgun struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Mailgun)(nil)
	_ Nonced = (*Mailgun)(nil)
	_ Signer = (*Mailgun)(nil)
)

// NewMailgun returns the Mailgun scheme. Setting o.URL or o.HMAC is an
// error.
func NewMailgun(o Options) (*Mailgun, error) {
	if err := checkOptions("mailgun", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Mailgun{tolerance: toleranceOr(o, MailgunDefaultTolerance)}, nil
}

var (
	mailgunFields    = []string{"signature", "event-data"}
	mailgunSigFields = []string{"timestamp", "token", "signature"}
	mailgunEvent     = []string{"id", "event", "timestamp"}
)

// mailgunSigned reads the signature object: its timestamp (canonical unix
// seconds), token (a word) and signature (hex of 32 bytes).
func mailgunSigned(body []byte) (ts time.Time, tsRaw, token string, sig [sha256.Size]byte, err error) {
	var f [2][]byte
	var s [3][]byte
	if jsonFieldsNested(body, mailgunFields, f[:], &nested{parent: "signature", keys: mailgunSigFields, out: s[:]}) != nil {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: body is not a JSON object", ErrMalformedHeader)
	}
	if !jsonPresent(f[0]) {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: no signature object", ErrNotSigned)
	}
	if f[0][0] != '{' {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: signature is not an object", ErrMalformedHeader)
	}
	tsRaw, ok := jsonString(s[0])
	if !ok {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: signature.timestamp is not a string", ErrMalformedHeader)
	}
	if ts, ok = canonicalUnix(tsRaw); !ok {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: signature.timestamp is not unix seconds", ErrMalformedHeader)
	}
	if token, ok = jsonString(s[1]); !ok || !isAlnum(token, mailgunMaxToken) {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: signature.token is not a word of letters and digits", ErrMalformedHeader)
	}
	hexSig, ok := jsonString(s[2])
	if !ok || !unhex(sig[:], hexSig) {
		return ts, "", "", sig, fmt.Errorf("%w: mailgun: signature.signature is not hex of 32 bytes", ErrMalformedHeader)
	}
	return ts, tsRaw, token, sig, nil
}

// isAlnum reports whether s is 1 to max ASCII letters and digits.
func isAlnum(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Verify implements Scheme.
func (m *Mailgun) Verify(r Request, secrets [][]byte, now time.Time) error {
	ts, tsRaw, token, sig, err := mailgunSigned(r.Body)
	if err != nil {
		return err
	}
	if now.Sub(ts) > m.tolerance {
		return ErrTooOld
	}
	if ts.Sub(now) > DefaultTolerance {
		return ErrTooNew
	}
	return matchSHA256(secrets, [][sha256.Size]byte{sig}, []byte(tsRaw), []byte(token))
}

// Nonce implements Nonced: the token, whose signature Verify accepts
// until the timestamp plus the tolerance.
func (m *Mailgun) Nonce(r Request) (string, time.Time) {
	ts, _, token, _, _ := mailgunSigned(r.Body)
	return token, ts.Add(m.tolerance)
}

// Identify implements Scheme. ID is event-data.id, Mailgun's id of the
// event; Type is event-data.event ("delivered", "opened"); Created is
// event-data.timestamp (fractional unix seconds).
func (m *Mailgun) Identify(r Request) (Identity, error) {
	var f [2][]byte
	var e [3][]byte
	if jsonFieldsNested(r.Body, mailgunFields, f[:], &nested{parent: "event-data", keys: mailgunEvent, out: e[:]}) != nil {
		return Identity{}, fmt.Errorf("%w: mailgun: body is not a JSON object", ErrInvalidPayload)
	}
	if len(f[1]) == 0 || f[1][0] != '{' {
		return Identity{}, fmt.Errorf("%w: mailgun: no event-data object", ErrInvalidPayload)
	}
	id, err := identityString("mailgun", "event-data.id", e[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("mailgun", "event-data.event", e[1])
	if err != nil {
		return Identity{}, err
	}
	var created time.Time
	if jsonPresent(e[2]) {
		var ok bool
		if created, ok = decimalSeconds(string(e[2])); !ok {
			return Identity{}, fmt.Errorf("%w: mailgun: event-data.timestamp is not unix seconds", ErrInvalidPayload)
		}
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// decimalSeconds reads unix seconds written as a JSON number of digits
// with an optional fraction ("1529006854.329574"), exactly (no float):
// at most 9 fraction digits are kept.
func decimalSeconds(s string) (time.Time, bool) {
	whole, frac, _ := cutByte(s, '.')
	sec, ok := parseUnix(whole)
	if !ok || sec.Unix() > maxUnixSeconds || len(frac) > 64 || (len(s) > len(whole) && frac == "") {
		return time.Time{}, false
	}
	var nsec int64
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		if i < 9 {
			nsec = nsec*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < 9; i++ {
		nsec *= 10
	}
	return time.Unix(sec.Unix(), nsec).UTC(), true
}

// Sign implements Signer as Mailgun signs: key is the webhook signing key.
// The signature is inside the body, so Sign rewrites r.Body (a JSON
// object), setting its signature object for now and a new token.
func (m *Mailgun) Sign(r *Request, key []byte, now time.Time) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		return fmt.Errorf("mailgun: body: %w", err)
	}
	ts, err := formatCanonicalUnix(now)
	if err != nil {
		return err
	}
	var b [25]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	token := hex.EncodeToString(b[:])
	sig, err := json.Marshal(map[string]string{
		"timestamp": ts,
		"token":     token,
		"signature": hex.EncodeToString(macOf(sha256.New, key, []byte(ts), []byte(token))),
	})
	if err != nil {
		return err
	}
	doc["signature"] = sig
	if r.Body, err = json.Marshal(doc); err != nil {
		return err
	}
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper): Mailgun signs nothing in its headers.
func (m *Mailgun) KeptHeaders() []string { return []string{"User-Agent"} }
