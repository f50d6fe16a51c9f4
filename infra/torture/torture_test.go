//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// TestMain makes the test binary a worker when the run starts it as one,
// as the command is.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(workerEnv); ok {
		if err := runWorker(spec); err != nil {
			fmt.Fprintln(os.Stderr, "torture worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestShortRun is the short torture run of `make test`: 300 events with
// faults on every AWS call type and a worker killed every two seconds,
// audited to 0/0/0. Then the audit is shown to catch each kind of damage
// by doing it to the table, the DLQ and the receiver's log.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local AWS and worker processes")
	}
	if _, err := awstest.DynoxideBinary(); err != nil {
		t.Skipf("no dynoxide (moto's DynamoDB is not atomic across processes): %v", err)
	}
	o := defaults()
	o.Events, o.Seed, o.Dir = 300, 7, t.TempDir() // and the full run's -settle: the kills go on until every event is final
	// A processor timeout of 20 s, not the template's 30, and a
	// visibility timeout of 30 s, not the full run's 40: a killed
	// worker's leases end 30 s after its invocation began, not 40, and its
	// messages come back then too, so the run is shorter, and the
	// outbox's budget is tighter (a row starts only with its target's
	// 10 s timeout left before the invocation stops claiming, 15 s in).
	// Not less: below the outbox's longest call plus the processor's
	// margin no row is ever delivered (docs/testing.md, the torture run).
	o.ProcessorTimeout, o.Visibility = 20*time.Second, 30*time.Second
	// The template's harshest corner that a short run can wait out: the
	// least receives a message gets, the shortest sweep threshold, and a
	// base over its cap. (The full run draws its set from the seed.)
	o.Params = "RetryBaseSeconds=4,RetryCapSeconds=2,MaxReceiveCount=2,SweepAfterSeconds=1"
	// The operator acts while the workload is sent and 20 s after: acting
	// on until every event is finished, its re-runs and the kills hold
	// the run's end back by minutes.
	o.OperatorAfter = 20 * time.Second
	var damaged *report
	var staleKey string // the processed event whose message damage puts in the DLQ
	o.inspect = func(sys *system, w *workload, st *sendStats, rep *report) {
		damaged, staleKey = damage(t, sys, w, st, rep)
	}
	var out bytes.Buffer
	rep, err := run(context.Background(), o, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Errorf("verdict not clean\n%s", workerLogs(o.Dir))
	}
	if rep.Kills == 0 || rep.Faults.ByFault["drop"] == 0 || rep.Faults.ByFault["cut"] == 0 || rep.Faults.ByCall["DynamoDB.TransactWriteItems"] == 0 {
		t.Errorf("the run did not exercise kills and faults: %d kills, faults %v", rep.Kills, rep.Faults.ByFault)
	}
	if rep.Answers[answerHang] == 0 || rep.Answers[answer500] == 0 || rep.Answers[answer503] == 0 {
		t.Errorf("the receiver never hung, failed and refused: %v", rep.Answers)
	}
	// The operator acted in every way; what it found to act on is the
	// run's (a review may find no row, a forced replay no processed
	// event), but what it found it acted on.
	if op := rep.Operator; op == nil || op.Actions[opRerun] == 0 || op.Actions[opSweep] == 0 || op.Actions[opDrain] == 0 ||
		op.Actions[opReview] == op.Errors[opReview] ||
		(op.Tally[opReview]["for_review"] > 0 && len(op.Resolved)+len(op.Resent) == 0) ||
		(op.Tally[opRerun][replay.OutcomeRerun] > 0 && rep.Rerun == 0) {
		t.Errorf("the operator did not act in every way: %+v, re-runs %v", op, rep.Reruns)
	}
	if rep.Large == 0 || rep.InS3 != rep.Large {
		t.Errorf("large payloads: %d events, %d stored in S3; want some, all", rep.Large, rep.InS3)
	}
	if damaged == nil {
		t.Fatal("the audit of the damaged system did not run")
	}
	if damaged.DLQStale != rep.DLQStale+1 {
		t.Errorf("a processed event's DLQ copy: stale copies %d, want %d", damaged.DLQStale, rep.DLQStale+1)
	}
	for _, line := range damaged.Lost {
		if strings.Contains(line, staleKey) && strings.Contains(line, "dlq") {
			t.Errorf("a processed event's DLQ copy counted lost: %s", line)
		}
	}
	want := map[string][]string{
		"lost": {"stranded processing", "no fact", "is \"processing\", neither dead nor processed", "row delivered, never received", "a valid event dead",
			"resolved from unknown, never received"},
		"duplicates": {"the re-run applied something again", "invoices paid counted", "accepted 2 times", "not asked for", "not its own", "receipts accepted", "received, row failed", "no push of it processed",
			// The tenant's invoice written into the other tenant's scope.
			"not asked for by any event"},
		"regression": {"subscription", "branch", "membership"},
	}
	got := map[string][]string{"lost": damaged.Lost, "duplicates": damaged.Duplicates, "regression": damaged.Regressions}
	for kind, subs := range want {
		for _, sub := range subs {
			found := false
			for _, line := range got[kind] {
				found = found || strings.Contains(line, sub)
			}
			if !found {
				t.Errorf("damage %q: not among the audit's %s: %q", sub, kind, got[kind])
			}
		}
	}
}

// damage does one thing of each kind the audit must catch, then audits.
// It returns the audit's report and the key of the processed event whose
// message it put in the DLQ. The events whose state it changes have no
// message in the DLQ (rep, the audit before), so the DLQ's copies of the
// others count as they did.
func damage(t *testing.T, sys *system, w *workload, st *sendStats, rep *report) (*report, string) {
	ctx := context.Background()
	table := &sys.stack.Resources.TableName
	set := func(pk, attr string, v ddbtypes.AttributeValue) {
		t.Helper()
		if _, err := sys.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: table, Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}},
			UpdateExpression: aws.String("SET #a = :v"), ExpressionAttributeNames: map[string]string{"#a": attr},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": v},
		}); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	items, err := scan(ctx, sys)
	if err != nil {
		t.Fatal(err)
	}
	var inv *invoice
	var sub, first, lastPush *event
	var branch *push
	// The commits each processed push carries, counted over all of them:
	// the push made dead below must carry one no other processed push
	// does, or its facts are still some processed push's and the damage
	// cannot be seen (pushes share commits).
	carriers := map[string]int{}
	commitIDs := func(ev *event) []string {
		var ids []string
		for _, c := range ev.Push.Commits {
			ids = append(ids, effects.ScopedID(ev.scope(), effects.Fact{Kind: handlers.PushCommitKind, Key: ev.Push.Repo + "@" + c}.ID()))
		}
		return ids
	}
	for _, ev := range w.Events {
		if ev.Push != nil && items["event#"+ev.key()].Status == string(inbox.StatusProcessed) {
			for _, id := range commitIDs(ev) {
				carriers[id]++
			}
		}
	}
	for _, ev := range w.Events {
		processed := items["event#"+ev.key()].Status == string(inbox.StatusProcessed)
		if ev.Push != nil && processed && !rep.inDLQ[ev.key()] && slices.ContainsFunc(commitIDs(ev), func(id string) bool { return carriers[id] == 1 }) {
			lastPush = ev
		}
		switch {
		case ev.Invoice != nil && inv == nil:
			// Paid under its tenant, and not under the other, whose scope
			// the damage below writes it into.
			other := tenants[0]
			if ev.Invoice.Tenant == other {
				other = tenants[1]
			}
			_, paid := items[effects.ScopedID(stripeScope(ev.Invoice.Tenant), invoiceFact(ev.Invoice))]
			_, there := items[effects.ScopedID(stripeScope(other), invoiceFact(ev.Invoice))]
			if paid && !there {
				inv = ev.Invoice
			}
		case ev.Subscription != "" && sub == nil && processed:
			sub = ev
		case ev.Push != nil && branch == nil:
			branch = ev.Push
		}
		if first == nil && ev != sub && processed && !rep.inDLQ[ev.key()] && ev.Invoice == nil && ev.Push == nil {
			first = ev
		}
	}
	if inv == nil || sub == nil || branch == nil || first == nil || lastPush == nil || lastPush.Push == branch {
		t.Fatal("the workload lacks an invoice paid, a subscription, a push or a processed event")
	}
	// Lost: an event left processing, a fact gone, a live event's message
	// in the DLQ, a receipt the receiver never got.
	set("event#"+first.key(), "status", s("processing"))
	fact := effects.ScopedID(stripeScope(inv.Tenant), invoiceFact(inv))
	if _, err := sys.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]ddbtypes.AttributeValue{"pk": s(fact)}}); err != nil {
		t.Fatal(err)
	}
	// The DLQ: a message of the event now left processing is lost; one of
	// a processed event is a stale copy (a last receive that died with its
	// worker, as a full run showed), not lost.
	for _, ev := range []*event{first, sub} {
		body, _ := inbox.EncodeMessage(ev.inboxKey())
		if _, err := sys.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &sys.stack.Resources.DLQURL, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	// Duplicates: a ledger counting an invoice twice, a receipt accepted
	// twice, an item no event asked for, a tenant's invoice recorded for
	// the other tenant (the same invoice id).
	otherTenant := tenants[0]
	if inv.Tenant == otherTenant {
		otherTenant = tenants[1]
	}
	set(effects.ScopedID(stripeScope(otherTenant), invoiceFact(inv)), "invoice_id", s(inv.ID))
	if _, err := sys.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: table, Key: map[string]ddbtypes.AttributeValue{"pk": s(effects.ScopedID(stripeScope(inv.Tenant), effects.Update{Entity: handlers.LedgerEntity, Key: inv.Customer}.ID()))},
		UpdateExpression:          aws.String("ADD invoices_paid :one"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}},
	}); err != nil {
		t.Fatal(err)
	}
	var delivered receipt
	for _, r := range sys.receiver.received() {
		if r.Answer == answerOK {
			delivered = r
			break
		}
	}
	sys.receiver.mu.Lock()
	sys.receiver.log = append(sys.receiver.log, delivered)
	sys.receiver.mu.Unlock()
	set("fact#invoice_paid#in_nobody", "invoice_id", s("in_nobody"))
	// Lost too: a row delivered the receiver never saw.
	var other string
	for _, r := range sys.receiver.received() {
		if r.Answer == answerOK && r.Key != delivered.Key {
			other = r.Key
			break
		}
	}
	sys.receiver.mu.Lock()
	log := sys.receiver.log[:0]
	for _, r := range sys.receiver.log {
		if r.Key != other {
			log = append(log, r)
		}
	}
	sys.receiver.log = log
	sys.receiver.mu.Unlock()
	set(effects.Outbound{Key: other}.ID(), "status", s("delivered"))
	// Lost too: a row resolved the receiver never saw.
	var fourth string
	for _, r := range sys.receiver.received() {
		if r.Answer == answerOK && r.Key != delivered.Key && r.Key != other {
			fourth = r.Key
			break
		}
	}
	sys.receiver.mu.Lock()
	log = sys.receiver.log[:0]
	for _, r := range sys.receiver.log {
		if r.Key != fourth {
			log = append(log, r)
		}
	}
	sys.receiver.log = log
	sys.receiver.mu.Unlock()
	set(effects.Outbound{Key: fourth}.ID(), "status", s("resolved"))
	set(effects.Outbound{Key: fourth}.ID(), "resolved_from", s("unknown"))
	// Duplicate: a processed event re-run with force whose re-run says
	// it applied something.
	set("event#"+sub.key(), "outcome", s("applied"))
	if _, err := sys.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: table, Key: map[string]ddbtypes.AttributeValue{"pk": s("event#" + sub.key())},
		UpdateExpression:          aws.String("SET reruns = :one"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}},
	}); err != nil {
		t.Fatal(err)
	}
	// Lost and duplicate: a processed push made dead by a permanent
	// error, its commits facts still.
	set("event#"+lastPush.key(), "status", s("dead"))
	set("event#"+lastPush.key(), "last_error", s(processor.PermanentPrefix+"damage"))
	// Duplicates: a receipt for an invoice under another key; a received
	// receipt whose row says it failed.
	var third receipt
	for _, r := range sys.receiver.received() {
		if r.Answer == answerOK && r.Key != delivered.Key && r.Key != other && r.Key != fourth {
			third = r
			break
		}
	}
	if third.Key == "" {
		t.Fatal("the receiver accepted fewer than three receipts")
	}
	set(effects.Outbound{Key: third.Key}.ID(), "status", s("failed"))
	sys.receiver.mu.Lock()
	sys.receiver.log = append(sys.receiver.log, receipt{Key: effects.ScopedKey(stripeScope(tenantOf(third.Key)), "other-key"), Invoice: third.Invoice, Answer: answerOK})
	sys.receiver.mu.Unlock()
	// Regressions: a subscription, a branch and a membership set back (the
	// membership by its order alone).
	set(effects.ScopedID(sub.scope(), effects.Update{Entity: handlers.SubscriptionEntity, Key: sub.Subscription}.ID()), "status", s("incomplete_expired"))
	set(effects.ScopedID(githubScope, effects.Update{Entity: handlers.BranchEntity, Key: branch.Branch}.ID()), "head", s("0000000000000000000000000000000000000000"))
	set(effects.ScopedID(stripeScope(inv.Tenant), effects.Update{Entity: handlers.MembershipEntity, Key: inv.Customer}.ID()), "seq_tie", s("in_older"))

	damaged, err := audit(ctx, sys, w, st, rep.Operator)
	if err != nil {
		t.Fatal(err)
	}
	return damaged, sub.key()
}

// workerLogs is the tail of each worker's log, for a failure.
func workerLogs(dir string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", f, data)
	}
	return b.String()
}

func TestGenerate(t *testing.T) {
	a, b := generate(1000, 3, 0.05), generate(1000, 3, 0.05)
	if len(a.Events) != 1000+a.Mailgun || a.Mailgun != 20 {
		t.Fatalf("got %d events, %d of them Mailgun's; want 1000 and 20 more", len(a.Events), a.Mailgun)
	}

	for i := range a.Deliveries {
		if a.Deliveries[i].Event.ID != b.Deliveries[i].Event.ID || !bytes.Equal(a.Deliveries[i].Event.Body, b.Deliveries[i].Event.Body) {
			t.Fatalf("delivery %d differs between two runs of one seed", i)
		}
	}
	// A Mailgun event's body, once signed, and its forgery: the same
	// signature object over another event.
	a.signMailgun([]byte("key"), time.Unix(1767225600, 0))
	for _, ev := range a.Events {
		if ev.Mailgun == nil {
			continue
		}
		f := ev.forge()
		if !bytes.HasPrefix(f.Body, ev.Body[:bytes.Index(ev.Body, []byte(`,"event-data"`))]) || bytes.Equal(f.Body, ev.Body) || !json.Valid(f.Body) || !json.Valid(ev.Body) {
			t.Fatalf("forgery %s of %s", f.Body, ev.Body)
		}
	}
	if c := generate(1000, 4, 0.05); c.Deliveries[0].Event.ID == a.Deliveries[0].Event.ID && c.Deliveries[1].Event.ID == a.Deliveries[1].Event.ID {
		t.Error("another seed gave the same order")
	}
	per := map[*event]int{}
	shared := map[string]int{}
	tenanted := map[string]int{} // invoice id: a bit per tenant with it
	for _, d := range a.Deliveries {
		per[d.Event]++
		if d.Copies != 1 && d.Copies != burstSize {
			t.Errorf("a delivery of %d copies", d.Copies)
		}
	}
	kinds := map[string]int{}
	longest := map[string]int{}
	for _, ev := range a.Events {
		if n := per[ev]; n < 1 || n > 5 {
			t.Errorf("%s delivered %d times, want 1 to 5", ev.ID, n)
		}
		kinds[ev.Type]++
		if ev.Invoice != nil {
			shared[ev.Invoice.ref()]++
			tenanted[ev.Invoice.ID] |= 1 << slices.Index(tenants[:], ev.Invoice.Tenant)
		}
		if ev.Subscription != "" {
			longest[ev.Subscription]++
		}
	}
	twice := 0
	for _, n := range shared {
		if n > 1 {
			twice++
		}
	}
	long := 0
	for _, n := range longest {
		long = max(long, n)
	}
	both := 0
	for _, bits := range tenanted {
		if bits == 3 {
			both++
		}
	}
	large := 0
	for _, ev := range a.Events {
		if len(ev.Body) > largeBytes {
			large++
			if z := claimcheck.Gzip(ev.Body); len(z) <= claimcheck.InlineMax {
				t.Errorf("%s: a large event's payload gzips to %d bytes, within the claim check's inline %d", ev.ID, len(z), claimcheck.InlineMax)
			}
		}
	}
	if large == 0 || large != a.Large {
		t.Errorf("large events: %d bodies over %d bytes, the workload counts %d", large, largeBytes, a.Large)
	}
	if a.Bursts == 0 || twice == 0 || long < 20 || kinds["push"] == 0 || kinds["customer.subscription.deleted"] == 0 || both == 0 {
		t.Errorf("workload lacks a piece: %d bursts, %d shared invoices, longest subscription %d events, kinds %v, %d invoice ids under both tenants", a.Bursts, twice, long, kinds, both)
	}
}

// TestParams: a drawn set is within the template's ranges (and the run's
// ceilings), the same for one seed, not for every seed; an explicit set
// outside a range is refused.
func TestParams(t *testing.T) {
	root, err := awstest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := template.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sets := map[[4]int]bool{}
	extremes := map[string]bool{}
	for seed := range uint64(40) {
		p, err := parseParams("drawn", tpl, seed)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := parseParams("drawn", tpl, seed)
		if p.String() != q.String() {
			t.Fatalf("seed %d drew %s, then %s", seed, p, q)
		}
		for name, v := range map[string]int{"RetryBaseSeconds": p.RetryBase, "RetryCapSeconds": p.RetryCap, "MaxReceiveCount": p.MaxReceiveCount, "SweepAfterSeconds": p.SweepAfter} {
			decl, _ := tpl.Parameter(name)
			if float64(v) < *decl.MinValue || float64(v) > *decl.MaxValue || v > paramCeilings[name] {
				t.Errorf("seed %d: %s %d outside [%g, %g] or over the ceiling %d", seed, name, v, *decl.MinValue, *decl.MaxValue, paramCeilings[name])
			}
			if float64(v) == *decl.MinValue {
				extremes[name+" lowest"] = true
			}
		}
		if p.RetryBase > p.RetryCap {
			extremes["base over cap"] = true
		}
		extremes[fmt.Sprintf("retry unknown %d", p.RetryUnknown)] = true
		sets[[4]int{p.RetryBase, p.RetryCap, p.MaxReceiveCount, p.SweepAfter}] = true
	}
	if len(sets) < 30 || len(extremes) < 5 || !extremes["retry unknown 0"] || !extremes["retry unknown 1"] {
		t.Errorf("40 seeds drew %d sets, reaching %v", len(sets), extremes)
	}
	p, err := parseParams("MaxReceiveCount=2,SweepAfterSeconds=1", tpl, 1)
	if err != nil || p.MaxReceiveCount != 2 || p.SweepAfter != 1 || p.RetryCap != fixedParams().RetryCap {
		t.Errorf("explicit: %+v, %v", p, err)
	}
	if p, err := parseParams("TargetRetryUnknown=1", tpl, 1); err != nil || p.RetryUnknown != 1 {
		t.Errorf("TargetRetryUnknown=1: %+v, %v", p, err)
	}
	for _, bad := range []string{"MaxReceiveCount=1", "RetryCapSeconds=50000", "ProcessorConcurrency=3", "MaxReceiveCount", "MaxReceiveCount=x", "TargetRetryUnknown=2"} {
		if _, err := parseParams(bad, tpl, 1); err == nil {
			t.Errorf("-params %s: no error", bad)
		}
	}
}

func TestReceiverChoose(t *testing.T) {
	r := newReceiver(1, time.Second)
	n := map[string]int{}
	for i := range 10000 {
		key := fmt.Sprintf("k%d", i)
		a := r.choose(key, 0)
		if a != r.choose(key, 0) {
			t.Fatal("choose is not a function of key and try")
		}
		n[a]++
	}
	for answer, want := range map[string]int{answer500: 700, answer503: 700, answerHang: 600, answerOK: 8000} {
		if got := n[answer]; got < want*8/10 || got > want*12/10 {
			t.Errorf("%s: %d of 10000, want about %d", answer, got, want)
		}
	}
	r.quiet()
	for i := range 1000 {
		if a := r.choose(fmt.Sprint(i), 0); a != answerOK {
			t.Fatalf("quiet receiver answered %s", a)
		}
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, mod := range []func(*options){
		func(o *options) { o.Events = 5 },
		func(o *options) { o.Workers = 0 },
		func(o *options) { o.KillEvery = -time.Second },
		func(o *options) { o.FaultRate = 1.5 },
		func(o *options) { o.Senders = 0 },
		func(o *options) { o.Settle = 0 },
		func(o *options) { o.Operator = -time.Second },
		func(o *options) { o.LargeFraction = 2 },
	} {
		o := defaults()
		mod(&o)
		if o.check() == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := defaults().check(); err != nil {
		t.Error(err)
	}
}

// TestPerEvent: the load report's calls per event, most first, ties by
// name, and a dash for an empty workload.
func TestPerEvent(t *testing.T) {
	got := perEvent(map[string]int64{"SQS.SendMessage": 30, "DynamoDB.PutItem": 30, "DynamoDB.TransactWriteItems": 10, "SQS.ReceiveMessage": 1}, 10)
	want := "7.10 (DynamoDB.PutItem 3.00, SQS.SendMessage 3.00, DynamoDB.TransactWriteItems 1.00, SQS.ReceiveMessage 0.10)"
	if got != want {
		t.Errorf("perEvent:\n got %s\nwant %s", got, want)
	}
	if got := perEvent(nil, 0); got != "-" {
		t.Errorf("perEvent of no events: got %q, want -", got)
	}
}

// TestRedelivered: the floor takes a transaction refused on every
// condition for its event committed already, and nothing else.
func TestRedelivered(t *testing.T) {
	cc := aws.String("ConditionalCheckFailed")
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"both conditions", &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{{Code: cc}, {Code: cc}}}, true},
		{"wrapped", fmt.Errorf("op: %w", &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{{Code: cc}}}), true},
		{"a conflict", &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{{Code: cc}, {Code: aws.String("TransactionConflict")}}}, false},
		{"no reasons", &ddbtypes.TransactionCanceledException{}, false},
		{"another error", fmt.Errorf("boom"), false},
	} {
		if got := redelivered(tt.err); got != tt.want {
			t.Errorf("%s: got %t, want %t", tt.name, got, tt.want)
		}
	}
}

// TestReceiverDedupe: a receiver that dedupes (the one a target retrying
// unknowns is configured for) answers a key it accepted before with 204
// and does not act on it again; one that does not acts on every ok.
func TestReceiverDedupe(t *testing.T) {
	for _, dedupe := range []bool{false, true} {
		rc := newReceiver(1, 10*time.Millisecond)
		rc.quiet()
		rc.dedupe = dedupe
		url, stop, err := serve(rc)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			req, _ := http.NewRequest(http.MethodPost, url+"/receipts", strings.NewReader(`{"invoice_id":"in_1"}`))
			req.Header.Set("Idempotency-Key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Errorf("dedupe %t: %d, want 204", dedupe, resp.StatusCode)
			}
		}
		stop()
		acted := 0
		for _, r := range rc.received() {
			if r.Answer == answerOK || r.Answer == answerHang {
				acted++
			}
		}
		if want := map[bool]int{false: 3, true: 1}[dedupe]; acted != want || !rc.acted("k") {
			t.Errorf("dedupe %t: acted %d times, want %d", dedupe, acted, want)
		}
	}
}
