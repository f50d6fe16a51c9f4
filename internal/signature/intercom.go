package signature

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// IntercomSignatureHeader carries `sha1=<hex HMAC-SHA1(client secret,
// body)>`.
const IntercomSignatureHeader = "X-Hub-Signature"

// Intercom verifies `X-Hub-Signature: sha1=<hex>`, an HMAC-SHA1 of the raw
// body keyed with the app's client secret. SHA-1 is the only scheme
// Intercom offers, so accepting it is no downgrade; HMAC-SHA1 remains
// sound as a MAC. There is no timestamp and so no tolerance: replays are
// turned into duplicates by the notification id (R9).
type Intercom struct{}

var (
	_ Scheme = (*Intercom)(nil)
	_ Signer = (*Intercom)(nil)
)

// NewIntercom returns the Intercom scheme. It refuses a tolerance
// (Intercom signs no timestamp), a URL and HMAC options.
func NewIntercom(o Options) (*Intercom, error) {
	if err := checkOptions("intercom", o, 0); err != nil {
		return nil, err
	}
	return &Intercom{}, nil
}

// Verify implements Scheme: nil when the X-Hub-Signature value is the
// HMAC-SHA1 of r.Body under any of secrets. now is unused.
func (i *Intercom) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, IntercomSignatureHeader, "sha1=", sha1.New, sha1.Size, r.Body, secrets)
}

var intercomFields = []string{"type", "id", "topic", "created_at", "app_id"}

// Identify implements Scheme. ID is the body's id, the notification id
// ("notif_…") that Intercom keeps on every retry of the notification;
// Type is its topic (e.g. "conversation.user.created"); Created is
// created_at, in unix seconds, when present; Attributes keep app_id, the
// workspace, since one app's endpoint hears every workspace that installed
// it. A type other than notification_event is refused.
//
// The ping Intercom sends when an endpoint is saved may carry a null id.
// It then gets "ping:<app_id>:<created_at>", a key from fields that stay
// the same on a retry (delivery_attempts and delivered_at change, so a hash
// of the body would not).
func (i *Intercom) Identify(r Request) (Identity, error) {
	var f [5][]byte
	if err := jsonFields(r.Body, intercomFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: intercom: body is not a JSON object", ErrInvalidPayload)
	}
	if f[0] != nil && string(f[0]) != "null" {
		if !jsonStringIs(f[0], "notification_event") {
			return Identity{}, fmt.Errorf("%w: intercom: type is not notification_event", ErrInvalidPayload)
		}
	}
	topic, err := identityString("intercom", "topic", f[2])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{Type: topic}
	var created int64 = -1
	if f[3] != nil && string(f[3]) != "null" {
		n, ok := jsonInt(f[3])
		if !ok || n < 0 {
			return Identity{}, fmt.Errorf("%w: intercom: created_at is not unix seconds", ErrInvalidPayload)
		}
		created, out.Created = n, time.Unix(n, 0).UTC()
	}
	var app string
	if jsonPresent(f[4]) {
		var ok bool
		if app, ok = jsonString(f[4]); !ok || len(app) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: intercom: app_id is not a string", ErrInvalidPayload)
		}
		if app != "" {
			out.Attributes = map[string]string{"app_id": app}
		}
	}
	switch id, ok := jsonString(f[1]); {
	case ok && id != "" && len(id) <= MaxIdentity:
		out.ID = id
	case topic == "ping" && (f[1] == nil || string(f[1]) == "null") && app != "" && created >= 0:
		out.ID = "ping:" + app + ":" + strconv.FormatInt(created, 10)
		if len(out.ID) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: intercom: ping key too long", ErrInvalidPayload)
		}
	default:
		return Identity{}, fmt.Errorf("%w: intercom: missing id", ErrInvalidPayload)
	}
	return out, nil
}

// Sign implements Signer: it sets X-Hub-Signature for r.Body.
func (i *Intercom) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(IntercomSignatureHeader, "sha1="+hex.EncodeToString(macOf(sha1.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (i *Intercom) KeptHeaders() []string {
	return []string{IntercomSignatureHeader}
}
