package inboxstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// transactAPI answers TransactWriteItems with the errors given, in turn;
// moto never reports a TransactionConflict, so this is a fake.
type transactAPI struct {
	inboxstore.API
	errs  []error
	calls int
}

func (f *transactAPI) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.calls++
	if len(f.errs) == 0 {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return nil, err
}

func cancelledBy(codes ...string) error {
	var reasons []types.CancellationReason
	for _, c := range codes {
		reasons = append(reasons, types.CancellationReason{Code: aws.String(c)})
	}
	return &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
}

// TestCompleteRetriesConflicts: a transaction cancelled by a concurrent one
// is retried inside Complete a few times before it costs the message a
// receive; validation errors are permanent and not retried.
func TestCompleteRetriesConflicts(t *testing.T) {
	ev := newEvent("evt_conflict", []byte(`{}`))
	plan := effects.Plan{Facts: []effects.Fact{{Kind: "k", Key: "1"}}}
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		want      error // nil, or the sentinel the error wraps
	}{
		{"two conflicts then success", []error{cancelledBy("None", "TransactionConflict"), &types.TransactionConflictException{}}, 3, nil},
		{"conflicts that do not settle", []error{
			cancelledBy("TransactionConflict", "None"), cancelledBy("TransactionConflict", "None"),
			cancelledBy("TransactionConflict", "None"), cancelledBy("TransactionConflict", "None"),
		}, 4, inbox.ErrUnavailable},
		{"validation error", []error{cancelledBy("None", "ValidationError")}, 1, inbox.ErrInvalid},
		{"throttled", []error{cancelledBy("ThrottlingError", "None")}, 1, inbox.ErrUnavailable},
		{"lease lost", []error{cancelledBy("None", "ConditionalCheckFailed")}, 1, inbox.ErrLeaseLost},
	}
	t.Run("a retry cut short by the context says so", func(t *testing.T) {
		api := &transactAPI{errs: []error{cancelledBy("None", "TransactionConflict"), cancelledBy("None", "TransactionConflict")}}
		s := inboxstore.New(api, "inbox", retention)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := s.Complete(ctx, ev, "worker-a", plan, inbox.OutcomeApplied, t0)
		if !errors.Is(err, context.Canceled) || api.calls != 1 {
			t.Errorf("got %v after %d calls, want context.Canceled after 1", err, api.calls)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &transactAPI{errs: tt.errs}
			s := inboxstore.New(api, "inbox", retention)
			err := s.Complete(context.Background(), ev, "worker-a", plan, inbox.OutcomeApplied, t0)
			if api.calls != tt.wantCalls {
				t.Errorf("calls: got %d, want %d", api.calls, tt.wantCalls)
			}
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestCompleteDecodesReasons: each cancellation reason is read against the
// item it belongs to — facts, then updates, then rows, then the event —
// and the event's own refusal decides over its parts'.
func TestCompleteDecodesReasons(t *testing.T) {
	ev := newEvent("evt_reasons", []byte(`{}`))
	f := effects.Fact{Kind: "invoice_paid", Key: "in_1"}
	u := effects.Update{Entity: "membership", Key: "cus_1", Set: map[string]any{"a": 1}}
	o := effects.Outbound{Target: "receipt", Key: "r1", Body: []byte(`{}`)}
	plan := effects.Plan{Facts: []effects.Fact{f}, Updates: []effects.Update{u}, Outbound: []effects.Outbound{o}}
	tests := []struct {
		name       string
		codes      []string
		wantExists []string
		wantStale  []string
		want       error
	}{
		{"fact exists", []string{"ConditionalCheckFailed", "None", "None", "None"}, []string{f.ID()}, nil, nil},
		{"update stale", []string{"None", "ConditionalCheckFailed", "None", "None"}, nil, []string{u.ID()}, nil},
		{"row exists", []string{"None", "None", "ConditionalCheckFailed", "None"}, []string{o.ID()}, nil, nil},
		{"all three", []string{"ConditionalCheckFailed", "ConditionalCheckFailed", "ConditionalCheckFailed", "None"}, []string{f.ID(), o.ID()}, []string{u.ID()}, nil},
		{"the event not ours, whatever its parts", []string{"ConditionalCheckFailed", "ConditionalCheckFailed", "None", "ConditionalCheckFailed"}, nil, nil, inbox.ErrLeaseLost},
		{"an invalid part", []string{"None", "ValidationError", "None", "None"}, nil, nil, inbox.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := inboxstore.New(&transactAPI{errs: []error{cancelledBy(tt.codes...)}}, "inbox", retention)
			err := s.Complete(context.Background(), ev, "worker-a", plan, inbox.OutcomeApplied, t0)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Errorf("got %v, want %v", err, tt.want)
				}
				if tt.want == inbox.ErrInvalid && !strings.Contains(err.Error(), u.ID()) {
					t.Errorf("got %v, want it to name the refused part %s", err, u.ID())
				}
				return
			}
			var r *effects.RefusedError
			if !errors.As(err, &r) {
				t.Fatalf("got %v, want *effects.RefusedError", err)
			}
			if !slices.Equal(r.Exists, tt.wantExists) || !slices.Equal(r.Stale, tt.wantStale) {
				t.Errorf("got exists %v stale %v, want %v %v", r.Exists, r.Stale, tt.wantExists, tt.wantStale)
			}
		})
	}
}
