package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// adyenSDKKey and adyenSDKItem are the test vector of Adyen's "Verify HMAC
// signatures" documentation, which Adyen's libraries test against: the
// item's signing string is
// "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true".
const (
	adyenSDKKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	adyenSDKSig = "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="
)

var (
	adyenKey     = []byte("0F1E2D3C4B5A69788796A5B4C3D2E1F00112233445566778899AABBCCDDEEFF0")
	adyenKeyOld  = []byte("00112233445566778899AABBCCDDEEFF0F1E2D3C4B5A69788796A5B4C3D2E1F0")
	adyenSecrets = [][]byte{adyenKey}
)

// adyenItem is the documentation's item, with the signature given.
func adyenItemJSON(sig string, changes ...string) string {
	item := `{"additionalData":{"hmacSignature":"` + sig + `"},"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","eventDate":"2014-08-06T13:39:05+02:00","merchantAccountCode":"TestMerchant","merchantReference":"TestPayment-1407325143704","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","pspReference":"7914073381342284","reason":"1234:7777:12/2012","success":"true"}`
	for i := 0; i+1 < len(changes); i += 2 {
		item = strings.Replace(item, changes[i], changes[i+1], 1)
	}
	return item
}

func adyenBody(items ...string) []byte {
	return []byte(`{"live":"false","notificationItems":[` + joinItems(items) + `]}`)
}

func joinItems(items []string) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, `{"NotificationRequestItem":`+it+`}`)
	}
	return strings.Join(parts, ",")
}

func adyenRequest(body []byte) Request { return jsonPost(body, nil) }

// adyenSign is an item's signature under the hex key, computed apart
// from the code under test.
func adyenSign(hexKey []byte, signed string) string {
	k, _ := hex.DecodeString(string(hexKey))
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(signed))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

const adyenSigned = "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"

func TestAdyenVector(t *testing.T) {
	a := mustNew(t, NewAdyen, Options{})
	body := adyenBody(adyenItemJSON(adyenSDKSig))
	checkErr(t, a.Verify(adyenRequest(body), [][]byte{[]byte(adyenSDKKey)}, testNow), nil)
	if got := adyenSign([]byte(adyenSDKKey), adyenSigned); got != adyenSDKSig {
		t.Fatalf("the test's own signature: got %q, want Adyen's %q", got, adyenSDKSig)
	}
	r := adyenRequest(adyenBody(adyenItemJSON("x")))
	if err := a.Sign(&r, []byte(adyenSDKKey), testNow); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(r.Body, []byte(adyenSDKSig)) {
		t.Errorf("Sign: %s does not carry Adyen's signature", r.Body)
	}
	checkErr(t, a.Verify(r, [][]byte{[]byte(adyenSDKKey)}, testNow), nil)
	if a.Ack().ContentType != "text/plain" || string(a.Ack().Body) != "[accepted]" {
		t.Errorf("Ack: %+v", a.Ack())
	}
}

// TestAdyenEveryItem: each item must carry its own valid signature; a
// signed field changed, or an item added unsigned, is refused; a field
// outside the eight is not signed (said in the docs).
func TestAdyenEveryItem(t *testing.T) {
	a := mustNew(t, NewAdyen, Options{})
	k := [][]byte{[]byte(adyenSDKKey)}
	good := adyenItemJSON(adyenSDKSig)
	second := adyenItemJSON(adyenSign([]byte(adyenSDKKey), "7914073381342285::TestMerchant:TestPayment-1407325143704:1130:EUR:CAPTURE:true"), `"pspReference":"7914073381342284"`, `"pspReference":"7914073381342285"`, "AUTHORISATION", "CAPTURE")
	checkErr(t, a.Verify(adyenRequest(adyenBody(good, second)), k, testNow), nil)
	ids, err := a.Split(adyenRequest(adyenBody(good, second)))
	if err != nil || len(ids) != 2 || ids[0].ID != "7914073381342284:AUTHORISATION:true" || ids[1].ID != "7914073381342285:CAPTURE:true" {
		t.Fatalf("Split: %+v, %v", ids, err)
	}
	if ids[0].Type != "AUTHORISATION" || !ids[0].Created.Equal(time.Date(2014, 8, 6, 11, 39, 5, 0, time.UTC)) || ids[0].Attributes["merchant_account"] != "TestMerchant" || ids[0].Attributes["live"] != "false" {
		t.Errorf("Split: %+v", ids[0])
	}
	unsigned := adyenItemJSON("", `"additionalData":{"hmacSignature":""},`, "")
	for name, body := range map[string][]byte{
		"amount changed":                  adyenBody(adyenItemJSON(adyenSDKSig, `"value":1130`, `"value":1`)),
		"success changed":                 adyenBody(adyenItemJSON(adyenSDKSig, `"success":"true"`, `"success":"false"`)),
		"an unsigned item added":          adyenBody(good, unsigned),
		"a second item's signature wrong": adyenBody(good, adyenItemJSON(adyenSDKSig, `"pspReference":"7914073381342284"`, `"pspReference":"1"`)),
	} {
		if err := a.Verify(adyenRequest(body), k, testNow); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	checkErr(t, a.Verify(adyenRequest(adyenBody(adyenItemJSON(adyenSDKSig, `"reason":"1234:7777:12/2012"`, `"reason":"changed"`))), k, testNow), nil)
}

func TestAdyenRotation(t *testing.T) {
	a := mustNew(t, NewAdyen, Options{})
	body := func(key []byte) []byte { return adyenBody(adyenItemJSON(adyenSign(key, adyenSigned))) }
	runVerifyCases(t, a, testNow, 0, []verifyCase{
		{"two keys, signed by current", adyenRequest(body(adyenKey)), [][]byte{adyenKey, adyenKeyOld}, nil},
		{"two keys, signed by previous", adyenRequest(body(adyenKeyOld)), [][]byte{adyenKey, adyenKeyOld}, nil},
		{"retired key", adyenRequest(body(adyenKeyOld)), adyenSecrets, ErrNoMatch},
		{"no keys", adyenRequest(body(adyenKey)), nil, ErrNoSecret},
		{"a key that is not hex", adyenRequest(body(adyenKey)), [][]byte{[]byte("not hex")}, ErrNoSecret},
		{"lowercase hex key", adyenRequest(body(adyenKey)), [][]byte{[]byte(strings.ToLower(string(adyenKey)))}, nil},
	})
	runOptionsCases(t, NewAdyen, []optionsCase{
		{"zero", Options{}, false},
		{"tolerance", Options{Tolerance: time.Minute}, true},
		{"URL", Options{URL: "https://hooks.example.com/x"}, true},
	})
}

func adyenMalformedRuns(tb testing.TB) []malformedRun {
	sig := adyenSign(adyenKey, adyenSigned)
	raw, _ := base64.StdEncoding.DecodeString(sig)
	var cases []verifyCase
	add := func(name string, body []byte, want error) {
		cases = append(cases, verifyCase{name, adyenRequest(body), adyenSecrets, want})
	}
	add("valid", adyenBody(adyenItemJSON(sig)), nil)
	// Every byte of the signature flipped in turn.
	for i := range raw {
		flipped := bytes.Clone(raw)
		flipped[i] ^= 1
		add(fmt.Sprintf("signature byte %d flipped", i), adyenBody(adyenItemJSON(base64.StdEncoding.EncodeToString(flipped))), ErrNoMatch)
	}
	// Every signed field changed in turn.
	for _, c := range [][2]string{
		{`"pspReference":"7914073381342284"`, `"pspReference":"7914073381342285"`},
		{`"merchantAccountCode":"TestMerchant"`, `"merchantAccountCode":"TestMerchanT"`},
		{`"merchantReference":"TestPayment-1407325143704"`, `"merchantReference":"TestPayment-1407325143705"`},
		{`"value":1130`, `"value":1131`},
		{`"currency":"EUR"`, `"currency":"USD"`},
		{`"eventCode":"AUTHORISATION"`, `"eventCode":"CAPTURE"`},
		{`"success":"true"`, `"success":"false"`},
		{`"paymentMethod":"visa"`, `"paymentMethod":"visa","originalReference":"x"`},
	} {
		add("signed field changed: "+c[1], adyenBody(adyenItemJSON(sig, c[0], c[1])), ErrNoMatch)
	}
	for name, c := range map[string]struct {
		body []byte
		want error
	}{
		"empty body":                   {nil, ErrNotSigned},
		"not JSON":                     {[]byte("live=false"), ErrNotSigned},
		"no items":                     {[]byte(`{"live":"false","notificationItems":[]}`), ErrNotSigned},
		"items null":                   {[]byte(`{"live":"false","notificationItems":null}`), ErrNotSigned},
		"an item not an object":        {[]byte(`{"notificationItems":[{"NotificationRequestItem":"x"}]}`), ErrNotSigned},
		"no NotificationRequestItem":   {[]byte(`{"notificationItems":[{"Item":{}}]}`), ErrNotSigned},
		"no additionalData":            {adyenBody(adyenItemJSON(sig, `"additionalData":{"hmacSignature":"`+sig+`"},`, "")), ErrNotSigned},
		"no hmacSignature":             {adyenBody(adyenItemJSON(sig, `"hmacSignature":"`+sig+`"`, `"other":"x"`)), ErrNotSigned},
		"hmacSignature a number":       {adyenBody(adyenItemJSON(sig, `"`+sig+`"`, `1`)), ErrMalformedHeader},
		"hmacSignature null":           {adyenBody(adyenItemJSON(sig, `"`+sig+`"`, `null`)), ErrMalformedHeader},
		"hmacSignature hex":            {adyenBody(adyenItemJSON(hex.EncodeToString(raw))), ErrMalformedHeader},
		"hmacSignature unpadded":       {adyenBody(adyenItemJSON(strings.TrimRight(sig, "="))), ErrMalformedHeader},
		"hmacSignature URL-safe":       {adyenBody(adyenItemJSON(base64.URLEncoding.EncodeToString(raw) + "x")), ErrMalformedHeader},
		"hmacSignature one byte short": {adyenBody(adyenItemJSON(base64.StdEncoding.EncodeToString(raw[:31]))), ErrMalformedHeader},
		"hmacSignature empty":          {adyenBody(adyenItemJSON("")), ErrMalformedHeader},
		"amount a string":              {adyenBody(adyenItemJSON(sig, `"value":1130`, `"value":"1130"`)), ErrNotSigned},
		"amount fractional":            {adyenBody(adyenItemJSON(sig, `"value":1130`, `"value":1130.0`)), ErrNotSigned},
		"amount with an exponent":      {adyenBody(adyenItemJSON(sig, `"value":1130`, `"value":1.13e3`)), ErrNotSigned},
		"pspReference a number":        {adyenBody(adyenItemJSON(sig, `"pspReference":"7914073381342284"`, `"pspReference":7914073381342284`)), ErrNotSigned},
		"truncated":                    {adyenBody(adyenItemJSON(sig))[:100], ErrNotSigned},
		"signed under the empty key":   {adyenBody(adyenItemJSON(base64.StdEncoding.EncodeToString(macOf(sha256.New, nil, []byte(adyenSigned))))), ErrNoMatch},
		"signed with escaped colons":   {adyenBody(adyenItemJSON(adyenSign(adyenKey, strings.ReplaceAll(adyenSigned, ":", `\:`)))), ErrNoMatch},
		"signed in another order":      {adyenBody(adyenItemJSON(adyenSign(adyenKey, "TestMerchant:7914073381342284::TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"))), ErrNoMatch},
		"a good and an unsigned item":  {adyenBody(adyenItemJSON(sig), adyenItemJSON(sig, `"additionalData":{"hmacSignature":"`+sig+`"},`, "")), ErrNotSigned},
		// A body encoding/json (a handler's reading of the stored item)
		// would read otherwise than the signature covers.
		"PSPREFERENCE beside pspReference":   {adyenBody(adyenItemJSON(sig, `"reason"`, `"PSPREFERENCE":"1","reason"`)), ErrNotSigned},
		"pspreference after pspReference":    {adyenBody(adyenItemJSON(sig, `"success":"true"`, `"success":"true","pspreference":"1"`)), ErrNotSigned},
		"pspReference twice":                 {adyenBody(adyenItemJSON(sig, `"reason"`, `"pspReference":"7914073381342284","reason"`)), ErrNotSigned},
		"Success beside success":             {adyenBody(adyenItemJSON(sig, `"reason"`, `"Success":"false","reason"`)), ErrNotSigned},
		"Value beside value":                 {adyenBody(adyenItemJSON(sig, `"value":1130`, `"value":1130,"Value":1`)), ErrNotSigned},
		"EVENTCODE beside eventCode":         {adyenBody(adyenItemJSON(sig, `"reason"`, `"EVENTCODE":"REFUND","reason"`)), ErrNotSigned},
		"an escaped key repeating eventCode": {adyenBody(adyenItemJSON(sig, `"reason"`, `"eventCod\u0065":"REFUND","reason"`)), ErrNotSigned},
		"notificationrequestitem beside":     {[]byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":` + adyenItemJSON(sig) + `,"notificationrequestitem":{}}]}`), ErrNotSigned},
		"NotificationItems beside":           {[]byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":` + adyenItemJSON(sig) + `}],"NotificationItems":[]}`), ErrNotSigned},
		"invalid UTF-8 in a signed field":    {adyenBody(adyenItemJSON(sig, `"TestMerchant"`, "\"Test\xffMerchant\"")), ErrNotSigned},
		"live a number":                      {[]byte(`{"live":1,"notificationItems":[{"NotificationRequestItem":` + adyenItemJSON(sig) + `}]}`), ErrNotSigned},
	} {
		add(name, c.body, c.want)
	}
	return []malformedRun{{mustNew(tb, NewAdyen, Options{}), cases}}
}

func TestAdyenVerifyMalformed(t *testing.T) { runMalformed(t, adyenMalformedRuns(t)) }

var adyenSplitCases = []struct {
	name string
	body string
	ok   bool
}{
	{"the vector", string(adyenBody(adyenItemJSON(adyenSDKSig))), true},
	{"no eventDate", string(adyenBody(adyenItemJSON(adyenSDKSig, `"eventDate":"2014-08-06T13:39:05+02:00",`, ""))), true},
	{"success not a boolean word", string(adyenBody(adyenItemJSON(adyenSDKSig, `"success":"true"`, `"success":"yes"`))), false},
	{"no pspReference", string(adyenBody(adyenItemJSON(adyenSDKSig, `"pspReference":"7914073381342284",`, ""))), false},
	{"no eventCode", string(adyenBody(adyenItemJSON(adyenSDKSig, `"eventCode":"AUTHORISATION",`, ""))), false},
	{"eventDate not RFC 3339", string(adyenBody(adyenItemJSON(adyenSDKSig, `2014-08-06T13:39:05+02:00`, `06/08/2014`))), false},
	{"empty", ``, false},
	{"no items", `{"notificationItems":[]}`, false},
}

func TestAdyenSplit(t *testing.T) {
	a := mustNew(t, NewAdyen, Options{})
	for _, tc := range adyenSplitCases {
		ids, err := a.Split(adyenRequest([]byte(tc.body)))
		if tc.ok != (err == nil) || (err == nil && len(ids) != 1) {
			t.Errorf("%s: got %d events, %v", tc.name, len(ids), err)
		}
	}
}

func FuzzAdyenVerify(f *testing.F) {
	f.Add(adyenBody(adyenItemJSON(adyenSign(adyenKey, adyenSigned))))
	f.Add(adyenBody(adyenItemJSON("x")))
	a := mustNew(f, NewAdyen, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		if !fuzzVerify(t, a, adyenRequest(body), adyenSecrets, testNow) {
			return
		}
		var doc struct {
			NotificationItems []struct {
				NotificationRequestItem struct {
					AdditionalData struct{ HmacSignature string }
				}
			}
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.NotificationItems) == 0 {
			t.Fatalf("Verify(%q): accepted a body that is no notification (%v)", body, err)
		}
		for _, it := range doc.NotificationItems {
			if it.NotificationRequestItem.AdditionalData.HmacSignature == "" {
				t.Fatalf("Verify(%q): accepted an item without a signature", body)
			}
		}
	})
}

func FuzzAdyenSplit(f *testing.F) {
	for _, tc := range adyenSplitCases {
		f.Add([]byte(tc.body))
	}
	a := mustNew(f, NewAdyen, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, err := a.Split(adyenRequest(body))
		if err != nil {
			return
		}
		for _, id := range ids {
			if strings.Count(id.ID, ":") < 2 || !json.Valid(id.Payload) || len(id.ID) > MaxIdentity {
				t.Fatalf("Split(%q): %+v", body, id)
			}
		}
	})
}

// BenchmarkAdyen compares the scheme with a bare HMAC over the item's
// signing string (the JSON decoding is the rest of its cost).
func BenchmarkAdyen(b *testing.B) {
	body := adyenBody(adyenItemJSON(adyenSign(adyenKey, adyenSigned)))
	k, _ := hex.DecodeString(string(adyenKey))
	var sum [sha256.Size]byte
	benchScheme(b, mustNew(b, NewAdyen, Options{}), adyenRequest(body), adyenSecrets, testNow, "bare-hmac", func(*testing.B) {
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte(adyenSigned))
		mac.Sum(sum[:0])
	})
}
