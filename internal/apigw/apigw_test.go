package apigw

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// v2 returns an HTTP API event for POST /webhooks/stripe with body.
func v2(body string, isBase64 bool) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RawPath:        "/webhooks/stripe",
		PathParameters: map[string]string{"source": "stripe"},
		Headers: map[string]string{
			"content-type":     "application/json",
			"stripe-signature": "t=1,v1=abc",
			"x-forwarded-for":  "203.0.113.9, 10.0.0.1",
		},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:   "post",
				Path:     "/webhooks/stripe",
				SourceIP: "203.0.113.9",
			},
		},
		Body:            body,
		IsBase64Encoded: isBase64,
	}
}

func mustFromV2(tb testing.TB, e events.APIGatewayV2HTTPRequest, maxBody int) Request {
	tb.Helper()
	r, err := FromV2(e, maxBody)
	if err != nil {
		tb.Fatalf("FromV2: %v", err)
	}
	return r
}

func TestFromV2(t *testing.T) {
	e := v2(`{"id":"evt_1"}`, false)
	e.RawQueryString = "a=1&b=two&a=3&empty="
	r := mustFromV2(t, e, 1024)

	if r.Method != http.MethodPost {
		t.Errorf("Method: got %q, want %q", r.Method, http.MethodPost)
	}
	if r.Path != "/webhooks/stripe" {
		t.Errorf("Path: got %q, want %q", r.Path, "/webhooks/stripe")
	}
	if got := r.PathParams["source"]; got != "stripe" {
		t.Errorf("PathParams[source]: got %q, want %q", got, "stripe")
	}
	if r.RequestID != "req-1" || r.SourceIP != "203.0.113.9" {
		t.Errorf("RequestID, SourceIP: got %q, %q, want %q, %q", r.RequestID, r.SourceIP, "req-1", "203.0.113.9")
	}
	if string(r.Body) != `{"id":"evt_1"}` {
		t.Errorf("Body: got %q, want %q", r.Body, `{"id":"evt_1"}`)
	}
	wantQuery := url.Values{"a": {"1", "3"}, "b": {"two"}, "empty": {""}}
	if !reflect.DeepEqual(r.Query, wantQuery) {
		t.Errorf("Query: got %v, want %v", r.Query, wantQuery)
	}
}

func TestFromV2Headers(t *testing.T) {
	r := mustFromV2(t, v2("", false), 0)
	tests := []struct {
		name, want string
	}{
		{"Stripe-Signature", "t=1,v1=abc"},
		{"stripe-signature", "t=1,v1=abc"},
		{"STRIPE-SIGNATURE", "t=1,v1=abc"},
		{"Content-Type", "application/json"},
		// one comma-joined value, as HTTP APIs deliver repeated headers
		{"X-Forwarded-For", "203.0.113.9, 10.0.0.1"},
		{"X-Missing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Header.Get(tt.name); got != tt.want {
				t.Errorf("Header.Get(%q): got %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	if got := r.Header.Values("Stripe-Signature"); len(got) != 1 {
		t.Errorf("Header.Values(Stripe-Signature): got %q, want one value", got)
	}
	for name := range r.Header {
		if name != http.CanonicalHeaderKey(name) {
			t.Errorf("Header kept the non-canonical name %q", name)
		}
	}
}

func TestFromV2PathFallback(t *testing.T) {
	e := v2("", false)
	e.RawPath = ""
	e.RequestContext.HTTP.Path = "/webhooks/stripe/acct_1"
	if got := mustFromV2(t, e, 0).Path; got != "/webhooks/stripe/acct_1" {
		t.Errorf("got %q, want %q", got, "/webhooks/stripe/acct_1")
	}

	e.RawPath = "/raw"
	if got := mustFromV2(t, e, 0).Path; got != "/raw" {
		t.Errorf("with RawPath: got %q, want %q", got, "/raw")
	}
}

func TestFromV2NoQuery(t *testing.T) {
	if q := mustFromV2(t, v2("", false), 0).Query; len(q) != 0 {
		t.Errorf("got %v, want no query values", q)
	}
}

func TestFromV2Method(t *testing.T) {
	for _, m := range []string{"post", "Post", "POST"} {
		e := v2("", false)
		e.RequestContext.HTTP.Method = m
		if got := mustFromV2(t, e, 0).Method; got != "POST" {
			t.Errorf("method %q: got %q, want %q", m, got, "POST")
		}
	}
}

func TestFromV2Base64Binary(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	tests := []struct {
		name string
		body []byte
	}{
		{"every byte", all},
		{"every byte twice", append(bytes.Clone(all), all...)},
		{"one zero byte", []byte{0}},
		{"two bytes", []byte{0xff, 0x00}},
		{"invalid utf-8", []byte{0xc3, 0x28, 0xa0, 0xa1}},
		{"empty", []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustFromV2(t, v2(base64.StdEncoding.EncodeToString(tt.body), true), 1024)
			if !bytes.Equal(r.Body, tt.body) {
				t.Errorf("got % x, want % x", r.Body, tt.body)
			}
		})
	}
}

func TestFromV2BadEncoding(t *testing.T) {
	for _, body := range []string{"not base64!", "YWJj=", "YW=j", "Y", "{\"id\":1}", "YWJj\x00"} {
		t.Run(body, func(t *testing.T) {
			_, err := FromV2(v2(body, true), 1024)
			if !errors.Is(err, ErrBadEncoding) {
				t.Errorf("got %v, want ErrBadEncoding", err)
			}
		})
	}
}

func TestFromV2BodyLimit(t *testing.T) {
	for _, max := range []int{1, 2, 3, 4, 5, 6, 7, 100, 1000, 256 << 10} {
		for _, isBase64 := range []bool{false, true} {
			for _, n := range []int{0, max - 1, max, max + 1, max + 2, max + 3, 2 * max} {
				if n < 0 {
					continue
				}
				raw := bytes.Repeat([]byte{0xa7}, n)
				body := string(raw)
				if isBase64 {
					body = base64.StdEncoding.EncodeToString(raw)
				}
				r, err := FromV2(v2(body, isBase64), max)
				if n <= max {
					if err != nil {
						t.Errorf("max %d, base64 %t, %d bytes: got %v, want no error", max, isBase64, n, err)
					} else if !bytes.Equal(r.Body, raw) {
						t.Errorf("max %d, base64 %t, %d bytes: got %d body bytes, want the %d sent", max, isBase64, n, len(r.Body), n)
					}
					continue
				}
				if !errors.Is(err, ErrBodyTooLarge) {
					t.Errorf("max %d, base64 %t, %d bytes: got %v, want ErrBodyTooLarge", max, isBase64, n, err)
				}
			}
		}
	}
}

func TestFromV2NoLimit(t *testing.T) {
	raw := bytes.Repeat([]byte("x"), 1<<20)
	for _, max := range []int{0, -1, math.MaxInt} {
		for _, isBase64 := range []bool{false, true} {
			body := string(raw)
			if isBase64 {
				body = base64.StdEncoding.EncodeToString(raw)
			}
			r, err := FromV2(v2(body, isBase64), max)
			if err != nil {
				t.Errorf("max %d, base64 %t: got %v, want no error", max, isBase64, err)
				continue
			}
			if len(r.Body) != len(raw) {
				t.Errorf("max %d, base64 %t: got %d bytes, want %d", max, isBase64, len(r.Body), len(raw))
			}
		}
	}
}

func TestResponseV2(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want map[string]string
	}{
		{"default content type", Response{Status: 202, Body: `{"ok":true}`}, map[string]string{"content-type": "application/json"}},
		{"overridden content type", Response{Status: 200, Header: map[string]string{"Content-Type": "text/plain"}}, map[string]string{"content-type": "text/plain"}},
		{"lowercased names", Response{Status: 429, Header: map[string]string{"Retry-After": "1", "X-Request-ID": "req-1"}}, map[string]string{"content-type": "application/json", "retry-after": "1", "x-request-id": "req-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.resp.V2()
			if got.StatusCode != tt.resp.Status {
				t.Errorf("StatusCode: got %d, want %d", got.StatusCode, tt.resp.Status)
			}
			if got.Body != tt.resp.Body {
				t.Errorf("Body: got %q, want %q", got.Body, tt.resp.Body)
			}
			if !reflect.DeepEqual(got.Headers, tt.want) {
				t.Errorf("Headers: got %v, want %v", got.Headers, tt.want)
			}
			if got.IsBase64Encoded {
				t.Errorf("IsBase64Encoded: got true, want false")
			}
		})
	}
}

func FuzzFromV2(f *testing.F) {
	f.Add(`{"id":"evt_1"}`, false, "stripe-signature", 1024)
	f.Add(base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), true, "content-type", 4)
	f.Add("YWJj", true, "X-A", 2)
	f.Add("YWJjZA==", true, "", 3)
	f.Add("not base64", true, "a b", 0)
	f.Add("abc", false, "x", -1)
	f.Add("YWJj", true, "x", math.MaxInt)
	f.Fuzz(func(t *testing.T, body string, isBase64 bool, header string, max int) {
		e := v2(body, isBase64)
		e.Headers = map[string]string{header: header}
		r, err := FromV2(e, max)

		var decoded []byte
		decodeErr := error(nil)
		if isBase64 {
			decoded, decodeErr = base64.StdEncoding.DecodeString(body)
		} else {
			decoded = []byte(body)
		}
		fits := max <= 0 || len(decoded) <= max

		if err != nil {
			if !errors.Is(err, ErrBodyTooLarge) && !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("got %v, want ErrBodyTooLarge or ErrBadEncoding", err)
			}
			// A valid body within the limit is refused only when base64 line
			// breaks inflate its encoded length.
			if decodeErr == nil && fits && !strings.ContainsAny(body, "\r\n") {
				t.Fatalf("body of %d bytes, max %d, base64 %t: got %v, want no error", len(decoded), max, isBase64, err)
			}
			return
		}
		if max > 0 && len(r.Body) > max {
			t.Fatalf("got %d body bytes, want at most %d", len(r.Body), max)
		}
		if decodeErr != nil {
			t.Fatalf("accepted a body base64 rejects: %v", decodeErr)
		}
		if !bytes.Equal(r.Body, decoded) {
			t.Fatalf("Body: got %q, want %q", r.Body, decoded)
		}
		if !isBase64 && string(r.Body) != body {
			t.Fatalf("Body: got %q, want %q", r.Body, body)
		}
		if got := r.Header.Get(header); got != header {
			t.Fatalf("Header.Get(%q): got %q, want %q", header, got, header)
		}
	})
}

func TestFromV1(t *testing.T) {
	e := events.APIGatewayProxyRequest{
		HTTPMethod:     "post",
		Path:           "/webhooks/github",
		PathParameters: map[string]string{"source": "github"},
		Headers:        map[string]string{"x-github-event": "push", "X-Hub-Signature-256": "ignored: multi-value wins"},
		MultiValueHeaders: map[string][]string{
			"x-hub-signature-256": {"sha256=aa"},
			"X-Dup":               {"a", "b"},
		},
		MultiValueQueryStringParameters: map[string][]string{"b": {"2"}, "a": {"1", "x y"}},
		Body:                            base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255}),
		IsBase64Encoded:                 true,
	}
	r, err := FromV1(e, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != "POST" || r.PathParams["source"] != "github" {
		t.Errorf("method/params: got %s %v", r.Method, r.PathParams)
	}
	if got := r.Header.Values("X-Hub-Signature-256"); len(got) != 1 || got[0] != "sha256=aa" {
		t.Errorf("signature header: got %q, want the multi-value entry only", got)
	}
	if got := r.Header.Get("X-Github-Event"); got != "push" {
		t.Errorf("single-value header: got %q, want push", got)
	}
	if got := r.Header.Values("X-Dup"); len(got) != 2 {
		t.Errorf("repeated header: got %q, want two values", got)
	}
	if r.RawQuery != "a=1&a=x+y&b=2" {
		t.Errorf("raw query: got %q", r.RawQuery)
	}
	if string(r.Body) != "\x00\x01\x02\xff" {
		t.Errorf("body: got %q", r.Body)
	}
	e.Body = "%%"
	if _, err := FromV1(e, 100); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("bad base64: got %v, want ErrBadEncoding", err)
	}
	e.Body, e.IsBase64Encoded = strings.Repeat("x", 101), false
	if _, err := FromV1(e, 100); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("too large: got %v, want ErrBodyTooLarge", err)
	}
	if got := (Response{Status: 401, Body: "{}"}).V1(); got.StatusCode != 401 || got.Headers["content-type"] != "application/json" {
		t.Errorf("V1 response: got %+v", got)
	}
}

func TestFromV2HeaderCaseTwice(t *testing.T) {
	e := v2("{}", false)
	e.Headers = map[string]string{"stripe-signature": "t=1,v1=aa", "Stripe-Signature": "t=1,v1=bb"}
	for range 20 {
		r, err := FromV2(e, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Values("Stripe-Signature"); !reflect.DeepEqual(got, []string{"t=1,v1=aa", "t=1,v1=bb"}) {
			t.Fatalf("got %q, want both values in order", got)
		}
	}
}

// FuzzFromV1 checks the REST API normalizer: no panic; the body as the
// base64 decoder or the raw string gives it; every multi-value header kept
// value by value under its canonical name, a single-value header used only
// where no multi-value one names the same header; and a RawQuery that
// parses back to the query parameters.
func FuzzFromV1(f *testing.F) {
	f.Add("eyJpZCI6MX0=", true, "X-Hub-Signature-256", "sha256=aa", "x-hub-signature-256", "ignored", "a", "1 2", 0)
	f.Add(`{"id":"evt_1"}`, false, "stripe-signature", "t=1,v1=ab", "Content-Type", "application/json", "", "", 1024)
	f.Add("not base64", true, "a b", "c", "a b", "d", "k&=", "v;%", 3)
	f.Fuzz(func(t *testing.T, body string, isBase64 bool, mk, mv, sk, sv, qk, qv string, max int) {
		e := events.APIGatewayProxyRequest{
			HTTPMethod:        "post",
			Path:              "/webhooks/x",
			Body:              body,
			IsBase64Encoded:   isBase64,
			MultiValueHeaders: map[string][]string{mk: {mv, mv + "2"}},
			Headers:           map[string]string{sk: sv},
		}
		if qk != "" {
			e.MultiValueQueryStringParameters = map[string][]string{qk: {qv, ""}}
		}
		r, err := FromV1(e, max)
		if err != nil {
			if !errors.Is(err, ErrBodyTooLarge) && !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("got %v, want ErrBodyTooLarge or ErrBadEncoding", err)
			}
			return
		}
		want := []byte(body)
		if isBase64 {
			d, derr := base64.StdEncoding.DecodeString(body)
			if derr != nil {
				t.Fatalf("accepted a body base64 rejects: %v", derr)
			}
			want = d
		}
		if !bytes.Equal(r.Body, want) || max > 0 && len(r.Body) > max {
			t.Fatalf("Body: got %q, want %q (max %d)", r.Body, want, max)
		}
		got := r.Header.Values(mk)
		if len(got) < 2 || got[0] != mv || got[1] != mv+"2" {
			t.Fatalf("multi-value header %q: got %q", mk, got)
		}
		if http.CanonicalHeaderKey(sk) != http.CanonicalHeaderKey(mk) && r.Header.Get(sk) != sv {
			t.Fatalf("single-value header %q: got %q, want %q", sk, r.Header.Get(sk), sv)
		}
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil {
			t.Fatalf("RawQuery %q does not parse: %v", r.RawQuery, err)
		}
		if qk != "" && !reflect.DeepEqual(q[qk], []string{qv, ""}) {
			t.Fatalf("RawQuery %q gives %q for %q, want %q", r.RawQuery, q[qk], qk, []string{qv, ""})
		}
	})
}
