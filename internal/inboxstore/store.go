// Package inboxstore keeps inbox events and effect records in one DynamoDB
// table. Every decision is one conditional write; the SDK's condition and
// transaction failures are translated here, once, into the inbox and effects
// packages' errors.
package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// API is the DynamoDB calls the store makes, with the SDK's signatures.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Key prefixes keep events and effect records apart in the one table.
const (
	eventPrefix  = "event#"
	effectPrefix = "effect#"
)

// Store is the inbox table.
type Store struct {
	api   API
	table string
}

// New returns a store over the named table.
func New(api API, table string) *Store {
	return &Store{api: api, table: table}
}

// item is the stored shape of an event. Times are RFC 3339 strings for
// people reading the console, except the two the table compares: the TTL
// attribute (epoch seconds, as DynamoDB's TTL requires) and the lease expiry
// (epoch milliseconds).
type item struct {
	PK          string            `dynamodbav:"pk"`
	Source      string            `dynamodbav:"source"`
	Account     string            `dynamodbav:"account,omitempty"`
	EventID     string            `dynamodbav:"event_id"`
	Kind        string            `dynamodbav:"kind"`
	EventType   string            `dynamodbav:"event_type"`
	CreatedAt   string            `dynamodbav:"created_at,omitempty"`
	Payload     []byte            `dynamodbav:"payload"`
	Attributes  map[string]string `dynamodbav:"attributes,omitempty"`
	Status      string            `dynamodbav:"status"`
	Outcome     string            `dynamodbav:"outcome,omitempty"`
	Attempts    int               `dynamodbav:"attempts"`
	LastError   string            `dynamodbav:"last_error,omitempty"`
	ReceivedAt  string            `dynamodbav:"received_at"`
	UpdatedAt   string            `dynamodbav:"updated_at"`
	ProcessedAt string            `dynamodbav:"processed_at,omitempty"`
	ExpiresAt   int64             `dynamodbav:"expires_at,omitempty"`
	LeaseOwner  string            `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil  int64             `dynamodbav:"lease_until,omitempty"`
}

func pk(k inbox.Key) string { return eventPrefix + k.String() }

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func toItem(e inbox.Event) item {
	it := item{
		PK: pk(e.Key), Source: e.Key.Source, Account: e.Key.Account, EventID: e.Key.EventID,
		Kind: e.Kind, EventType: e.Type, CreatedAt: ts(e.Created), Payload: e.Payload, Attributes: e.Attributes,
		Status: string(e.Status), Outcome: string(e.Outcome), Attempts: e.Attempts,
		LastError: e.LastError, ReceivedAt: ts(e.ReceivedAt), UpdatedAt: ts(e.UpdatedAt),
		ProcessedAt: ts(e.ProcessedAt), LeaseOwner: e.LeaseOwner,
	}
	if !e.ExpiresAt.IsZero() {
		it.ExpiresAt = e.ExpiresAt.Unix()
	}
	if !e.LeaseUntil.IsZero() {
		it.LeaseUntil = e.LeaseUntil.UnixMilli()
	}
	return it
}

func (it item) event() inbox.Event {
	e := inbox.Event{
		Key:  inbox.Key{Source: it.Source, Account: it.Account, EventID: it.EventID},
		Kind: it.Kind, Type: it.EventType, Created: parseTS(it.CreatedAt), Payload: it.Payload,
		Attributes: it.Attributes, Status: inbox.Status(it.Status), Outcome: inbox.Outcome(it.Outcome), Attempts: it.Attempts,
		LastError: it.LastError, ReceivedAt: parseTS(it.ReceivedAt), UpdatedAt: parseTS(it.UpdatedAt),
		ProcessedAt: parseTS(it.ProcessedAt), LeaseOwner: it.LeaseOwner,
	}
	if it.ExpiresAt != 0 {
		e.ExpiresAt = time.Unix(it.ExpiresAt, 0)
	}
	if it.LeaseUntil != 0 {
		e.LeaseUntil = time.UnixMilli(it.LeaseUntil)
	}
	return e
}

func decode(av map[string]types.AttributeValue) (inbox.Event, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return inbox.Event{}, fmt.Errorf("decode item: %w", err)
	}
	return it.event(), nil
}

// unavailable marks an SDK failure as a dependency outage.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, inbox.ErrUnavailable, err)
}

// Insert stores a new event in status received, decided by one conditional
// write. If an unexpired event with the same key exists it returns that
// stored event and an error wrapping inbox.ErrDuplicate. An item whose TTL
// has passed counts as absent even before DynamoDB deletes it.
func (s *Store) Insert(ctx context.Context, e inbox.Event, now time.Time) (inbox.Event, error) {
	av, err := attributevalue.MarshalMap(toItem(e))
	if err != nil {
		return inbox.Event{}, fmt.Errorf("insert %s: %w", e.Key, err)
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &s.table,
		Item:                                av,
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR (attribute_exists(expires_at) AND expires_at < :now)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		stored, derr := decode(ccf.Item)
		if derr != nil {
			return inbox.Event{}, fmt.Errorf("insert %s: %w (%v)", e.Key, inbox.ErrDuplicate, derr)
		}
		return stored, fmt.Errorf("insert %s: %w", e.Key, inbox.ErrDuplicate)
	case err != nil:
		return inbox.Event{}, unavailable("insert "+e.Key.String(), err)
	}
	return e, nil
}

// Get returns the stored event, or inbox.ErrNotFound (also for an item
// whose TTL has passed).
func (s *Store) Get(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            map[string]types.AttributeValue{"pk": str(pk(k))},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return inbox.Event{}, unavailable("get "+k.String(), err)
	}
	if out.Item == nil {
		return inbox.Event{}, fmt.Errorf("get %s: %w", k, inbox.ErrNotFound)
	}
	e, err := decode(out.Item)
	if err != nil {
		return inbox.Event{}, err
	}
	if !e.ExpiresAt.IsZero() && e.ExpiresAt.Before(now) {
		return inbox.Event{}, fmt.Errorf("get %s: expired: %w", k, inbox.ErrNotFound)
	}
	return e, nil
}

// Claim takes a lease on the event for owner until leaseUntil and counts an
// attempt. An event whose TTL has passed counts as absent. It succeeds for events that are received, failed or dead, and for
// events in processing whose lease has expired (a crashed worker). It
// returns inbox.ErrAlreadyProcessed, inbox.ErrClaimed (another live lease)
// or inbox.ErrNotFound otherwise.
func (s *Store) Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error) {
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression: aws.String("SET #status = :processing, lease_owner = :owner, lease_until = :until, attempts = if_not_exists(attempts, :zero) + :one, updated_at = :now"),
		ConditionExpression: aws.String("attribute_exists(pk) AND " +
			"(attribute_not_exists(expires_at) OR expires_at >= :nows) AND " +
			"(#status IN (:received, :failed, :dead) OR (#status = :processing AND lease_until < :nowms))"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": str(string(inbox.StatusProcessing)),
			":received":   str(string(inbox.StatusReceived)),
			":failed":     str(string(inbox.StatusFailed)),
			":dead":       str(string(inbox.StatusDead)),
			":owner":      str(owner),
			":until":      num(leaseUntil.UnixMilli()),
			":nowms":      num(now.UnixMilli()),
			":nows":       num(now.Unix()),
			":now":        str(ts(now)),
			":zero":       num(0),
			":one":        num(1),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if ccf.Item == nil {
			return inbox.Event{}, fmt.Errorf("claim %s: %w", k, inbox.ErrNotFound)
		}
		old, derr := decode(ccf.Item)
		if derr != nil {
			return inbox.Event{}, fmt.Errorf("claim %s: %w", k, derr)
		}
		if !old.ExpiresAt.IsZero() && old.ExpiresAt.Before(now) {
			return inbox.Event{}, fmt.Errorf("claim %s: expired: %w", k, inbox.ErrNotFound)
		}
		if old.Status == inbox.StatusProcessed {
			return old, fmt.Errorf("claim %s: %w", k, inbox.ErrAlreadyProcessed)
		}
		return old, fmt.Errorf("claim %s: held by %s until %s: %w", k, old.LeaseOwner, ts(old.LeaseUntil), inbox.ErrClaimed)
	case err != nil:
		return inbox.Event{}, unavailable("claim "+k.String(), err)
	}
	return decode(out.Attributes)
}

// Complete commits a claimed event in one transaction: every effect record
// of plan is written only if it does not exist yet, and the event becomes
// processed with outcome — only while owner still holds the lease. If some
// records exist already, nothing is written and an *effects.ExistsError
// names them; if the lease was lost, the error wraps inbox.ErrLeaseLost.
func (s *Store) Complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now time.Time) error {
	items := make([]types.TransactWriteItem, 0, len(plan.Records)+1)
	for _, r := range plan.Records {
		av, err := attributevalue.MarshalMap(r.Attributes)
		if err != nil {
			return fmt.Errorf("complete %s: effect %s: %w", ev.Key, r.ID(), err)
		}
		if av == nil {
			av = map[string]types.AttributeValue{}
		}
		av["pk"] = str(effectPrefix + r.ID())
		av["effect_kind"] = str(r.Kind)
		av["effect_key"] = str(r.Key)
		av["event_key"] = str(ev.Key.String())
		av["recorded_at"] = str(ts(now))
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                           &s.table,
			Item:                                av,
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureNone,
		}})
	}
	items = append(items, types.TransactWriteItem{Update: &types.Update{
		TableName:                &s.table,
		Key:                      map[string]types.AttributeValue{"pk": str(pk(ev.Key))},
		UpdateExpression:         aws.String("SET #status = :processed, outcome = :outcome, processed_at = :now, updated_at = :now REMOVE lease_owner, lease_until"),
		ConditionExpression:      aws.String("#status = :processing AND lease_owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processed":  str(string(inbox.StatusProcessed)),
			":processing": str(string(inbox.StatusProcessing)),
			":outcome":    str(string(outcome)),
			":owner":      str(owner),
			":now":        str(ts(now)),
		},
	}})
	_, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tce *types.TransactionCanceledException
	switch {
	case errors.As(err, &tce):
		return cancelled(ev.Key, plan, tce)
	case err != nil:
		return unavailable("complete "+ev.Key.String(), err)
	}
	return nil
}

// cancelled reads a transaction's cancellation reasons, which come in the
// order of the transaction's items: the plan's records, then the event.
func cancelled(k inbox.Key, plan effects.Plan, tce *types.TransactionCanceledException) error {
	reasons := tce.CancellationReasons
	n := len(plan.Records)
	if len(reasons) == n+1 && aws.ToString(reasons[n].Code) == "ConditionalCheckFailed" {
		return fmt.Errorf("complete %s: %w", k, inbox.ErrLeaseLost)
	}
	var exists []string
	for i := 0; i < n && i < len(reasons); i++ {
		if aws.ToString(reasons[i].Code) == "ConditionalCheckFailed" {
			exists = append(exists, plan.Records[i].ID())
		}
	}
	if len(exists) > 0 {
		return fmt.Errorf("complete %s: %w", k, &effects.ExistsError{IDs: exists})
	}
	// Conflicts with a concurrent transaction, throttling: retry later.
	return unavailable("complete "+k.String(), tce)
}

// Fail records a failed attempt while owner holds the lease: the event
// becomes failed (to be retried) or dead (no retry left, or a permanent
// error), with the error text kept for operators. The lease is released.
func (s *Store) Fail(ctx context.Context, k inbox.Key, owner string, status inbox.Status, cause string, now time.Time) error {
	if len(cause) > 1024 {
		cause = cause[:1024]
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression:         aws.String("SET #status = :status, last_error = :cause, updated_at = :now REMOVE lease_owner, lease_until"),
		ConditionExpression:      aws.String("#status = :processing AND lease_owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":status":     str(string(status)),
			":processing": str(string(inbox.StatusProcessing)),
			":cause":      str(cause),
			":owner":      str(owner),
			":now":        str(ts(now)),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("fail %s: %w", k, inbox.ErrLeaseLost)
	case err != nil:
		return unavailable("fail "+k.String(), err)
	}
	return nil
}

// Effect returns the attributes of a stored effect record, or
// inbox.ErrNotFound. Numbers come back as int64 when they are integers,
// float64 otherwise.
func (s *Store) Effect(ctx context.Context, kind, key string) (map[string]any, error) {
	id := effects.Record{Kind: kind, Key: key}.ID()
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            map[string]types.AttributeValue{"pk": str(effectPrefix + id)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, unavailable("get effect "+id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("effect %s: %w", id, inbox.ErrNotFound)
	}
	var m map[string]any
	err = attributevalue.UnmarshalMapWithOptions(out.Item, &m, func(o *attributevalue.DecoderOptions) { o.UseNumber = true })
	if err != nil {
		return nil, fmt.Errorf("effect %s: %w", id, err)
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

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
