package signature

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Header and query parameters of Meta (Facebook, Instagram, WhatsApp)
// webhooks.
const (
	// MetaSignatureHeader carries `sha256=<hex HMAC-SHA256(app secret,
	// body)>`, the only signature Verify reads.
	MetaSignatureHeader = "X-Hub-Signature-256"
	// MetaLegacySignatureHeader carries Meta's HMAC-SHA1 signature; Sign
	// sets it as Meta does, Verify never reads it.
	MetaLegacySignatureHeader = "X-Hub-Signature"
	// MetaModeParam, MetaVerifyTokenParam and MetaChallengeParam are the
	// query parameters of the subscription GET.
	MetaModeParam        = "hub.mode"
	MetaVerifyTokenParam = "hub.verify_token"
	MetaChallengeParam   = "hub.challenge"
	// MetaMaxChallenge bounds the challenge echoed back to Meta.
	MetaMaxChallenge = 1 << 10
)

// Meta verifies `X-Hub-Signature-256: sha256=<hex>`, an HMAC-SHA256 of the
// raw body keyed with the app secret. Meta computes it over the bytes it
// sends, in which non-ASCII text is escaped as \uXXXX, so the body must
// never be decoded and re-encoded before Verify. There is no timestamp and
// so no tolerance: replays are turned into duplicates by the dedupe key
// (R9). The SHA-1 X-Hub-Signature is never consulted.
//
// Meta confirms an endpoint with an unsigned GET, answered by Subscribe.
type Meta struct{}

var (
	_ Scheme     = (*Meta)(nil)
	_ Subscriber = (*Meta)(nil)
	_ Signer     = (*Meta)(nil)
)

// NewMeta returns the Meta scheme. It refuses a tolerance (Meta signs no
// timestamp), a URL (Meta does not sign one) and HMAC options.
func NewMeta(o Options) (*Meta, error) {
	if err := checkOptions("meta", o, 0); err != nil {
		return nil, err
	}
	return &Meta{}, nil
}

// Verify implements Scheme: nil when the X-Hub-Signature-256 value is the
// HMAC-SHA256 of r.Body under any of secrets (several app secrets during a
// rotation). now is unused.
func (m *Meta) Verify(r Request, secrets [][]byte, now time.Time) error {
	if len(hvalues(r.Header, MetaSignatureHeader)) == 0 && len(hvalues(r.Header, MetaLegacySignatureHeader)) > 0 {
		return fmt.Errorf("%w: only the SHA-1 %s header, which is not accepted", ErrNotSigned, MetaLegacySignatureHeader)
	}
	return githubStyleVerify(r.Header, MetaSignatureHeader, "sha256=", sha256.New, sha256.Size, r.Body, secrets)
}

var metaFields = []string{"object", "entry"}

// Identify implements Scheme. Meta deliveries carry no event id, and Meta
// retries a failed delivery with the identical bytes, so the ID is
// "sha256:" + the hex SHA-256 of the raw body: a retry is a duplicate,
// while two deliveries that differ in any byte (another entry, another
// time) are two events. Type is the body's object, e.g. "page" or
// "whatsapp_business_account"; the body must be a JSON object with that
// string and an entry array.
func (m *Meta) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, metaFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: meta: body is not a JSON object", ErrInvalidPayload)
	}
	typ, ok := jsonString(f[0])
	if !ok || typ == "" || len(typ) > MaxIdentity {
		return Identity{}, fmt.Errorf("%w: meta: missing object", ErrInvalidPayload)
	}
	if len(f[1]) == 0 || f[1][0] != '[' {
		return Identity{}, fmt.Errorf("%w: meta: entry is not an array", ErrInvalidPayload)
	}
	sum := sha256.Sum256(r.Body)
	var id [len("sha256:") + 2*sha256.Size]byte
	copy(id[:], "sha256:")
	hex.Encode(id[len("sha256:"):], sum[:])
	return Identity{ID: string(id[:]), Type: typ}, nil
}

// Subscribe implements Subscriber for Meta's endpoint verification:
// GET ?hub.mode=subscribe&hub.verify_token=<token>&hub.challenge=<c> is
// answered 200 text/plain with the challenge when the token equals one of
// tokens. A missing mode or token is ErrNotSigned, another mode or a wrong
// token ErrNoMatch, a repeated parameter or a missing, over-long or
// non-printable challenge ErrMalformedHeader, no usable token ErrNoSecret.
// Tokens are compared through SHA-256 digests, in constant time whatever
// their lengths.
func (m *Meta) Subscribe(r Request, tokens [][]byte) (Reply, error) {
	if r.Method != http.MethodGet {
		return Reply{}, fmt.Errorf("%w: meta: subscription is a GET, got %q", ErrNotSigned, r.Method)
	}
	q, err := url.ParseQuery(r.RawQuery)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: meta: query: %v", ErrMalformedHeader, err)
	}
	mode, err := metaParam(q, MetaModeParam)
	if err != nil {
		return Reply{}, err
	}
	token, err := metaParam(q, MetaVerifyTokenParam)
	if err != nil {
		return Reply{}, err
	}
	challenge := q[MetaChallengeParam]
	if len(challenge) != 1 || challenge[0] == "" {
		return Reply{}, fmt.Errorf("%w: meta: want one non-empty %s, got %d", ErrMalformedHeader, MetaChallengeParam, len(challenge))
	}
	if err := metaChallenge(challenge[0]); err != nil {
		return Reply{}, err
	}
	if mode != "subscribe" {
		return Reply{}, fmt.Errorf("%w: meta: %s is %q, want subscribe", ErrNoMatch, MetaModeParam, mode)
	}
	switch err := matchCredential([]byte(token), tokens); {
	case errors.Is(err, ErrNoMatch):
		return Reply{}, fmt.Errorf("%w: meta: %s", ErrNoMatch, MetaVerifyTokenParam)
	case err != nil:
		return Reply{}, err
	}
	return Reply{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge[0])}, nil
}

// metaChallenge checks the challenge before it is echoed: Meta sends
// digits, so anything beyond printable ASCII, or longer than
// MetaMaxChallenge, is not worth sending back.
func metaChallenge(c string) error {
	if len(c) > MetaMaxChallenge {
		return fmt.Errorf("%w: meta: %s longer than %d bytes", ErrMalformedHeader, MetaChallengeParam, MetaMaxChallenge)
	}
	for i := 0; i < len(c); i++ {
		if c[i] < 0x21 || c[i] > 0x7e {
			return fmt.Errorf("%w: meta: %s is not printable ASCII", ErrMalformedHeader, MetaChallengeParam)
		}
	}
	return nil
}

// metaParam returns the one non-empty value of a query parameter:
// ErrNotSigned when it is absent or empty, ErrMalformedHeader when repeated.
func metaParam(q url.Values, name string) (string, error) {
	vs := q[name]
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", fmt.Errorf("%w: meta: no %s", ErrNotSigned, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: meta: %d %s parameters", ErrMalformedHeader, len(vs), name)
	}
	return vs[0], nil
}

// Sign implements Signer: it sets X-Hub-Signature-256 for r.Body and, as
// Meta does, the SHA-1 X-Hub-Signature that Verify ignores.
func (m *Meta) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(MetaSignatureHeader, "sha256="+hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	r.Header.Set(MetaLegacySignatureHeader, "sha1="+hex.EncodeToString(macOf(sha1.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (m *Meta) KeptHeaders() []string {
	return []string{MetaSignatureHeader, MetaLegacySignatureHeader}
}
