package signature

import (
	"crypto/sha512"
	"encoding/json"
	"testing"
)

// paystackChargeSuccess is shaped like the charge.success example of
// Paystack's webhook documentation (values made up here).
const paystackChargeSuccess = `{"event":"charge.success","data":{"id":302961,"domain":"live","status":"success","reference":"qTPrJoy9Bx","amount":10000,"message":null,"gateway_response":"Approved by Financial Institution","paid_at":"2024-07-26T00:40:00.000Z","created_at":"2024-07-26T00:39:50.000Z","channel":"card","currency":"NGN","ip_address":"41.242.49.37","metadata":0,"fees":null,"customer":{"id":68324,"first_name":"Ada","last_name":"Obi","email":"ada@example.com","customer_code":"CUS_qo38as2hpsgk2r0"},"authorization":{"authorization_code":"AUTH_f5rnfq9p","bin":"539999","last4":"8877","exp_month":"08","exp_year":"2030","card_type":"mastercard DEBIT","bank":"Guaranty Trust Bank","country_code":"NG","brand":"mastercard"}}}`

var paystackKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewPaystack(o) },
	header:    PaystackSignatureHeader,
	enc:       encHex,
	hash:      sha512.New,
	size:      sha512.Size,
	secret:    []byte("sk_test_local5f1c9a3e7b2d4f6a8c0e"),
	secretOld: []byte("sk_test_old_9d8c7b6a5f4e3d2c1b0a"),
	bodies:    []identifyCase{{name: "charge.success", body: paystackChargeSuccess, want: Identity{ID: hashID(paystackChargeSuccess), Type: "charge.success"}}},
	identify: []identifyCase{
		{name: "minimal", body: `{"event":"transfer.success","data":{}}`, want: Identity{ID: hashID(`{"event":"transfer.success","data":{}}`), Type: "transfer.success"}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "missing event", body: `{"data":{}}`},
		{name: "numeric event", body: `{"event":1,"data":{}}`},
		{name: "missing data", body: `{"event":"charge.success"}`},
		{name: "data an array", body: `{"event":"charge.success","data":[]}`},
	},
}

func TestPaystack(t *testing.T) { runBodyHMACKind(t, paystackKind) }

func paystackMalformedRuns(tb testing.TB) []malformedRun {
	return bodyHMACMalformedRuns(tb, paystackKind)
}

func TestPaystackVerifyMalformed(t *testing.T) { runMalformed(t, paystackMalformedRuns(t)) }

func FuzzPaystackVerify(f *testing.F) { fuzzBodyHMACVerify(f, paystackKind) }

func FuzzPaystackIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, paystackKind, func(body []byte, id Identity) bool {
		var doc struct{ Event string }
		return json.Unmarshal(body, &doc) == nil && doc.Event == id.Type && id.ID == hashID(string(body))
	})
}

func BenchmarkPaystack(b *testing.B) { benchBodyHMAC(b, paystackKind) }
