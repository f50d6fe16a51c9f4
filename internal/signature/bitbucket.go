package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Bitbucket Cloud's webhook headers.
const (
	BitbucketSignatureHeader = "X-Hub-Signature"
	BitbucketRequestHeader   = "X-Request-Uuid"
	BitbucketEventHeader     = "X-Event-Key"
	BitbucketHookHeader      = "X-Hook-Uuid"
)

// Bitbucket verifies Bitbucket Cloud's `X-Hub-Signature: sha256=<hex>`, an
// HMAC-SHA256 of the raw body keyed with the webhook's secret. No
// timestamp is signed; the request's id and event are headers.
type Bitbucket struct{}

var (
	_ Scheme = (*Bitbucket)(nil)
	_ Signer = (*Bitbucket)(nil)
)

// NewBitbucket returns the Bitbucket Cloud scheme. It refuses a tolerance,
// a URL and HMAC options.
func NewBitbucket(o Options) (*Bitbucket, error) {
	if err := checkOptions("bitbucket", o, 0); err != nil {
		return nil, err
	}
	return &Bitbucket{}, nil
}

// Verify implements Scheme. now is unused.
func (b *Bitbucket) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, BitbucketSignatureHeader, "sha256=", sha256.New, sha256.Size, r.Body, secrets)
}

// Identify implements Scheme. ID is X-Request-UUID (outside the
// signature: the providers table's footnote); Type is X-Event-Key
// ("repo:push"); the body must be a JSON object. X-Hook-UUID, the
// webhook, is kept as "hook_uuid".
func (b *Bitbucket) Identify(r Request) (Identity, error) {
	id, err := headerIdentity("bitbucket", r, BitbucketRequestHeader, BitbucketEventHeader)
	if err != nil {
		return Identity{}, err
	}
	if h := hget(r.Header, BitbucketHookHeader); h != "" && len(h) <= MaxIdentity && githubPrintable(h) {
		id.Attributes = map[string]string{"hook_uuid": h}
	}
	return id, nil
}

// Sign implements Signer: it sets X-Hub-Signature for r.Body.
func (b *Bitbucket) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, BitbucketSignatureHeader, "sha256="+hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (b *Bitbucket) KeptHeaders() []string {
	return []string{BitbucketSignatureHeader, BitbucketRequestHeader, BitbucketEventHeader, BitbucketHookHeader}
}
