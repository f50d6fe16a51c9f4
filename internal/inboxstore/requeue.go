package inboxstore

import (
	"context"
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

// Requeued says what Requeue found and did.
type Requeued string

// What Requeue did.
const (
	// Revived: the event was dead; it is failed and due now, its attempts
	// budget counted from here.
	Revived Requeued = "revived"
	// MadeDue: the event was received or failed; it is due now (a failed
	// event's backoff is cut short).
	MadeDue Requeued = "made_due"
	// Claimable: the event is processing under a lease that has ended; a
	// claim takes it as it is, so nothing was written.
	Claimable Requeued = "claimable"
	// Rerun: the event was processed (force); it is failed and due now,
	// its outcome kept as PreviousOutcome, its attempts budget counted
	// from here.
	Rerun Requeued = "rerun"
)

// requeueTries bounds Requeue's reads and writes when the event keeps
// changing between them (workers claiming and failing it).
const requeueTries = 3

// Requeue makes an event claimable now, the operator's deliberate act
// (replay, drain-dlq): its next message is taken through the same claim
// and commit as any delivery, so nothing it already wrote can be written
// again. Every change puts the event in the unfinished index, due now, in
// the same write: if the message that should follow is never sent, the
// sweep sends one.
//
// A processed event is re-run only with force, and only once its outbox
// has settled (else inbox.ErrOutboxPending: a re-run's commit would take
// the event out of the sweep's hands while rows may still be undelivered).
// Without force it returns inbox.ErrAlreadyProcessed, as it does when the
// event was unfinished when asked and processed meanwhile: force re-runs
// what was processed, never what has just finished. An event another
// worker holds under a live lease is left to it (inbox.ErrClaimed); one
// that is absent or expired is inbox.ErrNotFound. The event is returned as
// it is after the call, with what was done.
func (s *Store) Requeue(ctx context.Context, k inbox.Key, now time.Time, force bool) (inbox.Event, Requeued, error) {
	var first inbox.Status
	for try := range requeueTries {
		ev, err := s.Status(ctx, k, now)
		if err != nil {
			return inbox.Event{}, "", err
		}
		if try == 0 {
			first = ev.Status
		} else if ev.Status == inbox.StatusProcessed && first != inbox.StatusProcessed {
			// Finished since the first read: done, not a re-run the
			// operator asked for.
			return ev, "", fmt.Errorf("requeue %s: processed meanwhile: %w", k, inbox.ErrAlreadyProcessed)
		}
		var did Requeued
		in := &dynamodb.UpdateItemInput{
			TableName:                &s.table,
			Key:                      map[string]types.AttributeValue{"pk": str(pk(k))},
			ExpressionAttributeNames: map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now":   str(ts(now)),
				":nowms": num(now.UnixMilli()),
				":nows":  num(now.Unix()),
			},
			ReturnValues: types.ReturnValueAllNew,
		}
		v := in.ExpressionAttributeValues
		const fresh = "(attribute_not_exists(expires_at) OR expires_at >= :nows)"
		switch ev.Status {
		case inbox.StatusDead:
			did = Revived
			in.UpdateExpression = aws.String("SET #status = :failed, updated_at = :now, sweep_shard = :shard, due_ms = :nowms, revived_attempts = if_not_exists(attempts, :zero) REMOVE expires_at, dead_by, retry_ms, swept")
			in.ConditionExpression = aws.String("#status = :dead AND " + fresh)
			v[":failed"], v[":dead"], v[":shard"], v[":zero"] = str(string(inbox.StatusFailed)), str(string(inbox.StatusDead)), str(shard(k)), num(0)
		case inbox.StatusReceived, inbox.StatusFailed:
			did = MadeDue
			in.UpdateExpression = aws.String("SET due_ms = :nowms, updated_at = :now REMOVE retry_ms, swept")
			in.ConditionExpression = aws.String("#status IN (:received, :failed) AND attribute_exists(sweep_shard)")
			v[":received"], v[":failed"] = str(string(inbox.StatusReceived)), str(string(inbox.StatusFailed))
			delete(v, ":nows")
		case inbox.StatusProcessing:
			if ev.LeaseUntil.Before(now) {
				return ev, Claimable, nil
			}
			return ev, "", fmt.Errorf("requeue %s: held by %s until %s: %w", k, ev.LeaseOwner, ts(ev.LeaseUntil), inbox.ErrClaimed)
		case inbox.StatusProcessed:
			switch {
			case !force:
				return ev, "", fmt.Errorf("requeue %s: %w (re-run it with force)", k, inbox.ErrAlreadyProcessed)
			case ev.OutboxPending:
				return ev, "", fmt.Errorf("requeue %s: %w", k, inbox.ErrOutboxPending)
			}
			did = Rerun
			// A new outbox generation: the re-run's commit may add rows
			// to the settled outbox, and a delivery pass of the first
			// run that settles late (a slow one, an SDK retry of its
			// settle) must not settle those with it (SettleOutbox is
			// fenced by the generation).
			in.UpdateExpression = aws.String("SET #status = :failed, updated_at = :now, sweep_shard = :shard, due_ms = :nowms, revived_attempts = if_not_exists(attempts, :zero), previous_outcome = outcome, reruns = if_not_exists(reruns, :zero) + :one, outbox_gen = if_not_exists(outbox_gen, :zero) + :one REMOVE expires_at, outcome, retry_ms, swept")
			in.ConditionExpression = aws.String("#status = :processed AND (attribute_not_exists(outbox) OR outbox <> :pending) AND " + fresh)
			v[":failed"], v[":processed"], v[":pending"] = str(string(inbox.StatusFailed)), str(string(inbox.StatusProcessed)), str(outboxPending)
			v[":shard"], v[":zero"], v[":one"] = str(shard(k)), num(0), num(1)
		default:
			return ev, "", fmt.Errorf("requeue %s: unknown status %q", k, ev.Status)
		}
		if did == Revived || did == Rerun || did == MadeDue {
			// Waiting for a claim: its body must last a retention more.
			if ev, err = s.keepBody(ctx, ev, now.Add(s.retention)); err != nil {
				return ev, "", fmt.Errorf("requeue %s: %w", k, err)
			}
			in.UpdateExpression = aws.String(recordingBody(*in.UpdateExpression, v, ev))
		}
		out, err := s.api.UpdateItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &ccf):
			continue // changed since the read: read it again
		case err != nil:
			return ev, "", awserr.Wrap("requeue "+k.String(), err)
		}
		ev, err = decode(out.Attributes)
		return ev, did, err
	}
	return inbox.Event{}, "", fmt.Errorf("requeue %s: the event kept changing: %w", k, inbox.ErrClaimed)
}

// Selection is a range of the index that replay reads: events of one
// status received in [From, To), oldest first within each shard.
type Selection struct {
	Status   inbox.Status
	From, To time.Time
	// Cursor resumes a selection where an earlier page ended ("" from the
	// start); Select returns the next one.
	Cursor string
	Limit  int
}

// Selected is an event a selection found, from the index alone.
type Selected struct {
	Key        inbox.Key
	Status     inbox.Status
	EventType  string
	ReceivedAt time.Time
}

// Select reads about sel.Limit events of sel.Status (received, failed or
// dead) received in [sel.From, sel.To) from the index, shard after shard,
// and returns them with the cursor of what follows ("" at the end). Dead
// events whose retention has passed are skipped.
//
// A page never ends inside a run of events received in the same
// millisecond in one shard (it may hold a few more than sel.Limit for
// it), so a cursor is a shard and a time: everything in the shard up to
// that millisecond has been returned. It does not depend on any item
// still being in the index, which replaying a dead event changes.
func (s *Store) Select(ctx context.Context, sel Selection, now time.Time) ([]Selected, string, error) {
	prefix := ""
	switch sel.Status {
	case inbox.StatusReceived, inbox.StatusFailed:
	case inbox.StatusDead:
		prefix = "d"
	default:
		return nil, "", fmt.Errorf("select: status %q: want received, failed or dead", sel.Status)
	}
	first, afterMs, err := parseCursor(sel.Status, sel.Cursor)
	if err != nil {
		return nil, "", err
	}
	to := sel.To
	if to.IsZero() {
		to = now.Add(time.Hour)
	}
	if !sel.From.Before(to) {
		return nil, "", nil // an empty range (received_from after now)
	}
	limit := max(sel.Limit, 1)
	var out []Selected
	for sh := first; sh < SweepShards; sh++ {
		from := sel.From.UnixMilli()
		if sh == first && afterMs >= from {
			from = afterMs + 1
		}
		var start map[string]types.AttributeValue
		last := int64(-1)
		for {
			page, err := s.api.Query(ctx, &dynamodb.QueryInput{
				TableName:                &s.table,
				IndexName:                aws.String(UnfinishedIndex),
				KeyConditionExpression:   aws.String("sweep_shard = :shard AND received_ms BETWEEN :from AND :to"),
				FilterExpression:         aws.String("#status = :status"),
				ExpressionAttributeNames: map[string]string{"#status": "status"},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":shard":  str(prefix + strconv.Itoa(sh)),
					":from":   num(from),
					":to":     num(to.UnixMilli() - 1),
					":status": str(string(sel.Status)),
				},
				ExclusiveStartKey: start,
			})
			if err != nil {
				return out, "", awserr.Wrap("query "+string(sel.Status)+" events", err)
			}
			for _, av := range page.Items {
				var it item
				if err := attributevalue.UnmarshalMap(av, &it); err != nil {
					return out, "", fmt.Errorf("decode index item: %w", err)
				}
				if len(out) >= limit && it.ReceivedMs != last {
					// Full, and at the end of a millisecond's run.
					return out, cursor(sel.Status, sh, last), nil
				}
				last = it.ReceivedMs
				if it.ExpiresAt != 0 && it.ExpiresAt < now.Unix() {
					continue
				}
				out = append(out, Selected{Key: splitPK(it.PK), Status: inbox.Status(it.Status), EventType: it.EventType, ReceivedAt: time.UnixMilli(it.ReceivedMs)})
			}
			if page.LastEvaluatedKey == nil {
				break
			}
			start = page.LastEvaluatedKey
		}
		if len(out) >= limit && sh+1 < SweepShards {
			return out, cursor(sel.Status, sh+1, -1), nil
		}
	}
	return out, "", nil
}

// splitPK reads an event's key from its item's pk, split but not
// validated (an event stored before a rule it breaks is still one to
// finish).
func splitPK(p string) inbox.Key {
	rest, _ := strings.CutPrefix(p, eventPrefix)
	source, rest, _ := strings.Cut(rest, "#")
	account, id, _ := strings.Cut(rest, "#")
	return inbox.Key{Source: source, Account: account, EventID: id}
}

// A cursor is "status/shard/received_ms": the selection's status, the
// shard to read next, and the receipt time up to which it has been read
// (-1: none of it).
func cursor(status inbox.Status, shard int, receivedMs int64) string {
	return string(status) + "/" + strconv.Itoa(shard) + "/" + strconv.FormatInt(receivedMs, 10)
}

// CheckCursor reports whether c is a cursor Select gave for status ("" is
// the start).
func CheckCursor(status inbox.Status, c string) error {
	_, _, err := parseCursor(status, c)
	return err
}

func parseCursor(status inbox.Status, c string) (int, int64, error) {
	if c == "" {
		return 0, -1, nil
	}
	st, rest, ok1 := strings.Cut(c, "/")
	a, b, ok2 := strings.Cut(rest, "/")
	sh, err1 := strconv.Atoi(a)
	ms, err2 := strconv.ParseInt(b, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || sh < 0 || sh >= SweepShards || ms < -1 {
		return 0, 0, fmt.Errorf("cursor %q is not one a summary gave", c)
	}
	if inbox.Status(st) != status {
		return 0, 0, fmt.Errorf("cursor %q continues a selection of %s events, not %s", c, st, status)
	}
	return sh, ms, nil
}
