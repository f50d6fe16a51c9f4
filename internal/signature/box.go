package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

// Box's webhook (V2) headers.
const (
	BoxPrimaryHeader   = "Box-Signature-Primary"
	BoxSecondaryHeader = "Box-Signature-Secondary"
	BoxTimestampHeader = "Box-Delivery-Timestamp"
	BoxAlgorithmHeader = "Box-Signature-Algorithm"
	BoxVersionHeader   = "Box-Signature-Version"
	BoxDeliveryHeader  = "Box-Delivery-Id"
)

// BoxTolerance is the age Box's SDKs accept for the delivery timestamp.
const BoxTolerance = 10 * time.Minute

// Box verifies Box's webhooks: Box-Signature-Primary and
// Box-Signature-Secondary are each base64(HMAC-SHA256) of the raw body
// followed by Box-Delivery-Timestamp, under the application's primary and
// secondary signature keys (two, so that each can be rotated in turn).
// Configure both keys as the source's secrets: a request verifies when
// either header matches either key. Box-Signature-Algorithm must be
// HmacSHA256 and Box-Signature-Version 1, as Box's SDKs require. The
// timestamp (RFC 3339) must be within the tolerance, BoxTolerance by
// default, both ways; it is checked before the MACs.
type Box struct {
	tolerance time.Duration
}

var (
	_ Scheme = (*Box)(nil)
	_ Signer = (*Box)(nil)
)

// NewBox returns the Box scheme. Setting o.URL or o.HMAC is an error.
func NewBox(o Options) (*Box, error) {
	if err := checkOptions("box", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Box{tolerance: toleranceOr(o, BoxTolerance)}, nil
}

// Verify implements Scheme.
func (b *Box) Verify(r Request, secrets [][]byte, now time.Time) error {
	var sigs [][]byte
	for _, name := range []string{BoxPrimaryHeader, BoxSecondaryHeader} {
		v, err := optionalHeader(r.Header, name)
		if err != nil {
			return err
		}
		if v == "" {
			continue
		}
		sig, ok := decodeBase64(v, sha256.Size)
		if !ok {
			return fmt.Errorf("%w: %s is not base64 of 32 bytes", ErrMalformedHeader, name)
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return ErrNotSigned
	}
	if alg := hget(r.Header, BoxAlgorithmHeader); alg != "HmacSHA256" {
		return fmt.Errorf("%w: %s %q, want HmacSHA256", ErrMalformedHeader, BoxAlgorithmHeader, alg)
	}
	if v := hget(r.Header, BoxVersionHeader); v != "1" {
		return fmt.Errorf("%w: %s %q, want 1", ErrMalformedHeader, BoxVersionHeader, v)
	}
	tsRaw, err := twitchSignedHeader(r.Header, BoxTimestampHeader)
	if err != nil {
		return err
	}
	ts, err := time.Parse(time.RFC3339, tsRaw)
	if err != nil || len(tsRaw) > 64 {
		return fmt.Errorf("%w: %s is not RFC 3339", ErrMalformedHeader, BoxTimestampHeader)
	}
	if err := checkTimestamp(ts, now, b.tolerance); err != nil {
		return err
	}
	return matchAny(secrets, sigs, func(secret []byte) []byte {
		return macOf(sha256.New, secret, r.Body, []byte(tsRaw))
	})
}

var boxFields = []string{"id", "trigger", "created_at", "type"}

// Identify implements Scheme. ID is the body's id, the webhook event's,
// when it has one (signed); else Box-Delivery-Id (outside the signature:
// the providers table's footnote). Type is trigger ("FILE.UPLOADED");
// Created is created_at. The body's type, when present, must be
// "webhook_event".
func (b *Box) Identify(r Request) (Identity, error) {
	var f [4][]byte
	if err := jsonFields(r.Body, boxFields, f[:]); err != nil {
		return Identity{}, fmt.Errorf("%w: box: body is not a JSON object", ErrInvalidPayload)
	}
	if jsonPresent(f[3]) && !jsonStringIs(f[3], "webhook_event") {
		return Identity{}, fmt.Errorf("%w: box: type is not webhook_event", ErrInvalidPayload)
	}
	typ, err := identityString("box", "trigger", f[1])
	if err != nil {
		return Identity{}, err
	}
	created, err := jsonTime("box", "created_at", f[2])
	if err != nil {
		return Identity{}, err
	}
	out := Identity{Type: typ, Created: created}
	if jsonPresent(f[0]) {
		if out.ID, err = identityString("box", "id", f[0]); err != nil {
			return Identity{}, err
		}
		return out, nil
	}
	if out.ID, err = githubIdentityHeader(r.Header, BoxDeliveryHeader); err != nil {
		return Identity{}, err
	}
	return out, nil
}

// Sign implements Signer: it sets the timestamp, algorithm and version
// headers and Box-Signature-Primary for r.Body under key.
func (b *Box) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	ts := now.UTC().Format(time.RFC3339)
	setHeader(r, BoxTimestampHeader, ts)
	setHeader(r, BoxAlgorithmHeader, "HmacSHA256")
	setHeader(r, BoxVersionHeader, "1")
	setHeader(r, BoxPrimaryHeader, base64.StdEncoding.EncodeToString(macOf(sha256.New, key, r.Body, []byte(ts))))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (b *Box) KeptHeaders() []string {
	return []string{BoxPrimaryHeader, BoxSecondaryHeader, BoxTimestampHeader, BoxDeliveryHeader}
}
