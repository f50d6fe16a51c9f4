package eventbus_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/eventbus"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// client is the adapter over the real SDK client, talking to url.
func client(url string) *eventbus.Client {
	return eventbus.New(eventbridge.NewFromConfig((&awstest.Server{Endpoint: url}).NoRetryConfig()))
}

// serve answers every PutEvents request with status and body after
// delay, counting the requests.
func serve(t *testing.T, status int, body string, delay time.Duration) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

var entries = []outbox.BusEntry{
	{Bus: "billing", Source: "webhook-inbox.stripe", DetailType: "invoice.paid", Detail: `{"id":"evt_1"}`, Time: time.Unix(1764500000, 0)},
	{Bus: "billing", Source: "webhook-inbox.stripe", DetailType: "invoice.paid", Detail: `{"id":"evt_2"}`, Time: time.Unix(1764500000, 0)},
	{Bus: "billing", Source: "webhook-inbox.stripe", DetailType: "invoice.paid", Detail: `{"id":"evt_3"}`, Time: time.Unix(1764500000, 0)},
}

// TestPutEntriesOutcomes: each entry's place in the answer, with the
// codes putting again cannot cure marked permanent.
func TestPutEntriesOutcomes(t *testing.T) {
	url, n := serve(t, 200, `{"FailedEntryCount":2,"Entries":[{"EventId":"id-1"},{"ErrorCode":"ThrottlingException","ErrorMessage":"slow down"},{"ErrorCode":"MalformedDetail","ErrorMessage":"bad"}]}`, 0)
	got, err := client(url).PutEntries(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	want := []outbox.BusOutcome{{EventID: "id-1"}, {Error: "ThrottlingException: slow down"}, {Error: "MalformedDetail: bad", Permanent: true}}
	if len(got) != len(want) {
		t.Fatalf("%d outcomes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1", n.Load())
	}
}

// TestPutEntriesFailures: how a request that fails whole is classified,
// with exactly one request made (the SDK's retries are off).
func TestPutEntriesFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		delay  time.Duration
		want   outbox.PutFailure
	}{
		{"throttled", 400, `{"__type":"ThrottlingException","message":"no"}`, 0, outbox.PutRefused},
		{"no such bus", 400, `{"__type":"ResourceNotFoundException","message":"no"}`, 0, outbox.PutRefused},
		{"denied", 400, `{"__type":"AccessDeniedException","message":"no"}`, 0, outbox.PutRefused},
		{"invalid", 400, `{"__type":"ValidationException","message":"no"}`, 0, outbox.PutInvalid},
		{"internal error", 500, `{"__type":"InternalException","message":"no"}`, 0, outbox.PutUnknown},
		{"too few answers", 200, `{"FailedEntryCount":0,"Entries":[{"EventId":"id-1"}]}`, 0, outbox.PutUnknown},
		{"timeout after the write", 200, `{"FailedEntryCount":0,"Entries":[{"EventId":"1"},{"EventId":"2"},{"EventId":"3"}]}`, time.Second, outbox.PutUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, n := serve(t, tc.status, tc.body, tc.delay)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := client(url).PutEntries(ctx, entries)
			var pe *outbox.PutError
			if !errors.As(err, &pe) || pe.Failure != tc.want {
				t.Fatalf("%v, want failure %d", err, tc.want)
			}
			if n.Load() != 1 {
				t.Errorf("%d requests, want exactly 1", n.Load())
			}
			if !strings.HasPrefix(pe.Error(), "PutEvents: ") {
				t.Errorf("error %q", pe.Error())
			}
		})
	}
	t.Run("not sent", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = client("http://"+addr).PutEntries(context.Background(), entries)
		var pe *outbox.PutError
		if !errors.As(err, &pe) || pe.Failure != outbox.PutNotSent {
			t.Fatalf("%v, want not sent", err)
		}
	})
}
