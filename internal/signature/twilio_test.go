package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	twilioclient "github.com/twilio/twilio-go/client"
)

// twilioURL is the public URL the tests configure, as Twilio's console
// would hold it.
const twilioURL = "https://hooks.example.com/webhooks/twilio"

var (
	twilioToken    = []byte("twilio_test_auth_token_current_7f3a")
	twilioTokenOld = []byte("twilio_test_auth_token_previous_c91e")
	twilioTokens   = [][]byte{twilioToken}
)

// twilioPayload is one webhook as Twilio sends it. The project's corpus has
// no Twilio folder, so these follow the parameter lists of Twilio's
// documentation (inbound message, message status, call status, incoming
// call, Conversations) with made-up SIDs.
type twilioPayload struct {
	name     string
	query    string // RawQuery as sent, without bodySHA256
	body     string
	json     bool
	wantID   string // "" means the content hash
	wantType string
	created  time.Time
}

const (
	twilioTestMsgSid  = "SM1f0e8ae6ade43cb3c0ce4525424e404f"
	twilioTestCallSid = "CA5bd1fbd1a1b6a3c6e5b3b3c8a8b4e2f1"
	twilioTestAcct    = "AC0123456789abcdef0123456789abcdef"
)

var twilioPayloads = []twilioPayload{
	{
		name:     "inbound sms",
		body:     "ToCountry=US&ToState=CA&SmsMessageSid=" + twilioTestMsgSid + "&NumMedia=0&ToCity=SAN+FRANCISCO&FromZip=94105&SmsSid=" + twilioTestMsgSid + "&FromState=CA&SmsStatus=received&FromCity=SAN+FRANCISCO&Body=Hello+from+Twilio%21+%F0%9F%91%8B+50%25+off%3B+a%26b%3Dc&FromCountry=US&To=%2B15558675310&ToZip=94105&NumSegments=1&MessageSid=" + twilioTestMsgSid + "&AccountSid=" + twilioTestAcct + "&From=%2B15017122661&ApiVersion=2010-04-01",
		wantID:   twilioTestMsgSid + ":received",
		wantType: "sms",
	},
	{
		name:     "message status delivered",
		query:    "order=42&tenant=acme",
		body:     "SmsSid=" + twilioTestMsgSid + "&SmsStatus=delivered&MessageStatus=delivered&To=%2B15558675310&MessageSid=" + twilioTestMsgSid + "&AccountSid=" + twilioTestAcct + "&From=%2B15017122661&ApiVersion=2010-04-01&RawDlrDoneDate=2407261430",
		wantID:   twilioTestMsgSid + ":delivered",
		wantType: "message-status:delivered",
	},
	{
		name:     "call status completed",
		body:     "Called=%2B15558675310&ToState=CA&CallerCountry=US&Direction=inbound&Timestamp=Fri%2C+26+Jul+2024+00%3A40%3A00+%2B0000&CallbackSource=call-progress-events&SipResponseCode=200&CallerState=CA&ToZip=94105&SequenceNumber=3&CallSid=" + twilioTestCallSid + "&To=%2B15558675310&CallerZip=94105&ToCountry=US&CalledZip=94105&ApiVersion=2010-04-01&CalledCity=SAN+FRANCISCO&CallStatus=completed&Duration=1&From=%2B15017122661&CallDuration=42&AccountSid=" + twilioTestAcct + "&CalledCountry=US&CallerCity=SAN+FRANCISCO&ToCity=SAN+FRANCISCO&FromCountry=US&Caller=%2B15017122661&FromCity=SAN+FRANCISCO&CalledState=CA&FromZip=94105&FromState=CA",
		wantID:   twilioTestCallSid + ":completed:3",
		wantType: "call-status:completed",
		created:  time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC),
	},
	{
		name:     "incoming call (no sequence number)",
		body:     "AccountSid=" + twilioTestAcct + "&ApiVersion=2010-04-01&CallSid=" + twilioTestCallSid + "&CallStatus=ringing&Called=%2B15558675310&Caller=%2B15017122661&Direction=inbound&From=%2B15017122661&To=%2B15558675310",
		wantType: "call-status:ringing",
	},
	{
		name:     "conversations onMessageAdded",
		body:     "EventType=onMessageAdded&ConversationSid=CH0123456789abcdef0123456789abcdef&MessageSid=IM0123456789abcdef0123456789abcdef&Index=0&Author=%2B15017122661&Body=Hi+there&Source=SMS&AccountSid=" + twilioTestAcct + "&DateCreated=2024-07-26T00%3A40%3A00.000Z&RetryCount=0",
		wantType: "onMessageAdded",
	},
	{
		name:     "json body",
		query:    "source=studio",
		body:     `{"event":"flow.completed","sid":"FN0123456789abcdef0123456789abcdef","data":{"note":"a+b=c & d"}}`,
		json:     true,
		wantType: "json",
	},
}

func mustNewTwilio(tb testing.TB, o Options) *Twilio {
	tb.Helper()
	return mustNew(tb, NewTwilio, o)
}

// twilioRequest builds a POST with one X-Twilio-Signature value per element
// of sigs.
func twilioRequest(p twilioPayload, sigs ...string) Request {
	ct := "application/x-www-form-urlencoded"
	if p.json {
		ct = "application/json"
	}
	h := http.Header{"Content-Type": {ct}}
	for _, v := range sigs {
		h.Add(TwilioSignatureHeader, v)
	}
	return Request{Method: http.MethodPost, Header: h, RawQuery: p.query, Body: []byte(p.body)}
}

// twilioJSONQuery returns the query Twilio sends for a JSON body: the
// configured query plus bodySHA256.
func twilioJSONQuery(query string, body []byte) string {
	sum := sha256.Sum256(body)
	q := "bodySHA256=" + hex.EncodeToString(sum[:])
	if query == "" {
		return q
	}
	return query + "&" + q
}

// sent returns p as it travels: JSON payloads with bodySHA256 in the query.
func (p twilioPayload) sent() twilioPayload {
	if p.json {
		p.query = twilioJSONQuery(p.query, []byte(p.body))
	}
	return p
}

// fullURL is the URL Twilio called for p.
func (p twilioPayload) fullURL(base string) string {
	if p.query == "" {
		return base
	}
	return base + "?" + p.query
}

// twilioNodeSignature computes the signature of a request to base with
// query as twilio-node does (names sorted, each name's distinct values
// sorted), independently of the code under test. ok is false when no
// signature can exist (a JSON body whose hash is not the query's
// bodySHA256, or a body that is not a form).
func twilioNodeSignature(token []byte, base, query string, body []byte) (sig string, ok bool) {
	data := twilioFullURL(base, query)
	q, _ := url.ParseQuery(query)
	if q.Has("bodySHA256") {
		sum := sha256.Sum256(body)
		if !strings.EqualFold(q.Get("bodySHA256"), hex.EncodeToString(sum[:])) {
			return "", false
		}
	} else {
		params, err := url.ParseQuery(string(body))
		if err != nil {
			return "", false
		}
		names := slices.Sorted(maps.Keys(params))
		for _, k := range names {
			vs := slices.Clone(params[k])
			sort.Strings(vs)
			for _, v := range slices.Compact(vs) {
				data += k + v
			}
		}
	}
	m := hmac.New(sha1.New, token)
	m.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(m.Sum(nil)), true
}

// twilioGoSignature computes the signature the way twilio-go's
// RequestValidator does (sorted names, one value per name), for the
// SDK-signs direction: twilio-go has no signer of its own.
func twilioGoSignature(token []byte, fullURL string, params map[string]string) string {
	names := slices.Sorted(maps.Keys(params))
	data := fullURL
	for _, k := range names {
		data += k + params[k]
	}
	m := hmac.New(sha1.New, token)
	m.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// twilioWantContentKey is the documented content hash, computed with
// url.ParseQuery instead of the scheme's own parser.
func twilioWantContentKey(tb testing.TB, p twilioPayload) string {
	tb.Helper()
	h := sha256.New()
	put := func(s string) {
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	put(p.query)
	if p.json {
		put(p.body)
		return hex.EncodeToString(h.Sum(nil))
	}
	params, err := url.ParseQuery(p.body)
	if err != nil {
		tb.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(params))
	for _, k := range names {
		vs := slices.Clone(params[k])
		sort.Strings(vs)
		for _, v := range slices.Compact(vs) {
			put(k)
			put(v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestTwilioSDKVectors reproduces the signatures in twilio-go's own
// request_validator_test.go (auth token "12345").
func TestTwilioSDKVectors(t *testing.T) {
	params := url.Values{
		"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"},
		"Caller": {"+14158675309"}, "From": {"+14158675309"},
		"ReasonConferenceEnded": {"test"}, "Reason": {"Participant"},
	}
	const bodyHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	jsonBody := `{"property": "value", "boolean": true}`
	tests := []struct {
		name, url, query, body, sig string
		want                        error
	}{
		{"params, https", "https://mycompany.com/myapp.php", "foo=1&bar=2", params.Encode(), "vOEb5UThFn24KEfnOFLQY2AE5FY=", nil},
		{"params, https with port, signed without", "https://mycompany.com:1234/myapp.php", "foo=1&bar=2", params.Encode(), "vOEb5UThFn24KEfnOFLQY2AE5FY=", nil},
		{"params, http", "http://mycompany.com/myapp.php", "foo=1&bar=2", params.Encode(), "n2xBNyzSW7rfYStDtOFiFMv7qNo=", nil},
		{"params, http with port", "http://mycompany.com:1234/myapp.php", "foo=1&bar=2", params.Encode(), "n2xBNyzSW7rfYStDtOFiFMv7qNo=", nil},
		{"params sorted wrongly (Reason after ReasonConferenceEnded)", "https://mycompany.com/myapp.php", "foo=1&bar=2", params.Encode(), "95+Bu0JVPi0r/SsESZCVf0dWAjw=", ErrNoMatch},
		{"form body", "https://mycompany.com/myapp.php", "foo=1&bar=2", "property=value&boolean=true", "NBdBDr/T/lgjI+tlgpXjKZQZs/k=", nil},
		{"json body", "https://mycompany.com/myapp.php", "foo=1&bar=2&bodySHA256=" + bodyHash, jsonBody, "a9nBmqA0ju/hNViExpshrM61xv4=", nil},
		{"json body, only bodySHA256", "https://mycompany.com/myapp.php", "bodySHA256=" + bodyHash, jsonBody, "y77kIzt2vzLz71DgmJGsen2scGs=", nil},
		{"json body, signature of the query without the hash", "https://mycompany.com/myapp.php", "foo=1&bar=2&bodySHA256=" + bodyHash, jsonBody, "vOEb5UThFn24KEfnOFLQY2AE5FY=", ErrNoMatch},
		{"json body changed", "https://mycompany.com/myapp.php", "bodySHA256=" + bodyHash, jsonBody + " ", "y77kIzt2vzLz71DgmJGsen2scGs=", ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNewTwilio(t, Options{URL: tt.url})
			r := Request{Method: http.MethodPost, Header: http.Header{TwilioSignatureHeader: {tt.sig}}, RawQuery: tt.query, Body: []byte(tt.body)}
			err := verifyNoPanic(t, s, r, [][]byte{[]byte("12345")}, testNow)
			checkErr(t, err, tt.want)
		})
	}
}

// TestTwilioCrossCheckTwilioGo checks the scheme against twilio-go's
// RequestValidator in both directions.
func TestTwilioCrossCheckTwilioGo(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	validator := twilioclient.NewRequestValidator(string(twilioToken))
	for _, p := range twilioPayloads {
		t.Run(p.name, func(t *testing.T) {
			t.Run("twilio-go verifies", func(t *testing.T) {
				r := twilioRequest(p)
				if err := s.Sign(&r, twilioToken, testNow); err != nil {
					t.Fatalf("Sign: %v", err)
				}
				sig := r.Header.Get(TwilioSignatureHeader)
				full := twilioURL
				if r.RawQuery != "" {
					full += "?" + r.RawQuery
				}
				if !validator.ValidateBody(full, r.Body, sig) {
					t.Errorf("ValidateBody(%q, Sign header %q): got false, want true", full, sig)
				}
				if validator.ValidateBody(full, flipByte(r.Body, len(r.Body)/2), sig) {
					t.Errorf("ValidateBody(flipped body): got true, want false")
				}
				if p.json {
					if want := twilioJSONQuery(p.query, r.Body); r.RawQuery != want {
						t.Errorf("Sign: got RawQuery %q, want %q", r.RawQuery, want)
					}
				}
			})
			t.Run("twilio-go signs", func(t *testing.T) {
				p := p.sent()
				params := map[string]string{}
				if !p.json {
					vs, err := url.ParseQuery(p.body)
					if err != nil {
						t.Fatal(err)
					}
					for k, v := range vs {
						params[k] = v[0]
					}
				}
				sig := twilioGoSignature(twilioToken, p.fullURL(twilioURL), params)
				if !validator.Validate(p.fullURL(twilioURL), params, sig) {
					t.Fatalf("twilio-go Validate rejects the test's own signature %q", sig)
				}
				if err := s.Verify(twilioRequest(p, sig), twilioTokens, testNow); err != nil {
					t.Errorf("Verify(twilio-go signature): got %v, want nil", err)
				}
				if err := s.Verify(twilioRequest(p, sig), [][]byte{twilioTokenOld}, testNow); !errors.Is(err, ErrNoMatch) {
					t.Errorf("Verify(twilio-go signature, other token): got %v, want %v", err, ErrNoMatch)
				}
			})
		})
	}
}

// TestTwilioPayloads signs every payload, verifies it, checks Identify and
// that changing any single byte of the body is a mismatch.
func TestTwilioPayloads(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	for _, p := range twilioPayloads {
		t.Run(p.name, func(t *testing.T) {
			p := p.sent()
			sig, ok := twilioNodeSignature(twilioToken, twilioURL, p.query, []byte(p.body))
			if !ok {
				t.Fatal("no reference signature")
			}
			r := twilioRequest(p, sig)
			if err := s.Verify(r, twilioTokens, testNow); err != nil {
				t.Fatalf("Verify(signed payload): got %v, want nil", err)
			}

			got, err := s.Identify(r)
			if err != nil {
				t.Fatalf("Identify: %v", err)
			}
			wantID := p.wantID
			if wantID == "" {
				wantID = twilioWantContentKey(t, p)
			}
			if got.ID != wantID || got.Type != p.wantType || !got.Created.Equal(p.created) {
				t.Errorf("Identify: got %q %q %v, want %q %q %v", got.ID, got.Type, got.Created, wantID, p.wantType, p.created)
			}
			if !p.json && got.Attributes["account_sid"] != twilioTestAcct {
				t.Errorf("Identify: got attributes %v, want account_sid %s", got.Attributes, twilioTestAcct)
			}

			// The token is outside the signature: a captured request
			// under a fresh token is the same event, the token kept.
			r.Header.Set(TwilioIdempotencyHeader, "idem-"+p.name)
			if got, err := s.Identify(r); err != nil || got.ID != wantID || got.Type != p.wantType || got.Attributes["idempotency_token"] != "idem-"+p.name {
				t.Errorf("Identify(with %s): got %+v, %v; want id %q, the token an attribute", TwilioIdempotencyHeader, got, err, wantID)
			}

			for i := range len(p.body) {
				q := p
				q.body = string(flipByte([]byte(p.body), i))
				err := s.Verify(twilioRequest(q, sig), twilioTokens, testNow)
				if !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Verify(body with byte %d flipped: %q): got %v, want %v", i, q.body, err, ErrNoMatch)
				}
			}
			for i := range len(p.query) {
				q := p
				q.query = string(flipByte([]byte(p.query), i))
				err := s.Verify(twilioRequest(q, sig), twilioTokens, testNow)
				if !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Verify(query with byte %d flipped: %q): got %v, want %v", i, q.query, err, ErrNoMatch)
				}
			}
		})
	}
}

// TestTwilioReencodedForm shows what the signature cannot see: a form
// re-encoded without changing its parameters still verifies (Twilio signs
// decoded parameters), and gets the same content key.
func TestTwilioReencodedForm(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	orig := twilioPayload{body: "A=hello+world&B=x%2By"}
	sig, _ := twilioNodeSignature(twilioToken, twilioURL, "", []byte(orig.body))
	for _, body := range []string{"A=hello+world&B=x%2By", "A=hello%20world&B=x%2By", "&B=x%2By&&A=hello+world&", "A=hello+world&B=x%2By&A=hello+world"} {
		t.Run(body, func(t *testing.T) {
			p := twilioPayload{body: body}
			err := s.Verify(twilioRequest(p, sig), twilioTokens, testNow)
			checkErr(t, err, nil)
			got, err := s.Identify(twilioRequest(p))
			if err != nil {
				t.Fatal(err)
			}
			if want := twilioWantContentKey(t, orig); got.ID != want {
				t.Errorf("Identify: got id %q, want %q (the original's)", got.ID, want)
			}
		})
	}
}

// TestTwilioRepeatedParams pins the treatment of repeated names to
// twilio-node's: each distinct value, sorted.
func TestTwilioRepeatedParams(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	body := "Digits=2&A=x&Digits=1&Digits=2"
	mac := func(data string) string {
		m := hmac.New(sha1.New, twilioToken)
		m.Write([]byte(twilioURL + data))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	tests := []struct {
		name, sig string
		want      error
	}{
		{"distinct values sorted (twilio-node)", mac("AxDigits1Digits2"), nil},
		{"reference implementation agrees", func() string { s, _ := twilioNodeSignature(twilioToken, twilioURL, "", []byte(body)); return s }(), nil},
		{"duplicates kept (twilio-python)", mac("AxDigits1Digits2Digits2"), ErrNoMatch},
		{"first value only (twilio-go)", mac("AxDigits2"), ErrNoMatch},
		{"values in body order", mac("AxDigits2Digits1"), ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyNoPanic(t, s, twilioRequest(twilioPayload{body: body}, tt.sig), twilioTokens, testNow)
			checkErr(t, err, tt.want)
		})
	}
}

func TestTwilioRotation(t *testing.T) {
	p := twilioPayloads[0]
	cur, _ := twilioNodeSignature(twilioToken, twilioURL, "", []byte(p.body))
	old, _ := twilioNodeSignature(twilioTokenOld, twilioURL, "", []byte(p.body))
	both := [][]byte{twilioToken, twilioTokenOld}
	req := func(sig string) Request { return twilioRequest(p, sig) }
	tests := []verifyCase{
		{"two tokens, signed by current", req(cur), both, nil},
		{"two tokens, signed by previous", req(old), both, nil},
		{"two tokens reversed, signed by current", req(cur), [][]byte{twilioTokenOld, twilioToken}, nil},
		{"retired token no longer accepted", req(old), twilioTokens, ErrNoMatch},
		{"no tokens", req(cur), nil, ErrNoSecret},
		{"only an empty token", req(cur), [][]byte{{}}, ErrNoSecret},
		{"empty token skipped, real one used", req(cur), [][]byte{nil, twilioToken}, nil},
		{"empty token never matches empty-key signature", req(func() string { s, _ := twilioNodeSignature(nil, twilioURL, "", []byte(p.body)); return s }()), [][]byte{{}, twilioToken}, ErrNoMatch},
	}
	s := mustNewTwilio(t, Options{URL: twilioURL})
	runVerifyCases(t, s, testNow, 0, tests)
}

// TestTwilioURLVariants checks the port spellings Twilio's SDKs accept and
// that nothing else about the URL is forgiven.
func TestTwilioURLVariants(t *testing.T) {
	body := []byte("A=1")
	tests := []struct {
		configured, signed string
		want               error
	}{
		{"https://h.example/x", "https://h.example/x", nil},
		{"https://h.example/x", "https://h.example:443/x", nil},
		{"https://h.example:443/x", "https://h.example/x", nil},
		{"https://h.example:8443/x", "https://h.example/x", nil},
		{"https://h.example:8443/x", "https://h.example:8443/x", nil},
		{"http://h.example/x", "http://h.example:80/x", nil},
		{"https://h.example/x", "https://h.example:80/x", ErrNoMatch},
		{"https://h.example/x", "http://h.example/x", ErrNoMatch},
		{"https://h.example/x", "https://h.example/x/", ErrNoMatch},
		{"https://h.example/x", "https://H.example/x", ErrNoMatch},
		{"https://h.example/x", "https://h.example/X", ErrNoMatch},
		{"https://[::1]:8443/x", "https://[::1]/x", nil},
		{"https://[::1]/x", "https://[::1]:443/x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.configured+" signed as "+tt.signed, func(t *testing.T) {
			s := mustNewTwilio(t, Options{URL: tt.configured})
			sig, _ := twilioNodeSignature(twilioToken, tt.signed, "", body)
			err := verifyNoPanic(t, s, twilioRequest(twilioPayload{body: string(body)}, sig), twilioTokens, testNow)
			checkErr(t, err, tt.want)
		})
	}
}

func TestNewTwilio(t *testing.T) {
	runOptionsCases(t, NewTwilio, []optionsCase{
		{"https URL", Options{URL: twilioURL}, false},
		{"http URL with port", Options{URL: "http://localhost:3000/webhooks/twilio"}, false},
		{"no URL", Options{}, true},
		{"relative URL", Options{URL: "/webhooks/twilio"}, true},
		{"no scheme", Options{URL: "hooks.example.com/twilio"}, true},
		{"ftp URL", Options{URL: "ftp://hooks.example.com/twilio"}, true},
		{"URL with query", Options{URL: twilioURL + "?a=1"}, true},
		{"URL with empty query", Options{URL: twilioURL + "?"}, true},
		{"URL with fragment", Options{URL: twilioURL + "#x"}, true},
		{"URL with user info", Options{URL: "https://u:p@hooks.example.com/twilio"}, true},
		{"URL with bad escape", Options{URL: "https://hooks.example.com/%zz"}, true},
		{"tolerance (Twilio signs no timestamp)", Options{URL: twilioURL, Tolerance: time.Minute}, true},
		{"negative tolerance", Options{URL: twilioURL, Tolerance: -time.Second}, true},
		{"HMAC options", Options{URL: twilioURL, HMAC: HMACOptions{Header: "X"}}, true},
	})
}

// twilioCase is one request and the cause Verify must report.
type twilioCase struct {
	name    string
	headers []string // X-Twilio-Signature values
	query   string   // replaces the payload's query when set
	body    func([]byte) []byte
	json    bool
	secrets [][]byte // nil means twilioTokens
	want    error
}

// twilioMalformedCases builds the table of bad inputs for the inbound-sms
// payload; the fuzz test reuses it.
func twilioMalformedCases() []twilioCase {
	p := twilioPayloads[0]
	sig, _ := twilioNodeSignature(twilioToken, twilioURL, "", []byte(p.body))
	wrong, _ := twilioNodeSignature([]byte("wrong token"), twilioURL, "", []byte(p.body))
	sha256Sig := func() string {
		m := hmac.New(sha256.New, twilioToken)
		m.Write([]byte(twilioURL))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}()
	withQuery, _ := twilioNodeSignature(twilioToken, twilioURL, "a=1", []byte(p.body))
	jsonBody := []byte(`{"a":1}`)
	jsonQuery := twilioJSONQuery("", jsonBody)
	jsonSig, _ := twilioNodeSignature(twilioToken, twilioURL, jsonQuery, jsonBody)
	urlOnly, _ := twilioNodeSignature(twilioToken, twilioURL, "", nil)
	set := func(b []byte) func([]byte) []byte { return func([]byte) []byte { return b } }
	appendStr := func(s string) func([]byte) []byte {
		return func(b []byte) []byte { return append(bytes.Clone(b), s...) }
	}
	return []twilioCase{
		{name: "missing header", want: ErrNotSigned},
		{name: "empty header", headers: []string{""}, want: ErrNotSigned},
		{name: "blank header", headers: []string{"   "}, want: ErrNotSigned},
		{name: "two headers", headers: []string{sig, sig}, want: ErrMalformedHeader},
		{name: "two headers joined by a comma", headers: []string{sig + "," + sig}, want: ErrMalformedHeader},
		{name: "not base64", headers: []string{strings.Repeat("!", 28)}, want: ErrMalformedHeader},
		{name: "truncated", headers: []string{sig[:27]}, want: ErrMalformedHeader},
		{name: "no padding", headers: []string{strings.TrimRight(sig, "=")}, want: ErrMalformedHeader},
		{name: "extra byte", headers: []string{base64.StdEncoding.EncodeToString(append(twilioB64(sig), 0))}, want: ErrMalformedHeader},
		{name: "leading space", headers: []string{" " + sig}, want: ErrMalformedHeader},
		{name: "trailing newline", headers: []string{sig + "\n"}, want: ErrMalformedHeader},
		{name: "sha1= prefix", headers: []string{"sha1=" + sig}, want: ErrMalformedHeader},
		{name: "HMAC-SHA256 signature (webhook rules)", headers: []string{sha256Sig}, want: ErrMalformedHeader},
		{name: "hex instead of base64", headers: []string{hex.EncodeToString(twilioB64(sig))}, want: ErrMalformedHeader},
		{name: "unicode", headers: []string{"ＡＢＣＤ" + sig[12:]}, want: ErrMalformedHeader},
		{name: "1 MiB header", headers: []string{strings.Repeat("A", 1<<20)}, want: ErrMalformedHeader},
		{name: "wrong token", headers: []string{wrong}, want: ErrNoMatch},
		{name: "no tokens", headers: []string{sig}, secrets: [][]byte{}, want: ErrNoSecret},
		{name: "query added", headers: []string{sig}, query: "a=1", want: ErrNoMatch},
		{name: "query removed", headers: []string{withQuery}, want: ErrNoMatch},
		{name: "query with signature of another", headers: []string{withQuery}, query: "a=2", want: ErrNoMatch},
		{name: "body truncated", headers: []string{sig}, body: func(b []byte) []byte { return b[:len(b)-1] }, want: ErrNoMatch},
		{name: "body empty", headers: []string{sig}, body: set(nil), want: ErrNoMatch},
		{name: "parameter appended", headers: []string{sig}, body: appendStr("&Extra=1"), want: ErrNoMatch},
		{name: "empty parameter appended", headers: []string{sig}, body: appendStr("&Extra="), want: ErrNoMatch},
		{name: "bad escape in body", headers: []string{sig}, body: appendStr("&X=%G1"), want: ErrNoMatch},
		{name: "truncated escape in body", headers: []string{sig}, body: appendStr("&X=%4"), want: ErrNoMatch},
		{name: "semicolon in body", headers: []string{sig}, body: appendStr(";X=1"), want: ErrNoMatch},
		{name: "1001 parameters", headers: []string{sig}, body: appendStr(strings.Repeat("&a=1", 1000)), want: ErrNoMatch},
		{name: "trailing ampersand is harmless", headers: []string{sig}, body: appendStr("&"), want: nil},
		{name: "json: signed", headers: []string{jsonSig}, query: jsonQuery, body: set(jsonBody), json: true, want: nil},
		{name: "json: body changed", headers: []string{jsonSig}, query: jsonQuery, body: set([]byte(`{"a":2}`)), json: true, want: ErrNoMatch},
		{name: "json: bodySHA256 not hex", headers: []string{jsonSig}, query: "bodySHA256=" + strings.Repeat("z", 64), body: set(jsonBody), json: true, want: ErrNoMatch},
		{name: "json: bodySHA256 short", headers: []string{jsonSig}, query: jsonQuery[:len(jsonQuery)-2], body: set(jsonBody), json: true, want: ErrNoMatch},
		{name: "json: bodySHA256 empty", headers: []string{urlOnly}, query: "bodySHA256=", body: set(jsonBody), json: true, want: ErrNoMatch},
		{name: "json: no bodySHA256, URL-only signature", headers: []string{urlOnly}, body: set(jsonBody), json: true, want: ErrNoMatch},
		{name: "json: bodySHA256 after a semicolon pair", headers: []string{jsonSig}, query: "x;y&" + jsonQuery, body: set(jsonBody), json: true, want: ErrNoMatch},
	}
}

func twilioB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// twilioCaseRequest builds the request of a malformed case.
func twilioCaseRequest(tc twilioCase) Request {
	p := twilioPayloads[0]
	p.query, p.json = tc.query, tc.json
	if tc.body != nil {
		p.body = string(tc.body([]byte(p.body)))
	}
	return twilioRequest(p, tc.headers...)
}

func twilioMalformedRuns(tb testing.TB) []malformedRun {
	var cases []verifyCase
	for _, tc := range twilioMalformedCases() {
		cases = append(cases, verifyCase{tc.name, twilioCaseRequest(tc), orSecrets(tc.secrets, twilioTokens), tc.want})
	}
	s := mustNewTwilio(tb, Options{URL: twilioURL})
	// Twilio signs no timestamp: the URL and the form parameters only.
	generic := genericMalformed(tb, "", malformedSpec{
		s:       s,
		r:       signed(tb, s, twilioRequest(twilioPayloads[1]), twilioToken, testNow),
		secrets: twilioTokens,
		sig:     signedField{header: TwilioSignatureHeader},
		enc:     encBase64,
	})
	return []malformedRun{{s, cases}, {s, generic}}
}

func TestTwilioVerifyMalformed(t *testing.T) { runMalformed(t, twilioMalformedRuns(t)) }

// twilioIdentifyCase is one request and the identity Identify must return;
// a zero want.ID means ErrInvalidPayload.
type twilioIdentifyCase struct {
	name  string
	query string
	body  string
	token []string
	want  Identity
}

var twilioIdentifyCases = []twilioIdentifyCase{
	{name: "not a form", body: "A=%zz"},
	{name: "semicolon", body: "A=1;B=2"},
	{name: "json query, invalid JSON", query: "bodySHA256=00", body: `{"a":`},
	{name: "json query, trailing garbage", query: "bodySHA256=00", body: `{} x`},
	{name: "json query, empty body", query: "bodySHA256=00", body: ``},
	{name: "MessageSid repeated with two values", body: "MessageSid=SM1&MessageSid=SM2&SmsStatus=received"},
	{name: "MessageStatus repeated with two values", body: "MessageSid=SM1&MessageStatus=sent&MessageStatus=delivered"},
	{name: "MessageSid not UTF-8", body: "MessageSid=SM%FF&SmsStatus=received"},
	{name: "EventType not UTF-8", body: "EventType=%C3%28"},
	{name: "two tokens", body: "A=1", token: []string{"t1", "t2"}},
	{name: "token not UTF-8", body: "A=1", token: []string{"t\xff"}},
	{name: "token too long", body: "A=1", token: []string{strings.Repeat("t", 513)}},
	{name: "id too long", body: "MessageSid=" + strings.Repeat("S", 600) + "&SmsStatus=received"},
	{name: "type too long", body: "EventType=" + strings.Repeat("e", 600)},
	{name: "1001 parameters", body: strings.Repeat("a=1&", 1001)},

	// The token is unsigned: kept, never the key.
	{name: "signed fields win over the token", body: "MessageSid=SM1&SmsStatus=received", token: []string{"tok-1"}, want: Identity{ID: "SM1:received", Type: "sms", Attributes: map[string]string{"idempotency_token": "tok-1"}}},
	{name: "token of 512 bytes", body: "MessageSid=SM1&SmsStatus=received", token: []string{strings.Repeat("t", 512)}, want: Identity{ID: "SM1:received", Type: "sms", Attributes: map[string]string{"idempotency_token": strings.Repeat("t", 512)}}},
	{name: "inbound via SmsSid", body: "SmsSid=SM9&SmsStatus=received", want: Identity{ID: "SM9:received", Type: "sms"}},
	{name: "MessageSid preferred to SmsSid", body: "SmsSid=SM8&MessageSid=SM9&SmsStatus=received", want: Identity{ID: "SM9:received", Type: "sms"}},
	{name: "MessageStatus preferred to SmsStatus", body: "MessageSid=SM9&SmsStatus=sent&MessageStatus=delivered", want: Identity{ID: "SM9:delivered", Type: "message-status:delivered"}},
	{name: "repeated identical values are one", body: "MessageSid=SM9&MessageSid=SM9&SmsStatus=received", want: Identity{ID: "SM9:received", Type: "sms"}},
	{name: "older status callback (SmsStatus only)", body: "SmsSid=SM9&SmsStatus=sent", want: Identity{ID: "SM9:sent", Type: "message-status:sent"}},
	{name: "call status callback", body: "CallSid=CA1&CallStatus=busy&SequenceNumber=0", want: Identity{ID: "CA1:busy:0", Type: "call-status:busy"}},
	{name: "call timestamp not RFC 1123 is ignored", body: "CallSid=CA1&CallStatus=busy&SequenceNumber=0&Timestamp=yesterday", want: Identity{ID: "CA1:busy:0", Type: "call-status:busy"}},
	{name: "call timestamp", body: "CallSid=CA1&CallStatus=busy&SequenceNumber=0&Timestamp=Fri%2C+26+Jul+2024+02%3A40%3A00+%2B0200", want: Identity{ID: "CA1:busy:0", Type: "call-status:busy", Created: time.Date(2024, 7, 26, 0, 40, 0, 0, time.UTC)}},
}

func TestTwilioIdentify(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	for _, tt := range twilioIdentifyCases {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Method: http.MethodPost, Header: http.Header{}, RawQuery: tt.query, Body: []byte(tt.body)}
			for _, v := range tt.token {
				r.Header.Add(TwilioIdempotencyHeader, v)
			}
			got, err := identifyNoPanic(t, s, r)
			checkIdentity(t, got, err, tt.want)
		})
	}
	t.Run("content keys differ by query", func(t *testing.T) {
		a, errA := s.Identify(Request{RawQuery: "x=1", Body: []byte("A=1")})
		b, errB := s.Identify(Request{RawQuery: "x=2", Body: []byte("A=1")})
		if errA != nil || errB != nil || a.ID == b.ID || len(a.ID) != 64 {
			t.Errorf("Identify: got %q (%v) and %q (%v), want two different 64-hex ids", a.ID, errA, b.ID, errB)
		}
	})
	t.Run("content keys do not confuse name and value boundaries", func(t *testing.T) {
		a, _ := s.Identify(Request{Body: []byte("AB=C")})
		b, _ := s.Identify(Request{Body: []byte("A=BC")})
		if a.ID == b.ID {
			t.Errorf("Identify: got the same id %q for AB=C and A=BC", a.ID)
		}
	})
}

// TestTwilioSign checks the signer's own contract.
func TestTwilioSign(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	t.Run("empty key", func(t *testing.T) {
		r := twilioRequest(twilioPayloads[0])
		checkErr(t, s.Sign(&r, nil, testNow), ErrNoSecret)
	})
	t.Run("body not a form", func(t *testing.T) {
		r := Request{Body: []byte("A=%zz")}
		if err := s.Sign(&r, twilioToken, testNow); err == nil {
			t.Error("Sign: got nil, want an error")
		}
	})
	t.Run("nil header, form", func(t *testing.T) {
		r := Request{Body: []byte("A=1")}
		if err := s.Sign(&r, twilioToken, testNow); err != nil {
			t.Fatal(err)
		}
		checkErr(t, s.Verify(r, twilioTokens, testNow), nil)
	})
	t.Run("json keeps an existing bodySHA256", func(t *testing.T) {
		body := []byte(`{"a":1}`)
		q := twilioJSONQuery("x=1", body)
		r := Request{Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, RawQuery: q, Body: body}
		if err := s.Sign(&r, twilioToken, testNow); err != nil {
			t.Fatal(err)
		}
		if r.RawQuery != q {
			t.Errorf("Sign: got RawQuery %q, want %q", r.RawQuery, q)
		}
		checkErr(t, s.Verify(r, twilioTokens, testNow), nil)
	})
}

func FuzzTwilioVerify(f *testing.F) {
	for _, p := range twilioPayloads {
		p := p.sent()
		f.Add("{sig}", p.query, []byte(p.body))
		f.Add("{old}", p.query, []byte(p.body))
	}
	for _, tc := range twilioMalformedCases() {
		r := twilioCaseRequest(tc)
		h := strings.Join(tc.headers, "\n")
		if len(h)+len(r.Body) > 1<<10 {
			continue // the minimizer crawls over large interesting inputs
		}
		if want, ok := twilioNodeSignature(twilioToken, twilioURL, r.RawQuery, r.Body); ok && h == want {
			h = "{sig}"
		}
		f.Add(h, r.RawQuery, r.Body)
	}

	f.Add("{sig}", "", []byte("{many}"))
	s := mustNewTwilio(f, Options{URL: twilioURL})
	secrets := [][]byte{twilioToken, twilioTokenOld}
	many := []byte(strings.Repeat("a=1&", 1001))
	f.Fuzz(func(t *testing.T, header, query string, body []byte) {
		body = bytes.ReplaceAll(body, []byte("{many}"), many)
		if strings.Contains(header, "{") {
			cur, _ := twilioNodeSignature(twilioToken, twilioURL, query, body)
			old, _ := twilioNodeSignature(twilioTokenOld, twilioURL, query, body)
			header = strings.NewReplacer("{sig}", cur, "{old}", old).Replace(header)
		}
		r := Request{Method: http.MethodPost, Header: http.Header{}, RawQuery: query, Body: body}
		for _, v := range fuzzHeaders(header) {
			r.Header.Add(TwilioSignatureHeader, v)
		}
		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}
		for _, secret := range secrets {
			for _, u := range []string{twilioURL, "https://hooks.example.com:443/webhooks/twilio"} {
				if want, ok := twilioNodeSignature(secret, u, query, body); ok && want == header {
					return
				}
			}
		}
		t.Fatalf("Verify(%q, query %q, body %q): got nil, but the reference signs nothing equal", header, query, body)
	})
}

func twilioFullURL(base, query string) string {
	if query == "" {
		return base
	}
	return base + "?" + query
}

func FuzzTwilioIdentify(f *testing.F) {
	for _, p := range twilioPayloads {
		p := p.sent()
		f.Add(p.query, []byte(p.body), "")
	}
	// Length limits are reached through placeholders: a seed holding a
	// long run of one byte makes the minimizer crawl for the whole budget.
	for _, tc := range twilioIdentifyCases {
		if len(tc.body)+len(strings.Join(tc.token, "")) > 512 {
			continue
		}
		f.Add(tc.query, []byte(tc.body), strings.Join(tc.token, "\n"))
	}
	f.Add("", []byte("A=1"), "{long}")
	f.Add("", []byte("MessageSid={long}&SmsStatus=received"), "")
	f.Add("", []byte("{many}"), "")
	s := mustNewTwilio(f, Options{URL: twilioURL})
	long, many := strings.Repeat("x", 600), strings.Repeat("a=1&", 1001)
	f.Fuzz(func(t *testing.T, query string, body []byte, token string) {
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("{long}"), []byte(long)), []byte("{many}"), []byte(many))
		token = strings.ReplaceAll(token, "{long}", long)
		r := Request{Method: http.MethodPost, Header: http.Header{}, RawQuery: query, Body: body}
		for _, v := range fuzzHeaders(token) {
			r.Header.Add(TwilioIdempotencyHeader, v)
		}
		id, ok := fuzzIdentify(t, s, r)
		if !ok {
			return
		}
		if id.ID == "" || len(id.ID) > 512 || !utf8.ValidString(id.ID) || !utf8.ValidString(id.Type) || id.Type == "" {
			t.Fatalf("Identify: got %+v, want a non-empty UTF-8 id of at most 512 bytes and a type", id)
		}
	})
}

// BenchmarkTwilio compares the scheme with a bare HMAC-SHA1 over the signed
// string and with twilio-go, on an inbound message.
func BenchmarkTwilio(b *testing.B) {
	p := twilioPayloads[0]
	body := []byte(p.body)
	sig, _ := twilioNodeSignature(twilioToken, twilioURL, "", body)
	r := twilioRequest(p, sig)
	validator := twilioclient.NewRequestValidator(string(twilioToken))

	// The signed string, built once: the floor is hashing it.
	params, _ := url.ParseQuery(p.body)
	names := slices.Sorted(maps.Keys(params))
	signed := twilioURL
	for _, k := range names {
		signed += k + params[k][0]
	}
	if !validator.ValidateBody(twilioURL, body, sig) {
		b.Fatal("twilio-go rejects the benchmark request")
	}

	data := []byte(signed)
	var sum [sha1.Size]byte
	benchScheme(b, mustNewTwilio(b, Options{URL: twilioURL}), r, twilioTokens, testNow, "bare-hmac", func(*testing.B) {
		m := hmac.New(sha1.New, twilioToken)
		m.Write(data)
		m.Sum(sum[:0])
	})
	benchRun(b, "twilio-go/ValidateBody", len(body), func(b *testing.B) {
		if !validator.ValidateBody(twilioURL, body, sig) {
			b.Fatal("rejected")
		}
	})
}

// TestTwilioConcurrent runs Verify and Identify on every payload from
// several goroutines at once: their pooled scratch must never be shared
// between two calls (go test -race sees a sharing; a wrong identity or a
// rejected signature shows one without it).
func TestTwilioConcurrent(t *testing.T) {
	s := mustNewTwilio(t, Options{URL: twilioURL})
	type job struct {
		r    Request
		want Identity
	}
	var jobs []job
	for _, p := range twilioPayloads {
		p := p.sent()
		sig, ok := twilioNodeSignature(twilioToken, twilioURL, p.query, []byte(p.body))
		if !ok {
			t.Fatalf("%s: no signature", p.name)
		}
		r := twilioRequest(p, sig)
		want, err := s.Identify(r)
		if err != nil {
			t.Fatalf("%s: Identify: %v", p.name, err)
		}
		jobs = append(jobs, job{r, want})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 200 {
				j := jobs[(g+n)%len(jobs)]
				if err := s.Verify(j.r, twilioTokens, testNow); err != nil {
					errs <- fmt.Errorf("Verify(%s): %v", j.r.Body, err)
					return
				}
				got, err := s.Identify(j.r)
				if err != nil || !reflect.DeepEqual(got, j.want) {
					errs <- fmt.Errorf("Identify(%s): got %+v, %v; want %+v", j.r.Body, got, err, j.want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
