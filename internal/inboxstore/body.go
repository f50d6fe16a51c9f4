package inboxstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// An event is stored as two items (the split layout). Its body item holds
// what never changes after ingest — the payload (or its gzip, or the
// reference of its object), the kept headers, the provider's metadata —
// and is written once. Its status item, under the event's own key, holds
// what the protocol changes — status, lease, attempts, due times, the
// outbox's state, the index's attributes — and is small, so that each of
// the claim's, the commit's and the settling's writes costs one write
// unit instead of the whole event's. The status item names its body
// (body_id) and records when the body expires (body_expires, a lower
// bound: a body's expiry only moves later).
//
// Order. Ingest writes the body before the status, and the body is never
// deleted before its status: so a status item always finds its body, and
// a crash between the two writes leaves only a body nothing points at
// (the provider, never answered 2xx, sends the delivery again; a body
// left behind expires). A body is named by the event's key and the hash
// of its payload, so two deliveries of one event with different payloads
// never share a body, and the status names exactly the one it was
// written with.
//
// Reads. A body never changes once written, so the claim reads it
// eventually consistently (half the read units); a read that misses is
// made again, consistently. That read cannot miss: the body's write was
// acknowledged before the status item that names it was written, and a
// consistent read returns every acknowledged write.
//
// Expiry (I2: nothing expires before its event is finished, and an item
// outlives everything that points at it). A body expires BodyGrace after
// the latest expiry it was written or extended for. Every write that
// gives the status an expiry X (a commit without outbox rows, the
// outbox's settling, a death) first makes sure the body lasts until X,
// extending it if its recorded expiry is earlier; every write that leaves
// the event to wait for its next claim (the claim itself, a revival, a
// re-run, a resend, the sweep's reschedule) makes sure the body lasts a
// retention more. An event finished within BodyGrace of its last such
// write — nearly every one — costs no extension.
//
// Migration. Items written whole by an earlier release (payload and
// status in one item, no body_id) are read and updated as they are, and
// expire as before.

// bodyPrefix begins a body item's key: "body#<id>".
const bodyPrefix = "body#"

// BodyGrace is how much longer than the expiry it is written or extended
// for a body is kept: an event finished within it of its storing (or of
// the body's last extension) never pays for an extension.
const BodyGrace = 24 * time.Hour

// bodyID names an event's body by its key and its payload: the first 16
// bytes, in hex, of the SHA-256 of the key, a NUL and the payload's
// SHA-256 (its object's, for a payload kept in S3).
func bodyID(e inbox.Event) string {
	var payload []byte
	if r := e.PayloadRef; r != nil {
		payload, _ = hex.DecodeString(r.SHA256)
	}
	if payload == nil {
		sum := sha256.Sum256(e.Payload)
		payload = sum[:]
	}
	h := sha256.New()
	h.Write([]byte(e.Key.String()))
	h.Write([]byte{0})
	h.Write(payload)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// bodyPK is the key of the body named id (the key is in the name).
func bodyPK(id string) string { return bodyPrefix + id }

// The attributes of a whole item that go to the body item; the others
// (and pk) are the status's. The event's key, type and time of receipt
// are the status's alone (its pk holds the key, the index projects the
// type and keys on received_ms, which the split layout keeps to the
// millisecond instead of received_at's nanosecond). The
// reference of a payload kept in S3 (payload_ref) stays with the status:
// the claim check ties the object's life to the item that points at it,
// the status, as before the split (see package claimcheck), and a body
// points at nothing.
var bodyAttrs = []string{
	"kind", "created_at", "payload", "payload_z", "attributes", "headers",
	"request_id", "scope",
}

// splitItems is the body (named id) and status items of a new event e
// (z: the payload's gzip, if made already), the body kept until bodyUntil.
func splitItems(e inbox.Event, id string, z []byte, bodyUntil time.Time) (body, status map[string]types.AttributeValue, err error) {
	whole, err := attributevalue.MarshalMap(toItem(e, z))
	if err != nil {
		return nil, nil, err
	}
	body = map[string]types.AttributeValue{
		"pk":         str(bodyPK(id)),
		"expires_at": num(bodyUntil.Unix()),
	}
	for _, a := range bodyAttrs {
		if v, ok := whole[a]; ok {
			body[a] = v
			delete(whole, a)
		}
	}
	// In its pk; and the receipt's time is received_ms, to the
	// millisecond.
	for _, a := range []string{"source", "account", "event_id", "received_at"} {
		delete(whole, a)
	}
	whole["body_id"] = str(id)
	whole["body_expires"] = num(bodyUntil.Unix())
	return body, whole, nil
}

// withBody reads the body the status item st names, if it names one, and
// returns the whole event's attributes; a status item of the whole layout
// is returned as it is.
func (s *Store) withBody(ctx context.Context, k inbox.Key, st map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	id, ok := st["body_id"].(*types.AttributeValueMemberS)
	if !ok {
		return st, nil
	}
	body, err := s.readBody(ctx, bodyPK(id.Value))
	if err != nil {
		return nil, err
	}
	whole := make(map[string]types.AttributeValue, len(st)+len(body))
	for a, v := range body {
		if a != "pk" && a != "expires_at" {
			whole[a] = v
		}
	}
	for a, v := range st {
		whole[a] = v
	}
	return whole, nil
}

// ErrBodyLost: a status item names a body that is not stored. It cannot
// happen while the store's order and expiry rules hold (see above); it is
// reported, never retried into, as inbox.ErrInvalid.
var ErrBodyLost = errors.New("the event's stored payload is missing")

// readBody reads a body item: eventually consistently, and once more
// consistently if that missed it.
func (s *Store) readBody(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	for _, consistent := range []bool{false, true} {
		out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      &s.table,
			Key:            map[string]types.AttributeValue{"pk": str(key)},
			ConsistentRead: aws.Bool(consistent),
		})
		if err != nil {
			return nil, awserr.Wrap("read the event's body", err)
		}
		if out.Item != nil {
			return out.Item, nil
		}
	}
	return nil, fmt.Errorf("read the event's body: %w: %w", inbox.ErrInvalid, ErrBodyLost)
}

// keepBody makes sure ev's body lasts until need at least: if the expiry
// last recorded for it is earlier, it extends the body to need plus
// BodyGrace (never shortening it) and returns the event with the new
// BodyUntil, which the caller's next write of the status records. An
// event stored whole has nothing to extend.
func (s *Store) keepBody(ctx context.Context, ev inbox.Event, need time.Time) (inbox.Event, error) {
	if ev.Body == "" || !ev.BodyUntil.Before(need) {
		return ev, nil
	}
	until := need.Add(BodyGrace)
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 map[string]types.AttributeValue{"pk": str(bodyPK(ev.Body))},
		UpdateExpression:                    aws.String("SET expires_at = :until"),
		ConditionExpression:                 aws.String("attribute_exists(pk) AND expires_at < :until"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":until": num(until.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if ccf.Item == nil {
			return ev, fmt.Errorf("extend the body of %s: %w: %w", ev.Key, inbox.ErrInvalid, ErrBodyLost)
		}
		// Extended as far already (by another writer): record what it is.
		if at, ok := unixAttr(ccf.Item, "expires_at"); ok {
			until = at
		}
	case err != nil:
		return ev, awserr.Wrap("extend the body of "+ev.Key.String(), err)
	}
	ev.BodyUntil = until
	return ev, nil
}

// keepBodyToFinish is keepBody for a write that finishes the event (gives
// its status an expiry: a commit, a settling, a death). A body found lost
// does not hold the event back, which could then never finish: the write
// goes ahead, and the loss is reported wherever the body is read.
func (s *Store) keepBodyToFinish(ctx context.Context, ev inbox.Event, need time.Time) (inbox.Event, error) {
	kept, err := s.keepBody(ctx, ev, need)
	if errors.Is(err, ErrBodyLost) {
		return ev, nil
	}
	return kept, err
}

// unixAttr is the item's number attribute name as a time in Unix seconds
// (an expiry), and whether it has one.
func unixAttr(item map[string]types.AttributeValue, name string) (time.Time, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// bodyKept is the status's body_expires as the caller's write records it.
func bodyKept(ev inbox.Event) types.AttributeValue { return num(ev.BodyUntil.Unix()) }

// recordingBody is update, a SET expression of ev's status, also recording
// what ev's body has (body_expires, in values); update as it is for an
// event stored whole.
func recordingBody(update string, values map[string]types.AttributeValue, ev inbox.Event) string {
	if ev.Body == "" {
		return update
	}
	values[":bx"] = bodyKept(ev)
	return strings.Replace(update, "SET ", "SET body_expires = :bx, ", 1)
}
