// Package claimcheck keeps the payloads too large for an event's item in
// S3 (a claim check): ingest writes the payload's object before the item
// that points at it, the processor reads it back when it claims the
// event, and every write that sets or may soon set the item's expiry
// counts that expiry from no later than the object's last write, first
// renewing the object if that write is old, so an object never expires
// before its item.
//
// Why and when. The payload is written once, in the event's body item
// (inboxstore's split layout), and read back at its first attempt or
// claim: DynamoDB bills a write unit per KB written and half a read unit
// per 4 KB read, so each KB of compressed payload costs about $0.64 per
// million events ($0.625 per million units); the claim check costs a PUT
// and a GET ($0.005 and $0.0004 per thousand) when the event finishes
// within RenewAfter of its storing, plus a copy ($0.005 per thousand) at
// each claim, commit or settling later than that: $5.40 to about $20 per
// million events whatever the size, and S3's storage ($0.023 per
// GB-month, for ObjectDays). The two meet between 8 and 31 KB of
// compressed payload. Payloads compressing to more than InlineMax (16 KiB,
// about 100 KB of JSON, more than nearly every delivery of the corpus)
// come here, and past an item's 400 KB it is the only way. Below it the
// body keeps the payload (compressed, see inboxstore), with no S3 call in
// ingest's path.
//
// Expiry. S3 expires an object a fixed number of days after it was
// written (its lifecycle rule, rounded up to the next midnight UTC);
// the item expires a retention after its event finishes, which is known
// only then, and a dead event is kept longer (inboxstore.DeadRetention).
// So the bucket's one rule keeps objects ObjectDays(retention) =
// max(retention, DeadRetention) days, and every store call that may set
// the item's expiry — the commit, the outbox's settling, the event's
// death — and every call that brings an event back (claim, revival)
// learns when the object was last written (the claim's read returns it;
// else a HEAD), copies the object onto itself if that was over
// RenewAfter ago, which makes it new again, and then counts the item's
// expiry from no later than the object's last write. An item therefore
// never outlives its object: each expiry it is given is at most
// ObjectDays after a write of the object, and an object's LastModified
// only moves forward. A stale worker's renewal only makes the object live
// longer. The price of not copying a fresh object is that an event whose
// payload is in S3 is kept up to RenewAfter less than the retention after
// it finishes. The object outlives its item by at most a day (the
// midnight rounding) when the retention is at least
// DeadRetention, as by default; with a shorter retention a processed
// event's object is kept DeadRetention (the bucket has one rule, so a
// dead event's object cannot be kept longer than a processed one's).
//
// Objects are named by a hash of the event key and the SHA-256 of the
// payload (no event id or account shows in a name), gzip-compressed,
// encrypted at rest (SSE-S3), and read back only if their size and
// SHA-256 are the ones verified at ingest. A crash between the object
// and the item leaves an object no item points at: the provider, never
// answered 2xx, sends the delivery again, which writes the same object
// (same name, same bytes) and then the item; an object left behind by a
// delivery never retried expires like any other.
package claimcheck

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
)

// InlineMax is the largest compressed payload kept in the event's item.
const InlineMax = 16 << 10

// Prefix begins every object's name; the bucket's lifecycle rule covers it.
const Prefix = "payloads/"

// MaxPayload bounds what reading an object may produce: more than any
// body ingest accepts, so a corrupt object cannot exhaust memory.
const MaxPayload = 16 << 20

// ErrLost says an event's payload object is gone (or is not the payload
// that was verified): its event cannot be processed again.
var ErrLost = errors.New("payload object lost")

// ObjectDays is how many days the bucket's lifecycle rule keeps an object
// after its last renewal, for an inbox of the given retention: the longest
// any item may be kept after its last write, whole days, rounded up.
func ObjectDays(retention time.Duration) int {
	keep := max(retention, inboxstore.DeadRetention)
	days := int(keep / (24 * time.Hour))
	if keep%(24*time.Hour) != 0 {
		days++
	}
	return days
}

// API is the part of the S3 client the objects need.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Objects are the payload objects in one bucket.
type Objects struct {
	api    API
	bucket string
	now    func() time.Time
}

// NewObjects returns the payload objects of bucket.
func NewObjects(api API, bucket string) *Objects {
	return &Objects{api: api, bucket: bucket, now: time.Now}
}

// Name is the object name of the payload of k whose SHA-256 is sum.
func Name(k inbox.Key, sum string) string {
	h := sha256.Sum256([]byte(k.String()))
	return Prefix + hex.EncodeToString(h[:16]) + "/" + sum
}

// Metadata of every object: the payload's size and digest, and when the
// object was last renewed.
const (
	metaBytes  = "payload-bytes"
	metaSHA256 = "payload-sha256"
	metaKept   = "kept-at"
)

// Put writes the object of k's payload, z being its gzip, and returns the
// reference the item keeps. Writing it again (a provider's retry) writes
// the same bytes under the same name.
func (o *Objects) Put(ctx context.Context, k inbox.Key, payload, z []byte) (inbox.PayloadRef, error) {
	s := sha256.Sum256(payload)
	ref := inbox.PayloadRef{Object: Name(k, hex.EncodeToString(s[:])), Bytes: len(payload), SHA256: hex.EncodeToString(s[:])}
	_, err := o.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket:               &o.bucket,
		Key:                  &ref.Object,
		Body:                 bytes.NewReader(z),
		ContentLength:        aws.Int64(int64(len(z))),
		ContentType:          aws.String("application/gzip"),
		ServerSideEncryption: types.ServerSideEncryptionAes256,
		Metadata:             o.metadata(ref),
	})
	if err != nil {
		return inbox.PayloadRef{}, wrap("put payload of "+k.String(), err)
	}
	return ref, nil
}

func (o *Objects) metadata(ref inbox.PayloadRef) map[string]string {
	return map[string]string{
		metaBytes:  strconv.Itoa(ref.Bytes),
		metaSHA256: ref.SHA256,
		metaKept:   o.now().UTC().Format(time.RFC3339),
	}
}

// Renew copies the object onto itself, which starts its lifecycle's
// count again, and returns the time S3 gives the copy (no later than the
// copy): an expiry counted from it is within the object's life. A missing
// object is ErrLost.
func (o *Objects) Renew(ctx context.Context, ref inbox.PayloadRef) (time.Time, error) {
	out, err := o.api.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:               &o.bucket,
		Key:                  &ref.Object,
		CopySource:           aws.String(o.bucket + "/" + ref.Object),
		MetadataDirective:    types.MetadataDirectiveReplace,
		Metadata:             o.metadata(ref),
		ContentType:          aws.String("application/gzip"),
		ServerSideEncryption: types.ServerSideEncryptionAes256,
	})
	if err != nil {
		return time.Time{}, wrap("renew payload "+ref.Object, err)
	}
	if out.CopyObjectResult == nil || out.CopyObjectResult.LastModified == nil {
		return time.Time{}, fmt.Errorf("renew payload %s: %w: no LastModified in the answer", ref.Object, inbox.ErrUnavailable)
	}
	return *out.CopyObjectResult.LastModified, nil
}

// Written returns when the object was last written (put or renewed), as
// S3 says; a missing object is ErrLost.
func (o *Objects) Written(ctx context.Context, ref inbox.PayloadRef) (time.Time, error) {
	out, err := o.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &o.bucket, Key: &ref.Object})
	if err != nil {
		return time.Time{}, wrap("head payload "+ref.Object, err)
	}
	if out.LastModified == nil {
		return time.Time{}, fmt.Errorf("head payload %s: %w: no LastModified in the answer", ref.Object, inbox.ErrUnavailable)
	}
	return *out.LastModified, nil
}

// Get returns the payload ref points at, checked against its size and
// SHA-256, and when its object was last written: a missing object, or one
// that is not that payload, is ErrLost.
func (o *Objects) Get(ctx context.Context, ref inbox.PayloadRef) ([]byte, time.Time, error) {
	out, err := o.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &o.bucket, Key: &ref.Object})
	if err != nil {
		return nil, time.Time{}, wrap("get payload "+ref.Object, err)
	}
	defer out.Body.Close()
	if out.LastModified == nil {
		return nil, time.Time{}, fmt.Errorf("get payload %s: %w: no LastModified in the answer", ref.Object, inbox.ErrUnavailable)
	}
	z, err := io.ReadAll(io.LimitReader(out.Body, MaxPayload+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get payload %s: %w: %w", ref.Object, inbox.ErrUnavailable, err)
	}
	p, err := gunzip(z)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get payload %s: %w: %w: %w", ref.Object, inbox.ErrInvalid, ErrLost, err)
	}
	s := sha256.Sum256(p)
	if len(p) != ref.Bytes || hex.EncodeToString(s[:]) != ref.SHA256 {
		return nil, time.Time{}, fmt.Errorf("get payload %s: %w: %w: %d bytes that are not the payload verified at ingest", ref.Object, inbox.ErrInvalid, ErrLost, len(p))
	}
	return p, *out.LastModified, nil
}

// wrap classifies an S3 failure: a missing object is ErrLost and cannot
// be cured by retrying; the rest as awserr decides.
func wrap(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
		return fmt.Errorf("%s: %w: %w: %w", op, inbox.ErrInvalid, ErrLost, err)
	}
	return awserr.Wrap(op, err)
}

// Gzip compresses a payload for an object: inboxstore's, the project's one.
func Gzip(p []byte) []byte { return inboxstore.Gzip(p) }

func gunzip(z []byte) ([]byte, error) {
	if len(z) > MaxPayload {
		return nil, fmt.Errorf("object over %d bytes", MaxPayload)
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	p, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, err
	}
	if len(p) > MaxPayload {
		return nil, fmt.Errorf("payload over %d bytes", MaxPayload)
	}
	return p, nil
}

// Expiry is the earliest time S3 expires an object written at written
// under a lifecycle rule of days: written plus the days, rounded up to
// the next midnight UTC.
func Expiry(written time.Time, days int) time.Time {
	t := written.UTC().Add(time.Duration(days) * 24 * time.Hour)
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if d.Before(t) {
		d = d.AddDate(0, 0, 1)
	}
	return d
}
