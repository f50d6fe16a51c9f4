package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Gitea's (and Forgejo's) webhook headers.
const (
	GiteaSignatureHeader = "X-Gitea-Signature"
	GiteaDeliveryHeader  = "X-Gitea-Delivery"
	GiteaEventHeader     = "X-Gitea-Event"
	// GiteaEventTypeHeader is the finer type ("pull_request_sync"),
	// kept as an attribute.
	GiteaEventTypeHeader = "X-Gitea-Event-Type"
)

// Gitea verifies Gitea's and Forgejo's `X-Gitea-Signature: <hex>`, an
// HMAC-SHA256 of the raw body keyed with the webhook's secret (Forgejo
// sends the same value under X-Forgejo-Signature too). No timestamp is
// signed. The delivery's id and event are headers, as GitHub's are.
type Gitea struct{}

var (
	_ Scheme = (*Gitea)(nil)
	_ Signer = (*Gitea)(nil)
)

// NewGitea returns the Gitea scheme. It refuses a tolerance, a URL and HMAC
// options.
func NewGitea(o Options) (*Gitea, error) {
	if err := checkOptions("gitea", o, 0); err != nil {
		return nil, err
	}
	return &Gitea{}, nil
}

// Verify implements Scheme. now is unused.
func (g *Gitea) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, GiteaSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

// Identify implements Scheme. ID is X-Gitea-Delivery, the delivery's UUID,
// kept when a delivery is redelivered (outside the signature: the
// providers table's footnote); Type is X-Gitea-Event ("push"); the body
// must be a JSON object. X-Gitea-Event-Type is kept as "event_type".
func (g *Gitea) Identify(r Request) (Identity, error) {
	id, err := headerIdentity("gitea", r, GiteaDeliveryHeader, GiteaEventHeader)
	if err != nil {
		return Identity{}, err
	}
	if et := hget(r.Header, GiteaEventTypeHeader); et != "" && len(et) <= MaxIdentity && githubPrintable(et) {
		id.Attributes = map[string]string{"event_type": et}
	}
	return id, nil
}

// Sign implements Signer: it sets X-Gitea-Signature for r.Body.
func (g *Gitea) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, GiteaSignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (g *Gitea) KeptHeaders() []string {
	return []string{GiteaSignatureHeader, GiteaDeliveryHeader, GiteaEventHeader, GiteaEventTypeHeader}
}
