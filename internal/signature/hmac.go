package signature

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// HMAC verifies a provider that signs with a plain HMAC and has no kind of
// its own, described entirely by Options.HMAC: the header, its prefix and
// encoding, the algorithm, the signed template and where the event id and
// type live. It reproduces GitHub-, Shopify- and Slack-style signing, for
// example:
//
//	GitHub:  Header "X-Hub-Signature-256", Prefix "sha256=", hex, IDHeader "X-GitHub-Delivery"
//	Shopify: Header "X-Shopify-Hmac-Sha256", base64, IDHeader "X-Shopify-Event-Id"
//	Slack:   Header "X-Slack-Signature", Prefix "v0=", TimestampHeader
//	         "X-Slack-Request-Timestamp", Template "v0:{timestamp}:{body}", IDPath "event_id"
//
// One signature per header (no provider this describes sends several);
// rotation comes from several secrets.
type HMAC struct {
	header    string
	newHash   func() hash.Hash
	size      int
	base64    bool
	prefix    string
	tsHeader  string
	tolerance time.Duration
	parts     []hmacPart

	idHeader, typeHeader string
	idPath, typePath     []string
}

// hmacPart is one piece of the signed template: a literal, or the body or
// the timestamp as sent.
type hmacPart struct {
	kind    hmacPartKind
	literal []byte
}

type hmacPartKind uint8

const (
	hmacLiteral hmacPartKind = iota
	hmacBody
	hmacTimestamp
)

// hmacDefaultType is the type of an event whose configuration names no
// type source.
const hmacDefaultType = "webhook"

var (
	_ Scheme = (*HMAC)(nil)
	_ Signer = (*HMAC)(nil)
)

// NewHMAC validates o.HMAC and returns the scheme. Every invalid option is
// reported with the name of its field: a missing Header; an Algorithm other
// than sha1, sha256 or sha512; an Encoding other than hex or base64; a
// Template with a placeholder other than {body} and {timestamp}, without
// exactly one {body}, with {timestamp} but no TimestampHeader, or a
// TimestampHeader that the Template does not sign (a tolerance on an
// unsigned timestamp would be theatre); not exactly one of IDHeader and
// IDPath; both TypeHeader and TypePath; an empty segment in a path; a
// negative Tolerance, a Tolerance without a TimestampHeader (it would
// check nothing), or a URL, which the scheme does not sign.
func NewHMAC(o Options) (*HMAC, error) {
	h := o.HMAC
	fail := func(field, format string, args ...any) (*HMAC, error) {
		return nil, fmt.Errorf("signature: hmac: %s: %s", field, fmt.Sprintf(format, args...))
	}
	if o.Tolerance < 0 {
		return fail("Tolerance", "negative (%s)", o.Tolerance)
	}
	if o.Tolerance != 0 && h.TimestampHeader == "" {
		// Nothing would be checked: a signature from years ago would
		// verify today, while the configuration says it would not.
		return fail("Tolerance", "%s set, but no TimestampHeader carries a signed timestamp to apply it to", o.Tolerance)
	}
	if o.URL != "" {
		return fail("URL", "the generic HMAC scheme does not sign a URL")
	}
	if strings.TrimSpace(h.Header) == "" {
		return fail("Header", "required")
	}
	if !hmacHeaderName(h.Header) {
		return fail("Header", "%q is not a header name", h.Header)
	}
	// Names are kept as net/http stores them, so that lookups need not
	// canonicalize (and allocate) on every request.
	s := &HMAC{
		header:     http.CanonicalHeaderKey(h.Header),
		prefix:     h.Prefix,
		tsHeader:   http.CanonicalHeaderKey(h.TimestampHeader),
		idHeader:   http.CanonicalHeaderKey(h.IDHeader),
		typeHeader: http.CanonicalHeaderKey(h.TypeHeader),
		tolerance:  o.Tolerance,
	}
	if s.tolerance == 0 {
		s.tolerance = DefaultTolerance
	}
	switch h.Algorithm {
	case "", "sha1", "sha256", "sha512":
		nh, err := hashByName(h.Algorithm)
		if err != nil {
			return fail("Algorithm", "%v", err)
		}
		s.newHash, s.size = nh, nh().Size()
	default:
		return fail("Algorithm", "unknown algorithm %q (want sha1, sha256 or sha512)", h.Algorithm)
	}
	switch h.Encoding {
	case "", "hex":
	case "base64":
		s.base64 = true
	default:
		return fail("Encoding", "unknown encoding %q (want hex or base64)", h.Encoding)
	}
	for _, f := range []struct{ name, v string }{{"TimestampHeader", h.TimestampHeader}, {"IDHeader", h.IDHeader}, {"TypeHeader", h.TypeHeader}} {
		if f.v != "" && !hmacHeaderName(f.v) {
			return fail(f.name, "%q is not a header name", f.v)
		}
	}

	tmpl := h.Template
	if tmpl == "" {
		tmpl = "{body}"
	}
	parts, nBody, nTS, err := hmacParseTemplate(tmpl)
	if err != nil {
		return fail("Template", "%v", err)
	}
	switch {
	case nBody != 1:
		return fail("Template", "%q must contain {body} exactly once", tmpl)
	case nTS > 1:
		return fail("Template", "%q contains {timestamp} more than once", tmpl)
	case nTS == 1 && h.TimestampHeader == "":
		return fail("Template", "%q signs {timestamp} but TimestampHeader is empty", tmpl)
	case nTS == 0 && h.TimestampHeader != "":
		return fail("TimestampHeader", "%q is set but Template %q does not sign {timestamp}", h.TimestampHeader, tmpl)
	}
	s.parts = parts

	switch {
	case h.IDHeader == "" && h.IDPath == "":
		return fail("IDHeader", "one of IDHeader and IDPath is required")
	case h.IDHeader != "" && h.IDPath != "":
		return fail("IDPath", "set only one of IDHeader and IDPath")
	case h.TypeHeader != "" && h.TypePath != "":
		return fail("TypePath", "set at most one of TypeHeader and TypePath")
	}
	if h.IDPath != "" {
		if s.idPath, err = hmacSplitPath(h.IDPath); err != nil {
			return fail("IDPath", "%v", err)
		}
	}
	if h.TypePath != "" {
		if s.typePath, err = hmacSplitPath(h.TypePath); err != nil {
			return fail("TypePath", "%v", err)
		}
	}
	return s, nil
}

// hmacHeaderName reports whether name is an HTTP field name (RFC 9110
// token characters only).
func hmacHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// hmacParseTemplate splits a template into literals and placeholders. A
// brace that does not open {body} or {timestamp} is an error, so a typo
// such as {Body} or {ts} cannot silently sign a literal.
func hmacParseTemplate(t string) (parts []hmacPart, nBody, nTS int, err error) {
	lit := []byte{}
	flush := func() {
		if len(lit) > 0 {
			parts = append(parts, hmacPart{kind: hmacLiteral, literal: lit})
			lit = []byte{}
		}
	}
	for i := 0; i < len(t); {
		switch {
		case strings.HasPrefix(t[i:], "{body}"):
			flush()
			parts = append(parts, hmacPart{kind: hmacBody})
			nBody++
			i += len("{body}")
		case strings.HasPrefix(t[i:], "{timestamp}"):
			flush()
			parts = append(parts, hmacPart{kind: hmacTimestamp})
			nTS++
			i += len("{timestamp}")
		case t[i] == '{' || t[i] == '}':
			end := strings.IndexByte(t[i:], '}')
			if t[i] == '{' && end > 0 {
				return nil, 0, 0, fmt.Errorf("unknown placeholder %q (want {body} or {timestamp})", t[i:i+end+1])
			}
			return nil, 0, 0, fmt.Errorf("stray %q at byte %d (placeholders are {body} and {timestamp})", t[i], i)
		default:
			lit = append(lit, t[i])
			i++
		}
	}
	flush()
	return parts, nBody, nTS, nil
}

// hmacSplitPath splits a dotted JSON path; keys that contain dots cannot
// be addressed.
func hmacSplitPath(p string) ([]string, error) {
	segs := strings.Split(p, ".")
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty segment", p)
		}
	}
	return segs, nil
}

// Verify implements Scheme. The prefix is stripped exactly (case-sensitive)
// and the rest must decode to exactly the algorithm's length; when a
// TimestampHeader is configured its unix seconds must lie within the
// tolerance both ways, and the value as sent is what the template signs.
func (s *HMAC) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := header(r.Header, s.header)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(v, s.prefix) {
		return fmt.Errorf("%w: %s lacks prefix %q", ErrMalformedHeader, s.header, s.prefix)
	}
	v = v[len(s.prefix):]
	var (
		sig []byte
		ok  bool
	)
	if s.base64 {
		sig, ok = decodeBase64(v, s.size)
	} else {
		sig, ok = decodeHex(v, s.size)
	}
	if !ok {
		return fmt.Errorf("%w: %s is not a %d-byte signature", ErrMalformedHeader, s.header, s.size)
	}
	var tsRaw string
	if s.tsHeader != "" {
		tsRaw, err = header(r.Header, s.tsHeader)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrMalformedHeader, s.tsHeader, err)
		}
		ts, ok := parseUnix(tsRaw)
		// One timestamp, one signed string: a leading zero is refused.
		if !ok || len(tsRaw) > 1 && tsRaw[0] == '0' {
			return fmt.Errorf("%w: %s is not unix seconds", ErrMalformedHeader, s.tsHeader)
		}
		if err := checkTimestamp(ts, now, s.tolerance); err != nil {
			return err
		}
	}
	return matchAny(secrets, [][]byte{sig}, func(secret []byte) []byte {
		return s.mac(secret, r.Body, tsRaw)
	})
}

// mac writes the template's parts into the MAC in order, so the signed
// string is never built in memory.
func (s *HMAC) mac(secret, body []byte, ts string) []byte {
	m := hmac.New(s.newHash, secret)
	for _, p := range s.parts {
		switch p.kind {
		case hmacLiteral:
			m.Write(p.literal)
		case hmacBody:
			m.Write(body)
		case hmacTimestamp:
			m.Write([]byte(ts))
		}
	}
	return m.Sum(nil)
}

// Identify implements Scheme: the id from IDHeader or IDPath and the type
// from TypeHeader or TypePath (default "webhook"). A path must lead to a
// string or an integer (written in decimal); a configured type source that
// is missing is an invalid payload, since the sender always sets it. Ids
// are at most 512 bytes of UTF-8. When a path is configured the whole body
// must be valid JSON.
func (s *HMAC) Identify(r Request) (Identity, error) {
	var idRaw, typeRaw []byte
	if s.idPath != nil || s.typePath != nil {
		var err error
		idRaw, typeRaw, err = hmacLookup(r.Body, s.idPath, s.typePath)
		if err != nil {
			return Identity{}, fmt.Errorf("%w: hmac: body is not valid JSON", ErrInvalidPayload)
		}
	}
	id, err := s.field(r, s.idHeader, s.idPath, idRaw, "id")
	if err != nil {
		return Identity{}, err
	}
	if len(id) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: hmac: id longer than %d bytes", ErrInvalidPayload, MaxIdentity)
	}
	out := Identity{ID: id, Type: hmacDefaultType}
	if s.typeHeader != "" || s.typePath != nil {
		if out.Type, err = s.field(r, s.typeHeader, s.typePath, typeRaw, "type"); err != nil {
			return Identity{}, err
		}
	}
	return out, nil
}

// field reads one identity field from its header or from its JSON value.
func (s *HMAC) field(r Request, name string, path []string, raw []byte, what string) (string, error) {
	if name != "" {
		v, err := header(r.Header, name)
		if err != nil || !utf8.ValidString(v) {
			return "", fmt.Errorf("%w: hmac: %s header %s missing, repeated or not UTF-8", ErrInvalidPayload, what, name)
		}
		return v, nil
	}
	if v, ok := jsonString(raw); ok && v != "" {
		return v, nil
	}
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if n, ok := jsonInt(raw); ok {
			return strconv.FormatInt(n, 10), nil
		}
	}
	return "", fmt.Errorf("%w: hmac: %s at %s is not a non-empty string or an integer", ErrInvalidPayload, what, strings.Join(path, "."))
}

// hmacLookup validates body and returns the raw values at both paths (nil
// for a nil path or a missing value) in one pass over the top level.
func hmacLookup(body []byte, a, b []string) (va, vb []byte, err error) {
	keys := make([]string, 0, 2)
	if a != nil {
		keys = append(keys, a[0])
	}
	if b != nil {
		keys = append(keys, b[0])
	}
	var out [2][]byte
	if err := jsonFields(body, keys, out[:len(keys)]); err != nil {
		return nil, nil, err
	}
	i := 0
	if a != nil {
		if va, err = hmacDescend(out[0], a[1:]); err != nil {
			return nil, nil, err
		}
		i++
	}
	if b != nil {
		if vb, err = hmacDescend(out[i], b[1:]); err != nil {
			return nil, nil, err
		}
	}
	return va, vb, nil
}

// hmacDescend follows the remaining keys of a path from an already
// validated value; nil when a step is missing or not an object.
func hmacDescend(v []byte, rest []string) ([]byte, error) {
	var out [1][]byte
	for _, k := range rest {
		if len(v) == 0 || v[0] != '{' {
			return nil, nil
		}
		out[0] = nil
		sc := scanner{b: v}
		if err := sc.object(0, []string{k}, out[:]); err != nil {
			return nil, err
		}
		v = out[0]
	}
	return v, nil
}

// Sign implements Signer: it sets the signature header (with its prefix)
// and, when configured, the timestamp header to now in unix seconds.
func (s *HMAC) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	var ts string
	if s.tsHeader != "" {
		if now.Unix() < 0 {
			return errors.New("signature: hmac: cannot sign a time before 1970")
		}
		ts = strconv.FormatInt(now.Unix(), 10)
		r.Header.Set(s.tsHeader, ts)
	}
	sum := s.mac(key, r.Body, ts)
	enc := hex.EncodeToString(sum)
	if s.base64 {
		enc = base64.StdEncoding.EncodeToString(sum)
	}
	r.Header.Set(s.header, s.prefix+enc)
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper): the configured signature, timestamp, id and type headers.
func (s *HMAC) KeptHeaders() []string {
	var out []string
	for _, h := range []string{s.header, s.tsHeader, s.idHeader, s.typeHeader} {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}
