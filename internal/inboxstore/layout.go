package inboxstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
)

// Parts had no scope in earlier releases: a fact was one item for every
// source and account (fact#invoice_paid#in_1). Events stored by those
// releases keep those unscoped IDs (inbox.Event.Unscoped), so that a
// re-run or a retry of one meets the parts it wrote. A table that holds
// unscoped facts has a second way to write one fact twice: an event
// stored since (scoped) carrying a fact an unscoped event recorded, or
// the reverse. While the table may hold them, every commit checks each
// fact's twin in the other layout, in the same transaction (see
// twinCheck): a scoped event's fact is refused when its unscoped twin was
// recorded by an event of the same source and account; an unscoped
// event's fact when its twin in the event's own scope exists.
//
// Whether the table may hold them is decided once, by the first
// processor to start on it (DetectUnscopedFacts), and kept in the
// table's layout item.

// LayoutPK is the table's layout item: the one item that is neither an
// event nor a part.
const LayoutPK = "meta#layout"

// layoutSample is how many items the first look at a table reads: a
// table with no more than these, all written by this release, holds no
// unscoped fact.
const layoutSample = 100

// LayoutAPI is what DetectUnscopedFacts calls: it reads the layout item,
// and once per table looks at the first items.
type LayoutAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ LayoutAPI = (*dynamodb.Client)(nil)

// DetectUnscopedFacts reports whether the table may hold facts written
// without a scope, from its layout item; a table without one gets it
// now: true when its first items (up to layoutSample, read once) are not
// all this release's — an event item without a scope, a part with an
// unscoped ID, or more items than the sample holds — false for a new
// table, or one whose few items all came from this release (a processor
// starting after ingest stored the first events). On an error it returns
// true with the error: checking twins is never wrong, only dearer.
func DetectUnscopedFacts(ctx context.Context, api LayoutAPI, table string, now time.Time) (bool, error) {
	key := map[string]types.AttributeValue{"pk": str(LayoutPK)}
	read := func() (bool, bool, error) {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return true, false, awserr.Wrap("get layout", err)
		}
		if out.Item == nil {
			return true, false, nil
		}
		v, ok := out.Item["unscoped_facts"].(*types.AttributeValueMemberBOOL)
		return !ok || v.Value, true, nil
	}
	unscoped, found, err := read()
	if err != nil || found {
		return unscoped, err
	}
	out, err := api.Scan(ctx, &dynamodb.ScanInput{TableName: &table, Limit: aws.Int32(layoutSample), ProjectionExpression: aws.String("pk, #scope"),
		ExpressionAttributeNames: map[string]string{"#scope": "scope"}})
	if err != nil {
		return true, awserr.Wrap("scan for layout", err)
	}
	unscoped = out.LastEvaluatedKey != nil
	for _, it := range out.Items {
		if earlierRelease(it) {
			unscoped = true
		}
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &table,
		Item: map[string]types.AttributeValue{
			"pk":             str(LayoutPK),
			"unscoped_facts": &types.AttributeValueMemberBOOL{Value: unscoped},
			"decided_at":     str(ts(now)),
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		// Another processor decided first: its answer is the table's.
		unscoped, _, err = read()
		return unscoped, err
	case err != nil:
		return true, awserr.Wrap("put layout", err)
	}
	return unscoped, nil
}

// earlierRelease reports whether an item was written by a release
// before parts had scopes: an event without a scope, or a fact, entity
// or row under an unscoped ID.
func earlierRelease(it map[string]types.AttributeValue) bool {
	pk, _ := it["pk"].(*types.AttributeValueMemberS)
	if pk == nil {
		return true
	}
	id := pk.Value
	if strings.HasPrefix(id, eventPrefix) {
		_, scoped := it["scope"]
		return !scoped
	}
	for _, prefix := range [...]string{effects.FactPrefix, effects.EntityPrefix, effects.OutboundPrefix} {
		if strings.HasPrefix(id, prefix) {
			return !effects.IsScopedID(id)
		}
	}
	return false
}

// WithUnscopedFacts makes every commit check its facts' twins in the other
// layout (see DetectUnscopedFacts); a table that holds no unscoped fact
// needs none.
func (s *Store) WithUnscopedFacts(on bool) *Store {
	s.unscopedFacts = on
	return s
}

// twinCheck is the check of a fact's twin in the other layout for an
// event of key k in scope (empty: the event is unscoped, and its twin is
// in the event's own scope, own).
func (s *Store) twinCheck(k string, scope, own string, f effects.Fact) types.TransactWriteItem {
	if scope == "" {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:           &s.table,
			Key:                 map[string]types.AttributeValue{"pk": str(effects.ScopedID(own, f.ID()))},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}}
	}
	// The unscoped fact counts only when an event of this source and
	// account recorded it: another tenant's is not this one's.
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(f.ID())},
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR NOT begins_with(event_key, :mine)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":mine": str(k)},
	}}
}
