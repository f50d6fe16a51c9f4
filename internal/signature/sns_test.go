package signature

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	snsTopic       = "arn:aws:sns:us-east-1:123456789012:orders"
	snsOtherTopic  = "arn:aws:sns:us-east-1:123456789012:other"
	snsTestCertURL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-7ff5318490ec183fbaddaa2a969abfda.pem"
	snsSubscribe   = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-east-1:123456789012:orders&Token=2336412f37fb687f5d51e6e2425c464de12884d3"
)

var snsSecrets = [][]byte{[]byte(snsOtherTopic), []byte(snsTopic)}

// snsTestMsg is an SNS message as the test writes it: its members.
type snsTestMsg map[string]string

func snsNotification() snsTestMsg {
	return snsTestMsg{
		"Type":           "Notification",
		"MessageId":      "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn":       snsTopic,
		"Subject":        "order created",
		"Message":        `{"order":"ord_1","amount":1130}`,
		"Timestamp":      testNow.UTC().Format("2006-01-02T15:04:05.000Z"),
		"SigningCertURL": snsTestCertURL,
		"UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-east-1:123456789012:orders:c9135db0-26c4-47ec-8998-413945fb5a96",
	}
}

func snsConfirmation(typ string) snsTestMsg {
	return snsTestMsg{
		"Type":           typ,
		"MessageId":      "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
		"Token":          "2336412f37fb687f5d51e6e2425c464de12884d3",
		"TopicArn":       snsTopic,
		"Message":        "You have chosen to subscribe to the topic arn:aws:sns:us-east-1:123456789012:orders.\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		"SubscribeURL":   snsSubscribe,
		"Timestamp":      testNow.UTC().Format("2006-01-02T15:04:05.000Z"),
		"SigningCertURL": snsTestCertURL,
	}
}

// with returns a copy of m with k set to v ("" deletes it).
func (m snsTestMsg) with(kv ...string) snsTestMsg {
	c := snsTestMsg{}
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(c, kv[i])
		} else {
			c[kv[i]] = kv[i+1]
		}
	}
	return c
}

// snsString is the test's own reading of AWS's documented string to sign:
// "<name>\n<value>\n" for each signed member present, names in this order.
func snsString(m snsTestMsg) string {
	names := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		names = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, n := range names {
		if v, ok := m[n]; ok {
			b.WriteString(n + "\n" + v + "\n")
		}
	}
	return b.String()
}

// snsSignAs signs m with key as SignatureVersion version, without Sign.
func snsSignAs(tb testing.TB, m snsTestMsg, key *rsa.PrivateKey, version string) snsTestMsg {
	tb.Helper()
	var h crypto.Hash
	var d []byte
	switch version {
	case "1":
		s := sha1.Sum([]byte(snsString(m)))
		h, d = crypto.SHA1, s[:]
	default:
		s := sha256.Sum256([]byte(snsString(m)))
		h, d = crypto.SHA256, s[:]
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, h, d)
	if err != nil {
		tb.Fatal(err)
	}
	return m.with("SignatureVersion", version, "Signature", base64.StdEncoding.EncodeToString(sig))
}

func (m snsTestMsg) body() []byte {
	b, err := json.Marshal(map[string]string(m))
	if err != nil {
		panic(err)
	}
	return b
}

func snsRequest(body []byte, cert *x509.Certificate) Request {
	return Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"text/plain; charset=UTF-8"}}, Body: body, Certificate: cert}
}

// replaceMember swaps the raw text old for new in a body, failing when it
// is not there exactly once.
func replaceMember(tb testing.TB, body []byte, old, new string) []byte {
	tb.Helper()
	if n := bytes.Count(body, []byte(old)); n != 1 {
		tb.Fatalf("%q occurs %d times in %s", old, n, body)
	}
	return bytes.Replace(body, []byte(old), []byte(new), 1)
}

func TestSNSSignVerifies(t *testing.T) {
	s := mustNew(t, NewSNS, Options{})
	cert := testCert(t, testRSA())
	for _, m := range []snsTestMsg{snsNotification(), snsNotification().with("Subject", ""), snsConfirmation(SNSSubscriptionConfirmation), snsConfirmation(SNSUnsubscribeConfirmation), snsNotification().with("SignatureVersion", "1")} {
		r := signed(t, s, snsRequest(m.with("Timestamp", "2000-01-01T00:00:00.000Z").body(), cert), pemPKCS8(t, testRSA()), testNow)
		if err := s.Verify(r, snsSecrets, testNow); err != nil {
			t.Fatalf("Sign then Verify of %s: %v", r.Body, err)
		}
		// Sign's output verifies by the test's own reading of the scheme.
		var got snsTestMsg
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		wantVersion := "2"
		if m["SignatureVersion"] == "1" {
			wantVersion = "1"
		}
		if got["Timestamp"] != testNow.UTC().Format("2006-01-02T15:04:05.000Z") || got["SignatureVersion"] != wantVersion {
			t.Fatalf("Sign wrote %s", r.Body)
		}
		sig, _ := base64.StdEncoding.DecodeString(got["Signature"])
		h, d := crypto.SHA256, sha256.Sum256([]byte(snsString(got)))
		dd := d[:]
		if got["SignatureVersion"] == "1" {
			s1 := sha1.Sum([]byte(snsString(got)))
			h, dd = crypto.SHA1, s1[:]
		}
		if err := rsa.VerifyPKCS1v15(&testRSA().PublicKey, h, dd, sig); err != nil {
			t.Fatalf("Sign's signature of %s does not verify by AWS's documented string: %v", r.Body, err)
		}
	}
}

func snsMalformedRuns(tb testing.TB) []malformedRun {
	s := mustNew(tb, NewSNS, Options{})
	key := testRSA()
	cert := testCert(tb, key)
	n := snsNotification()
	good := snsSignAs(tb, n, key, "2")
	goodBody := good.body()
	var cases []verifyCase
	add := func(name string, body []byte, want error) {
		cases = append(cases, verifyCase{name, snsRequest(body, cert), snsSecrets, want})
	}
	resigned := func(m snsTestMsg) []byte { return snsSignAs(tb, m, key, "2").body() }
	add("valid, SignatureVersion 2", goodBody, nil)
	add("valid, SignatureVersion 1", snsSignAs(tb, n, key, "1").body(), nil)
	add("valid, no Subject", resigned(n.with("Subject", "")), nil)
	add("valid, Subject null", replaceMember(tb, resigned(n.with("Subject", "")), `"Type"`, `"Subject":null,"Type"`), nil)
	add("valid SubscriptionConfirmation", resigned(snsConfirmation(SNSSubscriptionConfirmation)), nil)
	add("valid UnsubscribeConfirmation", resigned(snsConfirmation(SNSUnsubscribeConfirmation)), nil)
	add("valid, 59 minutes old", resigned(n.with("Timestamp", testNow.Add(-59*time.Minute).UTC().Format(time.RFC3339Nano))), nil)
	add("valid, 4 minutes ahead", resigned(n.with("Timestamp", testNow.Add(4*time.Minute).UTC().Format(time.RFC3339Nano))), nil)
	// What SNS does not sign may change (see the scheme's comment).
	add("unsigned UnsubscribeURL changed", good.with("UnsubscribeURL", "https://example.com/").body(), nil)
	add("unsigned MessageAttributes added", replaceMember(tb, goodBody, `"Type"`, `"MessageAttributes":{"a":{"Type":"String","Value":"b"}},"Type"`), nil)

	sig, _ := base64.StdEncoding.DecodeString(good["Signature"])
	for _, i := range []int{0, 1, 2, 64, 127, 128, 200, 254, 255} {
		add(fmt.Sprintf("signature byte %d flipped", i), good.with("Signature", base64.StdEncoding.EncodeToString(flipByte(sig, i))).body(), ErrNoMatch)
	}
	add("signature truncated", good.with("Signature", base64.StdEncoding.EncodeToString(sig[:255])).body(), ErrNoMatch)
	add("signature doubled", good.with("Signature", base64.StdEncoding.EncodeToString(append(bytes.Clone(sig), sig...))).body(), ErrNoMatch)
	add("signature 2 KB", good.with("Signature", base64.StdEncoding.EncodeToString(make([]byte, 2048))).body(), ErrMalformedHeader)
	add("signature URL-safe base64", good.with("Signature", base64.URLEncoding.EncodeToString(sig)).body(), errRejected)
	add("signature unpadded", good.with("Signature", base64.RawStdEncoding.EncodeToString(sig[:254])).body(), ErrMalformedHeader)
	add("signature hex", good.with("Signature", fmt.Sprintf("%x", sig)).body(), errRejected)
	add("signature with a space", good.with("Signature", " "+good["Signature"]).body(), ErrMalformedHeader)
	add("no Signature", good.with("Signature", "").body(), ErrNotSigned)
	add("Signature empty", replaceMember(tb, goodBody, `"Signature":"`+good["Signature"]+`"`, `"Signature":""`), ErrNotSigned)
	add("Signature a number", replaceMember(tb, goodBody, `"Signature":"`+good["Signature"]+`"`, `"Signature":1`), ErrMalformedHeader)
	add("Signature null", replaceMember(tb, goodBody, `"Signature":"`+good["Signature"]+`"`, `"Signature":null`), ErrMalformedHeader)
	add("SignatureVersion 1 on a version 2 signature", good.with("SignatureVersion", "1").body(), ErrNoMatch)
	add("SignatureVersion 2 on a version 1 signature", snsSignAs(tb, n, key, "1").with("SignatureVersion", "2").body(), ErrNoMatch)
	add("SignatureVersion 3", good.with("SignatureVersion", "3").body(), ErrMalformedHeader)
	add("SignatureVersion missing", good.with("SignatureVersion", "").body(), ErrMalformedHeader)
	add("SignatureVersion a number", replaceMember(tb, goodBody, `"SignatureVersion":"2"`, `"SignatureVersion":2`), ErrMalformedHeader)
	add("SignatureVersion \" 2\"", good.with("SignatureVersion", " 2").body(), ErrMalformedHeader)

	for _, c := range [][2]string{
		{"Message", `{"order":"ord_1","amount":1131}`},
		{"MessageId", "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf325"},
		{"Subject", "order created!"},
		{"Timestamp", testNow.Add(time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")},
		{"TopicArn", snsOtherTopic},
		{"Type", SNSUnsubscribeConfirmation},
	} {
		add("signed "+c[0]+" changed", good.with(c[0], c[1]).body(), errRejected)
	}
	add("Subject removed", good.with("Subject", "").body(), ErrNoMatch)
	add("Subject added", snsSignAs(tb, n.with("Subject", ""), key, "2").with("Subject", "x").body(), ErrNoMatch)
	add("Subject nulled", replaceMember(tb, goodBody, `"Subject":"order created"`, `"Subject":null`), ErrNoMatch)
	add("Message with a trailing newline", good.with("Message", good["Message"]+"\n").body(), ErrNoMatch)

	// A body another parser could read otherwise.
	add("Message twice", replaceMember(tb, goodBody, `"Type"`, `"Message":"evil","Type"`), ErrMalformedHeader)
	add("Message twice, same value", replaceMember(tb, goodBody, `"Type"`, `"Message":`+mustJSON(good["Message"])+`,"Type"`), ErrMalformedHeader)
	add("message beside Message", replaceMember(tb, goodBody, `"Type"`, `"message":"evil","Type"`), ErrMalformedHeader)
	add("MESSAGE beside Message", replaceMember(tb, goodBody, `"Type"`, `"MESSAGE":"evil","Type"`), ErrMalformedHeader)
	add("Meſſage (long s) beside Message", replaceMember(tb, goodBody, `"Type"`, `"Meſſage":"evil","Type"`), ErrMalformedHeader)
	add("escaped key repeating Message", replaceMember(tb, goodBody, `"Type"`, `"Messag\u0065":"evil","Type"`), ErrMalformedHeader)
	add("topicarn beside TopicArn", replaceMember(tb, goodBody, `"Type"`, `"topicarn":"x","Type"`), ErrMalformedHeader)
	add("signingcerturl beside SigningCertURL", replaceMember(tb, goodBody, `"Type"`, `"SigningCertUrl":"x","Type"`), ErrMalformedHeader)
	add("MessageAttributes a string", replaceMember(tb, goodBody, `"Type"`, `"MessageAttributes":"x","Type"`), ErrMalformedHeader)
	add("an unknown member", replaceMember(tb, goodBody, `"Type"`, `"Unknown":1,"Type"`), nil)
	add("Message a number", replaceMember(tb, goodBody, `"Message":`+mustJSON(good["Message"]), `"Message":1`), ErrMalformedHeader)
	add("Message an object", replaceMember(tb, goodBody, `"Message":`+mustJSON(good["Message"]), `"Message":{"order":"ord_1","amount":1130}`), ErrMalformedHeader)
	add("Message missing", good.with("Message", "").body(), ErrMalformedHeader)
	add("MessageId missing", good.with("MessageId", "").body(), ErrMalformedHeader)
	add("TopicArn missing", good.with("TopicArn", "").body(), ErrMalformedHeader)
	add("Timestamp missing", good.with("Timestamp", "").body(), ErrMalformedHeader)
	add("Type missing", good.with("Type", "").body(), ErrMalformedHeader)
	add("Type unknown", good.with("Type", "Notice").body(), ErrMalformedHeader)
	add("Type in lower case", good.with("Type", "notification").body(), ErrMalformedHeader)
	add("Token missing from a confirmation", snsSignAs(tb, snsConfirmation(SNSSubscriptionConfirmation), key, "2").with("Token", "").body(), ErrMalformedHeader)
	add("SubscribeURL missing from a confirmation", snsSignAs(tb, snsConfirmation(SNSSubscriptionConfirmation), key, "2").with("SubscribeURL", "").body(), ErrMalformedHeader)
	add("confirmation Token changed", snsSignAs(tb, snsConfirmation(SNSSubscriptionConfirmation), key, "2").with("Token", "x").body(), ErrNoMatch)
	add("confirmation SubscribeURL changed", snsSignAs(tb, snsConfirmation(SNSSubscriptionConfirmation), key, "2").with("SubscribeURL", snsSubscribe+"&x=1").body(), ErrNoMatch)
	add("a confirmation's signature on a notification", snsSignAs(tb, snsConfirmation(SNSSubscriptionConfirmation), key, "2").with("Type", "Notification").body(), ErrNoMatch)

	add("Timestamp two hours and a second old", resigned(n.with("Timestamp", testNow.Add(-2*time.Hour-time.Second).UTC().Format(time.RFC3339Nano))), ErrTooOld)
	add("valid, an hour and a minute old", resigned(n.with("Timestamp", testNow.Add(-61*time.Minute).UTC().Format(time.RFC3339Nano))), nil)
	add("Timestamp a day old", resigned(n.with("Timestamp", testNow.Add(-24*time.Hour).UTC().Format(time.RFC3339Nano))), ErrTooOld)
	add("Timestamp 6 minutes ahead", resigned(n.with("Timestamp", testNow.Add(6*time.Minute).UTC().Format(time.RFC3339Nano))), ErrTooNew)
	add("Timestamp unix seconds", resigned(n.with("Timestamp", testTS)), ErrMalformedHeader)
	add("Timestamp without a zone", resigned(n.with("Timestamp", "2024-07-26T00:40:00.000")), ErrMalformedHeader)
	add("Timestamp empty", replaceMember(tb, goodBody, `"Timestamp":"`+good["Timestamp"]+`"`, `"Timestamp":""`), ErrMalformedHeader)

	add("topic not one the endpoint accepts", resigned(n.with("TopicArn", "arn:aws:sns:us-east-1:999999999999:orders")), ErrNoMatch)
	add("topic of another partition", resigned(n.with("TopicArn", "arn:aws-iso:sns:us-iso-east-1:123456789012:orders")), errRejected)
	add("topic of an unknown partition", resigned(n.with("TopicArn", "arn:aws-xx:sns:us-east-1:123456789012:orders")), ErrUntrustedCertificate)
	add("topic in S3's region-less host", resigned(n.with("TopicArn", "arn:aws:sns:s3:1:t", "SigningCertURL", "https://sns.s3.amazonaws.com/SimpleNotificationService-x.pem")), ErrMalformedHeader)
	add("topic in s3-us-west-2", resigned(n.with("TopicArn", "arn:aws:sns:s3-us-west-2:1:t", "SigningCertURL", "https://sns.s3-us-west-2.amazonaws.com/SimpleNotificationService-x.pem")), ErrMalformedHeader)
	// A line break in a signed member other than Message would let two
	// messages share one signed string (see snsParse).
	resplit := snsSignAs(tb, n.with("Subject", "", "Message", "ok, user wrote:\nMessageId\nforged-1\nSubject\nhi"), key, "2")
	add("genuine Message with line breaks", resplit.body(), nil)
	add("re-split into MessageId and Subject", resplit.with("Message", "ok, user wrote:", "MessageId", "forged-1", "Subject", "hi\nMessageId\n"+resplit["MessageId"]).body(), ErrMalformedHeader)
	add("MessageId with a line break", resigned(n.with("MessageId", "a\nb")), ErrMalformedHeader)
	add("Subject with a line break", resigned(n.with("Subject", "a\nb")), ErrMalformedHeader)
	add("Subject with a tab", resigned(n.with("Subject", "a\tb")), ErrMalformedHeader)
	add("Token with a line break", resigned(snsConfirmation(SNSSubscriptionConfirmation).with("Token", "a\nb")), ErrMalformedHeader)
	add("topic not an ARN", resigned(n.with("TopicArn", "orders")), ErrMalformedHeader)
	add("topic of another service", resigned(n.with("TopicArn", "arn:aws:sqs:us-east-1:123456789012:orders")), ErrMalformedHeader)
	add("topic with an upper-case region", resigned(n.with("TopicArn", "arn:aws:sns:US-EAST-1:123456789012:orders")), ErrMalformedHeader)
	add("certificate of another region", resigned(n.with("SigningCertURL", strings.Replace(snsTestCertURL, "us-east-1", "eu-west-1", 1))), ErrUntrustedCertificate)
	add("certificate over http", resigned(n.with("SigningCertURL", strings.Replace(snsTestCertURL, "https:", "http:", 1))), ErrUntrustedCertificate)
	add("certificate from another host", resigned(n.with("SigningCertURL", "https://evil.example/SimpleNotificationService-1.pem")), ErrUntrustedCertificate)
	add("certificate under a suffix host", resigned(n.with("SigningCertURL", "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-1.pem")), ErrUntrustedCertificate)
	add("certificate at another path", resigned(n.with("SigningCertURL", "https://sns.us-east-1.amazonaws.com/other.pem")), ErrUntrustedCertificate)
	add("certificate path with a directory", resigned(n.with("SigningCertURL", "https://sns.us-east-1.amazonaws.com/x/SimpleNotificationService-1.pem")), ErrUntrustedCertificate)
	add("certificate URL with a query", resigned(n.with("SigningCertURL", snsTestCertURL+"?x=1")), ErrUntrustedCertificate)
	add("certificate URL with a port", resigned(n.with("SigningCertURL", strings.Replace(snsTestCertURL, ".com/", ".com:443/", 1))), ErrUntrustedCertificate)
	add("certificate URL missing", good.with("SigningCertURL", "").body(), ErrMalformedHeader)

	for name, body := range map[string]string{
		"empty body":        "",
		"not JSON":          "Type=Notification",
		"a JSON array":      `[` + string(goodBody) + `]`,
		"a JSON string":     `"x"`,
		"truncated":         string(goodBody[:len(goodBody)-1]),
		"trailing garbage":  string(goodBody) + "x",
		"two objects":       string(goodBody) + string(goodBody),
		"a byte-order mark": "\ufeff" + string(goodBody),
		"a raw message":     `{"order":"ord_1","amount":1130}`,
	} {
		add(name, []byte(body), errRejected)
	}
	cases = append(cases,
		verifyCase{"no certificate fetched", snsRequest(goodBody, nil), snsSecrets, ErrUntrustedCertificate},
		verifyCase{"another key's certificate", snsRequest(goodBody, testCert(tb, testRSAOther())), snsSecrets, ErrNoMatch},
		verifyCase{"expired certificate", snsRequest(goodBody, testCertificate(tb, key, testNow.Add(-48*time.Hour), testNow.Add(-time.Hour))), snsSecrets, ErrUntrustedCertificate},
		verifyCase{"a 1024-bit certificate", snsRequest(snsSignAs(tb, n, testRSAWeak(), "2").body(), testCert(tb, testRSAWeak())), snsSecrets, ErrUntrustedCertificate},
		verifyCase{"no topics configured", snsRequest(goodBody, cert), nil, ErrNoSecret},
		verifyCase{"only other topics configured", snsRequest(goodBody, cert), [][]byte{[]byte(snsOtherTopic)}, ErrNoMatch},
		verifyCase{"the topic in another case", snsRequest(goodBody, cert), [][]byte{[]byte(strings.ToUpper(snsTopic))}, ErrNoMatch},
	)
	return []malformedRun{{s, cases}}
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSNSVerifyMalformed(t *testing.T) { runMalformed(t, snsMalformedRuns(t)) }

func TestSNSTolerance(t *testing.T) {
	key := testRSA()
	cert := testCert(t, key)
	for _, tc := range []struct {
		tol  time.Duration
		age  time.Duration
		want error
	}{
		{0, 2 * time.Hour, nil},
		{0, 2*time.Hour + time.Millisecond, ErrTooOld},
		{10 * time.Minute, 10 * time.Minute, nil},
		{10 * time.Minute, 11 * time.Minute, ErrTooOld},
		{3 * time.Hour, 2 * time.Hour, nil},
		{3 * time.Hour, -5 * time.Minute, nil},
		{3 * time.Hour, -6 * time.Minute, ErrTooNew}, // the skew allowed ahead stays 5 minutes
	} {
		s := mustNew(t, NewSNS, Options{Tolerance: tc.tol})
		m := snsSignAs(t, snsNotification().with("Timestamp", testNow.Add(-tc.age).UTC().Format(time.RFC3339Nano)), key, "2")
		err := s.Verify(snsRequest(m.body(), cert), snsSecrets, testNow)
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("tolerance %s, age %s: %v, want %v", tc.tol, tc.age, err, tc.want)
		}
	}
}

func TestSNSCertificateURL(t *testing.T) {
	s := mustNew(t, NewSNS, Options{})
	for _, tc := range []struct {
		topic, url string
		want       error
	}{
		{snsTopic, snsTestCertURL, nil},
		{"arn:aws:sns:eu-central-1:1:t", "https://sns.eu-central-1.amazonaws.com/SimpleNotificationService-a_b-C.pem", nil},
		{"arn:aws-cn:sns:cn-north-1:1:t", "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem", nil},
		{"arn:aws-us-gov:sns:us-gov-west-1:1:t", "https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-1.pem", nil},
		{"arn:aws-cn:sns:cn-north-1:1:t", "https://sns.cn-north-1.amazonaws.com/SimpleNotificationService-1.pem", ErrUntrustedCertificate},
		{"arn:aws:sns:cn-north-1:1:t", "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-2.amazonaws.com/SimpleNotificationService-1.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1.pem.txt", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-1/x.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-%2e.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com/simplenotificationservice-1.pem", ErrUntrustedCertificate},
		{snsTopic, "https://s3.amazonaws.com/SimpleNotificationService-1.pem", ErrUntrustedCertificate},
		{snsTopic, "https://sns.us-east-1.amazonaws.com@evil.example/SimpleNotificationService-1.pem", ErrUntrustedCertificate},
		{"arn:aws:sns:us-east-1", snsTestCertURL, ErrMalformedHeader},
		{"arn:aws:sns:us_east_1:1:t", "https://sns.us_east_1.amazonaws.com/SimpleNotificationService-1.pem", ErrMalformedHeader},
		{"arn:aws:sns:s3:1:t", "https://sns.s3.amazonaws.com/SimpleNotificationService-1.pem", ErrMalformedHeader},
		{"arn:aws:sns:s3-external-1:1:t", "https://sns.s3-external-1.amazonaws.com/SimpleNotificationService-1.pem", ErrMalformedHeader},
		{"arn:aws:sns:ap-southeast-7:1:t", "https://sns.ap-southeast-7.amazonaws.com/SimpleNotificationService-1.pem", nil},
		{"arn:aws:sns:us-east-:1:t", "https://sns.us-east-.amazonaws.com/SimpleNotificationService-1.pem", ErrMalformedHeader},
		{"arn:aws:sns:usa-east-1:1:t", "https://sns.usa-east-1.amazonaws.com/SimpleNotificationService-1.pem", ErrMalformedHeader},
	} {
		m := snsNotification().with("TopicArn", tc.topic, "SigningCertURL", tc.url, "Signature", "AAAA", "SignatureVersion", "2")
		got, err := s.CertificateURL(snsRequest(m.body(), nil))
		switch {
		case tc.want == nil && (err != nil || got != tc.url):
			t.Errorf("%s, %s: %q, %v", tc.topic, tc.url, got, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s, %s: %q, %v, want %v", tc.topic, tc.url, got, err, tc.want)
		}
	}
	if _, err := s.CertificateURL(snsRequest([]byte(`{"order":1}`), nil)); !errors.Is(err, ErrNotSigned) {
		t.Errorf("a raw message: %v, want ErrNotSigned", err)
	}
}

func TestSNSConfirmation(t *testing.T) {
	s := mustNew(t, NewSNS, Options{})
	conf := snsConfirmation(SNSSubscriptionConfirmation)
	for _, tc := range []struct {
		name string
		m    snsTestMsg
		ok   bool
		err  error
	}{
		{"a SubscriptionConfirmation", conf, true, nil},
		{"a notification", snsNotification(), false, nil},
		{"an UnsubscribeConfirmation", snsConfirmation(SNSUnsubscribeConfirmation), false, nil},
		{"SubscribeURL of another host", conf.with("SubscribeURL", strings.Replace(snsSubscribe, "sns.us-east-1", "sns.us-east-2", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL over http", conf.with("SubscribeURL", strings.Replace(snsSubscribe, "https", "http", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL for another topic", conf.with("SubscribeURL", strings.Replace(snsSubscribe, ":orders&", ":other&", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL with another token", conf.with("SubscribeURL", strings.Replace(snsSubscribe, "Token=2", "Token=3", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL unsubscribing", conf.with("SubscribeURL", strings.Replace(snsSubscribe, "ConfirmSubscription", "Unsubscribe", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL at another path", conf.with("SubscribeURL", strings.Replace(snsSubscribe, "/?", "/x?", 1)), false, ErrUntrustedCertificate},
		{"SubscribeURL with a fragment", conf.with("SubscribeURL", snsSubscribe+"#x"), false, ErrUntrustedCertificate},
	} {
		m := snsSignAs(t, tc.m, testRSA(), "2")
		url, reply, ok, err := s.Confirmation(snsRequest(m.body(), nil))
		if ok != tc.ok || !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
			t.Errorf("%s: ok %v, %v; want %v, %v", tc.name, ok, err, tc.ok, tc.err)
		}
		if ok && (url != snsSubscribe || reply.Status != http.StatusOK) {
			t.Errorf("%s: %q, %+v", tc.name, url, reply)
		}
	}
}

// snsUnverified marks m signed for Identify, which does not verify.
func snsUnverified(m snsTestMsg) string {
	return string(m.with("Signature", "AAAA", "SignatureVersion", "2").body())
}

var snsIdentifyCases = []identifyCase{
	{"notification", snsUnverified(snsNotification()), Identity{ID: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", Type: "Notification", Created: testNow.UTC(), Attributes: map[string]string{"topic_arn": snsTopic}}},
	{"unsubscribe confirmation", snsUnverified(snsConfirmation(SNSUnsubscribeConfirmation)), Identity{ID: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b", Type: SNSUnsubscribeConfirmation, Created: testNow.UTC(), Attributes: map[string]string{"topic_arn": snsTopic}}},
	{"no MessageId", snsUnverified(snsNotification().with("MessageId", "")), Identity{}},
	{"MessageId too long", snsUnverified(snsNotification().with("MessageId", strings.Repeat("a", MaxIdentity+1))), Identity{}},
	{"Timestamp not RFC 3339", snsUnverified(snsNotification().with("Timestamp", "yesterday")), Identity{}},
	{"unsigned", string(snsNotification().body()), Identity{}},
	{"not an SNS message", `{"id":"1"}`, Identity{}},
	{"not JSON", `id=1`, Identity{}},
}

func TestSNSIdentify(t *testing.T) {
	runIdentifyCases(t, mustNew(t, NewSNS, Options{}), snsIdentifyCases, func(b []byte) Request { return snsRequest(b, nil) })
}

func FuzzSNSVerify(f *testing.F) {
	key := testRSA()
	f.Add(snsSignAs(f, snsNotification(), key, "2").body())
	f.Add(snsSignAs(f, snsConfirmation(SNSSubscriptionConfirmation), key, "1").body())
	f.Add([]byte(`{"Type":"Notification","Signature":"AAAA","SignatureVersion":"2","message":"x","Message":"y"}`))
	s := mustNew(f, NewSNS, Options{})
	cert := testCert(f, key)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := snsRequest(body, cert)
		u, uerr := s.CertificateURL(r)
		if !fuzzVerify(t, s, r, snsSecrets, testNow) {
			return
		}
		// Accepted: the body is an SNS message, AWS's string verifies and
		// the certificate URL is the one CertificateURL allowed.
		var m snsTestMsg
		if err := json.Unmarshal(body, &m); err != nil || uerr != nil || u != m["SigningCertURL"] {
			t.Fatalf("Verify(%q) accepted: %v, certificate URL %q (%v)", body, err, u, uerr)
		}
		if _, err := s.Identify(r); err != nil && !errors.Is(err, ErrInvalidPayload) {
			t.Fatalf("Identify(%q): %v", body, err)
		}
	})
}

func FuzzSNSIdentify(f *testing.F) {
	for _, tc := range snsIdentifyCases {
		f.Add([]byte(tc.body))
	}
	s := mustNew(f, NewSNS, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := snsRequest(body, nil)
		fuzzIdentifyValid(t, s, r)
		if _, _, ok, err := s.Confirmation(r); ok && err != nil {
			t.Fatalf("Confirmation(%q): ok with %v", body, err)
		}
		if u, err := s.CertificateURL(r); err == nil && !strings.HasPrefix(u, "https://sns.") {
			t.Fatalf("CertificateURL(%q) = %q", body, u)
		}
	})
}

// BenchmarkSNS compares the scheme, with its certificate as a warm cache
// holds it, with the RSA verification of AWS's string alone.
func BenchmarkSNS(b *testing.B) {
	key := testRSA()
	m := snsSignAs(b, snsNotification(), key, "2")
	r := snsRequest(m.body(), testCert(b, key))
	sig, _ := base64.StdEncoding.DecodeString(m["Signature"])
	signed := []byte(snsString(m))
	benchScheme(b, mustNew(b, NewSNS, Options{}), r, snsSecrets, testNow, "bare-rsa-sha256", func(b *testing.B) {
		d := sha256.Sum256(signed)
		if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, d[:], sig) != nil {
			b.Fatal("no match")
		}
	})
}

// snsVectorDir holds messages AWS signed (see its README.md).
const snsVectorDir = "testdata/vectors/sns/"

func mustCertificate(tb testing.TB, path string) *x509.Certificate {
	tb.Helper()
	block, _ := pem.Decode(mustReadFile(tb, path))
	if block == nil {
		tb.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestSNSWeakProviderVector: AWS signed with 1024-bit keys until about
// 2014; such a key is no longer trusted, whoever signed with it.
func TestSNSWeakProviderVector(t *testing.T) {
	body := mustReadFile(t, snsVectorDir+"aws-sdk-ruby/2012-subject.json")
	r := snsRequest(body, mustCertificate(t, snsVectorDir+"aws-sdk-ruby/2012-cert.pem"))
	at := time.Date(2012, 4, 30, 11, 8, 0, 0, time.UTC)
	err := mustNew(t, NewSNS, Options{}).Verify(r, [][]byte{[]byte("arn:aws:sns:eu-west-1:382739154790:for_justeat_aws_specs")}, at)
	if !errors.Is(err, ErrUntrustedCertificate) {
		t.Fatalf("Verify: %v, want ErrUntrustedCertificate (a 1024-bit key)", err)
	}
}

// TestSNSProviderVectors verifies messages AWS signed, with the
// certificates their URLs served, at the instant each was signed: the
// allow-list takes AWS's real URLs, and the string to sign, both hashes,
// a Subject, MessageAttributes and a \u escape in the Message are read as
// AWS wrote them. Any change to the message is then refused.
func TestSNSProviderVectors(t *testing.T) {
	s := mustNew(t, NewSNS, Options{})
	for _, v := range []struct{ msg, cert string }{
		{"aws-sdk-ruby/2022-sha1.json", "aws-sdk-ruby/2022-cert.pem"},
		{"aws-sdk-ruby/2022-sha256.json", "aws-sdk-ruby/2022-cert.pem"},
		{"aws-sns-verify/2015-attributes.json", "aws-sns-verify/2015-cert.pem"},
		{"aws-sns-verify/2019-notification.json", "aws-sns-verify/2019-cert.pem"},
		{"aws-sns-verify/2019-unicode.json", "aws-sns-verify/2019-cert.pem"},
	} {
		t.Run(v.msg, func(t *testing.T) {
			body := mustReadFile(t, snsVectorDir+v.msg)
			var m struct{ TopicArn, Timestamp, SigningCertURL, MessageId, Signature string }
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339Nano, m.Timestamp)
			if err != nil {
				t.Fatal(err)
			}
			r := snsRequest(body, mustCertificate(t, snsVectorDir+v.cert))
			if u, err := s.CertificateURL(r); err != nil || u != m.SigningCertURL {
				t.Fatalf("CertificateURL: %q, %v; want %q", u, err, m.SigningCertURL)
			}
			secrets := [][]byte{[]byte(m.TopicArn)}
			if err := s.Verify(r, secrets, at.Add(time.Minute)); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id, err := s.Identify(r); err != nil || id.ID != m.MessageId || !id.Created.Equal(at) {
				t.Fatalf("Identify: %+v, %v", id, err)
			}
			if err := s.Verify(r, [][]byte{[]byte(snsTopic)}, at); !errors.Is(err, ErrNoMatch) {
				t.Errorf("Verify for another topic: %v, want ErrNoMatch", err)
			}
			if err := s.Verify(r, secrets, at.Add(SNSDefaultTolerance+time.Second)); !errors.Is(err, ErrTooOld) {
				t.Errorf("Verify past the window: %v, want ErrTooOld", err)
			}
			// Every byte of the Message, MessageId and Timestamp values
			// changed in turn (or just one byte of a long value's each 16).
			for _, field := range []string{"MessageId", "Timestamp", "Message"} {
				start := bytes.Index(body, []byte(`"`+field+`"`))
				start += bytes.IndexByte(body[start+len(field)+2:], '"') + len(field) + 3
				end := start + bytes.IndexByte(body[start:], '"')
				for i := start; i < end; i += 1 + (end-start)/16 {
					c := bytes.Clone(body)
					if c[i] == '\\' {
						continue
					}
					c[i] ^= 1
					if c[i] == '"' || c[i] == '\\' || c[i] < ' ' {
						continue
					}
					if err := s.Verify(snsRequest(c, r.Certificate), secrets, at); err == nil {
						t.Fatalf("Verify accepted %s changed at byte %d", field, i)
					}
				}
			}
		})
	}
}

// TestSNSPrecheck: everything Verify checks but the signature, so that a
// message for another topic, or out of its window, is refused before its
// certificate is fetched; a message Precheck passes fails Verify only for
// its signature or certificate.
func TestSNSPrecheck(t *testing.T) {
	s := mustNew(t, NewSNS, Options{})
	good := snsSignAs(t, snsNotification(), testRSA(), "2")
	for _, tc := range []struct {
		name    string
		body    []byte
		secrets [][]byte
		want    error
	}{
		{"valid", good.body(), snsSecrets, nil},
		{"another topic", good.body(), [][]byte{[]byte(snsOtherTopic)}, ErrNoMatch},
		{"no topics", good.body(), nil, ErrNoSecret},
		{"too old", snsSignAs(t, snsNotification().with("Timestamp", testNow.Add(-3*time.Hour).UTC().Format(time.RFC3339Nano)), testRSA(), "2").body(), snsSecrets, ErrTooOld},
		{"untrusted URL", good.with("SigningCertURL", "https://evil.example/SimpleNotificationService-1.pem").body(), snsSecrets, ErrUntrustedCertificate},
		{"bad signature encoding", good.with("Signature", "!").body(), snsSecrets, ErrMalformedHeader},
		{"a bad signature still passes", good.with("Signature", base64.StdEncoding.EncodeToString(make([]byte, 256))).body(), snsSecrets, nil},
	} {
		err := s.Precheck(snsRequest(tc.body, nil), tc.secrets, testNow)
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
