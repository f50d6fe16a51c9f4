package signature

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Headers of a GitHub delivery, spelled as net/http canonicalizes them.
const (
	// GitHubSignatureHeader carries `sha256=<hex HMAC-SHA256(secret, body)>`,
	// the only signature Verify reads.
	GitHubSignatureHeader = "X-Hub-Signature-256"
	// GitHubLegacySignatureHeader carries GitHub's HMAC-SHA1 signature. Sign
	// sets it because GitHub does; Verify never reads it (no downgrade).
	GitHubLegacySignatureHeader = "X-Hub-Signature"
	// GitHubDeliveryHeader carries the delivery GUID, the dedupe key.
	GitHubDeliveryHeader = "X-Github-Delivery"
	// GitHubEventHeader carries the event name, e.g. "pull_request".
	GitHubEventHeader = "X-Github-Event"
	// GitHubHookIDHeader carries the id of the webhook configuration.
	GitHubHookIDHeader = "X-Github-Hook-Id"
)

// GitHub verifies `X-Hub-Signature-256: sha256=<hex>`, an HMAC-SHA256 of
// the raw body keyed with the webhook secret. GitHub signs with one secret,
// so rotation means configuring the new secret here before GitHub, and any
// configured secret may match. The SHA-1 `X-Hub-Signature` is never
// consulted: a request carrying only it is ErrNotSigned.
//
// The scheme has no timestamp, so there is no tolerance: a captured
// delivery can be replayed at any time, and the durable dedupe key (the
// delivery GUID) is what turns a replay into a duplicate (R9). The GUID
// header is not covered by the signature, which is GitHub's design; a
// replay under a new GUID cannot be told apart from a redelivery here.
type GitHub struct{}

var (
	_ Scheme = (*GitHub)(nil)
	_ Signer = (*GitHub)(nil)
)

// NewGitHub returns the GitHub scheme. It refuses a tolerance (GitHub sends
// no timestamp to apply it to), a URL (GitHub does not sign one) and HMAC
// options, since each means the source was configured for another
// provider.
func NewGitHub(o Options) (*GitHub, error) {
	if err := checkOptions("github", o, 0); err != nil {
		return nil, err
	}
	return &GitHub{}, nil
}

// Verify implements Scheme: nil when the X-Hub-Signature-256 value is the
// HMAC-SHA256 of r.Body under any of secrets. now is unused: GitHub's
// signature carries no time.
func (g *GitHub) Verify(r Request, secrets [][]byte, now time.Time) error {
	if len(hvalues(r.Header, GitHubSignatureHeader)) == 0 && len(hvalues(r.Header, GitHubLegacySignatureHeader)) > 0 {
		return fmt.Errorf("%w: only the SHA-1 %s header, which is not accepted", ErrNotSigned, GitHubLegacySignatureHeader)
	}
	return githubStyleVerify(r.Header, GitHubSignatureHeader, "sha256=", sha256.New, sha256.Size, r.Body, secrets)
}

// githubStyleVerify checks the PubSubHubbub-style signature GitHub, Meta
// and Intercom share: one header holding prefix + the lower- or upper-case
// hex HMAC of the raw body. A value of the wrong prefix or length is
// malformed rather than a mismatch, so a scheme-name typo shows in metrics.
func githubStyleVerify(h http.Header, name, prefix string, newHash func() hash.Hash, size int, body []byte, secrets [][]byte) error {
	v, err := header(h, name)
	if err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return fmt.Errorf("%w: %s does not start with %q", ErrMalformedHeader, name, prefix)
	}
	sig, ok := decodeHex(hexSig, size)
	if !ok {
		return fmt.Errorf("%w: %s is not %d hex bytes", ErrMalformedHeader, name, size)
	}
	return matchAny(secrets, [][]byte{sig}, func(secret []byte) []byte {
		return macOf(newHash, secret, body)
	})
}

var githubFields = []string{"action"}

// Identify implements Scheme. ID is the X-GitHub-Delivery GUID, which
// GitHub keeps when a delivery is redelivered, so a redelivery is a
// duplicate; Type is X-GitHub-Event as sent ("pull_request"), with the
// body's action, when there is one, in Attributes["action"] so that types
// stay the names GitHub documents. The body (for form-encoded deliveries,
// the JSON in its payload field) must be a JSON object. Attributes also
// keep X-GitHub-Hook-ID as "hook_id".
func (g *GitHub) Identify(r Request) (Identity, error) {
	id, err := githubIdentityHeader(r.Header, GitHubDeliveryHeader)
	if err != nil {
		return Identity{}, err
	}
	typ, err := githubIdentityHeader(r.Header, GitHubEventHeader)
	if err != nil {
		return Identity{}, err
	}
	body := r.Body
	if githubIsForm(r.Header) {
		if body, err = githubFormPayload(r.Body); err != nil {
			return Identity{}, fmt.Errorf("%w: github: form body: %v", ErrInvalidPayload, err)
		}
	}
	var f [1][]byte
	if err := jsonFields(body, githubFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: github: body is not a JSON object", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ}
	if f[0] != nil && string(f[0]) != "null" {
		action, ok := jsonString(f[0])
		if !ok || action == "" || len(action) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: github: action is not a string", ErrInvalidPayload)
		}
		out.Attributes = map[string]string{"action": action}
	}
	if len(hvalues(r.Header, GitHubHookIDHeader)) > 0 {
		hook, err := githubIdentityHeader(r.Header, GitHubHookIDHeader)
		if err != nil {
			return Identity{}, err
		}
		if out.Attributes == nil {
			out.Attributes = make(map[string]string, 1)
		}
		out.Attributes["hook_id"] = hook
	}
	return out, nil
}

// githubIdentityHeader returns a header that names the event: present
// once, at most 512 bytes of UTF-8 with no control characters (it becomes
// a key and a log field); ErrInvalidPayload otherwise.
func githubIdentityHeader(h http.Header, name string) (string, error) {
	vs := hvalues(h, name)
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: missing %s", ErrInvalidPayload, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %d %s headers", ErrInvalidPayload, len(vs), name)
	case len(vs[0]) > MaxIdentity:
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidPayload, name, MaxIdentity)
	case !githubPrintable(vs[0]):
		return "", fmt.Errorf("%w: %s is not printable UTF-8", ErrInvalidPayload, name)
	}
	return vs[0], nil
}

// githubPrintable reports whether s is valid UTF-8 without control
// characters or surrounding spaces.
func githubPrintable(s string) bool {
	if !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 {
			return false
		}
	}
	return true
}

// githubIsForm reports whether the delivery is form-encoded: GitHub then
// sends `payload=<urlencoded JSON>` and signs those form bytes.
func githubIsForm(h http.Header) bool {
	ct, _, _ := strings.Cut(hget(h, "Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/x-www-form-urlencoded")
}

// githubFormPayload returns the decoded value of the one `payload` field
// of a form body. It decodes as url.ParseQuery would (a ';' is an error, '+'
// is a space) into a single buffer; a repeated payload field is refused
// rather than picking one.
func githubFormPayload(body []byte) ([]byte, error) {
	var (
		out   []byte
		found bool
	)
	for rest := body; len(rest) > 0; {
		var pair []byte
		pair, rest, _ = bytes.Cut(rest, []byte{'&'})
		if len(pair) == 0 {
			continue
		}
		if bytes.IndexByte(pair, ';') >= 0 {
			return nil, errors.New("';' in form")
		}
		k, v, _ := bytes.Cut(pair, []byte{'='})
		key, err := githubUnescape(nil, k)
		if err != nil {
			return nil, err
		}
		if string(key) != "payload" {
			if !githubValidEscapes(v) {
				return nil, errors.New("bad %-escape in form")
			}
			continue
		}
		if found {
			return nil, errors.New("repeated payload field")
		}
		if out, err = githubUnescape(make([]byte, 0, len(v)), v); err != nil {
			return nil, err
		}
		found = true
	}
	if !found {
		return nil, errors.New("no payload field")
	}
	return out, nil
}

// githubUnescape appends the query-unescaped s to dst.
func githubUnescape(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return nil, errors.New("bad %-escape in form")
			}
			dst = append(dst, githubUnhex(s[i+1])<<4|githubUnhex(s[i+2]))
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

// githubValidEscapes reports whether every '%' in s starts a valid escape,
// as url.ParseQuery requires of the fields it decodes.
func githubValidEscapes(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func githubUnhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// SignGitHub returns the X-Hub-Signature-256 value GitHub would send for
// body under secret.
func SignGitHub(body, secret []byte) string {
	return "sha256=" + hex.EncodeToString(macOf(sha256.New, secret, body))
}

// Sign implements Signer: it sets X-Hub-Signature-256 for r.Body and, as
// GitHub does, the SHA-1 X-Hub-Signature that Verify ignores. It sets no
// delivery or event header: those are the caller's to choose.
func (g *GitHub) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(GitHubSignatureHeader, SignGitHub(r.Body, key))
	r.Header.Set(GitHubLegacySignatureHeader, "sha1="+hex.EncodeToString(macOf(sha1.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (g *GitHub) KeptHeaders() []string {
	return []string{GitHubSignatureHeader, GitHubLegacySignatureHeader, GitHubDeliveryHeader, GitHubEventHeader, GitHubHookIDHeader}
}
