package signature

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// XeroSignatureHeader carries the base64 HMAC-SHA256 of the body, keyed
// with the webhook key.
const XeroSignatureHeader = "X-Xero-Signature"

// Xero verifies Xero's webhooks: `x-xero-signature: <base64>`, an
// HMAC-SHA256 of the raw body keyed with the webhook key. No timestamp is
// signed. A delivery is {"events":[…],"firstEventSequence":…,
// "lastEventSequence":…,"entropy":…}; each element of events becomes an
// event (Split).
//
// Xero checks an endpoint with an "intent to receive": deliveries with an
// empty events array, some correctly signed and some not, that must be
// answered 200 and 401 respectively. A signed one with no events is the
// Handshake, answered 200 with an empty body and stored as nothing; an
// unsigned one fails Verify first, with the 401.
type Xero struct{}

var (
	_ Scheme     = (*Xero)(nil)
	_ Signer     = (*Xero)(nil)
	_ Splitter   = (*Xero)(nil)
	_ Handshaker = (*Xero)(nil)
)

// NewXero returns the Xero scheme. It refuses a tolerance, a URL and HMAC
// options.
func NewXero(o Options) (*Xero, error) {
	if err := checkOptions("xero", o, 0); err != nil {
		return nil, err
	}
	return &Xero{}, nil
}

// Verify implements Scheme. now is unused.
func (x *Xero) Verify(r Request, secrets [][]byte, now time.Time) error {
	return base64BodyVerify(r.Header, XeroSignatureHeader, "", sha256.New, sha256.Size, r.Body, secrets)
}

var (
	xeroFields      = []string{"events"}
	xeroEventFields = []string{"resourceId", "eventDateUtc", "eventType", "eventCategory", "tenantId"}
)

// xeroEvents returns the raw events array of a delivery.
func xeroEvents(body []byte) ([]byte, error) {
	var f [1][]byte
	if err := jsonFields(body, xeroFields, f[:]); err != nil {
		return nil, fmt.Errorf("%w: xero: body is not a JSON object", ErrInvalidPayload)
	}
	if len(f[0]) == 0 || f[0][0] != '[' {
		return nil, fmt.Errorf("%w: xero: no events array", ErrInvalidPayload)
	}
	return f[0], nil
}

// Handshake implements Handshaker: a verified delivery whose events array
// is empty is the intent to receive, answered 200 with no body.
func (x *Xero) Handshake(r Request, secrets [][]byte) (Reply, bool, error) {
	events, err := xeroEvents(r.Body)
	if err != nil {
		return Reply{}, false, nil // Split refuses it, with the reason
	}
	if len(bytes.TrimSpace(events[1:len(events)-1])) != 0 {
		return Reply{}, false, nil
	}
	return Reply{Status: http.StatusOK}, true, nil
}

// Split implements Splitter: one identity per element of events. Xero
// gives an event no id; its ID is the signed composite
// "<tenantId>/<eventCategory>/<resourceId>/<eventType>/<eventDateUtc>",
// the same on every retry of the delivery. Type is
// "<eventCategory>.<eventType>" ("INVOICE.UPDATE", as Xero writes them);
// Created is eventDateUtc (UTC, written without a zone); the tenant is kept
// as Attributes["tenant_id"]. Each Payload is the element.
func (x *Xero) Split(r Request) ([]Identity, error) {
	events, err := xeroEvents(r.Body)
	if err != nil {
		return nil, err
	}
	var f [5][]byte
	return splitEvents("xero", events, xeroEventFields, f[:], 4, func(elem []byte) (Identity, error) {
		var s [5]string
		for i, name := range xeroEventFields {
			v, ok := jsonString(f[i])
			if !ok || v == "" || strings.ContainsRune(v, '/') {
				return Identity{}, fmt.Errorf("%w: xero: missing or unusable %s", ErrInvalidPayload, name)
			}
			s[i] = v
		}
		resource, date, typ, category, tenant := s[0], s[1], s[2], s[3], s[4]
		created, err := time.Parse("2006-01-02T15:04:05.999999999", date)
		if err != nil {
			return Identity{}, fmt.Errorf("%w: xero: eventDateUtc: %v", ErrInvalidPayload, err)
		}
		id := tenant + "/" + category + "/" + resource + "/" + typ + "/" + date
		if len(id) > MaxIdentity {
			return Identity{}, fmt.Errorf("%w: xero: event key over %d bytes", ErrInvalidPayload, MaxIdentity)
		}
		return Identity{ID: id, Type: category + "." + typ, Created: created.UTC(), Payload: elem,
			Attributes: map[string]string{"tenant_id": tenant}}, nil
	})
}

// Identify implements Scheme for a delivery of one event (ingest uses
// Split).
func (x *Xero) Identify(r Request) (Identity, error) {
	ids, err := x.Split(r)
	return oneEvent("xero", ids, err)
}

// Sign implements Signer: it sets x-xero-signature for r.Body.
func (x *Xero) Sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(XeroSignatureHeader, base64.StdEncoding.EncodeToString(macOf(sha256.New, key, r.Body)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (x *Xero) KeptHeaders() []string {
	return []string{XeroSignatureHeader}
}
