package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Adyen verifies Adyen's standard notifications (payments): each item of
// notificationItems carries additionalData.hmacSignature, the base64
// HMAC-SHA256, keyed with the hex HMAC key of the webhook, of
// "pspReference:originalReference:merchantAccountCode:merchantReference:
// amount.value:amount.currency:eventCode:success" — joined as Adyen's own
// libraries join it (hmacvalidator.GetDataToSign), without escaping. Every
// item of a delivery must verify, so an unsigned item cannot ride along.
//
// Only those eight fields are signed: the rest of an item (eventDate,
// reason, the rest of additionalData) is stored as sent, and handlers
// should not base an effect on it alone. No timestamp is signed. Adyen
// counts a delivery as received only when answered "[accepted]" (Ack).
type Adyen struct{}

var (
	_ Scheme       = (*Adyen)(nil)
	_ Signer       = (*Adyen)(nil)
	_ Splitter     = (*Adyen)(nil)
	_ Acknowledger = (*Adyen)(nil)
)

// NewAdyen returns the Adyen scheme. It refuses a tolerance, a URL and
// HMAC options.
func NewAdyen(o Options) (*Adyen, error) {
	if err := checkOptions("adyen", o, 0); err != nil {
		return nil, err
	}
	return &Adyen{}, nil
}

// The members of a NotificationRequestItem that Adyen signs or that name
// the event, in adyenParsed.f's order, and those of its amount.
var (
	adyenItemKeys   = [...]string{"pspReference", "originalReference", "merchantAccountCode", "merchantReference", "amount", "eventCode", "eventDate", "success", "additionalData"}
	adyenAmountKeys = []string{"value", "currency"}
	adyenTopKeys    = []string{"live", "notificationItems"}
	adyenWrapKeys   = []string{"NotificationRequestItem"}
	adyenAddKeys    = []string{"hmacSignature"}
)

const (
	adyenPsp = iota
	adyenOriginal
	adyenMerchant
	adyenMerchantRef
	adyenAmount
	adyenEventCode
	adyenEventDate
	adyenSuccess
	adyenAdditional
)

type adyenParsed struct {
	raw []byte // the item, as sent
	// f are the item's string members (adyenItemKeys; amount and
	// additionalData left empty), decoded; a member absent or null is "".
	f [len(adyenItemKeys)]string
	// sig is additionalData.hmacSignature's raw JSON value; nil when absent.
	sig []byte
	// signed is the string the signature covers.
	signed []byte
}

var errAdyenShape = errors.New("not an Adyen notification")

// adyenString reads a member as encoding/json reads a string field: absent
// or null is "", a string is its value, anything else is not the shape.
func adyenString(raw []byte) (string, bool) {
	if !jsonPresent(raw) {
		return "", true
	}
	return jsonString(raw)
}

// adyenParse reads a delivery's items with the package's scanner. Every
// object it reads must name each member it looks for once and in its own
// case: encoding/json, which a handler reading the stored item would use,
// takes "PSPREFERENCE" for "pspReference", so a body with both is refused
// rather than signed as one and read as the other.
func adyenParse(body []byte) (live string, items []adyenParsed, err error) {
	var top [2][]byte
	if jsonFieldsStrict(body, adyenTopKeys, top[:]) != nil {
		return "", nil, errAdyenShape
	}
	live, ok := adyenString(top[0])
	if !ok {
		return "", nil, errAdyenShape
	}
	if len(top[1]) == 0 || top[1][0] != '[' {
		return "", nil, errAdyenShape
	}
	var wrap [1][]byte
	err = jsonObjects(top[1], nil, nil, func(elem []byte) error {
		if err := jsonFieldsStrict(elem, adyenWrapKeys, wrap[:]); err != nil || len(wrap[0]) == 0 || wrap[0][0] != '{' {
			return errAdyenShape
		}
		p, err := adyenItem(wrap[0])
		if err != nil {
			return err
		}
		items = append(items, p)
		return nil
	})
	if err != nil || len(items) == 0 {
		return "", nil, errAdyenShape
	}
	return live, items, nil
}

// adyenItem reads one NotificationRequestItem.
func adyenItem(raw []byte) (adyenParsed, error) {
	p := adyenParsed{raw: raw}
	var f [len(adyenItemKeys)][]byte
	if jsonFieldsStrict(raw, adyenItemKeys[:], f[:]) != nil {
		return p, errAdyenShape
	}
	for n := range f {
		if n == adyenAmount || n == adyenAdditional {
			continue
		}
		v, ok := adyenString(f[n])
		if !ok {
			return p, errAdyenShape
		}
		p.f[n] = v
	}
	// amount: an object whose value is a JSON integer literal, as Adyen's
	// libraries read it (an int64); a string or a fraction is not one.
	var amount [2][]byte
	if len(f[adyenAmount]) == 0 || f[adyenAmount][0] != '{' || jsonFieldsStrict(f[adyenAmount], adyenAmountKeys, amount[:]) != nil {
		return p, errAdyenShape
	}
	value, err := strconv.ParseInt(string(amount[0]), 10, 64)
	if err != nil {
		return p, errAdyenShape
	}
	currency, ok := adyenString(amount[1])
	if !ok {
		return p, errAdyenShape
	}
	if add := f[adyenAdditional]; jsonPresent(add) {
		var sig [1][]byte
		if add[0] != '{' || jsonFields(add, adyenAddKeys, sig[:]) != nil {
			return p, errAdyenShape
		}
		p.sig = sig[0]
	}
	b := make([]byte, 0, 128)
	for i, part := range []string{p.f[adyenPsp], p.f[adyenOriginal], p.f[adyenMerchant], p.f[adyenMerchantRef]} {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, part...)
	}
	b = strconv.AppendInt(append(b, ':'), value, 10)
	for _, part := range []string{currency, p.f[adyenEventCode], p.f[adyenSuccess]} {
		b = append(append(b, ':'), part...)
	}
	p.signed = b
	return p, nil
}

// adyenKeys decodes the configured hex HMAC keys; a secret that is not
// hex is no key.
func adyenKeys(secrets [][]byte) [][]byte {
	var keys [][]byte
	for _, s := range secrets {
		k, err := hex.DecodeString(string(s))
		if err == nil && len(k) > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// Verify implements Scheme: every item's hmacSignature must be the MAC of
// its signed fields under one of secrets (hex keys). now is unused.
func (a *Adyen) Verify(r Request, secrets [][]byte, now time.Time) error {
	_, items, err := adyenParse(r.Body)
	if err != nil {
		return fmt.Errorf("%w: adyen: %v", ErrNotSigned, err)
	}
	keys := adyenKeys(secrets)
	for i, p := range items {
		if p.sig == nil {
			return fmt.Errorf("%w: adyen: item %d has no hmacSignature", ErrNotSigned, i)
		}
		enc, ok := jsonString(p.sig)
		if !ok {
			return fmt.Errorf("%w: adyen: item %d's hmacSignature is not a string", ErrMalformedHeader, i)
		}
		sig, ok := decodeBase64(enc, sha256.Size)
		if !ok {
			return fmt.Errorf("%w: adyen: item %d's hmacSignature is not base64 of 32 bytes", ErrMalformedHeader, i)
		}
		if len(keys) == 0 {
			return ErrNoSecret
		}
		matched := false
		for _, k := range keys {
			matched = matched || hmac.Equal(macOf(sha256.New, k, p.signed), sig)
		}
		if !matched {
			return fmt.Errorf("%w: adyen: item %d", ErrNoMatch, i)
		}
	}
	return nil
}

// Split implements Splitter: one identity per item. ID is
// "<pspReference>:<eventCode>:<success>", which Adyen documents as what
// repeats on a duplicate notification (a failed event followed by a
// successful one is two events); Type is eventCode; Created is eventDate;
// merchantAccountCode and live are kept. All three parts of the id are
// signed.
func (a *Adyen) Split(r Request) ([]Identity, error) {
	live, items, err := adyenParse(r.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: adyen: %v", ErrInvalidPayload, err)
	}
	out := make([]Identity, 0, len(items))
	for _, p := range items {
		psp, code, success, merchant := p.f[adyenPsp], p.f[adyenEventCode], p.f[adyenSuccess], p.f[adyenMerchant]
		id := psp + ":" + code + ":" + success
		if psp == "" || code == "" || (success != "true" && success != "false") || !validID(id) {
			return nil, fmt.Errorf("%w: adyen: an item without pspReference, eventCode or a success of true or false", ErrInvalidPayload)
		}
		var created time.Time
		if date := p.f[adyenEventDate]; date != "" {
			if created, err = time.Parse(time.RFC3339, date); err != nil {
				return nil, fmt.Errorf("%w: adyen: eventDate: %v", ErrInvalidPayload, err)
			}
		}
		attrs := map[string]string{}
		if merchant != "" && len(merchant) <= MaxIdentity {
			attrs["merchant_account"] = merchant
		}
		if live == "true" || live == "false" {
			attrs["live"] = live
		}
		out = append(out, Identity{ID: id, Type: code, Created: created.UTC(), Payload: p.raw, Attributes: attrs})
	}
	return out, nil
}

// Identify implements Scheme for a delivery of one item (ingest uses
// Split).
func (a *Adyen) Identify(r Request) (Identity, error) {
	ids, err := a.Split(r)
	return oneEvent("adyen", ids, err)
}

// Ack implements Acknowledger: Adyen's "[accepted]".
func (a *Adyen) Ack() Reply {
	return Reply{ContentType: "text/plain", Body: []byte("[accepted]")}
}

// Sign implements Signer: the signature is inside the body, so Sign
// rewrites r.Body, setting each item's additionalData.hmacSignature under
// key (the hex HMAC key).
func (a *Adyen) Sign(r *Request, key []byte, now time.Time) error {
	keys := adyenKeys([][]byte{key})
	if len(keys) == 0 {
		return fmt.Errorf("%w: adyen: the key is not hex", ErrNoSecret)
	}
	_, items, err := adyenParse(r.Body)
	if err != nil {
		return fmt.Errorf("adyen: %w", err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	list, _ := doc["notificationItems"].([]any)
	for i, p := range items {
		wrapper, _ := list[i].(map[string]any)
		item, _ := wrapper["NotificationRequestItem"].(map[string]any)
		add, _ := item["additionalData"].(map[string]any)
		if add == nil {
			add = map[string]any{}
		}
		add["hmacSignature"] = base64.StdEncoding.EncodeToString(macOf(sha256.New, keys[0], p.signed))
		item["additionalData"] = add
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	r.Body = body
	if r.Header == nil {
		r.Header = http.Header{}
	}
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (a *Adyen) KeptHeaders() []string { return []string{"User-Agent"} }
