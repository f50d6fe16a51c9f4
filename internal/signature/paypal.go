package signature

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// PayPal's webhook headers.
const (
	PayPalTransmissionIDHeader   = "Paypal-Transmission-Id"
	PayPalTransmissionTimeHeader = "Paypal-Transmission-Time"
	PayPalTransmissionSigHeader  = "Paypal-Transmission-Sig"
	PayPalCertURLHeader          = "Paypal-Cert-Url"
	PayPalAuthAlgoHeader         = "Paypal-Auth-Algo"
)

// PayPalDefaultTolerance is the age a transmission's time may have. PayPal
// retries a delivery 25 times over three days, and a retry is the same
// transmission (its id, time and signature), so a shorter window would
// refuse, and lose, late retries; a replay within it is the stored event
// id, a duplicate.
const PayPalDefaultTolerance = 4 * 24 * time.Hour

// paypalHosts serve PayPal's signing certificates, live and sandbox.
var paypalHosts = []string{"api.paypal.com", "api-m.paypal.com", "api.sandbox.paypal.com", "api-m.sandbox.paypal.com"}

// paypalCertPath starts the path of a PayPal signing certificate.
const paypalCertPath = "/v1/notifications/certs/"

// PayPal verifies PayPal REST webhooks: an RSA SHA-256 signature, base64 in
// Paypal-Transmission-Sig, over
// "<transmission id>|<transmission time>|<webhook id>|<CRC32 of the body,
// decimal>", made with the key of the certificate at Paypal-Cert-Url. The
// certificate is trusted only at https://api[-m][.sandbox].paypal.com/v1/notifications/certs/…,
// fetched over TLS by the caller (see Certified). Paypal-Auth-Algo must be
// SHA256withRSA.
//
// The body is covered by its CRC32 only, which is no protection: anyone
// holding one signed delivery can write another body with the same CRC32.
// So the transmission id is a nonce (see Nonced): ingest accepts each
// with the one body it first came with, and the signature is not kept
// with the event.
//
// The secrets are the webhook ids the endpoint serves (the dashboard's
// "Webhook ID"; live and sandbox differ): the id is signed, so PayPal's
// signature of a delivery to another webhook does not verify here. The
// transmission time must be at most the tolerance old (four days by
// default, see PayPalDefaultTolerance) and at most 5 minutes ahead.
type PayPal struct {
	tolerance time.Duration
}

var (
	_ Scheme    = (*PayPal)(nil)
	_ Certified = (*PayPal)(nil)
	_ Nonced    = (*PayPal)(nil)
	_ Signer    = (*PayPal)(nil)
)

// NewPayPal returns the PayPal scheme. Setting o.URL or o.HMAC is an
// error.
func NewPayPal(o Options) (*PayPal, error) {
	if err := checkOptions("paypal", o, usesTolerance); err != nil {
		return nil, err
	}
	return &PayPal{tolerance: toleranceOr(o, PayPalDefaultTolerance)}, nil
}

// CertificateURL implements Certified.
func (p *PayPal) CertificateURL(r Request) (string, error) {
	raw, err := header(r.Header, PayPalCertURLHeader)
	if err != nil {
		return "", err
	}
	u, err := providerURL(raw, paypalHosts, false)
	if err != nil {
		return "", fmt.Errorf("paypal: %s: %w", PayPalCertURLHeader, err)
	}
	name, ok := strings.CutPrefix(u.Path, paypalCertPath)
	if !ok || !isWord(name, 128) {
		return "", fmt.Errorf("%w: paypal: certificate path %q", ErrUntrustedCertificate, clip(u.Path))
	}
	return raw, nil
}

// paypalField reads a header that is part of the signed string: present,
// once, and without the separator '|'.
func paypalField(r Request, name string) (string, error) {
	v, err := header(r.Header, name)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(v, '|') >= 0 || len(v) > 256 {
		return "", fmt.Errorf("%w: paypal: %s", ErrMalformedHeader, name)
	}
	return v, nil
}

// Verify implements Scheme: r.Certificate must be the one CertificateURL
// named.
func (p *PayPal) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := p.precheck(r, secrets, now)
	if err != nil {
		return err
	}
	crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.Body)), 10)
	for _, webhookID := range v.webhookIDs {
		digest := sha256.Sum256([]byte(v.id + "|" + v.ts + "|" + string(webhookID) + "|" + crc))
		switch err := verifyCertRSA(r.Certificate, now, crypto.SHA256, digest[:], v.sig); err {
		case nil:
			return nil
		case ErrNoMatch:
		default:
			return err
		}
	}
	return ErrNoMatch
}

// Precheck implements Certified.
func (p *PayPal) Precheck(r Request, secrets [][]byte, now time.Time) error {
	_, err := p.precheck(r, secrets, now)
	return err
}

// paypalChecked is what precheck leaves for the signature check.
type paypalChecked struct {
	sig        []byte
	id, ts     string
	webhookIDs [][]byte
}

func (p *PayPal) precheck(r Request, secrets [][]byte, now time.Time) (paypalChecked, error) {
	var v paypalChecked
	sigRaw, err := header(r.Header, PayPalTransmissionSigHeader)
	if err != nil {
		return v, err
	}
	if _, err := p.CertificateURL(r); err != nil {
		return v, err
	}
	if v.id, err = paypalField(r, PayPalTransmissionIDHeader); err != nil {
		return v, err
	}
	if v.ts, err = paypalField(r, PayPalTransmissionTimeHeader); err != nil {
		return v, err
	}
	algo, err := header(r.Header, PayPalAuthAlgoHeader)
	if err != nil {
		return v, fmt.Errorf("%w: paypal: no %s", ErrMalformedHeader, PayPalAuthAlgoHeader)
	}
	if algo != "SHA256withRSA" {
		return v, fmt.Errorf("%w: paypal: %s %q (want SHA256withRSA)", ErrMalformedHeader, PayPalAuthAlgoHeader, clip(algo))
	}
	sig, ok := decodeRSASignature(sigRaw)
	if !ok {
		return v, fmt.Errorf("%w: paypal: %s is not base64", ErrMalformedHeader, PayPalTransmissionSigHeader)
	}
	v.sig = sig
	ts, err := time.Parse(time.RFC3339Nano, v.ts)
	if err != nil {
		return v, fmt.Errorf("%w: paypal: %s: %v", ErrMalformedHeader, PayPalTransmissionTimeHeader, err)
	}
	if now.Sub(ts) > p.tolerance {
		return v, ErrTooOld
	}
	if ts.Sub(now) > DefaultTolerance {
		return v, ErrTooNew
	}
	for _, webhookID := range secrets {
		if len(webhookID) > 0 && strings.IndexByte(string(webhookID), '|') < 0 {
			v.webhookIDs = append(v.webhookIDs, webhookID)
		}
	}
	if len(v.webhookIDs) == 0 {
		return v, ErrNoSecret
	}
	return v, nil
}

var paypalFields = []string{"id", "event_type", "create_time"}

// Identify implements Scheme. ID is the event's id ("WH-…"), the same on
// every retry and resend; Type is event_type ("PAYMENT.CAPTURE.COMPLETED");
// Created is create_time.
func (p *PayPal) Identify(r Request) (Identity, error) {
	var f [3][]byte
	if err := jsonFields(r.Body, paypalFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: paypal: body is not a JSON object", ErrInvalidPayload)
	}
	id, err := identityString("paypal", "id", f[0])
	if err != nil {
		return Identity{}, err
	}
	typ, err := identityString("paypal", "event_type", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("paypal", "create_time", f[2])
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: id, Type: typ, Created: created}, nil
}

// PayPalSigningKey is Sign's key: the webhook id that PayPal signs into
// each delivery, and the PEM RSA private key of the certificate at the
// request's Paypal-Cert-Url.
type PayPalSigningKey struct {
	WebhookID  string `json:"webhook_id"`
	PrivateKey string `json:"private_key"`
}

// Sign implements Signer as PayPal signs: key is a PayPalSigningKey as
// JSON, and r must carry Paypal-Cert-Url. Sign sets a new transmission id,
// now as its time, the algorithm and the signature.
func (p *PayPal) Sign(r *Request, key []byte, now time.Time) error {
	var k PayPalSigningKey
	if err := json.Unmarshal(key, &k); err != nil || k.WebhookID == "" {
		return fmt.Errorf("%w: paypal: the signing key is not {\"webhook_id\", \"private_key\"}", ErrNoSecret)
	}
	priv, err := rsaPrivate("paypal", []byte(k.PrivateKey))
	if err != nil {
		return err
	}
	if hget(r.Header, PayPalCertURLHeader) == "" {
		return fmt.Errorf("paypal: sign: the request has no %s", PayPalCertURLHeader)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	h := fmt.Sprintf("%x", b)
	id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	ts := now.UTC().Format(time.RFC3339)
	crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.Body)), 10)
	digest := sha256.Sum256([]byte(id + "|" + ts + "|" + k.WebhookID + "|" + crc))
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, digest[:])
	if err != nil {
		return err
	}
	setHeader(r, PayPalTransmissionIDHeader, id)
	setHeader(r, PayPalTransmissionTimeHeader, ts)
	setHeader(r, PayPalAuthAlgoHeader, "SHA256withRSA")
	setHeader(r, PayPalTransmissionSigHeader, base64.StdEncoding.EncodeToString(sig))
	return nil
}

// Nonce implements Nonced: the transmission id, whose signature Verify
// accepts until the transmission time plus the tolerance.
func (p *PayPal) Nonce(r Request) (string, time.Time) {
	id := hget(r.Header, PayPalTransmissionIDHeader)
	ts, _ := time.Parse(time.RFC3339Nano, hget(r.Header, PayPalTransmissionTimeHeader))
	return id, ts.Add(p.tolerance)
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper). Not the signature: with it, anyone reading the event
// could sign another body of the same CRC32 until the window ends (the
// nonce record refuses that, and keeping it would still be a standing
// invitation).
func (p *PayPal) KeptHeaders() []string {
	return []string{PayPalTransmissionIDHeader, PayPalTransmissionTimeHeader, PayPalCertURLHeader, PayPalAuthAlgoHeader}
}
