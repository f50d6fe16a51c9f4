//go:build linux

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// item is what the audit reads of any table item: events, facts,
// entities and outbox rows share the table, each using some of these.
type item struct {
	PK          string `dynamodbav:"pk"`
	Status      string `dynamodbav:"status"`
	Outcome     string `dynamodbav:"outcome"`
	LastError   string `dynamodbav:"last_error"`
	Outbox      string `dynamodbav:"outbox"`
	ProcessedAt string `dynamodbav:"processed_at"`
	// Facts and entities.
	InvoiceID    string `dynamodbav:"invoice_id"`
	Customer     string `dynamodbav:"customer"`
	PaidThrough  int64  `dynamodbav:"paid_through"`
	InvoicesPaid int64  `dynamodbav:"invoices_paid"`
	Head         string `dynamodbav:"head"`
	// Seq and SeqTie are an entity's order: the update that set it last.
	Seq    int64  `dynamodbav:"seq"`
	SeqTie string `dynamodbav:"seq_tie"`
	// Operators' traces: an event's forced re-runs and the outcome before
	// the last; a row's resends and the state it was resolved from.
	Reruns          int    `dynamodbav:"reruns"`
	PreviousOutcome string `dynamodbav:"previous_outcome"`
	Resent          int    `dynamodbav:"resent"`
	ResolvedFrom    string `dynamodbav:"resolved_from"`
	// PayloadRef is set when the payload is in its S3 object.
	PayloadRef map[string]any `dynamodbav:"payload_ref"`
	// The sweep's view, for a run that does not settle.
	DueMs      int64  `dynamodbav:"due_ms"`
	Swept      int    `dynamodbav:"swept"`
	LeaseUntil int64  `dynamodbav:"lease_until"`
	Shard      string `dynamodbav:"sweep_shard"`
	OutboxGen  int    `dynamodbav:"outbox_gen"`
	Attempts   int    `dynamodbav:"attempts"`
	// An event's body (inboxstore's split layout), and the expiries that
	// tie the two: every item's TTL, and the body's as its status records
	// it.
	BodyID      string `dynamodbav:"body_id"`
	BodyExpires int64  `dynamodbav:"body_expires"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

// brief is an unfinished event or row as the sweep sees it, times
// relative to now.
func (it item) brief(now time.Time) string {
	rel := func(ms int64) string {
		if ms == 0 {
			return "-"
		}
		return time.UnixMilli(ms).Sub(now).Round(time.Second).String()
	}
	return fmt.Sprintf("%s: %s outbox %q gen %d, due %s, lease until %s, shard %q, swept %d, attempts %d, error %q",
		it.PK, it.Status, it.Outbox, it.OutboxGen, rel(it.DueMs), rel(it.LeaseUntil), it.Shard, it.Swept, it.Attempts, clip(it.LastError, 120))
}

// auditAttrs are the attributes scan reads (payloads and headers are
// left behind).
var auditAttrs = []string{"pk", "status", "outcome", "last_error", "outbox", "processed_at",
	"invoice_id", "customer", "paid_through", "invoices_paid", "head", "seq", "seq_tie",
	"reruns", "previous_outcome", "resent", "resolved_from", "payload_ref",
	"due_ms", "swept", "lease_until", "sweep_shard", "outbox_gen", "attempts",
	"body_id", "body_expires", "expires_at"}

func (it item) finished() bool {
	return it.Status == string(inbox.StatusProcessed) || it.Status == string(inbox.StatusDead)
}

func (it item) rowFinal() bool { return outbox.State(it.Status).Final() }

// scan reads the whole table, consistently, straight from the emulator.
func scan(ctx context.Context, sys *system) (map[string]item, error) {
	names := map[string]string{}
	var proj []string
	for i, a := range auditAttrs {
		n := fmt.Sprintf("#a%d", i)
		names[n] = a
		proj = append(proj, n)
	}
	out := map[string]item{}
	in := &dynamodb.ScanInput{
		TableName: &sys.stack.Resources.TableName, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names,
	}
	p := dynamodb.NewScanPaginator(sys.ddb, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		var items []item
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		for _, it := range items {
			out[it.PK] = it
		}
	}
	return out, nil
}

// report is the audit's findings and the run's figures.
type report struct {
	Events, Deliveries int
	Stats              *sendStats
	Kills, WorkerExits int
	Faults             local.FaultCounts
	Settled            bool

	// The three counts of the verdict, each finding a line.
	Lost, Duplicates, Regressions []string

	Status  map[string]int // events by status/outcome
	Dead    map[string]int // dead events by their last error
	Paid    int            // invoices with a fact
	Rows    map[string]int // receipt rows by state
	Answers map[string]int // the receiver's answers
	DLQ     int
	// DLQStale counts the DLQ's copies of processed events (see auditDLQ).
	DLQStale int
	// inDLQ holds the keys of the events with a message in the DLQ.
	inDLQ    map[string]bool
	Received int // receipts accepted by the receiver
	// Forwarded counts the events the local bus's consumer received, and
	// ForwardedAgain the puts of an event after its first (a route
	// retrying unknowns may put an event again; consumers dedupe).
	Forwarded, ForwardedAgain int
	// ForwardedDead counts the dead events a route that retries unknowns
	// forwarded: put under a claim's lease before a commit that never
	// landed.
	ForwardedDead int
	// Large counts the workload's large events, InS3 those stored with
	// their payload in its object.
	Large, InS3 int
	// Mailgun counts the workload's Mailgun events.
	Mailgun int
	// Operator is what the operator did; Reruns what the table says of
	// the events re-run (by status/outcome), Resent and Resolved the rows
	// reviewed (by state now).
	Operator         *opReport
	Reruns           map[string]int
	Rerun            int // events re-run
	RerunCount       int // their re-runs
	Resent, Resolved map[string]int

	SendTime, AllDone, Elapsed time.Duration
	// Final is when every event was finished and every outbox row final,
	// after the first delivery; kills and faults stopped then (0: never).
	Final time.Duration
	Load  *loadReport
}

// Clean reports a 0/0/0 verdict on a settled system whose workers never
// died by themselves.
func (r *report) Clean() bool {
	return r.Settled && r.WorkerExits == 0 && len(r.Lost)+len(r.Duplicates)+len(r.Regressions) == 0
}

// audit checks the table, the DLQ and the receiver's log against the
// workload.
func audit(ctx context.Context, sys *system, w *workload, st *sendStats, ops *opReport) (*report, error) {
	items, err := scan(ctx, sys)
	if err != nil {
		return nil, err
	}
	routes, err := forward.Parse(sys.stack.Env["FORWARD"], sys.stack.Sources(), sys.stack.Env["FORWARD_BUS"])
	if err != nil {
		return nil, err
	}
	rep := &report{Events: len(w.Events), Deliveries: w.sends(), Stats: st, Large: w.Large, Mailgun: w.Mailgun, Operator: ops,
		Status: map[string]int{}, Dead: map[string]int{}, Rows: map[string]int{}, Answers: map[string]int{},
		Reruns: map[string]int{}, Resent: map[string]int{}, Resolved: map[string]int{}}
	lost := func(f string, a ...any) { rep.Lost = append(rep.Lost, fmt.Sprintf(f, a...)) }
	dup := func(f string, a ...any) { rep.Duplicates = append(rep.Duplicates, fmt.Sprintf(f, a...)) }
	regress := func(f string, a ...any) { rep.Regressions = append(rep.Regressions, fmt.Sprintf(f, a...)) }

	// Every event: answered 2xx, stored, finished; dead ones with a reason.
	processed := map[*event]bool{}
	for _, ev := range w.Events {
		k := ev.key()
		if why, ok := st.Refused[k]; ok {
			lost("%s: refused: %s", k, why)
		}
		if !st.Accepted[k] {
			lost("%s: never answered 2xx: %s", k, st.GaveUp[k])
			continue
		}
		it, ok := items["event#"+k]
		switch {
		case !ok:
			lost("%s: answered 2xx, not in the table", k)
			continue
		case !it.finished():
			lost("%s: stranded %s", k, it.Status)
		case it.Status == string(inbox.StatusDead) && it.LastError == "":
			lost("%s: dead with no reason", k)
		case it.Status == string(inbox.StatusDead) && strings.HasPrefix(it.LastError, processor.PermanentPrefix):
			// Every event of the workload is valid: only faults, and the
			// budgets they exhaust, may make one dead.
			lost("%s: a valid event dead: %s", k, clip(it.LastError, 200))
		case it.Outbox == "pending":
			lost("%s: processed, outbox never settled", k)
		case it.BodyID == "":
			lost("%s: stored without a body", k)
		}
		// Its body (payload, headers) outlives it (I2).
		if body, ok := items["body#"+it.BodyID]; it.BodyID != "" && !ok {
			lost("%s: its body %s is not in the table", k, it.BodyID)
		} else if ok && (body.ExpiresAt < it.ExpiresAt || body.ExpiresAt < it.BodyExpires) {
			lost("%s: its body expires at %d, before the event (%d) or what the event records of it (%d)", k, body.ExpiresAt, it.ExpiresAt, it.BodyExpires)
		}
		rep.Status[it.Status+"/"+it.Outcome]++
		if it.Status == string(inbox.StatusDead) {
			rep.Dead[clip(it.LastError, 90)]++
		}
		if it.PayloadRef != nil {
			rep.InS3++
		}
		// An event re-run with force was processed before: its effects
		// count as applied whatever the re-run ends in (a re-run that
		// runs out of receives ends dead, its first run's effects kept).
		processed[ev] = it.Status == string(inbox.StatusProcessed) || it.Reruns > 0
		if it.Reruns > 0 {
			rep.Reruns[it.Status+"/"+it.Outcome]++
			rep.Rerun++
			rep.RerunCount += it.Reruns
			// A re-run finds every part its first run wrote: it applies
			// nothing again (I4), so it is never "applied".
			if it.Status == string(inbox.StatusProcessed) && it.Outcome == string(inbox.OutcomeApplied) {
				dup("%s: re-run %d times with force, outcome applied (before: %s): the re-run applied something again", k, it.Reruns, it.PreviousOutcome)
			}
		}
		if ops != nil && ops.Rerun[k] && it.Reruns == 0 {
			lost("%s: a forced re-run answered rerun, the table counts none", k)
		}
	}

	// A forged Mailgun delivery (another body under a delivered event's
	// signature) is refused; one stored would show below too, as an event
	// nobody asked for.
	for _, k := range st.ForgedAccepted {
		dup("%s: a forged delivery (another body under a used token) answered 2xx", k)
	}
	if n := st.ForgedAnswers[http.StatusUnauthorized]; n != st.Forged {
		lost("forgeries: %d sent, %d answered 401 (%v)", st.Forged, n, st.ForgedAnswers)
	}

	// Every fact, entity and row the table holds must be one the workload
	// asked for.
	// Parts are in their event's scope: a Stripe tenant's, or GitHub's.
	expected := map[string]bool{inboxstore.LayoutPK: true}
	invoices := map[string]*invoice{}
	for _, ev := range w.Events {
		in := func(id string) string { return effects.ScopedID(ev.scope(), id) }
		switch {
		case ev.Invoice != nil:
			expected[in(invoiceFact(ev.Invoice))] = true
			expected[in(effects.Update{Entity: handlers.MembershipEntity, Key: ev.Invoice.Customer}.ID())] = true
			expected[in(effects.Update{Entity: handlers.LedgerEntity, Key: ev.Invoice.Customer}.ID())] = true
			expected[effects.OutboundPrefix+receiptKey(ev.Invoice)] = true
			invoices[ev.Invoice.ref()] = ev.Invoice
		case ev.Subscription != "":
			expected[in(effects.Update{Entity: handlers.SubscriptionEntity, Key: ev.Subscription}.ID())] = true
		case ev.Push != nil:
			expected[in(effects.Update{Entity: handlers.BranchEntity, Key: ev.Push.Branch}.ID())] = true
			for _, c := range ev.Push.Commits {
				expected[in(effects.Fact{Kind: handlers.PushCommitKind, Key: ev.Push.Repo + "@" + c}.ID())] = true
			}
		}
		expected["event#"+ev.key()] = true
		if it, ok := items["event#"+ev.key()]; ok && it.BodyID != "" {
			expected["body#"+it.BodyID] = true
		}
		if ev.Mailgun != nil {
			// The record of its token (inboxstore.Store.ClaimNonce),
			// which every accepted delivery of it made.
			nonce := "nonce#mailgun#" + ev.Mailgun.Token
			expected[nonce] = true
			if _, ok := items[nonce]; !ok && st.Accepted[ev.key()] {
				lost("%s: accepted, and no record of its token %s", ev.key(), nonce)
			}
		}
		// FORWARD's rows, one per route taking the event's type.
		for _, r := range routes.Match(ev.Source, ev.Type) {
			expected[in(effects.Outbound{Key: effects.KeyOf(ev.key(), forward.TargetOf(r))}.ID())] = true
		}
	}
	for pk := range items {
		if !expected[pk] {
			dup("%s: in the table, not asked for by any event", pk)
		}
	}

	// Every outbox row the operator resent or resolved is one of the
	// table's (a receipt's, checked below, or a forwarding row's).
	if ops != nil {
		for _, key := range slices.Sorted(maps.Keys(ops.Resent)) {
			if _, ok := items[effects.Outbound{Key: key}.ID()]; !ok {
				lost("outbox row %s: resent, not in the table", key)
			}
		}
	}

	// Invoices: a fact exactly when one of its events was processed; per
	// customer, the ledger counts each fact once and the membership runs
	// to the latest period paid.
	// Each tenant's invoices and customers apart: the same ids under two
	// tenants are two invoices, two customers.
	invoiceProcessed := map[string]bool{}
	for _, ev := range w.Events {
		if ev.Invoice != nil && processed[ev] {
			invoiceProcessed[ev.Invoice.ref()] = true
		}
	}
	count := map[string]int64{}
	latest := map[string]*invoice{}
	customers := map[string]bool{}
	for _, inv := range sorted(invoices) {
		customer := inv.Tenant + "/" + inv.Customer
		customers[customer] = true
		f := effects.ScopedID(stripeScope(inv.Tenant), invoiceFact(inv))
		_, has := items[f]
		switch {
		case invoiceProcessed[inv.ref()] && !has:
			lost("%s: an event of it processed, no fact", f)
		case !invoiceProcessed[inv.ref()] && has:
			dup("%s: a fact, no event of it processed", f)
		}
		if has {
			rep.Paid++
			count[customer]++
			if l := latest[customer]; l == nil || cmp.Or(cmp.Compare(inv.PeriodEnd, l.PeriodEnd), strings.Compare(inv.ID, l.ID)) > 0 {
				latest[customer] = inv
			}
		}
	}
	// Every customer, those with no invoice paid too: nothing may count
	// for them.
	for _, c := range slices.Sorted(maps.Keys(customers)) {
		tenant, id, _ := strings.Cut(c, "/")
		led := items[effects.ScopedID(stripeScope(tenant), effects.Update{Entity: handlers.LedgerEntity, Key: id}.ID())]
		switch {
		case led.InvoicesPaid > count[c]:
			dup("%s: %d invoices paid counted, %d facts", led.PK, led.InvoicesPaid, count[c])
		case led.InvoicesPaid < count[c]:
			lost("%s (%s): %d invoices paid counted, %d facts", led.PK, c, led.InvoicesPaid, count[c])
		}
		m := items[effects.ScopedID(stripeScope(tenant), effects.Update{Entity: handlers.MembershipEntity, Key: id}.ID())]
		var through int64
		var by string
		if l := latest[c]; l != nil {
			through, by = l.PeriodEnd, l.ID
		}
		if m.PaidThrough != through || m.Seq != through || m.SeqTie != by {
			regress("membership %s: paid_through %d (order %d/%q), the latest invoice paid (%q) runs to %d", c, m.PaidThrough, m.Seq, m.SeqTie, by, through)
		}
	}

	// Receipts: at most one accepted per invoice, under the invoice's own
	// key; every invoice paid has its row, delivered when the receiver has
	// it, else unknown.
	got := map[string]int{}
	perInvoice := map[string]int{}
	for _, r := range sys.receiver.received() {
		rep.Answers[r.Answer]++
		if r.Answer == answerOK || r.Answer == answerHang {
			got[r.Key]++
			inv := &invoice{Tenant: tenantOf(r.Key), ID: r.Invoice}
			perInvoice[inv.ref()]++
			rep.Received++
			if want := receiptKey(inv); r.Key != want {
				dup("receipt for invoice %q: under key %s, not its own %s", inv.ref(), r.Key, want)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if n := got[key]; n > 1 {
			dup("receipt %s: accepted %d times", key, n)
		}
	}
	for _, inv := range slices.Sorted(maps.Keys(perInvoice)) {
		if n := perInvoice[inv]; n > 1 {
			dup("invoice %q: %d receipts accepted", inv, n)
		}
	}
	for _, inv := range sorted(invoices) {
		key := receiptKey(inv)
		if _, has := items[effects.ScopedID(stripeScope(inv.Tenant), invoiceFact(inv))]; !has {
			if got[key] > 0 {
				dup("receipt %s: received for an invoice never paid", key)
			}
			continue
		}
		row, ok := items[effects.Outbound{Key: key}.ID()]
		if !ok {
			lost("receipt %s: no outbox row", key)
			continue
		}
		rep.Rows[row.Status]++
		if row.Resent > 0 {
			rep.Resent[row.Status]++
		}
		switch outbox.State(row.Status) {
		case outbox.Resolved:
			// The operator resolves a row only when the receiver says it
			// acted on its key.
			rep.Resolved[row.ResolvedFrom]++
			if got[key] == 0 {
				lost("receipt %s: resolved from %s, never received", key, row.ResolvedFrom)
			}
		case outbox.Delivered:
			if got[key] == 0 {
				lost("receipt %s: row delivered, never received", key)
			}
		case outbox.Unknown:
		default:
			if got[key] == 0 {
				lost("receipt %s: never received, row %s (not unknown)", key, row.Status)
			} else {
				// Received: the row may say delivered or unknown, never
				// that it was not sent.
				dup("receipt %s: received, row %s", key, row.Status)
			}
		}
	}

	// Subscriptions end in the newest processed event's status.
	newest := map[string]*event{}
	for _, ev := range w.Events {
		if ev.Subscription == "" || !processed[ev] {
			continue
		}
		ref := ev.Account + "/" + ev.Subscription
		if n := newest[ref]; n == nil || cmp.Or(cmp.Compare(ev.Created, n.Created), strings.Compare(ev.ID, n.ID)) > 0 {
			newest[ref] = ev
		}
	}
	for _, id := range slices.Sorted(maps.Keys(newest)) {
		n := newest[id]
		s := items[effects.ScopedID(n.scope(), effects.Update{Entity: handlers.SubscriptionEntity, Key: n.Subscription}.ID())]
		if s.Status != n.Status || s.Seq != n.Created*1000 || s.SeqTie != n.ID {
			regress("subscription %s: status %q by %d/%q, the newest event (%s) says %q", id, s.Status, s.Seq, s.SeqTie, n.ID, n.Status)
		}
	}

	// Branches end at the newest processed push; a commit is a fact
	// exactly when a processed push carries it.
	head := map[string]*push{}
	carried := map[string]bool{}
	for _, ev := range w.Events {
		if ev.Push == nil || !processed[ev] {
			continue
		}
		p := ev.Push
		if n := head[p.Branch]; n == nil || cmp.Or(cmp.Compare(p.At, n.At), strings.Compare(p.After, n.After)) > 0 {
			head[p.Branch] = p
		}
		for _, c := range p.Commits {
			id := effects.ScopedID(ev.scope(), effects.Fact{Kind: handlers.PushCommitKind, Key: p.Repo + "@" + c}.ID())
			carried[id] = true
			if _, ok := items[id]; !ok {
				lost("commit %s@%s: pushed, no fact", p.Repo, c)
			}
		}
	}
	for _, ev := range w.Events {
		if ev.Push == nil {
			continue
		}
		for _, c := range ev.Push.Commits {
			id := effects.ScopedID(ev.scope(), effects.Fact{Kind: handlers.PushCommitKind, Key: ev.Push.Repo + "@" + c}.ID())
			if _, ok := items[id]; ok && !carried[id] {
				dup("%s: a fact, no push of it processed", id)
				carried[id] = true // once
			}
		}
	}
	for _, b := range slices.Sorted(maps.Keys(head)) {
		e, p := items[effects.ScopedID(githubScope, effects.Update{Entity: handlers.BranchEntity, Key: b}.ID())], head[b]
		if e.Head != p.After || e.Seq != p.At*1000 || e.SeqTie != p.After {
			regress("branch %s: head %s by %d/%q, the newest push says %s", b, e.Head, e.Seq, e.SeqTie, p.After)
		}
	}

	// Every DLQ message is a finished event's.
	if err := auditDLQ(ctx, sys, items, rep, lost); err != nil {
		return nil, err
	}
	// Every processed event a route takes reached the bus's consumer.
	if sys.stack.ForwardedQueueURL != "" {
		if err := auditForwarded(ctx, sys, w, items, routes, rep, lost, dup); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// auditForwarded reads what the local bus's consumer received (and
// deletes it: a second audit reads what arrived since) and checks it
// against the workload: every processed event a route takes arrived, and
// nothing else did.
func auditForwarded(ctx context.Context, sys *system, w *workload, items map[string]item, routes forward.Routes, rep *report, lost, dup func(string, ...any)) error {
	all, err := local.DrainForwarded(ctx, sys.sqs, sys.stack.ForwardedQueueURL)
	if err != nil {
		return fmt.Errorf("forwarded: %w", err)
	}
	got := map[string]int{}
	for _, f := range all {
		got[f.EventKey()]++
	}
	want := map[string]bool{}
	for _, ev := range w.Events {
		k := ev.key()
		it := items["event#"+k]
		if (it.Status == string(inbox.StatusProcessed) || it.Reruns > 0) && len(routes.Match(ev.Source, ev.Type)) > 0 {
			want[k] = true
			if got[k] == 0 {
				lost("%s: processed, never forwarded", k)
			}
		}
	}
	// An event of a route that retries unknowns may be put before a
	// commit that never lands (its entry is put under the claim's lease,
	// before the commit): dead after that, it was forwarded. Any other
	// event forwarded and not processed is a duplicate effect.
	putAhead := map[string]bool{}
	for _, ev := range w.Events {
		if items["event#"+ev.key()].Status != string(inbox.StatusDead) {
			continue
		}
		for _, r := range routes.Match(ev.Source, ev.Type) {
			if r.RetryUnknown {
				putAhead[ev.key()] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if !want[k] && putAhead[k] {
			rep.ForwardedDead++
			continue
		}
		if !want[k] {
			dup("forwarded %s, which no route took or was not processed", k)
			continue
		}
		rep.Forwarded++
		rep.ForwardedAgain += got[k] - 1
	}
	return nil
}

// auditDLQ reads every DLQ message once (each held from view while the
// read goes on, then made visible again, so a later audit reads them
// too), checks the count against the queue's own, and checks that each
// message is a finished event's: a dead one's, or a stale copy of a
// processed one's. SQS moves a message to the DLQ on the receive after
// its last, one its consumer never sees, so a copy whose last receive
// died with its worker (or whose receive's answer was lost) goes there
// whatever its event's state; an unfinished event behind it is the
// sweep's, and ends processed or dead (the stranded check above), and
// drain-dlq deletes a processed event's copy. An event neither dead nor
// processed behind a DLQ message is lost.
func auditDLQ(ctx context.Context, sys *system, items map[string]item, rep *report, lost func(string, ...any)) error {
	url := sys.stack.Resources.DLQURL
	seen := map[string]bool{}
	var handles []string
	defer func() {
		for batch := range slices.Chunk(handles, 10) {
			var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
			for i, h := range batch {
				entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)})
			}
			// Best effort: a message left hidden shows in a later audit's
			// count check.
			_, _ = sys.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &url, Entries: entries})
		}
	}()
	// kumo has cut a 200 answer mid-body: such a receive is retried, and
	// the messages it hid come back after the visibility timeout, so the
	// reading goes on until the queue's own count agrees, for at most
	// dlqReadFor.
	deadline := time.Now().Add(dlqReadFor)
	failures := 0
	for {
		out, err := sys.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, VisibilityTimeout: int32(dlqHide / time.Second)})
		if err != nil {
			if failures++; failures > 5 {
				return fmt.Errorf("dlq: %w", err)
			}
			time.Sleep(time.Second)
			continue
		}
		if len(out.Messages) == 0 {
			total, err := dlqCount(ctx, sys, url)
			if err != nil {
				return err
			}
			if total == rep.DLQ || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Second)
			continue
		}
		for _, m := range out.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
			if seen[aws.ToString(m.MessageId)] {
				continue
			}
			seen[aws.ToString(m.MessageId)] = true
			rep.DLQ++
			msg, err := inbox.DecodeMessage(aws.ToString(m.Body))
			if err != nil {
				lost("dlq: a message not of this system: %v", err)
				continue
			}
			if rep.inDLQ == nil {
				rep.inDLQ = map[string]bool{}
			}
			rep.inDLQ[msg.Key.String()] = true
			switch it := items["event#"+msg.Key.String()]; it.Status {
			case string(inbox.StatusDead):
			case string(inbox.StatusProcessed):
				rep.DLQStale++
			default:
				lost("dlq: %s is %q, neither dead nor processed", msg.Key, it.Status)
			}
		}
	}
	// An empty receive is not proof of an empty queue: the queue's own
	// count must agree that every message was read.
	total, err := dlqCount(ctx, sys, url)
	if err != nil {
		return err
	}
	if total != rep.DLQ {
		lost("dlq: read %d messages, the queue holds %d", rep.DLQ, total)
	}
	return nil
}

// How long the audit hides each DLQ message it reads, and reads for.
const (
	dlqHide    = 30 * time.Second
	dlqReadFor = 2 * dlqHide
)

// dlqCount is the DLQ's messages: visible, in flight and delayed.
func dlqCount(ctx context.Context, sys *system, url string) (int, error) {
	v, f, d, err := countsOf(ctx, sys, url, "dlq")
	return v + f + d, err
}

// githubScope is the scope of the GitHub events' parts.
var githubScope = inbox.ScopeOf("github", inbox.Key{})

// ref names an invoice with its tenant.
func (inv *invoice) ref() string { return inv.Tenant + "/" + inv.ID }

// invoiceFact is the ID of an invoice's fact, unscoped.
func invoiceFact(inv *invoice) string {
	return effects.Fact{Kind: handlers.InvoicePaidKind, Key: inv.ID}.ID()
}

// receiptKey is the key of an invoice's receipt row, as stored and sent.
func receiptKey(inv *invoice) string {
	return effects.ScopedKey(stripeScope(inv.Tenant), effects.KeyOf(invoiceFact(inv), handlers.ReceiptTarget))
}

// sorted returns the invoices by their tenant and id.
func sorted(m map[string]*invoice) []*invoice {
	out := make([]*invoice, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// print writes the report, the verdict line last.
func (r *report) print(out io.Writer) {
	st := r.Stats
	codes := slices.Sorted(maps.Keys(st.Status))
	var answers []string
	for _, c := range codes {
		answers = append(answers, fmt.Sprintf("%d %d", c, st.Status[c]))
	}
	fmt.Fprintf(out, "torture: ingest: %d requests for %d deliveries (%s; %d answered 5xx or not at all, sent again), %d of %d events answered 2xx, in %s\n",
		st.Requests.Load(), r.Deliveries, strings.Join(answers, ", "), st.Retried.Load(), len(st.Accepted), r.Events, r.SendTime.Round(time.Second))
	fmt.Fprintf(out, "torture: events: %s\n", counts(r.Status))
	for _, why := range slices.Sorted(maps.Keys(r.Dead)) {
		fmt.Fprintf(out, "torture:   dead %d: %s\n", r.Dead[why], why)
	}
	fmt.Fprintf(out, "torture: receipts: %d invoices paid, rows %s; receiver answered %s; %d accepted\n",
		r.Paid, counts(r.Rows), counts(r.Answers), r.Received)
	fmt.Fprintf(out, "torture: forwarded: %d events reached the bus's consumer, %d puts again (routes retry unknowns), %d dead events put before a commit that never landed\n", r.Forwarded, r.ForwardedAgain, r.ForwardedDead)
	fmt.Fprintf(out, "torture: dlq: %d messages, %d of them stale copies of processed events (drain-dlq deletes them)\n", r.DLQ, r.DLQStale)
	fmt.Fprintf(out, "torture: large payloads: %d events, %d of them stored with their payload in S3 (answered as without s3:ListBucket)\n", r.Large, r.InS3)
	fmt.Fprintf(out, "torture: mailgun: %d events, a token each; %d forged deliveries (another body under a delivered event's signature), answered %v\n", r.Mailgun, st.Forged, st.ForgedAnswers)
	if r.Operator != nil {
		fmt.Fprintf(out, "torture: operator: %s\n", r.Operator.line())
		fmt.Fprintf(out, "torture: operator: forced re-runs: %d events re-run %d times, now %s; none applied anything again (the ledger, membership, receipt and fact checks cover their effects)\n",
			r.Rerun, r.RerunCount, counts(r.Reruns))
		fmt.Fprintf(out, "torture: operator: outbox review: %d rows resolved (from %s), each received; %d receipt rows resent, now %s, none received twice\n",
			len(r.Operator.Resolved), counts(r.Resolved), len(r.Operator.Resent), counts(r.Resent))
	}
	fmt.Fprintf(out, "torture: faults: %d of %d calls (%s); by call: %s\n", r.Faults.Total(), r.Faults.Calls, counts64(r.Faults.ByFault), counts64(r.Faults.ByCall))
	final := "never (the kills and faults went on to the end)"
	if r.Final > 0 {
		final = r.Final.Round(time.Second).String() + " after the first delivery (kills and faults stopped then)"
	}
	fmt.Fprintf(out, "torture: %d kills, %d workers exited by themselves; every event finished and row final %s; settled %t, %s after the first delivery; run %s\n",
		r.Kills, r.WorkerExits, final, r.Settled, r.AllDone.Round(time.Second), r.Elapsed.Round(time.Second))
	if r.Load != nil {
		r.Load.print(out)
	}
	for _, f := range [][]string{r.Lost, r.Duplicates, r.Regressions} {
		for i, line := range f {
			if i == 20 {
				fmt.Fprintf(out, "torture:   … %d more\n", len(f)-i)
				break
			}
			fmt.Fprintf(out, "torture:   %s\n", line)
		}
	}
	fmt.Fprintf(out, "torture: %d events, %d deliveries, %d kills, %d faults — %d lost, %d duplicate effects, %d regressions\n",
		r.Events, st.Requests.Load(), r.Kills, r.Faults.Total(), len(r.Lost), len(r.Duplicates), len(r.Regressions))
}

func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func counts64(m map[string]int64) string {
	c := map[string]int{}
	for k, v := range m {
		c[k] = int(v)
	}
	return counts(c)
}
