package local

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Faults injects failures into calls passing the local AWS router, for the
// torture run: each call is given a fault with probability Rate (or its
// call type's entry in Rates), the fault drawn from Kinds. The failures
// are the ones real AWS and a real network give, in each service's own
// protocol, so the SDK's retryer and the adapters' error classification
// treat them as they would in production.
//
// Set the fields before the first call passes; only SetEnabled may change
// the behaviour after that. A Faults is safe for concurrent use.
type Faults struct {
	// Rate is the fraction (0..1) of calls given a fault; Rates overrides
	// it per call type (keys as CallType returns them, e.g.
	// "DynamoDB.TransactWriteItems", "SQS.DeleteMessage").
	Rate  float64
	Rates map[string]float64
	// Kinds are the faults drawn from, equally likely; nil means
	// AllFaults (an empty, non-nil Kinds injects nothing, and a Fault
	// this package does not define draws as no fault).
	Kinds []Fault
	// MaxDelay bounds the Delay fault (default 2s; the delay is drawn
	// uniformly from (0, MaxDelay]).
	MaxDelay time.Duration
	// Seed seeds the random stream that picks which calls get a fault and
	// which: the same seed given the same calls one at a time makes the
	// same choices.
	Seed uint64

	off atomic.Bool // the zero value is on

	once sync.Once
	mu   sync.Mutex // guards rng and the counters below
	rng  *rand.Rand
	// calls counts every call and callsBy by type; byFault and byCall
	// the faults injected.
	calls   int64
	callsBy map[string]int64
	byFault map[string]int64
	byCall  map[string]int64
}

// Fault is a kind of failure Faults injects.
type Fault int

const (
	// Throttle answers, without forwarding, with the service's throttling
	// error (HTTP 400): DynamoDB's and Secrets Manager's
	// ThrottlingException, SQS's RequestThrottled. The SDK retries it as
	// a throttle.
	Throttle Fault = iota
	// ServerError answers, without forwarding, with HTTP 500:
	// InternalServerError from DynamoDB, InternalFailure from the rest.
	// The SDK retries it.
	ServerError
	// Delay holds the call for up to MaxDelay, then forwards it.
	Delay
	// Cut closes the client's connection without forwarding or writing
	// anything: the caller gets a connection error, and nothing was done.
	Cut
	// Drop forwards the call, keeps its response from the client, then
	// closes the client's connection: the call took effect, but its
	// caller gets a connection error.
	Drop
)

// AllFaults is every Fault, the default Kinds.
var AllFaults = []Fault{Throttle, ServerError, Delay, Cut, Drop}

// String names the fault as Counts and the torture report do:
// "throttle", "server_error", "delay", "cut", "drop".
func (k Fault) String() string {
	switch k {
	case Throttle:
		return "throttle"
	case ServerError:
		return "server_error"
	case Delay:
		return "delay"
	case Cut:
		return "cut"
	case Drop:
		return "drop"
	}
	return "Fault(" + strconv.Itoa(int(k)) + ")"
}

// defaultMaxDelay bounds the Delay fault when MaxDelay is not set.
const defaultMaxDelay = 2 * time.Second

// NewFaults returns Faults giving a fraction rate of all calls a fault of
// any kind, chosen by a stream seeded with seed.
func NewFaults(rate float64, seed uint64) *Faults {
	return &Faults{Rate: rate, Seed: seed}
}

// SetEnabled switches fault injection on or off while calls pass (it is
// on until switched off). Off, Wrap's handler passes every call straight
// to next, draws nothing from the random stream and counts no faults;
// it still counts the call.
func (f *Faults) SetEnabled(on bool) { f.off.Store(!on) }

// FaultCounts is a snapshot of what Faults has done.
type FaultCounts struct {
	// Calls counts every call that passed, faulted or not; CallsBy
	// counts them by call type (CallType).
	Calls   int64
	CallsBy map[string]int64
	// ByFault counts the faults injected by kind (Fault.String), ByCall
	// by call type (CallType).
	ByFault map[string]int64
	ByCall  map[string]int64
}

// Total is the number of faults injected.
func (c FaultCounts) Total() int64 {
	var n int64
	for _, v := range c.ByFault {
		n += v
	}
	return n
}

// Counts returns a snapshot of the counters; the maps are the caller's.
func (f *Faults) Counts() FaultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := FaultCounts{Calls: f.calls, CallsBy: map[string]int64{}, ByFault: map[string]int64{}, ByCall: map[string]int64{}}
	for k, v := range f.callsBy {
		c.CallsBy[k] = v
	}
	for k, v := range f.byFault {
		c.ByFault[k] = v
	}
	for k, v := range f.byCall {
		c.ByCall[k] = v
	}
	return c
}

// Wrap returns next behind fault injection. Cut and Drop need to hijack
// the client's connection, as net/http's HTTP/1.1 server allows; where
// the ResponseWriter cannot be hijacked they become a ServerError, and
// are counted as one.
func (f *Faults) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := CallType(r)
		if f.off.Load() {
			f.count(call, "")
			next.ServeHTTP(w, r)
			return
		}
		kind, delay, faulted := f.draw(call)
		if !faulted {
			f.count(call, "")
			next.ServeHTTP(w, r)
			return
		}
		var hj http.Hijacker
		if kind == Cut || kind == Drop {
			if hj = hijacker(w); hj == nil {
				kind = ServerError
			}
		}
		id := f.count(call, kind.String())
		switch kind {
		case Throttle, ServerError:
			writeFault(w, r, call, kind, fmt.Sprintf("fault-%08d", id))
		case Delay:
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
				next.ServeHTTP(w, r)
			case <-r.Context().Done():
				// The caller is gone: forwarding now would be a Drop.
			}
		case Cut:
			closeConn(hj)
		case Drop:
			next.ServeHTTP(&discardWriter{header: http.Header{}}, r)
			io.Copy(io.Discard, r.Body) // what next left unread
			closeConn(hj)
		}
	})
}

// draw decides whether a call of type call gets a fault and which, and
// for Delay how long. One draw is taken per call whatever its rate, so
// the stream stays aligned when the rates change.
func (f *Faults) draw(call string) (kind Fault, delay time.Duration, faulted bool) {
	f.once.Do(func() {
		f.rng = rand.New(rand.NewPCG(f.Seed, 0x9e3779b97f4a7c15))
	})
	rate := f.Rate
	if v, ok := f.Rates[call]; ok {
		rate = v
	}
	kinds := f.Kinds
	if kinds == nil {
		kinds = AllFaults
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() >= rate || len(kinds) == 0 {
		return 0, 0, false
	}
	kind = kinds[f.rng.IntN(len(kinds))]
	switch kind {
	case Throttle, ServerError, Cut, Drop:
	case Delay:
		bound := f.MaxDelay
		if bound <= 0 {
			bound = defaultMaxDelay
		}
		delay = time.Duration(f.rng.Int64N(int64(bound))) + 1
	default:
		return 0, 0, false // not a Fault this package knows
	}
	return kind, delay, true
}

// count counts a call of type call and the fault kind given it, if any
// (kind ""); it returns the call's number, from 1.
func (f *Faults) count(call, kind string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.callsBy == nil {
		f.callsBy = map[string]int64{}
	}
	f.callsBy[call]++
	if kind != "" {
		if f.byFault == nil {
			f.byFault, f.byCall = map[string]int64{}, map[string]int64{}
		}
		f.byFault[kind]++
		f.byCall[call]++
	}
	return f.calls
}

// hijacker finds the Hijacker under w, unwrapping as
// http.ResponseController does, or nil.
func hijacker(w http.ResponseWriter) http.Hijacker {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// closeConn takes the client's connection from the server and closes it
// with nothing written.
func closeConn(hj http.Hijacker) {
	conn, _, err := hj.Hijack()
	if err != nil {
		return // the server answers with what it has; nothing better to do
	}
	conn.Close()
}

// discardWriter takes a response that must not reach the client (Drop).
type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// The X-Amz-Target prefixes of the services behind the router, and the
// names CallType gives them.
var targets = []struct{ prefix, service string }{
	{dynamoDBTarget, "DynamoDB"},
	{"AmazonSQS.", "SQS"},
	{"secretsmanager.", "SecretsManager"},
}

// CallType names the call r makes as "<service>.<operation>": from its
// X-Amz-Target for the JSON protocols ("DynamoDB_20120810.PutItem" is
// "DynamoDB.PutItem", "AmazonSQS.ReceiveMessage" "SQS.ReceiveMessage",
// "secretsmanager.GetSecretValue" "SecretsManager.GetSecretValue"), from
// the Action of an SQS query-protocol call ("SQS.DeleteMessage"). Reading
// a form body leaves r.Body as it was for the next handler. Any other call
// is "other".
func CallType(r *http.Request) string {
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		for _, t := range targets {
			if op, ok := strings.CutPrefix(target, t.prefix); ok && op != "" {
				return t.service + "." + op
			}
		}
		return "other"
	}
	// The query protocol signs for its service: a call signed for another
	// (STS, IAM) is not SQS's.
	if s := signedService(r); s != "" && s != "sqs" {
		return "other"
	}
	action := r.URL.Query().Get("Action")
	if action == "" && r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody &&
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errReader{err}), r.Body}
			return "other"
		}
		r.Body = readCloser{bytes.NewReader(body), r.Body}
		if form, err := url.ParseQuery(string(body)); err == nil {
			action = form.Get("Action")
		}
	}
	if action == "" {
		return "other"
	}
	return "SQS." + action
}

// signedService is the service of r's SigV4 credential scope
// ("Credential=AKID/20260101/us-east-1/sqs/aws4_request"), or "".
func signedService(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

// readCloser reads the buffered body and closes the original.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader fails as the original body did.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// awsError is one injected error as its service spells it.
type awsError struct {
	status int
	code   string // the code the SDK reports
	typ    string // the JSON protocol's __type
	query  string // SQS's X-Amzn-Query-Error, for its query-compatible JSON
	msg    string
}

// errorFor is the error a call of type call gets for a Throttle or a
// ServerError, as the service behind it answers.
func errorFor(call string, kind Fault) awsError {
	service, _, _ := strings.Cut(call, ".")
	if kind == Throttle {
		switch service {
		case "DynamoDB":
			return awsError{http.StatusBadRequest, "ThrottlingException",
				"com.amazonaws.dynamodb.v20120810#ThrottlingException", "",
				"Rate of requests exceeds the allowed throughput (injected fault)."}
		case "SQS":
			return awsError{http.StatusBadRequest, "RequestThrottled",
				"com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender",
				"Request is throttled (injected fault)."}
		}
		return awsError{http.StatusBadRequest, "ThrottlingException", "ThrottlingException", "",
			"Rate exceeded (injected fault)."}
	}
	switch service {
	case "DynamoDB":
		return awsError{http.StatusInternalServerError, "InternalServerError",
			"com.amazonaws.dynamodb.v20120810#InternalServerError", "",
			"Internal server error (injected fault)."}
	case "SQS":
		return awsError{http.StatusInternalServerError, "InternalFailure",
			"com.amazonaws.sqs#InternalFailure", "InternalFailure;Receiver",
			"We encountered an internal error. Please try again (injected fault)."}
	}
	return awsError{http.StatusInternalServerError, "InternalFailure", "InternalFailure", "",
		"An internal error occurred (injected fault)."}
}

// writeFault answers r with the Throttle or ServerError of its service:
// for the JSON protocols (an X-Amz-Target) a {"__type","message"} body
// with X-Amzn-Errortype, as the SDK reads it (the header first, then
// __type, without its namespace); for the query protocol an XML
// ErrorResponse.
func writeFault(w http.ResponseWriter, r *http.Request, call string, kind Fault, requestID string) {
	e := errorFor(call, kind)
	h := w.Header()
	h.Set("X-Amzn-Requestid", requestID)
	if r.Header.Get("X-Amz-Target") == "" {
		fault := "Sender"
		if e.status >= 500 {
			fault = "Receiver"
		}
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>`)
		b.WriteString(fault)
		b.WriteString(`</Type><Code>`)
		xml.EscapeText(&b, []byte(e.code))
		b.WriteString(`</Code><Message>`)
		xml.EscapeText(&b, []byte(e.msg))
		b.WriteString(`</Message><Detail/></Error><RequestId>`)
		xml.EscapeText(&b, []byte(requestID))
		b.WriteString(`</RequestId></ErrorResponse>`)
		h.Set("Content-Type", "text/xml")
		h.Set("Content-Length", strconv.Itoa(b.Len()))
		w.WriteHeader(e.status)
		w.Write(b.Bytes())
		return
	}
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.typ, e.msg})
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/x-amz-json-") {
		ct = "application/x-amz-json-1.0"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-Errortype", e.code)
	if e.query != "" {
		h.Set("X-Amzn-Query-Error", e.query)
	}
	if IsDynamoDB(r) {
		// DynamoDB checksums its responses; the SDK checks when present.
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	}
	w.WriteHeader(e.status)
	w.Write(body)
}

// ParseRates reads per-call-type fault rates for Faults.Rates from their
// flag form, "DynamoDB.TransactWriteItems=0.2,SQS.DeleteMessage=0.1":
// comma-separated name=rate, each name a call type as CallType gives it
// and named once, each rate in [0, 1]. An empty s is no rates.
func ParseRates(s string) (map[string]float64, error) {
	rates := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return rates, nil
	}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("fault rates: %q: want name=rate", entry)
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "" {
			return nil, fmt.Errorf("fault rates: %q: empty call type", entry)
		}
		if !knownCallType(name) {
			return nil, fmt.Errorf("fault rates: %q: call type %q is not DynamoDB.<op>, SQS.<op>, SecretsManager.<op> or other", entry, name)
		}
		if _, dup := rates[name]; dup {
			return nil, fmt.Errorf("fault rates: %q: %s named twice", entry, name)
		}
		rate, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("fault rates: %q: rate %q is not a number", entry, value)
		}
		if math.IsNaN(rate) || rate < 0 || rate > 1 {
			return nil, fmt.Errorf("fault rates: %q: rate %v is outside [0, 1]", entry, rate)
		}
		rates[name] = rate
	}
	return rates, nil
}

// knownCallType reports whether name is a call type CallType can return.
func knownCallType(name string) bool {
	if name == "other" {
		return true
	}
	service, op, ok := strings.Cut(name, ".")
	if !ok || op == "" || strings.ContainsAny(op, ". ") {
		return false
	}
	for _, t := range targets {
		if service == t.service {
			return true
		}
	}
	return false
}
