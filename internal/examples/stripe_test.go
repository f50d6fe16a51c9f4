package examples

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// corpus reads a real Stripe payload from the repository's testdata.
func corpus(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", "stripe", name))
	if err != nil {
		tb.Fatalf("read corpus: %v", err)
	}
	return b
}

func event(payload []byte) inbox.Event {
	return inbox.Event{
		Key:     inbox.Key{Source: "stripe", EventID: "evt_test"},
		Kind:    "stripe",
		Type:    "invoice.paid",
		Payload: payload,
	}
}

func mustPlan(tb testing.TB, payload []byte) effects.Plan {
	tb.Helper()
	plan, err := StripeInvoicePaid(context.Background(), event(payload))
	if err != nil {
		tb.Fatalf("StripeInvoicePaid: %v", err)
	}
	if err := plan.Validate(); err != nil {
		tb.Fatalf("plan does not validate: %v", err)
	}
	return plan
}

func TestStripeInvoicePaidCorpus(t *testing.T) {
	plan := mustPlan(t, corpus(t, "invoice.paid.json"))
	if len(plan.Records) != 1 {
		t.Fatalf("got %d records, want 1", len(plan.Records))
	}
	got := plan.Records[0]
	want := effects.Record{
		Kind: "invoice_paid",
		Key:  "in_1Pgc6tB7WZ01zgkWu9fdqL6I",
		Attributes: map[string]any{
			"invoice_id":  "in_1Pgc6tB7WZ01zgkWu9fdqL6I",
			"amount_paid": int64(1000),
			"currency":    "usd",
			"customer":    "cus_QXg1o8vcGmoR32",
			"livemode":    false,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// invoice.paid and invoice.payment_succeeded for one invoice declare the
// same record, so the second can never record the invoice again.
func TestStripeInvoicePaidSameInvoiceSameRecord(t *testing.T) {
	paid := mustPlan(t, corpus(t, "invoice.paid.json"))
	succeeded := mustPlan(t, corpus(t, "invoice.payment_succeeded.json"))
	if len(paid.Records) != 1 || len(succeeded.Records) != 1 {
		t.Fatalf("got %d and %d records, want 1 and 1", len(paid.Records), len(succeeded.Records))
	}
	if got, want := succeeded.Records[0].ID(), paid.Records[0].ID(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := paid.Without([]string{succeeded.Records[0].ID()}); len(got.Records) != 0 {
		t.Errorf("Without the other event's record: got %v, want no records", got.Records)
	}
}

func TestStripeInvoicePaidCustomer(t *testing.T) {
	tests := []struct {
		name     string
		customer string // JSON value of data.object.customer
		want     any    // nil means no customer attribute
	}{
		{"id", `"cus_1"`, "cus_1"},
		{"expanded object", `{"id":"cus_x","object":"customer","email":"a@example.com"}`, "cus_x"},
		{"expanded object without id", `{"object":"customer"}`, nil},
		{"null", `null`, nil},
		{"number", `42`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := []byte(`{"data":{"object":{"id":"in_1","object":"invoice","amount_paid":500,"currency":"eur","customer":` + tt.customer + `}},"livemode":true}`)
			plan := mustPlan(t, payload)
			if len(plan.Records) != 1 {
				t.Fatalf("got %d records, want 1", len(plan.Records))
			}
			attrs := plan.Records[0].Attributes
			got, ok := attrs["customer"]
			if tt.want == nil {
				if ok {
					t.Errorf("customer: got %#v, want none", got)
				}
			} else if got != tt.want {
				t.Errorf("customer: got %#v, want %#v", got, tt.want)
			}
			if attrs["amount_paid"] != int64(500) || attrs["currency"] != "eur" || attrs["livemode"] != true {
				t.Errorf("got %v, want amount_paid 500, currency eur, livemode true", attrs)
			}
		})
	}
}

func TestStripeInvoicePaidZeroAmount(t *testing.T) {
	plan := mustPlan(t, []byte(`{"data":{"object":{"id":"in_0","object":"invoice","amount_paid":0,"currency":"usd"}}}`))
	if got := plan.Records[0].Attributes["amount_paid"]; got != int64(0) {
		t.Errorf("amount_paid: got %#v, want int64(0)", got)
	}
}

func TestStripeInvoicePaidMalformed(t *testing.T) {
	tests := []struct {
		name    string
		payload string
	}{
		{"empty", ``},
		{"not json", `invoice paid`},
		{"truncated", `{"data":{"object":{"id":"in_1"`},
		{"empty object", `{}`},
		{"null", `null`},
		{"array", `[]`},
		{"no data.object", `{"data":{}}`},
		{"not an invoice", `{"data":{"object":{"id":"ch_1","object":"charge","amount_paid":100}}}`},
		{"missing object type", `{"data":{"object":{"id":"in_1","amount_paid":100}}}`},
		{"missing id", `{"data":{"object":{"object":"invoice","amount_paid":100}}}`},
		{"missing amount_paid", `{"data":{"object":{"id":"in_1","object":"invoice","currency":"usd"}}}`},
		{"null amount_paid", `{"data":{"object":{"id":"in_1","object":"invoice","amount_paid":null}}}`},
		{"string amount_paid", `{"data":{"object":{"id":"in_1","object":"invoice","amount_paid":"100"}}}`},
		{"fractional amount_paid", `{"data":{"object":{"id":"in_1","object":"invoice","amount_paid":1.5}}}`},
		{"data.object is a string", `{"data":{"object":"in_1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := StripeInvoicePaid(context.Background(), event([]byte(tt.payload)))
			if !effects.IsPermanent(err) {
				t.Fatalf("got %v, want a permanent error", err)
			}
			if len(plan.Records) != 0 {
				t.Errorf("got %d records with the error, want none", len(plan.Records))
			}
		})
	}
}

// Other corpus events routed here by mistake are refused permanently, not
// retried and not recorded.
func TestStripeInvoicePaidOtherCorpusEvents(t *testing.T) {
	for _, name := range []string{"charge.refunded.json", "customer.created.json", "payment_intent.succeeded.json", "plan.created.json"} {
		t.Run(name, func(t *testing.T) {
			_, err := StripeInvoicePaid(context.Background(), event(corpus(t, name)))
			if !effects.IsPermanent(err) {
				t.Errorf("got %v, want a permanent error", err)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	h := Routes()["stripe"]["invoice.paid"]
	if h == nil {
		t.Fatal("no handler routed for stripe invoice.paid")
	}
	plan, err := h(context.Background(), event(corpus(t, "invoice.paid.json")))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Records) != 1 || plan.Records[0].Kind != InvoicePaidKind {
		t.Errorf("got %v, want one %s record", plan.Records, InvoicePaidKind)
	}
}
