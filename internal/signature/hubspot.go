package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Headers of HubSpot's v3 request signature, spelled in canonical form
// (HubSpot sends X-HubSpot-Signature-v3; header names are case-insensitive).
const (
	// HubSpotSignatureHeader carries base64(HMAC-SHA256(client secret,
	// method + URI + body + timestamp)).
	HubSpotSignatureHeader = "X-Hubspot-Signature-V3"
	// HubSpotTimestampHeader carries the signing time in unix milliseconds.
	HubSpotTimestampHeader = "X-Hubspot-Request-Timestamp"
)

// The header names as net/http stores them, so that lookups need not
// canonicalize (and allocate) on every request.
var (
	hubspotSigKey = http.CanonicalHeaderKey(HubSpotSignatureHeader)
	hubspotTSKey  = http.CanonicalHeaderKey(HubSpotTimestampHeader)
)

// HubSpot verifies HubSpot's v3 request signature: an HMAC-SHA256 keyed with
// the app's client secret over method + URI + body + timestamp, base64 in
// X-HubSpot-Signature-v3, with the timestamp (unix milliseconds) in
// X-HubSpot-Request-Timestamp. The URI is the configured public URL plus
// "?" and the query as sent, with the twelve percent-encodings HubSpot
// lists (%3A : %2F / %3F ? %40 @ %21 ! %24 $ %27 ' %28 ( %29 ) %2A * %2C ,
// %3B ;) decoded, in either hex case, and no other. The v1 and v2 headers
// HubSpot still sends are ignored: they carry no timestamp and are never a
// fallback.
//
// One delivery carries a JSON array of events; Split returns one identity
// per event.
type HubSpot struct {
	uri       []byte // o.URL, decoded as HubSpot decodes it
	tolerance time.Duration
}

var (
	_ Scheme   = (*HubSpot)(nil)
	_ Splitter = (*HubSpot)(nil)
	_ Signer   = (*HubSpot)(nil)
)

// NewHubSpot returns the HubSpot v3 scheme for the public URL o.URL, which
// is required: an absolute http(s) URL without query or fragment (the
// query is taken from each request). The tolerance defaults to the five
// minutes HubSpot documents; options the scheme does not use are refused.
func NewHubSpot(o Options) (*HubSpot, error) {
	if err := checkOptions("hubspot", o, usesTolerance|usesURL); err != nil {
		return nil, err
	}
	if err := checkSignedURL("HubSpot", o.URL); err != nil {
		return nil, fmt.Errorf("signature: hubspot: URL: %w", err)
	}
	tol := toleranceOr(o, DefaultTolerance)
	return &HubSpot{uri: []byte(hubspotDecode(o.URL)), tolerance: tol}, nil
}

// Verify implements Scheme. The timestamp is checked before the MAC, both
// ways: older than the tolerance is ErrTooOld, further ahead is ErrTooNew.
// An empty r.Method is taken as POST, the only method HubSpot webhooks use.
func (s *HubSpot) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := header(r.Header, hubspotSigKey)
	if err != nil {
		return err
	}
	sig, ok := decodeBase64(v, sha256.Size)
	if !ok {
		return fmt.Errorf("%w: %s is not a base64 SHA-256", ErrMalformedHeader, HubSpotSignatureHeader)
	}
	tsRaw, ts, err := hubspotTimestamp(r.Header)
	if err != nil {
		return err
	}
	if err := checkTimestamp(ts, now, s.tolerance); err != nil {
		return err
	}
	return matchAny(secrets, [][]byte{sig}, func(secret []byte) []byte {
		return s.mac(secret, r, tsRaw)
	})
}

// hubspotTimestamp reads the millisecond timestamp: ASCII digits only, no
// leading zero (the MAC covers the text as sent, so one instant has one
// spelling), at most 16 digits (year 318857; anything longer is noise).
func hubspotTimestamp(h http.Header) (string, time.Time, error) {
	return headerMillis(h, hubspotTSKey)
}

// mac writes method, URI, body and timestamp into the MAC in order.
func (s *HubSpot) mac(secret []byte, r Request, ts string) []byte {
	m := hmac.New(sha256.New, secret)
	if r.Method == "" || r.Method == http.MethodPost {
		m.Write(hubspotPost)
	} else {
		m.Write([]byte(r.Method))
	}
	m.Write(s.uri)
	if r.RawQuery != "" {
		m.Write(hubspotQuestionMark)
		m.Write([]byte(hubspotDecode(r.RawQuery)))
	}
	m.Write(r.Body)
	m.Write([]byte(ts))
	return m.Sum(nil)
}

var (
	hubspotPost         = []byte(http.MethodPost)
	hubspotQuestionMark = []byte{'?'}
)

// hubspotDecode decodes exactly the percent-encodings HubSpot's v3
// instructions list, and leaves every other escape as sent.
func hubspotDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, ok := hubspotUnescape(s[i+1], s[i+2]); ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hubspotUnescape maps the two hex digits of a listed escape to its byte.
func hubspotUnescape(h, l byte) (byte, bool) {
	if l >= 'a' && l <= 'f' {
		l -= 'a' - 'A'
	}
	switch h {
	case '2':
		switch l {
		case 'F':
			return '/', true
		case '1':
			return '!', true
		case '4':
			return '$', true
		case '7':
			return '\'', true
		case '8':
			return '(', true
		case '9':
			return ')', true
		case 'A':
			return '*', true
		case 'C':
			return ',', true
		}
	case '3':
		switch l {
		case 'A':
			return ':', true
		case 'F':
			return '?', true
		case 'B':
			return ';', true
		}
	case '4':
		if l == '0' {
			return '@', true
		}
	}
	return 0, false
}

var hubspotFields = []string{"eventId", "subscriptionId", "portalId", "subscriptionType", "occurredAt", "attemptNumber"}

// Split implements Splitter. The body must be a non-empty JSON array of
// objects. HubSpot documents eventId as "not guaranteed to be unique", so
// the dedupe key is portalId/subscriptionId/eventId (all three required
// integers): one event notified to one subscription of one portal, which
// HubSpot's retries repeat with only attemptNumber changed. Type is
// subscriptionType, Created occurredAt (unix ms, optional), Payload the
// event's own bytes (a sub-slice of r.Body), and Attributes carry
// portal_id and, when present, attempt_number. One bad event fails the
// delivery.
func (s *HubSpot) Split(r Request) ([]Identity, error) {
	var f [6][]byte
	var prev hubspotShared
	return splitEvents("hubspot", r.Body, hubspotFields, f[:], 4, func(elem []byte) (Identity, error) {
		return hubspotEvent(elem, f[:], &prev)
	})
}

// hubspotShared is what consecutive events of one delivery usually have in
// common: the subscription type and the attributes (one portal, one
// attempt). An event equal to the previous one in these reuses its string
// and map instead of allocating its own; the identities of a delivery
// share them read-only.
type hubspotShared struct {
	rawType, rawPortal, rawAttempt []byte
	typ                            string
	attrs                          map[string]string
}

// hubspotEvent reads one event from the values of hubspotFields.
func hubspotEvent(elem []byte, f [][]byte, prev *hubspotShared) (Identity, error) {
	// The three ids are canonical JSON integers (no sign, no leading
	// zero), so their bytes are already their decimal form.
	for i, name := range hubspotFields[:3] {
		if _, ok := hubspotUint(f[i]); !ok {
			return Identity{}, fmt.Errorf("%w: hubspot: %s is not a non-negative integer", ErrInvalidPayload, name)
		}
	}
	typ := prev.typ
	if typ == "" || !bytes.Equal(f[3], prev.rawType) {
		var ok bool
		typ, ok = jsonString(f[3])
		if !ok || typ == "" || len(typ) > MaxIdentity || !utf8.ValidString(typ) {
			return Identity{}, fmt.Errorf("%w: hubspot: missing subscriptionType", ErrInvalidPayload)
		}
		prev.rawType, prev.typ = f[3], typ
	}
	var buf [3*20 + 2]byte
	b := append(buf[:0], f[2]...)
	n := len(b)
	b = append(append(b, '/'), f[1]...)
	b = append(append(b, '/'), f[0]...)
	id := string(b)
	out := Identity{ID: id, Type: typ, Payload: elem}
	if len(f[4]) > 0 && string(f[4]) != "null" {
		ms, ok := hubspotUint(f[4])
		if !ok {
			return Identity{}, fmt.Errorf("%w: hubspot: occurredAt is not unix milliseconds", ErrInvalidPayload)
		}
		out.Created = time.UnixMilli(ms).UTC()
	}
	// The raw portal id is canonical (hubspotUint refuses signs, and
	// jsonInt leading zeros), so equal bytes mean an equal portal.
	if prev.attrs == nil || !bytes.Equal(f[2], prev.rawPortal) || !bytes.Equal(f[5], prev.rawAttempt) {
		if _, ok := hubspotUint(f[5]); ok {
			prev.attrs = map[string]string{"portal_id": id[:n], "attempt_number": string(f[5])}
		} else {
			prev.attrs = map[string]string{"portal_id": id[:n]}
		}
		prev.rawPortal, prev.rawAttempt = f[2], f[5]
	}
	out.Attributes = prev.attrs
	return out, nil
}

// hubspotUint reads a JSON integer that is not negative.
func hubspotUint(raw []byte) (int64, bool) {
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return 0, false
	}
	return jsonInt(raw)
}

// Identify implements Scheme for a delivery of exactly one event; ingest
// uses Split, which accepts any number.
func (s *HubSpot) Identify(r Request) (Identity, error) {
	ids, err := s.Split(r)
	return oneEvent("hubspot", ids, err)
}

// Sign implements Signer: it sets X-HubSpot-Request-Timestamp to now in
// unix milliseconds and X-HubSpot-Signature-v3 for r's method, query and
// body.
func (s *HubSpot) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if now.UnixMilli() < 0 {
		return fmt.Errorf("signature: hubspot: cannot sign a time before 1970")
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	r.Header.Set(HubSpotTimestampHeader, ts)
	r.Header.Set(HubSpotSignatureHeader, base64.StdEncoding.EncodeToString(s.mac(key, *r, ts)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *HubSpot) KeptHeaders() []string {
	return []string{HubSpotSignatureHeader, HubSpotTimestampHeader}
}
