package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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

// Commit conflicts are retried inside Complete this many times, after a
// short jittered pause, before they cost the message a receive.
const (
	conflictRetries = 3
	conflictPause   = 25 * time.Millisecond
)

// maxTouched bounds the bytes of part IDs listed on an event.
const maxTouched = 16 << 10

// maxTransactItems is TransactWriteItems' limit.
const maxTransactItems = 100

// Complete commits a claimed event in one transaction with every part of
// plan: each fact and outbox row is written only if it does not exist yet,
// each entity update only if its guard holds, and the event becomes
// processed with outcome — only while owner still holds the lease (the
// owner token is the commit's fence: a worker whose lease was taken over
// cannot commit, whatever its clock says). The event lists the parts it
// wrote (Touched) and leaves the unfinished index, expiring after the
// store's retention; if the plan has outbox rows it stays in the index's
// outbox partitions, due at once and with no expiry, until SettleOutbox.
//
// Nothing is written unless everything is. If parts were refused, an
// *effects.RefusedError names the facts and rows that exist already and
// the updates that are stale. If the event is processed already (an
// earlier commit of this worker whose answer was lost) the error wraps
// inbox.ErrAlreadyProcessed; if the lease was lost, inbox.ErrLeaseLost. A
// transaction DynamoDB refuses as invalid wraps inbox.ErrInvalid;
// conflicts with concurrent transactions are retried a few times and then
// wrap inbox.ErrUnavailable like any outage.
func (s *Store) Complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now time.Time) error {
	return s.CompleteExpiring(ctx, ev, owner, plan, outcome, now, now)
}

// CompleteExpiring is Complete with the event's expiry, if it finishes
// now (no outbox rows), counted from expiresFrom rather than now: the
// claim check counts it from its payload object's last write, so that the
// item never outlives the object. Every time the commit records is now.
func (s *Store) CompleteExpiring(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, now, expiresFrom time.Time) error {
	return s.complete(ctx, ev, owner, plan, outcome, nil, now, expiresFrom)
}

// CompleteDeliveredExpiring is CompleteExpiring for a plan some of whose
// outbound calls the caller made already, under the lease this commit is
// fenced by (outbox.Deliverer.Ahead): delivered holds their keys
// (effects.Outbound Key, as in the plan). Their rows are written
// delivered, for inspect and the review to find, and are never claimed;
// when no other row is left to deliver the event's outbox is settled in
// the commit: the event leaves the index and expires after the store's
// retention, as an event with no row does. (The processor commits through
// claimcheck.Store.CompleteDelivered, which counts the expiry.)
func (s *Store) CompleteDeliveredExpiring(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, delivered []string, now, expiresFrom time.Time) error {
	return s.complete(ctx, ev, owner, plan, outcome, delivered, now, expiresFrom)
}

// CompleteFirst commits the first attempt at an event that nobody has
// claimed (see Peek): as Complete does, fenced not by a lease but by the
// event being exactly as it was stored — received, no attempt counted, no
// lease — and counting the attempt it makes. A claim by any worker (which
// counts an attempt) or any other commit comes first or is refused: the
// commit is refused with inbox.ErrLeaseLost if the event was claimed
// meanwhile, inbox.ErrAlreadyProcessed if it was processed. It also makes
// sure the event's body lasts a retention more, as a claim does.
func (s *Store) CompleteFirst(ctx context.Context, ev inbox.Event, plan effects.Plan, outcome inbox.Outcome, now time.Time) error {
	return s.CompleteFirstExpiring(ctx, ev, plan, outcome, now, now)
}

// CompleteFirstExpiring is CompleteFirst with the event's expiry counted
// from expiresFrom, as CompleteExpiring.
func (s *Store) CompleteFirstExpiring(ctx context.Context, ev inbox.Event, plan effects.Plan, outcome inbox.Outcome, now, expiresFrom time.Time) error {
	var err error
	if ev, err = s.keepBody(ctx, ev, now.Add(s.retention)); err != nil {
		return fmt.Errorf("complete %s: %w", ev.Key, err)
	}
	return s.complete(ctx, ev, "", plan, outcome, nil, now, expiresFrom)
}

// complete is the commit; owner "" is the first attempt's, unclaimed;
// delivered are the keys of the plan's outbound calls made already.
func (s *Store) complete(ctx context.Context, ev inbox.Event, owner string, plan effects.Plan, outcome inbox.Outcome, delivered []string, now, expiresFrom time.Time) error {
	scope := ev.PartScope()
	items := make([]types.TransactWriteItem, 0, plan.Len()+1)
	for _, f := range plan.Facts {
		item, err := s.putFact(ev.Key, scope, f, now)
		if err != nil {
			return fmt.Errorf("complete %s: %s: %w", ev.Key, f.ID(), err)
		}
		items = append(items, item)
	}
	for _, u := range plan.Updates {
		item, err := s.updateEntity(ev.Key, scope, u, now)
		if err != nil {
			return fmt.Errorf("complete %s: %s: %w", ev.Key, u.ID(), err)
		}
		items = append(items, item)
	}
	rows := make([]string, 0, len(plan.Outbound))
	pending := 0
	for _, o := range plan.Outbound {
		done := slices.Contains(delivered, o.Key)
		if !done {
			pending++
		}
		items = append(items, s.putRow(ev.Key, scope, o, done, now))
		rows = append(rows, effects.ScopedKey(scope, o.Key))
	}
	ids := plan.IDs()
	stored := make([]string, len(ids))
	for i, id := range ids {
		stored[i] = effects.ScopedID(scope, id)
	}
	if pending == 0 {
		// Finished now: the body must last as long as the event.
		var err error
		if ev, err = s.keepBodyToFinish(ctx, ev, expiresFrom.Add(s.retention)); err != nil {
			return fmt.Errorf("complete %s: %w", ev.Key, err)
		}
	}
	items = append(items, s.processed(ev, owner, outcome, touched(stored), rows, pending > 0, now, expiresFrom))
	// The facts whose twins are checked in the transaction, in order,
	// after the event: cancelled reads their reasons there.
	var twinned []string
	if len(plan.Facts) > 0 && s.checksTwins(ctx, now) {
		var refused []string
		twinOf := s.twinsOf(ev)
		for _, f := range plan.Facts {
			t, ok := twinOf(f)
			switch {
			case !ok:
			case len(items) < maxTransactItems:
				items = append(items, s.check(t))
				twinned = append(twinned, f.ID())
			default:
				// No room in the transaction's 100 items (a plan of more
				// than about 49 facts): a consistent read just before it.
				// Only an unscoped event committing the same fact at this
				// very moment could slip between the two.
				rec, err := s.recorded(ctx, t)
				if err != nil {
					return fmt.Errorf("complete %s: %w", ev.Key, err)
				}
				if rec {
					refused = append(refused, f.ID())
				}
			}
		}
		if len(refused) > 0 {
			return fmt.Errorf("complete %s: %w", ev.Key, &effects.RefusedError{Exists: refused})
		}
	}
	if len(items) == 1 {
		// The event's own write alone (no part left in the plan): a plain
		// conditional write, at half a transaction's price.
		return s.completeAlone(ctx, ev.Key, items[0].Update)
	}
	for try := 0; ; try++ {
		_, err := s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		err = cancelled(ev.Key, plan, twinned, err)
		if !errors.Is(err, errConflict) || try == conflictRetries {
			return err
		}
		pause := conflictPause << try
		if serr := s.sleep(ctx, pause/2+rand.N(pause/2+1)); serr != nil {
			// Cut short by the caller's context: say so, so a deadline
			// cut-off is told apart from a failure.
			return errors.Join(err, serr)
		}
	}
}

// completeAlone makes a commit with no part, up, as one conditional
// write, its refusal told as the transaction's would be.
func (s *Store) completeAlone(ctx context.Context, k inbox.Key, up *types.Update) error {
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           up.TableName,
		Key:                                 up.Key,
		UpdateExpression:                    up.UpdateExpression,
		ConditionExpression:                 up.ConditionExpression,
		ExpressionAttributeNames:            up.ExpressionAttributeNames,
		ExpressionAttributeValues:           up.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		if ccf.Item != nil {
			if ev, derr := decode(ccf.Item); derr == nil && ev.Status == inbox.StatusProcessed {
				return fmt.Errorf("complete %s: %w", k, inbox.ErrAlreadyProcessed)
			}
		}
		return fmt.Errorf("complete %s: %w", k, inbox.ErrLeaseLost)
	}
	return awserr.Wrap("complete "+k.String(), err)
}

// touched is the list of IDs the event keeps, cut short to maxTouched
// bytes.
func touched(ids []string) []string {
	size := 0
	for i, id := range ids {
		size += len(id)
		if size > maxTouched {
			return append(ids[:i:i], fmt.Sprintf("… and %d more", len(ids)-i))
		}
	}
	return ids
}

func (s *Store) putFact(k inbox.Key, scope string, f effects.Fact, now time.Time) (types.TransactWriteItem, error) {
	av, err := attributevalue.MarshalMap(f.Attributes)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	if av == nil {
		av = map[string]types.AttributeValue{}
	}
	av["pk"] = str(effects.ScopedID(scope, f.ID()))
	av["fact_kind"] = str(f.Kind)
	av["fact_key"] = str(f.Key)
	av["event_key"] = str(k.String())
	av["recorded_at"] = str(ts(now))
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           &s.table,
		Item:                av,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}, nil
}

// updateEntity builds an entity's guarded update. The order guard holds
// for an entity with no order yet or an older one; the transition guard
// for an entity with no state yet or one of the allowed ones.
func (s *Store) updateEntity(k inbox.Key, scope string, u effects.Update, now time.Time) (types.TransactWriteItem, error) {
	names := map[string]string{}
	values := map[string]types.AttributeValue{
		":kind": str(u.Entity),
		":key":  str(u.Key),
		":by":   str(k.String()),
		":now":  str(ts(now)),
	}
	set := "SET entity_kind = :kind, entity_key = :key, updated_by = :by, updated_at = :now"
	var conds []string
	i := 0
	placeholder := func(name string, v any) (string, string, error) {
		av, err := attributevalue.Marshal(v)
		if err != nil {
			return "", "", fmt.Errorf("attribute %q: %w", name, err)
		}
		n, p := "#a"+strconv.Itoa(i), ":a"+strconv.Itoa(i)
		i++
		names[n], values[p] = name, av
		return n, p, nil
	}
	for name, v := range u.Set {
		n, p, err := placeholder(name, v)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		set += ", " + n + " = " + p
	}
	if t := u.Transition; t != nil {
		n, p, err := placeholder(t.Attr, t.To)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		set += ", " + n + " = " + p
		in := ""
		for j, from := range t.From {
			fp := ":f" + strconv.Itoa(j)
			values[fp] = str(from)
			if j > 0 {
				in += ", "
			}
			in += fp
		}
		cond := "attribute_not_exists(" + n + ")"
		if in != "" {
			cond = "(" + cond + " OR " + n + " IN (" + in + "))"
		}
		conds = append(conds, cond)
	}
	if o := u.Order; o != nil {
		set += ", seq = :seq, seq_tie = :tie"
		values[":seq"] = num(o.Seq)
		values[":tie"] = str(o.Tie)
		conds = append(conds, "(attribute_not_exists(seq) OR seq < :seq OR (seq = :seq AND seq_tie < :tie))")
	}
	expr := set
	if len(u.Add) > 0 {
		expr += " ADD "
		first := true
		for name, v := range u.Add {
			n, p, err := placeholder(name, v)
			if err != nil {
				return types.TransactWriteItem{}, err
			}
			if !first {
				expr += ", "
			}
			first = false
			expr += n + " " + p
		}
	}
	up := &types.Update{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(effects.ScopedID(scope, u.ID()))},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeValues: values,
	}
	if len(names) > 0 {
		up.ExpressionAttributeNames = names
	}
	if len(conds) > 0 {
		c := conds[0]
		for _, more := range conds[1:] {
			c += " AND " + more
		}
		up.ConditionExpression = aws.String(c)
	}
	return types.TransactWriteItem{Update: up}, nil
}

// putRow writes an outbox row, pending and due at once, unless a row with
// its key (in scope) exists. A row whose call was made already
// (delivered: an entry put before the commit) is written as FinishRow
// leaves a delivered row: one attempt, no body, never claimed again.
func (s *Store) putRow(k inbox.Key, scope string, o effects.Outbound, delivered bool, now time.Time) types.TransactWriteItem {
	action := o.Action
	if action == "" {
		action = effects.ActionHTTP
	}
	item := map[string]types.AttributeValue{
		"pk":          str(effects.ScopedID(scope, o.ID())),
		"outbox_key":  str(effects.ScopedKey(scope, o.Key)),
		"action":      str(action),
		"target":      str(o.Target),
		"body":        str(string(o.Body)),
		"event_key":   str(k.String()),
		"status":      str(string(outbox.Pending)),
		"attempts":    num(0),
		"due_ms":      num(now.UnixMilli()),
		"received_ms": num(now.UnixMilli()),
		"created_at":  str(ts(now)),
		"updated_at":  str(ts(now)),
	}
	if delivered {
		delete(item, "body")
		delete(item, "due_ms")
		item["status"], item["attempts"] = str(string(outbox.Delivered)), num(1)
		item["delivered_at"], item["delivered_to"] = str(ts(now)), str(deliveredTo(action))
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           &s.table,
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
}

// deliveredTo is where a row of action was delivered (outbox.Result's
// DeliveredTo).
func deliveredTo(action string) string {
	if action == effects.ActionEventBridge {
		return "eventbridge"
	}
	return "http"
}

// processed is the event's own part of the commit.
func (s *Store) processed(ev inbox.Event, owner string, outcome inbox.Outcome, touched, rows []string, pending bool, now, expiresFrom time.Time) types.TransactWriteItem {
	k := ev.Key
	values := map[string]types.AttributeValue{
		":processed":  str(string(inbox.StatusProcessed)),
		":processing": str(string(inbox.StatusProcessing)),
		":outcome":    str(string(outcome)),
		":owner":      str(owner),
		":now":        str(ts(now)),
		":expires":    num(expiresFrom.Add(s.retention).Unix()),
	}
	expr := "SET #status = :processed, outcome = :outcome, processed_at = :now, updated_at = :now"
	fence := "#status = :processing AND lease_owner = :owner"
	if owner == "" {
		// The first attempt, unclaimed: the event as it was stored, and
		// this attempt counted.
		delete(values, ":owner")
		delete(values, ":processing")
		values[":received"] = str(string(inbox.StatusReceived))
		values[":zero"], values[":one"] = num(0), num(1)
		fence = "#status = :received AND attempts = :zero AND attribute_not_exists(lease_owner)"
		expr += ", attempts = :one"
	}
	expr = recordingBody(expr, values, ev)
	if !pending {
		// Finished: retention counts from now. An event with rows to
		// deliver is finished when its outbox settles (SettleOutbox), and
		// does not expire before.
		expr += ", expires_at = :expires"
	}
	// A forced re-run (Requeue) appends what it adds to what the first
	// run wrote, so inspect and the outbox review still find the first
	// run's parts and rows.
	if len(touched) > 0 || len(rows) > 0 {
		values[":none"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	}
	if len(touched) > 0 {
		expr += ", touched = list_append(if_not_exists(touched, :none), :touched)"
		values[":touched"] = &types.AttributeValueMemberL{Value: strs(touched)}
	}
	switch {
	case pending:
		// Still the sweep's until the rows are delivered: in the outbox
		// partitions of the index, due at once.
		expr += ", outbox = :pending, outbox_rows = list_append(if_not_exists(outbox_rows, :none), :rows), sweep_shard = :shard, due_ms = :nowms REMOVE lease_owner, lease_until"
		values[":pending"] = str(outboxPending)
		values[":rows"] = &types.AttributeValueMemberL{Value: strs(rows)}
		values[":shard"] = str(outboxShard(k))
		values[":nowms"] = num(now.UnixMilli())
		delete(values, ":expires")
	case len(rows) > 0:
		// Every row delivered before the commit: settled in it.
		expr += ", outbox = :settled, outbox_rows = list_append(if_not_exists(outbox_rows, :none), :rows) REMOVE lease_owner, lease_until, sweep_shard, due_ms"
		values[":settled"] = str(outboxSettled)
		values[":rows"] = &types.AttributeValueMemberL{Value: strs(rows)}
	default:
		expr += " REMOVE lease_owner, lease_until, sweep_shard, due_ms"
	}
	if owner == "" {
		expr += ", swept, retry_ms"
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                           &s.table,
		Key:                                 map[string]types.AttributeValue{"pk": str(pk(k))},
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(fence),
		ExpressionAttributeNames:            map[string]string{"#status": "status"},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

func strs(ss []string) []types.AttributeValue {
	out := make([]types.AttributeValue, len(ss))
	for i, s := range ss {
		out[i] = str(s)
	}
	return out
}

// errConflict marks a transaction cancelled by a concurrent one on the same
// items: worth an immediate retry.
var errConflict = inbox.ErrConflict

// cancelled classifies a failed transaction. Its cancellation reasons come
// in the order of the transaction's items: the plan's facts, updates and
// rows, then the event. The event's own reason is decided first: a commit
// that is not ours any more is refused whatever its parts.
func cancelled(k inbox.Key, plan effects.Plan, twinned []string, err error) error {
	op := "complete " + k.String()
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var conflict *types.TransactionConflictException
		if errors.As(err, &conflict) {
			return fmt.Errorf("%s: %w: %w: %w", op, inbox.ErrUnavailable, errConflict, err)
		}
		return awserr.Wrap(op, err)
	}
	reasons := tce.CancellationReasons
	ids := plan.IDs()
	n := len(ids)
	codes := make(map[string]bool, len(reasons))
	for _, r := range reasons {
		codes[aws.ToString(r.Code)] = true
	}
	switch {
	case codes["ValidationError"]:
		// Name the part DynamoDB refused and why: this is the reason the
		// event dies with.
		for i, r := range reasons {
			if aws.ToString(r.Code) == "ValidationError" {
				part := "the event"
				switch {
				case i < n:
					part = ids[i]
				case i > n && i-n-1 < len(twinned):
					part = "the check of the unscoped twin of " + twinned[i-n-1]
				}
				return fmt.Errorf("%s: %w: %s: %s", op, inbox.ErrInvalid, part, aws.ToString(r.Message))
			}
		}
	case len(reasons) > n && aws.ToString(reasons[n].Code) == "ConditionalCheckFailed":
		if old := reasons[n].Item; old != nil {
			if ev, derr := decode(old); derr == nil && ev.Status == inbox.StatusProcessed {
				return fmt.Errorf("%s: %w", op, inbox.ErrAlreadyProcessed)
			}
		}
		return fmt.Errorf("%s: %w", op, inbox.ErrLeaseLost)
	}
	var refused effects.RefusedError
	updates := len(plan.Facts) + len(plan.Updates)
	for i := 0; i < n && i < len(reasons); i++ {
		if aws.ToString(reasons[i].Code) != "ConditionalCheckFailed" {
			continue
		}
		if i >= len(plan.Facts) && i < updates {
			refused.Stale = append(refused.Stale, ids[i])
		} else {
			refused.Exists = append(refused.Exists, ids[i])
		}
	}
	// After the event, the checks of the twins of the facts twinned
	// (WithUnscopedFacts): a twin that counts is the fact existing.
	for i := n + 1; i < len(reasons) && i-n-1 < len(twinned); i++ {
		if id := twinned[i-n-1]; aws.ToString(reasons[i].Code) == "ConditionalCheckFailed" && !slices.Contains(refused.Exists, id) {
			refused.Exists = append(refused.Exists, id)
		}
	}
	if len(refused.Exists)+len(refused.Stale) > 0 {
		return fmt.Errorf("%s: %w", op, &refused)
	}
	if codes["TransactionConflict"] {
		return fmt.Errorf("%s: %w: %w: %w", op, inbox.ErrUnavailable, errConflict, tce)
	}
	// Throttling, a transient internal error: retry later.
	return fmt.Errorf("%s: %w: %w", op, inbox.ErrUnavailable, tce)
}

// SettleOutbox records what the delivery of a processed event's outbox
// left: settled, the event leaves the index and expires after the store's
// retention; else it stays there, due at due, for the sweep to bring back
// if its message does not. Either way its body is made to last a
// retention past now first if it would not (a row still to deliver may
// need the payload, and a pending outbox's passes come from its message,
// which the sweep's reschedule never sees). An event settled already (or
// not processed), or whose outbox generation is no longer gen (an
// operator resent a row since the caller read the event), is left as it
// is: the resend's delivery settles it.
func (s *Store) SettleOutbox(ctx context.Context, k inbox.Key, gen int, settled bool, due, now time.Time) error {
	// What the body must last: a retention past now, in whole seconds as
	// expiries are kept, rounded up.
	need := now.Add(s.retention + time.Second - 1).Truncate(time.Second)
	values := map[string]types.AttributeValue{
		":processed": str(string(inbox.StatusProcessed)),
		":pending":   str(outboxPending),
		":now":       str(ts(now)),
		":need":      num(need.Unix()),
	}
	cond := "#status = :processed AND outbox = :pending AND attribute_not_exists(outbox_gen)"
	if gen > 0 {
		cond = "#status = :processed AND outbox = :pending AND outbox_gen = :gen"
		values[":gen"] = num(int64(gen))
	}
	// Only while the body lasts as long (else it is extended first, below).
	const bodyLasts = " AND (attribute_not_exists(body_id) OR body_expires >= :need)"
	cond += bodyLasts
	expr := "SET outbox = :settled, updated_at = :now, expires_at = :expires REMOVE sweep_shard, due_ms"
	if settled {
		values[":settled"] = str(outboxSettled)
		values[":expires"] = num(now.Add(s.retention).Unix())
	} else {
		// A delivery pass made: the sweep's copies count again from here.
		expr = "SET due_ms = :due, updated_at = :now REMOVE swept"
		values[":due"] = num(due.UnixMilli())
	}
	for try := 0; ; try++ {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &s.table,
			Key:                                 map[string]types.AttributeValue{"pk": str(pk(k))},
			UpdateExpression:                    aws.String(expr),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            map[string]string{"#status": "status"},
			ExpressionAttributeValues:           values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ccf):
			return awserr.Wrap("settle outbox of "+k.String(), err)
		case try > 0 || ccf.Item == nil:
			return nil
		}
		// Refused: settled already, or not this generation's (left as it
		// is), or its body would expire first: then extended (a body
		// found lost does not hold the event back), and the write made
		// again recording it.
		old, derr := decode(ccf.Item)
		if derr != nil || old.Body == "" || !old.BodyUntil.Before(need) ||
			old.Status != inbox.StatusProcessed || !old.OutboxPending || old.OutboxGen != gen {
			return nil
		}
		kept, err := s.keepBodyToFinish(ctx, old, need)
		if err != nil {
			return fmt.Errorf("settle outbox of %s: %w", k, err)
		}
		expr = recordingBody(expr, values, kept)
		cond = strings.TrimSuffix(cond, bodyLasts)
		delete(values, ":need")
	}
}
