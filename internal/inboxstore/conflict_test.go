package inboxstore_test

import (
	"context"
	"errors"
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
	plan := effects.Plan{Records: []effects.Record{{Kind: "k", Key: "1"}}}
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
