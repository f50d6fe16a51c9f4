package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a GitLab delivery, spelled as net/http canonicalizes them.
const (
	// GitLabTokenHeader carries the webhook's secret token in clear.
	GitLabTokenHeader = "X-Gitlab-Token"
	// GitLabEventHeader carries the event name, e.g. "Push Hook".
	GitLabEventHeader = "X-Gitlab-Event"
	// GitLabEventUUIDHeader carries the id of the event that triggered the
	// delivery; GitLab sends it on hooks older than Idempotency-Key.
	GitLabEventUUIDHeader = "X-Gitlab-Event-Uuid"
	// GitLabInstanceHeader carries the sending instance's URL.
	GitLabInstanceHeader = "X-Gitlab-Instance"
	// GitLabIdempotencyKeyHeader carries the delivery's id, the same on
	// every retry of the delivery.
	GitLabIdempotencyKeyHeader = "Idempotency-Key"
	// GitLabWebhookIDHeader, GitLabWebhookTimestampHeader and
	// GitLabWebhookSignatureHeader are the Standard Webhooks headers GitLab
	// sends when the hook has a signing token. webhook-id equals
	// Idempotency-Key.
	GitLabWebhookIDHeader        = "Webhook-Id"
	GitLabWebhookTimestampHeader = "Webhook-Timestamp"
	GitLabWebhookSignatureHeader = "Webhook-Signature"
	// GitLabSigningKeyPrefix starts a signing token, `whsec_<base64 key>`.
	// A configured secret with this prefix is a signing key, any other is a
	// secret token.
	GitLabSigningKeyPrefix = "whsec_"
)

// gitlabMaxSignatures bounds the v1 values read from one webhook-signature.
const gitlabMaxSignatures = 8

// GitLab verifies either of GitLab's two ways of proving a delivery.
//
// A hook with a signing token sends Standard Webhooks headers: webhook-id,
// webhook-timestamp and `webhook-signature: v1,<base64 HMAC-SHA256>` over
// "<id>.<timestamp>.<body>", keyed with the base64 after `whsec_`. When
// webhook-signature or webhook-timestamp is present, only that signature is
// verified, against the configured secrets that are signing keys, within
// the tolerance (default 5 minutes, both ways): X-Gitlab-Token is then
// ignored, so removing the signature headers is the only way to reach the
// token check, and that fails once the source holds only signing keys.
//
// Otherwise X-Gitlab-Token must equal one of the configured secrets that
// are not signing keys. The token is compared through SHA-256 digests of
// both sides, so the comparison takes the same time whatever the lengths.
// A source that holds only signing keys refuses token-only deliveries
// (ErrNotSigned): that is how an operator turns the weaker check off.
type GitLab struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*GitLab)(nil)
	_ Signer = (*GitLab)(nil)
)

// NewGitLab returns the GitLab scheme. o.Tolerance applies to signed
// deliveries; a URL or HMAC options are refused since GitLab uses neither.
func NewGitLab(o Options) (*GitLab, error) {
	if err := checkOptions("gitlab", o, usesTolerance); err != nil {
		return nil, err
	}
	return &GitLab{tolerance: toleranceOr(o, DefaultTolerance)}, nil
}

// Verify implements Scheme; see GitLab for which proof is checked.
func (g *GitLab) Verify(r Request, secrets [][]byte, now time.Time) error {
	if gitlabSigned(r.Header) {
		return g.verifySignature(r, secrets, now)
	}
	return gitlabVerifyToken(r.Header, secrets)
}

// gitlabSigned reports whether the delivery claims a signature. Either
// header counts, so that dropping only webhook-signature does not turn a
// signed delivery into a token-checked one.
func gitlabSigned(h http.Header) bool {
	return len(hvalues(h, GitLabWebhookSignatureHeader)) > 0 || len(hvalues(h, GitLabWebhookTimestampHeader)) > 0
}

func gitlabVerifyToken(h http.Header, secrets [][]byte) error {
	tok, err := header(h, GitLabTokenHeader)
	if err != nil {
		return err
	}
	got := sha256.Sum256([]byte(tok))
	tokens, keys := 0, 0
	for _, s := range secrets {
		switch {
		case len(s) == 0:
			continue // an empty token is one anyone can send
		case gitlabIsSigningKey(s):
			keys++
			continue
		}
		tokens++
		want := sha256.Sum256(s)
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return nil
		}
	}
	switch {
	case tokens > 0:
		return ErrNoMatch
	case keys > 0:
		return fmt.Errorf("%w: source accepts only deliveries with %s", ErrNotSigned, GitLabWebhookSignatureHeader)
	}
	return ErrNoSecret
}

func (g *GitLab) verifySignature(r Request, secrets [][]byte, now time.Time) error {
	sigs, err := header(r.Header, GitLabWebhookSignatureHeader)
	if err != nil {
		return err
	}
	id, err := gitlabSignedHeader(r.Header, GitLabWebhookIDHeader)
	if err != nil {
		return err
	}
	tsRaw, err := gitlabSignedHeader(r.Header, GitLabWebhookTimestampHeader)
	if err != nil {
		return err
	}
	ts, ok := parseUnix(tsRaw)
	// The HMAC covers tsRaw as sent; a leading zero would give one instant
	// several signed strings.
	if !ok || len(tsRaw) > 1 && tsRaw[0] == '0' {
		return fmt.Errorf("%w: bad %s", ErrMalformedHeader, GitLabWebhookTimestampHeader)
	}

	var (
		sigs8    [gitlabMaxSignatures][sha256.Size]byte
		n        int
		unparsed bool
	)
	for entry := range strings.SplitSeq(sigs, " ") {
		if entry == "" {
			continue
		}
		version, sig, ok := strings.Cut(entry, ",")
		if !ok {
			unparsed = true
			continue
		}
		if version != "v1" {
			continue // v1a (ed25519) and future versions: not a fallback
		}
		if n == gitlabMaxSignatures {
			return fmt.Errorf("%w: more than %d signatures", ErrMalformedHeader, gitlabMaxSignatures)
		}
		if gitlabDecodeSig(&sigs8[n], sig) {
			n++
		} // else it cannot match; another v1 may
	}
	if n == 0 {
		if unparsed {
			return fmt.Errorf("%w: %s has no version,signature pair", ErrMalformedHeader, GitLabWebhookSignatureHeader)
		}
		return fmt.Errorf("%w: no v1 signature", ErrNoMatch)
	}
	if err := checkTimestamp(ts, now, g.tolerance); err != nil {
		return err
	}
	var (
		keyBuf [64]byte
		sum    [sha256.Size]byte
		keys   int
		preBuf [64]byte
	)
	// id "." timestamp ".", written in one piece rather than as four
	// conversions that each allocate.
	pre := append(append(append(append(preBuf[:0], id...), '.'), tsRaw...), '.')
	for _, secret := range secrets {
		key, ok := gitlabSigningKey(keyBuf[:0], secret)
		if !ok {
			continue
		}
		keys++
		mac := hmac.New(sha256.New, key)
		mac.Write(pre)
		mac.Write(r.Body)
		mac.Sum(sum[:0])
		for i := range n {
			if hmac.Equal(sum[:], sigs8[i][:]) {
				return nil
			}
		}
	}
	if keys == 0 {
		return ErrNoSecret
	}
	return ErrNoMatch
}

// gitlabDecodeSig decodes a standard, padded base64 HMAC-SHA256 into dst;
// false for any other length or encoding. Decoding is strict, as in
// decodeBase64, so one signature has one encoding.
func gitlabDecodeSig(dst *[sha256.Size]byte, s string) bool {
	if len(s) != base64.StdEncoding.EncodedLen(sha256.Size) {
		return false
	}
	// 44 characters decode to at most 33 bytes; the last must be padding.
	var buf [sha256.Size + 1]byte
	n, err := base64.StdEncoding.Strict().Decode(buf[:], []byte(s))
	if err != nil || n != sha256.Size {
		return false
	}
	*dst = [sha256.Size]byte(buf[:sha256.Size])
	return true
}

// gitlabSignedHeader returns a header the signature covers. Its absence
// next to a signature is malformed, not unsigned: the delivery claims a
// signature it cannot support.
func gitlabSignedHeader(h http.Header, name string) (string, error) {
	v, err := header(h, name)
	if errors.Is(err, ErrNotSigned) {
		return "", fmt.Errorf("%w: %s without %s", ErrMalformedHeader, GitLabWebhookSignatureHeader, name)
	}
	return v, err
}

// gitlabIsSigningKey reports whether a configured secret is a signing key.
func gitlabIsSigningKey(s []byte) bool {
	return strings.HasPrefix(string(s), GitLabSigningKeyPrefix)
}

// gitlabSigningKey decodes `whsec_<base64>` into the HMAC key, appended to
// dst; ok is false for any other secret, or an empty or undecodable key.
func gitlabSigningKey(dst, s []byte) ([]byte, bool) {
	if !gitlabIsSigningKey(s) {
		return nil, false
	}
	k, err := base64.StdEncoding.AppendDecode(dst, s[len(GitLabSigningKeyPrefix):])
	if err != nil || len(k) == len(dst) {
		return nil, false
	}
	return k[len(dst):], true
}

// Identify implements Scheme. The ID is the delivery's own id, the same on
// every retry: for a signed delivery the signed webhook-id (GitLab sets it
// equal to Idempotency-Key, and only the signed copy cannot be changed by
// whoever replays a captured delivery inside the tolerance); otherwise
// Idempotency-Key, else X-Gitlab-Event-UUID (hooks from GitLab versions
// before Idempotency-Key), else webhook-id. Type is X-Gitlab-Event as sent,
// e.g. "Push Hook". The body must be a JSON object. Attributes keep
// X-Gitlab-Instance as "instance".
func (g *GitLab) Identify(r Request) (Identity, error) {
	var (
		id  string
		err error
	)
	if gitlabSigned(r.Header) {
		id, err = githubIdentityHeader(r.Header, GitLabWebhookIDHeader)
	} else {
		id, err = gitlabID(r.Header)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("gitlab: %w", err)
	}
	typ, err := githubIdentityHeader(r.Header, GitLabEventHeader)
	if err != nil {
		return Identity{}, fmt.Errorf("gitlab: %w", err)
	}
	if err := jsonFields(r.Body, nil, nil); err != nil {
		return Identity{}, fmt.Errorf("%w: gitlab: body is not a JSON object", ErrInvalidPayload)
	}
	out := Identity{ID: id, Type: typ}
	if len(hvalues(r.Header, GitLabInstanceHeader)) > 0 {
		inst, err := githubIdentityHeader(r.Header, GitLabInstanceHeader)
		if err != nil {
			return Identity{}, fmt.Errorf("gitlab: %w", err)
		}
		out.Attributes = map[string]string{"instance": inst}
	}
	return out, nil
}

// gitlabID picks the first id header present, in order of preference.
func gitlabID(h http.Header) (string, error) {
	for _, name := range []string{GitLabIdempotencyKeyHeader, GitLabEventUUIDHeader, GitLabWebhookIDHeader} {
		if len(hvalues(h, name)) > 0 {
			return githubIdentityHeader(h, name)
		}
	}
	return "", fmt.Errorf("%w: none of %s, %s, %s", ErrInvalidPayload, GitLabIdempotencyKeyHeader, GitLabEventUUIDHeader, GitLabWebhookIDHeader)
}

// Sign implements Signer. A `whsec_` key signs as a hook with a signing
// token does: webhook-id (r's webhook-id, else its Idempotency-Key, which
// one of them must carry), webhook-timestamp at now and webhook-signature,
// plus Idempotency-Key when absent. Any other key is a secret token, set as
// X-Gitlab-Token.
func (g *GitLab) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if !gitlabIsSigningKey(key) {
		r.Header.Set(GitLabTokenHeader, string(key))
		return nil
	}
	k, ok := gitlabSigningKey(nil, key)
	if !ok {
		return fmt.Errorf("%w: gitlab: signing key is not whsec_<base64>", ErrNoSecret)
	}
	id := hget(r.Header, GitLabWebhookIDHeader)
	if id == "" {
		id = hget(r.Header, GitLabIdempotencyKeyHeader)
	}
	if id == "" {
		return fmt.Errorf("signature: gitlab: sign: set %s or %s first", GitLabWebhookIDHeader, GitLabIdempotencyKeyHeader)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := macOf(sha256.New, k, []byte(id), []byte{'.'}, []byte(ts), []byte{'.'}, r.Body)
	r.Header.Set(GitLabWebhookIDHeader, id)
	if hget(r.Header, GitLabIdempotencyKeyHeader) == "" {
		r.Header.Set(GitLabIdempotencyKeyHeader, id)
	}
	r.Header.Set(GitLabWebhookTimestampHeader, ts)
	r.Header.Set(GitLabWebhookSignatureHeader, "v1,"+base64.StdEncoding.EncodeToString(mac))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (g *GitLab) KeptHeaders() []string {
	return []string{GitLabEventHeader, GitLabEventUUIDHeader, GitLabInstanceHeader, GitLabIdempotencyKeyHeader, GitLabWebhookIDHeader, GitLabWebhookTimestampHeader, GitLabWebhookSignatureHeader}
}
