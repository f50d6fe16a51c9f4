package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// PostmarkAuthorizationHeader carries the webhook's Basic credentials.
const PostmarkAuthorizationHeader = "Authorization"

// Postmark verifies Postmark's webhooks, which sign nothing: a webhook URL
// may carry HTTP Basic credentials (https://user:pass@host/…), sent as
// `Authorization: Basic <base64(user:pass)>`. The secret is "user:pass";
// the credentials are compared through SHA-256 digests in constant time,
// whatever their lengths, and are never stored (ingest keeps no
// Authorization header). With no signature and no timestamp, a captured
// request could be sent again at any time: its body's hash is its id, so
// a replay is a duplicate, but anyone holding the credentials can send
// anything. Keep them long and random, and rotate them like a secret.
type Postmark struct{}

var (
	_ Scheme = (*Postmark)(nil)
	_ Signer = (*Postmark)(nil)
)

// NewPostmark returns the Postmark scheme. It refuses a tolerance, a URL
// and HMAC options.
func NewPostmark(o Options) (*Postmark, error) {
	if err := checkOptions("postmark", o, 0); err != nil {
		return nil, err
	}
	return &Postmark{}, nil
}

// Verify implements Scheme. now is unused.
func (p *Postmark) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, PostmarkAuthorizationHeader)
	if err != nil {
		return err
	}
	scheme, enc, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return fmt.Errorf("%w: Authorization is not Basic", ErrMalformedHeader)
	}
	// The decoder skips CR and LF; one spelling of the credentials only.
	if strings.ContainsAny(enc, "\r\n") {
		return fmt.Errorf("%w: Authorization is not base64 of user:password", ErrMalformedHeader)
	}
	creds, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || !strings.Contains(string(creds), ":") {
		return fmt.Errorf("%w: Authorization is not base64 of user:password", ErrMalformedHeader)
	}
	return matchCredential(creds, secrets)
}

var postmarkFields = []string{"RecordType"}

// Identify implements Scheme. Postmark's records carry no event id; each
// carries its own time (DeliveredAt, ReceivedAt, BouncedAt…), so the id is
// "sha256:<hex>" of the body: a retry, byte for byte the same, is a
// duplicate. Type is RecordType ("Delivery", "Bounce", "Open", "Click",
// "SpamComplaint", "SubscriptionChange"); an inbound message, which has
// none, is "Inbound".
func (p *Postmark) Identify(r Request) (Identity, error) {
	var f [1][]byte
	if err := jsonFields(r.Body, postmarkFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: postmark: body is not a JSON object", ErrInvalidPayload)
	}
	typ := "Inbound"
	if jsonPresent(f[0]) {
		var err error
		if typ, err = identityString("postmark", "RecordType", f[0]); err != nil {
			return Identity{}, err
		}
	}
	sum := sha256.Sum256(r.Body)
	return Identity{ID: "sha256:" + hex.EncodeToString(sum[:]), Type: typ}, nil
}

// Sign implements Signer: it sets Authorization to the Basic credentials
// key ("user:pass").
func (p *Postmark) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, PostmarkAuthorizationHeader, "Basic "+base64.StdEncoding.EncodeToString(key))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper): the sender's User-Agent; the credentials never are.
func (p *Postmark) KeptHeaders() []string { return []string{"User-Agent"} }
