package awserr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

func TestWrap(t *testing.T) {
	params := smithy.InvalidParamsError{Context: "PutItemInput"}
	params.Add(smithy.NewErrParamRequired("TableName"))
	tests := []struct {
		name      string
		err       error
		permanent bool
	}{
		{"validation", &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}, true},
		{"key too long", &smithy.GenericAPIError{Code: "ValidationException", Message: "Hash primary key values must be under 2048 bytes"}, true},
		{"sqs body too long", &smithy.GenericAPIError{Code: "InvalidParameterValue"}, true},
		{"client-side params", &params, true},
		{"wrapped validation", fmt.Errorf("op: %w", &smithy.GenericAPIError{Code: "ValidationException"}), true},
		{"throttling", &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultServer}, false},
		{"throughput", &types.ProvisionedThroughputExceededException{}, false},
		{"request limit", &types.RequestLimitExceeded{}, false},
		{"internal", &types.InternalServerError{}, false},
		{"transaction conflict", &types.TransactionConflictException{}, false},
		{"missing table", &types.ResourceNotFoundException{}, false},
		{"access denied", &smithy.GenericAPIError{Code: "AccessDeniedException"}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"transport", errors.New("read tcp: use of closed network connection"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Permanent(tt.err); got != tt.permanent {
				t.Fatalf("Permanent = %v, want %v", got, tt.permanent)
			}
			w := Wrap("put x", tt.err)
			if got := errors.Is(w, inbox.ErrInvalid); got != tt.permanent {
				t.Errorf("Wrap is ErrInvalid = %v, want %v", got, tt.permanent)
			}
			if got := errors.Is(w, inbox.ErrUnavailable); got == tt.permanent {
				t.Errorf("Wrap is ErrUnavailable = %v, want %v", got, !tt.permanent)
			}
			if !errors.Is(w, tt.err) {
				t.Errorf("Wrap lost the cause: %v", w)
			}
		})
	}
	if Permanent(nil) {
		t.Error("Permanent(nil) = true")
	}
}
