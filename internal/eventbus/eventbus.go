// Package eventbus is the outbox's EventBridge adapter: it makes one
// PutEvents request of a batch of entries, with the SDK's retries off,
// and classifies what came of it — once, here — into outbox's terms.
package eventbus

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// PutEventsAPI is the part of the EventBridge client the adapter calls.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ PutEventsAPI = (*eventbridge.Client)(nil)

// Client puts entries through the SDK.
type Client struct {
	api PutEventsAPI
}

var _ outbox.Bus = (*Client)(nil)

// New returns a client over api.
func New(api PutEventsAPI) *Client { return &Client{api: api} }

// permanentEntryCodes are the per-entry PutEvents errors that putting the
// same entry again cannot cure.
var permanentEntryCodes = map[string]bool{
	"MalformedDetail":     true,
	"InvalidArgument":     true,
	"MalformedDetailType": true,
}

// PutEntries makes one PutEvents request of entries under ctx (whose
// deadline bounds it), with the SDK's own retries off. It returns each
// entry's outcome, or a *outbox.PutError:
//
//   - an error answer with a 4xx status: PutRefused, or PutInvalid if the
//     request is invalid in itself;
//   - a request the SDK refused to send: PutInvalid;
//   - a request that cannot have been written whole (no connection was
//     had, or its write failed): PutNotSent;
//   - a 5xx answer, a timeout or a connection lost after the request was
//     written, or an answer with a different number of entries:
//     PutUnknown.
func (c *Client) PutEntries(ctx context.Context, entries []outbox.BusEntry) ([]outbox.BusOutcome, error) {
	in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(entries))}
	for i, e := range entries {
		in.Entries[i] = types.PutEventsRequestEntry{
			EventBusName: aws.String(e.Bus), Source: aws.String(e.Source), DetailType: aws.String(e.DetailType),
			Detail: aws.String(e.Detail), Time: aws.Time(e.Time),
		}
	}
	// Not sent is known only where no connection was had, or the write
	// failed: a call that ends with a connection and no report of its
	// write may have written it all (the transport reports after the
	// last write, and the deadline can fall between the two).
	var got, writeFailed atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { got.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err != nil {
				writeFailed.Store(true)
			}
		},
	})
	out, err := c.api.PutEvents(ctx, in, func(o *eventbridge.Options) { o.Retryer = aws.NopRetryer{} })
	if err != nil {
		return nil, classify(err, !got.Load() || writeFailed.Load())
	}
	if len(out.Entries) != len(entries) {
		return nil, &outbox.PutError{Failure: outbox.PutUnknown, Err: fmt.Errorf("answered %d entries for %d", len(out.Entries), len(entries))}
	}
	outcomes := make([]outbox.BusOutcome, len(entries))
	for i, e := range out.Entries {
		if e.ErrorCode == nil && e.EventId != nil {
			outcomes[i].EventID = *e.EventId
			continue
		}
		code := aws.ToString(e.ErrorCode)
		outcomes[i].Error = code + ": " + aws.ToString(e.ErrorMessage)
		outcomes[i].Permanent = permanentEntryCodes[code]
	}
	return outcomes, nil
}

// classify says how a request failed whole; notSent: it cannot have been
// written whole.
func classify(err error, notSent bool) *outbox.PutError {
	// The SDK wraps a call with no answer (a timeout) in a ResponseError
	// too, of status 0.
	var resp *smithyhttp.ResponseError
	status := 0
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	f := outbox.PutUnknown
	switch {
	case status >= 400 && status < 500:
		f = outbox.PutRefused
		if awserr.Permanent(err) {
			f = outbox.PutInvalid
		}
	case status == 0 && awserr.Permanent(err):
		f = outbox.PutInvalid
	case status == 0 && notSent:
		f = outbox.PutNotSent
	}
	return &outbox.PutError{Failure: f, StatusCode: status, Err: err}
}
