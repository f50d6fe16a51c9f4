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
	"sync"
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

// twilioParseForm decodes a form body as url.ParseQuery does ('+' is a
// space, a bad escape is an error), parameters in body order.
func twilioParseForm(body []byte) (twilioForm, error) {
	return twilioParseFormInto(body, nil, nil)
}

// twilioParseFormInto is twilioParseForm reusing buf's and params'
// capacity (Verify's pooled scratch). It decodes the whole body in one
// pass: decoding only shrinks, so buf is sized once and written by index.
func twilioParseFormInto(body, buf []byte, params []twilioParam) (twilioForm, error) {
	n := bytes.Count(body, []byte{'&'})
	if n >= twilioMaxParams || uint64(len(body)) > math.MaxUint32 {
		return twilioForm{}, errTwilioForm
	}
	params = slices.Grow(params[:0], n+1)
	buf = slices.Grow(buf[:0], len(body))[:len(body)]
	var p twilioParam
	inName := true // no '=' yet in this pair
	rawStart := 0  // where this pair starts in body
	i, j := 0, 0   // read from body, written to buf
	for {
		// Copy the plain bytes, most of a form, one table lookup each.
		for i < len(body) && j < len(buf) && !twilioFormSpecial[body[i]] {
			buf[j] = body[i]
			i++
			j++
		}
		if i >= len(body) || body[i] == '&' {
			if i > rawStart { // url.ParseQuery skips empty pairs
				if inName {
					p.ne, p.vs = uint32(j), uint32(j)
				}
				p.ve = uint32(j)
				p.key = twilioKey(buf[p.ns:p.ne])
				params = append(params, p)
			}
			if i >= len(body) {
				break
			}
			i++
			p, inName, rawStart = twilioParam{ns: uint32(j)}, true, i
			continue
		}
		c := body[i]
		switch c {
		case '=':
			if inName {
				p.ne, p.vs, inName = uint32(j), uint32(j), false
				i++
				continue
			}
		case ';':
			return twilioForm{}, errTwilioForm
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(body) {
				return twilioForm{}, errTwilioForm
			}
			hi, ok1 := nibble(body[i+1])
			lo, ok2 := nibble(body[i+2])
			if !ok1 || !ok2 {
				return twilioForm{}, errTwilioForm
			}
			c = hi<<4 | lo
			i += 2
		}
		buf[j] = c
		i++
		j++
	}
	return twilioForm{buf: buf[:j], params: params}, nil
}

// twilioFormSpecial marks the bytes of a form body that are not copied
// as they are: the pair and name separators, ';' (refused), '+' and '%'.
var twilioFormSpecial = [256]bool{'&': true, '=': true, ';': true, '+': true, '%': true}

// twilioScratch is the memory one Verify or Identify of a form body needs:
// the decoded parameters, their index and (Verify) the signed string.
// Pooled, so that a busy function decodes into warm buffers instead of
// allocating them per request.
type twilioScratch struct {
	buf, signed []byte
	params      []twilioParam
}

var twilioScratchPool = sync.Pool{New: func() any { return new(twilioScratch) }}

// twilioScratchMax bounds the buffers kept in the pool, so that one huge
// body does not pin its memory for the life of the process.
const twilioScratchMax = 64 << 10

func (sc *twilioScratch) release() {
	if cap(sc.buf) > twilioScratchMax || cap(sc.signed) > twilioScratchMax || cap(sc.params) > twilioMaxParams {
		return
	}
	twilioScratchPool.Put(sc)
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
	// Drop identical pairs: neighbours once sorted, and only worth
	// comparing when their keys agree.
	n := min(len(p), 1)
	for i := 1; i < len(p); i++ {
		if p[i].key != p[n-1].key || f.compare(p[i], p[n-1]) != 0 {
			p[n] = p[i]
			n++
		}
	}
	f.params = p[:n]
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
	if !hasUsable(secrets) {
		return ErrNoSecret
	}
	sc := twilioScratchPool.Get().(*twilioScratch)
	defer sc.release()
	var form twilioForm
	if want, ok := twilioBodyHash(r.RawQuery); ok {
		got := sha256.Sum256(r.Body)
		wantSum, ok := decodeHex(want, sha256.Size)
		if !ok || !hmac.Equal(got[:], wantSum) {
			return fmt.Errorf("%w: body does not match %s", ErrNoMatch, twilioBodyHashParam)
		}
	} else if form, err = twilioParseFormInto(r.Body, sc.buf, sc.params); err != nil {
		return fmt.Errorf("%w: %v", ErrNoMatch, err)
	} else {
		form.sort()
		sc.buf, sc.params = form.buf, form.params
	}
	// The signed string after the URL, built once: one Write per MAC
	// rather than two per parameter.
	signed := twilioSigned(sc.signed[:0], r.RawQuery, &form)
	sc.signed = signed
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

// twilioSigned appends to out what Twilio signs after the URL: "?" and the
// query when there is one, then each parameter's name and value in f's
// order.
func twilioSigned(out []byte, rawQuery string, f *twilioForm) []byte {
	n := 0
	if rawQuery != "" {
		n = 1 + len(rawQuery)
	}
	for _, p := range f.params {
		n += int(p.ne-p.ns) + int(p.ve-p.vs)
	}
	out = slices.Grow(out, n)
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
	m.Write(twilioSigned(nil, rawQuery, f))
	return m.Sum(dst)
}

// Identify implements Scheme. The dedupe key is built from what the
// signature covers — Twilio signs no timestamp, so a key read from an
// unsigned header would let a captured request be stored again, forever,
// under a fresh header value:
//
//  1. For a form body, signed fields that together name one callback:
//     MessageSid (or SmsSid) + ":" + MessageStatus (or SmsStatus), since
//     Programmable Messaging reports each status of a message once and
//     receives a message once; or CallSid + ":" + CallStatus + ":" +
//     SequenceNumber for the call status callbacks Twilio numbers. A
//     MessageSid without a status (Conversations) or a CallSid without a
//     sequence number (a Gather in the same call repeats its status) is not
//     enough, and falls through.
//  2. The hex SHA-256 of the signed query and of the signed content: the
//     decoded, sorted parameters (length-prefixed), or the raw JSON body.
//     Twilio's retries resend identical requests; hashing the decoded
//     parameters rather than the bytes means that re-encoding a signed form
//     ("%20" for "+", an extra "&") cannot mint a new key.
//
// I-Twilio-Idempotency-Token, Twilio's own id of one webhook request, is
// outside the signature: it is kept as the attribute idempotency_token,
// never as the key.
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
		out := Identity{ID: twilioContentKey(r.RawQuery, nil, r.Body), Type: "json"}
		out.Attributes = twilioTokenAttr(nil, token)
		return out, nil
	}
	sc := twilioScratchPool.Get().(*twilioScratch)
	defer sc.release()
	form, err := twilioParseFormInto(r.Body, sc.buf, sc.params)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: twilio: %v", ErrInvalidPayload, err)
	}
	sc.buf, sc.params = form.buf, form.params
	f, err := twilioFields(&form)
	if err != nil {
		return Identity{}, err
	}
	msgSid := cmp.Or(f[twilioMessageSid], f[twilioSmsSid])
	status := cmp.Or(f[twilioMessageStatus], f[twilioSmsStatus])
	out := Identity{Type: "webhook"}
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
	switch {
	case msgSid != "" && status != "":
		out.ID = msgSid + ":" + status
	case f[twilioCallSid] != "" && f[twilioCallStatus] != "" && f[twilioSequenceNumber] != "":
		out.ID = f[twilioCallSid] + ":" + f[twilioCallStatus] + ":" + f[twilioSequenceNumber]
	default:
		form.sort()
		sc.params = form.params
		out.ID = twilioContentKey(r.RawQuery, &form, nil)
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
	out.Attributes = twilioTokenAttr(out.Attributes, token)
	return out, nil
}

// twilioTokenAttr adds the delivery's idempotency token, if any, to attrs.
func twilioTokenAttr(attrs map[string]string, token string) map[string]string {
	if token == "" {
		return attrs
	}
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["idempotency_token"] = token
	return attrs
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
// when absent). A parameter repeated with different values, or a value that is
// not UTF-8, is an invalid payload. The strings share one copy of the
// values, not the form's buffer, which is scratch.
func twilioFields(form *twilioForm) (out [twilioNumFields]string, err error) {
	var raw [twilioNumFields][]byte
	var seen [twilioNumFields]bool
	n := 0
	for _, p := range form.params {
		name, value := form.name(p), form.value(p)
		i := twilioFieldIndex(name)
		if i < 0 {
			continue
		}
		if !utf8.Valid(value) {
			return out, fmt.Errorf("%w: twilio: %s is not UTF-8", ErrInvalidPayload, name)
		}
		if seen[i] {
			if !bytes.Equal(raw[i], value) {
				return out, fmt.Errorf("%w: twilio: %s repeated with different values", ErrInvalidPayload, name)
			}
			continue
		}
		seen[i], raw[i] = true, value
		n += len(value)
	}
	all := make([]byte, 0, n)
	for _, v := range raw {
		all = append(all, v...)
	}
	str := string(all)
	for i, v := range raw {
		out[i], str = str[:len(v)], str[len(v):]
	}
	return out, nil
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

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Twilio) KeptHeaders() []string {
	return []string{TwilioSignatureHeader, TwilioIdempotencyHeader}
}
