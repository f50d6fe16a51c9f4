package outbox

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// busFunc is a Bus of one func field.
type busFunc func(context.Context, []BusEntry) ([]BusOutcome, error)

func (f busFunc) PutEntries(ctx context.Context, entries []BusEntry) ([]BusOutcome, error) {
	return f(ctx, entries)
}

// TestBatcherNeedsTime: an entry is put only if the request, bounded by
// its target's timeout, ends within the row's lease and the caller's
// deadline; otherwise it is failed as not sent, and nothing is put.
func TestBatcherNeedsTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	b := &batcher{now: func() time.Time { return now }, bus: busFunc(func(_ context.Context, entries []BusEntry) ([]BusOutcome, error) {
		calls.Add(1)
		out := make([]BusOutcome, len(entries))
		for i := range out {
			out[i].EventID = "id"
		}
		return out, nil
	})}
	entry := BusEntry{Source: "webhook-inbox.stripe"}
	target := Target{Timeout: 5 * time.Second}
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ended, end := context.WithCancel(context.Background())
	end()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		leaseEnd time.Time
		want     State
	}{
		{"time enough", context.Background(), now.Add(6 * time.Second), Delivered},
		{"lease ends first", context.Background(), now.Add(4 * time.Second), Failed},
		{"caller's deadline first", short, now.Add(time.Minute), Failed},
		{"caller gone", ended, now.Add(time.Minute), Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			got, _ := b.put(tc.ctx, b.expect(), target, entry, 30, tc.leaseEnd)
			if got.State != tc.want {
				t.Fatalf("%s (%s), want %s", got.State, got.Cause, tc.want)
			}
			if tc.want == Failed && (calls.Load() != before || !strings.Contains(got.Cause, "not sent")) {
				t.Errorf("%d calls, cause %q: want none, not sent", calls.Load()-before, got.Cause)
			}
		})
	}
	// Nothing left behind (a request's end is counted just after it
	// answers its entries).
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		coming, inFlight, waiting := b.coming, b.inFlight, len(b.queue)
		b.mu.Unlock()
		if coming == 0 && inFlight == 0 && waiting == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("left coming %d, in flight %d, waiting %d", coming, inFlight, waiting)
		}
	}
}
