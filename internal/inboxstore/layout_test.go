package inboxstore_test

import (
	"context"
	"errors"
	"fmt"
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
			st.WithUnscopedFacts(tt.checks, nil)
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

// billingScopes: sources stripe and stripe-eu share the scope billing.
type billingScopes struct{}

func (billingScopes) ScopeOf(k inbox.Key) string { return inbox.ScopeOf("billing", k) }
func (billingScopes) Members(scope string, k inbox.Key) []string {
	if scope == inbox.ScopeOf("billing", k) {
		return []string{"stripe", "stripe-eu"}
	}
	return nil
}

// TestFactTwinsSharedScope: with sources sharing a scope, a fact one of
// them recorded unscoped counts for the other's scoped events, and an
// unscoped event's twin is in the scope its source gives it now.
func TestFactTwinsSharedScope(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	plan := effects.Plan{Facts: []effects.Fact{{Kind: "invoice_paid", Key: "in_shared"}}}
	shared := inbox.ScopeOf("billing", inbox.Key{Account: "acct_1"})
	for _, tt := range []struct {
		name     string
		recorded map[string]types.AttributeValue
		unscoped bool
	}{
		{"the other member's unscoped fact", map[string]types.AttributeValue{"pk": s(plan.Facts[0].ID()), "event_key": s("stripe-eu#acct_1#evt_old")}, false},
		{"the shared scope's fact, for an unscoped event", map[string]types.AttributeValue{"pk": s(effects.ScopedID(shared, plan.Facts[0].ID())), "event_key": s("stripe-eu#acct_1#evt_new")}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, table := newStoreOn(t, db)
			st.WithUnscopedFacts(true, billingScopes{})
			putRaw(t, db, table, tt.recorded)
			e := mustClaimed(t, st, "evt_shared", "w")
			e.Scope, e.Unscoped = shared, tt.unscoped
			err := st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second))
			var refused *effects.RefusedError
			if !errors.As(err, &refused) || len(refused.Exists) != 1 {
				t.Errorf("got %v, want the fact refused as existing", err)
			}
		})
	}
}

// TestFactTwinsOverTheTransaction: a plan whose facts and their twins'
// checks would pass TransactWriteItems' 100 items commits all the same
// (the checks that do not fit are consistent reads before it), and a
// fact among those whose unscoped twin exists is refused.
func TestFactTwinsOverTheTransaction(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	var plan effects.Plan
	for i := range effects.MaxParts {
		plan.Facts = append(plan.Facts, effects.Fact{Kind: "push_commit", Key: fmt.Sprintf("o/r@%040d", i)})
	}
	st, table := newStoreOn(t, db)
	st.WithUnscopedFacts(true, nil)
	e := mustClaimed(t, st, "evt_big", "w")
	if err := st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second)); err != nil {
		t.Fatalf("99 facts with their twins checked: %v", err)
	}
	// Another 99 new facts, the last (whose check cannot fit) recorded
	// unscoped by an earlier event of the tenant.
	for i := range plan.Facts {
		plan.Facts[i].Key += "-again"
	}
	plan.Facts[len(plan.Facts)-1].Key = "o/r@legacy"
	last := plan.Facts[len(plan.Facts)-1].ID()
	putRaw(t, db, table, map[string]types.AttributeValue{"pk": s(last), "event_key": s("stripe#acct_1#evt_old")})
	e = mustClaimed(t, st, "evt_big_2", "w")
	err := st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, t0.Add(time.Second))
	var refused *effects.RefusedError
	if !errors.As(err, &refused) || len(refused.Exists) != 1 || refused.Exists[0] != last {
		t.Errorf("got %v, want %s refused as existing (its unscoped twin, read)", err, last)
	}
}

// TestFailedBeforeRetryMsIsClaimable: an event that failed before the
// claim's "not before" had its own attribute (retry_ms) has only due_ms,
// which the sweep may have moved on: it is claimable at once, or a swept
// message would be turned away until it ran out of receives.
func TestFailedBeforeRetryMsIsClaimable(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	st, table := newStoreOn(t, db)
	e := mustClaimed(t, st, "evt_old_failed", "w")
	if _, err := st.Fail(ctx, e.Key, inbox.Failure{Owner: "w", Status: inbox.StatusFailed, Cause: "503", RetryAt: t0.Add(time.Minute)}, t0); err != nil {
		t.Fatal(err)
	}
	// As an earlier release left it, and a sweep then moved due_ms on.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s("event#" + e.Key.String())},
		UpdateExpression:          aws.String("SET due_ms = :later REMOVE retry_ms"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":later": &types.AttributeValueMemberN{Value: fmt.Sprint(t0.Add(time.Hour).UnixMilli())}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, e.Key, "w2", t0.Add(2*time.Minute), t0.Add(3*time.Minute)); err != nil {
		t.Errorf("claim: %v, want it taken", err)
	}
}

// TestLayoutDetectedAtFirstCommit: with the layout asked of the table at
// the first commit (WithLayoutDetected), a commit made while the table
// has not answered checks its facts' twins, and refuses a fact whose
// unscoped twin exists; a look that fails is made again a LayoutRetry
// later, not at every commit; once the table says it holds no unscoped
// fact, commits stop checking, and it is never asked again.
func TestLayoutDetectedAtFirstCommit(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	st, table := newStoreOn(t, db)
	var asked []time.Time
	answers := []error{errors.New("connection refused"), nil}
	var failures int
	st.WithLayoutDetected(func(ctx context.Context, now time.Time) (bool, error) {
		// Bounded on its own: a slow table costs a commit seconds, not
		// its whole time.
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 10*time.Second {
			t.Errorf("the look at the layout: deadline %v (%t), want one within seconds", d, ok)
		}
		err := answers[min(len(asked), len(answers)-1)]
		asked = append(asked, now)
		return false, err
	}, func(error) { failures++ }, nil)
	commit := func(id, in string, at time.Time) error {
		t.Helper()
		plan := effects.Plan{Facts: []effects.Fact{{Kind: "invoice_paid", Key: in}}}
		putRaw(t, db, table, map[string]types.AttributeValue{"pk": s(plan.Facts[0].ID()), "event_key": s("stripe#acct_1#evt_old")})
		e := mustClaimed(t, st, id, "w")
		return st.Complete(ctx, e, "w", plan, inbox.OutcomeApplied, at)
	}
	var refused *effects.RefusedError
	// The look fails: the commit checks, and the twin refuses the fact.
	if err := commit("evt_l1", "in_l1", t0); !errors.As(err, &refused) {
		t.Fatalf("first commit: got %v, want the fact refused by its twin", err)
	}
	// Within LayoutRetry: not asked again, still checking.
	if err := commit("evt_l2", "in_l2", t0.Add(inboxstore.LayoutRetry/2)); !errors.As(err, &refused) {
		t.Fatalf("second commit: got %v, want the fact refused by its twin", err)
	}
	if len(asked) != 1 || failures != 1 {
		t.Fatalf("asked %d times, %d failures; want once, one", len(asked), failures)
	}
	// After it: asked, and the table holds no unscoped fact (it says):
	// no check, so the fact is written beside the twin this test planted.
	if err := commit("evt_l3", "in_l3", t0.Add(inboxstore.LayoutRetry)); err != nil {
		t.Fatalf("third commit: got %v, want committed without a check", err)
	}
	if err := commit("evt_l4", "in_l4", t0.Add(2*inboxstore.LayoutRetry)); err != nil {
		t.Fatalf("fourth commit: %v", err)
	}
	if len(asked) != 2 {
		t.Errorf("asked %d times, want twice (decided at the second)", len(asked))
	}
}
