package signature

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Dropbox's webhook names.
const (
	// DropboxSignatureHeader carries the hex HMAC-SHA256 of the body,
	// keyed with the app secret.
	DropboxSignatureHeader = "X-Dropbox-Signature"
	// DropboxChallengeParam is the verification GET's query parameter.
	DropboxChallengeParam = "challenge"
	// DropboxMaxChallenge bounds the challenge echoed back.
	DropboxMaxChallenge = 256
)

// Dropbox verifies Dropbox's webhook notifications: `X-Dropbox-Signature:
// <hex>`, an HMAC-SHA256 of the raw body keyed with the app secret. No
// timestamp is signed. A notification says only which accounts changed
// ({"list_folder":{"accounts":[…]},"delta":{"users":[…]}}) and carries no
// id: every later notification for one account is byte for byte the same
// as the first, so neither the body nor anything signed can tell two real
// notifications apart. Each delivery is therefore its own event, keyed by
// the edge's request id (Request.DeliveryID): a retry is stored again,
// which only means "sync now" twice; two notifications are never merged,
// which would stop the app syncing that account.
//
// Dropbox confirms an endpoint with an unsigned GET ?challenge=<c>, which
// must be answered 200 with c as the body (Subscribe). It carries no token
// and proves nothing, so it is answered for any well-formed challenge and
// stores nothing; the challenge is refused unless it is at most
// DropboxMaxChallenge bytes of [A-Za-z0-9_-], so what is echoed can be
// nothing but an opaque word.
type Dropbox struct{}

var (
	_ Scheme     = (*Dropbox)(nil)
	_ Signer     = (*Dropbox)(nil)
	_ Subscriber = (*Dropbox)(nil)
)

// NewDropbox returns the Dropbox scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewDropbox(o Options) (*Dropbox, error) {
	if err := checkOptions("dropbox", o, 0); err != nil {
		return nil, err
	}
	return &Dropbox{}, nil
}

// Verify implements Scheme. now is unused.
func (d *Dropbox) Verify(r Request, secrets [][]byte, now time.Time) error {
	return githubStyleVerify(r.Header, DropboxSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var dropboxFields = []string{"list_folder", "delta"}

// Identify implements Scheme. ID is "delivery:" and r.DeliveryID (none is
// an ErrInvalidPayload); Type is "list_folder" (Dropbox's notification,
// which may also carry the older "delta" list). The body must be a JSON
// object with either.
func (d *Dropbox) Identify(r Request) (Identity, error) {
	var f [2][]byte
	if err := jsonFields(r.Body, dropboxFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: dropbox: body is not a JSON object", ErrInvalidPayload)
	}
	typ := "list_folder"
	switch {
	case len(f[0]) > 0 && f[0][0] == '{':
	case len(f[1]) > 0 && f[1][0] == '{':
		typ = "delta"
	default:
		return Identity{}, fmt.Errorf("%w: dropbox: no list_folder or delta object", ErrInvalidPayload)
	}
	id := "delivery:" + r.DeliveryID
	if r.DeliveryID == "" || !validID(id) {
		return Identity{}, fmt.Errorf("%w: dropbox: no delivery id to key the notification by", ErrInvalidPayload)
	}
	return Identity{ID: id, Type: typ}, nil
}

// Subscribe implements Subscriber: GET ?challenge=<c> is answered 200
// text/plain with c. tokens are unused (Dropbox sends none). A repeated,
// missing, empty, over-long or non-word challenge is ErrMalformedHeader.
func (d *Dropbox) Subscribe(r Request, tokens [][]byte) (Reply, error) {
	if r.Method != http.MethodGet {
		return Reply{}, fmt.Errorf("%w: dropbox: verification is a GET, got %q", ErrNotSigned, r.Method)
	}
	q, err := url.ParseQuery(r.RawQuery)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: dropbox: query: %v", ErrMalformedHeader, err)
	}
	c := q[DropboxChallengeParam]
	if len(c) != 1 || !isWord(c[0], DropboxMaxChallenge) {
		return Reply{}, fmt.Errorf("%w: dropbox: want one %s, a word of [A-Za-z0-9_-] of 1 to %d bytes", ErrMalformedHeader, DropboxChallengeParam, DropboxMaxChallenge)
	}
	return Reply{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(c[0])}, nil
}

// Sign implements Signer: it sets X-Dropbox-Signature for r.Body.
func (d *Dropbox) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(DropboxSignatureHeader, hex.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (d *Dropbox) KeptHeaders() []string {
	return []string{DropboxSignatureHeader}
}
