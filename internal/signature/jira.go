package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Jira Cloud's webhook headers.
const (
	JiraSignatureHeader = "X-Hub-Signature"
	// JiraIdentifierHeader is the same on every retry of one webhook
	// event.
	JiraIdentifierHeader = "X-Atlassian-Webhook-Identifier"
	JiraRetryHeader      = "X-Atlassian-Webhook-Retry"
)

// Jira verifies Jira Cloud's webhooks registered with a secret:
// `X-Hub-Signature: sha256=<hex>`, an HMAC-SHA256 of the raw body. No
// timestamp is signed.
type Jira struct{}

var (
	_ Scheme = (*Jira)(nil)
	_ Signer = (*Jira)(nil)
)

// NewJira returns the Jira Cloud scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewJira(o Options) (*Jira, error) {
	if err := checkOptions("jira", o, 0); err != nil {
		return nil, err
	}
	return &Jira{}, nil
}

// Verify implements Scheme. now is unused.
func (j *Jira) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, JiraSignatureHeader, "sha256=", sha256.New, sha256.Size, r.Body, secrets)
}

var jiraFields = []string{"webhookEvent", "timestamp"}

// Identify implements Scheme. ID is X-Atlassian-Webhook-Identifier, which
// Atlassian keeps on every retry (outside the signature: the providers
// table's footnote); Type is the body's webhookEvent
// ("jira:issue_updated"); Created is its timestamp (milliseconds). The
// retry number is kept as "retry".
func (j *Jira) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, jiraFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: jira: body is not a JSON object", ErrInvalidPayload)
	}
	typ, err := identityString("jira", "webhookEvent", f[0])
	if err != nil {
		return Identity{}, err
	}
	id, err := githubIdentityHeader(r.Header, JiraIdentifierHeader)
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ}
	if jsonPresent(f[1]) {
		ms, ok := jsonInt(f[1])
		if !ok || ms < 0 || ms/1000 > maxUnixSeconds {
			return Identity{}, fmt.Errorf("%w: jira: timestamp is not unix milliseconds", ErrInvalidPayload)
		}
		out.Created = time.UnixMilli(ms).UTC()
	}
	if n := hget(r.Header, JiraRetryHeader); n != "" && len(n) <= 8 && githubPrintable(n) {
		out.Attributes = map[string]string{"retry": n}
	}
	return out, nil
}

// Sign implements Signer: it sets X-Hub-Signature for r.Body.
func (j *Jira) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, JiraSignatureHeader, "sha256="+hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (j *Jira) KeptHeaders() []string {
	return []string{JiraSignatureHeader, JiraIdentifierHeader, JiraRetryHeader}
}
