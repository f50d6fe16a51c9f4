package handlers

import (
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// corpus reads a real payload from the repository's testdata/corpus.
func corpus(tb testing.TB, path ...string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "testdata", "corpus"}, path...)...))
	if err != nil {
		tb.Fatalf("read corpus: %v", err)
	}
	return b
}

// mustPlan runs h and requires a plan that validates.
func mustPlan(tb testing.TB, h effects.Handler, ev inbox.Event) effects.Plan {
	tb.Helper()
	plan, err := h(context.Background(), ev)
	if err != nil {
		tb.Fatalf("handler: got error %v, want a plan", err)
	}
	if err := plan.Validate(); err != nil {
		tb.Fatalf("plan does not validate: %v\n%s", err, describe(plan))
	}
	return plan
}

// mustRefuse runs h and requires a permanent error and an empty plan.
func mustRefuse(tb testing.TB, h effects.Handler, ev inbox.Event) error {
	tb.Helper()
	plan, err := h(context.Background(), ev)
	if !effects.IsPermanent(err) {
		tb.Fatalf("handler: got error %v, want a permanent error", err)
	}
	if plan.Len() != 0 {
		tb.Errorf("handler: got %d parts with the error, want none:\n%s", plan.Len(), describe(plan))
	}
	return err
}

// samePlan requires got to be want, part for part.
func samePlan(tb testing.TB, got, want effects.Plan) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Errorf("got plan\n%s\nwant plan\n%s", describe(got), describe(want))
	}
}

// sameIDs requires the plans to declare the same parts' identities.
func sameIDs(tb testing.TB, got, want effects.Plan) {
	tb.Helper()
	if g, w := got.IDs(), want.IDs(); !reflect.DeepEqual(g, w) {
		tb.Errorf("got IDs %q, want %q", g, w)
	}
}

// describe renders a plan readably: pointers followed, bodies as text.
func describe(p effects.Plan) string {
	var b strings.Builder
	for _, f := range p.Facts {
		fmt.Fprintf(&b, "  fact %s %v\n", f.ID(), f.Attributes)
	}
	for _, u := range p.Updates {
		fmt.Fprintf(&b, "  update %s set=%v add=%v after=%q", u.ID(), u.Set, u.Add, u.After)
		if u.Order != nil {
			fmt.Fprintf(&b, " order=%+v", *u.Order)
		}
		if u.Transition != nil {
			fmt.Fprintf(&b, " transition=%+v", *u.Transition)
		}
		b.WriteString("\n")
	}
	for _, o := range p.Outbound {
		fmt.Fprintf(&b, "  outbound %s action=%q target=%q of=%q body=%s\n", o.ID(), o.Action, o.Target, o.Of, o.Body)
	}
	if b.Len() == 0 {
		return "  (empty)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestRoutes(t *testing.T) {
	routes := Routes(nil)
	tests := []struct {
		kind, typ string
		want      effects.Handler
	}{
		{"stripe", "invoice.paid", StripeInvoicePaid},
		{"stripe", "invoice.payment_succeeded", StripeInvoicePaid},
		{"stripe", "customer.subscription.created", StripeSubscription},
		{"stripe", "customer.subscription.updated", StripeSubscription},
		{"stripe", "customer.subscription.deleted", StripeSubscription},
		{"github", "push", GitHubPush},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.typ, func(t *testing.T) {
			got := routes[tt.kind][tt.typ]
			if got == nil {
				t.Fatal("got no handler, want one")
			}
			if g, w := reflect.ValueOf(got).Pointer(), reflect.ValueOf(tt.want).Pointer(); g != w {
				t.Errorf("got handler %#x, want %#x", g, w)
			}
		})
	}
	// Every route has a handler; the shipped ones are those listed above,
	// and a team's own are added beside them without touching this test.
	for kind, types := range routes {
		for typ, h := range types {
			if h == nil {
				t.Errorf("%s/%s: a route with no handler", kind, typ)
			}
		}
	}
}

// FuzzHandlers runs every routed handler on arbitrary bytes: none may
// panic, and every plan one returns must validate (the processor would
// otherwise refuse it as a permanent error the handler did not report).
func FuzzHandlers(f *testing.F) {
	for _, name := range []string{
		"invoice.paid.json", "invoice.payment_succeeded.json", "invoice.payment_failed.json",
		"customer.subscription.created.json", "customer.subscription.updated.json",
		"customer.subscription.deleted.json", "charge.refunded.json",
	} {
		f.Add(corpus(f, "stripe", name), int64(1721954100000))
	}
	for _, name := range []string{"payload.json", "with-new-branch.payload.json", "with-no-username-committer.payload.json"} {
		f.Add(corpus(f, "github", "push", name), int64(0))
	}
	f.Add([]byte(`{"ref":"r","after":"a","repository":{"full_name":"o/r","pushed_at":"2024-01-01T00:00:00Z"},"commits":[{"id":"a"},{"id":"a","distinct":false}]}`), int64(0))
	f.Add([]byte(`payload=%7B%22ref%22%3A%22r%22%7D`), int64(0))
	f.Add([]byte(`{"data":{"object":{"object":"invoice","id":"in_\u0001","amount_paid":1,"currency":"usd","customer":{"id":"c"}}}}`), int64(-1))
	f.Add([]byte(``), int64(0))

	routes := Routes(nil)
	f.Fuzz(func(t *testing.T, payload []byte, createdMillis int64) {
		for kind, types := range routes {
			for typ, h := range types {
				ev := inbox.Event{
					Key:     inbox.Key{Source: kind, EventID: "evt_fuzz"},
					Kind:    kind,
					Type:    typ,
					Payload: payload,
				}
				if createdMillis != 0 {
					ev.Created = time.UnixMilli(createdMillis)
				}
				plan, err := h(context.Background(), ev)
				if err != nil {
					if plan.Len() != 0 {
						t.Errorf("%s %s: got %d parts with error %v, want none", kind, typ, plan.Len(), err)
					}
					continue
				}
				if err := plan.Validate(); err != nil {
					t.Errorf("%s %s: got a plan that does not validate (%v), want a valid plan or an error:\n%s", kind, typ, err, describe(plan))
				}
			}
		}
	})
}

// TestStripeModes: a Stripe source takes the events of its own mode only
// — a test-mode event on a live source, a live one on a test source, or
// one that does not say, is a permanent error with nothing declared — and
// a source set to "any", or not named, takes both.
func TestStripeModes(t *testing.T) {
	routes := Routes(StripeModes{"live": "live", "test": "test", "both": "any"})
	body := func(livemode string) []byte {
		b := corpus(t, "stripe", "invoice.paid.json")
		return bytes.ReplaceAll(b, []byte(`"livemode": false`), []byte(livemode))
	}
	if !bytes.Contains(corpus(t, "stripe", "invoice.paid.json"), []byte(`"livemode": false`)) {
		t.Fatal("the corpus invoice.paid no longer says \"livemode\": false")
	}
	for _, tt := range []struct {
		source, livemode string
		refused          bool
	}{
		{"live", `"livemode": true`, false},
		{"live", `"livemode": false`, true},
		{"live", `"livemode_absent": false`, true},
		{"test", `"livemode": false`, false},
		{"test", `"livemode": true`, true},
		{"both", `"livemode": true`, false},
		{"both", `"livemode": false`, false},
		{"unnamed", `"livemode": true`, false},
	} {
		for _, typ := range []string{"invoice.paid", "customer.subscription.updated"} {
			payload := body(tt.livemode)
			if typ != "invoice.paid" {
				payload = bytes.ReplaceAll(corpus(t, "stripe", "customer.subscription.updated.json"), []byte(`"livemode": false`), []byte(tt.livemode))
			}
			ev := inbox.Event{Key: inbox.Key{Source: tt.source, EventID: "evt_mode"}, Kind: "stripe", Type: typ, Payload: payload, Created: time.Unix(1721954100, 0)}
			plan, err := routes["stripe"][typ](context.Background(), ev)
			switch {
			case tt.refused && (!effects.IsPermanent(err) || plan.Len() != 0 || !strings.Contains(err.Error(), "source")):
				t.Errorf("%s %s %s: got %d parts, %v; want a permanent refusal naming the source", tt.source, typ, tt.livemode, plan.Len(), err)
			case !tt.refused && (err != nil || plan.Len() == 0):
				t.Errorf("%s %s %s: got %d parts, %v; want the plan", tt.source, typ, tt.livemode, plan.Len(), err)
			}
		}
	}
}

// TestRoomImports: the handlers' room imports only the effect model and
// the event (and the standard library), so a team's code here never
// depends on the framework's storage, network or protocol.
func TestRoomImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/webhook-inbox/webhook-inbox/internal/effects": true,
		"github.com/webhook-inbox/webhook-inbox/internal/inbox":   true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if strings.Contains(path, ".") && !allowed[path] {
				t.Errorf("%s imports %s: the room imports only internal/effects and internal/inbox", f, path)
			}
		}
	}
}
