package inboxstore_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// incompressible returns n bytes gzip cannot shrink.
func incompressible(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// rawItem reads an item as DynamoDB holds it.
func rawItem(tb testing.TB, db *dynamodb.Client, table, pk string) map[string]types.AttributeValue {
	tb.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		tb.Fatalf("get %s: %v", pk, err)
	}
	return out.Item
}

// rawBody is the raw body item of the stored event with key k (see
// body.go): the one its status item names.
func rawBody(tb testing.TB, db *dynamodb.Client, table string, k inbox.Key) map[string]types.AttributeValue {
	tb.Helper()
	st := rawItem(tb, db, table, "event#"+k.String())
	id, ok := st["body_id"].(*types.AttributeValueMemberS)
	if !ok {
		tb.Fatalf("%s: the status item names no body", k)
	}
	return rawItem(tb, db, table, "body#"+id.Value)
}

// TestPayloadCompressed: a payload gzip shrinks is stored compressed and
// read back byte for byte; one it does not is stored as it came.
func TestPayloadCompressed(t *testing.T) {
	cfg := mustDynamo(t).SafeConfig()
	db := dynamodb.NewFromConfig(cfg)
	s, table := newStoreOn(t, db)
	ctx := context.Background()
	stripe, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", "stripe", "invoice.paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id         string
		payload    []byte
		compressed bool
	}{
		{"evt_stripe", stripe, true},
		{"evt_random", incompressible(4096), false},
		{"evt_small", []byte(`{"id":"evt_small"}`), false},
	} {
		e := newEvent(c.id, c.payload)
		mustInsert(t, s, e)
		raw := rawBody(t, db, table, e.Key)
		z, hasZ := raw["payload_z"].(*types.AttributeValueMemberB)
		_, hasRaw := raw["payload"]
		switch {
		case c.compressed && (!hasZ || hasRaw || len(z.Value)*3 > len(c.payload)):
			t.Errorf("%s: payload_z %t (%d bytes of %d), payload %t; want only payload_z, under a third", c.id, hasZ, len(z.Value), len(c.payload), hasRaw)
		case !c.compressed && (hasZ || !hasRaw):
			t.Errorf("%s: payload_z %t, payload %t; want the payload as it came", c.id, hasZ, hasRaw)
		}
		got := mustGet(t, s, e.Key, t0)
		if !bytes.Equal(got.Payload, c.payload) {
			t.Errorf("%s: read back %d bytes, not the %d stored", c.id, len(got.Payload), len(c.payload))
		}
		claimed := mustClaim(t, s, e.Key, "w", t0, t0.Add(10e9))
		if !bytes.Equal(claimed.Payload, c.payload) {
			t.Errorf("%s: the claim returned another payload", c.id)
		}
	}
	// A corrupt compressed payload is an error, never other bytes.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "event#stripe#acct_1#evt_stripe"}},
		UpdateExpression:          aws.String("SET payload_z = :z"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberB{Value: []byte("not gzip")}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, newEvent("evt_stripe", nil).Key, t0); err == nil {
		t.Error("a corrupt payload_z read without an error")
	}
}
