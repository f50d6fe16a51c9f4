// Command burst is `make burst`: the load a team tries on its first day,
// against the `make run` stack in another terminal. It signs N distinct
// Stripe invoice.paid events (each its own invoice and customer, built
// from the corpus sample), delivers each one twice (a provider's retry
// arriving with the first, so the two race), C at a time, and reports
// ingest's requests/s and latency by percentile and the answers by status;
// then it reads the table until every event is processed, and reports how
// long after the first delivery that was and whether each invoice has
// exactly one receipt row, delivered.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "burst:", err)
		os.Exit(1)
	}
}

// The sample's ids, replaced in each event's body.
const (
	sampleEvent    = "evt_1Pr8UGNEdj7cfkFUE08oICsJ"
	sampleInvoice  = "in_1Pgc6tB7WZ01zgkWu9fdqL6I"
	sampleCustomer = "cus_QXg1o8vcGmoR32"
	sampleFile     = "testdata/corpus/stripe/invoice.paid.json"
	// receiptTarget is the shipped example's receipt target.
	receiptTarget = "receipt"
)

func run() error {
	api := flag.String("api", "http://127.0.0.1:3000", "base URL of the local API")
	endpoint := flag.String("aws", "http://127.0.0.1:4566", "the local AWS endpoint, to read the table")
	table := flag.String("table", "webhook-inbox-inbox", "the inbox table")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	n := flag.Int("n", 2000, "distinct invoices")
	repeat := flag.Int("repeat", 2, "deliveries of each event")
	conc := flag.Int("c", 32, "deliveries in flight")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for every event to be processed")
	flag.Parse()
	if *n <= 0 || *repeat <= 0 || *conc <= 0 {
		return errors.New("-n, -repeat and -c must be positive")
	}

	sources, err := local.LoadSources(*srcPath)
	if err != nil {
		return err
	}
	src, err := sources.Source("stripe")
	if err != nil {
		return err
	}
	sample, err := os.ReadFile(sampleFile)
	if err != nil {
		return err
	}
	for _, id := range []string{sampleEvent, sampleInvoice, sampleCustomer} {
		if !bytes.Contains(sample, []byte(id)) {
			return fmt.Errorf("%s: no %s to replace", sampleFile, id)
		}
	}
	// A run's ids are its own, so a second burst against the same stack is
	// new events, not duplicates of the first.
	runID := fmt.Sprintf("%x", time.Now().UnixNano())
	now := time.Now()
	type delivery struct {
		event string
		req   *http.Request
		body  []byte
	}
	events := make([]string, *n)
	jobs := make([]delivery, 0, *n**repeat)
	for i := range *n {
		suffix := fmt.Sprintf("burst%s%05d", runID, i)
		events[i] = "evt_" + suffix
		body := strings.NewReplacer(sampleEvent, events[i], sampleInvoice, "in_"+suffix, sampleCustomer, "cus_"+suffix).Replace(string(sample))
		s := local.Sample{ContentType: "application/json", Body: body}
		// The body has JSON braces but no placeholder: Signed keeps it.
		signed, err := s.Signed(".", src, now)
		if err != nil {
			return err
		}
		if string(signed.Body) != body {
			return errors.New("the sample's body changed in signing")
		}
		for range *repeat {
			hr, err := http.NewRequest(http.MethodPost, *api+"/webhooks/"+src.Name, nil)
			if err != nil {
				return err
			}
			hr.Header = signed.Header.Clone()
			jobs = append(jobs, delivery{event: events[i], req: hr, body: signed.Body})
		}
	}

	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conc}}
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, len(jobs))
		statuses  = map[string]int{}
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	first := time.Now()
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				j := jobs[i]
				req := j.req.Clone(context.Background())
				req.Body = nopCloser{bytes.NewReader(j.body)}
				req.ContentLength = int64(len(j.body))
				start := time.Now()
				resp, err := client.Do(req)
				d := time.Since(start)
				status := "error"
				if err == nil {
					status = fmt.Sprint(resp.StatusCode)
					resp.Body.Close()
				}
				mu.Lock()
				latencies = append(latencies, d)
				statuses[status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sent := time.Since(first)
	slices.Sort(latencies)
	fmt.Printf("burst: %d deliveries (%d invoices × %d, %d at a time) in %s: %.1f requests/s; latency p50 %s, p99 %s, max %s\n",
		len(jobs), *n, *repeat, *conc, sent.Round(time.Millisecond), float64(len(jobs))/sent.Seconds(),
		pct(latencies, 50), pct(latencies, 99), latencies[len(latencies)-1].Round(time.Millisecond))
	fmt.Printf("burst: answers %s\n", counts(statuses))

	db := dynamodb.NewFromConfig(aws.Config{
		Region:       emulators.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: endpoint,
	})
	store := inboxstore.New(db, *table, 24*time.Hour)
	ctx := context.Background()
	left := map[string]bool{}
	for _, e := range events {
		left[e] = true
	}
	byStatus := map[string]int{}
	deadline := first.Add(*wait)
	var allDone time.Duration
	for len(left) > 0 {
		clear(byStatus)
		for e := range left {
			ev, err := store.Get(ctx, inbox.Key{Source: src.Name, EventID: e}, time.Now())
			status := "missing"
			if err == nil {
				status = string(ev.Status)
			}
			byStatus[status]++
			if err == nil && !ev.Unfinished() && !ev.OutboxPending {
				delete(left, e)
			}
		}
		if len(left) == 0 {
			allDone = time.Since(first)
			break
		}
		if time.Now().After(deadline) {
			fmt.Printf("burst: %d of %d events not finished %s after the first delivery: %s\n", len(left), *n, *wait, counts(byStatus))
			os.Exit(1)
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("burst: every event processed and its outbox settled %s after the first delivery\n", allDone.Round(100*time.Millisecond))

	// One receipt row per invoice, no two invoices sharing one, and every
	// row of every event (the receipt; a forwarding row where FORWARD
	// routes invoices) delivered.
	rows := map[string]bool{}
	rowStates := map[string]int{}
	var bad []string
	for _, e := range events {
		ev, err := store.Get(ctx, inbox.Key{Source: src.Name, EventID: e}, time.Now())
		if err != nil {
			return err
		}
		if ev.Status != inbox.StatusProcessed {
			bad = append(bad, fmt.Sprintf("%s: %s", e, ev.Status))
			continue
		}
		receipts := 0
		for _, key := range ev.OutboxRows {
			r, err := store.Row(ctx, key)
			if err != nil {
				return err
			}
			rowStates[r.Target+" "+string(r.State)]++
			if r.State != outbox.Delivered {
				bad = append(bad, fmt.Sprintf("%s: row %s %s", e, r.Key, r.State))
			}
			if r.Target == receiptTarget {
				receipts++
				if rows[r.Key] {
					bad = append(bad, fmt.Sprintf("%s: row %s shared", e, r.Key))
				}
				rows[r.Key] = true
			}
		}
		if receipts != 1 {
			bad = append(bad, fmt.Sprintf("%s: %d receipt rows", e, receipts))
		}
	}
	fmt.Printf("burst: receipt rows %d for %d invoices: %s\n", len(rows), *n, counts(rowStates))
	if len(bad) > 0 || !allOK(statuses) {
		sort.Strings(bad)
		fmt.Printf("burst: FAILED: %d answers not 2xx; %d events wrong: %s\n", len(jobs)-ok2xx(statuses), len(bad), strings.Join(bad[:min(len(bad), 10)], "; "))
		os.Exit(1)
	}
	fmt.Println("burst: ok: every delivery 2xx, one delivered receipt row per invoice")
	return nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)].Round(time.Millisecond)
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func ok2xx(statuses map[string]int) int {
	n := 0
	for s, c := range statuses {
		if strings.HasPrefix(s, "2") {
			n += c
		}
	}
	return n
}

func allOK(statuses map[string]int) bool {
	for s := range statuses {
		if !strings.HasPrefix(s, "2") {
			return false
		}
	}
	return true
}
