package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// capture is an IngestFunc that records every event and answers with resp
// and err.
type capture struct {
	mu     sync.Mutex
	events []events.APIGatewayV2HTTPRequest
	lambda []string // lambdacontext request ids seen
	resp   events.APIGatewayV2HTTPResponse
	err    error
	panic  any
}

func (c *capture) handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		c.lambda = append(c.lambda, lc.AwsRequestID)
	}
	if c.panic != nil {
		panic(c.panic)
	}
	return c.resp, c.err
}

func (c *capture) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// only returns the single event the handler received.
func (c *capture) only(tb testing.TB) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) != 1 {
		tb.Fatalf("handler called %d times, want 1", len(c.events))
	}
	return c.events[0]
}

func startAPI(tb testing.TB, h IngestFunc, opts APIOptions) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(NewAPI(h, opts))
	tb.Cleanup(srv.Close)
	return srv
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func mustDo(tb testing.TB, req *http.Request) result {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read response: %v", err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: body}
}

func mustRequest(tb testing.TB, method, url string, body io.Reader) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	return req
}

// eventBody returns the raw bytes an event carries, decoding base64.
func eventBody(tb testing.TB, ev events.APIGatewayV2HTTPRequest) []byte {
	tb.Helper()
	if !ev.IsBase64Encoded {
		return []byte(ev.Body)
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		tb.Fatalf("event body is not base64: %v", err)
	}
	return b
}

func TestAPIRoutes(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		path      string
		wantRoute string
		wantPath  map[string]string
	}{
		{"source", "POST", "/webhooks/stripe", "POST /webhooks/{source}", map[string]string{"source": "stripe"}},
		{"source and account", "POST", "/webhooks/shopify/acme", "POST /webhooks/{source}/{account}", map[string]string{"source": "shopify", "account": "acme"}},
		{"escaped account", "POST", "/webhooks/shopify/acme%20shop%C3%A9", "POST /webhooks/{source}/{account}", map[string]string{"source": "shopify", "account": "acme shopé"}},
		{"escaped slash stays in account", "POST", "/webhooks/generic/a%2Fb", "POST /webhooks/{source}/{account}", map[string]string{"source": "generic", "account": "a/b"}},
		{"GET goes to the ANY route", "GET", "/webhooks/stripe", "ANY /webhooks/{source}", map[string]string{"source": "stripe"}},
		{"PUT with account goes to the ANY route", "PUT", "/webhooks/stripe/acct", "ANY /webhooks/{source}/{account}", map[string]string{"source": "stripe", "account": "acct"}},
		{"not found: root", "POST", "/", "", nil},
		{"not found: no source", "POST", "/webhooks", "", nil},
		{"not found: empty source", "POST", "/webhooks/", "", nil},
		{"not found: trailing slash", "POST", "/webhooks/stripe/", "", nil},
		{"not found: empty segment", "POST", "/webhooks//acct", "", nil},
		{"not found: too deep", "POST", "/webhooks/a/b/c", "", nil},
		{"not found: other prefix", "POST", "/webhooksx/a", "", nil},
		{"not found: case differs", "POST", "/Webhooks/stripe", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: 204}}
			srv := startAPI(t, c.handle, APIOptions{})
			got := mustDo(t, mustRequest(t, tt.method, srv.URL+tt.path, nil))
			if tt.wantRoute == "" {
				if got.status != http.StatusNotFound || string(got.body) != `{"error":"not found"}` {
					t.Errorf("got %d %s, want 404 {\"error\":\"not found\"}", got.status, got.body)
				}
				if ct := got.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if n := c.calls(); n != 0 {
					t.Errorf("handler called %d times, want 0", n)
				}
				return
			}
			if got.status != 204 {
				t.Fatalf("status = %d, want 204", got.status)
			}
			ev := c.only(t)
			if ev.RouteKey != tt.wantRoute || ev.RequestContext.RouteKey != tt.wantRoute {
				t.Errorf("route keys = %q, %q, want %q", ev.RouteKey, ev.RequestContext.RouteKey, tt.wantRoute)
			}
			if !maps.Equal(ev.PathParameters, tt.wantPath) {
				t.Errorf("path parameters = %v, want %v", ev.PathParameters, tt.wantPath)
			}
			if ev.RawPath != tt.path {
				t.Errorf("rawPath = %q, want %q", ev.RawPath, tt.path)
			}
			if ev.RequestContext.HTTP.Method != tt.method {
				t.Errorf("http.method = %q, want %q", ev.RequestContext.HTTP.Method, tt.method)
			}
		})
	}
}

func TestAPIEventFields(t *testing.T) {
	c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: 202}}
	srv := startAPI(t, c.handle, APIOptions{})

	req := mustRequest(t, "POST", srv.URL+"/webhooks/github?a=1&b=x%20y&a=2&empty", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/abc")
	req.Header["X-GitHub-Delivery"] = []string{"d-1"}
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Add("Cookie", "a=1; b=2")
	req.Header.Add("Cookie", "c=3")
	before := time.Now()
	got := mustDo(t, req)
	after := time.Now()
	if got.status != 202 {
		t.Fatalf("status = %d, want 202", got.status)
	}
	ev := c.only(t)

	if ev.Version != "2.0" {
		t.Errorf("version = %q, want 2.0", ev.Version)
	}
	for name := range ev.Headers {
		if name != strings.ToLower(name) {
			t.Errorf("header name %q is not lowercase", name)
		}
	}
	wantHeaders := map[string]string{
		"x-github-delivery": "d-1",
		"x-multi":           "one,two",
		"content-type":      "application/json",
		"user-agent":        "GitHub-Hookshot/abc",
		"host":              strings.TrimPrefix(srv.URL, "http://"),
		"x-forwarded-for":   "127.0.0.1",
		"x-forwarded-proto": "http",
		"content-length":    "2",
	}
	for k, want := range wantHeaders {
		if got := ev.Headers[k]; got != want {
			t.Errorf("headers[%q] = %q, want %q", k, got, want)
		}
	}
	if v, ok := ev.Headers["cookie"]; ok {
		t.Errorf("headers[cookie] = %q, want no cookie header", v)
	}
	if want := []string{"a=1", "b=2", "c=3"}; !slices.Equal(ev.Cookies, want) {
		t.Errorf("cookies = %q, want %q", ev.Cookies, want)
	}
	if want := "a=1&b=x%20y&a=2&empty"; ev.RawQueryString != want {
		t.Errorf("rawQueryString = %q, want %q", ev.RawQueryString, want)
	}
	if want := map[string]string{"a": "1,2", "b": "x y", "empty": ""}; !maps.Equal(ev.QueryStringParameters, want) {
		t.Errorf("queryStringParameters = %v, want %v", ev.QueryStringParameters, want)
	}

	rc := ev.RequestContext
	if rc.AccountID != "000000000000" || rc.APIID != "local" || rc.Stage != "$default" {
		t.Errorf("accountId, apiId, stage = %q, %q, %q, want 000000000000, local, $default", rc.AccountID, rc.APIID, rc.Stage)
	}
	if rc.DomainName != "127.0.0.1" || rc.DomainPrefix != "127" {
		t.Errorf("domainName, domainPrefix = %q, %q, want 127.0.0.1, 127", rc.DomainName, rc.DomainPrefix)
	}
	if rc.RequestID == "" || rc.RequestID != got.header.Get("Apigw-Requestid") {
		t.Errorf("requestId = %q, response Apigw-Requestid = %q, want equal and non-empty", rc.RequestID, got.header.Get("Apigw-Requestid"))
	}
	want := events.APIGatewayV2HTTPRequestContextHTTPDescription{
		Method: "POST", Path: "/webhooks/github", Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "GitHub-Hookshot/abc",
	}
	if rc.HTTP != want {
		t.Errorf("http = %+v, want %+v", rc.HTTP, want)
	}
	tm, err := time.Parse("02/Jan/2006:15:04:05 -0700", rc.Time)
	if err != nil {
		t.Errorf("time %q: %v", rc.Time, err)
	}
	epoch := time.UnixMilli(rc.TimeEpoch)
	if epoch.Before(before.Truncate(time.Millisecond)) || epoch.After(after) {
		t.Errorf("timeEpoch = %v, want between %v and %v", epoch, before, after)
	}
	if !tm.Equal(epoch.Truncate(time.Second)) {
		t.Errorf("time = %v, want timeEpoch %v to the second", tm, epoch)
	}
	if len(c.lambda) != 1 || c.lambda[0] == "" {
		t.Errorf("lambdacontext request ids = %q, want one", c.lambda)
	}
}

func TestAPIEventWithoutQueryOrCookies(t *testing.T) {
	c := &capture{}
	srv := startAPI(t, c.handle, APIOptions{})
	mustDo(t, mustRequest(t, "POST", srv.URL+"/webhooks/stripe", nil))
	mustDo(t, mustRequest(t, "POST", srv.URL+"/webhooks/stripe", nil))

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) != 2 {
		t.Fatalf("handler called %d times, want 2", len(c.events))
	}
	ev := c.events[0]
	if ev.QueryStringParameters != nil || ev.RawQueryString != "" {
		t.Errorf("query = %v %q, want nil and empty", ev.QueryStringParameters, ev.RawQueryString)
	}
	if ev.Cookies != nil {
		t.Errorf("cookies = %q, want nil", ev.Cookies)
	}
	if ev.Body != "" || ev.IsBase64Encoded {
		t.Errorf("body = %q (base64 %v), want empty text", ev.Body, ev.IsBase64Encoded)
	}
	if a, b := ev.RequestContext.RequestID, c.events[1].RequestContext.RequestID; a == b {
		t.Errorf("request ids = %q and %q, want distinct", a, b)
	}
}

func TestAPIBodyEncoding(t *testing.T) {
	jsonBody := "{ \"id\": \"evt_1\",\n\t\"amount\": 1.50,  \"é\": \"\\u00e9\" }\n"
	tests := []struct {
		name        string
		contentType string // "" sends no Content-Type header
		body        string
		wantBase64  bool
	}{
		{"json verbatim", "application/json", jsonBody, false},
		{"json with charset", "application/json; charset=utf-8", jsonBody, false},
		{"json suffix type", "application/vnd.api+json", jsonBody, false},
		{"xml", "application/xml", "<a> b </a>", false},
		{"text", "text/plain", "hello\r\n", false},
		{"form", "application/x-www-form-urlencoded", "payload=%7B%22a%22%3A1%7D&token=a+b", true},
		{"multipart", "multipart/form-data; boundary=x", "--x\r\n\r\nv\r\n--x--", true},
		{"octet-stream", "application/octet-stream", "\x00\xff\xfe binary", true},
		{"no content type", "", `{"id":"evt_1"}`, true},
		{"empty body", "application/octet-stream", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture{}
			srv := startAPI(t, c.handle, APIOptions{})
			req := mustRequest(t, "POST", srv.URL+"/webhooks/slack", strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			mustDo(t, req)
			ev := c.only(t)
			if ev.IsBase64Encoded != tt.wantBase64 {
				t.Errorf("isBase64Encoded = %v, want %v", ev.IsBase64Encoded, tt.wantBase64)
			}
			if got := eventBody(t, ev); !bytes.Equal(got, []byte(tt.body)) {
				t.Errorf("decoded body = %q, want %q", got, tt.body)
			}
			if !tt.wantBase64 && ev.Body != tt.body {
				t.Errorf("body = %q, want verbatim %q", ev.Body, tt.body)
			}
		})
	}
}

func TestBodyIsText(t *testing.T) {
	tests := []struct {
		contentType string
		want        bool
	}{
		{"application/json", true},
		{"Application/JSON; charset=UTF-8", true},
		{"application/cloudevents+json", true},
		{"application/xml", true},
		{"application/atom+xml", true},
		{"application/javascript", true},
		{"application/x-javascript", true},
		{"text/plain", true},
		{"text/xml; charset=utf-8", true},
		{"TEXT/HTML", true},
		{"application/json; charset", true}, // malformed parameter, type still readable
		{"", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=abc", false},
		{"application/octet-stream", false},
		{"image/png", false},
		{"application/jsonx", false},
		{"application/json-patch", false},
		{"application/+json", true},
		{"json", false},
		{"text/", false},
		{"/json", false},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			if got := BodyIsText(tt.contentType); got != tt.want {
				t.Errorf("BodyIsText(%q) = %v, want %v", tt.contentType, got, tt.want)
			}
		})
	}
}

func TestAPIRequestTooLarge(t *testing.T) {
	const limit = 16
	const (
		gateway  = `{"message":"Request Entity Too Large"}`
		contract = `{"error":"body too large"}`
	)
	tests := []struct {
		name     string
		opts     APIOptions
		size     int
		chunked  bool
		want     int
		wantBody string
	}{
		{"at the gateway's quota", APIOptions{MaxRequestBytes: limit}, limit, false, http.StatusOK, ""},
		{"over the gateway's quota", APIOptions{MaxRequestBytes: limit}, limit + 1, false, http.StatusRequestEntityTooLarge, gateway},
		{"chunked at the gateway's quota", APIOptions{MaxRequestBytes: limit}, limit, true, http.StatusOK, ""},
		{"chunked over the gateway's quota", APIOptions{MaxRequestBytes: limit}, limit + 1, true, http.StatusRequestEntityTooLarge, gateway},
		{"at the function's limit", APIOptions{MaxBodyBytes: limit}, limit, false, http.StatusOK, ""},
		{"over the function's limit", APIOptions{MaxBodyBytes: limit}, limit + 1, false, http.StatusRequestEntityTooLarge, contract},
		{"chunked over the function's limit", APIOptions{MaxBodyBytes: limit}, limit + 1, true, http.StatusRequestEntityTooLarge, contract},
		{"over both: the gateway answers", APIOptions{MaxRequestBytes: limit, MaxBodyBytes: limit / 2}, limit + 1, false, http.StatusRequestEntityTooLarge, gateway},
		{"over the function's limit only", APIOptions{MaxRequestBytes: limit, MaxBodyBytes: limit / 2}, limit, true, http.StatusRequestEntityTooLarge, contract},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture{}
			srv := startAPI(t, c.handle, tt.opts)
			var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), tt.size))
			if tt.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req := mustRequest(t, "POST", srv.URL+"/webhooks/stripe", body)
			req.Header.Set("Content-Type", "text/plain")
			got := mustDo(t, req)
			if got.status != tt.want {
				t.Fatalf("status = %d, want %d", got.status, tt.want)
			}
			if tt.want == http.StatusRequestEntityTooLarge {
				if string(got.body) != tt.wantBody {
					t.Errorf("body = %s, want %s", got.body, tt.wantBody)
				}
				if ct := got.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if n := c.calls(); n != 0 {
					t.Errorf("handler called %d times, want 0", n)
				}
				return
			}
			if got := len(c.only(t).Body); got != tt.size {
				t.Errorf("event body length = %d, want %d", got, tt.size)
			}
		})
	}
}

// startServer serves NewAPI(h, opts) with NewServer(t) on a loopback port
// and returns its address.
func startServer(tb testing.TB, h IngestFunc, opts APIOptions, timeouts ServerTimeouts) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := NewServer(NewAPI(h, opts), timeouts)
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// rawConn dials addr and writes raw; every read on it gives up after
// waitBound, only a guard against hanging.
func rawConn(tb testing.TB, addr, raw string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetReadDeadline(time.Now().Add(waitBound)); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		tb.Fatalf("write: %v", err)
	}
	return conn
}

func TestAPIDeclaredTooLargeIsRefusedUnread(t *testing.T) {
	tests := []struct {
		name     string
		opts     APIOptions
		declared int
		wantBody string
	}{
		{"over the function's limit", APIOptions{MaxBodyBytes: 16}, 17, `{"error":"body too large"}`},
		{"over the gateway's quota", APIOptions{}, DefaultMaxRequestBytes + 1, `{"message":"Request Entity Too Large"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture{}
			addr := startServer(t, c.handle, tt.opts, ServerTimeouts{})
			// Headers only: the answer must come without the body.
			conn := rawConn(t, addr, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(tt.declared)+"\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read response: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != tt.wantBody {
				t.Errorf("got %d %s, want 413 %s", resp.StatusCode, body, tt.wantBody)
			}
			if n := c.calls(); n != 0 {
				t.Errorf("handler called %d times, want 0", n)
			}
		})
	}
}

func TestServerCutsOffStalledClients(t *testing.T) {
	const short = 200 * time.Millisecond
	tests := []struct {
		name      string
		raw       string
		wantCalls int
		// wantStatus is the response before the server closes; 0 for none
		// expected.
		wantStatus int
	}{
		{"body shorter than its Content-Length", "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789", 0, http.StatusBadRequest},
		{"headers never finished", "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\n", 0, 0},
		{"idle kept-alive connection", "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 1, http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNoContent}}
			addr := startServer(t, c.handle, APIOptions{}, ServerTimeouts{ReadHeader: short, Read: short, Idle: short})
			conn := rawConn(t, addr, tt.raw)
			// The client never sends more: the server must close the
			// connection, and ReadAll sees EOF instead of the guard's timeout.
			got, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("connection still open (read: %v) after %q", err, got)
			}
			if tt.wantStatus != 0 {
				resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
				if err != nil {
					t.Fatalf("response %q: %v", got, err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
				}
			}
			if n := c.calls(); n != tt.wantCalls {
				t.Errorf("handler called %d times, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestNewServerTimeouts(t *testing.T) {
	tests := []struct {
		name string
		in   ServerTimeouts
		want ServerTimeouts
	}{
		{"defaults", ServerTimeouts{}, ServerTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 65 * time.Second, Idle: 60 * time.Second}},
		{"given", ServerTimeouts{ReadHeader: 1, Read: 2, Write: 3, Idle: 4}, ServerTimeouts{ReadHeader: 1, Read: 2, Write: 3, Idle: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(http.NotFoundHandler(), tt.in)
			got := ServerTimeouts{ReadHeader: srv.ReadHeaderTimeout, Read: srv.ReadTimeout, Write: srv.WriteTimeout, Idle: srv.IdleTimeout}
			if got != tt.want {
				t.Errorf("timeouts = %+v, want %+v", got, tt.want)
			}
		})
	}
	if DefaultWriteTimeout <= DefaultReadTimeout+DefaultIntegrationTimeout {
		t.Errorf("DefaultWriteTimeout %s leaves no room to answer an integration timeout after a %s read", DefaultWriteTimeout, DefaultReadTimeout)
	}
}

func TestAPIInvocationTimeouts(t *testing.T) {
	const short = 50 * time.Millisecond
	tests := []struct {
		name       string
		opts       APIOptions
		wantStatus int
		wantBody   string
		// wantCtxErr is the handler's context error once it is released:
		// only its own deadline ends it, never the API giving up on it.
		wantCtxErr error
	}{
		{"function timeout", APIOptions{FunctionTimeout: short}, 500, `{"message":"Internal Server Error"}`, context.DeadlineExceeded},
		{"integration timeout", APIOptions{IntegrationTimeout: short}, 503, `{"message":"Service Unavailable"}`, nil},
		{"integration timeout before the function's", APIOptions{FunctionTimeout: time.Hour, IntegrationTimeout: short}, 503, `{"message":"Service Unavailable"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			ctxErr := make(chan error, 1)
			h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				select {
				case <-ctx.Done():
					<-release
				case <-release:
				}
				ctxErr <- ctx.Err()
				return events.APIGatewayV2HTTPResponse{StatusCode: 202}, nil // too late to be sent
			}
			var logs syncBuffer
			tt.opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			srv := startAPI(t, h, tt.opts)
			got := mustDo(t, mustRequest(t, "POST", srv.URL+"/webhooks/stripe", nil))
			close(release)
			if got.status != tt.wantStatus || string(got.body) != tt.wantBody {
				t.Errorf("got %d %s, want %d %s", got.status, got.body, tt.wantStatus, tt.wantBody)
			}
			if err := <-ctxErr; !errors.Is(err, tt.wantCtxErr) {
				t.Errorf("handler's context error = %v, want %v", err, tt.wantCtxErr)
			}
			if out := logs.String(); !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, "timed out after 50ms") {
				t.Errorf("log = %s, want an ERROR line saying what timed out", out)
			}
		})
	}
}

func TestAPIFunctionDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		want    bool
	}{
		{"FunctionTimeout ahead of the invocation", 7 * time.Minute, true},
		{"none without a FunctionTimeout", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				deadline time.Time
				ok       bool
			)
			h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				deadline, ok = ctx.Deadline()
				return events.APIGatewayV2HTTPResponse{StatusCode: 204}, nil
			}
			srv := startAPI(t, h, APIOptions{FunctionTimeout: tt.timeout})
			before := time.Now()
			got := mustDo(t, mustRequest(t, "POST", srv.URL+"/webhooks/stripe", nil))
			after := time.Now()
			if got.status != 204 {
				t.Fatalf("status = %d, want 204", got.status)
			}
			if ok != tt.want {
				t.Fatalf("handler context has a deadline = %v, want %v", ok, tt.want)
			}
			if ok && (deadline.Before(before.Add(tt.timeout)) || deadline.After(after.Add(tt.timeout))) {
				t.Errorf("deadline = %v, want %s after the request, between %v and %v", deadline, tt.timeout, before.Add(tt.timeout), after.Add(tt.timeout))
			}
		})
	}
}

func TestAPIResponse(t *testing.T) {
	internal := `{"message":"Internal Server Error"}`
	tests := []struct {
		name        string
		resp        events.APIGatewayV2HTTPResponse
		err         error
		panic       any
		wantStatus  int
		wantBody    string
		wantHeaders map[string][]string
	}{
		{
			name: "status, headers and body",
			resp: events.APIGatewayV2HTTPResponse{
				StatusCode: 202,
				Headers:    map[string]string{"Content-Type": "application/json", "x-custom": "v"},
				Body:       `{"status":"accepted","event_id":"evt_1"}`,
			},
			wantStatus:  202,
			wantBody:    `{"status":"accepted","event_id":"evt_1"}`,
			wantHeaders: map[string][]string{"Content-Type": {"application/json"}, "X-Custom": {"v"}},
		},
		{
			name:       "zero status is 200",
			resp:       events.APIGatewayV2HTTPResponse{Body: "ok"},
			wantStatus: 200,
			wantBody:   "ok",
		},
		{
			name:       "base64 body is decoded",
			resp:       events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: base64.StdEncoding.EncodeToString([]byte("\x00\x01bin")), IsBase64Encoded: true},
			wantStatus: 200,
			wantBody:   "\x00\x01bin",
		},
		{
			name: "cookies and multi-value headers",
			resp: events.APIGatewayV2HTTPResponse{
				StatusCode:        200,
				MultiValueHeaders: map[string][]string{"X-Multi": {"a", "b"}},
				Cookies:           []string{"s=1; Path=/", "t=2"},
			},
			wantStatus:  200,
			wantHeaders: map[string][]string{"X-Multi": {"a", "b"}, "Set-Cookie": {"s=1; Path=/", "t=2"}},
		},
		{
			name:        "handler error is a generic 500",
			err:         errors.New("dynamodb: table inbox secret detail"),
			wantStatus:  500,
			wantBody:    internal,
			wantHeaders: map[string][]string{"Content-Type": {"application/json"}},
		},
		{
			name:       "handler panic is a generic 500",
			panic:      "boom",
			wantStatus: 500,
			wantBody:   internal,
		},
		{
			name:       "malformed base64 body is a generic 500",
			resp:       events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "%%%", IsBase64Encoded: true},
			wantStatus: 500,
			wantBody:   internal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := &capture{resp: tt.resp, err: tt.err, panic: tt.panic}
			srv := startAPI(t, c.handle, APIOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			got := mustDo(t, mustRequest(t, "POST", srv.URL+"/webhooks/stripe", nil))
			if got.status != tt.wantStatus {
				t.Errorf("status = %d, want %d", got.status, tt.wantStatus)
			}
			if string(got.body) != tt.wantBody {
				t.Errorf("body = %q, want %q", got.body, tt.wantBody)
			}
			for k, want := range tt.wantHeaders {
				if got := got.header.Values(k); !slices.Equal(got, want) {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tt.wantStatus == 500 && !strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Errorf("log = %s, want an ERROR line", logs.String())
			}
		})
	}
}

func TestAPILogsNeverTheBody(t *testing.T) {
	const secret = "whsec_do_not_log_me"
	var logs bytes.Buffer
	c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: 401}}
	srv := startAPI(t, c.handle, APIOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	for _, ct := range []string{"application/json", "application/octet-stream"} {
		req := mustRequest(t, "POST", srv.URL+"/webhooks/stripe", strings.NewReader(`{"secret":"`+secret+`"}`))
		req.Header.Set("Content-Type", ct)
		mustDo(t, req)
	}
	out := logs.String()
	encoded := base64.StdEncoding.EncodeToString([]byte(`{"secret":"` + secret + `"}`))
	if strings.Contains(out, secret) || strings.Contains(out, encoded) {
		t.Errorf("log contains the body: %s", out)
	}
	if got := strings.Count(out, "\n"); got != 2 {
		t.Errorf("log has %d lines, want 2: %s", got, out)
	}
	for _, want := range []string{`"method":"POST"`, `"path":"/webhooks/stripe"`, `"status":401`, `"duration_ms":`} {
		if !strings.Contains(out, want) {
			t.Errorf("log = %s, want it to contain %s", out, want)
		}
	}
}

func FuzzBodyIsText(f *testing.F) {
	for _, s := range []string{"application/json", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "", ";", "/", "a/b+json; x=\"", "APPLICATION/XML"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		got := BodyIsText(ct)
		upper := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, ct)
		if again := BodyIsText(upper); again != got {
			t.Errorf("BodyIsText(%q) = %v, BodyIsText(%q) = %v, want equal (case-insensitive)", ct, got, upper, again)
		}
	})
}

// FuzzAPI feeds raw HTTP/1.1 requests to the handler: it must never panic,
// must answer one of the statuses API Gateway can, and when it invokes the
// function the event body must decode to exactly the bytes sent.
func FuzzAPI(f *testing.F) {
	f.Add([]byte("POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("POST /webhooks/s/a%2Fb?x=1&x=2 HTTP/1.1\r\nHost: x\r\nCookie: a=1; ; b\r\nContent-Length: 3\r\n\r\n\x00\x01\x02"))
	f.Add([]byte("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		sent, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(sent))
		req.RemoteAddr = "192.0.2.1:1234"
		c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: 202}}
		rec := httptest.NewRecorder()
		NewAPI(c.handle, APIOptions{MaxRequestBytes: 1 << 10}).ServeHTTP(rec, req)
		switch rec.Code {
		case 202, 404, 413:
		default:
			t.Fatalf("status = %d, want 202, 404 or 413", rec.Code)
		}
		if rec.Code == 202 {
			if got := eventBody(t, c.only(t)); !bytes.Equal(got, sent) {
				t.Errorf("decoded event body = %q, want %q", got, sent)
			}
		}
	})
}

// TestAPIHeaderQuota: an HTTP API refuses a request whose request line and
// headers pass its 10,240-byte quota before any route or function; one at
// the quota reaches the function.
func TestAPIHeaderQuota(t *testing.T) {
	c := &capture{resp: events.APIGatewayV2HTTPResponse{StatusCode: http.StatusAccepted}}
	srv := startAPI(t, c.handle, APIOptions{})
	post := func(extra int) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Pad", strings.Repeat("p", extra))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// What Go's client sends besides X-Pad: the request line, Host,
	// User-Agent, Content-Length and Accept-Encoding.
	line := len("POST /webhooks/stripe HTTP/1.1")
	others := len("Host") + len(strings.TrimPrefix(srv.URL, "http://")) + len("User-Agent") + len("Go-http-client/1.1") +
		len("Content-Length") + len("2") + len("Accept-Encoding") + len("gzip") + len("X-Pad")
	pad := MaxHeaderBytes - line - others
	if status, body := post(pad); status != http.StatusAccepted {
		t.Fatalf("at the quota: %d %s, want it passed to the function", status, body)
	}
	if status, body := post(pad + 1); status != http.StatusRequestHeaderFieldsTooLarge || body != `{"message":"Request Header Fields Too Large"}` {
		t.Fatalf("over the quota: %d %s", status, body)
	}
	if len(c.events) != 1 {
		t.Errorf("the function saw %d requests, want 1", len(c.events))
	}
}
