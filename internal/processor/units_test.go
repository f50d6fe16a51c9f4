package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// TestUnitsPerPath: the write units a real Stripe invoice.paid (the
// corpus's, 6,374 bytes) costs on each path, as DynamoDB reports them
// (dynoxide, ReturnConsumedCapacity TOTAL: the table and the unfinished
// index), against the design's arithmetic. A write costs a unit per KB of
// the item, rounded up, twice inside a transaction, plus one for an index
// entry it writes. With the payload gzip-compressed (1,672 bytes) the event
// item is about 2.2 KB: 3 units a write, 4 with its index entry; with the
// payload as received it was 7 and 8. A change that makes the item larger
// fails here.
//
//	                    compressed   as received (measured before)
//	ingest, new              4              8
//	ingest, duplicate        4              8   (DynamoDB bills a refused condition as the write; dynoxide reports 0)
//	process                 26             45   (claim, the commit's transaction with the fact, two
//	                                             entities and the receipt row, the row's claim and
//	                                             delivery, the outbox's settlement)
func TestUnitsPerPath(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer receiver.Close()
	store, p, cc := measuredExamples(t, receiver.URL)
	payload, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", "stripe", "invoice.paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var id struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(payload, &id); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := inbox.Key{Source: "stripe", EventID: id.ID}
	now := time.Now()
	ev := inbox.Event{
		Key: k, Kind: "stripe", Type: "invoice.paid", Created: time.Unix(1764500000, 0), Payload: payload,
		Headers:   map[string]string{"Stripe-Signature": "t=1764500000,v1=" + string(bytes.Repeat([]byte("a"), 64)), "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		RequestID: "Sx1mPhLvIAMEVKQ=", Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
	}
	step := func(name string, want float64, f func()) {
		t.Helper()
		cc.Reset()
		f()
		u := cc.Units()
		got := u.Write
		t.Logf("%-18s %4.0f write units %v", name, got, u.WriteBy)
		if got > want {
			t.Errorf("%s: %.0f write units, over the design's %.0f", name, got, want)
		}
	}
	step("ingest, new", 4, func() {
		if _, err := store.Insert(ctx, ev, now); err != nil {
			t.Fatal(err)
		}
	})
	step("ingest, duplicate", 4, func() {
		if _, err := store.Insert(ctx, ev, now); err == nil {
			t.Fatal("a duplicate was stored")
		}
	})
	step("process", 26, func() {
		resp, err := p.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{sqsMessage(t, "m1", k)}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("got %v, %v", resp.BatchItemFailures, err)
		}
	})
	mustSettled(t, store, k)
}
