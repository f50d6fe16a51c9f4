package inboxstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// putRaw writes an item as an earlier release did.
func putRaw(tb testing.TB, db *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	tb.Helper()
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		tb.Fatal(err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestDetectUnscopedFacts: a new table, or one holding only this release's
// items, has no unscoped facts; a table holding an earlier release's event
// or fact may; the answer is kept in the table and read back.
func TestDetectUnscopedFacts(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	for _, tt := range []struct {
		name  string
		setup func(tb testing.TB, s *inboxstore.Store, table string)
		want  bool
	}{
		{"new table", func(testing.TB, *inboxstore.Store, string) {}, false},
		{"this release's events and parts", func(tb testing.TB, st *inboxstore.Store, _ string) {
			e := mustClaimed(tb, st, "evt_now", "w")
			plan := effects.Plan{Facts: []effects.Fact{{Kind: "invoice_paid", Key: "in_1"}}}
			if err := st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
				tb.Fatal(err)
			}
		}, false},
		{"an earlier release's fact", func(tb testing.TB, _ *inboxstore.Store, table string) {
			putRaw(tb, db, table, map[string]types.AttributeValue{"pk": s("fact#invoice_paid#in_1"), "event_key": s("stripe##evt_1")})
		}, true},
		{"an earlier release's event", func(tb testing.TB, _ *inboxstore.Store, table string) {
			putRaw(tb, db, table, map[string]types.AttributeValue{"pk": s("event#stripe##evt_1"), "status": s("processed")})
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, table := newStoreOn(t, db)
			tt.setup(t, st, table)
			got, err := inboxstore.DetectUnscopedFacts(ctx, db, table, t0)
			if err != nil || got != tt.want {
				t.Fatalf("got %t, %v; want %t", got, err, tt.want)
			}
			// Decided once: an earlier release's item written now changes
			// nothing (none can be: this release writes none).
			putRaw(t, db, table, map[string]types.AttributeValue{"pk": s("fact#late#1")})
			if got, err := inboxstore.DetectUnscopedFacts(ctx, db, table, t0); err != nil || got != tt.want {
				t.Errorf("again: got %t, %v; want %t, as decided", got, err, tt.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		got, err := inboxstore.DetectUnscopedFacts(ctx, layoutDown{}, "inbox", t0)
		if err == nil || !got {
			t.Errorf("got %t, %v; want true with the error", got, err)
		}
	})
}

type layoutDown struct{ inboxstore.LayoutAPI }

func (layoutDown) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("connection refused")
}

// TestFactTwins: on a table that may hold facts of an earlier release,
// a fact is refused when its twin in the other layout exists: an
// unscoped fact an event of the same source and account recorded (not
// another tenant's), or, for an event stored by the earlier release, the
// fact in its own scope. Without the checks both would be written twice.
func TestFactTwins(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	plan := effects.Plan{Facts: []effects.Fact{{Kind: "invoice_paid", Key: "in_twin"}}}
	legacy := plan.Facts[0].ID()
	for _, tt := range []struct {
		name     string
		recorded map[string]types.AttributeValue // the twin, as written before
		unscoped bool                            // the committing event is an earlier release's
		checks   bool
		refused  bool
	}{
		{"unscoped twin of this tenant", map[string]types.AttributeValue{"pk": s(legacy), "event_key": s("stripe#acct_1#evt_old")}, false, true, true},
		{"unscoped twin of another account", map[string]types.AttributeValue{"pk": s(legacy), "event_key": s("stripe#acct_2#evt_old")}, false, true, false},
		{"unscoped twin of another source", map[string]types.AttributeValue{"pk": s(legacy), "event_key": s("stripe-test#acct_1#evt_old")}, false, true, false},
		{"scoped twin, unscoped event", map[string]types.AttributeValue{"pk": s(sid(legacy)), "event_key": s("stripe#acct_1#evt_new")}, true, true, true},
		{"without the checks: written twice", map[string]types.AttributeValue{"pk": s(legacy), "event_key": s("stripe#acct_1#evt_old")}, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, table := newStoreOn(t, db)
			st.WithUnscopedFacts(tt.checks)
			putRaw(t, db, table, tt.recorded)
			e := mustClaimed(t, st, "evt_twin", "w")
			e.Unscoped = tt.unscoped
			err := st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second))
			var refused *effects.RefusedError
			switch {
			case tt.refused && (!errors.As(err, &refused) || len(refused.Exists) != 1 || refused.Exists[0] != legacy):
				t.Errorf("got %v, want the fact refused as existing", err)
			case !tt.refused && err != nil:
				t.Errorf("got %v, want committed", err)
			}
		})
	}
}
