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
	"strings"
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

type adyenItem struct {
	PspReference        string `json:"pspReference"`
	OriginalReference   string `json:"originalReference"`
	MerchantAccountCode string `json:"merchantAccountCode"`
	MerchantReference   string `json:"merchantReference"`
	Amount              struct {
		Value    json.RawMessage `json:"value"`
		Currency string          `json:"currency"`
	} `json:"amount"`
	EventCode      string                     `json:"eventCode"`
	EventDate      string                     `json:"eventDate"`
	Success        string                     `json:"success"`
	AdditionalData map[string]json.RawMessage `json:"additionalData"`
}

type adyenParsed struct {
	raw  json.RawMessage
	item adyenItem
	// signed is the string the signature covers.
	signed string
}

var errAdyenShape = errors.New("not an Adyen notification")

// adyenParse reads a delivery's items.
func adyenParse(body []byte) (live string, items []adyenParsed, err error) {
	var doc struct {
		Live              string `json:"live"`
		NotificationItems []struct {
			NotificationRequestItem json.RawMessage `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	if !json.Valid(body) {
		return "", nil, errAdyenShape
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || len(doc.NotificationItems) == 0 {
		return "", nil, errAdyenShape
	}
	for _, n := range doc.NotificationItems {
		raw := bytes.TrimSpace(n.NotificationRequestItem)
		if len(raw) == 0 || raw[0] != '{' {
			return "", nil, errAdyenShape
		}
		var it adyenItem
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&it); err != nil {
			return "", nil, errAdyenShape
		}
		// A JSON integer literal, as Adyen's libraries read it (an int64);
		// a string or a fraction is not one.
		v, err := strconv.ParseInt(string(it.Amount.Value), 10, 64)
		if err != nil {
			return "", nil, errAdyenShape
		}
		signed := strings.Join([]string{it.PspReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
			strconv.FormatInt(v, 10), it.Amount.Currency, it.EventCode, it.Success}, ":")
		items = append(items, adyenParsed{raw: raw, item: it, signed: signed})
	}
	return doc.Live, items, nil
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
		rawSig, ok := p.item.AdditionalData["hmacSignature"]
		if !ok {
			return fmt.Errorf("%w: adyen: item %d has no hmacSignature", ErrNotSigned, i)
		}
		var enc string
		if json.Unmarshal(rawSig, &enc) != nil {
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
			matched = matched || hmac.Equal(macOf(sha256.New, k, []byte(p.signed)), sig)
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
		it := p.item
		id := it.PspReference + ":" + it.EventCode + ":" + it.Success
		if it.PspReference == "" || it.EventCode == "" || (it.Success != "true" && it.Success != "false") || !validID(id) {
			return nil, fmt.Errorf("%w: adyen: an item without pspReference, eventCode or a success of true or false", ErrInvalidPayload)
		}
		var created time.Time
		if it.EventDate != "" {
			if created, err = time.Parse(time.RFC3339, it.EventDate); err != nil {
				return nil, fmt.Errorf("%w: adyen: eventDate: %v", ErrInvalidPayload, err)
			}
		}
		attrs := map[string]string{}
		if it.MerchantAccountCode != "" && len(it.MerchantAccountCode) <= MaxIdentity {
			attrs["merchant_account"] = it.MerchantAccountCode
		}
		if live == "true" || live == "false" {
			attrs["live"] = live
		}
		out = append(out, Identity{ID: id, Type: it.EventCode, Created: created.UTC(), Payload: p.raw, Attributes: attrs})
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
		add["hmacSignature"] = base64.StdEncoding.EncodeToString(macOf(sha256.New, keys[0], []byte(p.signed)))
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
