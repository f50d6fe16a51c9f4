// Package awserr decides, once for every adapter, whether an AWS SDK error
// is worth retrying. The adapters (inboxstore, queue, secrets) wrap every
// SDK failure through Wrap, so the rest of the system branches only on
// inbox.ErrUnavailable (a retry may cure it) and inbox.ErrInvalid (it cannot).
package awserr

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// permanentCodes are the error codes AWS returns for a request that is
// wrong in itself: too large, malformed, over a service limit. Sending it
// again gives the same answer.
var permanentCodes = map[string]bool{
	// DynamoDB: item over 400 KB, key over 2048 bytes, an empty key, a
	// transaction over 100 items or 4 MB, a malformed expression.
	"ValidationException":    true,
	"SerializationException": true,
	// A local secondary index's item collection over 10 GB: only deleting
	// items cures it, not waiting.
	"ItemCollectionSizeLimitExceededException": true,
	// SQS: a body over 1 MiB or with characters SQS refuses.
	"InvalidParameterValue":          true,
	"InvalidParameterValueException": true,
	"InvalidMessageContents":         true,
	"MessageTooLong":                 true,
	"InvalidAttributeValue":          true,
	"RequestEntityTooLarge":          true,
	// Secrets Manager: a request it cannot parse.
	"InvalidRequestException": true,
}

// Permanent reports whether err is an AWS answer that no retry can change:
// a request the SDK refused to send (missing or invalid parameters) or one
// the service rejected as invalid or too large.
//
// Everything else is transient: throttling, ProvisionedThroughputExceeded,
// TransactionConflict, 5xx, timeouts, a cancelled context, a broken
// connection. So are a missing table or queue and a denied permission:
// they are deployment mistakes an operator fixes, and the events must
// still be there when they do.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var params *smithy.InvalidParamsError
	if errors.As(err, &params) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return permanentCodes[api.ErrorCode()]
	}
	return false
}

// Wrap classifies an SDK failure of op: the result wraps inbox.ErrInvalid
// when Permanent(err), else inbox.ErrUnavailable, and err itself.
func Wrap(op string, err error) error {
	if Permanent(err) {
		return fmt.Errorf("%s: %w: %w", op, inbox.ErrInvalid, err)
	}
	return fmt.Errorf("%s: %w: %w", op, inbox.ErrUnavailable, err)
}
