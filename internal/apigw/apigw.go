// Package apigw turns API Gateway events into one request type and one
// response type back, so handlers never see the differences between
// payload formats.
package apigw

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Errors FromV2 returns for requests that must be refused before any work.
var (
	// ErrBodyTooLarge means the body exceeds the configured limit (413).
	ErrBodyTooLarge = errors.New("apigw: body too large")
	// ErrBadEncoding means isBase64Encoded was set on a body that is not
	// base64 (400).
	ErrBadEncoding = errors.New("apigw: body is not valid base64")
)

// Request is a normalized HTTP request: canonical header names, the raw body
// bytes exactly as the client sent them.
type Request struct {
	Method     string
	Path       string
	PathParams map[string]string
	Query      url.Values
	Header     http.Header
	// RawQuery is the query string as sent, without '?'.
	RawQuery  string
	Body      []byte
	RequestID string
	SourceIP  string
}

// FromV2 normalizes an HTTP API (payload format 2.0) event. Bodies larger
// than maxBody bytes (after base64 decoding) are refused with
// ErrBodyTooLarge before they are decoded; the request is returned without
// its body then, for the refusal's log line.
func FromV2(e events.APIGatewayV2HTTPRequest, maxBody int) (Request, error) {
	r := Request{
		Method:     strings.ToUpper(e.RequestContext.HTTP.Method),
		Path:       e.RawPath,
		PathParams: e.PathParameters,
		Header:     make(http.Header, len(e.Headers)),
		RequestID:  e.RequestContext.RequestID,
		SourceIP:   e.RequestContext.HTTP.SourceIP,
	}
	if r.Path == "" {
		r.Path = e.RequestContext.HTTP.Path
	}
	for k, v := range e.Headers {
		// HTTP APIs deliver one comma-joined value per lowercase name. An
		// event written by hand may spell one name twice in different
		// cases: both values are kept, in a fixed order, so that a
		// signature header given twice is refused as repeated rather than
		// one of them chosen by map order.
		ck := http.CanonicalHeaderKey(k)
		r.Header[ck] = append(r.Header[ck], v)
		if vs := r.Header[ck]; len(vs) > 1 {
			slices.Sort(vs)
		}
	}
	if e.RawQueryString != "" {
		r.RawQuery = e.RawQueryString
		q, err := url.ParseQuery(e.RawQueryString)
		if err == nil {
			r.Query = q
		}
	}
	body, err := decodeBody(e.Body, e.IsBase64Encoded, maxBody)
	if err != nil {
		return r, err
	}
	r.Body = body
	return r, nil
}

// FromV1 normalizes a REST API (payload format 1.0) event. Multi-value
// headers and query parameters are kept as separate values; a header
// present only in the single-value map is used as it is.
func FromV1(e events.APIGatewayProxyRequest, maxBody int) (Request, error) {
	r := Request{
		Method:     strings.ToUpper(e.HTTPMethod),
		Path:       e.Path,
		PathParams: e.PathParameters,
		Header:     make(http.Header, len(e.Headers)),
		RequestID:  e.RequestContext.RequestID,
		SourceIP:   e.RequestContext.Identity.SourceIP,
	}
	for k, vs := range e.MultiValueHeaders {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	for k, v := range e.Headers {
		if _, ok := r.Header[http.CanonicalHeaderKey(k)]; !ok {
			r.Header.Set(k, v)
		}
	}
	if len(e.MultiValueQueryStringParameters) > 0 {
		r.Query = url.Values{}
		for k, vs := range e.MultiValueQueryStringParameters {
			r.Query[k] = append(r.Query[k], vs...)
		}
	} else if len(e.QueryStringParameters) > 0 {
		r.Query = url.Values{}
		for k, v := range e.QueryStringParameters {
			r.Query.Set(k, v)
		}
	}
	// REST APIs deliver the query only decoded; re-encode it in a stable
	// order for schemes that sign the URL.
	r.RawQuery = r.Query.Encode()
	body, err := decodeBody(e.Body, e.IsBase64Encoded, maxBody)
	if err != nil {
		return r, err
	}
	r.Body = body
	return r, nil
}

func decodeBody(body string, isBase64 bool, maxBody int) ([]byte, error) {
	if !isBase64 {
		if maxBody > 0 && len(body) > maxBody {
			return nil, fmt.Errorf("%w: %d bytes", ErrBodyTooLarge, len(body))
		}
		return []byte(body), nil
	}
	if maxBody > 0 && base64.StdEncoding.DecodedLen(len(body))-2 > maxBody {
		return nil, fmt.Errorf("%w: %d base64 bytes", ErrBodyTooLarge, len(body))
	}
	out, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, ErrBadEncoding
	}
	if maxBody > 0 && len(out) > maxBody {
		return nil, fmt.Errorf("%w: %d bytes", ErrBodyTooLarge, len(out))
	}
	return out, nil
}

// Response is what a handler answers; V2 and V1 render it.
type Response struct {
	Status int
	Header map[string]string
	Body   string
}

// V1 renders the response for a REST API.
func (r Response) V1() events.APIGatewayProxyResponse {
	v2 := r.V2()
	return events.APIGatewayProxyResponse{StatusCode: v2.StatusCode, Headers: v2.Headers, Body: v2.Body}
}

// V2 renders the response in payload format 2.0.
func (r Response) V2() events.APIGatewayV2HTTPResponse {
	h := map[string]string{"content-type": "application/json"}
	for k, v := range r.Header {
		h[strings.ToLower(k)] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: h, Body: r.Body}
}
