package inboxstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// PutWhole stores e as releases before the split layout did — payload,
// metadata and status in one item, under the event's key — replacing any
// item there, unconditionally. Nothing in this release stores an event so:
// it is how the tests of the migration (an upgraded stack's events, read
// and finished in the layout they were stored in) make such an event.
func (s *Store) PutWhole(ctx context.Context, e inbox.Event) error {
	av, err := attributevalue.MarshalMap(toItem(e, nil))
	if err != nil {
		return fmt.Errorf("put whole %s: %w", e.Key, err)
	}
	if _, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: av}); err != nil {
		return awserr.Wrap("put whole "+e.Key.String(), err)
	}
	return nil
}
