package signature

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A one-pass JSON scanner: it validates a document as encoding/json would
// (RFC 8259 grammar) while returning the raw bytes of the few top-level
// fields identity extraction needs. It does not allocate for the values it
// skips, which is most of a webhook body.

var errJSON = errors.New("invalid JSON")

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() { s.i = wsAt(s.b, s.i) }

// The scanning functions below take the buffer and a position and return
// the new position, so the position lives in a register rather than in the
// scanner struct; the methods are thin wrappers for callers that keep one.

// wsAt returns the position of the first non-whitespace byte at or after i.
func wsAt(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' {
		switch b[i] {
		case ' ':
			// Indented bodies (Stripe's, GitHub's) are mostly runs of
			// spaces: measure a run eight bytes at a time.
			if i+8 > len(b) {
				i++
				continue
			}
			x := binary.LittleEndian.Uint64(b[i:]) ^ 0x2020202020202020
			if x == 0 {
				i += 8
			} else {
				i += bits.TrailingZeros64(x) >> 3
			}
		case '\n', '\t', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value skips one JSON value and returns its raw bytes.
func (s *scanner) value(depth int) ([]byte, error) {
	start := wsAt(s.b, s.i)
	i, err := valueAt(s.b, start, depth)
	if err != nil {
		return nil, err
	}
	s.i = i
	return s.b[start:i], nil
}

// valueAt scans the value starting at i (whitespace already skipped),
// depth being the nesting of the container holding it. Nested containers
// are walked iteratively, their kinds kept in a bit stack, so that a deep
// or long body costs no call per value and no recursion.
func valueAt(b []byte, i, depth int) (int, error) {
	// Scalars, most values, return here, before the container walk sets
	// up (and zeroes) its stack.
	if i >= len(b) {
		return i, errJSON
	}
	switch c := b[i]; c {
	case '"':
		i, _, err := strAt(b, i)
		return i, err
	case '{', '[':
		return containerAt(b, i, depth)
	case 't':
		return litAt(b, i, "true")
	case 'f':
		return litAt(b, i, "false")
	case 'n':
		return litAt(b, i, "null")
	default:
		if c != '-' && (c < '0' || c > '9') {
			return i, errJSON
		}
		return numAt(b, i)
	}
}

// containerAt scans the object or array starting at i.
func containerAt(b []byte, i, depth int) (int, error) {
	var arrays [maxDepth/64 + 2]uint64 // bit n: the n-th open container is an array
	n := 0                             // containers opened by this call and not yet closed
	var err error
	for {
		// A value starts at i.
		if i >= len(b) {
			return i, errJSON
		}
		switch c := b[i]; c {
		case '"':
			if i, _, err = strAt(b, i); err != nil {
				return i, err
			}
		case '{', '[':
			if depth+n > maxDepth {
				return i, errJSON
			}
			if c == '[' {
				arrays[n>>6] |= 1 << (n & 63)
			} else {
				arrays[n>>6] &^= 1 << (n & 63)
			}
			n++
			i = wsAt(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' and ']' follow '{' and '[' by two
				i++
				n--
				break
			}
			if c == '{' {
				if i, err = memberKeyAt(b, i); err != nil {
					return i, err
				}
			}
			continue
		case 't':
			if i, err = litAt(b, i, "true"); err != nil {
				return i, err
			}
		case 'f':
			if i, err = litAt(b, i, "false"); err != nil {
				return i, err
			}
		case 'n':
			if i, err = litAt(b, i, "null"); err != nil {
				return i, err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return i, errJSON
			}
			if i, err = numAt(b, i); err != nil {
				return i, err
			}
		}
		// A value ended at i: close the containers it completes, then
		// move to the next element or member.
		for {
			if n == 0 {
				return i, nil
			}
			i = wsAt(b, i)
			if i >= len(b) {
				return i, errJSON
			}
			array := arrays[(n-1)>>6]>>((n-1)&63)&1 == 1
			c := b[i]
			if c == ',' {
				i = wsAt(b, i+1)
				if !array {
					if i, err = memberKeyAt(b, i); err != nil {
						return i, err
					}
				}
				break
			}
			if array && c != ']' || !array && c != '}' {
				return i, errJSON
			}
			i++
			n--
		}
	}
}

// memberKeyAt scans an object member's key, the colon and the whitespace
// after it, returning the position of the member's value.
func memberKeyAt(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, errJSON
	}
	i, _, err := strAt(b, i)
	if err != nil {
		return i, err
	}
	i = wsAt(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, errJSON
	}
	return wsAt(b, i+1), nil
}

// maxDepth bounds nesting, as encoding/json does, so a hostile body cannot
// exhaust the stack.
const maxDepth = 1000

func litAt(b []byte, i int, want string) (int, error) {
	if len(b)-i < len(want) || string(b[i:i+len(want)]) != want {
		return i, errJSON
	}
	return i + len(want), nil
}

// object scans an object; for each key listed in keys it stores the raw
// value in out at the same index (the last occurrence wins, as in
// encoding/json).
func (s *scanner) object(depth int, keys []string, out [][]byte) error {
	i, err := objectAt(s.b, s.i, depth, keys, out, nil)
	if err == nil {
		s.i = i
	}
	return err
}

// nested asks objectAt to read, in the same pass, the keys of the object
// that is the value of parent (Slack's event.type, Twitch's
// subscription.type) instead of only skipping over it.
type nested struct {
	parent string
	keys   []string
	out    [][]byte
}

func objectAt(b []byte, i, depth int, keys []string, out [][]byte, sub *nested) (int, error) {
	i = wsAt(b, i+1) // after '{'
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errJSON
		}
		kstart := i + 1
		j, escaped, err := strAt(b, i)
		if err != nil {
			return j, err
		}
		key := b[kstart : j-1]
		i = wsAt(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, errJSON
		}
		i = wsAt(b, i+1)
		vstart := i
		isParent := sub != nil && keyEqual(key, escaped, sub.parent)
		if isParent && i < len(b) && b[i] == '{' {
			// The last occurrence wins here too: forget an earlier one.
			clear(sub.out)
			if depth > maxDepth {
				return i, errJSON
			}
			i, err = objectAt(b, i, depth+1, sub.keys, sub.out, nil)
		} else {
			i, err = valueAt(b, i, depth)
		}
		if err != nil {
			return i, err
		}
		if isParent && b[vstart] != '{' {
			clear(sub.out) // a later non-object value replaces the object
		}
		for n, k := range keys {
			// Most keys differ from the wanted ones in length or first
			// byte; only an escaped key needs unquoting to compare.
			if (escaped || len(key) == len(k) && (k == "" || key[0] == k[0])) && keyEqual(key, escaped, k) {
				out[n] = b[vstart:i]
			}
		}
		i = wsAt(b, i)
		if i >= len(b) {
			return i, errJSON
		}
		switch b[i] {
		case ',':
			i = wsAt(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, errJSON
		}
	}
}

// keyEqual compares a raw key to want; escaped keys are unquoted first.
func keyEqual(raw []byte, escaped bool, want string) bool {
	if !escaped {
		return string(raw) == want
	}
	u, ok := unquote(raw)
	return ok && u == want
}

// strAt scans the string whose opening quote is at i; it returns the
// position after the closing quote and whether the string has escapes.
func strAt(b []byte, i int) (int, bool, error) {
	i++ // opening quote
	escaped := false
	for {
		// Most string bytes are plain: test them eight at a time and jump
		// straight to the first quote, backslash or control character of
		// the word; the last few bytes of the buffer go one at a time.
		for i+8 <= len(b) {
			if m := strStopMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto stop
			}
			i += 8
		}
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, false, errJSON
		}
	stop:
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, false, errJSON
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false, errJSON
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false, errJSON
					}
				}
				i += 6
			default:
				return i, false, errJSON
			}
		default: // a control character
			return i, false, errJSON
		}
	}
}

// strStop marks the bytes that end the plain run of a string: the quote,
// the backslash and control characters.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// strStopMask has the high bit set in the byte of x (little-endian) that
// is the first quote, backslash or control character, and possibly in
// bytes after it, never before: a borrow only runs upward from a byte that
// matched, so the lowest set bit is exact. Bytes of 0x80 and above never
// match.
func strStopMask(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	bs := x ^ (lo * '\\')
	return ((q-lo)&^q | (bs-lo)&^bs | (x-lo*0x20)&^x) & hi
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func numAt(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsAt(b, i+1)
	default:
		return i, errJSON
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, errJSON
		}
		i = digitsAt(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, errJSON
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// digitsAt returns the position of the first byte at or after i that is
// not an ASCII digit. Ids, amounts and timestamps are long runs of digits:
// they are measured eight bytes at a time.
func digitsAt(b []byte, i int) int {
	const lo = 0x0101010101010101
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte is a digit when its high nibble is 3 and adding 6 keeps
		// it there (0x30..0x39); m flags the bytes that are not.
		m := (x&(lo*0xF0) ^ lo*0x30) | ((x+lo*0x06)&(lo*0xF0) ^ lo*0x30)
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// end checks that only whitespace follows the document.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return errJSON
	}
	return nil
}

// jsonFields validates body as one JSON object and stores in out[n] the raw
// value of top-level key keys[n] (nil when absent; the last occurrence wins,
// as in encoding/json).
func jsonFields(body []byte, keys []string, out [][]byte) error {
	return jsonFieldsNested(body, keys, out, nil)
}

// jsonFieldsNested is jsonFields that also fills sub.out with the values of
// sub.keys inside the top-level object named sub.parent (nil when that is
// absent or not an object), in the same single pass.
func jsonFieldsNested(body []byte, keys []string, out [][]byte, sub *nested) error {
	i := wsAt(body, 0)
	if i >= len(body) || body[i] != '{' {
		return errJSON
	}
	i, err := objectAt(body, i, 0, keys, out, sub)
	if err != nil {
		return err
	}
	if wsAt(body, i) != len(body) {
		return errJSON
	}
	return nil
}

// jsonString returns a raw JSON value as a Go string when it is a string of
// valid UTF-8 (identities become DynamoDB strings, which must be UTF-8;
// encoding/json would silently substitute U+FFFD instead).
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s, ok := unquote(raw[1 : len(raw)-1])
	if !ok || !utf8.ValidString(s) {
		return "", false
	}
	return s, true
}

// jsonStringBytes is jsonString as bytes: a slice of raw when the string
// has no escapes, else its unquoted copy.
func jsonStringBytes(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return in, utf8.Valid(in)
	}
	out, ok := unquoteJSONBytes(in)
	return out, ok && utf8.Valid(out)
}

// jsonStringIs reports whether raw, a validated JSON value, is a string
// equal to want (which needs no escaping). Unlike comparing jsonString's
// result it allocates nothing unless raw has escapes.
func jsonStringIs(raw []byte, want string) bool {
	if len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	s, ok := jsonString(raw)
	return ok && s == want
}

// unquote decodes the inside of a validated JSON string.
func unquote(in []byte) (string, bool) {
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in), true
	}
	s, err := strconv.Unquote(`"` + string(in) + `"`)
	if err != nil {
		// strconv does not know JSON's \/ or surrogate pairs; decode those
		// by hand.
		return unquoteJSON(in)
	}
	return s, true
}

func unquoteJSON(in []byte) (string, bool) {
	out, ok := unquoteJSONBytes(in)
	return string(out), ok
}

// unquoteJSONBytes decodes the inside of a validated JSON string into a
// new slice.
func unquoteJSONBytes(in []byte) ([]byte, bool) {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(in) {
			return nil, false
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(in[i+1:])
			if !ok {
				return nil, false
			}
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
				if r2, ok := hex4(in[i+3:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
					i += 6
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return out, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// jsonInt returns a raw JSON value as an int64 when it is an integer in
// range: strconv.ParseInt for every input a JSON number can be (no '+'),
// without converting the bytes to a string.
func jsonInt(raw []byte) (int64, bool) {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 {
		return 0, false
	}
	for len(d) > 1 && d[0] == '0' { // JSON has none, ParseInt allows them
		d = d[1:]
	}
	// Nineteen digits always fit a uint64; the sign decides the bound.
	if len(d) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if raw[0] == '-' {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// jsonObjects validates body as a JSON array of objects in one pass:
// for every element it fills fields with the raw values of keys at the
// element's top level (nil when absent, the last occurrence winning, as
// jsonFields does) and calls each with the element's bytes.
func jsonObjects(body []byte, keys []string, fields [][]byte, each func(elem []byte) error) error {
	s := scanner{b: body}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return errJSON
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return s.end()
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return errJSON
		}
		start := s.i
		clear(fields)
		if err := s.object(1, keys, fields); err != nil {
			return err
		}
		if err := each(s.b[start:s.i]); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errJSON
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return s.end()
		default:
			return errJSON
		}
	}
}

// jsonMembers validates body as one JSON object and calls each with every
// top-level member's key as written between its quotes (escaped reports
// whether it has escapes, to unquote before comparing) and its raw value,
// in order, duplicates included. An error from each stops the scan and is
// returned.
func jsonMembers(body []byte, each func(key []byte, escaped bool, raw []byte) error) error {
	i := wsAt(body, 0)
	if i >= len(body) || body[i] != '{' {
		return errJSON
	}
	i = wsAt(body, i+1)
	if i < len(body) && body[i] == '}' {
		if wsAt(body, i+1) != len(body) {
			return errJSON
		}
		return nil
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return errJSON
		}
		j, escaped, err := strAt(body, i)
		if err != nil {
			return err
		}
		key := body[i+1 : j-1]
		i = wsAt(body, j)
		if i >= len(body) || body[i] != ':' {
			return errJSON
		}
		i = wsAt(body, i+1)
		vstart := i
		if i, err = valueAt(body, i, 0); err != nil {
			return err
		}
		if err := each(key, escaped, body[vstart:i]); err != nil {
			return err
		}
		i = wsAt(body, i)
		if i >= len(body) {
			return errJSON
		}
		switch body[i] {
		case ',':
			i = wsAt(body, i+1)
		case '}':
			if wsAt(body, i+1) != len(body) {
				return errJSON
			}
			return nil
		default:
			return errJSON
		}
	}
}

// jsonFieldsStrict is jsonFields for bodies whose members another parser
// may read as well: it also refuses a wanted key given twice, or beside
// one that differs from it only in case (which encoding/json would match
// to the same field).
func jsonFieldsStrict(body []byte, keys []string, out [][]byte) error {
	clear(out)
	return jsonMembers(body, func(key []byte, escaped bool, raw []byte) error {
		if escaped {
			k, ok := unquote(key)
			if !ok {
				return errJSON
			}
			key = []byte(k)
		}
		ascii := !escaped && isASCII(key)
		for n, k := range keys {
			switch {
			case ascii && len(key) != len(k):
				// Neither equal nor, in ASCII, equal under folding.
			case string(key) == k:
				if out[n] != nil {
					return errJSON
				}
				out[n] = raw
			case foldEqual(key, k):
				return errJSON
			}
		}
		return nil
	})
}

// foldEqual reports whether key equals name under Unicode case folding,
// as encoding/json matches member names to fields; without a copy when
// key is ASCII, and at once when an ASCII key's length differs.
func foldEqual(key []byte, name string) bool {
	ascii := true
	for _, c := range key {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return strings.EqualFold(string(key), name)
	}
	if len(key) != len(name) {
		return false
	}
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i, c := range key {
		if lower(c) != lower(name[i]) {
			return false
		}
	}
	return true
}

// isASCII reports whether b is all ASCII.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
