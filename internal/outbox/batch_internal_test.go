package outbox

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	b := newBatcher(busFunc(func(_ context.Context, entries []BusEntry) ([]BusOutcome, error) {
		calls.Add(1)
		out := make([]BusOutcome, len(entries))
		for i := range out {
			out[i].EventID = "id"
		}
		return out, nil
	}), func() time.Time { return now })
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
		{"time enough", context.Background(), now.Add(5*time.Second + finishTimeout), Delivered},
		{"lease ends first", context.Background(), now.Add(4 * time.Second), Failed},
		{"no time left to record the outcome", context.Background(), now.Add(6 * time.Second), Failed},
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
		coming, lanes := b.coming, len(b.lanes)
		b.mu.Unlock()
		if coming == 0 && lanes == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("left coming %d, %d lanes", coming, lanes)
		}
	}
}

// TestBatcherLingerBounded: an entry on its way holds a request back for
// the linger only: a ticket never used nor dropped (a row whose claim
// hangs) does not stop the others' request.
func TestBatcherLingerBounded(t *testing.T) {
	put := make(chan int, 1)
	b := newBatcher(busFunc(func(_ context.Context, entries []BusEntry) ([]BusOutcome, error) {
		put <- len(entries)
		return []BusOutcome{{EventID: "id"}}, nil
	}), time.Now)
	stuck := b.expect()
	defer stuck.drop()
	done := make(chan Result, 1)
	go func() {
		res, _ := b.put(context.Background(), b.expect(), Target{Timeout: time.Second}, BusEntry{Bus: "b"}, 10, time.Now().Add(time.Minute))
		done <- res
	}()
	select {
	case res := <-done:
		if res.State != Delivered || <-put != 1 {
			t.Fatalf("%+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an entry on its way held the request back for good")
	}
}

// TestBatcherGathersOnItsWay: entries whose tickets were taken together
// go in one request, however their puts are scheduled, while the linger
// lasts.
func TestBatcherGathersOnItsWay(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	b := newBatcher(busFunc(func(_ context.Context, entries []BusEntry) ([]BusOutcome, error) {
		mu.Lock()
		sizes = append(sizes, len(entries))
		mu.Unlock()
		return make([]BusOutcome, len(entries)), nil
	}), time.Now)
	b.linger = time.Hour
	var tickets []*ticket
	for range 4 {
		tickets = append(tickets, b.expect())
	}
	var wg sync.WaitGroup
	for i, tk := range tickets {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			b.put(context.Background(), tk, Target{Timeout: time.Second}, BusEntry{Bus: "b"}, 10, time.Now().Add(time.Minute))
		})
	}
	wg.Wait()
	if len(sizes) != 1 || sizes[0] != 4 {
		t.Fatalf("requests of %v entries, want one of 4", sizes)
	}
}

// TestBatcherSplitsAtOnce: a request of several refused as invalid is made
// again one entry at a time, the entries at once: each single request
// needs only its own call's time, not the others' before it.
func TestBatcherSplitsAtOnce(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	b := newBatcher(busFunc(func(_ context.Context, entries []BusEntry) ([]BusOutcome, error) {
		mu.Lock()
		sizes = append(sizes, len(entries))
		mu.Unlock()
		if len(entries) > 1 {
			return nil, &PutError{Failure: PutInvalid, StatusCode: 400, Err: errors.New("ValidationException")}
		}
		time.Sleep(time.Second)
		return []BusOutcome{{EventID: "id"}}, nil
	}), time.Now)
	b.linger = time.Hour
	// A single call may take 1.5 s and the callers have 2 s: one after
	// the other, the second single would start after 1 s, too late.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var tickets []*ticket
	for range 3 {
		tickets = append(tickets, b.expect())
	}
	results := make([]Result, len(tickets))
	var wg sync.WaitGroup
	for i, tk := range tickets {
		wg.Go(func() {
			results[i], _ = b.put(ctx, tk, Target{Timeout: 1500 * time.Millisecond}, BusEntry{Bus: "b"}, 10, time.Now().Add(time.Minute))
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.State != Delivered {
			t.Errorf("entry %d: %s (%s), want delivered", i, r.State, r.Cause)
		}
	}
	if len(sizes) != 4 || sizes[0] != 3 {
		t.Errorf("requests of %v entries, want 3 refused, then each alone", sizes)
	}
}
