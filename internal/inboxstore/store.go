// Package inboxstore keeps inbox events, the business parts their commits
// write (facts, entities, outbox rows) and nothing else, in one DynamoDB
// table. Every decision is one conditional write or transaction; the SDK's
// condition and transaction failures are translated here, once, into the
// inbox, effects and outbox packages' errors.
package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// API is the DynamoDB calls the store makes, with the SDK's signatures.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Events are stored under this prefix; parts under their IDs, whose
// prefixes the effects package gives.
const (
	eventPrefix = "event#"
	// noncePrefix keys the nonces of signatures that do not cover the
	// body's bytes (ClaimNonce).
	noncePrefix = "nonce#"
)

// The unfinished-events index: a sparse global secondary index over the
// events that are not finished with — received, processing or failed;
// processed with an outbox that has not settled ("o" partitions); dead,
// until an operator revives them or they expire ("d" partitions) — and the
// outbox rows for review (ReviewShard). Its partition key is one of
// SweepShards shard names per kind (spreading its writes over partitions:
// a single key would cap the inbox at one partition's 1,000 writes a
// second); its sort key is the time of receipt, so the oldest unfinished
// event is the first item of some shard. Processed events drop out of it,
// the sweep reads only the unfinished and outbox partitions, and nothing
// ever scans the table.
const (
	UnfinishedIndex = "unfinished"
	SweepShards     = 10
)

// MaxMessageRetention is the longest SQS keeps a message (14 days). A dead
// event is kept at least DeadRetention after it dies, a day more than
// that, so no DLQ message (copied a moment after the event died) can
// outlive the event it points at.
const (
	MaxMessageRetention = 14 * 24 * time.Hour
	DeadRetention       = MaxMessageRetention + 24*time.Hour
)

// DueSlack is how early a failed event may be claimed before it is due:
// the workers' clocks differ a little, and a message that comes back on
// time must not be turned away for it (the shortest backoff is 15 s).
const DueSlack = 5 * time.Second

// DefaultRetention is the retention of New when it is given none.
const DefaultRetention = 30 * 24 * time.Hour

// Store is the inbox table.
type Store struct {
	api       API
	table     string
	retention time.Duration
	// unscopedFacts: the table may hold facts of an earlier release,
	// without a scope (see WithUnscopedFacts); when layout is set, it
	// decides instead, at the first commit.
	unscopedFacts bool
	layout        *layoutDecision
	scopes        Scopes
	// sleep waits between retries of a conflicting transaction.
	sleep func(context.Context, time.Duration) error
}

// New returns a store over the named table. Retention is how long an
// event is kept once it is finished; unfinished events never expire, and
// dead ones are kept at least DeadRetention. Zero means
// DefaultRetention.
func New(api API, table string, retention time.Duration) *Store {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Store{api: api, table: table, retention: retention, sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// item is the stored shape of an event. Times are RFC 3339 strings for
// people reading the console, except the two the table compares: the TTL
// attribute (epoch seconds, as DynamoDB's TTL requires) and the lease expiry
// (epoch milliseconds).
type item struct {
	PK        string `dynamodbav:"pk"`
	Source    string `dynamodbav:"source"`
	Account   string `dynamodbav:"account,omitempty"`
	EventID   string `dynamodbav:"event_id"`
	Kind      string `dynamodbav:"kind"`
	EventType string `dynamodbav:"event_type"`
	CreatedAt string `dynamodbav:"created_at,omitempty"`
	// Payload is the payload as received, or PayloadZ its gzip (see
	// compress): one of the two.
	Payload    []byte            `dynamodbav:"payload,omitempty"`
	PayloadZ   []byte            `dynamodbav:"payload_z,omitempty"`
	PayloadRef *payloadRef       `dynamodbav:"payload_ref,omitempty"`
	Attributes map[string]string `dynamodbav:"attributes,omitempty"`
	Headers    map[string]string `dynamodbav:"headers,omitempty"`
	RequestID  string            `dynamodbav:"request_id,omitempty"`
	// Scope is inbox.Event.PartScope, written at insert; an item without
	// one was stored before parts had scopes (inbox.Event.Unscoped).
	Scope       *string `dynamodbav:"scope,omitempty"`
	Status      string  `dynamodbav:"status"`
	Outcome     string  `dynamodbav:"outcome,omitempty"`
	Attempts    int     `dynamodbav:"attempts"`
	Revived     int     `dynamodbav:"revived_attempts,omitempty"`
	LastError   string  `dynamodbav:"last_error,omitempty"`
	ReceivedAt  string  `dynamodbav:"received_at"`
	UpdatedAt   string  `dynamodbav:"updated_at"`
	ProcessedAt string  `dynamodbav:"processed_at,omitempty"`
	ExpiresAt   int64   `dynamodbav:"expires_at,omitempty"`
	LeaseOwner  string  `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil  int64   `dynamodbav:"lease_until,omitempty"`
	// SweepShard and ReceivedMs are the unfinished index's keys: the shard
	// is present only while the event is unfinished.
	SweepShard string `dynamodbav:"sweep_shard,omitempty"`
	ReceivedMs int64  `dynamodbav:"received_ms,omitempty"`
	DueMs      int64  `dynamodbav:"due_ms,omitempty"`
	// RetryMs is a failed event's RetryAt, the claim's "not before";
	// DueMs is the sweep's clock.
	RetryMs    int64    `dynamodbav:"retry_ms,omitempty"`
	DeadBy     string   `dynamodbav:"dead_by,omitempty"`
	Touched    []string `dynamodbav:"touched,omitempty"`
	OutboxRows []string `dynamodbav:"outbox_rows,omitempty"`
	// Outbox is "pending" while some of OutboxRows may be undelivered,
	// "settled" after.
	Outbox    string `dynamodbav:"outbox,omitempty"`
	OutboxGen int    `dynamodbav:"outbox_gen,omitempty"`
	// Reruns and PreviousOutcome record forced re-runs (Requeue).
	Reruns int `dynamodbav:"reruns,omitempty"`
	// Swept counts the sweep's reschedules since the last claim
	// (Reschedule); written only by Reschedule, removed by claims,
	// requeues and delivery passes.
	Swept           int    `dynamodbav:"swept,omitempty"`
	PreviousOutcome string `dynamodbav:"previous_outcome,omitempty"`
	// BodyID and BodyExpires: a status item's body (see body.go); absent
	// from an item of the whole layout.
	BodyID      string `dynamodbav:"body_id,omitempty"`
	BodyExpires int64  `dynamodbav:"body_expires,omitempty"`
}

// payloadRef is inbox.PayloadRef as stored: a payload kept outside the
// item (claimcheck), which the item has neither payload nor payload_z for.
type payloadRef struct {
	Object string `dynamodbav:"object"`
	Bytes  int    `dynamodbav:"bytes"`
	SHA256 string `dynamodbav:"sha256"`
}

func pk(k inbox.Key) string { return eventPrefix + k.String() }

// shard spreads events over the unfinished index's partitions by key.
func shard(k inbox.Key) string {
	h := fnv.New32a()
	h.Write([]byte(k.String()))
	return strconv.Itoa(int(h.Sum32() % SweepShards))
}

// outboxShard is the index partition of a processed event whose outbox is
// not settled: apart from the unfinished events' (Oldest reads only
// those), with the sweep reading both.
func outboxShard(k inbox.Key) string { return "o" + shard(k) }

// deadShard is the index partition of a dead event, which neither the
// sweep nor Oldest reads: replay selects dead events by time from it.
func deadShard(k inbox.Key) string { return "d" + shard(k) }

// shards lists the index partitions of unfinished events, then those of
// processed events with an unsettled outbox.
func shards(outbox bool) []string {
	out := make([]string, 0, 2*SweepShards)
	for sh := range SweepShards {
		out = append(out, strconv.Itoa(sh))
	}
	if outbox {
		for sh := range SweepShards {
			out = append(out, "o"+strconv.Itoa(sh))
		}
	}
	return out
}

// The event's outbox attribute.
const (
	outboxPending = "pending"
	outboxSettled = "settled"
)

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

// scopeOf is the scope attribute of an event's item: absent only for an
// unscoped event.
func scopeOf(e inbox.Event) *string {
	if e.Unscoped {
		return nil
	}
	s := e.PartScope()
	return &s
}

// toItem is the item of e; z, when not nil, is the gzip of e.Payload,
// already made.
func toItem(e inbox.Event, z []byte) item {
	it := item{
		PK: pk(e.Key), Source: e.Key.Source, Account: e.Key.Account, EventID: e.Key.EventID,
		Kind: e.Kind, EventType: e.Type, CreatedAt: ts(e.Created), Payload: e.Payload, Attributes: e.Attributes,
		Headers: e.Headers, RequestID: e.RequestID, Scope: scopeOf(e),
		Status: string(e.Status), Outcome: string(e.Outcome), Attempts: e.Attempts, Revived: e.RevivedAttempts,
		LastError: e.LastError, ReceivedAt: ts(e.ReceivedAt), UpdatedAt: ts(e.UpdatedAt),
		ProcessedAt: ts(e.ProcessedAt), LeaseOwner: e.LeaseOwner, DeadBy: e.DeadBy,
		Touched: e.Touched, OutboxRows: e.OutboxRows, Reruns: e.Reruns, PreviousOutcome: string(e.PreviousOutcome),
	}
	if r := e.PayloadRef; r != nil {
		it.Payload, it.PayloadRef = nil, &payloadRef{Object: r.Object, Bytes: r.Bytes, SHA256: r.SHA256}
	} else if z, ok := compress(e.Payload, z); ok {
		it.Payload, it.PayloadZ = nil, z
	}
	switch {
	case e.Unfinished():
		it.SweepShard = shard(e.Key)
	case e.OutboxPending:
		it.SweepShard = outboxShard(e.Key)
	case e.Status == inbox.StatusDead:
		it.SweepShard = deadShard(e.Key)
	}
	if e.OutboxPending {
		it.Outbox = outboxPending
	} else if len(e.OutboxRows) > 0 {
		it.Outbox = outboxSettled
	}
	if !e.ReceivedAt.IsZero() {
		it.ReceivedMs = e.ReceivedAt.UnixMilli()
	}
	if !e.DueAt.IsZero() {
		it.DueMs = e.DueAt.UnixMilli()
	}
	if !e.RetryAt.IsZero() {
		it.RetryMs = e.RetryAt.UnixMilli()
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
		Attributes: it.Attributes, Headers: it.Headers, RequestID: it.RequestID, Status: inbox.Status(it.Status), Outcome: inbox.Outcome(it.Outcome), Attempts: it.Attempts, RevivedAttempts: it.Revived,
		LastError: it.LastError, ReceivedAt: parseTS(it.ReceivedAt), UpdatedAt: parseTS(it.UpdatedAt),
		ProcessedAt: parseTS(it.ProcessedAt), LeaseOwner: it.LeaseOwner, DeadBy: it.DeadBy,
		Touched: it.Touched, OutboxRows: it.OutboxRows, OutboxPending: it.Outbox == outboxPending,
		OutboxGen: it.OutboxGen,
		Reruns:    it.Reruns, PreviousOutcome: inbox.Outcome(it.PreviousOutcome), Swept: it.Swept,
	}
	if it.BodyID != "" {
		// The split layout: the key is the status item's pk.
		e.Key = splitPK(it.PK)
		e.Body, e.BodyUntil = it.BodyID, time.Unix(it.BodyExpires, 0)
		if it.ReceivedMs != 0 {
			e.ReceivedAt = time.UnixMilli(it.ReceivedMs)
		}
		if it.Kind == "" {
			// A status item read without its body (a refused write's
			// answer): its key, status and type only.
			return withStatus(e, it)
		}
	}
	// An event in its own source's and account's scope reads back with
	// none chosen, as ingest gives it.
	switch {
	case it.Scope == nil:
		e.Unscoped = true
	case *it.Scope != inbox.ScopeOf(e.Key.Source, e.Key):
		e.Scope = *it.Scope
	}
	return withStatus(e, it)
}

// withStatus sets what the status item keeps as numbers, and the
// reference of the payload's object (which the status item keeps).
func withStatus(e inbox.Event, it item) inbox.Event {
	if r := it.PayloadRef; r != nil {
		e.PayloadRef = &inbox.PayloadRef{Object: r.Object, Bytes: r.Bytes, SHA256: r.SHA256}
	}
	if it.DueMs != 0 {
		e.DueAt = time.UnixMilli(it.DueMs)
	}
	if it.RetryMs != 0 {
		e.RetryAt = time.UnixMilli(it.RetryMs)
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
	e := it.event()
	if len(it.PayloadZ) > 0 {
		p, err := decompress(it.PayloadZ)
		if err != nil {
			return inbox.Event{}, fmt.Errorf("decode item %s: %w", it.PK, err)
		}
		e.Payload = p
	}
	return e, nil
}

// Insert stores a new event in status received, decided by one conditional
// write. If an unexpired event with the same key exists it returns that
// stored event and an error wrapping inbox.ErrDuplicate. An item whose TTL
// has passed counts as absent even before DynamoDB deletes it. The new
// event has no expiry (retention counts from the end of processing) and
// enters the unfinished index, due at once.
func (s *Store) Insert(ctx context.Context, e inbox.Event, now time.Time) (inbox.Event, error) {
	return s.insert(ctx, e, nil, now)
}

// InsertGzipped is Insert for a payload whose gzip z the caller has
// already made (the claim check, deciding whether it fits the item).
func (s *Store) InsertGzipped(ctx context.Context, e inbox.Event, z []byte, now time.Time) (inbox.Event, error) {
	return s.insert(ctx, e, z, now)
}

func (s *Store) insert(ctx context.Context, e inbox.Event, z []byte, now time.Time) (inbox.Event, error) {
	e.ExpiresAt = time.Time{}
	if e.DueAt.IsZero() {
		e.DueAt = e.ReceivedAt
	}
	// A duplicate is told by its status item alone, read eventually
	// consistently: a status found is stored (statuses are written last
	// and deleted only once expired), and a read that misses a status
	// written a moment ago only costs the two conditional writes below,
	// which decide.
	if stored, found, err := s.peek(ctx, e.Key, now); err != nil {
		return inbox.Event{}, err
	} else if found {
		return stored, fmt.Errorf("insert %s: %w", e.Key, inbox.ErrDuplicate)
	}
	bodyUntil := now.Add(s.retention + BodyGrace)
	id := bodyID(e)
	body, status, err := splitItems(e, id, z, bodyUntil)
	if err != nil {
		return inbox.Event{}, fmt.Errorf("insert %s: %w", e.Key, err)
	}
	// The body first. One with the same name (the same event and payload)
	// stored already, and not expired, is kept as it is, headers and all
	// (a body is never rewritten: a duplicate whose read above missed the
	// event gets this far), only made to last as long as this one would.
	var ccf *types.ConditionalCheckFailedException
	for try := 0; ; try++ {
		_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           &s.table,
			Item:                                body,
			ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at < :now"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if errors.As(err, &ccf) {
			old := inbox.Event{Key: e.Key, Body: id}
			old.BodyUntil, _ = unixAttr(ccf.Item, "expires_at")
			kept, kerr := s.keepBody(ctx, old, bodyUntil.Add(-BodyGrace))
			if errors.Is(kerr, ErrBodyLost) && try == 0 {
				// Gone between the two writes (its expiry came, and TTL
				// took it): written anew, as if it had not been there.
				continue
			}
			switch {
			case errors.Is(kerr, ErrBodyLost):
				// Not the request's fault (ErrBodyLost is ErrInvalid):
				// ingest answers that it could not store the event, and
				// the provider retries.
				return inbox.Event{}, fmt.Errorf("insert %s: %w: the stored body went while it was written", e.Key, inbox.ErrUnavailable)
			case kerr != nil:
				return inbox.Event{}, fmt.Errorf("insert %s: %w", e.Key, kerr)
			}
			// The status records what the body has.
			bodyUntil = kept.BodyUntil
			status["body_expires"] = bodyKept(kept)
			break
		}
		if err != nil {
			return inbox.Event{}, awserr.Wrap("insert "+e.Key.String(), err)
		}
		break
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &s.table,
		Item:                                status,
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR (attribute_exists(expires_at) AND expires_at < :now)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	switch {
	case errors.As(err, &ccf):
		stored, derr := decode(ccf.Item)
		if derr != nil {
			return inbox.Event{}, fmt.Errorf("insert %s: %w (%v)", e.Key, inbox.ErrDuplicate, derr)
		}
		return stored, fmt.Errorf("insert %s: %w", e.Key, inbox.ErrDuplicate)
	case err != nil:
		return inbox.Event{}, awserr.Wrap("insert "+e.Key.String(), err)
	}
	e.Body, e.BodyUntil = id, time.Unix(bodyUntil.Unix(), 0)
	e.ReceivedAt = e.ReceivedAt.Truncate(time.Millisecond) // as stored
	return e, nil
}

// peek reads the status of k's event eventually consistently: found when
// there is one that has not expired.
func (s *Store) peek(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, bool, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table,
		Key:       map[string]types.AttributeValue{"pk": str(pk(k))},
	})
	if err != nil {
		return inbox.Event{}, false, awserr.Wrap("insert "+k.String(), err)
	}
	if out.Item == nil {
		return inbox.Event{}, false, nil
	}
	ev, err := decode(out.Item)
	if err != nil || expired(ev, now) {
		// An item this release cannot read is left to the conditional
		// write to decide.
		return inbox.Event{}, false, nil
	}
	return ev, true, nil
}

// ClaimNonce records a signed nonce (id: its kind and value) with binding
// (the SHA-256 of the body it came with) until until, when its signature
// stops being accepted and the table's TTL removes it. A nonce recorded
// already with the same binding is claimed again (the provider's retry of
// one delivery), its record kept at least until until and never
// shortened; with another binding, unexpired, it is inbox.ErrNonceUsed.
// No event item is touched: a claim whose event is never stored (a
// crash, a 503) is claimed again by the retry that stores it.
func (s *Store) ClaimNonce(ctx context.Context, id, binding string, until, now time.Time) error {
	key := map[string]types.AttributeValue{"pk": str(noncePrefix + id)}
	for range 3 {
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.table,
			Item: map[string]types.AttributeValue{
				"pk":         key["pk"],
				"binding":    str(binding),
				"expires_at": num(until.Unix()),
			},
			ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at < :now"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ccf):
			return awserr.Wrap("claim nonce "+id, err)
		}
		old, _ := ccf.Item["binding"].(*types.AttributeValueMemberS)
		if old == nil || old.Value != binding {
			return fmt.Errorf("claim nonce %s: %w", id, inbox.ErrNonceUsed)
		}
		// The same body again: keep the record at least until this
		// signature's window ends, never shorter than it was.
		if stored, ok := unixAttr(ccf.Item, "expires_at"); ok && stored.Unix() >= until.Unix() {
			return nil
		}
		_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.table,
			Key:                       key,
			UpdateExpression:          aws.String("SET expires_at = :until"),
			ConditionExpression:       aws.String("binding = :binding AND expires_at < :until"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":until": num(until.Unix()), ":binding": str(binding)},
		})
		if err != nil && !errors.As(err, &ccf) {
			return awserr.Wrap("claim nonce "+id, err)
		}
		if err == nil {
			return nil
		}
		// Changed between the two writes (extended by another claim,
		// or expired and claimed again): look again.
	}
	return fmt.Errorf("claim nonce %s: %w: it kept changing", id, inbox.ErrUnavailable)
}

// Get returns the stored event, or inbox.ErrNotFound (also for an item
// whose TTL has passed).
func (s *Store) Get(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	e, av, err := s.statusItem(ctx, k, now)
	if err != nil || e.Body == "" {
		return e, err
	}
	whole, err := s.withBody(ctx, k, av)
	if err != nil {
		return inbox.Event{}, fmt.Errorf("get %s: %w", k, err)
	}
	return decode(whole)
}

// Peek returns the stored event with its payload, read eventually
// consistently and written nothing: for the first attempt at an event,
// which commits with CompleteFirst if nobody claimed it meanwhile (that
// commit's fence makes a stale read harmless). A status the eventual read
// misses (stored a moment ago) is read again consistently. It returns
// inbox.ErrNotFound for an absent or expired event.
func (s *Store) Peek(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table,
		Key:       map[string]types.AttributeValue{"pk": str(pk(k))},
	})
	if err != nil {
		return inbox.Event{}, awserr.Wrap("peek "+k.String(), err)
	}
	if out.Item == nil {
		return s.Get(ctx, k, now)
	}
	e, err := decode(out.Item)
	if err != nil {
		return inbox.Event{}, err
	}
	if expired(e, now) {
		return inbox.Event{}, fmt.Errorf("peek %s: expired: %w", k, inbox.ErrNotFound)
	}
	whole, err := s.withBody(ctx, k, out.Item)
	if err != nil {
		return e, fmt.Errorf("peek %s: %w", k, err)
	}
	return decode(whole)
}

// ReadEvent is Peek under the name the outbox's forwarder reads events by
// (outbox.Events): claimcheck.Store reads a payload kept in S3 in its
// Peek, and not in this.
func (s *Store) ReadEvent(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	return s.Peek(ctx, k, now)
}

// Status returns the stored event as its status item alone has it (its
// key, type, time of receipt, status and outbox; no payload, headers or
// metadata for an event of the split layout: one read, which a lost body
// does not fail), or inbox.ErrNotFound (also for one whose TTL has
// passed).
func (s *Store) Status(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, error) {
	e, _, err := s.statusItem(ctx, k, now)
	return e, err
}

// statusItem reads k's status item consistently: the event it holds, and
// the item itself, for its body to be read after it.
func (s *Store) statusItem(ctx context.Context, k inbox.Key, now time.Time) (inbox.Event, map[string]types.AttributeValue, error) {
	av, err := s.getItem(ctx, pk(k), "get "+k.String())
	if err != nil {
		return inbox.Event{}, nil, err
	}
	e, err := decode(av)
	if err != nil {
		return inbox.Event{}, nil, err
	}
	if expired(e, now) {
		return inbox.Event{}, nil, fmt.Errorf("get %s: expired: %w", k, inbox.ErrNotFound)
	}
	return e, av, nil
}

// getItem reads the item under pk, consistently; op names the read in its
// errors, which wrap inbox.ErrNotFound when there is no item.
func (s *Store) getItem(ctx context.Context, pk, op string) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            map[string]types.AttributeValue{"pk": str(pk)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, awserr.Wrap(op, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("%s: %w", op, inbox.ErrNotFound)
	}
	return out.Item, nil
}

func expired(e inbox.Event, now time.Time) bool {
	return !e.ExpiresAt.IsZero() && e.ExpiresAt.Before(now)
}

// refused explains why a conditional write on an event did not apply, from
// the item as it was: inbox.ErrNotFound (absent or expired),
// inbox.ErrAlreadyProcessed, inbox.ErrDead, or else inbox.ErrClaimed
// (another worker's live lease). The event is returned when there is one.
func refused(op string, k inbox.Key, old map[string]types.AttributeValue, now time.Time) (inbox.Event, error) {
	if old == nil {
		return inbox.Event{}, fmt.Errorf("%s %s: %w", op, k, inbox.ErrNotFound)
	}
	ev, err := decode(old)
	if err != nil {
		return inbox.Event{}, fmt.Errorf("%s %s: %w", op, k, err)
	}
	switch {
	case expired(ev, now):
		return inbox.Event{}, fmt.Errorf("%s %s: expired: %w", op, k, inbox.ErrNotFound)
	case ev.Status == inbox.StatusProcessed:
		return ev, fmt.Errorf("%s %s: %w", op, k, inbox.ErrAlreadyProcessed)
	case ev.Status == inbox.StatusDead:
		return ev, fmt.Errorf("%s %s: %w", op, k, inbox.ErrDead)
	case ev.Status == inbox.StatusFailed && ev.RetryAt.After(now.Add(DueSlack)):
		return ev, fmt.Errorf("%s %s: due at %s: %w", op, k, ts(ev.RetryAt), inbox.ErrNotDue)
	}
	return ev, fmt.Errorf("%s %s: held by %s until %s: %w", op, k, ev.LeaseOwner, ts(ev.LeaseUntil), inbox.ErrClaimed)
}

// Claim takes a lease on the event for owner until leaseUntil and counts an
// attempt. It succeeds for events that are received, failed and due (their
// backoff over: a provider's retry does not cut it short, it returns
// inbox.ErrNotDue), and in processing whose lease has expired (a crashed
// worker). A dead
// event is final (inbox.ErrDead) until an operator revives it. Otherwise it
// returns inbox.ErrAlreadyProcessed, inbox.ErrClaimed (another live lease)
// or inbox.ErrNotFound (absent or expired), with the stored event where
// there is one. While leased the event is due at leaseUntil: the sweep
// leaves it alone until then.
func (s *Store) Claim(ctx context.Context, k inbox.Key, owner string, now, leaseUntil time.Time) (inbox.Event, error) {
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression: aws.String("SET #status = :processing, lease_owner = :owner, lease_until = :until, due_ms = :until, attempts = if_not_exists(attempts, :zero) + :one, updated_at = :now REMOVE retry_ms, swept"),
		// A failed event's "not before" is retry_ms, which the sweep
		// never moves. An event that failed before retry_ms was kept is
		// claimable at once: its due_ms may be the sweep's clock, which
		// would strand it (a retry before its backoff ends is harmless).
		ConditionExpression: aws.String("attribute_exists(pk) AND " +
			"(attribute_not_exists(expires_at) OR expires_at >= :nows) AND " +
			"(#status = :received OR " +
			"(#status = :failed AND (attribute_not_exists(retry_ms) OR retry_ms <= :duems)) OR " +
			"(#status = :processing AND lease_until < :nowms))"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": str(string(inbox.StatusProcessing)),
			":received":   str(string(inbox.StatusReceived)),
			":failed":     str(string(inbox.StatusFailed)),
			":owner":      str(owner),
			":until":      num(leaseUntil.UnixMilli()),
			":nowms":      num(now.UnixMilli()),
			":duems":      num(now.Add(DueSlack).UnixMilli()),
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
		ev, err := refused("claim", k, ccf.Item, now)
		if errors.Is(err, inbox.ErrClaimed) && ev.LeaseOwner == owner {
			// Our own claim, whose answer was lost and which the SDK sent
			// again: the lease is ours.
			return s.claimed(ctx, k, ccf.Item, now)
		}
		return ev, err
	case err != nil:
		return inbox.Event{}, awserr.Wrap("claim "+k.String(), err)
	}
	return s.claimed(ctx, k, out.Attributes, now)
}

// claimed is the event a claim took, from its status item as the claim
// left it: with its body, which is then made to last a retention more
// (the event may wait that long for its next claim). The claim stands if
// the body cannot be read: the event comes back with its status alone and
// the error, and the caller records the failed attempt.
func (s *Store) claimed(ctx context.Context, k inbox.Key, st map[string]types.AttributeValue, now time.Time) (inbox.Event, error) {
	ev, err := decode(st)
	if err != nil {
		return ev, err
	}
	whole, err := s.withBody(ctx, k, st)
	if err != nil {
		return ev, fmt.Errorf("claim %s: %w", k, err)
	}
	full, err := decode(whole)
	if err != nil {
		return ev, err
	}
	kept, err := s.keepBody(ctx, full, now.Add(s.retention))
	if err != nil {
		return ev, fmt.Errorf("claim %s: %w", k, err)
	}
	return kept, nil
}

// maxCause bounds the error text kept on an event.
const maxCause = 1024

// Fail records a failed attempt: the event becomes failed (due back at
// f.RetryAt) or dead (out of the unfinished partitions of the index, into
// its dead ones, kept for at least DeadRetention, f.MessageID recorded as
// the message that killed it), with the cause kept for operators and any
// lease released.
//
// It applies while f.Owner holds the lease, or while nobody holds a live
// one: a worker whose claim failed may still record the attempt, but never
// over another worker's live lease. Otherwise it returns, with the stored
// event, inbox.ErrClaimed, inbox.ErrAlreadyProcessed, inbox.ErrDead or
// inbox.ErrNotFound.
func (s *Store) Fail(ctx context.Context, k inbox.Key, f inbox.Failure, now time.Time) (inbox.Event, error) {
	cause := f.Cause
	if len(cause) > maxCause {
		cause = cause[:maxCause]
	}
	owner := f.Owner
	if owner == "" {
		owner = "-" // matches no lease
	}
	values := map[string]types.AttributeValue{
		":status":     str(string(f.Status)),
		":processing": str(string(inbox.StatusProcessing)),
		":received":   str(string(inbox.StatusReceived)),
		":failed":     str(string(inbox.StatusFailed)),
		":cause":      str(cause),
		":owner":      str(owner),
		":now":        str(ts(now)),
		":nowms":      num(now.UnixMilli()),
		":nows":       num(now.Unix()),
	}
	var update string
	switch f.Status {
	case inbox.StatusFailed:
		due := f.RetryAt
		if due.IsZero() {
			due = now
		}
		update = "SET #status = :status, last_error = :cause, updated_at = :now, due_ms = :due, retry_ms = :due REMOVE lease_owner, lease_until"
		values[":due"] = num(due.UnixMilli())
		if f.Refund {
			// Only the attempt this owner's claim counted, once: while it
			// holds the lease. A claim that never landed counted nothing,
			// and an SDK retry of a refund whose answer was lost finds the
			// lease gone; either is recorded without a refund.
			ev, err := s.refund(ctx, k, owner, cause, due, now)
			if !errors.Is(err, errNoRefund) {
				return ev, err
			}
		}
	case inbox.StatusDead:
		update = "SET #status = :status, last_error = :cause, updated_at = :now, dead_by = :by, expires_at = :expires, sweep_shard = :dead REMOVE lease_owner, lease_until, due_ms, retry_ms"
		values[":by"] = str(f.MessageID)
		values[":dead"] = str(deadShard(k))
		expires := now.Add(max(s.retention, DeadRetention))
		values[":expires"] = num(expires.Unix())
		// The body must last as long as the dead event: a death is rare,
		// so its status is read to learn whether the body needs extending
		// (an absent event is left to the write below to report).
		ev, err := s.Status(ctx, k, now)
		switch {
		case errors.Is(err, inbox.ErrNotFound):
		case err != nil:
			return inbox.Event{}, fmt.Errorf("fail %s: %w", k, err)
		case ev.Body != "":
			if ev, err = s.keepBodyToFinish(ctx, ev, expires); err != nil {
				return inbox.Event{}, fmt.Errorf("fail %s: %w", k, err)
			}
			update = recordingBody(update, values, ev)
		}
	default:
		return inbox.Event{}, fmt.Errorf("fail %s: status %q is not failed or dead", k, f.Status)
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression: aws.String(update),
		ConditionExpression: aws.String("attribute_exists(pk) AND " +
			"(attribute_not_exists(expires_at) OR expires_at >= :nows) AND " +
			"(#status IN (:received, :failed) OR (#status = :processing AND (lease_owner = :owner OR lease_until < :nowms)))"),
		ExpressionAttributeNames:            map[string]string{"#status": "status"},
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return refused("fail", k, ccf.Item, now)
	case err != nil:
		return inbox.Event{}, awserr.Wrap("fail "+k.String(), err)
	}
	return decode(out.Attributes)
}

// errNoRefund: the refund's condition (this owner's live lease) did not
// hold; the failure is recorded without it.
var errNoRefund = errors.New("no attempt of this owner's to refund")

// refund records a failure, due back at due, that gives back owner's
// attempt, if owner still holds the event's lease.
func (s *Store) refund(ctx context.Context, k inbox.Key, owner, cause string, due, now time.Time) (inbox.Event, error) {
	v := map[string]types.AttributeValue{
		":status":     str(string(inbox.StatusFailed)),
		":processing": str(string(inbox.StatusProcessing)),
		":cause":      str(cause),
		":owner":      str(owner),
		":now":        str(ts(now)),
		":nows":       num(now.Unix()),
		":due":        num(due.UnixMilli()),
		":one":        num(1),
		":zero":       num(0),
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression:          aws.String("SET #status = :status, last_error = :cause, updated_at = :now, due_ms = :due, retry_ms = :due, attempts = attempts - :one REMOVE lease_owner, lease_until"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at >= :nows) AND #status = :processing AND lease_owner = :owner AND attempts > :zero"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: v,
		ReturnValues:              types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return inbox.Event{}, errNoRefund
	case err != nil:
		return inbox.Event{}, awserr.Wrap("fail "+k.String(), err)
	}
	return decode(out.Attributes)
}

// Pending is an unfinished event as the unfinished index shows it.
type Pending struct {
	Key        inbox.Key
	Status     inbox.Status
	ReceivedAt time.Time
	DueAt      time.Time
}

// Overdue lists up to limit events that were due before cutoff — the
// unfinished (received, failed or leased and not touched since) and the
// processed whose outbox has not settled — oldest receipt first within
// each shard, reading only the index. Every shard gets its share of limit
// before any gets more, starting from a shard drawn at random, so a
// backlog in some shards (say, unfinished events) never starves the
// others (say, outboxes waiting for a receiver).
func (s *Store) Overdue(ctx context.Context, cutoff time.Time, limit int) ([]Pending, error) {
	names := shards(true)
	share := max(1, (limit+len(names)-1)/len(names))
	first := rand.N(len(names))
	type cursor struct {
		start map[string]types.AttributeValue
		done  bool
	}
	cursors := make([]cursor, len(names))
	var out []Pending
	for pass := 0; pass < 2 && len(out) < limit; pass++ {
		for i := 0; i < len(names) && len(out) < limit; i++ {
			j := (first + i) % len(names)
			c := &cursors[j]
			want := limit - len(out)
			if pass == 0 {
				want = min(want, share)
			}
			for got := 0; !c.done && got < want; {
				page, err := s.api.Query(ctx, &dynamodb.QueryInput{
					TableName:              &s.table,
					IndexName:              aws.String(UnfinishedIndex),
					KeyConditionExpression: aws.String("sweep_shard = :shard AND received_ms < :cutoff"),
					FilterExpression:       aws.String("due_ms < :cutoff"),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":shard":  str(names[j]),
						":cutoff": num(cutoff.UnixMilli()),
					},
					ExclusiveStartKey: c.start,
				})
				if err != nil {
					return out, awserr.Wrap("query unfinished", err)
				}
				c.start, c.done = page.LastEvaluatedKey, page.LastEvaluatedKey == nil
				for k, av := range page.Items {
					p, err := pending(av)
					if err != nil {
						return out, err
					}
					out = append(out, p)
					got++
					if got == want && k < len(page.Items)-1 {
						// The share ends inside the page: resume after
						// this item (an index item carries the keys of
						// the index and of the table).
						c.start = map[string]types.AttributeValue{"pk": av["pk"], "sweep_shard": av["sweep_shard"], "received_ms": av["received_ms"]}
						c.done = false
						break
					}
				}
			}
		}
	}
	return out, nil
}

// Oldest returns the unfinished event received first, and false when
// there is none: one item read from each shard of the unfinished index.
func (s *Store) Oldest(ctx context.Context) (Pending, bool, error) {
	var oldest Pending
	found := false
	for _, sh := range shards(false) {
		page, err := s.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(UnfinishedIndex),
			KeyConditionExpression:    aws.String("sweep_shard = :shard"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(sh)},
			ScanIndexForward:          aws.Bool(true),
			Limit:                     aws.Int32(1),
		})
		if err != nil {
			return Pending{}, false, awserr.Wrap("query unfinished", err)
		}
		for _, av := range page.Items {
			p, err := pending(av)
			if err != nil {
				return Pending{}, false, err
			}
			if !found || p.ReceivedAt.Before(oldest.ReceivedAt) {
				oldest, found = p, true
			}
		}
	}
	return oldest, found, nil
}

func pending(av map[string]types.AttributeValue) (Pending, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return Pending{}, fmt.Errorf("decode index item: %w", err)
	}
	// The key is split, not validated: an event stored before a rule it
	// breaks (an id alphabet) is still an event to finish, and the sweep
	// decides what to do with it.
	return Pending{Key: splitPK(it.PK), Status: inbox.Status(it.Status), ReceivedAt: time.UnixMilli(it.ReceivedMs), DueAt: time.UnixMilli(it.DueMs)}, nil
}

// QuickCopies is how many times the sweep reschedules an event due again
// at once after its last claim (or delivery pass, or operator's requeue;
// since it was stored, if none): its first QuickCopies+1 copies are sent
// one threshold apart, later ones spaced out (see Reschedule). A copy is lost when a worker
// stops holding it on its last receive, or when its receives run out while
// another worker holds the event: the next one should not wait as long as
// the event is old. An event that outlives three copies unclaimed is most
// likely waiting in a deep queue, or its processor is down, where more
// copies only deepen the backlog or fill the DLQ.
const QuickCopies = 3

// Reschedule moves an unfinished event's due time from was, only if nothing
// touched it since the sweep read it; it reports whether it did, also when
// it returns an error (the body's extension after it failed): the event
// was rescheduled, and its copy should be sent all the same. It counts
// the sweep's copies since the event's last claim (swept, which a claim
// removes): the first QuickCopies are due again at quick, later ones at
// spaced. The sweep reschedules before it re-enqueues, so two sweeps never
// both send the same event. The due time is the sweep's clock only: a
// failed event's claim waits for its RetryAt, which this leaves as it is,
// so the message the sweep sends is claimed at once.
func (s *Store) Reschedule(ctx context.Context, k inbox.Key, was, quick, spaced time.Time) (bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression: aws.String("SET due_ms = :due, swept = if_not_exists(swept, :zero) + :one"),
		ConditionExpression: aws.String("attribute_exists(sweep_shard) AND due_ms = :was AND " +
			"(attribute_not_exists(swept) OR swept < :quick)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":due":   num(quick.UnixMilli()),
			":was":   num(was.UnixMilli()),
			":zero":  num(0),
			":one":   num(1),
			":quick": num(QuickCopies),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	out, err := s.api.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, s.keepWaiting(ctx, out.Attributes, quick)
	case !errors.As(err, &ccf):
		return false, awserr.Wrap("reschedule "+k.String(), err)
	}
	// Refused: touched since the read (skipped), or its quick copies are
	// spent (spaced), which the item as it was says.
	var old struct {
		Shard string `dynamodbav:"sweep_shard"`
		DueMs int64  `dynamodbav:"due_ms"`
	}
	if ccf.Item == nil || attributevalue.UnmarshalMap(ccf.Item, &old) != nil || old.Shard == "" || old.DueMs != was.UnixMilli() {
		return false, nil
	}
	in.ExpressionAttributeValues[":due"] = num(spaced.UnixMilli())
	delete(in.ExpressionAttributeValues, ":quick")
	in.ConditionExpression = aws.String("attribute_exists(sweep_shard) AND due_ms = :was")
	in.ReturnValuesOnConditionCheckFailure = ""
	out, err = s.api.UpdateItem(ctx, in)
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, awserr.Wrap("reschedule "+k.String(), err)
	}
	return true, s.keepWaiting(ctx, out.Attributes, quick)
}

// keepWaiting makes sure the body of an event the sweep keeps waiting (its
// status st as the reschedule left it) lasts a retention past now: an
// event nobody claims for that long (its processor stopped) keeps its
// payload while the sweep runs. Nearly always nothing is written. A body
// found lost is not an error here: the sweep's copy must still go, so
// that the claim it brings finds the loss and the event dies of it
// rather than waiting for ever (a processed event's pending outbox
// settles instead: its rows' deliveries need no body, a forwarding row
// whose payload is gone is rejected).
func (s *Store) keepWaiting(ctx context.Context, st map[string]types.AttributeValue, now time.Time) error {
	ev, err := decode(st)
	if err != nil || ev.Body == "" || !ev.BodyUntil.Before(now.Add(s.retention)) {
		return nil
	}
	kept, err := s.keepBody(ctx, ev, now.Add(s.retention))
	switch {
	case errors.Is(err, ErrBodyLost):
		return nil
	case err != nil:
		return fmt.Errorf("reschedule %s: %w", ev.Key, err)
	}
	_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(pk(ev.Key))},
		UpdateExpression:          aws.String("SET body_expires = :bx"),
		ConditionExpression:       aws.String("body_id = :id AND body_expires < :bx"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":bx": bodyKept(kept), ":id": str(ev.Body)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return awserr.Wrap("reschedule "+ev.Key.String(), err)
	}
	return nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// TableInput is the table the store works on, named name, as template.yaml
// declares it (infra/local/template's tests hold the two together): hash
// key pk, on demand, with the unfinished index. Tests and tools create it
// with it.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sweep_shard"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("received_ms"), AttributeType: types.ScalarAttributeTypeN},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(UnfinishedIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("sweep_shard"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("received_ms"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"status", "due_ms", "event_type", "expires_at"}},
		}},
	}
}
