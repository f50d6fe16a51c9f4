package signature

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Okta's event hook headers.
const (
	// OktaAuthorizationHeader carries the secret value configured on the
	// event hook (its authScheme, of type HEADER, named Authorization).
	OktaAuthorizationHeader = "Authorization"
	// OktaChallengeHeader carries the one-time verification challenge.
	OktaChallengeHeader = "X-Okta-Verification-Challenge"
	// OktaMaxChallenge bounds the challenge echoed back.
	OktaMaxChallenge = 256
)

// Okta verifies Okta's event hooks, which sign nothing: Okta sends the
// value configured on the hook's authScheme in the Authorization header,
// compared here with the secret through SHA-256 digests in constant time
// and never stored. One delivery carries several events (Split), each
// keyed by its uuid.
//
// When a hook is created, Okta verifies it once with a GET carrying
// X-Okta-Verification-Challenge, to be answered {"verification": <it>}.
// That request stores nothing, so it is answered (Subscribe) for any
// challenge that is a word of [A-Za-z0-9_-] of at most OktaMaxChallenge
// bytes; nothing else can be echoed.
type Okta struct{}

var (
	_ Scheme     = (*Okta)(nil)
	_ Signer     = (*Okta)(nil)
	_ Splitter   = (*Okta)(nil)
	_ Subscriber = (*Okta)(nil)
)

// NewOkta returns the Okta scheme. It refuses a tolerance, a URL and HMAC
// options.
func NewOkta(o Options) (*Okta, error) {
	if err := checkOptions("okta", o, 0); err != nil {
		return nil, err
	}
	return &Okta{}, nil
}

// Verify implements Scheme: the Authorization header must be one of
// secrets, byte for byte. now is unused.
func (k *Okta) Verify(r Request, secrets [][]byte, now time.Time) error {
	h, err := header(r.Header, OktaAuthorizationHeader)
	if err != nil {
		return err
	}
	return matchCredential([]byte(h), secrets)
}

// Subscribe implements Subscriber: the one-time verification GET is
// answered 200 application/json {"verification":"<challenge>"}. tokens are
// unused. A repeated, missing, over-long or non-word challenge is
// ErrMalformedHeader.
func (k *Okta) Subscribe(r Request, tokens [][]byte) (Reply, error) {
	if r.Method != http.MethodGet {
		return Reply{}, fmt.Errorf("%w: okta: verification is a GET, got %q", ErrNotSigned, r.Method)
	}
	vs := hvalues(r.Header, OktaChallengeHeader)
	if len(vs) != 1 || !isWord(vs[0], OktaMaxChallenge) {
		return Reply{}, fmt.Errorf("%w: okta: want one %s, a word of [A-Za-z0-9_-] of 1 to %d bytes", ErrMalformedHeader, OktaChallengeHeader, OktaMaxChallenge)
	}
	body, err := json.Marshal(map[string]string{"verification": vs[0]})
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: http.StatusOK, ContentType: "application/json", Body: body}, nil
}

var (
	oktaFields      = []string{"data"}
	oktaDataFields  = []string{"events"}
	oktaEventFields = []string{"uuid", "eventType", "published"}
)

// Split implements Splitter: one identity per element of data.events, ID
// its uuid, Type its eventType ("user.session.start"), Created its
// published time, Payload the element.
func (k *Okta) Split(r Request) ([]Identity, error) {
	var f [1][]byte
	var d [1][]byte
	if err := jsonFieldsNested(r.Body, oktaFields, f[:], &nested{parent: "data", keys: oktaDataFields, out: d[:]}); err != nil {
		return nil, fmt.Errorf("%w: okta: body is not a JSON object", ErrInvalidPayload)
	}
	if len(d[0]) == 0 || d[0][0] != '[' {
		return nil, fmt.Errorf("%w: okta: no data.events array", ErrInvalidPayload)
	}
	var e [3][]byte
	return splitEvents("okta", d[0], oktaEventFields, e[:], 4, func(elem []byte) (Identity, error) {
		id, err := identityString("okta", "uuid", e[0])
		if err != nil {
			return Identity{}, err
		}
		typ, err := identityString("okta", "eventType", e[1])
		if err != nil {
			return Identity{}, err
		}
		created, err := jsonTime("okta", "published", e[2])
		if err != nil {
			return Identity{}, err
		}
		return Identity{ID: id, Type: typ, Created: created, Payload: elem}, nil
	})
}

// Identify implements Scheme for a delivery of one event (ingest uses
// Split).
func (k *Okta) Identify(r Request) (Identity, error) {
	ids, err := k.Split(r)
	return oneEvent("okta", ids, err)
}

// Sign implements Signer: it sets Authorization to key, the hook's
// configured value.
func (k *Okta) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	setHeader(r, OktaAuthorizationHeader, string(key))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper): the sender's User-Agent; the secret value never is.
func (k *Okta) KeptHeaders() []string { return []string{"User-Agent"} }
