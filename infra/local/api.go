package local

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// API Gateway HTTP API quotas the local API applies by default.
const (
	// DefaultMaxRequestBytes is API Gateway's own payload quota (10 MB),
	// used when APIOptions.MaxRequestBytes is not positive.
	DefaultMaxRequestBytes = 10 << 20
	// MaxHeaderBytes is an HTTP API's quota on the total combined size of
	// the request line and the header values (10,240 bytes, not
	// adjustable): a provider's delivery over it never reaches the
	// function, deployed or here.
	MaxHeaderBytes = 10240
	// DefaultIntegrationTimeout is an HTTP API's integration timeout (30 s,
	// its most), used when APIOptions.IntegrationTimeout is not positive.
	DefaultIntegrationTimeout = 30 * time.Second
)

// Values API Gateway puts in every event; locally there is no real account or
// API id, so these are fixed placeholders.
const (
	localAccountID = "000000000000"
	localAPIID     = "local"
	defaultStage   = "$default"
	// requestTimeFormat is the layout of requestContext.time.
	requestTimeFormat = "02/Jan/2006:15:04:05 -0700"
)

// IngestFunc is the ingest Lambda's handler signature: exactly what
// functions/ingest passes to lambda.Start.
type IngestFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// APIOptions configures NewAPI.
type APIOptions struct {
	// MaxRequestBytes is API Gateway's payload quota: a larger body is
	// answered with API Gateway's own 413 {"message":"Request Entity Too
	// Large"} without calling the handler, since in the cloud API Gateway
	// refuses it before any function runs. Zero or less means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxBodyBytes, when positive, is the ingest function's own body limit
	// (the template's MAX_BODY_BYTES): a body over it, declared or counted,
	// is answered 413 {"error":"body too large"}, what the function answers
	// for it, without reading the rest of it or calling the handler. Zero
	// leaves every body within MaxRequestBytes to the handler.
	MaxBodyBytes int64
	// FunctionTimeout, when positive, is the ingest function's Timeout: the
	// handler's context gets a deadline this far ahead, as in Lambda, and a
	// handler still running at the deadline has failed its invocation (500
	// {"message":"Internal Server Error"}). Zero sets no deadline.
	FunctionTimeout time.Duration
	// IntegrationTimeout bounds the wait for the handler; when it passes
	// first the client gets API Gateway's 503 {"message":"Service
	// Unavailable"}. Zero or less means DefaultIntegrationTimeout.
	IntegrationTimeout time.Duration
	// Logger receives one line per request (never the body). Nil discards.
	Logger *slog.Logger
}

// NewAPI returns an http.Handler that behaves like the project's API Gateway
// HTTP API in front of h: it serves the routes /webhooks/{source} and
// /webhooks/{source}/{account} for every method (h answers 405 itself),
// converts each request into a payload format 2.0 event, and writes h's
// response back.
//
// What the local API answers itself follows the project's HTTP contract,
// {"error":"..."} bodies as the ingest function writes them, wherever the
// deployed stack could have the function answer: any other path gets 404
// {"error":"not found"} (a route in the template can send such paths to the
// function, which answers an unknown source so), and a body over
// MaxBodyBytes gets 413 {"error":"body too large"}. API Gateway's own
// {"message":"..."} answers remain only where API Gateway answers before or
// instead of the function and no template can change it: a body over its
// 10 MB quota (413), a body that never fully arrives (400), an integration
// timeout (503), and a failed invocation (500, when h returns an error,
// panics or outlives FunctionTimeout; the error is logged).
//
// The handler runs as an invocation does, on a context that a client
// hanging up does not cancel.
func NewAPI(h IngestFunc, opts APIOptions) http.Handler {
	maxBytes := opts.MaxRequestBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	integration := opts.IntegrationTimeout
	if integration <= 0 {
		integration = DefaultIntegrationTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &api{
		handler: h, maxBytes: maxBytes, maxBody: max(opts.MaxBodyBytes, 0),
		fnTimeout: max(opts.FunctionTimeout, 0), integration: integration, log: logger,
	}
}

// Connection timeouts NewServer applies by default. API Gateway publishes
// no client-side limits but its integration timeout; these stand in for
// them, so that a client that stalls (declares Content-Length: 1000 and
// sends 10 bytes, stops mid-header, or keeps a connection open idle) cannot
// hold a connection forever.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	// DefaultWriteTimeout covers what follows the headers: the rest of the
	// body (at most DefaultReadTimeout), the integration (at most
	// DefaultIntegrationTimeout) and writing the response, so that an
	// integration timeout still reaches the client as a 503 instead of a
	// dropped connection.
	DefaultWriteTimeout = DefaultReadTimeout + DefaultIntegrationTimeout + 5*time.Second
)

// ServerTimeouts are the connection timeouts of NewServer; zero fields take
// the defaults above.
type ServerTimeouts struct {
	ReadHeader time.Duration // the request line and headers
	Read       time.Duration // the whole request, body included
	Write      time.Duration // from the end of the headers to the end of the response
	Idle       time.Duration // a kept-alive connection waiting for its next request
}

// NewServer returns the local API's http.Server for h (NewAPI's handler)
// with those timeouts. The caller chooses the listener; the local stack
// binds 127.0.0.1 only.
func NewServer(h http.Handler, t ServerTimeouts) *http.Server {
	def := func(d, v time.Duration) time.Duration {
		if d <= 0 {
			return v
		}
		return d
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: def(t.ReadHeader, DefaultReadHeaderTimeout),
		ReadTimeout:       def(t.Read, DefaultReadTimeout),
		WriteTimeout:      def(t.Write, DefaultWriteTimeout),
		IdleTimeout:       def(t.Idle, DefaultIdleTimeout),
	}
}

type api struct {
	handler     IngestFunc
	maxBytes    int64
	maxBody     int64 // 0: no limit of the function's own
	fnTimeout   time.Duration
	integration time.Duration
	log         *slog.Logger
}

// errIntegrationTimeout is what the API reports when the handler outlives
// the integration timeout.
var errIntegrationTimeout = errors.New("integration timed out")

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := newRequestID()
	w.Header().Set("Apigw-Requestid", reqID)
	status, routeKey, err := a.serve(w, r, start, reqID)
	attrs := []slog.Attr{
		slog.String("request_id", reqID),
		slog.String("method", r.Method),
		slog.String("path", r.URL.EscapedPath()),
		slog.String("route", routeKey),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	a.log.LogAttrs(r.Context(), level, "http request", attrs...)
}

// serve answers one request and reports the status written, the matched
// route key (empty when none) and the error, if any, that made it a 5xx.
func (a *api) serve(w http.ResponseWriter, r *http.Request, start time.Time, reqID string) (int, string, error) {
	if headerBytes(r) > MaxHeaderBytes {
		// API Gateway's refusal, before any route: its answer is not
		// documented; 431 with its {"message":…} shape is this API's.
		return writeMessage(w, http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large"), "", nil
	}
	routeKey, params, ok := matchRoute(r.Method, r.URL.EscapedPath())
	if !ok {
		return writeError(w, http.StatusNotFound, "not found"), "", nil
	}
	if status, refused := a.tooLarge(w, r.ContentLength); refused {
		return status, routeKey, nil
	}
	limit := a.maxBytes
	if a.maxBody > 0 {
		limit = min(limit, a.maxBody)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return writeMessage(w, http.StatusBadRequest, "Bad Request"), routeKey, nil
	}
	if status, refused := a.tooLarge(w, int64(len(body))); refused {
		return status, routeKey, nil
	}

	ev := newEvent(r, body, routeKey, params, reqID, start)
	resp, err := a.invoke(r.Context(), ev)
	if errors.Is(err, errIntegrationTimeout) {
		return writeMessage(w, http.StatusServiceUnavailable, "Service Unavailable"), routeKey, err
	}
	if err != nil {
		return writeMessage(w, http.StatusInternalServerError, "Internal Server Error"), routeKey, err
	}
	status, err := writeResponse(w, resp)
	if err != nil {
		return writeMessage(w, http.StatusInternalServerError, "Internal Server Error"), routeKey, err
	}
	return status, routeKey, nil
}

// tooLarge answers 413 when n body bytes are over a limit: API Gateway's
// quota first, in its words, then the function's, in the contract's. The
// connection is closed after the answer: the rest of the body stays unread
// (net/http would otherwise wait to drain up to 256 KB of it before
// answering).
func (a *api) tooLarge(w http.ResponseWriter, n int64) (status int, refused bool) {
	if n > a.maxBytes || (a.maxBody > 0 && n > a.maxBody) {
		w.Header().Set("Connection", "close")
	}
	switch {
	case n > a.maxBytes:
		return writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large"), true
	case a.maxBody > 0 && n > a.maxBody:
		return writeError(w, http.StatusRequestEntityTooLarge, "body too large"), true
	}
	return 0, false
}

// invoke calls the handler the way the Lambda runtime does: with a
// lambdacontext carrying a fresh request id, a deadline FunctionTimeout
// ahead (when set), a panic turned into an invocation error instead of a
// dropped connection, and a context the client cannot cancel. It waits
// until the function's deadline or the integration timeout, whichever
// comes first; the result of a handler still running then is dropped, and
// the error says which limit it hit (errIntegrationTimeout for the
// integration's).
func (a *api) invoke(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	ctx = context.WithoutCancel(ctx)
	cancel := context.CancelFunc(func() {})
	var fnDeadline <-chan struct{}
	if a.fnTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, a.fnTimeout)
		fnDeadline = ctx.Done()
	}
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: newUUID()})
	done := start(ctx, cancel, "ingest handler", func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		resp, err := a.handler(ctx, ev)
		if err != nil {
			err = fmt.Errorf("ingest handler: %w", err)
		}
		return resp, err
	}, ev)
	t := time.NewTimer(a.integration)
	defer t.Stop()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-fnDeadline:
		// The handler's own return also ends ctx (cancel, after its result
		// is sent): prefer a result that is there.
		select {
		case r := <-done:
			return r.resp, r.err
		default:
		}
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("ingest handler: invocation timed out after %s", a.fnTimeout)
	case <-t.C:
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("%w after %s", errIntegrationTimeout, a.integration)
	}
}

// matchRoute maps an escaped request path onto the template's routes.
// Path parameters must be non-empty single segments; their values are
// unescaped, so %2F stays inside one parameter.
func matchRoute(method, escapedPath string) (routeKey string, params map[string]string, ok bool) {
	rest, found := strings.CutPrefix(escapedPath, "/webhooks/")
	if !found {
		return "", nil, false
	}
	segs := strings.Split(rest, "/")
	if len(segs) > 2 {
		return "", nil, false
	}
	names := []string{"source", "account"}
	params = make(map[string]string, len(segs))
	for i, seg := range segs {
		v, err := url.PathUnescape(seg)
		if err != nil || v == "" {
			return "", nil, false
		}
		params[names[i]] = v
	}
	path := "/webhooks/{source}"
	if len(segs) == 2 {
		path += "/{account}"
	}
	verb := "ANY"
	if method == http.MethodPost {
		verb = http.MethodPost
	}
	return verb + " " + path, params, true
}

// newEvent builds the payload format 2.0 event API Gateway HTTP APIs send.
func newEvent(r *http.Request, body []byte, routeKey string, params map[string]string, reqID string, now time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP := remoteIP(r.RemoteAddr)
	headers, cookies := eventHeaders(r, sourceIP)

	var query map[string]string
	if r.URL.RawQuery != "" {
		// A malformed pair is skipped; the parsed ones still count.
		vals, _ := url.ParseQuery(r.URL.RawQuery)
		if len(vals) > 0 {
			query = make(map[string]string, len(vals))
			for k, vs := range vals {
				query[k] = strings.Join(vs, ",")
			}
		}
	}

	domain := r.Host
	if h, _, err := net.SplitHostPort(domain); err == nil {
		domain = h
	}
	prefix, _, _ := strings.Cut(domain, ".")

	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    localAccountID,
			Stage:        defaultStage,
			RequestID:    reqID,
			APIID:        localAPIID,
			DomainName:   domain,
			DomainPrefix: prefix,
			Time:         now.UTC().Format(requestTimeFormat),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if BodyIsText(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// eventHeaders returns the event's headers (lowercase names, repeated
// values joined with commas, no Cookie) and its cookies, and adds the
// headers API Gateway itself sets.
func eventHeaders(r *http.Request, sourceIP string) (map[string]string, []string) {
	headers := make(map[string]string, len(r.Header)+5)
	var cookies []string
	for name, vals := range r.Header {
		lname := strings.ToLower(name)
		if lname == "cookie" {
			for _, line := range vals {
				for c := range strings.SplitSeq(line, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		v := strings.Join(vals, ",")
		if prev, ok := headers[lname]; ok {
			v = prev + "," + v
		}
		headers[lname] = v
	}
	headers["host"] = r.Host
	if prev := headers["x-forwarded-for"]; prev != "" {
		headers["x-forwarded-for"] = prev + ", " + sourceIP
	} else {
		headers["x-forwarded-for"] = sourceIP
	}
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	headers["x-forwarded-proto"] = proto
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(addr.String()); err == nil {
			headers["x-forwarded-port"] = port
		}
	}
	if _, ok := headers["x-amzn-trace-id"]; !ok {
		headers["x-amzn-trace-id"] = newTraceID()
	}
	return headers, cookies
}

// BodyIsText reports whether an API Gateway HTTP API passes a request body
// with this Content-Type to Lambda as text; every other body, including one
// with no Content-Type, arrives base64-encoded with isBase64Encoded true.
// Text types are text/*, application/json, application/*+json,
// application/xml, application/*+xml, application/javascript and
// application/x-javascript; parameters and case are ignored.
func BodyIsText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// A malformed parameter list still names the type before ';'.
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok || typ == "" || sub == "" {
		return false
	}
	switch typ {
	case "text":
		return true
	case "application":
		switch sub {
		case "json", "xml", "javascript", "x-javascript":
			return true
		}
		return strings.HasSuffix(sub, "+json") || strings.HasSuffix(sub, "+xml")
	}
	return false
}

// writeResponse writes a handler's response as API Gateway does for format
// 2.0: headers, multi-value headers and cookies (as Set-Cookie), a zero
// status as 200, and a base64 body decoded. A body that is not valid base64
// is an error (API Gateway answers 500 to a malformed Lambda response) and
// nothing has been written.
func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) (int, error) {
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		body, err = base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return 0, fmt.Errorf("ingest response: body is not base64: %w", err)
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	if status < 100 || status > 999 {
		return 0, fmt.Errorf("ingest response: invalid status code %d", status)
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	// The server computes the length of the body it actually sends.
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return status, nil
}

// writeMessage writes API Gateway's own JSON error shape and returns status.
func writeMessage(w http.ResponseWriter, status int, msg string) int {
	return writeJSON(w, status, `{"message":"`+msg+`"}`)
}

// writeError writes the project's contract error shape, as the ingest
// function does, and returns status. msg is a fixed text with nothing to
// escape.
func writeError(w http.ResponseWriter, status int, msg string) int {
	return writeJSON(w, status, `{"error":"`+msg+`"}`)
}

func writeJSON(w http.ResponseWriter, status int, body string) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
	return status
}

func remoteIP(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// newRequestID returns an id shaped like API Gateway's (16 base64 chars).
func newRequestID() string {
	return base64.StdEncoding.EncodeToString(randomBytes(11))
}

// newTraceID returns an X-Ray trace header value like the one API Gateway adds.
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s", time.Now().Unix(), hex.EncodeToString(randomBytes(12)))
}

// newUUID returns a random (version 4) UUID, the shape of Lambda request ids.
func newUUID() string {
	b := randomBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	// crypto/rand.Read never returns an error (Go 1.24+).
	_, _ = rand.Read(b)
	return b
}

// EventFromRequest builds the event the local API would hand the ingest
// handler for r with the given body, at now. ok is false when r's path is
// not one of the API's routes.
func EventFromRequest(r *http.Request, body []byte, now time.Time) (ev events.APIGatewayV2HTTPRequest, ok bool) {
	routeKey, params, ok := matchRoute(r.Method, r.URL.EscapedPath())
	if !ok {
		return events.APIGatewayV2HTTPRequest{}, false
	}
	return newEvent(r, body, routeKey, params, newRequestID(), now), true
}

// headerBytes is the size MaxHeaderBytes bounds: the request line and
// every header's name and value, Host's included (the quota counts values;
// names are counted too, so nothing over it passes here).
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + len("Host") + len(r.Host)
	for name, vs := range r.Header {
		for _, v := range vs {
			n += len(name) + len(v)
		}
	}
	return n
}
