package inboxstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// TestClaimNonce, over the wire: a nonce is taken once per binding; the
// same binding again (a retry) is accepted, another is refused while the
// claim lasts, and it may be claimed again once it has expired (when its
// signature's window is over, so Verify refuses the delivery first). Of concurrent
// claims with different bindings exactly one wins.
func TestClaimNonce(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	until := t0.Add(time.Hour)
	for _, step := range []struct {
		name    string
		binding string
		now     time.Time
		want    error
	}{
		{"first claim", "sha-a", t0, nil},
		{"the same body again", "sha-a", t0.Add(time.Minute), nil},
		{"another body", "sha-b", t0.Add(time.Minute), inbox.ErrNonceUsed},
		{"another body at the last second", "sha-b", until, inbox.ErrNonceUsed},
		{"the first body still", "sha-a", until, nil},
		{"another body once expired", "sha-b", until.Add(time.Second), nil},
	} {
		err := s.ClaimNonce(ctx, "paypal#tx-1", step.binding, until, step.now)
		if !errors.Is(err, step.want) && !(err == nil && step.want == nil) {
			t.Fatalf("%s: %v, want %v", step.name, err, step.want)
		}
	}
	// Nonces of different kinds are apart.
	if err := s.ClaimNonce(ctx, "mailgun#tx-1", "sha-c", until, t0); err != nil {
		t.Fatalf("another kind's nonce: %v", err)
	}

	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for i := range 8 {
		wg.Go(func() {
			b := string(rune('a' + i))
			if err := s.ClaimNonce(ctx, "mailgun#race", b, until, t0); err == nil {
				wins <- b
			} else if !errors.Is(err, inbox.ErrNonceUsed) {
				t.Errorf("claim %s: %v", b, err)
			}
		})
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Fatalf("%d concurrent claims with different bodies won, want 1", n)
	}
	if err := unreachableStore(t).ClaimNonce(ctx, "x", "y", until, t0); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("unreachable table: %v, want ErrUnavailable", err)
	}
}

// TestNonceItemIsNotAnEvent: a nonce item carries the TTL and nothing the
// unfinished index or the layout check reads.
func TestNonceItemIsNotAnEvent(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	if err := s.ClaimNonce(ctx, "paypal#tx-2", "sha", t0.Add(time.Hour), t0); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "nonce#paypal#tx-2"}}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("nonce item: %v, %v", out, err)
	}
	if ttl, ok := out.Item["expires_at"].(*types.AttributeValueMemberN); !ok || ttl.Value != "1764507600" {
		t.Fatalf("expires_at %v, want the claim's end in unix seconds", out.Item["expires_at"])
	}
	for _, a := range []string{"status", "due_ms", "sweep_shard", "scope"} {
		if _, ok := out.Item[a]; ok {
			t.Errorf("nonce item has %s", a)
		}
	}
	unscoped, err := inboxstore.DetectUnscopedFacts(ctx, db, table, t0)
	if err != nil || unscoped {
		t.Fatalf("a table holding a nonce: unscoped %v, %v; want false", unscoped, err)
	}
}

// TestClaimNonceNeverShortens: the same body under a signature accepted
// for longer extends the record; one accepted for less (an older
// signature of the same nonce) leaves it as long as it was.
func TestClaimNonceNeverShortens(t *testing.T) {
	db := dynamodb.NewFromConfig(mustDynamo(t).SafeConfig())
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	expiry := func() string {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "nonce#paypal#tx-3"}}, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Fatalf("nonce item: %v", err)
		}
		return out.Item["expires_at"].(*types.AttributeValueMemberN).Value
	}
	for _, step := range []struct {
		until time.Time
		want  string
	}{
		{t0.Add(time.Hour), "1764507600"},
		{t0.Add(2 * time.Hour), "1764511200"},
		{t0.Add(30 * time.Minute), "1764511200"},
		{t0.Add(2 * time.Hour), "1764511200"},
	} {
		if err := s.ClaimNonce(ctx, "paypal#tx-3", "sha", step.until, t0); err != nil {
			t.Fatal(err)
		}
		if got := expiry(); got != step.want {
			t.Fatalf("claimed until %s: expires_at %s, want %s", step.until, got, step.want)
		}
	}
	// Another body is refused for as long as the longest window lasts.
	if err := s.ClaimNonce(ctx, "paypal#tx-3", "other", t0.Add(3*time.Hour), t0.Add(90*time.Minute)); !errors.Is(err, inbox.ErrNonceUsed) {
		t.Fatalf("another body inside the extended window: %v", err)
	}
}
