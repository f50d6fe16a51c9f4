package local_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqsschemas "github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
)

// fakeAWS is the local endpoint as the torture run builds it: Faults in
// front of the real router, in front of two fake services that count
// the calls reaching them and answer each protocol's success.
type fakeAWS struct {
	URL          string
	dynamo, rest atomic.Int64
}

func newFakeAWS(t testing.TB, f *local.Faults) *fakeAWS {
	t.Helper()
	a := &fakeAWS{}
	backend := func(n *atomic.Int64) *url.URL {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/x-amz-json-") {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", ct)
				io.WriteString(w, "{}")
				return
			}
			// The query protocol: the form must reach us whole.
			if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") == "" || r.PostForm.Get("ReceiptHandle") != "rh" {
				http.Error(w, fmt.Sprintf("form lost: %v %q", err, r.PostForm), http.StatusTeapot)
				return
			}
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprintf(w, "<%[1]sResponse><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></%[1]sResponse>", r.PostForm.Get("Action"))
		}))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		return u
	}
	dyn, rest := backend(&a.dynamo), backend(&a.rest)
	srv := httptest.NewServer(f.Wrap(local.NewRouter(dyn, rest)))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// seen is how many calls reached the fake services.
func (a *fakeAWS) seen() int64 { return a.dynamo.Load() + a.rest.Load() }

// call is one SDK call through the endpoint.
type call struct {
	name     string
	callType string
	throttle string // the code the SDK reports for Throttle
	internal string // and for ServerError
	// modeled reports whether the SDK gave a Throttle its modeled
	// error type, where the service models one.
	modeled func(error) bool
	do      func(ctx context.Context, a *fakeAWS, attempts int) error
}

func isAs[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// awsConfig is an SDK config for the endpoint making at most attempts
// attempts, with no wait between them.
func awsConfig(attempts int) aws.Config {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
}

var calls = []call{
	{"DynamoDB", "DynamoDB.PutItem", "ThrottlingException", "InternalServerError",
		isAs[*ddbtypes.ThrottlingException],
		func(ctx context.Context, a *fakeAWS, attempts int) error {
			c := dynamodb.NewFromConfig(awsConfig(attempts), func(o *dynamodb.Options) { o.BaseEndpoint = &a.URL })
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String("main"),
				Item:      map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}},
			})
			return err
		}},
	{"SQS JSON protocol", "SQS.DeleteMessage", "RequestThrottled", "InternalFailure",
		isAs[*sqstypes.RequestThrottled],
		func(ctx context.Context, a *fakeAWS, attempts int) error {
			c := sqs.NewFromConfig(awsConfig(attempts), func(o *sqs.Options) { o.BaseEndpoint = &a.URL })
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(a.URL + "/000000000000/main"), ReceiptHandle: aws.String("rh")})
			return err
		}},
	{"SQS query protocol", "SQS.DeleteMessage", "RequestThrottled", "InternalFailure",
		isAs[*sqstypes.RequestThrottled],
		func(ctx context.Context, a *fakeAWS, attempts int) error {
			c := sqs.NewFromConfig(awsConfig(attempts), func(o *sqs.Options) {
				o.BaseEndpoint = &a.URL
				o.Protocol = awsquery.New(sqsschemas.AmazonSQS)
			})
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(a.URL + "/000000000000/main"), ReceiptHandle: aws.String("rh")})
			return err
		}},
	{"Secrets Manager", "SecretsManager.GetSecretValue", "ThrottlingException", "InternalFailure",
		nil, // Secrets Manager does not model ThrottlingException
		func(ctx context.Context, a *fakeAWS, attempts int) error {
			c := secretsmanager.NewFromConfig(awsConfig(attempts), func(o *secretsmanager.Options) { o.BaseEndpoint = &a.URL })
			_, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("stripe")})
			return err
		}},
}

// TestFaultKinds: each fault, on each service and protocol, reaches the
// real SDK as the real failure: an API error with the service's code and
// status, retryable (Throttle as a throttle), or a connection error; and
// the call reaches the service only for Delay and Drop. With retries on,
// the SDK's standard retryer retries every fault.
func TestFaultKinds(t *testing.T) {
	isThrottle := func(err error) bool {
		return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
	}
	isRetryable := func(err error) bool {
		return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
	}
	for _, c := range calls {
		for _, kind := range local.AllFaults {
			t.Run(c.name+"/"+kind.String(), func(t *testing.T) {
				t.Parallel()
				f := &local.Faults{Rate: 1, Kinds: []local.Fault{kind}, MaxDelay: 20 * time.Millisecond}
				a := newFakeAWS(t, f)
				err := c.do(t.Context(), a, 1)
				t.Logf("error: %v", err)

				var wantSeen int64
				var api smithy.APIError
				var resp *awshttp.ResponseError
				var send *smithyhttp.RequestSendError
				switch kind {
				case Throttle, ServerError:
					code, status := c.throttle, http.StatusBadRequest
					if kind == ServerError {
						code, status = c.internal, http.StatusInternalServerError
					}
					if !errors.As(err, &api) {
						t.Fatalf("got %v, want an API error", err)
					}
					if got := api.ErrorCode(); got != code {
						t.Errorf("code: got %q, want %q", got, code)
					}
					if !errors.As(err, &resp) || resp.HTTPStatusCode() != status {
						t.Errorf("got %v, want HTTP %d", err, status)
					}
					if kind == Throttle && c.modeled != nil && !c.modeled(err) {
						t.Errorf("got %T, want the SDK's modeled error", api)
					}
					if !isRetryable(err) {
						t.Errorf("the SDK does not retry %v", err)
					}
					if got := isThrottle(err); got != (kind == Throttle) {
						t.Errorf("a throttle to the SDK: got %v, want %v", got, kind == Throttle)
					}
					if awserr.Permanent(err) {
						t.Errorf("awserr.Permanent(%v): got true, want a transient error", err)
					}
				case Cut, Drop:
					if errors.As(err, &api) {
						t.Fatalf("got the API error %v, want a connection error", err)
					}
					if !errors.As(err, &send) {
						t.Fatalf("got %v, want a *smithyhttp.RequestSendError", err)
					}
					if !isRetryable(err) {
						t.Errorf("the SDK does not retry %v", err)
					}
					if kind == Drop {
						wantSeen = 1
					}
				case Delay:
					if err != nil {
						t.Fatal(err)
					}
					wantSeen = 1
				}
				if got := a.seen(); got != wantSeen {
					t.Errorf("calls reaching the service: got %d, want %d", got, wantSeen)
				}
				n := f.Counts()
				if n.Calls != 1 || n.Total() != 1 || n.ByFault[kind.String()] != 1 || n.ByCall[c.callType] != 1 {
					t.Errorf("counts: got %+v, want 1 call, 1 %s of %s", n, kind, c.callType)
				}

				if kind == Delay {
					return
				}
				// The SDK's standard retryer retries each fault: three
				// attempts pass, and only Drop's reach the service.
				f2 := &local.Faults{Rate: 1, Kinds: []local.Fault{kind}}
				a2 := newFakeAWS(t, f2)
				if err := c.do(t.Context(), a2, 3); err == nil {
					t.Fatal("got success, want the fault after three attempts")
				}
				if got := f2.Counts().Calls; got != 3 {
					t.Errorf("attempts: got %d, want 3", got)
				}
				wantSeen = 0
				if kind == Drop {
					wantSeen = 3
				}
				if got := a2.seen(); got != wantSeen {
					t.Errorf("calls reaching the service after retries: got %d, want %d", got, wantSeen)
				}
			})
		}
	}
}

// TestFaultErrorBodies: the errors are spelled as the services spell
// them, in every part a client may read: __type in the body as well as
// X-Amzn-Errortype (the Go SDK reads the header first), SQS's
// X-Amzn-Query-Error, DynamoDB's X-Amz-Crc32, the query protocol's
// ErrorResponse.
func TestFaultErrorBodies(t *testing.T) {
	for _, tt := range []struct {
		target, contentType string
		kind                local.Fault
		status              int
		typ, query          string
	}{
		{"DynamoDB_20120810.PutItem", "application/x-amz-json-1.0", Throttle, 400, "com.amazonaws.dynamodb.v20120810#ThrottlingException", ""},
		{"DynamoDB_20120810.PutItem", "application/x-amz-json-1.0", ServerError, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", ""},
		{"AmazonSQS.SendMessage", "application/x-amz-json-1.0", Throttle, 400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender"},
		{"AmazonSQS.SendMessage", "application/x-amz-json-1.0", ServerError, 500, "com.amazonaws.sqs#InternalFailure", "InternalFailure;Receiver"},
		{"secretsmanager.GetSecretValue", "application/x-amz-json-1.1", Throttle, 400, "ThrottlingException", ""},
		{"secretsmanager.GetSecretValue", "application/x-amz-json-1.1", ServerError, 500, "InternalFailure", ""},
		{"", "application/x-www-form-urlencoded", Throttle, 400, "RequestThrottled", ""},
		{"", "application/x-www-form-urlencoded", ServerError, 500, "InternalFailure", ""},
	} {
		t.Run(tt.target+"/"+tt.kind.String(), func(t *testing.T) {
			f := &local.Faults{Rate: 1, Kinds: []local.Fault{tt.kind}}
			h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("forwarded") }))
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("Action=SendMessage"))
			r.Header.Set("Content-Type", tt.contentType)
			if tt.target != "" {
				r.Header.Set("X-Amz-Target", tt.target)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Errorf("status: got %d, want %d", w.Code, tt.status)
			}
			if w.Header().Get("X-Amzn-Requestid") == "" {
				t.Error("no X-Amzn-Requestid")
			}
			if tt.target == "" {
				var e struct {
					XMLName   xml.Name `xml:"ErrorResponse"`
					Error     struct{ Type, Code, Message string }
					RequestID string `xml:"RequestId"`
				}
				if err := xml.Unmarshal(w.Body.Bytes(), &e); err != nil {
					t.Fatalf("%v: %s", err, w.Body)
				}
				wantType := map[int]string{400: "Sender", 500: "Receiver"}[tt.status]
				if e.Error.Code != tt.typ || e.Error.Type != wantType || e.Error.Message == "" || e.RequestID == "" {
					t.Errorf("got %+v, want %s from the %s", e, tt.typ, wantType)
				}
				return
			}
			if got := w.Header().Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.contentType)
			}
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatalf("%v: %s", err, w.Body)
			}
			if e.Type != tt.typ || e.Message == "" {
				t.Errorf("body: got %+v, want __type %q and a message", e, tt.typ)
			}
			if got, want := w.Header().Get("X-Amzn-Errortype"), tt.typ[strings.Index(tt.typ, "#")+1:]; got != want {
				t.Errorf("X-Amzn-Errortype: got %q, want %q", got, want)
			}
			if got := w.Header().Get("X-Amzn-Query-Error"); got != tt.query {
				t.Errorf("X-Amzn-Query-Error: got %q, want %q", got, tt.query)
			}
			if local.IsDynamoDB(r) {
				if got, want := w.Header().Get("X-Amz-Crc32"), fmt.Sprint(crc32.ChecksumIEEE(w.Body.Bytes())); got != want {
					t.Errorf("X-Amz-Crc32: got %q, want %q", got, want)
				}
			}
		})
	}
}

// The Fault names, short for the table above.
const (
	Throttle    = local.Throttle
	ServerError = local.ServerError
	Delay       = local.Delay
	Cut         = local.Cut
	Drop        = local.Drop
)

// TestFaultsPassThrough: at rate 0, and switched off at rate 1, every
// call reaches the service and no fault is counted; switched back on,
// faults return.
func TestFaultsPassThrough(t *testing.T) {
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := local.NewFaults(0, 1)
			a := newFakeAWS(t, f)
			for range 3 {
				if err := c.do(t.Context(), a, 1); err != nil {
					t.Fatalf("rate 0: %v", err)
				}
			}
			if got := a.seen(); got != 3 {
				t.Errorf("rate 0: calls reaching the service: got %d, want 3", got)
			}
			if n := f.Counts(); n.Calls != 3 || n.Total() != 0 || n.CallsBy[c.callType] != 3 || len(n.CallsBy) != 1 {
				t.Errorf("rate 0: counts: got %+v, want 3 calls of %s, no faults", n, c.callType)
			}

			f = local.NewFaults(1, 1)
			f.SetEnabled(false)
			a = newFakeAWS(t, f)
			for range 3 {
				if err := c.do(t.Context(), a, 1); err != nil {
					t.Fatalf("switched off: %v", err)
				}
			}
			if got := a.seen(); got != 3 {
				t.Errorf("switched off: calls reaching the service: got %d, want 3", got)
			}
			if n := f.Counts(); n.Total() != 0 || len(n.ByCall) != 0 || n.CallsBy[c.callType] != 3 {
				t.Errorf("switched off: counts: got %+v, want 3 calls of %s, no faults", n, c.callType)
			}
			f.SetEnabled(true)
			if err := c.do(t.Context(), a, 1); err == nil {
				t.Error("switched on at rate 1: got success, want a fault")
			}
			if n := f.Counts(); n.Total() != 1 {
				t.Errorf("switched on: faults: got %d, want 1", n.Total())
			}
		})
	}
}

// TestFaultRates: a call type's entry in Rates overrides Rate, both ways.
func TestFaultRates(t *testing.T) {
	get := func(ctx context.Context, a *fakeAWS) error {
		c := dynamodb.NewFromConfig(awsConfig(1), func(o *dynamodb.Options) { o.BaseEndpoint = &a.URL })
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String("main"),
			Key:       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}},
		})
		return err
	}
	put := func(ctx context.Context, a *fakeAWS) error { return calls[0].do(ctx, a, 1) }

	f := &local.Faults{Rates: map[string]float64{"DynamoDB.PutItem": 1}, Kinds: []local.Fault{Throttle}}
	a := newFakeAWS(t, f)
	var throttled *ddbtypes.ThrottlingException
	if err := put(t.Context(), a); !errors.As(err, &throttled) {
		t.Errorf("PutItem at rate 1: got %v, want a ThrottlingException", err)
	}
	if err := get(t.Context(), a); err != nil {
		t.Errorf("GetItem at rate 0: %v", err)
	}
	if n := f.Counts(); n.Calls != 2 || n.ByCall["DynamoDB.PutItem"] != 1 || n.ByCall["DynamoDB.GetItem"] != 0 {
		t.Errorf("counts: got %+v, want PutItem's fault only", n)
	}

	f = &local.Faults{Rate: 1, Rates: map[string]float64{"DynamoDB.GetItem": 0}, Kinds: []local.Fault{ServerError}}
	a = newFakeAWS(t, f)
	var internal *ddbtypes.InternalServerError
	if err := put(t.Context(), a); !errors.As(err, &internal) {
		t.Errorf("PutItem at rate 1: got %v, want an InternalServerError", err)
	}
	if err := get(t.Context(), a); err != nil {
		t.Errorf("GetItem at rate 0: %v", err)
	}
}

// hijackRecorder is a ResponseRecorder that can be hijacked, as net/http's
// server's ResponseWriter can: a Cut or a Drop shows as hijacked.
type hijackRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h.hijacked = true
	c, s := net.Pipe()
	s.Close()
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// outcomes passes n DynamoDB calls through f one at a time and returns
// what each caller saw.
func outcomes(f *local.Faults, n int) []string {
	var seen int
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen++ }))
	out := make([]string, n)
	for i := range out {
		op := []string{"PutItem", "GetItem", "TransactWriteItems"}[i%3]
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		w := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
		before := seen
		h.ServeHTTP(w, r)
		out[i] = fmt.Sprintf("%d %s hijacked=%v forwarded=%v", w.Code, w.Header().Get("X-Amzn-Errortype"), w.hijacked, seen > before)
	}
	return out
}

// TestFaultsRandom: over many calls the faults come near their rate and
// their kinds near equally often, and a seed makes the same choices for
// the same calls given one at a time (and another seed others).
func TestFaultsRandom(t *testing.T) {
	newFaults := func(rate float64, seed uint64) *local.Faults {
		f := local.NewFaults(rate, seed)
		f.MaxDelay = time.Nanosecond
		return f
	}
	f := newFaults(0.05, 7)
	got := outcomes(f, 2000)
	n := f.Counts()
	if n.Calls != 2000 || n.Total() < 50 || n.Total() > 150 {
		t.Errorf("at rate 0.05 over 2000 calls: got %d calls, %d faults, want 50..150", n.Calls, n.Total())
	}
	again := newFaults(0.05, 7)
	if same := outcomes(again, 2000); strings.Join(same, "\n") != strings.Join(got, "\n") {
		t.Error("the same seed made other choices")
	}
	if m := again.Counts(); fmt.Sprint(m) != fmt.Sprint(n) {
		t.Errorf("the same seed: got counts %v, want %v", m, n)
	}
	if other := outcomes(newFaults(0.05, 8), 2000); strings.Join(other, "\n") == strings.Join(got, "\n") {
		t.Error("another seed made the same choices")
	}

	f = newFaults(1, 7)
	outcomes(f, 2000)
	n = f.Counts()
	for _, k := range local.AllFaults {
		if got := n.ByFault[k.String()]; got < 300 || got > 500 {
			t.Errorf("%s: got %d of 2000, want about 400", k, got)
		}
	}
	for _, op := range []string{"PutItem", "GetItem", "TransactWriteItems"} {
		if got := n.ByCall["DynamoDB."+op]; got < 666 || got > 667 {
			t.Errorf("faults of DynamoDB.%s: got %d, want 666 or 667", op, got)
		}
	}
}

// TestFaultsWithoutHijack: where the connection cannot be hijacked, Cut
// and Drop answer as a ServerError, without forwarding, and count as one.
func TestFaultsWithoutHijack(t *testing.T) {
	for _, kind := range []local.Fault{Cut, Drop} {
		t.Run(kind.String(), func(t *testing.T) {
			f := &local.Faults{Rate: 1, Kinds: []local.Fault{kind}}
			var seen int
			h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen++ }))
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"QueueUrl":"q"}`))
			r.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
			r.Header.Set("Content-Type", "application/x-amz-json-1.0")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusInternalServerError || w.Header().Get("X-Amzn-Errortype") != "InternalFailure" {
				t.Errorf("got %d %q, want 500 InternalFailure", w.Code, w.Header().Get("X-Amzn-Errortype"))
			}
			if seen != 0 {
				t.Errorf("forwarded %d times, want 0", seen)
			}
			if n := f.Counts(); n.ByFault["server_error"] != 1 || n.ByFault[kind.String()] != 0 {
				t.Errorf("counts: got %v, want one server_error", n.ByFault)
			}
		})
	}
}

// TestFaultDelayEndsWithTheCall: a Delay stops when the caller goes, and
// does not then forward the call.
func TestFaultDelayEndsWithTheCall(t *testing.T) {
	f := &local.Faults{Rate: 1, Kinds: []local.Fault{Delay}, MaxDelay: time.Hour, Seed: 3}
	var seen atomic.Int64
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader("{}"))
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), r)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the delay went on %v after the call ended", d)
	}
	if seen.Load() != 0 {
		t.Error("forwarded a call whose caller had gone")
	}
}

// TestFaultsConcurrent: calls, counts and the switch at once (run with
// -race); every call is counted.
func TestFaultsConcurrent(t *testing.T) {
	f := &local.Faults{Rate: 0.5, MaxDelay: time.Millisecond, Seed: 1}
	a := newFakeAWS(t, f)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if w == 0 && i%5 == 0 {
					f.SetEnabled(i%10 != 0)
					f.Counts()
				}
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.URL, strings.NewReader("{}"))
				req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if n := f.Counts(); n.Calls != workers*each || n.Total() == 0 || n.ByCall["DynamoDB.PutItem"] != n.Total() {
		t.Errorf("counts: got %+v, want %d calls, some faults, all of PutItem", n, workers*each)
	}
}

// TestCallType names calls by service and operation, from the JSON
// protocols' X-Amz-Target or the query protocol's Action, and leaves a
// form body for the next handler to read.
func TestCallType(t *testing.T) {
	form := "Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2F127.0.0.1%2F000000000000%2Fmain&MessageBody=hello"
	for _, tt := range []struct {
		name, method, target, contentType, auth, query, body, want string
	}{
		{name: "DynamoDB", target: "DynamoDB_20120810.PutItem", want: "DynamoDB.PutItem"},
		{name: "DynamoDB transaction", target: "DynamoDB_20120810.TransactWriteItems", want: "DynamoDB.TransactWriteItems"},
		{name: "SQS JSON protocol", target: "AmazonSQS.ReceiveMessage", want: "SQS.ReceiveMessage"},
		{name: "Secrets Manager", target: "secretsmanager.GetSecretValue", want: "SecretsManager.GetSecretValue"},
		{name: "DynamoDB Streams", target: "DynamoDBStreams_20120810.ListStreams", want: "other"},
		{name: "a target without an operation", target: "AmazonSQS.", want: "other"},
		{name: "SQS query protocol", contentType: "application/x-www-form-urlencoded; charset=utf-8", body: form, want: "SQS.SendMessage",
			auth: "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=00"},
		{name: "SQS query protocol, unsigned", contentType: "application/x-www-form-urlencoded", body: form, want: "SQS.SendMessage"},
		{name: "SQS query protocol in the URL", method: http.MethodGet, query: "?Action=ListQueues", want: "SQS.ListQueues"},
		{name: "STS query protocol", contentType: "application/x-www-form-urlencoded", body: "Action=GetCallerIdentity&Version=2011-06-15", want: "other",
			auth: "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=00"},
		{name: "a form without an Action", contentType: "application/x-www-form-urlencoded", body: "QueueUrl=q", want: "other"},
		{name: "JSON without a target", contentType: "application/json", body: `{"Action":"SendMessage"}`, want: "other"},
		{name: "nothing", method: http.MethodGet, want: "other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, "/"+tt.query, strings.NewReader(tt.body))
			for k, v := range map[string]string{"X-Amz-Target": tt.target, "Content-Type": tt.contentType, "Authorization": tt.auth} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			if got := local.CallType(r); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if b, err := io.ReadAll(r.Body); err != nil || string(b) != tt.body {
				t.Errorf("the body left for the next handler: got %q, %v, want %q", b, err, tt.body)
			}
		})
	}
}

// TestCallTypeBodyError: a body that fails to read fails the same way for
// the next handler, after what was read.
func TestCallTypeBodyError(t *testing.T) {
	broken := errors.New("broken")
	r := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader("Action=Send"), errorReader{broken}))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if got := local.CallType(r); got != "other" {
		t.Errorf("got %q, want other", got)
	}
	b, err := io.ReadAll(r.Body)
	if string(b) != "Action=Send" || !errors.Is(err, broken) {
		t.Errorf("the body left: got %q, %v, want %q, %v", b, err, "Action=Send", broken)
	}
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// TestParseRates reads the flag form and refuses what it cannot mean.
func TestParseRates(t *testing.T) {
	got, err := local.ParseRates(" DynamoDB.TransactWriteItems=0.2, SQS.DeleteMessage = 0.1 ,SecretsManager.GetSecretValue=1,other=0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"DynamoDB.TransactWriteItems": 0.2, "SQS.DeleteMessage": 0.1, "SecretsManager.GetSecretValue": 1, "other": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, err := local.ParseRates(""); err != nil || len(got) != 0 {
		t.Errorf("empty: got %v, %v, want no rates", got, err)
	}
	for _, tt := range []struct{ in, want string }{
		{"DynamoDB.PutItem", "want name=rate"},
		{"DynamoDB.PutItem:0.1", "want name=rate"},
		{"=0.1", "empty call type"},
		{"DynamoDB.PutItem=", "not a number"},
		{"DynamoDB.PutItem=lots", "not a number"},
		{"DynamoDB.PutItem=1.5", "outside [0, 1]"},
		{"DynamoDB.PutItem=-0.1", "outside [0, 1]"},
		{"DynamoDB.PutItem=NaN", "outside [0, 1]"},
		{"DynamoDB_20120810.PutItem=0.1", "is not DynamoDB.<op>"},
		{"dynamodb.PutItem=0.1", "is not DynamoDB.<op>"},
		{"DynamoDB=0.1", "is not DynamoDB.<op>"},
		{"DynamoDB.PutItem=0.1,DynamoDB.PutItem=0.2", "named twice"},
		{"DynamoDB.PutItem=0.1,", "want name=rate"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := local.ParseRates(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, %v, want an error saying %q", got, err, tt.want)
			}
		})
	}
}

// TestFaultString names the faults as the counts do.
func TestFaultString(t *testing.T) {
	var got []string
	for _, k := range append(local.AllFaults, local.Fault(9)) {
		got = append(got, k.String())
	}
	if want := "throttle server_error delay cut drop Fault(9)"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}
