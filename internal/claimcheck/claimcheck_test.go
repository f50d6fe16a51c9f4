package claimcheck_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// The local AWS serves S3, and the DynamoDB emulator the table, as in the
// local stack (kumo's own DynamoDB drops list_append on an absent list);
// every test has its own bucket and table.
var (
	moto   awstest.Shared
	dynamo awstest.SharedDynamoDB
	n      atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	moto.Stop()
	dynamo.Stop()
	os.Exit(code)
}

const retention = 30 * 24 * time.Hour

// later is how long after its storing an event finishes in these tests:
// longer than the midnight rounding can hide.
const later = 48 * time.Hour

type fixture struct {
	s3     *s3.Client
	db     *dynamodb.Client
	bucket string
	table  string
	store  *claimcheck.Store
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	cfg := moto.Get(tb).SerialConfig()
	f := &fixture{
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		db:     dynamodb.NewFromConfig(dynamo.Get(tb).SafeConfig()),
		bucket: fmt.Sprintf("payloads-%d", n.Add(1)),
		table:  fmt.Sprintf("inbox-%d", n.Add(1)),
	}
	ctx := context.Background()
	if _, err := f.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &f.bucket}); err != nil {
		tb.Fatalf("create bucket: %v", err)
	}
	if _, err := f.db.CreateTable(ctx, inboxstore.TableInput(f.table)); err != nil {
		tb.Fatalf("create table: %v", err)
	}
	f.store = claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(f.s3, f.bucket))
	return f
}

// largePayload is a JSON body of about size bytes that gzip cannot shrink
// under InlineMax.
func largePayload(tb testing.TB, size int) []byte {
	tb.Helper()
	raw := make([]byte, size*3/4)
	if _, err := rand.Read(raw); err != nil {
		tb.Fatal(err)
	}
	return []byte(`{"id":"evt_large","type":"push","blob":"` + base64.StdEncoding.EncodeToString(raw) + `"}`)
}

func event(id string, payload []byte) inbox.Event {
	now := time.Now()
	return inbox.Event{
		Key: inbox.Key{Source: "github", EventID: id}, Kind: "github", Type: "push",
		Payload: payload, Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}
}

// storedLarge stores an event whose payload goes to its object, and
// returns it as sent and as stored (with its PayloadRef).
func (f *fixture) storedLarge(tb testing.TB, id string) (ev, stored inbox.Event) {
	tb.Helper()
	ctx := context.Background()
	ev = event(id, largePayload(tb, 64<<10))
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		tb.Fatal(err)
	}
	stored, err := f.store.Get(ctx, ev.Key, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return ev, stored
}

func (f *fixture) rawItem(tb testing.TB, k inbox.Key) map[string]ddbtypes.AttributeValue {
	tb.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: &f.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "event#" + k.String()}},
	})
	if err != nil || out.Item == nil {
		tb.Fatalf("get item %s: %v (found %t)", k, err, out != nil && out.Item != nil)
	}
	return out.Item
}

// rawBody is the raw body item of k's event (inboxstore's split layout):
// where an inline payload is kept.
func (f *fixture) rawBody(tb testing.TB, k inbox.Key) map[string]ddbtypes.AttributeValue {
	tb.Helper()
	id, ok := f.rawItem(tb, k)["body_id"].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		tb.Fatalf("%s: the status item names no body", k)
	}
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: &f.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "body#" + id.Value}},
	})
	if err != nil || out.Item == nil {
		tb.Fatalf("get body %s: %v", k, err)
	}
	return out.Item
}

func (f *fixture) objects(tb testing.TB) []s3types.Object {
	tb.Helper()
	out, err := f.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &f.bucket})
	if err != nil {
		tb.Fatalf("list: %v", err)
	}
	return out.Contents
}

func (f *fixture) lastModified(tb testing.TB, ref *inbox.PayloadRef) time.Time {
	tb.Helper()
	out, err := f.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &f.bucket, Key: &ref.Object})
	if err != nil {
		tb.Fatalf("head %s: %v", ref.Object, err)
	}
	if out.ServerSideEncryption != s3types.ServerSideEncryptionAes256 {
		tb.Errorf("object %s: encryption %q, want AES256", ref.Object, out.ServerSideEncryption)
	}
	return *out.LastModified
}

// checkKept fails unless the object outlives the item: S3 expires it no
// earlier than the item's expires_at, and (the retention being longer
// than the dead retention here) no more than a day after.
func (f *fixture) checkKept(tb testing.TB, ev inbox.Event) {
	tb.Helper()
	item := f.rawItem(tb, ev.Key)
	exp, ok := item["expires_at"].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		tb.Fatalf("%s has no expires_at", ev.Key)
	}
	var secs int64
	fmt.Sscan(exp.Value, &secs)
	expires := time.Unix(secs, 0)
	gone := claimcheck.Expiry(f.lastModified(tb, ev.PayloadRef), claimcheck.ObjectDays(retention))
	if gone.Before(expires) {
		tb.Errorf("object %s expires at %s, before its item (%s)", ev.PayloadRef.Object, gone, expires)
	}
	if gone.Sub(expires) > 24*time.Hour+time.Minute {
		tb.Errorf("object %s expires at %s, over a day after its item (%s)", ev.PayloadRef.Object, gone, expires)
	}
}

func TestSmallPayloadStaysInTheItem(t *testing.T) {
	f := newFixture(t)
	ev := event("small", bytes.Repeat([]byte(`{"a":"b"},`), 10_000)) // 100 KB, compresses far under InlineMax
	if _, err := f.store.Insert(context.Background(), ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	if objs := f.objects(t); len(objs) != 0 {
		t.Errorf("got %d objects, want none", len(objs))
	}
	item, body := f.rawItem(t, ev.Key), f.rawBody(t, ev.Key)
	if _, ok := item["payload_ref"]; ok {
		t.Error("item has payload_ref")
	}
	if _, ok := body["payload_z"]; !ok {
		t.Error("body has no payload_z")
	}
}

func TestLargePayloadThroughItsObject(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	payload := largePayload(t, 1<<20)
	ev := event("large", payload)
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	item, body := f.rawItem(t, ev.Key), f.rawBody(t, ev.Key)
	for _, a := range []string{"payload", "payload_z"} {
		if _, ok := item[a]; ok {
			t.Errorf("item has %s", a)
		}
		if _, ok := body[a]; ok {
			t.Errorf("body has %s", a)
		}
	}
	if _, ok := item["payload_ref"]; !ok {
		t.Fatal("item has no payload_ref")
	}
	objs := f.objects(t)
	if len(objs) != 1 {
		t.Fatalf("got %d objects, want 1", len(objs))
	}
	if name := *objs[0].Key; !strings.HasPrefix(name, claimcheck.Prefix) || strings.Contains(name, "large") {
		t.Errorf("object name %q: want under %s, naming no event id", name, claimcheck.Prefix)
	}
	if *objs[0].Size > int64(len(payload)) {
		t.Errorf("object of %d bytes for a %d-byte payload: not compressed", *objs[0].Size, len(payload))
	}

	// A retry of the delivery writes the same object, and is a duplicate.
	if _, err := f.store.Insert(ctx, ev, time.Now()); !errors.Is(err, inbox.ErrDuplicate) {
		t.Fatalf("second insert: %v, want a duplicate", err)
	}
	if objs := f.objects(t); len(objs) != 1 {
		t.Fatalf("after the retry: %d objects, want 1", len(objs))
	}

	claimed, err := f.store.Claim(ctx, ev.Key, "w1", time.Now(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(claimed.Payload, payload) {
		t.Fatalf("claimed payload: %d bytes, want the %d stored", len(claimed.Payload), len(payload))
	}
	// Finished two days after it was stored: the item's expiry counts
	// from then, and so must the object's.
	if err := f.store.Complete(ctx, claimed, "w1", effects.Plan{}, inbox.OutcomeIgnored, time.Now().Add(later)); err != nil {
		t.Fatal(err)
	}
	f.checkKept(t, claimed)

	got, err := f.store.Get(ctx, ev.Key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := f.store.Payload(ctx, got); err != nil || !bytes.Equal(p, payload) {
		t.Errorf("Payload: %d bytes, %v; want the stored payload", len(p), err)
	}
}

// TestDeathAndRevivalRenew: a dead event's expiry (the dead retention)
// and a revived one's object are covered the same way.
func TestDeathAndRevivalRenew(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ev := event("dies", largePayload(t, 64<<10))
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A fresh store, as in another process: it has seen no claim.
	other := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(f.s3, f.bucket))
	dead, err := other.Fail(ctx, ev.Key, inbox.Failure{Status: inbox.StatusDead, Cause: "test"}, time.Now().Add(later))
	if err != nil {
		t.Fatal(err)
	}
	if dead.PayloadRef == nil {
		t.Fatal("dead event has no payload ref")
	}
	f.checkKept(t, dead)
	before := f.lastModified(t, dead.PayloadRef)
	time.Sleep(1100 * time.Millisecond) // LastModified counts seconds
	// Revived two days after its death: its object is old, and renewed.
	if _, _, err := other.Requeue(ctx, ev.Key, time.Now().Add(later), false); err != nil {
		t.Fatal(err)
	}
	if after := f.lastModified(t, dead.PayloadRef); !after.After(before) {
		t.Errorf("revival did not renew the object: written %s, then %s", before, after)
	}
}

// copies counts the objects' copies (renewals) and reads.
type copies struct {
	*s3.Client
	copied, heads atomic.Int64
}

func (c *copies) CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	c.copied.Add(1)
	return c.Client.CopyObject(ctx, in, opts...)
}

func (c *copies) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	c.heads.Add(1)
	return c.Client.HeadObject(ctx, in, opts...)
}

// TestFreshObjectIsNotCopied: an event claimed, finished, settled within
// the hour of its storing costs its object no copy (the claim's read says
// how fresh it is; another process asks S3 with a HEAD), and its item
// still expires no later than its object.
func TestFreshObjectIsNotCopied(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	api := &copies{Client: f.s3}
	store := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(api, f.bucket))
	ev := event("fresh", largePayload(t, 64<<10))
	if _, err := store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(claimcheck.RenewAfter - time.Minute)
	claimed, err := store.Claim(ctx, ev.Key, "w1", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, claimed, "w1", effects.Plan{}, inbox.OutcomeIgnored, now); err != nil {
		t.Fatal(err)
	}
	if n, h := api.copied.Load(), api.heads.Load(); n != 0 || h != 0 {
		t.Errorf("claim and commit within the hour: %d copies and %d heads, want none", n, h)
	}
	f.checkKept(t, claimed)
	written := f.lastModified(t, claimed.PayloadRef)
	item := f.rawItem(t, ev.Key)
	var secs int64
	fmt.Sscan(item["expires_at"].(*ddbtypes.AttributeValueMemberN).Value, &secs)
	if want := written.Add(retention).Unix(); secs > want+1 {
		t.Errorf("item expires at %d, want no later than its object's write plus the retention (%d)", secs, want)
	}

	// Another process, which saw no claim, asks S3 and still copies
	// nothing; past the hour it renews.
	other := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(api, f.bucket))
	for i, at := range []time.Time{now, time.Now().Add(claimcheck.RenewAfter + time.Minute)} {
		ev := event(fmt.Sprintf("dies-%d", i), largePayload(t, 64<<10))
		if _, err := store.Insert(ctx, ev, time.Now()); err != nil {
			t.Fatal(err)
		}
		dead, err := other.Fail(ctx, ev.Key, inbox.Failure{Status: inbox.StatusDead, Cause: "test"}, at)
		if err != nil {
			t.Fatal(err)
		}
		if n, h := api.copied.Load(), api.heads.Load(); n != int64(i) || h != int64(i+1) {
			t.Errorf("death %d from another process: %d copies and %d heads, want %d and %d", i, n, h, i, i+1)
		}
		f.checkKept(t, dead)
	}
}

func TestLostOrAlteredObjectIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		harm func(f *fixture, ref *inbox.PayloadRef) error
	}{
		{"deleted", func(f *fixture, ref *inbox.PayloadRef) error {
			_, err := f.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &f.bucket, Key: &ref.Object})
			return err
		}},
		{"replaced", func(f *fixture, ref *inbox.PayloadRef) error {
			_, err := f.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &f.bucket, Key: &ref.Object, Body: bytes.NewReader(claimcheck.Gzip([]byte(`{"id":"evt_other"}`)))})
			return err
		}},
		{"not gzip", func(f *fixture, ref *inbox.PayloadRef) error {
			_, err := f.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &f.bucket, Key: &ref.Object, Body: strings.NewReader("plain")})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			ev, stored := f.storedLarge(t, "harmed")
			if err := tc.harm(f, stored.PayloadRef); err != nil {
				t.Fatal(err)
			}
			_, err := f.store.Claim(ctx, ev.Key, "w1", time.Now(), time.Now().Add(time.Minute))
			if !errors.Is(err, claimcheck.ErrLost) || !errors.Is(err, inbox.ErrInvalid) {
				t.Errorf("claim: %v, want ErrLost and inbox.ErrInvalid", err)
			}
		})
	}
}

// TestObjectStoreDownStoresNothing: ingest's insert fails as unavailable
// and leaves no item, so the delivery is refused and retried.
func TestObjectStoreDownStoresNothing(t *testing.T) {
	f := newFixture(t)
	port, err := awstest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := (&awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}).NoRetryConfig()
	store := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(s3.NewFromConfig(down, func(o *s3.Options) { o.UsePathStyle = true }), f.bucket))
	ev := event("down", largePayload(t, 64<<10))
	if _, err := store.Insert(context.Background(), ev, time.Now()); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("insert: %v, want inbox.ErrUnavailable", err)
	}
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: &f.table, Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "event#" + ev.Key.String()}},
	})
	if err != nil || out.Item != nil {
		t.Errorf("item after a failed object write: %v, found %t; want none", err, out.Item != nil)
	}
}

func TestObjectDays(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		want      int
	}{
		{24 * time.Hour, 15}, {14 * 24 * time.Hour, 15}, {15 * 24 * time.Hour, 15}, {16 * 24 * time.Hour, 16},
		{30 * 24 * time.Hour, 30}, {3650 * 24 * time.Hour, 3650},
	} {
		if got := claimcheck.ObjectDays(tc.retention); got != tc.want {
			t.Errorf("ObjectDays(%s) = %d, want %d", tc.retention, got, tc.want)
		}
	}
}

func TestExpiry(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC)
	if got, want := claimcheck.Expiry(at, 30), time.Date(2027, 1, 3, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Expiry = %s, want %s", got, want)
	}
	midnight := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if got, want := claimcheck.Expiry(midnight, 1), time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Expiry at midnight = %s, want %s", got, want)
	}
}

// TestCrashBetweenObjectAndItem: the object is written, then the item's
// write fails (the table unreachable, as in a crash between the two). The
// delivery is refused, nothing points at the object, and the provider's
// retry stores the event over the same object, which its claim reads.
func TestCrashBetweenObjectAndItem(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	port, err := awstest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := (&awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}).NoRetryConfig()
	crashing := claimcheck.New(inboxstore.New(dynamodb.NewFromConfig(down), f.table, retention), claimcheck.NewObjects(f.s3, f.bucket))
	payload := largePayload(t, 256<<10)
	ev := event("crash", payload)
	if _, err := crashing.Insert(ctx, ev, time.Now()); !errors.Is(err, inbox.ErrUnavailable) {
		t.Fatalf("insert with the table down: %v, want inbox.ErrUnavailable", err)
	}
	if n := len(f.objects(t)); n != 1 {
		t.Fatalf("objects after the failed item write: %d, want 1 (left for the retry)", n)
	}
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatalf("the provider's retry: %v", err)
	}
	if n := len(f.objects(t)); n != 1 {
		t.Errorf("objects after the retry: %d, want the same one", n)
	}
	claimed, err := f.store.Claim(ctx, ev.Key, "w1", time.Now(), time.Now().Add(time.Minute))
	if err != nil || !bytes.Equal(claimed.Payload, payload) {
		t.Fatalf("claim: %d bytes, %v; want the payload", len(claimed.Payload), err)
	}
}

// TestMissingObjectWithoutListBucket: where a role lacks s3:ListBucket,
// S3 answers a missing object with 403, not 404 (the local router's
// WithoutListBucket answers so). The claim cannot tell the object is
// lost and fails as any transient failure; the event's death must still
// be written — a death needs no payload — or the event would never
// finish.
func TestMissingObjectWithoutListBucket(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ev, stored := f.storedLarge(t, "lost_403")
	if _, err := f.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &f.bucket, Key: &stored.PayloadRef.Object}); err != nil {
		t.Fatal(err)
	}
	// The same emulator, behind S3's answers to a role without ListBucket.
	target, err := url.Parse(moto.Get(t).Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(local.WithoutListBucket(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(srv.Close)
	denied := (&awstest.Server{Endpoint: srv.URL}).NoRetryConfig()
	store := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(s3.NewFromConfig(denied, func(o *s3.Options) { o.UsePathStyle = true }), f.bucket))

	now := time.Now().Add(later)
	_, err = store.Claim(ctx, ev.Key, "w1", now, now.Add(time.Minute))
	if err == nil || errors.Is(err, claimcheck.ErrLost) {
		t.Fatalf("claim: %v, want a failure that is not ErrLost (S3 said 403)", err)
	}
	dead, err := store.Fail(ctx, ev.Key, inbox.Failure{Owner: "w1", Status: inbox.StatusDead, Cause: err.Error(), MessageID: "m1"}, now)
	if err != nil || dead.Status != inbox.StatusDead {
		t.Fatalf("death: %+v, %v; want it written though the renewal fails", dead, err)
	}
}

// TestLateCommitRecordsNow: a commit counts its event's expiry from no
// later than its object's last write, and nothing else: processed_at and
// the outbox's due time are the commit's own time, or a late commit
// would look overdue to the sweep at once (and be sent again while its
// worker still delivers it).
func TestLateCommitRecordsNow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	written := time.Now()
	for _, rows := range []bool{false, true} {
		ev := event(fmt.Sprintf("late_%t", rows), largePayload(t, 64<<10))
		if _, err := f.store.Insert(ctx, ev, written); err != nil {
			t.Fatal(err)
		}
		now := written.Add(40 * time.Minute) // within RenewAfter: no renewal
		claimed, err := f.store.Claim(ctx, ev.Key, "w", now, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var plan effects.Plan
		if rows {
			plan.Outbound = []effects.Outbound{{Target: "receipt", Key: "late", Body: []byte(`{}`)}}
		}
		if err := f.store.Complete(ctx, claimed, "w", plan, inbox.OutcomeApplied, now); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.Get(ctx, ev.Key, now)
		if err != nil {
			t.Fatal(err)
		}
		if !got.ProcessedAt.Equal(now) {
			t.Errorf("rows %t: processed_at %v, want the commit's time %v", rows, got.ProcessedAt, now)
		}
		if rows && got.DueAt.Before(now.Truncate(time.Millisecond)) {
			t.Errorf("outbox due at %v, before the commit (%v): overdue at once", got.DueAt, now)
		}
		if !rows {
			f.checkKept(t, got)
		}
	}
}

// TestResendRenews: resending a row brings its event back to deliver it,
// so the event's object is renewed if old, as a revival renews it.
func TestResendRenews(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ev := event("resent", largePayload(t, 64<<10))
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(later)
	claimed, err := f.store.Claim(ctx, ev.Key, "w", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	plan := effects.Plan{Outbound: []effects.Outbound{{Target: "receipt", Key: "resend_me", Body: []byte(`{}`)}}}
	if err := f.store.Complete(ctx, claimed, "w", plan, inbox.OutcomeApplied, now); err != nil {
		t.Fatal(err)
	}
	key := effects.ScopedKey(claimed.PartScope(), "resend_me")
	if _, err := f.store.ClaimRow(ctx, key, "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishRow(ctx, key, "w", outbox.Result{State: outbox.Unknown, Cause: "timeout"}, now); err != nil {
		t.Fatal(err)
	}
	c := &copies{Client: f.s3}
	other := claimcheck.New(inboxstore.New(f.db, f.table, retention), claimcheck.NewObjects(c, f.bucket))
	if _, err := other.ResendRow(ctx, key, now.Add(later)); err != nil {
		t.Fatal(err)
	}
	if c.copied.Load() != 1 {
		t.Errorf("%d copies of the object on a resend two days on, want 1 (renewed)", c.copied.Load())
	}
}

// TestCommitDeliveredKeepsTheObject: a commit that writes its forwarding
// row delivered (put ahead of it) finishes the event, so its expiry
// counts from no later than its object's last write, as Complete's: the
// object outlives the item.
func TestCommitDeliveredKeepsTheObject(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ev := event("large_forwarded", largePayload(t, 1<<20))
	if _, err := f.store.Insert(ctx, ev, time.Now()); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.store.Claim(ctx, ev.Key, "w1", time.Now(), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	row := effects.Outbound{Action: effects.ActionEventBridge, Target: "eventbridge:stripe:bus", Key: "fwd", Body: []byte(`{}`)}
	// Finished two days after it was stored.
	if err := f.store.CompleteDelivered(ctx, claimed, "w1", effects.Plan{Outbound: []effects.Outbound{row}}, inbox.OutcomeIgnored, []string{"fwd"}, time.Now().Add(later)); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Get(ctx, ev.Key, time.Now())
	if err != nil || got.OutboxPending || got.Status != inbox.StatusProcessed {
		t.Fatalf("event: %s, outbox pending %t, %v; want processed, settled", got.Status, got.OutboxPending, err)
	}
	f.checkKept(t, claimed)
}
