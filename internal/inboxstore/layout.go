package inboxstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// Parts had no scope in earlier releases: a fact was one item for every
// source and account (fact#invoice_paid#in_1). Events stored by those
// releases keep those unscoped IDs (inbox.Event.Unscoped), so that a
// re-run or a retry of one meets the parts it wrote. A table that holds
// unscoped facts has a second way to write one fact twice: an event
// stored since (scoped) carrying a fact an unscoped event recorded, or
// the reverse. While the table may hold them, every commit checks each
// fact's twin in the other layout, in the same transaction (see twinsOf;
// model/twins.pml): a scoped event's fact is refused when its unscoped
// twin was recorded by an event of the same account and of a source of
// its scope; an unscoped event's fact when its twin exists in the scope
// its source gives it now. A check that does not fit in the transaction
// is a consistent read just before it (recorded).
//
// Whether the table may hold them is decided once, by the first
// processor to start on it (DetectUnscopedFacts, through
// WithLayoutDetected), and kept in the table's layout item.

// LayoutPK is the table's layout item: the one item that is neither an
// event nor a part.
const LayoutPK = "meta#layout"

// layoutSample is how many items the first look at a table reads: a
// table with no more than these, all written by this release, holds no
// unscoped fact.
const layoutSample = 100

// LayoutAPI is what DetectUnscopedFacts calls: it reads the layout item,
// and once per table looks at the first items.
type LayoutAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ LayoutAPI = (*dynamodb.Client)(nil)

// DetectUnscopedFacts reports whether the table may hold facts written
// without a scope, from its layout item; a table without one gets it
// now: true when its first items (up to layoutSample, read once) are not
// all this release's — an event item without a scope, a part with an
// unscoped ID, or more items than the sample holds — false for a new
// table, or one whose few items all came from this release (a processor
// starting after ingest stored the first events). On an error it returns
// true with the error: checking twins is never wrong, only dearer.
func DetectUnscopedFacts(ctx context.Context, api LayoutAPI, table string, now time.Time) (bool, error) {
	key := map[string]types.AttributeValue{"pk": str(LayoutPK)}
	read := func() (bool, bool, error) {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return true, false, awserr.Wrap("get layout", err)
		}
		if out.Item == nil {
			return true, false, nil
		}
		v, ok := out.Item["unscoped_facts"].(*types.AttributeValueMemberBOOL)
		return !ok || v.Value, true, nil
	}
	unscoped, found, err := read()
	if err != nil || found {
		return unscoped, err
	}
	out, err := api.Scan(ctx, &dynamodb.ScanInput{TableName: &table, Limit: aws.Int32(layoutSample), ProjectionExpression: aws.String("pk, #scope, body_id"),
		ExpressionAttributeNames: map[string]string{"#scope": "scope"}})
	if err != nil {
		return true, awserr.Wrap("scan for layout", err)
	}
	unscoped = out.LastEvaluatedKey != nil
	for _, it := range out.Items {
		if earlierRelease(it) {
			unscoped = true
		}
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &table,
		Item: map[string]types.AttributeValue{
			"pk":             str(LayoutPK),
			"unscoped_facts": &types.AttributeValueMemberBOOL{Value: unscoped},
			"decided_at":     str(ts(now)),
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		// Another processor decided first: its answer is the table's.
		unscoped, _, err = read()
		return unscoped, err
	case err != nil:
		return true, awserr.Wrap("put layout", err)
	}
	return unscoped, nil
}

// earlierRelease reports whether an item was written by a release
// before parts had scopes: an event without a scope, or a fact, entity
// or row under an unscoped ID.
func earlierRelease(it map[string]types.AttributeValue) bool {
	pk, _ := it["pk"].(*types.AttributeValueMemberS)
	if pk == nil {
		return true
	}
	switch {
	case strings.HasPrefix(pk.Value, bodyPrefix):
		// A body keeps its event's scope; one without is an unscoped
		// event's (a source whose parts keep unscoped IDs).
		_, scoped := it["scope"]
		return !scoped
	case strings.HasPrefix(pk.Value, eventPrefix):
		// A status item names its body, which has the scope.
		_, scoped := it["scope"]
		_, split := it["body_id"]
		return !scoped && !split
	}
	return effects.IsUnscopedPartID(pk.Value)
}

// Scopes says, for the twin checks, which scope a source gives an
// account's parts now, and which sources share one (see
// source.Set, which implements it from SOURCES).
type Scopes interface {
	// ScopeOf is the scope the parts of events of key k's source and
	// account are stored in.
	ScopeOf(k inbox.Key) string
	// Members are the sources whose events of k's account are stored in
	// scope.
	Members(scope string, k inbox.Key) []string
}

// ownScopes is Scopes when no configuration says otherwise: each source
// its own scope.
type ownScopes struct{}

func (ownScopes) ScopeOf(k inbox.Key) string             { return inbox.ScopeOf(k.Source, k) }
func (ownScopes) Members(_ string, k inbox.Key) []string { return []string{k.Source} }

// WithUnscopedFacts makes every commit check its facts' twins in the other
// layout (see DetectUnscopedFacts), with the sources' scopes as scopes
// says (nil: each source its own); a table that holds no unscoped fact
// needs none.
func (s *Store) WithUnscopedFacts(on bool, scopes Scopes) *Store {
	s.unscopedFacts = on
	if scopes == nil {
		scopes = ownScopes{}
	}
	s.scopes = scopes
	return s
}

// LayoutRetry is how long after a failed look at the table's layout
// (WithLayoutDetected) the next commit looks again; the commits between
// check their twins.
const LayoutRetry = time.Minute

// layoutDecision is WithLayoutDetected's state: the table's answer once
// it has given one.
type layoutDecision struct {
	detect  func(context.Context, time.Time) (bool, error)
	failed  func(error)
	mu      sync.Mutex
	decided bool
	on      bool
	trying  bool
	tried   time.Time
}

// WithLayoutDetected is WithUnscopedFacts with the answer asked of the
// table by detect (DetectUnscopedFacts over the store's table): by
// LookAtLayout (a cold start), and until the table has answered, by a
// commit a LayoutRetry after the last look that failed (failed is told),
// rather than leaving the container checking twins for its whole life.
// Until the table has answered, every commit checks them: never wrong,
// only dearer.
func (s *Store) WithLayoutDetected(detect func(context.Context, time.Time) (bool, error), failed func(error), scopes Scopes) *Store {
	s.WithUnscopedFacts(true, scopes)
	s.layout = &layoutDecision{detect: detect, failed: failed}
	return s
}

// LookAtLayout asks the table its layout now (WithLayoutDetected), unless
// it has answered or was asked less than a LayoutRetry ago. The first
// processor on a table should ask at its start: a look made later, once
// ingest has stored more items than it samples, answers that the table
// may hold unscoped facts, for good.
func (s *Store) LookAtLayout(ctx context.Context, now time.Time) {
	s.checksTwins(ctx, now)
}

// checksTwins reports whether a commit at now checks its facts' twins.
// One commit at a time looks at the layout; the others meanwhile check.
func (s *Store) checksTwins(ctx context.Context, now time.Time) bool {
	l := s.layout
	if l == nil {
		return s.unscopedFacts
	}
	l.mu.Lock()
	if l.decided || l.trying || (!l.tried.IsZero() && now.Sub(l.tried) < LayoutRetry) {
		on := !l.decided || l.on
		l.mu.Unlock()
		return on
	}
	l.trying, l.tried = true, now
	l.mu.Unlock()
	on, err := false, errLayoutUnread
	defer func() {
		l.mu.Lock()
		l.trying = false
		if err == nil {
			l.decided, l.on = true, on
		}
		l.mu.Unlock()
		if err != nil && l.failed != nil {
			l.failed(err)
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, layoutTimeout)
	defer cancel()
	on, err = l.detect(dctx, now)
	return on || err != nil
}

// layoutTimeout bounds a look at the table's layout, so that a slow table
// costs a cold start or a commit a few seconds at most (it then checks
// twins, and the look is made again a LayoutRetry later).
const layoutTimeout = 5 * time.Second

// errLayoutUnread stands for a look at the layout that never returned (a
// panic): the next one is made a LayoutRetry later.
var errLayoutUnread = errors.New("the look at the table's layout did not return")

// twin is how a fact's twin in the other layout is checked, for an event
// ev: its ID, and the condition under which it does not count as the
// fact already recorded.
type twin struct {
	id     string
	cond   string
	values map[string]types.AttributeValue
	// mine are the event_key prefixes an unscoped twin counts for.
	mine []string
}

// twinsOf returns how the twins of ev's facts are checked: a function
// giving the twin of one fact, false when it cannot exist (an ID too
// long to have been stored). The scope's sources are read once.
func (s *Store) twinsOf(ev inbox.Event) func(effects.Fact) (twin, bool) {
	if ev.PartScope() == "" {
		// The event is unscoped: its twin is in the scope its source
		// gives its account now, where the source's new events write.
		scope := s.scopes.ScopeOf(ev.Key)
		return func(f effects.Fact) (twin, bool) {
			id := effects.ScopedID(scope, f.ID())
			return twin{id: id, cond: "attribute_not_exists(pk)"}, len(id) <= effects.MaxIDBytes
		}
	}
	// The unscoped fact counts only when an event of a source in this
	// event's scope, and of its account, recorded it: another tenant's
	// is not this one's.
	members := s.scopes.Members(ev.PartScope(), ev.Key)
	if len(members) == 0 {
		members = []string{ev.Key.Source}
	}
	values := map[string]types.AttributeValue{}
	var mine, ors []string
	for i, m := range members {
		p := m + "#" + ev.Key.Account + "#"
		name := ":m" + strconv.Itoa(i)
		values[name] = str(p)
		mine = append(mine, p)
		ors = append(ors, "begins_with(event_key, "+name+")")
	}
	cond := "attribute_not_exists(pk) OR NOT (" + strings.Join(ors, " OR ") + ")"
	return func(f effects.Fact) (twin, bool) {
		return twin{id: f.ID(), cond: cond, values: values, mine: mine}, true
	}
}

// check is the twin's check in a transaction.
func (s *Store) check(t twin) types.TransactWriteItem {
	c := &types.ConditionCheck{
		TableName:           &s.table,
		Key:                 map[string]types.AttributeValue{"pk": str(t.id)},
		ConditionExpression: aws.String(t.cond),
	}
	if len(t.values) > 0 {
		c.ExpressionAttributeValues = t.values
	}
	return types.TransactWriteItem{ConditionCheck: c}
}

// recorded reads the twin, consistently, for a fact whose check does not
// fit in its commit's transaction: whether it counts as the fact
// recorded.
func (s *Store) recorded(ctx context.Context, t twin) (bool, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: map[string]types.AttributeValue{"pk": str(t.id)},
		ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("pk, event_key"),
	})
	if err != nil {
		return false, awserr.Wrap("read a fact's twin", err)
	}
	if out.Item == nil {
		return false, nil
	}
	if t.mine == nil {
		return true, nil
	}
	by, _ := out.Item["event_key"].(*types.AttributeValueMemberS)
	for _, p := range t.mine {
		if by != nil && strings.HasPrefix(by.Value, p) {
			return true, nil
		}
	}
	return false, nil
}
