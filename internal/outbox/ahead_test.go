package outbox_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// TestAhead: before its event's commit, a forwarding row of a route that
// retries unknowns is put from the event in hand (no read of the store)
// and reported accepted only for an entry EventBridge accepted; every
// other answer leaves the row to the outbox; a route that does not retry
// unknowns, and a row of another action, are not put.
func TestAhead(t *testing.T) {
	rows, err := forward.Outbound(forwarded, forward.Routes{{Source: "stripe", Bus: "inbox"}})
	if err != nil {
		t.Fatal(err)
	}
	http1 := effects.Outbound{Target: "receipt", Key: "r", Body: []byte(`{}`)}
	hang := func(w http.ResponseWriter, n int) { time.Sleep(time.Second); putOK(w, n) }
	for _, tc := range []struct {
		name         string
		answer       func(http.ResponseWriter, int)
		retryUnknown bool
		leaseEnd     time.Duration
		want         []bool
		puts         int
	}{
		{"accepted", putOK, true, time.Minute, []bool{true, false}, 1},
		{"entry refused", entryFailed("InternalFailure"), true, time.Minute, []bool{false, false}, 1},
		{"entry malformed", entryFailed("MalformedDetail"), true, time.Minute, []bool{false, false}, 1},
		{"throttled whole", apiError(400, "ThrottlingException"), true, time.Minute, []bool{false, false}, 1},
		{"outcome unknown", hang, true, time.Minute, []bool{false, false}, 1},
		{"no time left in the lease", putOK, true, time.Second, []bool{false, false}, 0},
		{"a route that does not retry unknowns", putOK, false, time.Minute, []bool{false, false}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bus := &fakeBus{answer: tc.answer}
			srv := bus.serve(t)
			// No event store: the event in hand is all a put before the
			// commit reads.
			d := newForwarder(t, newMemStore(), srv.URL, tc.retryUnknown, memEvents{})
			got, _ := d.Ahead(context.Background(), forwarded, []effects.Outbound{rows[0], http1}, t0.Add(tc.leaseEnd))
			if !slices.Equal(got, tc.want) {
				t.Errorf("accepted %v, want %v", got, tc.want)
			}
			if bus.count() != tc.puts {
				t.Errorf("%d entries put, want %d", bus.count(), tc.puts)
			}
			if tc.puts > 0 {
				var detail map[string]any
				if err := json.Unmarshal([]byte(bus.first()["Detail"].(string)), &detail); err != nil || detail[forward.MetaKey].(map[string]any)["event_key"] != evKey.String() {
					t.Errorf("detail %v (%v): want the payload with the event key", detail, err)
				}
			}
		})
	}
	t.Run("payload unreadable: nothing put", func(t *testing.T) {
		bus := &fakeBus{answer: putOK}
		srv := bus.serve(t)
		d := newForwarder(t, newMemStore(), srv.URL, true, failingPayload{})
		if got, _ := d.Ahead(context.Background(), forwarded, rows, t0.Add(time.Minute)); !slices.Equal(got, []bool{false}) || bus.count() != 0 {
			t.Errorf("accepted %v, %d put; want none", got, bus.count())
		}
	})
}

// failingPayload cannot read a payload (its object unreachable).
type failingPayload struct{ memEvents }

func (failingPayload) Payload(context.Context, inbox.Event) ([]byte, error) {
	return nil, inbox.ErrUnavailable
}
