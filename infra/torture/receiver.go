//go:build linux

package main

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"sync"
	"time"
)

// The receipt receiver's answers.
const (
	answerOK   = "ok"   // 204
	answer500  = "500"  // failed: the outcome is unknown to the sender
	answer503  = "503"  // failed: the sender may send again
	answerHang = "hang" // accepted, then no answer until past the sender's timeout
	answerDup  = "dup"  // 204 to a key accepted before, not acted on again (a deduping receiver)
)

// receiver is the receipt receiver: it accepts, fails or hangs, chosen
// from the seed and the request's key and attempt, and logs every request.
// Its log is the audit's record of what was received; accepted receipts
// (ok and hang) are the ones a customer would have got.
type receiver struct {
	seed uint64
	// Hang is how long a hanging answer waits: past the outbox's timeout.
	hang time.Duration
	// Percentages of 500, 503 and hang; the rest are ok.
	p500, p503, pHang int
	// Dedupe makes it the receiver a target retrying unknowns needs: a
	// request under a key it accepted before is answered 204 and not
	// acted on again (answerDup).
	dedupe bool

	mu    sync.Mutex
	tries map[string]int
	log   []receipt
	// took holds the keys of requests accepted (answered ok, or hung
	// after accepting them).
	took map[string]bool
}

// receipt is one request the receiver saw.
type receipt struct {
	Key     string // Idempotency-Key
	Invoice string
	Answer  string
}

func newReceiver(seed uint64, hang time.Duration) *receiver {
	return &receiver{seed: seed, hang: hang, p500: 7, p503: 7, pHang: 6, tries: map[string]int{}, took: map[string]bool{}}
}

// quiet makes every answer ok: the load benchmark's receiver.
func (rc *receiver) quiet() { rc.p500, rc.p503, rc.pHang = 0, 0, 0 }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return // the sender gave up mid-body: nothing received
	}
	var body struct {
		InvoiceID string `json:"invoice_id"`
	}
	_ = json.Unmarshal(b, &body)
	key := r.Header.Get("Idempotency-Key")

	rc.mu.Lock()
	try := rc.tries[key]
	rc.tries[key]++
	answer := rc.choose(key, try)
	if rc.dedupe && rc.accepted(key) {
		answer = answerDup
	}
	rc.log = append(rc.log, receipt{Key: key, Invoice: body.InvoiceID, Answer: answer})
	if answer == answerOK || answer == answerHang {
		rc.took[key] = true
	}
	rc.mu.Unlock()

	switch answer {
	case answerOK, answerDup:
		w.WriteHeader(http.StatusNoContent)
	case answer500:
		w.WriteHeader(http.StatusInternalServerError)
	case answer503:
		w.WriteHeader(http.StatusServiceUnavailable)
	case answerHang:
		t := time.NewTimer(rc.hang)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-t.C:
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// choose picks the answer to a key's try'th request, the same for the
// same seed whatever the order requests arrive in.
func (rc *receiver) choose(key string, try int) string {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rc.seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(try))
	h.Write(b[:])
	h.Write([]byte(key))
	switch x := int(h.Sum64() % 100); {
	case x < rc.p500:
		return answer500
	case x < rc.p500+rc.p503:
		return answer503
	case x < rc.p500+rc.p503+rc.pHang:
		return answerHang
	}
	return answerOK
}

// received returns a copy of the log.
func (rc *receiver) received() []receipt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receipt(nil), rc.log...)
}

// acted reports whether the receiver accepted a request under the key
// (answered ok, or hung after accepting it): the question the runbook has
// an operator ask a receiver before resolving or resending a row.
func (rc *receiver) acted(key string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.accepted(key)
}

// accepted is acted with rc.mu held.
func (rc *receiver) accepted(key string) bool { return rc.took[key] }
