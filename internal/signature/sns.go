package signature

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// SNS's message types, the body's "Type".
const (
	SNSNotification             = "Notification"
	SNSSubscriptionConfirmation = "SubscriptionConfirmation"
	SNSUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// SNSDefaultTolerance is the age an SNS message's Timestamp may have. SNS
// signs the time it published the message, and a retry to an HTTP/S
// endpoint carries the same Timestamp and signature; a delivery policy
// may retry for up to 3,600 seconds (AWS's hard limit on an HTTP/S
// policy's total retry time), counted from a first attempt that may
// itself come after the publish, and each attempt takes up to its
// timeout. A window of exactly an hour could refuse, and lose, the last
// retry; two hours leave room. A replay within them is the stored
// MessageId, a duplicate.
const SNSDefaultTolerance = 2 * time.Hour

// snsMaxSkew bounds how far in the future a Timestamp may be.
const snsMaxSkew = DefaultTolerance

// snsKeys are the members of an SNS HTTP/S message, in jsonMembers'
// index order.
var snsKeys = [...]string{
	"Type", "MessageId", "Token", "TopicArn", "Subject", "Message", "SubscribeURL",
	"UnsubscribeURL", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL",
	"MessageAttributes",
}

const (
	snsType = iota
	snsMessageID
	snsToken
	snsTopicArn
	snsSubject
	snsMessage
	snsSubscribeURL
	snsUnsubscribeURL
	snsTimestamp
	snsSignatureVersion
	snsSignature
	snsSigningCertURL
	snsMessageAttributes
)

// snsMsg is an SNS message's string members as snsParse read them: each
// a slice of the body where it has no escapes, else its unquoted copy.
type snsMsg struct {
	f          [len(snsKeys)][]byte
	hasSubject bool
}

// s is member n as a string.
func (m *snsMsg) s(n int) string { return string(m.f[n]) }

// is reports whether member n is want, without a copy.
func (m *snsMsg) is(n int, want string) bool { return string(m.f[n]) == want }

// SNS verifies Amazon SNS HTTP/S subscriptions. SNS signs a canonical
// string of the message's members (not the body's bytes) with the private
// key of a certificate it names in SigningCertURL: RSA with SHA1 for
// SignatureVersion 1, SHA256 for 2. The certificate is trusted only at
// https://sns.<the topic's region>.amazonaws.com[.cn]/SimpleNotificationService-….pem,
// fetched over TLS by the caller (see Certified).
//
// The secrets are the topic ARNs the endpoint accepts: anyone can create a
// topic, subscribe the endpoint and have SNS sign for it, so a valid
// signature alone proves only that SNS sent the message. The Timestamp
// must be at most the tolerance old (two hours by default, see
// SNSDefaultTolerance) and at most 5 minutes ahead.
//
// The message's members, not its bytes, are what is signed, so a body
// another parser could read differently is refused: a member twice, or a
// member whose name differs from one of SNS's only in case (encoding/json
// would take "message" for "Message"). MessageAttributes are not signed
// by SNS; a handler must not trust them. Raw message delivery sends no
// signature and is refused.
type SNS struct {
	tolerance time.Duration
}

var (
	_ Scheme    = (*SNS)(nil)
	_ Certified = (*SNS)(nil)
	_ Confirmer = (*SNS)(nil)
	_ Signer    = (*SNS)(nil)
)

// NewSNS returns the SNS scheme. Setting o.URL or o.HMAC is an error.
func NewSNS(o Options) (*SNS, error) {
	if err := checkOptions("sns", o, usesTolerance); err != nil {
		return nil, err
	}
	return &SNS{tolerance: toleranceOr(o, SNSDefaultTolerance)}, nil
}

// snsParse reads body as an SNS message: a JSON object whose SNS members
// are strings of valid UTF-8 (Subject may be null, MessageAttributes an
// object), each at most once and none in another case, with the members
// its Type requires. A message without a Signature is ErrNotSigned;
// anything else wrong is ErrMalformedHeader.
func snsParse(body []byte) (snsMsg, error) {
	var m snsMsg
	var raw [len(snsKeys)][]byte
	if jsonFieldsStrict(body, snsKeys[:], raw[:]) != nil {
		return m, fmt.Errorf("%w: sns: body is not a JSON object naming each member once, in its own case", ErrMalformedHeader)
	}
	for n, v := range raw {
		switch {
		case v == nil:
		case n == snsMessageAttributes:
			if v[0] != '{' {
				return m, fmt.Errorf("%w: sns: MessageAttributes is not an object", ErrMalformedHeader)
			}
		case n == snsSubject && string(v) == "null":
		default:
			s, ok := jsonStringBytes(v)
			if !ok {
				return m, fmt.Errorf("%w: sns: %s is not a string", ErrMalformedHeader, snsKeys[n])
			}
			m.f[n] = s
			m.hasSubject = m.hasSubject || n == snsSubject
		}
	}
	if len(m.f[snsSignature]) == 0 {
		return m, fmt.Errorf("%w: sns: no Signature (raw message delivery is unsigned)", ErrNotSigned)
	}
	need := snsNeedNotification
	switch {
	case m.is(snsType, SNSNotification):
	case m.is(snsType, SNSSubscriptionConfirmation), m.is(snsType, SNSUnsubscribeConfirmation):
		need = snsNeedConfirmation
	default:
		return m, fmt.Errorf("%w: sns: Type %q", ErrMalformedHeader, clip(m.s(snsType)))
	}
	for _, n := range need {
		if raw[n] == nil {
			return m, fmt.Errorf("%w: sns: %s message without %s", ErrMalformedHeader, m.f[snsType], snsKeys[n])
		}
	}
	// The signed string is "<name>\n<value>\n" per member: with a line
	// break in a member other than Message, two messages could share it
	// (a Message ending "\nMessageId\n<id>" against a MessageId). AWS
	// sends none (ids are UUIDs, a Subject may have no line break), so
	// any control character there is refused, and the string has one
	// reading.
	for n := range m.f {
		if n != snsMessage && hasControl(m.f[n]) {
			return m, fmt.Errorf("%w: sns: %s has a control character", ErrMalformedHeader, snsKeys[n])
		}
	}
	return m, nil
}

var (
	snsNeedNotification = []int{snsMessageID, snsTopicArn, snsMessage, snsTimestamp, snsSignatureVersion, snsSigningCertURL}
	snsNeedConfirmation = append(append([]int(nil), snsNeedNotification...), snsToken, snsSubscribeURL)
)

// snsHost is the SNS endpoint of a topic's region, from its ARN
// (arn:<partition>:sns:<region>:<account>:<name>): sns.<region>.amazonaws.com,
// or amazonaws.com.cn in the China partition.
func snsHost(arn string) (string, error) {
	bad := func() error { return fmt.Errorf("%w: sns: TopicArn %q", ErrMalformedHeader, clip(arn)) }
	rest, ok := strings.CutPrefix(arn, "arn:")
	if !ok {
		return "", bad()
	}
	partition, rest, _ := strings.Cut(rest, ":")
	service, rest, _ := strings.Cut(rest, ":")
	region, rest, _ := strings.Cut(rest, ":")
	account, name, ok := strings.Cut(rest, ":")
	if !ok || service != "sns" || account == "" || name == "" || !isRegion(region) {
		return "", bad()
	}
	switch partition {
	case "aws", "aws-us-gov":
		return "sns." + region + ".amazonaws.com", nil
	case "aws-cn":
		return "sns." + region + ".amazonaws.com.cn", nil
	}
	return "", fmt.Errorf("%w: sns: TopicArn in partition %q", ErrUntrustedCertificate, clip(partition))
}

// isRegion reports whether s has the form of an AWS region name,
// <2 letters>-[gov-]<letters>-<digits> (us-east-1, us-gov-west-1,
// cn-north-1), so that sns.<region>.amazonaws.com can only name an SNS
// endpoint: S3 serves a bucket called "sns" at sns.s3.amazonaws.com.
func isRegion(s string) bool {
	if len(s) > 32 || len(s) < 6 || !isLower(s[:2]) || s[2] != '-' {
		return false
	}
	rest := strings.TrimPrefix(s[3:], "gov-")
	area, num, ok := strings.Cut(rest, "-")
	if !ok || !isLower(area) || num == "" {
		return false
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return false
		}
	}
	return true
}

// isLower reports whether s is one or more lower-case ASCII letters.
func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

// hasControl reports whether b holds an ASCII control character.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// snsCertURL checks m's SigningCertURL against the allow-list: https, its
// topic's regional SNS host, a path /SimpleNotificationService-<name>.pem.
func snsCertURL(m snsMsg) (string, error) {
	host, err := snsHost(m.s(snsTopicArn))
	if err != nil {
		return "", err
	}
	raw := m.s(snsSigningCertURL)
	u, err := providerURL(raw, []string{host}, false)
	if err != nil {
		return "", fmt.Errorf("sns: SigningCertURL: %w", err)
	}
	name, prefixed := strings.CutPrefix(u.Path, "/SimpleNotificationService-")
	name, suffixed := strings.CutSuffix(name, ".pem")
	if !prefixed || !suffixed || !isWord(name, 128) {
		return "", fmt.Errorf("%w: sns: SigningCertURL path %q", ErrUntrustedCertificate, clip(u.Path))
	}
	return raw, nil
}

// CertificateURL implements Certified.
func (s *SNS) CertificateURL(r Request) (string, error) {
	m, err := snsParse(r.Body)
	if err != nil {
		return "", err
	}
	return snsCertURL(m)
}

// snsSigned is the string SNS signs: the members of the message's type,
// each as "<name>\n<value>\n", in byte order of their names; a
// notification's Subject only when it has one.
func snsSigned(m snsMsg) []byte {
	var names []int
	if m.is(snsType, SNSNotification) {
		names = []int{snsMessage, snsMessageID, snsSubject, snsTimestamp, snsTopicArn, snsType}
	} else {
		names = []int{snsMessage, snsMessageID, snsSubscribeURL, snsTimestamp, snsToken, snsTopicArn, snsType}
	}
	var b []byte
	for _, n := range names {
		if n == snsSubject && !m.hasSubject {
			continue
		}
		b = append(append(append(append(b, snsKeys[n]...), '\n'), m.f[n]...), '\n')
	}
	return b
}

// snsDigest hashes the signed string for the message's SignatureVersion.
func snsDigest(m snsMsg) (crypto.Hash, []byte, error) {
	signed := snsSigned(m)
	switch {
	case m.is(snsSignatureVersion, "1"):
		d := sha1.Sum(signed)
		return crypto.SHA1, d[:], nil
	case m.is(snsSignatureVersion, "2"):
		d := sha256.Sum256(signed)
		return crypto.SHA256, d[:], nil
	}
	return 0, nil, fmt.Errorf("%w: sns: SignatureVersion %q", ErrMalformedHeader, clip(m.s(snsSignatureVersion)))
}

// Verify implements Scheme: r.Certificate must be the one CertificateURL
// named.
func (s *SNS) Verify(r Request, secrets [][]byte, now time.Time) error {
	v, err := s.precheck(r, secrets, now)
	if err != nil {
		return err
	}
	return verifyCertRSA(r.Certificate, now, v.hash, v.digest, v.sig)
}

// Precheck implements Certified.
func (s *SNS) Precheck(r Request, secrets [][]byte, now time.Time) error {
	_, err := s.precheck(r, secrets, now)
	return err
}

// snsChecked is what precheck leaves for the signature check.
type snsChecked struct {
	hash   crypto.Hash
	digest []byte
	sig    []byte
}

func (s *SNS) precheck(r Request, secrets [][]byte, now time.Time) (snsChecked, error) {
	var v snsChecked
	m, err := snsParse(r.Body)
	if err != nil {
		return v, err
	}
	if _, err := snsCertURL(m); err != nil {
		return v, err
	}
	sig, ok := decodeRSASignature(m.f[snsSignature])
	if !ok {
		return v, fmt.Errorf("%w: sns: Signature is not base64", ErrMalformedHeader)
	}
	h, digest, err := snsDigest(m)
	if err != nil {
		return v, err
	}
	ts, err := time.Parse(time.RFC3339Nano, m.s(snsTimestamp))
	if err != nil {
		return v, fmt.Errorf("%w: sns: Timestamp: %v", ErrMalformedHeader, err)
	}
	if now.Sub(ts) > s.tolerance {
		return v, ErrTooOld
	}
	if ts.Sub(now) > snsMaxSkew {
		return v, ErrTooNew
	}
	if err := matchCredential(m.f[snsTopicArn], secrets); err != nil {
		if errors.Is(err, ErrNoMatch) {
			return v, fmt.Errorf("%w: sns: topic %s is not one the endpoint accepts", ErrNoMatch, clip(m.s(snsTopicArn)))
		}
		return v, err
	}
	return snsChecked{hash: h, digest: digest, sig: sig}, nil
}

// Identify implements Scheme. ID is the MessageId, kept on every retry;
// Type is the message's Type ("Notification", "UnsubscribeConfirmation");
// Created is its Timestamp; the topic is kept as the attribute topic_arn.
func (s *SNS) Identify(r Request) (Identity, error) {
	m, err := snsParse(r.Body)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	id := m.s(snsMessageID)
	if !validID(id) {
		return Identity{}, fmt.Errorf("%w: sns: unusable MessageId", ErrInvalidPayload)
	}
	created, err := time.Parse(time.RFC3339Nano, m.s(snsTimestamp))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: sns: Timestamp: %v", ErrInvalidPayload, err)
	}
	return Identity{
		ID:         id,
		Type:       m.s(snsType),
		Created:    created,
		Attributes: map[string]string{"topic_arn": m.s(snsTopicArn)},
	}, nil
}

// Confirmation implements Confirmer: a SubscriptionConfirmation is
// confirmed by a GET of its SubscribeURL, which must be the topic's
// regional SNS endpoint asking to ConfirmSubscription of this topic with
// this token. An UnsubscribeConfirmation is an event like a notification
// (its SubscribeURL would subscribe the endpoint again, and is not
// visited).
func (s *SNS) Confirmation(r Request) (string, Reply, bool, error) {
	m, err := snsParse(r.Body)
	if err != nil || !m.is(snsType, SNSSubscriptionConfirmation) {
		return "", Reply{}, false, err
	}
	host, err := snsHost(m.s(snsTopicArn))
	if err != nil {
		return "", Reply{}, false, err
	}
	raw := m.s(snsSubscribeURL)
	u, err := providerURL(raw, []string{host}, true)
	if err != nil {
		return "", Reply{}, false, fmt.Errorf("sns: SubscribeURL: %w", err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if u.Path != "/" || err != nil || q.Get("Action") != "ConfirmSubscription" || !m.is(snsTopicArn, q.Get("TopicArn")) || !m.is(snsToken, q.Get("Token")) {
		return "", Reply{}, false, fmt.Errorf("%w: sns: SubscribeURL does not confirm this topic's subscription", ErrUntrustedCertificate)
	}
	return raw, Reply{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Body: []byte("subscription confirmed\n")}, true, nil
}

// SNS's delivery headers (none is signed).
const (
	SNSMessageTypeHeader     = "X-Amz-Sns-Message-Type"
	SNSMessageIDHeader       = "X-Amz-Sns-Message-Id"
	SNSTopicArnHeader        = "X-Amz-Sns-Topic-Arn"
	SNSSubscriptionArnHeader = "X-Amz-Sns-Subscription-Arn"
)

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *SNS) KeptHeaders() []string {
	return []string{SNSMessageTypeHeader, SNSMessageIDHeader, SNSTopicArnHeader, SNSSubscriptionArnHeader}
}

// snsWire is an SNS message as Sign writes it.
type snsWire struct {
	Type              string          `json:"Type"`
	MessageID         string          `json:"MessageId"`
	Token             string          `json:"Token,omitempty"`
	TopicArn          string          `json:"TopicArn"`
	Subject           *string         `json:"Subject,omitempty"`
	Message           string          `json:"Message"`
	SubscribeURL      string          `json:"SubscribeURL,omitempty"`
	UnsubscribeURL    string          `json:"UnsubscribeURL,omitempty"`
	Timestamp         string          `json:"Timestamp"`
	SignatureVersion  string          `json:"SignatureVersion"`
	Signature         string          `json:"Signature"`
	SigningCertURL    string          `json:"SigningCertURL"`
	MessageAttributes json.RawMessage `json:"MessageAttributes,omitempty"`
}

// Sign implements Signer as SNS signs: key is the PEM RSA private key
// (PKCS #1 or #8) of the certificate at the body's SigningCertURL. The
// body must be an SNS message but for its signature: Sign sets its
// Timestamp to now and its Signature (SignatureVersion 2 unless the body
// says 1), and writes the body again.
func (s *SNS) Sign(r *Request, key []byte, now time.Time) error {
	priv, err := rsaPrivate("sns", key)
	if err != nil {
		return err
	}
	var w snsWire
	if err := json.Unmarshal(r.Body, &w); err != nil {
		return fmt.Errorf("sns: body: %w", err)
	}
	w.Timestamp = now.UTC().Format("2006-01-02T15:04:05.000Z")
	if w.SignatureVersion != "1" {
		w.SignatureVersion = "2"
	}
	w.Signature = "unsigned"
	body, err := json.Marshal(w)
	if err != nil {
		return err
	}
	m, err := snsParse(body)
	if err != nil {
		return err
	}
	h, digest, err := snsDigest(m)
	if err != nil {
		return err
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, h, digest)
	if err != nil {
		return err
	}
	w.Signature = base64.StdEncoding.EncodeToString(sig)
	if r.Body, err = json.Marshal(w); err != nil {
		return err
	}
	setHeader(r, SNSMessageTypeHeader, w.Type)
	setHeader(r, SNSMessageIDHeader, w.MessageID)
	setHeader(r, SNSTopicArnHeader, w.TopicArn)
	return nil
}
