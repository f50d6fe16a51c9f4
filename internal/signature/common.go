package signature

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxHeader bounds a signature header: anything longer is malformed, and a
// verifier never parses megabytes of attacker input.
const maxHeader = 8 << 10

// header returns the single value of a signature header: ErrNotSigned when
// it is absent or empty, ErrMalformedHeader when it is repeated (two values
// or, as API Gateway v2 delivers repeats, joined by commas is the caller's
// concern) or too long.
func header(h http.Header, name string) (string, error) {
	vs := hvalues(h, name)
	if len(vs) == 0 || strings.TrimSpace(vs[0]) == "" {
		return "", ErrNotSigned
	}
	if len(vs) > 1 {
		return "", fmt.Errorf("%w: %d %s headers", ErrMalformedHeader, len(vs), name)
	}
	if len(vs[0]) > maxHeader {
		return "", fmt.Errorf("%w: %s too long", ErrMalformedHeader, name)
	}
	return vs[0], nil
}

// hvalues is h.Values(name) without the cost of canonicalizing a name
// that is canonical already, as the names in this package are: a map
// index (≈13 ns) instead of CanonicalMIMEHeaderKey and an index (≈90 ns),
// which a verifier looking up a dozen headers pays on every request. Keys
// of h are canonical, as http.Header.Set and the API Gateway normalizer
// store them.
func hvalues(h http.Header, name string) []string {
	if vs, ok := h[name]; ok || canonicalName(name) {
		return vs
	}
	return h.Values(name)
}

// hget is h.Get(name) through hvalues.
func hget(h http.Header, name string) string {
	if vs := hvalues(h, name); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// canonicalName reports whether name is made of letters, digits and
// hyphens in the case textproto.CanonicalMIMEHeaderKey gives them (upper
// case first and after each hyphen, lower case elsewhere), and so is its
// own canonical form. Other names, including ones CanonicalMIMEHeaderKey
// leaves alone, report false and take the slower path.
func canonicalName(name string) bool {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '-':
			upper = true
			continue
		case c >= 'A' && c <= 'Z':
			if !upper {
				return false
			}
		case c >= 'a' && c <= 'z':
			if upper {
				return false
			}
		case c >= '0' && c <= '9':
		default:
			return false
		}
		upper = false
	}
	return name != ""
}

// optionalHeader is header for values that may be absent: "" and no error
// when absent.
func optionalHeader(h http.Header, name string) (string, error) {
	v, err := header(h, name)
	if err == ErrNotSigned {
		return "", nil
	}
	return v, err
}

// macOf returns HMAC(key, parts...) with the hash h.
func macOf(h func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(h, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// hashByName maps the algorithm names of configurations to hashes.
func hashByName(name string) (func() hash.Hash, error) {
	switch strings.ToLower(name) {
	case "", "sha256":
		return sha256.New, nil
	case "sha1":
		return sha1.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown algorithm %q (want sha1, sha256 or sha512)", name)
}

// decodeHex decodes a hex signature of exactly n bytes; ok is false for any
// other length or a non-hex digit.
func decodeHex(s string, n int) ([]byte, bool) {
	b := make([]byte, n)
	return b, unhex(b, s)
}

// decodeBase64 decodes a standard-alphabet, padded base64 signature of
// exactly n bytes. Decoding is strict (unused padding bits must be zero),
// so one signature has one encoding.
func decodeBase64(s string, n int) ([]byte, bool) {
	if len(s) != base64.StdEncoding.EncodedLen(n) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil && len(b) == n
}

// hasUsable reports whether any secret is non-empty.
func hasUsable(secrets [][]byte) bool {
	for _, s := range secrets {
		if len(s) > 0 {
			return true
		}
	}
	return false
}

// matchAny reports whether mac(secret) equals any candidate for any secret,
// comparing in constant time. mac is called once per secret.
func matchAny(secrets [][]byte, candidates [][]byte, mac func(secret []byte) []byte) error {
	if !hasUsable(secrets) {
		return ErrNoSecret
	}
	if len(candidates) == 0 {
		return ErrNoMatch
	}
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		sum := mac(secret)
		for _, c := range candidates {
			if hmac.Equal(sum, c) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// matchSHA256 reports whether HMAC-SHA256(secret, parts...) equals any of
// sigs for any non-empty secret, comparing in constant time and allocating
// nothing but the HMAC state: ErrNoSecret when no secret is usable,
// ErrNoMatch when none matches.
func matchSHA256(secrets [][]byte, sigs [][sha256.Size]byte, parts ...[]byte) error {
	var sum [sha256.Size]byte
	usable := false
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue // an empty key is public: anyone could sign with it
		}
		usable = true
		mac := hmac.New(sha256.New, secret)
		for _, p := range parts {
			mac.Write(p)
		}
		mac.Sum(sum[:0])
		for i := range sigs {
			if hmac.Equal(sum[:], sigs[i][:]) {
				return nil
			}
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

// validID reports whether s can be an identity part: non-empty, at
// most MaxIdentity bytes, valid UTF-8 (DynamoDB strings must be).
func validID(s string) bool {
	return s != "" && len(s) <= MaxIdentity && utf8.ValidString(s)
}

// canonicalUnix is parseUnix that also refuses leading zeros: the MAC
// covers the digits as sent, so one instant has exactly one signed form.
func canonicalUnix(s string) (time.Time, bool) {
	if len(s) > 1 && s[0] == '0' {
		return time.Time{}, false
	}
	return parseUnix(s)
}

// formatCanonicalUnix is the inverse of canonicalUnix; times it cannot
// represent are an error rather than a header no verifier accepts.
func formatCanonicalUnix(t time.Time) (string, error) {
	sec := t.Unix()
	if sec < 0 || sec > 999_999_999_999 {
		return "", fmt.Errorf("signature: cannot sign at %s: outside unix seconds 0..999999999999", t)
	}
	return strconv.FormatInt(sec, 10), nil
}

// toleranceOr is o.Tolerance, or def when it is zero.
func toleranceOr(o Options, def time.Duration) time.Duration {
	if o.Tolerance == 0 {
		return def
	}
	return o.Tolerance
}

// optionUse says which of Options a kind takes.
type optionUse uint8

const (
	// usesTolerance: the kind signs a timestamp, checked against a window.
	usesTolerance optionUse = 1 << iota
	// usesURL: the kind signs the public URL of the endpoint, which the
	// kind itself validates.
	usesURL
)

// checkOptions refuses the options that mean nothing to kind, so that a
// configuration mistake fails at start-up instead of being silently
// ignored: a tolerance for a kind that signs no timestamp, a negative
// tolerance, a URL for a kind that signs none, and HMAC options anywhere
// but the generic hmac kind.
func checkOptions(kind string, o Options, uses optionUse) error {
	switch {
	case uses&usesTolerance == 0 && o.Tolerance != 0:
		return fmt.Errorf("signature: %s: tolerance %s set, but the provider signs no timestamp", kind, o.Tolerance)
	case o.Tolerance < 0:
		return fmt.Errorf("signature: %s: negative tolerance %s", kind, o.Tolerance)
	case uses&usesURL == 0 && o.URL != "":
		return fmt.Errorf("signature: %s: url set, but the provider does not sign the URL", kind)
	case o.HMAC != (HMACOptions{}):
		return fmt.Errorf("signature: %s: hmac options set; they belong to the generic hmac kind", kind)
	}
	return nil
}

// cutByte is strings.Cut for one byte.
func cutByte(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// unhex decodes exactly 2*len(dst) hex digits (either case) from s
// into dst without allocating; false for any other length or a non-hex
// byte, so a bad header is refused before anything is compared.
func unhex[T string | []byte](dst []byte, s T) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := nibble(s[2*i])
		lo, ok2 := nibble(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func nibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// checkSignedURL validates the public URL a provider signs (HubSpot,
// Twilio): configured, absolute http(s) with a host, and without user
// info, query or fragment, since the query comes from each request.
func checkSignedURL(provider, raw string) error {
	if raw == "" {
		return fmt.Errorf("required (the public URL %s calls)", provider)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q is not an http(s) URL", raw)
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return fmt.Errorf("%q has user info", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("%q has a query (it comes from each request)", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%q has a fragment", raw)
	}
	return nil
}

// splitEvents validates body as a non-empty JSON array of objects, filling
// fields with the raw values of keys in each element, and returns one
// identity per element as event reads it (SendGrid, HubSpot). One bad
// event fails the whole delivery: it is one signed request, answered once.
func splitEvents(kind string, body []byte, keys []string, fields [][]byte, capacity int, event func(elem []byte) (Identity, error)) ([]Identity, error) {
	out := make([]Identity, 0, capacity)
	err := jsonObjects(body, keys, fields, func(elem []byte) error {
		id, err := event(elem)
		if err != nil {
			return err
		}
		out = append(out, id)
		return nil
	})
	switch {
	case errors.Is(err, ErrInvalidPayload):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %s: body is not a JSON array of objects", ErrInvalidPayload, kind)
	case len(out) == 0:
		return nil, fmt.Errorf("%w: %s: no events", ErrInvalidPayload, kind)
	}
	return out, nil
}

// oneEvent is Identify for a Splitter, given its Split's result: the
// delivery must carry exactly one event (ingest uses Split, which accepts
// any number).
func oneEvent(kind string, ids []Identity, err error) (Identity, error) {
	if err != nil {
		return Identity{}, err
	}
	if len(ids) != 1 {
		return Identity{}, fmt.Errorf("%w: %s: %d events in one delivery (use Split)", ErrInvalidPayload, kind, len(ids))
	}
	return ids[0], nil
}

// jsonMayHold reports whether body may hold a JSON string that contains
// part, where part has no character with a short escape (quote, backslash,
// slash, control characters): part appears literally, or the body has a
// \u escape that could spell it. False means no string in body contains
// part, which lets a handshake check skip the scan of every ordinary event.
// A part starting with a byte rare in JSON ('v' rather than 'e') keeps the
// search on the vectorized IndexByte instead of a byte-by-byte comparison.
func jsonMayHold(body []byte, part string) bool {
	return bytes.Contains(body, []byte(part)) || bytes.Contains(body, []byte(`\u`))
}

// jsonPresent reports whether a raw value from jsonFields is there and not
// null.
func jsonPresent(raw []byte) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// identityString reads a field that names an event (its id or type): a
// non-empty JSON string of valid UTF-8 and at most MaxIdentity bytes.
func identityString(kind, name string, raw []byte) (string, error) {
	s, ok := jsonString(raw)
	if !ok || s == "" || len(s) > MaxIdentity {
		return "", fmt.Errorf("%w: %s: missing or unusable %s", ErrInvalidPayload, kind, name)
	}
	return s, nil
}

// jsonTime reads an optional RFC 3339 timestamp field: the zero time when
// absent or null, an error when it is anything but such a string.
func jsonTime(kind, name string, raw []byte) (time.Time, error) {
	if !jsonPresent(raw) {
		return time.Time{}, nil
	}
	s, ok := jsonString(raw)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s: %s is not a string", ErrInvalidPayload, kind, name)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: %s: %v", ErrInvalidPayload, kind, name, err)
	}
	return t, nil
}

// maxUnixSeconds is 9999-12-31T23:59:59Z, the last second RFC 3339 can
// write: a later creation time in unix seconds is garbage.
const maxUnixSeconds = 253402300799

// base64BodyVerify verifies a header holding prefix and the standard,
// padded base64 of an HMAC (newHash, size bytes) of body, as githubStyleVerify
// does for hex.
func base64BodyVerify(h http.Header, name, prefix string, newHash func() hash.Hash, size int, body []byte, secrets [][]byte) error {
	v, err := header(h, name)
	if err != nil {
		return err
	}
	enc, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return fmt.Errorf("%w: %s does not start with %q", ErrMalformedHeader, name, prefix)
	}
	sig, ok := decodeBase64(enc, size)
	if !ok {
		return fmt.Errorf("%w: %s is not base64 of %d bytes", ErrMalformedHeader, name, size)
	}
	return matchAny(secrets, [][]byte{sig}, func(secret []byte) []byte {
		return macOf(newHash, secret, body)
	})
}

// headerIdentity is Identify for the kinds whose event id and type come
// from headers (the id outside the signature: the providers table's
// footnote): the body must be a JSON object; each header must be present
// once, printable and at most MaxIdentity bytes (githubIdentityHeader).
func headerIdentity(kind string, r Request, idHeader, typeHeader string) (Identity, error) {
	if err := jsonFields(r.Body, nil, nil); err != nil {
		return Identity{}, fmt.Errorf("%w: %s: body is not a JSON object", ErrInvalidPayload, kind)
	}
	id, err := githubIdentityHeader(r.Header, idHeader)
	if err != nil {
		return Identity{}, err
	}
	typ, err := githubIdentityHeader(r.Header, typeHeader)
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Type: typ}, nil
}

// setHeader sets name to value on r's headers, creating them if needed.
func setHeader(r *Request, name, value string) {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(name, value)
}

// headerMillis reads a header of unix milliseconds (HubSpot's, Webflow's):
// ASCII digits, no leading zero (the MAC covers the text as sent, so one
// instant has one spelling), at most 16 digits (year 318857). A missing header is ErrNotSigned's cause wrapped as malformed.
func headerMillis(h http.Header, name string) (string, time.Time, error) {
	raw, err := header(h, name)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %s: %v", ErrMalformedHeader, name, err)
	}
	if len(raw) == 0 || len(raw) > 16 || len(raw) > 1 && raw[0] == '0' {
		return "", time.Time{}, fmt.Errorf("%w: %s is not unix milliseconds", ErrMalformedHeader, name)
	}
	var ms int64
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < '0' || c > '9' {
			return "", time.Time{}, fmt.Errorf("%w: %s is not unix milliseconds", ErrMalformedHeader, name)
		}
		ms = ms*10 + int64(c-'0')
	}
	return raw, time.UnixMilli(ms), nil
}

// matchCredential reports whether got, a credential sent in the clear (a
// Basic password, a header value, a verify token), equals one of secrets:
// the comparison is of SHA-256 digests in constant time, whatever the
// lengths. ErrNoSecret when no secret is usable, ErrNoMatch otherwise.
func matchCredential(got []byte, secrets [][]byte) error {
	g := sha256.Sum256(got)
	usable := false
	for _, s := range secrets {
		if len(s) == 0 {
			continue
		}
		usable = true
		want := sha256.Sum256(s)
		if subtle.ConstantTimeCompare(g[:], want[:]) == 1 {
			return nil
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrNoMatch
}

// isWord reports whether s is 1 to max bytes of [A-Za-z0-9_-]: the only
// challenges echoed back unsigned (Dropbox's, Okta's), so that nothing
// but an opaque word can be reflected.
func isWord(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '-', b == '_':
		default:
			return false
		}
	}
	return true
}

// ed25519Private is the signing key of the Ed25519 kinds' Signers: a
// 64-byte private key or its 32-byte seed.
func ed25519Private(kind string, key []byte) (ed25519.PrivateKey, error) {
	switch len(key) {
	case ed25519.PrivateKeySize:
		return ed25519.PrivateKey(key), nil
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(key), nil
	}
	return nil, fmt.Errorf("%w: %s: key is %d bytes, want a 64-byte Ed25519 private key or a 32-byte seed", ErrNoSecret, kind, len(key))
}

// minRSABits is the smallest RSA modulus a signing certificate may have.
const minRSABits = 2048

// maxRSASignature bounds a decoded RSA signature: a 8192-bit key's.
const maxRSASignature = 1024

// verifyCertRSA checks sig, an RSASSA-PKCS1-v1_5 signature of digest
// (made with hash h), against cert's key. The certificate must have been
// fetched (ErrUntrustedCertificate otherwise), be valid at now, and hold
// an RSA key of at least minRSABits (ErrUntrustedCertificate otherwise); a
// signature it does not verify is ErrNoMatch.
func verifyCertRSA(cert *x509.Certificate, now time.Time, h crypto.Hash, digest, sig []byte) error {
	switch {
	case cert == nil:
		return fmt.Errorf("%w: no certificate was fetched", ErrUntrustedCertificate)
	case now.Before(cert.NotBefore), now.After(cert.NotAfter):
		return fmt.Errorf("%w: certificate valid from %s to %s only", ErrUntrustedCertificate, cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return fmt.Errorf("%w: certificate key is not RSA", ErrUntrustedCertificate)
	}
	if key.N.BitLen() < minRSABits {
		return fmt.Errorf("%w: certificate key has %d bits", ErrUntrustedCertificate, key.N.BitLen())
	}
	if rsa.VerifyPKCS1v15(key, h, digest, sig) != nil {
		return ErrNoMatch
	}
	return nil
}

// decodeRSASignature decodes a standard, padded base64 RSA signature
// (strictly, so one signature has one encoding) of at most
// maxRSASignature bytes.
func decodeRSASignature[T string | []byte](s T) ([]byte, bool) {
	if len(s) == 0 || len(s) > base64.StdEncoding.EncodedLen(maxRSASignature) {
		return nil, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Strict().Decode(b, []byte(s))
	return b[:n], err == nil && n > 0
}

// providerURL parses raw, a URL a delivery names for its certificate or a
// confirmation, as the allow-list of a provider accepts it: https, one of
// hosts exactly (lower case, no port), no user info or fragment, a
// query only when query is set, and written in the one form url.URL gives
// it back, so that what was checked is what is fetched. Any other URL is
// ErrUntrustedCertificate.
func providerURL(raw string, hosts []string, query bool) (*url.URL, error) {
	refuse := func(why string) (*url.URL, error) {
		return nil, fmt.Errorf("%w: URL %s", ErrUntrustedCertificate, why)
	}
	if len(raw) > maxHeader {
		return refuse("too long")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '#' || c == '@' {
			return refuse("has a character no provider URL has")
		}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return refuse("does not parse")
	case u.Scheme != "https":
		return refuse("is not https")
	case !slices.Contains(hosts, u.Host):
		return refuse("is not on the provider's hosts")
	case u.User != nil || u.Opaque != "" || u.Fragment != "":
		return refuse("has user info or a fragment")
	case !query && (u.RawQuery != "" || u.ForceQuery):
		return refuse("has a query")
	case strings.Contains(u.EscapedPath(), "%"):
		return refuse("has an escape in its path")
	case u.String() != raw:
		return refuse("is not in canonical form")
	}
	return u, nil
}

// rsaPrivate decodes a PEM RSA private key, PKCS #1 or #8.
func rsaPrivate(kind string, key []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(key)
	if block == nil {
		return nil, fmt.Errorf("%w: %s: the signing key is not PEM", ErrNoSecret, kind)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: signing key: %v", ErrNoSecret, kind, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s: the signing key is not RSA", ErrNoSecret, kind)
	}
	return rk, nil
}
