// Package signature proves who sent a webhook. Each provider's scheme is a
// Scheme in its own file (its headers, the bytes it signs, its encoding and
// tolerance, and how it reads the provider's own event identity), built by
// New from a source's kind and Options through the kinds table; the shared
// pieces (HMAC, timestamps, header parsing, the JSON scanner) are in
// common.go, hmac.go and jsonscan.go. Every comparison is constant-time,
// on the raw request bytes. The package is pure: no AWS, no clock reads
// (now is an argument), no logging.
package signature

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// Causes of a failed verification. They are distinct for logs and metrics;
// the HTTP answer is the same 401 for every one of them.
var (
	// ErrNotSigned means the request carries no signature header.
	ErrNotSigned = errors.New("signature: request not signed")
	// ErrMalformedHeader means the signature header cannot be parsed.
	ErrMalformedHeader = errors.New("signature: malformed signature header")
	// ErrTooOld means the signed timestamp is older than the tolerance.
	ErrTooOld = errors.New("signature: timestamp older than tolerance")
	// ErrTooNew means the signed timestamp is further in the future than the
	// tolerance allows for clock skew.
	ErrTooNew = errors.New("signature: timestamp in the future beyond tolerance")
	// ErrNoMatch means no signature matched any configured secret.
	ErrNoMatch = errors.New("signature: no signature matches")
	// ErrNoSecret means the source has no usable signing secret configured.
	ErrNoSecret = errors.New("signature: no signing secret configured")
	// ErrUntrustedCertificate means the delivery names a signing
	// certificate at a URL its scheme does not trust, or the certificate
	// there cannot sign it (expired, not RSA, too weak); nothing is fetched
	// from a refused URL.
	ErrUntrustedCertificate = errors.New("signature: untrusted signing certificate")
)

// ErrInvalidPayload is returned by Identify when a verified body lacks the
// fields that identify the event (the HTTP edge answers 400).
var ErrInvalidPayload = errors.New("signature: invalid payload")

// MaxIdentity bounds an event id, type or account in bytes: each becomes
// part of a DynamoDB key or attribute, and no provider's come near it.
// Longer values are ErrInvalidPayload.
const MaxIdentity = 512

// DefaultTolerance is the timestamp window used when a source sets none.
const DefaultTolerance = 5 * time.Minute

// Request is the part of an HTTP request a scheme needs: the raw body bytes
// exactly as sent, and headers with canonical names.
type Request struct {
	Method string
	Header http.Header
	// RawQuery is the query string as sent, without '?': Twilio signs it as
	// part of the URL, Meta's subscription handshake carries its parameters
	// there.
	RawQuery string
	Body     []byte
	// DeliveryID is the receiving edge's own id of this request (API
	// Gateway's request id): unique per request. It is the only identity
	// of a delivery that carries none a signature covers and that differs
	// between two real events (Dropbox's), where a retry stored twice is
	// the lesser harm than two events merged into one.
	DeliveryID string
	// Certificate is the certificate a Certified scheme's CertificateURL
	// named, fetched by the caller; nil for every other scheme.
	Certificate *x509.Certificate
}

// Identity is what a provider says about an event: its id (the dedupe key),
// its type and, where the payload carries it, its creation time.
type Identity struct {
	ID      string
	Type    string
	Created time.Time
	// Account is the account a verified header names (Shopify's shop
	// domain); "" when the endpoint's path decides.
	Account string
	// Payload is this event's own bytes when one delivery carries several
	// events (SendGrid, HubSpot); nil means the whole body.
	Payload []byte
	// Attributes are delivery facts worth keeping with the event (Shopify's
	// webhook id, Slack's retry number); nil when there are none. The
	// identities of one delivery may share one map: it is read-only.
	Attributes map[string]string
}

// Reply is a scheme's own answer to a provider handshake, given instead of
// storing an event.
type Reply struct {
	Status      int
	ContentType string
	Body        []byte
}

// Handshaker is implemented by schemes whose provider confirms an endpoint
// with a signed POST (Slack's url_verification, Zoom's url_validation,
// Discord's PING, Twitch's callback verification).
type Handshaker interface {
	// Handshake is called only after Verify accepted r. ok reports whether r
	// is a handshake, to be answered with reply and not stored.
	Handshake(r Request, secrets [][]byte) (reply Reply, ok bool, err error)
}

// Subscriber is implemented by schemes whose provider confirms an endpoint
// with an unsigned GET carrying a shared verify token (Meta's hub.challenge).
type Subscriber interface {
	// Subscribe answers the GET when its token equals one of tokens, in
	// constant time; otherwise it returns ErrNoMatch (or another cause).
	Subscribe(r Request, tokens [][]byte) (Reply, error)
}

// Pinger is implemented by schemes whose provider checks a new endpoint
// with an unsigned request that carries nothing but its own id
// (WooCommerce's "webhook_id=<n>" ping). Ping is called before Verify: ok
// reports whether r is exactly such a ping, answered with reply and never
// stored. A Ping must accept nothing else, so that no request is stored,
// nor answered with anything but an empty 200, without a signature.
type Pinger interface {
	Ping(r Request) (reply Reply, ok bool)
}

// Certified is implemented by schemes whose provider signs with the
// private key of a certificate that the delivery names by URL (SNS's
// SigningCertURL, PayPal's Paypal-Cert-Url). The caller asks for the URL
// before Verify, fetches the certificate there (over HTTPS, bounded by
// its deadline, cached) and passes it to Verify in Request.Certificate.
type Certified interface {
	// CertificateURL returns the URL of the certificate r says signed it,
	// once the scheme's allow-list accepted it: https, the provider's own
	// hosts and paths, no user info, port, query or fragment. A request
	// naming none is ErrNotSigned; a URL the allow-list refuses is
	// ErrUntrustedCertificate (both wrapped), and is never fetched.
	CertificateURL(r Request) (string, error)
	// Precheck is everything Verify checks but the signature itself (the
	// window, the configured topics or webhook ids, the headers' form),
	// so that a delivery that could never verify is refused before its
	// certificate is fetched.
	Precheck(r Request, secrets [][]byte, now time.Time) error
}

// Nonced is implemented by schemes whose signature covers a nonce but not
// the body's bytes under a cryptographic hash: Mailgun signs only a
// timestamp and a token; PayPal covers the body with a CRC32, which
// anyone can match with a few chosen bytes. A captured signature could
// then carry another body. Ingest accepts each nonce with one body only:
// it records the nonce with the body's SHA-256 until the signature's
// window ends, and refuses the nonce with any other body as a bad
// signature; the provider's retry of the same delivery (the same nonce
// and body) is accepted again.
type Nonced interface {
	// Nonce is called only after Verify accepted r: the signed nonce, and
	// the end of the window in which Verify accepts its signature.
	Nonce(r Request) (nonce string, until time.Time)
}

// Confirmer is implemented by schemes whose provider confirms a
// subscription by having the receiver fetch a URL that a signed delivery
// carries (SNS's SubscribeURL).
type Confirmer interface {
	// Confirmation is called only after Verify accepted r. ok reports
	// whether r asks for a confirmation: the caller then GETs url (which
	// the scheme checked against its allow-list) and answers reply once
	// that succeeded, storing nothing.
	Confirmation(r Request) (url string, reply Reply, ok bool, err error)
}

// Acknowledger is implemented by schemes whose provider requires a
// particular answer to a delivery it counts as received (Adyen's
// "[accepted]"). Ingest answers a delivery it stored, or found stored,
// with Ack's body and content type and its own status (202 or 200); every
// other answer (a refusal, a 5xx) is ingest's own.
type Acknowledger interface {
	Ack() Reply
}

// Splitter is implemented by schemes whose one delivery carries several
// events (SendGrid, HubSpot): each becomes its own inbox event.
type Splitter interface {
	// Split returns one identity per event, each with its Payload, or
	// ErrInvalidPayload (wrapped).
	Split(r Request) ([]Identity, error)
}

// Tenanter is implemented by schemes whose provider names, inside the
// delivery, the account it is for (Stripe Connect's "account", Slack's
// "team_id"), so that one URL can serve several tenants, each with its own
// secret. Tenant reads an unverified request: its answer may only choose
// the secret to verify with, and the event is trusted only once that
// secret verified it. ok is false when the delivery names none.
type Tenanter interface {
	Tenant(r Request) (account string, ok bool)
}

// HeaderKeeper is implemented by every scheme: the delivery headers worth
// keeping with the event, to trace a delivery or verify it again (delivery
// ids, the signature and its timestamp). Never one that carries a secret
// itself (GitLab's token, Authorization): ingest refuses to keep those
// whatever a scheme says.
type HeaderKeeper interface {
	KeptHeaders() []string
}

// Signer is implemented by every scheme whose provider signs with a key we
// can hold: it signs r as the provider would, for tests and local tooling.
// For asymmetric schemes key is the private key whose public half is the
// configured secret.
type Signer interface {
	Sign(r *Request, key []byte, now time.Time) error
}

// Scheme verifies one provider's signatures and reads its event identity.
type Scheme interface {
	// Verify returns nil when any signature on r matches any of secrets,
	// within the scheme's tolerance around now; otherwise one of the Err*
	// causes above, possibly wrapped.
	Verify(r Request, secrets [][]byte, now time.Time) error
	// Identify extracts the provider's event identity from a verified
	// request; ErrInvalidPayload (wrapped) when it cannot.
	Identify(r Request) (Identity, error)
}

// Options tune a scheme. The zero value means the scheme's defaults.
type Options struct {
	// Tolerance is the accepted age, and clock skew into the future, of a
	// signed timestamp. Zero means the scheme's default; negative is invalid.
	Tolerance time.Duration
	// URL is the public URL the provider calls, for schemes that sign it
	// (twilio, square, hubspot). It comes from configuration because API
	// Gateway's rawPath drops custom-domain base paths.
	URL string
	// HMAC configures the generic "hmac" kind.
	HMAC HMACOptions
}

// HMACOptions describe a provider that signs with an HMAC but has no kind of
// its own.
type HMACOptions struct {
	// Header carries the signature, e.g. "X-Signature". Required.
	Header string
	// Algorithm is sha1, sha256 (the default) or sha512.
	Algorithm string
	// Encoding of the signature: hex (the default) or base64.
	Encoding string
	// Prefix is stripped from the header value before decoding, e.g. "sha256=".
	Prefix string
	// TimestampHeader, when set, carries unix seconds that the tolerance
	// applies to and that Template can sign.
	TimestampHeader string
	// Template is the signed string with the placeholders {body} and
	// {timestamp}; default "{body}".
	Template string
	// IDHeader or IDPath (a dotted JSON path, e.g. "data.id") locates the
	// event id; TypeHeader or TypePath its type. One of the ID fields is
	// required.
	IDHeader, IDPath     string
	TypeHeader, TypePath string
}

type constructor func(Options) (Scheme, error)

// kinds maps a source's kind to its scheme. Adding a provider is one file
// with its scheme, one line here, and the steps docs/providers.md lists
// (its tests, malformed suite, benchmark, local source and sample, its
// row in that page's table), each held by a test.
var kinds = map[string]constructor{
	"adyen":            func(o Options) (Scheme, error) { return NewAdyen(o) },
	"bitbucket":        func(o Options) (Scheme, error) { return NewBitbucket(o) },
	"box":              func(o Options) (Scheme, error) { return NewBox(o) },
	"calcom":           func(o Options) (Scheme, error) { return NewCalcom(o) },
	"calendly":         func(o Options) (Scheme, error) { return NewCalendly(o) },
	"coinbasecommerce": func(o Options) (Scheme, error) { return NewCoinbaseCommerce(o) },
	"discord":          func(o Options) (Scheme, error) { return NewDiscord(o) },
	"dropbox":          func(o Options) (Scheme, error) { return NewDropbox(o) },
	"gitea":            func(o Options) (Scheme, error) { return NewGitea(o) },
	"github":           func(o Options) (Scheme, error) { return NewGitHub(o) },
	"gitlab":           func(o Options) (Scheme, error) { return NewGitLab(o) },
	"hmac":             func(o Options) (Scheme, error) { return NewHMAC(o) },
	"hubspot":          func(o Options) (Scheme, error) { return NewHubSpot(o) },
	"intercom":         func(o Options) (Scheme, error) { return NewIntercom(o) },
	"jira":             func(o Options) (Scheme, error) { return NewJira(o) },
	"linear":           func(o Options) (Scheme, error) { return NewLinear(o) },
	"mailgun":          func(o Options) (Scheme, error) { return NewMailgun(o) },
	"meta":             func(o Options) (Scheme, error) { return NewMeta(o) },
	"mux":              func(o Options) (Scheme, error) { return NewMux(o) },
	"okta":             func(o Options) (Scheme, error) { return NewOkta(o) },
	"paddle":           func(o Options) (Scheme, error) { return NewPaddle(o) },
	"pagerduty":        func(o Options) (Scheme, error) { return NewPagerDuty(o) },
	"paypal":           func(o Options) (Scheme, error) { return NewPayPal(o) },
	"paystack":         func(o Options) (Scheme, error) { return NewPaystack(o) },
	"postmark":         func(o Options) (Scheme, error) { return NewPostmark(o) },
	"razorpay":         func(o Options) (Scheme, error) { return NewRazorpay(o) },
	"sendgrid":         func(o Options) (Scheme, error) { return NewSendGrid(o) },
	"sentry":           func(o Options) (Scheme, error) { return NewSentry(o) },
	"shopify":          func(o Options) (Scheme, error) { return NewShopify(o) },
	"slack":            func(o Options) (Scheme, error) { return NewSlack(o) },
	"sns":              func(o Options) (Scheme, error) { return NewSNS(o) },
	"square":           func(o Options) (Scheme, error) { return NewSquare(o) },
	"standardwebhooks": func(o Options) (Scheme, error) { return NewStandardWebhooks(o) },
	"stripe":           func(o Options) (Scheme, error) { return NewStripe(o) },
	"telnyx":           func(o Options) (Scheme, error) { return NewTelnyx(o) },
	"twilio":           func(o Options) (Scheme, error) { return NewTwilio(o) },
	"twitch":           func(o Options) (Scheme, error) { return NewTwitch(o) },
	"typeform":         func(o Options) (Scheme, error) { return NewTypeform(o) },
	"vercel":           func(o Options) (Scheme, error) { return NewVercel(o) },
	"webflow":          func(o Options) (Scheme, error) { return NewWebflow(o) },
	"woocommerce":      func(o Options) (Scheme, error) { return NewWooCommerce(o) },
	"xero":             func(o Options) (Scheme, error) { return NewXero(o) },
	"zoom":             func(o Options) (Scheme, error) { return NewZoom(o) },
}

// New returns the scheme of the given kind.
func New(kind string, o Options) (Scheme, error) {
	c, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("signature: unknown kind %q (known: %v)", kind, Kinds())
	}
	if o.Tolerance < 0 {
		return nil, fmt.Errorf("signature: %s: negative tolerance %s", kind, o.Tolerance)
	}
	return c(o)
}

// Kinds lists the scheme kinds New accepts, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkTimestamp enforces tolerance in both directions.
func checkTimestamp(ts, now time.Time, tol time.Duration) error {
	if now.Sub(ts) > tol {
		return ErrTooOld
	}
	if ts.Sub(now) > tol {
		return ErrTooNew
	}
	return nil
}

// parseUnix parses a non-negative decimal of ASCII digits only (no sign, no
// spaces, no unicode digits) as seconds since the epoch.
func parseUnix(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 12 {
		return time.Time{}, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		n = n*10 + int64(c-'0')
	}
	return time.Unix(n, 0), true
}
