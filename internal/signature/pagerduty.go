package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// PagerDutySignatureHeader carries PagerDuty's V3 webhook signatures.
const PagerDutySignatureHeader = "X-Pagerduty-Signature"

// PagerDuty's delivery headers, kept with the event.
const (
	PagerDutyWebhookIDHeader    = "X-Webhook-Id"
	PagerDutyWebhookSubscHeader = "X-Webhook-Subscription"
)

// pagerDutyMaxSigs bounds the v1 values one header may carry.
const pagerDutyMaxSigs = 8

// PagerDuty verifies PagerDuty's V3 webhooks: `X-PagerDuty-Signature:
// v1=<hex>[,v1=<hex>…]`, each an HMAC-SHA256 of the raw body keyed with the
// subscription's secret. PagerDuty sends one v1 per secret while a secret
// is rotated; any may match. Entries of other versions are ignored, never a
// fallback, as PagerDuty's own go-pagerduty (webhookv3.VerifySignature)
// does. PagerDuty signs no timestamp, so there is no tolerance: a replay is
// a duplicate of its event id (R9).
type PagerDuty struct{}

var (
	_ Scheme = (*PagerDuty)(nil)
	_ Signer = (*PagerDuty)(nil)
)

// NewPagerDuty returns the PagerDuty V3 scheme. It refuses a tolerance (no
// timestamp is signed), a URL and HMAC options.
func NewPagerDuty(o Options) (*PagerDuty, error) {
	if err := checkOptions("pagerduty", o, 0); err != nil {
		return nil, err
	}
	return &PagerDuty{}, nil
}

// Verify implements Scheme: nil when any v1 entry is the HMAC-SHA256 of
// r.Body under any of secrets. now is unused.
func (p *PagerDuty) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, PagerDutySignatureHeader)
	if err != nil {
		return err
	}
	var (
		sigs [pagerDutyMaxSigs][sha256.Size]byte
		n    int
	)
	for entry := range strings.SplitSeq(h, ",") {
		v, ok := strings.CutPrefix(entry, "v1=")
		if !ok || len(v) != hex.EncodedLen(sha256.Size) {
			continue // another version, or cannot match; others may
		}
		var d [sha256.Size]byte
		if !unhex(d[:], v) {
			continue
		}
		if n == len(sigs) {
			return fmt.Errorf("%w: more than %d v1 signatures", ErrMalformedHeader, pagerDutyMaxSigs)
		}
		sigs[n] = d
		n++
	}
	if n == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrNoMatch)
	}
	return matchSHA256(secrets, sigs[:n], r.Body)
}

var (
	pagerDutyFields      = []string{"event"}
	pagerDutyEventFields = []string{"id", "event_type", "occurred_at", "resource_type"}
)

// Identify implements Scheme. ID is event.id, the id PagerDuty keeps on
// every retry of the event ("01BZ…"); Type is event.event_type
// ("incident.triggered", "pagey.ping" for a test); Created is
// event.occurred_at. event.resource_type is kept as an attribute.
func (p *PagerDuty) Identify(r Request) (Identity, error) {
	var f [1][]byte
	var e [4][]byte
	if err := jsonFieldsNested(r.Body, pagerDutyFields, f[:], &nested{parent: "event", keys: pagerDutyEventFields, out: e[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: pagerduty: body is not a JSON object", ErrInvalidPayload)
	}
	if len(f[0]) == 0 || f[0][0] != '{' {
		return Identity{}, fmt.Errorf("%w: pagerduty: no event object", ErrInvalidPayload)
	}
	id, err := identityString("pagerduty", "event.id", e[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("pagerduty", "event.event_type", e[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("pagerduty", "event.occurred_at", e[2])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{ID: id, Type: typ, Created: created}
	if rt, ok := jsonString(e[3]); ok && rt != "" && len(rt) <= MaxIdentity {
		out.Attributes = map[string]string{"resource_type": rt}
	}
	return out, nil
}

// SignPagerDuty returns an X-PagerDuty-Signature value for body, one v1
// entry per secret, as PagerDuty sends it while a secret is rotated.
func SignPagerDuty(body []byte, secrets ...[]byte) string {
	var b strings.Builder
	for i, s := range secrets {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("v1=")
		b.WriteString(hex.EncodeToString(macOf(sha256.New, s, body)))
	}
	return b.String()
}

// Sign implements Signer: it sets X-PagerDuty-Signature for r.Body.
func (p *PagerDuty) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(PagerDutySignatureHeader, SignPagerDuty(r.Body, key))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (p *PagerDuty) KeptHeaders() []string {
	return []string{PagerDutySignatureHeader, PagerDutyWebhookIDHeader, PagerDutyWebhookSubscHeader}
}
