package local

import (
	"context"
	"errors"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// dynamoDBTarget prefixes the X-Amz-Target of every DynamoDB call (its JSON
// protocol names the operation there, e.g. DynamoDB_20120810.PutItem).
const dynamoDBTarget = "DynamoDB_20120810."

// routerIdleConns is how many idle connections the router keeps to each
// emulator.
const routerIdleConns = 256

// NewRouter is the one local AWS endpoint: DynamoDB calls, told by their
// X-Amz-Target, go to dynamo; everything else (SQS, Secrets Manager) to
// rest. The Host header is passed on as it came, so URLs the emulators
// build from it (SQS queue URLs) name the router, and every client —
// the SDK's AWS_ENDPOINT_URL, the AWS CLI — keeps one endpoint.
//
// Each emulator is reached over its own pool of kept-alive connections,
// as many as there are calls in flight: the default transport keeps two
// idle connections a host, so under load (the torture run's senders and
// workers, a burst on make run) most calls would dial a new one.
func NewRouter(dynamo, rest *url.URL) http.Handler {
	proxy := func(to *url.URL) *httputil.ReverseProxy {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = routerIdleConns, routerIdleConns
		return &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(to)
				r.Out.Host = r.In.Host
			},
			Transport:    t,
			ErrorHandler: proxyError,
		}
	}
	d, o := proxy(dynamo), proxy(rest)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsDynamoDB(r) {
			d.ServeHTTP(w, r)
			return
		}
		o.ServeHTTP(w, r)
	})
}

// IsDynamoDB reports whether the request is a DynamoDB call.
func IsDynamoDB(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), dynamoDBTarget)
}

// proxyError answers 502 when an emulator cannot be reached, and logs it;
// a caller that went away (a long poll given up, a killed process) is not
// an error worth a line.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	log.Printf("local aws router: %s %s: %v", r.Method, r.URL.Path, err)
	w.WriteHeader(http.StatusBadGateway)
}
