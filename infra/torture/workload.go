//go:build linux

package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// event is one provider event of the workload: what is sent, and what it
// should do.
type event struct {
	Source string // "stripe" or "github"
	// Account is the Stripe tenant (one of tenants), "" for GitHub: its
	// path account and its secret.
	Account string
	ID      string // the provider's event id (GitHub: the delivery id)
	Type    string
	Body    []byte

	// What the event is about, for the audit.
	Invoice      *invoice
	Subscription string
	Status       string
	Created      int64 // Stripe's created, for the subscription order
	Push         *push
	// Mailgun is set for a Mailgun event: its Body is made when the run
	// starts (the signature object holds the time), from EventData.
	Mailgun *mailgunEvent
}

// mailgunEvent is a Mailgun event: Mailgun signs only a timestamp and a
// token, so each delivery carries the one signature object made for the
// event, and a forgery reuses it with another body (see forge).
type mailgunEvent struct {
	Token     string
	EventData []byte
}

// key is the event's inbox key, as the table names it.
func (e *event) key() string { return e.inboxKey().String() }

func (e *event) inboxKey() inbox.Key {
	return inbox.Key{Source: e.Source, Account: e.Account, EventID: e.ID}
}

// scope is the scope its parts are stored in.
func (e *event) scope() string { return inbox.ScopeOf(e.Source, e.inboxKey()) }

// path is where it is posted.
func (e *event) path() string {
	if e.Account == "" {
		return "/webhooks/" + e.Source
	}
	return "/webhooks/" + e.Source + "/" + e.Account
}

// tenants are the Stripe accounts the workload sends as: two tenants of
// one source, sharing business ids (invoices, customers, subscriptions)
// that must stay apart.
var tenants = [...]string{"acct_a", "acct_b"}

// stripeScope is the scope of a Stripe tenant's parts.
func stripeScope(tenant string) string { return inbox.ScopeOf("stripe", inbox.Key{Account: tenant}) }

// tenantOf is the tenant of a stored row key (the scope it is in), ""
// when it is in none of the tenants' scopes.
func tenantOf(key string) string {
	for _, t := range tenants {
		if strings.HasPrefix(key, effects.ScopedKey(stripeScope(t), "")) {
			return t
		}
	}
	return ""
}

type invoice struct {
	// Tenant and ID are its identity: the same ID under two tenants is
	// two invoices.
	Tenant       string
	ID, Customer string
	Amount       int64
	PeriodEnd    int64
}

type push struct {
	Branch  string // "<repo>:<ref>", the BranchEntity key
	Repo    string
	Ref     string
	After   string
	At      int64 // pushed_at, epoch seconds
	Commits []string
}

// delivery is one send of an event; a burst is Copies identical
// deliveries at once.
type delivery struct {
	Event  *event
	Copies int
}

// workload is the events and their deliveries in send order.
type workload struct {
	Events     []*event
	Deliveries []delivery
	// Counts by kind, for the report.
	Invoices, Subscriptions, Branches int
	Bursts                            int
	// Shared counts the invoice and subscription ids under both tenants.
	Shared int
	// Large counts the events whose payload goes to the S3 claim check.
	Large int
	// Mailgun counts the Mailgun events: beyond n, each to be forged once
	// after the run's deliveries.
	Mailgun int
	// large is the fraction of invoice events sent large.
	large float64
}

// Sizes of the workload's pieces.
const (
	burstSize     = 20
	burstFraction = 0.02
)

// generate builds n events from the seed: invoices (most sent as both
// invoice.paid and invoice.payment_succeeded, the same fact twice), the
// life of many subscriptions (one of them long, all shuffled among the
// rest), and pushes to a few branches (some commits pushed twice). Each
// event is delivered 1 to 5 times, a few as a burst of 20 identical
// deliveries at once; the order of all deliveries is shuffled.
//
// A fraction large of the invoice events carry a description of
// largeBytes of random text: over the claim check's limit even
// compressed, so their payloads go to S3.
func generate(n int, seed uint64, large float64) *workload {
	r := rand.New(rand.NewPCG(seed, 0x70727475))
	w := &workload{large: large}
	base := int64(1767225600) // 2026-01-01
	tag := fmt.Sprintf("t%d", seed)

	customers := max(3, n/40)
	nInvoices, nSubs := n*45/100, n*35/100
	nPushes := n - nInvoices - nSubs

	// Invoices: one or two events each, each under a tenant; a quarter
	// of them twice, the same invoice id (and event ids) under the other
	// tenant too, for another customer and amount: two invoices.
	for i := 0; len(w.Events) < nInvoices; i++ {
		t := r.IntN(len(tenants))
		owners := []string{tenants[t]}
		if r.IntN(4) == 0 {
			owners = append(owners, tenants[1-t])
		}
		for k, tenant := range owners {
			if len(w.Events) >= nInvoices {
				break
			}
			if k == 1 {
				w.Shared++
			}
			w.invoice(r, tenant, i, tag, base, customers, nInvoices)
		}
	}

	// Subscriptions: a life of created, updates and sometimes deleted,
	// each under a tenant, a quarter under both (the same subscription id
	// and event ids, two lives). The first is long, so that many of its
	// events overtake each other.
	for sn := 0; len(w.Events) < nInvoices+nSubs; sn++ {
		t := r.IntN(len(tenants))
		owners := []string{tenants[t]}
		if r.IntN(4) == 0 {
			owners = append(owners, tenants[1-t])
		}
		for k, tenant := range owners {
			if len(w.Events) >= nInvoices+nSubs {
				break
			}
			if k == 1 {
				w.Shared++
			}
			life := 2 + r.IntN(5)
			if sn == 0 {
				life = min(60, max(4, nSubs/4))
			}
			w.subscription(r, tenant, sn, tag, base, customers, min(life, nInvoices+nSubs-len(w.Events)))
		}
	}

	// Pushes: to a few branches of a few repositories, each with one to
	// three commits, a fifth of them carrying again a commit an earlier
	// push to the repository carried.
	branches := max(2, nPushes/20)
	w.Branches = branches
	at := map[string]int64{}
	seen := map[string][]string{}
	for p := 0; p < nPushes; p++ {
		b := r.IntN(branches)
		repo := fmt.Sprintf("torture/repo-%s-%d", tag, b%5)
		ref := fmt.Sprintf("refs/heads/b%d", b)
		branch := repo + ":" + ref
		at[branch] += int64(1 + r.IntN(600))
		ps := &push{Branch: branch, Repo: repo, Ref: ref, After: sha(r), At: base + at[branch]}
		var commits []byte
		for c := range 1 + r.IntN(3) {
			id := sha(r)
			distinct := true
			if c == 0 && len(seen[repo]) > 0 && r.IntN(5) == 0 {
				id, distinct = seen[repo][r.IntN(len(seen[repo]))], false
			}
			if c == 0 && distinct {
				id = ps.After
			}
			if !slices.Contains(ps.Commits, id) {
				ps.Commits = append(ps.Commits, id)
			}
			seen[repo] = append(seen[repo], id)
			if len(commits) > 0 {
				commits = append(commits, ',')
			}
			commits = fmt.Appendf(commits, `{"id":%q,"distinct":%t,"message":"change %d","timestamp":%q,"author":{"name":"T","email":"t@example.com","username":"torture"}}`,
				id, distinct, p, time.Unix(ps.At-60, 0).UTC().Format(time.RFC3339))
		}
		ev := &event{Source: "github", ID: uuidFrom(r), Type: "push", Push: ps}
		ev.Body = fmt.Appendf(nil, `{"ref":%q,"before":%q,"after":%q,"created":false,"deleted":false,"forced":false,"repository":{"id":%d,"name":"repo","full_name":%q,"pushed_at":%d},"head_commit":{"id":%q,"timestamp":%q},"commits":[%s]}`,
			ref, sha(r), ps.After, 1000+b%5, repo, ps.At, ps.After, time.Unix(ps.At-60, 0).UTC().Format(time.RFC3339), commits)
		w.Events = append(w.Events, ev)
	}

	// Deliveries: 1 to 5 of each event, a few as a burst.
	weights := []int{40, 25, 15, 10, 10}
	for _, ev := range w.Events {
		times := 1
		for x := r.IntN(100); x >= weights[times-1]; times++ {
			x -= weights[times-1]
		}
		for k := range times {
			d := delivery{Event: ev, Copies: 1}
			if k == 0 && r.Float64() < burstFraction {
				d.Copies = burstSize
				w.Bursts++
			}
			w.Deliveries = append(w.Deliveries, d)
		}
	}
	r.Shuffle(len(w.Deliveries), func(i, j int) { w.Deliveries[i], w.Deliveries[j] = w.Deliveries[j], w.Deliveries[i] })
	w.mailgun(seed, max(1, n/50))
	return w
}

// mailgun adds m Mailgun events beyond the n of generate, each delivered
// 1 to 3 times, at places drawn from a stream of their own (the rest of
// the workload is the same as without them).
func (w *workload) mailgun(seed uint64, m int) {
	r := rand.New(rand.NewPCG(seed, 0x6d61696c))
	types := []string{"delivered", "opened", "clicked", "failed"}
	for i := range m {
		id := strings.ReplaceAll(uuidFrom(r), "-", "")[:22]
		typ := types[r.IntN(len(types))]
		ev := &event{Source: "mailgun", ID: id, Type: typ, Mailgun: &mailgunEvent{
			Token:     sha(r) + sha(r)[:10],
			EventData: fmt.Appendf(nil, `{"id":%q,"event":%q,"timestamp":%d.%06d,"recipient":"user-%d@example.com","message":{"headers":{"message-id":"%s@torture.example"}}}`, id, typ, 1767225600+int64(i), r.IntN(1e6), i, id),
		}}
		w.Events = append(w.Events, ev)
		w.Mailgun++
		for range 1 + r.IntN(3) {
			at := r.IntN(len(w.Deliveries) + 1)
			w.Deliveries = slices.Insert(w.Deliveries, at, delivery{Event: ev, Copies: 1})
		}
	}
}

// signMailgun makes each Mailgun event's body, its signature object
// signed at now under key: every delivery of the event sends these bytes.
func (w *workload) signMailgun(key []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, ev := range w.Events {
		if m := ev.Mailgun; m != nil {
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte(ts + m.Token))
			ev.Body = fmt.Appendf(nil, `{"signature":{"timestamp":%q,"token":%q,"signature":%q},"event-data":%s}`,
				ts, m.Token, hex.EncodeToString(mac.Sum(nil)), m.EventData)
		}
	}
}

// forge is a delivery that reuses ev's signature object with another
// event: what someone holding one Mailgun delivery could send. Ingest must
// refuse it (the token is taken with ev's body).
func (ev *event) forge() *event {
	sigEnd := bytes.Index(ev.Body, []byte(`,"event-data":`))
	id := "forged" + ev.ID
	f := &event{Source: ev.Source, ID: id, Type: ev.Type}
	f.Body = fmt.Appendf(append([]byte(nil), ev.Body[:sigEnd]...), `,"event-data":{"id":%q,"event":%q}}`, id, ev.Type)
	return f
}

// invoice adds the events of invoice i of tenant: invoice.paid, and
// sometimes invoice.payment_succeeded too (the same fact twice).
func (w *workload) invoice(r *rand.Rand, tenant string, i int, tag string, base int64, customers, limit int) {
	inv := &invoice{
		Tenant:    tenant,
		ID:        fmt.Sprintf("in_%s_%05d", tag, i),
		Customer:  fmt.Sprintf("cus_%s_%03d", tag, r.IntN(customers)),
		Amount:    int64(500 + r.IntN(5000)),
		PeriodEnd: base + int64(r.IntN(365))*86400,
	}
	w.Invoices++
	types := []string{"invoice.paid"}
	if r.IntN(2) == 0 && len(w.Events)+1 < limit {
		types = append(types, "invoice.payment_succeeded")
	}
	for j, typ := range types {
		ev := &event{Source: "stripe", Account: tenant, ID: fmt.Sprintf("evt_%s_in%05d_%d", tag, i, j), Type: typ, Invoice: inv,
			Created: base + int64(r.IntN(86400))}
		description := "Subscription"
		if r.Float64() < w.large {
			w.Large++
			description = largeText(uint64(i)<<8 | uint64(j))
		}
		ev.Body = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","type":%q,"created":%d,"livemode":false,"data":{"object":{"id":%q,"object":"invoice","amount_paid":%d,"currency":"eur","customer":%q,"description":%q,"period_end":%d,"lines":{"object":"list","data":[{"object":"line_item","period":{"start":%d,"end":%d}}]}}}}`,
			ev.ID, typ, ev.Created, inv.ID, inv.Amount, inv.Customer, description, inv.PeriodEnd-30*86400, inv.PeriodEnd-30*86400, inv.PeriodEnd)
		w.Events = append(w.Events, ev)
	}
}

// subscriptionStates are the states a subscription's updates move it to.
var subscriptionStates = []string{"active", "past_due", "active", "unpaid", "paused", "trialing", "active"}

// subscription adds the life of subscription sn of tenant, life events
// long.
func (w *workload) subscription(r *rand.Rand, tenant string, sn int, tag string, base int64, customers, life int) {
	id := fmt.Sprintf("sub_%s_%04d", tag, sn)
	customer := fmt.Sprintf("cus_%s_%03d", tag, r.IntN(customers))
	w.Subscriptions++
	created := base + int64(r.IntN(86400))
	for k := range life {
		typ, status := "customer.subscription.updated", subscriptionStates[r.IntN(len(subscriptionStates))]
		switch {
		case k == 0:
			typ, status = "customer.subscription.created", []string{"incomplete", "trialing", "active"}[r.IntN(3)]
		case k == life-1 && r.IntN(3) == 0:
			typ, status = "customer.subscription.deleted", "canceled"
		}
		created += int64(1 + r.IntN(3600))
		ev := &event{Source: "stripe", Account: tenant, ID: fmt.Sprintf("evt_%s_sub%04d_%02d", tag, sn, k), Type: typ,
			Subscription: id, Status: status, Created: created}
		ev.Body = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","type":%q,"created":%d,"livemode":false,"data":{"object":{"id":%q,"object":"subscription","status":%q,"customer":%q,"current_period_end":%d}}}`,
			ev.ID, typ, created, id, status, customer, created+30*86400)
		w.Events = append(w.Events, ev)
	}
}

// sends is the number of HTTP deliveries the workload makes (bursts
// counted by their copies), before any retry.
func (w *workload) sends() int {
	n := 0
	for _, d := range w.Deliveries {
		n += d.Copies
	}
	return n
}

// largeBytes is the size of a large event's description: random hex,
// which gzip halves, so 48 KiB is over the claim check's 16 KiB inline
// limit.
const largeBytes = 48 << 10

func largeText(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 0x6c617267))
	b := make([]byte, largeBytes/2)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

func sha(r *rand.Rand) string {
	b := make([]byte, 20)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

func uuidFrom(r *rand.Rand) string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// secrets are the signing secrets the workload uses: each Stripe
// tenant's, and GitHub's.
type secrets struct {
	Stripe map[string][]byte
	GitHub []byte
}

// request signs the event's delivery at now, as its provider would.
func (e *event) request(s secrets, now time.Time) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	switch e.Source {
	case "stripe":
		h.Set("Stripe-Signature", signature.SignStripe(e.Body, s.Stripe[e.Account], now))
	case "mailgun":
		h.Set("User-Agent", "mailgun/torture")
	case "github":
		h.Set("X-GitHub-Event", e.Type)
		h.Set("X-GitHub-Delivery", e.ID)
		h.Set("X-Hub-Signature-256", signature.SignGitHub(e.Body, s.GitHub))
		h.Set("User-Agent", "GitHub-Hookshot/torture")
	}
	return h
}
