package signature

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Headers Twilio sets on its webhook requests.
const (
	// TwilioSignatureHeader carries base64(HMAC-SHA1(auth token, URL +
	// parameters)).
	TwilioSignatureHeader = "X-Twilio-Signature"
	// TwilioIdempotencyHeader carries Twilio's id of one webhook request,
	// repeated on its retries.
	TwilioIdempotencyHeader = "I-Twilio-Idempotency-Token"
)

// twilioBodyHashParam names the query parameter by which Twilio signs a
// JSON body through its SHA-256.
const twilioBodyHashParam = "bodySHA256"

// twilioMaxParams bounds the parameters of one form body; Twilio sends a
// few dozen.
const twilioMaxParams = 1000

// Twilio verifies X-Twilio-Signature: base64 of an HMAC-SHA1, keyed with
// the account's auth token, over the URL Twilio called (the configured
// public URL, plus "?" and the query as sent) followed by the POST
// parameters. It signs no timestamp, so there is no tolerance: replays are
// stopped only by the dedupe key.
//
// A form body (application/x-www-form-urlencoded) is decoded as Go's
// url.ParseQuery does; its parameters are appended sorted by name in byte
// order, each as name then value with no delimiter. A name sent several
// times contributes each distinct value, values sorted, as twilio-node's
// validator does (twilio-python keeps identical repeats, twilio-go reads
// only the first value; they agree whenever values differ).
//
// When the query carries bodySHA256 (Twilio's JSON webhooks), the
// signature covers the URL alone and the body's SHA-256 must equal that
// hex value, compared in constant time.
//
// As all of Twilio's SDKs do, the URL is also tried with its default port
// added (or its port removed), because Twilio signs either spelling.
type Twilio struct {
	urls [][]byte // the configured URL, then its port variant
}

var (
	_ Scheme = (*Twilio)(nil)
	_ Signer = (*Twilio)(nil)
)

// NewTwilio returns the Twilio scheme for o.URL, the public URL configured
// in Twilio, which is required: an absolute http(s) URL without query or
// fragment (the query is taken from each request). A Tolerance is refused,
// Twilio signing no timestamp, and so are HMAC options.
func NewTwilio(o Options) (*Twilio, error) {
	if err := checkOptions("twilio", o, usesURL); err != nil {
		return nil, err
	}
	if err := checkSignedURL("Twilio", o.URL); err != nil {
		return nil, fmt.Errorf("signature: twilio: URL: %w", err)
	}
	s := &Twilio{urls: [][]byte{[]byte(o.URL)}}
	if alt, ok := twilioPortVariant(o.URL); ok && alt != o.URL {
		s.urls = append(s.urls, []byte(alt))
	}
	return s, nil
}

// twilioPortVariant returns raw with the scheme's default port added when
// it has none, or with its port removed when it has one.
func twilioPortVariant(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	start := strings.Index(raw, "//") + 2
	end := start + len(u.Host)
	if start < 2 || end > len(raw) || raw[start:end] != u.Host {
		return "", false
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host += ":" + port
	} else {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	return raw[:start] + host + raw[end:], true
}

// twilioForm is a decoded form body. Parameters are offsets into buf (the
// body itself when nothing needs decoding), so sorting them moves no
// pointers.
type twilioForm struct {
	buf    []byte
	params []twilioParam
}

// twilioParam locates one parameter's name and value in its form's buf;
// key is the name's first eight bytes, big-endian, which decides most
// comparisons without touching buf.
type twilioParam struct {
	key            uint64
	ns, ne, vs, ve uint32
}

func (f *twilioForm) name(p twilioParam) []byte  { return f.buf[p.ns:p.ne] }
func (f *twilioForm) value(p twilioParam) []byte { return f.buf[p.vs:p.ve] }

func (f *twilioForm) compare(a, b twilioParam) int {
	if a.key != b.key {
		return cmp.Compare(a.key, b.key)
	}
	if c := bytes.Compare(f.name(a), f.name(b)); c != 0 {
		return c
	}
	return bytes.Compare(f.value(a), f.value(b))
}

// twilioKey packs the first eight bytes of name (zero-padded) so that
// integer order is byte order wherever the keys differ.
func twilioKey(name []byte) uint64 {
	var b [8]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

var errTwilioForm = errors.New("body is not form-encoded")

// twilioPairs walks the non-empty pairs of a form body in order. Like
// url.ParseQuery it splits on '&' only and refuses a pair containing ';';
// it also refuses more than twilioMaxParams pairs. A loop over next keeps
// the position and the caller's state in registers, which a callback
// would move to the heap.
type twilioPairs struct {
	body  []byte
	start int
}

// newTwilioPairs checks the pair count and the length (offsets are uint32).
func newTwilioPairs(body []byte) (twilioPairs, int, error) {
	n := bytes.Count(body, []byte{'&'})
	if n >= twilioMaxParams || uint64(len(body)) > math.MaxUint32 {
		return twilioPairs{}, 0, errTwilioForm
	}
	return twilioPairs{body: body}, n + 1, nil
}

// next returns the offset, raw name and raw value of the next non-empty
// pair; ok is false at the end, err set for a pair with ';'.
func (it *twilioPairs) next() (off int, name, value []byte, ok bool, err error) {
	for it.start < len(it.body) {
		end := bytes.IndexByte(it.body[it.start:], '&')
		if end < 0 {
			end = len(it.body)
		} else {
			end += it.start
		}
		pair := it.body[it.start:end]
		off, it.start = it.start, end+1
		if bytes.IndexByte(pair, ';') >= 0 {
			return 0, nil, nil, false, errTwilioForm
		}
		if len(pair) == 0 {
			continue
		}
		name, value = pair, pair[len(pair):]
		if eq := bytes.IndexByte(pair, '='); eq >= 0 {
			name, value = pair[:eq], pair[eq+1:]
		}
		return off, name, value, true, nil
	}
	return 0, nil, nil, false, nil
}

// twilioParseForm decodes a form body as url.ParseQuery does ('+' is a
// space, a bad escape is an error), parameters in body order.
func twilioParseForm(body []byte) (twilioForm, error) {
	it, n, err := newTwilioPairs(body)
	if err != nil {
		return twilioForm{}, err
	}
	params := make([]twilioParam, 0, n)
	buf := body
	decode := bytes.IndexByte(body, '%') >= 0 || bytes.IndexByte(body, '+') >= 0
	if decode {
		// Decoding only shrinks: the buffer never grows past the body.
		buf = make([]byte, 0, len(body))
	}
	for {
		off, name, value, ok, err := it.next()
		if err != nil {
			return twilioForm{}, err
		}
		if !ok {
			break
		}
		var p twilioParam
		if !decode {
			p.ns, p.ne = uint32(off), uint32(off+len(name))
			p.vs, p.ve = uint32(off+len(name)+1), uint32(off+len(name)+1+len(value))
			if len(value) == 0 {
				p.vs, p.ve = p.ne, p.ne
			}
		} else {
			p.ns = uint32(len(buf))
			if buf, ok = twilioUnescape(buf, name); !ok {
				return twilioForm{}, errTwilioForm
			}
			p.ne, p.vs = uint32(len(buf)), uint32(len(buf))
			if buf, ok = twilioUnescape(buf, value); !ok {
				return twilioForm{}, errTwilioForm
			}
			p.ve = uint32(len(buf))
		}
		p.key = twilioKey(buf[p.ns:p.ne])
		params = append(params, p)
	}
	return twilioForm{buf: buf, params: params}, nil
}

// sort puts the parameters in signing order: by name then value, each
// identical pair once. Twilio sends a few dozen parameters, which a
// binary insertion sort orders faster than a generic sort calling a
// closure; long forms take the generic path.
func (f *twilioForm) sort() {
	p := f.params
	if len(p) > 64 {
		slices.SortFunc(p, f.compare)
	} else {
		for i := 1; i < len(p); i++ {
			x := p[i]
			lo, hi := 0, i
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if k := p[m].key; k > x.key || k == x.key && f.compare(p[m], x) > 0 {
					hi = m
				} else {
					lo = m + 1
				}
			}
			copy(p[lo+1:i+1], p[lo:i])
			p[lo] = x
		}
	}
	f.params = slices.CompactFunc(p, func(a, b twilioParam) bool { return f.compare(a, b) == 0 })
}

// twilioUnescape appends the query-unescaped s to dst, copying the runs
// between escapes whole.
func twilioUnescape(dst, s []byte) ([]byte, bool) {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '%' && s[i] != '+' {
			i++
		}
		dst = append(dst, s[:i]...)
		if i == len(s) {
			break
		}
		if s[i] == '+' {
			dst = append(dst, ' ')
			s = s[i+1:]
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return dst, false
		}
		dst = append(dst, twilioUnhex(s[i+1])<<4|twilioUnhex(s[i+2]))
		s = s[i+3:]
	}
	return dst, true
}

func twilioUnhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// twilioBodyHash returns the first bodySHA256 value of the query, read as
// url.ParseQuery reads it (a pair with a ';' or a bad escape is skipped),
// which is how the SDKs find it.
func twilioBodyHash(rawQuery string) (string, bool) {
	for rest := rawQuery; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if strings.IndexByte(pair, ';') >= 0 {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k != twilioBodyHashParam {
			if !strings.ContainsAny(k, "%+") {
				continue
			}
			if u, err := url.QueryUnescape(k); err != nil || u != twilioBodyHashParam {
				continue
			}
		}
		if !strings.ContainsAny(v, "%+") {
			return v, true
		}
		if u, err := url.QueryUnescape(v); err == nil {
			return u, true
		}
	}
	return "", false
}

// Verify implements Scheme. A form body that cannot be decoded cannot
// match (ErrNoMatch); a bodySHA256 that differs from the body's hash is a
// mismatch too.
func (s *Twilio) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := header(r.Header, TwilioSignatureHeader)
	if err != nil {
		return err
	}
	sig, ok := decodeBase64(v, sha1.Size)
	if !ok {
		return fmt.Errorf("%w: %s is not a base64 SHA-1", ErrMalformedHeader, TwilioSignatureHeader)
	}
	if len(usable(secrets)) == 0 {
		return ErrNoSecret
	}
	var form twilioForm
	if want, ok := twilioBodyHash(r.RawQuery); ok {
		got := sha256.Sum256(r.Body)
		wantSum, ok := decodeHex(want, sha256.Size)
		if !ok || !hmac.Equal(got[:], wantSum) {
			return fmt.Errorf("%w: body does not match %s", ErrNoMatch, twilioBodyHashParam)
		}
	} else if form, err = twilioParseForm(r.Body); err != nil {
		return fmt.Errorf("%w: %v", ErrNoMatch, err)
	} else {
		form.sort()
	}
	// The signed string after the URL, built once: one Write per MAC
	// rather than two per parameter.
	signed := twilioSigned(r.RawQuery, &form)
	var sum [sha1.Size]byte
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		for _, u := range s.urls {
			m := hmac.New(sha1.New, secret)
			m.Write(u)
			m.Write(signed)
			if hmac.Equal(m.Sum(sum[:0]), sig) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// twilioSigned returns what Twilio signs after the URL: "?" and the query
// when there is one, then each parameter's name and value in f's order.
func twilioSigned(rawQuery string, f *twilioForm) []byte {
	n := 0
	if rawQuery != "" {
		n = 1 + len(rawQuery)
	}
	for _, p := range f.params {
		n += int(p.ne-p.ns) + int(p.ve-p.vs)
	}
	out := make([]byte, 0, n)
	if rawQuery != "" {
		out = append(append(out, '?'), rawQuery...)
	}
	for _, p := range f.params {
		out = append(append(out, f.name(p)...), f.value(p)...)
	}
	return out
}

// twilioMAC appends HMAC-SHA1(secret, u ["?" query] params…) to dst.
func twilioMAC(dst, secret, u []byte, rawQuery string, f *twilioForm) []byte {
	m := hmac.New(sha1.New, secret)
	m.Write(u)
	m.Write(twilioSigned(rawQuery, f))
	return m.Sum(dst)
}

// Identify implements Scheme. The dedupe key, in order of preference:
//
//  1. I-Twilio-Idempotency-Token, Twilio's own id of one webhook request,
//     which its retries repeat. Like GitHub's delivery id it is a header
//     outside the signature.
//  2. For a form body, signed fields that together name one callback:
//     MessageSid (or SmsSid) + ":" + MessageStatus (or SmsStatus), since
//     Programmable Messaging reports each status of a message once and
//     receives a message once; or CallSid + ":" + CallStatus + ":" +
//     SequenceNumber for the call status callbacks Twilio numbers. A
//     MessageSid without a status (Conversations) or a CallSid without a
//     sequence number (a Gather in the same call repeats its status) is not
//     enough, and falls through.
//  3. The hex SHA-256 of the signed query and of the signed content: the
//     decoded, sorted parameters (length-prefixed), or the raw JSON body.
//     Twilio's retries resend identical requests; hashing the decoded
//     parameters rather than the bytes means that re-encoding a signed form
//     ("%20" for "+", an extra "&") cannot mint a new key.
//
// Type is "message-status:" + MessageStatus for message status callbacks;
// else EventType where the body has one (Conversations, TaskRouter); "sms"
// for an inbound message (MessageSid or SmsSid, SmsStatus absent or
// "received"); "message-status:" + SmsStatus for the older status
// callbacks that carry only SmsStatus; "call-status:" + CallStatus for
// call requests; "json" for a JSON body; "webhook" otherwise. Created is the Timestamp parameter of call status callbacks
// (RFC 1123) when it parses. Attributes carry account_sid when the body
// names it. A field used for the identity that is repeated with different
// values makes the payload invalid.
func (s *Twilio) Identify(r Request) (Identity, error) {
	token, err := optionalHeader(r.Header, TwilioIdempotencyHeader)
	if err != nil || !utf8.ValidString(token) || len(token) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: twilio: bad %s", ErrInvalidPayload, TwilioIdempotencyHeader)
	}
	if _, ok := twilioBodyHash(r.RawQuery); ok {
		sc := scanner{b: r.Body}
		if _, err := sc.value(0); err != nil || sc.end() != nil {
			return Identity{}, fmt.Errorf("%w: twilio: body is not JSON", ErrInvalidPayload)
		}
		out := Identity{ID: token, Type: "json"}
		if out.ID == "" {
			out.ID = twilioContentKey(r.RawQuery, nil, r.Body)
		}
		return out, nil
	}
	f, err := twilioFields(r.Body)
	if err != nil {
		return Identity{}, err
	}
	msgSid := cmp.Or(f[twilioMessageSid], f[twilioSmsSid])
	status := cmp.Or(f[twilioMessageStatus], f[twilioSmsStatus])
	out := Identity{ID: token, Type: "webhook"}
	switch {
	case f[twilioMessageStatus] != "":
		out.Type = "message-status:" + f[twilioMessageStatus]
	case f[twilioEventType] != "":
		out.Type = f[twilioEventType]
	case msgSid != "" && (status == "" || status == "received"):
		out.Type = "sms"
	case msgSid != "":
		out.Type = "message-status:" + status
	case f[twilioCallStatus] != "":
		out.Type = "call-status:" + f[twilioCallStatus]
	}
	if out.ID == "" {
		switch {
		case msgSid != "" && status != "":
			out.ID = msgSid + ":" + status
		case f[twilioCallSid] != "" && f[twilioCallStatus] != "" && f[twilioSequenceNumber] != "":
			out.ID = f[twilioCallSid] + ":" + f[twilioCallStatus] + ":" + f[twilioSequenceNumber]
		default:
			form, err := twilioParseForm(r.Body)
			if err != nil {
				return Identity{}, fmt.Errorf("%w: twilio: %v", ErrInvalidPayload, err)
			}
			form.sort()
			out.ID = twilioContentKey(r.RawQuery, &form, nil)
		}
	}
	if len(out.ID) > MaxIdentity || len(out.Type) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: twilio: id or type longer than %d bytes", ErrInvalidPayload, MaxIdentity)
	}
	if ts := f[twilioTimestamp]; ts != "" {
		if t, err := time.Parse(time.RFC1123Z, ts); err == nil {
			out.Created = t.UTC()
		}
	}
	if f[twilioAccountSid] != "" {
		out.Attributes = map[string]string{"account_sid": f[twilioAccountSid]}
	}
	return out, nil
}

// The form fields Identify reads, indexes into the array fields returns.
const (
	twilioMessageSid = iota
	twilioSmsSid
	twilioMessageStatus
	twilioSmsStatus
	twilioCallSid
	twilioCallStatus
	twilioSequenceNumber
	twilioTimestamp
	twilioAccountSid
	twilioEventType
	twilioNumFields
)

// twilioFieldIndex maps a parameter name to its index, -1 for the others.
func twilioFieldIndex(name []byte) int {
	switch string(name) {
	case "MessageSid":
		return twilioMessageSid
	case "SmsSid":
		return twilioSmsSid
	case "MessageStatus":
		return twilioMessageStatus
	case "SmsStatus":
		return twilioSmsStatus
	case "CallSid":
		return twilioCallSid
	case "CallStatus":
		return twilioCallStatus
	case "SequenceNumber":
		return twilioSequenceNumber
	case "Timestamp":
		return twilioTimestamp
	case "AccountSid":
		return twilioAccountSid
	case "EventType":
		return twilioEventType
	}
	return -1
}

// twilioFields returns the values of the parameters Identify reads (""
// when absent) in one pass over a form body, which it validates as
// twilioParseForm does while decoding only what it keeps. A parameter
// repeated with different values, or a value that is not UTF-8, is an
// invalid payload.
func twilioFields(body []byte) (out [twilioNumFields]string, err error) {
	it, _, err := newTwilioPairs(body)
	if err != nil {
		return out, fmt.Errorf("%w: twilio: %v", ErrInvalidPayload, err)
	}
	var seen [twilioNumFields]bool
	for {
		_, name, value, ok, err := it.next()
		if err != nil {
			return out, fmt.Errorf("%w: twilio: %v", ErrInvalidPayload, err)
		}
		if !ok {
			return out, nil
		}
		if !twilioEscapesValid(name) || !twilioEscapesValid(value) {
			return out, fmt.Errorf("%w: twilio: %v", ErrInvalidPayload, errTwilioForm)
		}
		if twilioNeedsDecode(name) {
			name, _ = twilioUnescape(nil, name)
		}
		i := twilioFieldIndex(name)
		if i < 0 {
			continue
		}
		if twilioNeedsDecode(value) {
			value, _ = twilioUnescape(nil, value)
		}
		if !utf8.Valid(value) {
			return out, fmt.Errorf("%w: twilio: %s is not UTF-8", ErrInvalidPayload, name)
		}
		if seen[i] {
			if out[i] != string(value) {
				return out, fmt.Errorf("%w: twilio: %s repeated with different values", ErrInvalidPayload, name)
			}
			continue
		}
		seen[i], out[i] = true, string(value)
	}
}

func twilioNeedsDecode(s []byte) bool {
	return bytes.IndexByte(s, '%') >= 0 || bytes.IndexByte(s, '+') >= 0
}

// twilioEscapesValid reports whether every '%' in s starts an escape.
func twilioEscapesValid(s []byte) bool {
	for i := bytes.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		j := bytes.IndexByte(s[i+3:], '%')
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return true
}

// twilioContentKey hashes the query and either the form's sorted
// parameters or, when f is nil, the body, each length-prefixed so that no
// two inputs share an encoding.
func twilioContentKey(rawQuery string, f *twilioForm, body []byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(b))))
		h.Write(b)
	}
	put([]byte(rawQuery))
	if f == nil {
		put(body)
	} else {
		for _, p := range f.params {
			put(f.name(p))
			put(f.value(p))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Sign implements Signer: it sets X-Twilio-Signature for r as Twilio would,
// over the configured URL. A JSON body (Content-Type application/json)
// whose query has no bodySHA256 gets one appended to r.RawQuery first, as
// Twilio adds it to the URL it calls; any other body must be a form.
func (s *Twilio) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	_, hashed := twilioBodyHash(r.RawQuery)
	if mt, _, _ := mime.ParseMediaType(hget(r.Header, "Content-Type")); !hashed && mt == "application/json" {
		sum := sha256.Sum256(r.Body)
		if r.RawQuery != "" {
			r.RawQuery += "&"
		}
		r.RawQuery += twilioBodyHashParam + "=" + hex.EncodeToString(sum[:])
		hashed = true
	}
	var form twilioForm
	if !hashed {
		var err error
		if form, err = twilioParseForm(r.Body); err != nil {
			return fmt.Errorf("signature: twilio: sign: %w", err)
		}
		form.sort()
	}
	r.Header.Set(TwilioSignatureHeader, base64.StdEncoding.EncodeToString(twilioMAC(nil, key, s.urls[0], r.RawQuery, &form)))
	return nil
}
