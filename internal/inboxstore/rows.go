package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

// ReviewShard is the unfinished index's partition of outbox rows that
// ended without a known delivery (rejected, unknown, dead), oldest first:
// what an operator reviews.
const ReviewShard = "review"

// rowItem is the stored shape of an outbox row.
type rowItem struct {
	PK          string `dynamodbav:"pk"`
	Key         string `dynamodbav:"outbox_key"`
	Action      string `dynamodbav:"action"`
	Target      string `dynamodbav:"target"`
	Body        string `dynamodbav:"body,omitempty"`
	EventKey    string `dynamodbav:"event_key"`
	Status      string `dynamodbav:"status"`
	Attempts    int    `dynamodbav:"attempts"`
	DueMs       int64  `dynamodbav:"due_ms,omitempty"`
	LeaseOwner  string `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil  int64  `dynamodbav:"lease_until,omitempty"`
	LastError   string `dynamodbav:"last_error,omitempty"`
	StatusCode  int    `dynamodbav:"status_code,omitempty"`
	CreatedAt   string `dynamodbav:"created_at"`
	UpdatedAt   string `dynamodbav:"updated_at"`
	DeliveredAt string `dynamodbav:"delivered_at,omitempty"`
	DeliveredTo string `dynamodbav:"delivered_to,omitempty"`
	// ClaimedFrom is the state the last claim found.
	ClaimedFrom string `dynamodbav:"claimed_from,omitempty"`
	// An operator's acts (ResolveRow, ResendRow).
	Resent       int    `dynamodbav:"resent,omitempty"`
	ResolvedFrom string `dynamodbav:"resolved_from,omitempty"`
	Resolution   string `dynamodbav:"resolution,omitempty"`
	ResolvedAt   string `dynamodbav:"resolved_at,omitempty"`
}

func decodeRow(av map[string]types.AttributeValue) (outbox.Row, error) {
	var it rowItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return outbox.Row{}, fmt.Errorf("decode outbox row: %w", err)
	}
	k, _ := inbox.ParseKey(it.EventKey)
	r := outbox.Row{
		Key: it.Key, Action: it.Action, Target: it.Target, Body: []byte(it.Body), Event: k,
		State: outbox.State(it.Status), Attempts: it.Attempts, LeaseOwner: it.LeaseOwner,
		LastError: it.LastError, StatusCode: it.StatusCode, CreatedAt: parseTS(it.CreatedAt),
		UpdatedAt: parseTS(it.UpdatedAt), DeliveredAt: parseTS(it.DeliveredAt), DeliveredTo: it.DeliveredTo,
		Resent: it.Resent, ResolvedFrom: outbox.State(it.ResolvedFrom), Resolution: it.Resolution, ResolvedAt: parseTS(it.ResolvedAt),
	}
	if it.Body == "" {
		r.Body = nil
	}
	if it.DueMs != 0 {
		r.DueAt = time.UnixMilli(it.DueMs)
	}
	if it.LeaseUntil != 0 {
		r.LeaseUntil = time.UnixMilli(it.LeaseUntil)
	}
	return r, nil
}

func rowPK(key string) string { return effects.Outbound{Key: key}.ID() }

// Errors of the row operations do not name the row: its key is built from
// business identifiers, which stay out of logs; callers name it.

// ClaimRow takes a lease on an outbox row for owner until leaseUntil, to
// deliver it, and counts an attempt; it returns the row as it was before
// the claim. It succeeds for pending and failed rows that are due, and for
// rows another worker held in delivering whose lease ended (the returned
// row says delivering: that delivery may or may not have reached the
// receiver). Otherwise it returns, with the row, outbox.ErrFinal,
// inbox.ErrNotDue, inbox.ErrClaimed (another live lease), or
// inbox.ErrNotFound. A claim of owner's own whose answer was lost and that
// the SDK sent again returns the row as the claim that landed found it.
func (s *Store) ClaimRow(ctx context.Context, key, owner string, now, leaseUntil time.Time) (outbox.Row, error) {
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(rowPK(key))},
		UpdateExpression: aws.String("SET claimed_from = #status, #status = :delivering, lease_owner = :owner, lease_until = :until, attempts = attempts + :one, updated_at = :now"),
		ConditionExpression: aws.String("attribute_exists(pk) AND (" +
			"(#status IN (:pending, :failed) AND due_ms <= :duems) OR " +
			"(#status = :delivering AND lease_until < :nowms))"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":delivering": str(string(outbox.Delivering)),
			":pending":    str(string(outbox.Pending)),
			":failed":     str(string(outbox.Failed)),
			":owner":      str(owner),
			":until":      num(leaseUntil.UnixMilli()),
			":nowms":      num(now.UnixMilli()),
			":duems":      num(now.Add(DueSlack).UnixMilli()),
			":now":        str(ts(now)),
			":one":        num(1),
		},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if ccf.Item == nil {
			return outbox.Row{}, fmt.Errorf("claim row: %w", inbox.ErrNotFound)
		}
		r, derr := decodeRow(ccf.Item)
		switch {
		case derr != nil:
			return outbox.Row{}, fmt.Errorf("claim row: %w", derr)
		case r.State.Final():
			return r, fmt.Errorf("claim row: %s: %w", r.State, outbox.ErrFinal)
		case r.State == outbox.Delivering && r.LeaseOwner == owner:
			// This owner's claim, whose answer was lost and which the SDK
			// sent again: the row as that claim found it.
			var it rowItem
			if err := attributevalue.UnmarshalMap(ccf.Item, &it); err == nil && it.ClaimedFrom != "" {
				r.State, r.Attempts = outbox.State(it.ClaimedFrom), r.Attempts-1
			}
			return r, nil
		case r.State == outbox.Delivering:
			return r, fmt.Errorf("claim row: held by %s until %s: %w", r.LeaseOwner, ts(r.LeaseUntil), inbox.ErrClaimed)
		}
		return r, fmt.Errorf("claim row: due at %s: %w", ts(r.DueAt), inbox.ErrNotDue)
	case err != nil:
		return outbox.Row{}, awserr.Wrap("claim row", err)
	}
	return decodeRow(out.Attributes)
}

// FinishRow records the outcome of owner's delivery attempt, only while
// owner holds the row's lease (else inbox.ErrLeaseLost: another worker
// took the row over and its outcome stands). A failed row is due again at
// res.RetryAt; a delivered one drops its body (nothing is kept that is
// not needed); one for review (rejected, unknown, dead) enters the
// index's ReviewShard.
func (s *Store) FinishRow(ctx context.Context, key, owner string, res outbox.Result, now time.Time) error {
	values := map[string]types.AttributeValue{
		":state":      str(string(res.State)),
		":delivering": str(string(outbox.Delivering)),
		":owner":      str(owner),
		":now":        str(ts(now)),
	}
	set := "SET #status = :state, updated_at = :now"
	remove := " REMOVE lease_owner, lease_until"
	if res.Cause != "" {
		cause := res.Cause
		if len(cause) > maxCause {
			cause = cause[:maxCause]
		}
		set += ", last_error = :cause"
		values[":cause"] = str(cause)
	}
	if res.StatusCode != 0 {
		set += ", status_code = :code"
		values[":code"] = num(int64(res.StatusCode))
	}
	switch {
	case res.State == outbox.Failed:
		set += ", due_ms = :due"
		values[":due"] = num(res.RetryAt.UnixMilli())
	case res.State == outbox.Delivered:
		set += ", delivered_at = :now, delivered_to = :to"
		values[":to"] = str(res.DeliveredTo)
		remove += ", due_ms, body"
	case res.State.ForReview():
		set += ", sweep_shard = :review"
		values[":review"] = str(ReviewShard)
		remove += ", due_ms"
	default:
		return fmt.Errorf("finish row: state %q is not an outcome", res.State)
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(rowPK(key))},
		UpdateExpression:          aws.String(set + remove),
		ConditionExpression:       aws.String("#status = :delivering AND lease_owner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("finish row: %w", inbox.ErrLeaseLost)
	case err != nil:
		return awserr.Wrap("finish row", err)
	}
	return nil
}

// Row returns the outbox row with the key, or inbox.ErrNotFound.
func (s *Store) Row(ctx context.Context, key string) (outbox.Row, error) {
	av, err := s.getItem(ctx, rowPK(key), "get row")
	if err != nil {
		return outbox.Row{}, err
	}
	return decodeRow(av)
}

// ForReview lists up to limit outbox rows that ended rejected, unknown or
// dead, oldest first, with their state, from the index alone.
func (s *Store) ForReview(ctx context.Context, limit int) ([]outbox.Row, error) {
	var out []outbox.Row
	var start map[string]types.AttributeValue
	for len(out) < limit {
		page, err := s.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(UnfinishedIndex),
			KeyConditionExpression:    aws.String("sweep_shard = :review"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":review": str(ReviewShard)},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return out, awserr.Wrap("query rows for review", err)
		}
		for _, av := range page.Items {
			var it struct {
				PK     string `dynamodbav:"pk"`
				Status string `dynamodbav:"status"`
			}
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return out, fmt.Errorf("decode index item: %w", err)
			}
			key := it.PK[len(effects.OutboundPrefix):]
			out = append(out, outbox.Row{Key: key, State: outbox.State(it.Status)})
			if len(out) == limit {
				break
			}
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		start = page.LastEvaluatedKey
	}
	return out, nil
}

// Part returns the attributes of a stored fact or entity by its ID (see
// effects.Fact.ID, effects.Update.ID), or inbox.ErrNotFound. Numbers come
// back as int64 when they are integers, float64 otherwise.
func (s *Store) Part(ctx context.Context, id string) (map[string]any, error) {
	av, err := s.getItem(ctx, id, "get "+id)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = attributevalue.UnmarshalMapWithOptions(av, &m, func(o *attributevalue.DecoderOptions) { o.UseNumber = true })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	for k, v := range m {
		if n, ok := v.(attributevalue.Number); ok {
			if i, err := n.Int64(); err == nil {
				m[k] = i
			} else if f, err := n.Float64(); err == nil {
				m[k] = f
			}
		}
	}
	return m, nil
}

// Fact returns the attributes of a fact stored in scope (see Part and
// inbox.Event.PartScope).
func (s *Store) Fact(ctx context.Context, scope, kind, key string) (map[string]any, error) {
	return s.Part(ctx, effects.ScopedID(scope, effects.Fact{Kind: kind, Key: key}.ID()))
}

// ResolveRow records an operator's review of an outbox row that ended
// without a known delivery (rejected, unknown or dead): resolved, final,
// out of the review list, with the operator's note. Any other row is
// refused with outbox.ErrNotForReview (and the row); a missing one with
// inbox.ErrNotFound.
func (s *Store) ResolveRow(ctx context.Context, key, note string, now time.Time) (outbox.Row, error) {
	if len(note) > maxCause {
		note = note[:maxCause]
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      map[string]types.AttributeValue{"pk": str(rowPK(key))},
		UpdateExpression:         aws.String("SET #status = :resolved, resolved_from = #status, resolution = :note, resolved_at = :now, updated_at = :now REMOVE sweep_shard"),
		ConditionExpression:      aws.String("#status IN (:rejected, :unknown, :dead)"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":resolved": str(string(outbox.Resolved)),
			":rejected": str(string(outbox.Rejected)),
			":unknown":  str(string(outbox.Unknown)),
			":dead":     str(string(outbox.Dead)),
			":note":     str(note),
			":now":      str(ts(now)),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return notForReview("resolve row", ccf.Item)
	case err != nil:
		return outbox.Row{}, awserr.Wrap("resolve row", err)
	}
	return decodeRow(out.Attributes)
}

func notForReview(op string, old map[string]types.AttributeValue) (outbox.Row, error) {
	if old == nil {
		return outbox.Row{}, fmt.Errorf("%s: %w", op, inbox.ErrNotFound)
	}
	r, err := decodeRow(old)
	if err != nil {
		return outbox.Row{}, fmt.Errorf("%s: %w", op, err)
	}
	return r, fmt.Errorf("%s: it is %s: %w", op, r.State, outbox.ErrNotForReview)
}

// ResendRow is an operator's deliberate resend of an outbox row that ended
// rejected, unknown or dead (after checking that its receiver did not act
// on it): in one transaction the row becomes pending and due now, with a
// fresh attempts budget (attempts_before_resend keeps the old count), and
// its event's outbox pending again, in the sweep's outbox partitions and
// due now, so a delivery follows even if the message the caller sends next
// is lost. The event's outbox generation (OutboxGen) grows in the same
// write: a delivery pass that saw the row final before the resend cannot
// settle the outbox after it (SettleOutbox is conditioned on the
// generation it read), so the row is never left pending in an outbox
// marked settled. A delivered row is never resent. It returns the row as it was, or
// outbox.ErrNotForReview (with the row) for a row in another state, or
// inbox.ErrNotFound when the row or its event is gone.
func (s *Store) ResendRow(ctx context.Context, key string, now time.Time) (outbox.Row, error) {
	r, err := s.Row(ctx, key)
	if err != nil {
		return outbox.Row{}, fmt.Errorf("resend row: %w", err)
	}
	if !r.State.ForReview() {
		return r, fmt.Errorf("resend row: it is %s: %w", r.State, outbox.ErrNotForReview)
	}
	// The event waits for its outbox again, with no expiry: its body must
	// last a retention more.
	ev, err := s.Status(ctx, r.Event, now)
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		return r, fmt.Errorf("resend row: its event %s is gone: %w", r.Event, inbox.ErrNotFound)
	case err != nil:
		return r, fmt.Errorf("resend row: %w", err)
	}
	if ev, err = s.keepBody(ctx, ev, now.Add(s.retention)); err != nil {
		return r, fmt.Errorf("resend row: %w", err)
	}
	eventSet := "SET outbox = :pending, outbox_gen = if_not_exists(outbox_gen, :zero) + :one, sweep_shard = :shard, due_ms = :nowms, updated_at = :now REMOVE expires_at, swept"
	eventValues := map[string]types.AttributeValue{
		":pending": str(outboxPending), ":shard": str(outboxShard(r.Event)), ":processed": str(string(inbox.StatusProcessed)),
		":row": str(key), ":nowms": num(now.UnixMilli()), ":nows": num(now.Unix()), ":now": str(ts(now)),
		":zero": num(0), ":one": num(1),
	}
	eventSet = recordingBody(eventSet, eventValues, ev)
	_, err = s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                &s.table,
			Key:                      map[string]types.AttributeValue{"pk": str(rowPK(key))},
			UpdateExpression:         aws.String("SET #status = :pending, due_ms = :nowms, resent = if_not_exists(resent, :zero) + :one, attempts_before_resend = attempts, attempts = :zero, updated_at = :now REMOVE sweep_shard, lease_owner, lease_until"),
			ConditionExpression:      aws.String("#status IN (:rejected, :unknown, :dead)"),
			ExpressionAttributeNames: map[string]string{"#status": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pending": str(string(outbox.Pending)), ":rejected": str(string(outbox.Rejected)),
				":unknown": str(string(outbox.Unknown)), ":dead": str(string(outbox.Dead)),
				":nowms": num(now.UnixMilli()), ":now": str(ts(now)), ":zero": num(0), ":one": num(1),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Update: &types.Update{
			TableName:                 &s.table,
			Key:                       map[string]types.AttributeValue{"pk": str(pk(r.Event))},
			UpdateExpression:          aws.String(eventSet),
			ConditionExpression:       aws.String("#status = :processed AND contains(outbox_rows, :row) AND (attribute_not_exists(expires_at) OR expires_at >= :nows)"),
			ExpressionAttributeNames:  map[string]string{"#status": "status"},
			ExpressionAttributeValues: eventValues,
		}},
	}})
	var tce *types.TransactionCanceledException
	switch {
	case errors.As(err, &tce):
		reasons := tce.CancellationReasons
		if len(reasons) == 2 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
			return notForReview("resend row", reasons[0].Item)
		}
		if len(reasons) == 2 && aws.ToString(reasons[1].Code) == "ConditionalCheckFailed" {
			return r, fmt.Errorf("resend row: its event %s is not processed, gone or does not list it: %w", r.Event, inbox.ErrNotFound)
		}
		return r, fmt.Errorf("resend row: %w: %w", inbox.ErrUnavailable, err)
	case err != nil:
		return r, awserr.Wrap("resend row", err)
	}
	return r, nil
}
