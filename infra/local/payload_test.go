package local_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// largeInvoice is the corpus invoice.paid as a new event and invoice,
// grown to size bytes with random metadata (which gzip cannot shrink).
func largeInvoice(tb testing.TB, id string, size int) []byte {
	tb.Helper()
	var ev map[string]any
	if err := json.Unmarshal(mustRead(tb, invoicePaid), &ev); err != nil {
		tb.Fatal(err)
	}
	ev["id"] = "evt_" + id
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["id"] = "in_" + id
	obj["metadata"] = map[string]any{"blob": ""}
	base, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	pad := size - len(base)
	raw := make([]byte, pad*3/4+3)
	if _, err := rand.Read(raw); err != nil {
		tb.Fatal(err)
	}
	obj["metadata"] = map[string]any{"blob": base64.StdEncoding.EncodeToString(raw)[:pad]}
	body, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) != size {
		tb.Fatalf("built %d bytes, want %d", len(body), size)
	}
	return body
}

// TestLargePayloads: deliveries of 1 MB and 5 MB are stored through the
// payload bucket (a small item pointing at an encrypted object), processed
// once, and their object is kept at least as long as their item and at
// most a day longer; a body one byte over MAX_BODY_BYTES gets 413 and
// stores nothing.
func TestLargePayloads(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	s3c := local.S3(e.awsConfig)
	maxBody, err := strconv.Atoi(e.stack.Env["MAX_BODY_BYTES"])
	if err != nil {
		t.Fatal(err)
	}
	lc, err := s3c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(local.PayloadBucketName)})
	if err != nil || len(lc.Rules) != 1 || lc.Rules[0].Expiration == nil || lc.Rules[0].Expiration.Days == nil {
		t.Fatalf("bucket lifecycle: %+v, %v; want the template's one rule", lc, err)
	}
	days := int(*lc.Rules[0].Expiration.Days)
	retentionDays, _ := strconv.Atoi(e.stack.Env["PAYLOAD_RETENTION_DAYS"])
	if want := claimcheck.ObjectDays(time.Duration(retentionDays) * 24 * time.Hour); days != want {
		t.Fatalf("lifecycle keeps objects %d days, want %d (claimcheck.ObjectDays)", days, want)
	}

	objects := func() []s3types.Object {
		out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(local.PayloadBucketName)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Contents
	}
	for i, size := range []int{1 << 20, 5_000_000} {
		id := fmt.Sprintf("large_%d", size)
		t.Run(id, func(t *testing.T) {
			body := largeInvoice(t, id, size)
			if status, resp := e.post(t, body, time.Now()); status != http.StatusAccepted {
				t.Fatalf("delivery: got %d %v, want 202", status, resp)
			}
			if n := len(objects()); n != i+1 {
				t.Fatalf("objects: %d, want %d", n, i+1)
			}
			key := inbox.Key{Source: "stripe", EventID: "evt_" + id}
			raw, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(e.stack.Resources.TableName), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "event#" + key.String()}},
			})
			if err != nil || raw.Item == nil {
				t.Fatalf("item: %v", err)
			}
			if _, ok := raw.Item["payload_ref"]; !ok {
				t.Fatal("item has no payload_ref")
			}
			if n := itemBytes(raw.Item); n > 4096 {
				t.Errorf("item is %d bytes, want a small item (payload in its object)", n)
			}
			// The provider's retry: a duplicate, the same object.
			if status, _ := e.post(t, body, time.Now()); status != http.StatusOK {
				t.Fatalf("retry: got %d, want 200 duplicate", status)
			}
			if n := len(objects()); n != i+1 {
				t.Fatalf("objects after the retry: %d, want %d", n, i+1)
			}

			e.drain(t)
			ev, err := e.store.Get(ctx, key, time.Now())
			if err != nil || ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied || ev.Attempts != 1 {
				t.Fatalf("event: %+v, %v; want processed/applied after 1 attempt", ev, err)
			}
			if _, err := e.store.Fact(ctx, ev.PartScope(), handlers.InvoicePaidKind, "in_"+id); err != nil {
				t.Errorf("fact of in_%s: %v", id, err)
			}
			p, err := e.store.Payload(ctx, ev)
			if err != nil || !bytes.Equal(p, body) {
				t.Fatalf("payload read back: %d bytes, %v; want the %d sent", len(p), err, len(body))
			}
			head, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(local.PayloadBucketName), Key: &ev.PayloadRef.Object})
			if err != nil {
				t.Fatal(err)
			}
			if head.ServerSideEncryption != s3types.ServerSideEncryptionAes256 {
				t.Errorf("object encryption %q, want AES256", head.ServerSideEncryption)
			}
			gone := claimcheck.Expiry(*head.LastModified, days)
			if ev.ExpiresAt.IsZero() || gone.Before(ev.ExpiresAt) || gone.Sub(ev.ExpiresAt) > 24*time.Hour+time.Minute {
				t.Errorf("object expires %s, item %s: want the object no earlier, and at most a day later", gone, ev.ExpiresAt)
			}
		})
	}

	over := largeInvoice(t, "too_large", maxBody+1)
	if status, resp := e.post(t, over, time.Now()); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("body of MAX_BODY_BYTES+1: got %d %v, want 413", status, resp)
	}
	if _, err := e.store.Get(ctx, inbox.Key{Source: "stripe", EventID: "evt_too_large"}, time.Now()); err == nil {
		t.Error("an event was stored for the body over the limit")
	}
	if n := len(objects()); n != 2 {
		t.Errorf("objects after the refused body: %d, want 2", n)
	}
}

// itemBytes is an item's size as DynamoDB counts it, near enough:
// attribute names and values.
func itemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		default:
			b, _ := json.Marshal(v)
			n += len(b)
		}
	}
	return n
}

// TestLostPayloadObjectEndsDead: an event whose object was deleted by
// hand cannot be processed from other bytes: its claim fails permanently
// and it ends dead, its message in the DLQ, the cause saying so.
func TestLostPayloadObjectEndsDead(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	body := largeInvoice(t, "lost", 256<<10)
	if status, _ := e.post(t, body, time.Now()); status != http.StatusAccepted {
		t.Fatalf("delivery: got %d, want 202", status)
	}
	key := inbox.Key{Source: "stripe", EventID: "evt_lost"}
	ev, err := e.store.Get(ctx, key, time.Now())
	if err != nil || ev.PayloadRef == nil {
		t.Fatalf("stored: %+v, %v; want a payload object", ev, err)
	}
	if _, err := local.S3(e.awsConfig).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(local.PayloadBucketName), Key: &ev.PayloadRef.Object}); err != nil {
		t.Fatal(err)
	}
	e.drain(t)
	ev, err = e.store.Get(ctx, key, time.Now())
	if err != nil || ev.Status != inbox.StatusDead || !strings.Contains(ev.LastError, "payload object lost") {
		t.Fatalf("event: %s, %q, %v; want dead for its lost payload", ev.Status, ev.LastError, err)
	}
	if n := e.effects(t); n != 0 {
		t.Errorf("effect records: %d, want none", n)
	}
}
