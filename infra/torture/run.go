//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// system is everything a run starts.
type system struct {
	aws      *local.AWS
	faults   *local.Faults
	stack    *local.Stack
	receiver *receiver
	ddb      *dynamodb.Client // straight to the emulator, no faults: the audit's
	sqs      *sqs.Client
	api      string // base URL of the local HTTP API
	params   params
	stops    []func()
}

func (s *system) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// run starts the system, sends the workload, waits for it to settle and
// audits it, printing the report to out.
func run(ctx context.Context, o options, out io.Writer) (*report, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	large := o.LargeFraction
	if o.Load {
		large = 0
	}
	w := generate(o.Events, o.Seed, large)
	sys, err := startSystem(ctx, o)
	if err != nil {
		return nil, err
	}
	defer sys.stop()

	env := workerEnvironment(sys, o)
	ws, err := startWorkers(o.Workers, env, o.Dir, o.Seed)
	if err != nil {
		return nil, err
	}
	workersStopped := false
	stopWorkers := func() {
		if !workersStopped {
			workersStopped = true
			ws.stop()
		}
	}
	defer stopWorkers()
	if !o.Load {
		sys.faults.SetEnabled(true)
	}
	killCtx, stopKills := context.WithCancel(ctx)
	defer stopKills()
	if o.KillEvery > 0 && !o.Load {
		go ws.killEvery(killCtx, o.KillEvery)
	}

	var op *operator
	if o.Operator > 0 && !o.Load {
		op = newOperator(sys, w, o.Seed, o.Operator)
		go op.run()
		defer op.stop()
	}

	fmt.Fprintf(out, "torture: seed %d, %d events (%d invoices, %d subscriptions under %d tenants, %d of their ids under both; %d branches; %d with payloads for S3), %d deliveries (%d bursts of %d), %d workers, faults %.0f %%, an operator action every %s, logs in %s\n",
		o.Seed, len(w.Events), w.Invoices, w.Subscriptions, len(tenants), w.Shared, w.Branches, w.Large, w.sends(), w.Bursts, burstSize, o.Workers, 100*faultRate(o), operatorEvery(o), o.Dir)
	fmt.Fprintf(out, "torture: %s\n", sys.params)
	sent := time.Now()
	st, err := send(ctx, sys, w, o)
	if err != nil {
		return nil, err
	}
	sendTime := time.Since(sent)
	if op != nil {
		t := time.AfterFunc(o.OperatorAfter, op.stop)
		defer t.Stop()
	}
	// The kills, faults and operator actions go on while the system
	// settles, until every event is finished and every outbox row final:
	// most of the processing happens then. What the main queue still holds
	// after that are copies of finished events' messages, hidden for the
	// visibility timeout by a killed worker or a lost answer, or delayed
	// by the processor; kills and faults would only keep hiding them. So
	// they stop there, and the queue drains: each copy is received and
	// deleted, and the audit then checks it changed nothing.
	var final time.Duration
	settled, err := settle(ctx, sys, o, out, func() {
		final = time.Since(sent)
		stopKills()
		sys.faults.SetEnabled(false)
		if op != nil {
			op.stop()
		}
	})
	stopKills()
	if err != nil {
		return nil, err
	}
	allDone := time.Since(sent)
	stopWorkers()
	sys.faults.SetEnabled(false)
	worked := sys.faults.Counts() // the calls of the run, before the audit's

	var ops *opReport
	if op != nil {
		op.stop()
		ops = op.report()
	}
	rep, err := audit(ctx, sys, w, st, ops)
	if err != nil {
		return nil, err
	}
	rep.Kills, rep.WorkerExits = ws.counts()
	rep.Faults = sys.faults.Counts()
	rep.Settled = settled
	rep.SendTime, rep.AllDone, rep.Final = sendTime, allDone, final
	if o.Load {
		if err := measureLoad(ctx, sys, o, w, rep, worked); err != nil {
			return nil, err
		}
	}
	rep.Elapsed = time.Since(start)
	rep.print(out)
	if o.inspect != nil {
		o.inspect(sys, w, st, rep)
	}
	return rep, nil
}

func operatorEvery(o options) string {
	if o.Load || o.Operator == 0 {
		return "(none)"
	}
	return o.Operator.String()
}

func faultRate(o options) float64 {
	if o.Load {
		return 0
	}
	return o.FaultRate
}

// startSystem starts the local AWS with its faults (off until the
// workload starts), provisions the template's resources, and serves the
// API, the sweep and the receipt receiver.
func startSystem(ctx context.Context, o options) (*system, error) {
	if _, err := emulators.DynoxideBinary(); err != nil {
		return nil, fmt.Errorf("the torture run needs dynoxide (moto's DynamoDB is not atomic across processes): %w", err)
	}
	tplPath := filepath.Join(o.Root, "template.yaml")
	tpl, err := template.Load(tplPath)
	if err != nil {
		return nil, err
	}
	spec := o.Params
	if o.Load {
		spec = "fixed"
	}
	ps, err := parseParams(spec, tpl, o.Seed)
	if err != nil {
		return nil, err
	}
	sys := &system{params: ps, faults: &local.Faults{Rate: o.FaultRate, Rates: o.FaultRates, Seed: o.Seed, MaxDelay: 2 * time.Second}}
	sys.faults.SetEnabled(false)
	ok := false
	defer func() {
		if !ok {
			sys.stop()
		}
	}()
	// S3 answers a missing key as real S3 does to a role without
	// s3:ListBucket (403, not 404): the claim check must not tell them
	// apart by the answer's code.
	a, err := local.StartAWS(ctx, 0, o.Dir, sys.faults.Wrap, local.WithoutListBucket)
	if err != nil {
		return nil, err
	}
	sys.aws = a
	sys.stops = append(sys.stops, a.Stop)
	sys.ddb = dynamodb.NewFromConfig(a.Dynamo.Config())
	sys.sqs = sqs.NewFromConfig(a.Services.Config())

	sys.receiver = newReceiver(o.Seed, o.Hang)
	// A target configured to retry unknowns is one whose receiver dedupes.
	sys.receiver.dedupe = ps.RetryUnknown == 1
	if o.Load {
		sys.receiver.quiet()
	}
	recvURL, stopRecv, err := serve(sys.receiver)
	if err != nil {
		return nil, err
	}
	sys.stops = append(sys.stops, stopRecv)

	logFile, err := os.Create(filepath.Join(o.Dir, "coordinator.log"))
	if err != nil {
		return nil, err
	}
	sys.stops = append(sys.stops, func() { logFile.Close() })
	log := obs.NewLogger(logFile, slog.LevelInfo)

	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(emulators.Region),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		awsconfig.WithBaseEndpoint(a.Endpoint),
		awsconfig.WithEC2IMDSClientEnableState(0),
	)
	if err != nil {
		return nil, err
	}
	sources, err := local.LoadSources(filepath.Join(o.Root, "infra/local/sources.json"))
	if err != nil {
		return nil, err
	}
	stack, err := local.Setup(ctx, cfg, tplPath, sources, map[string]string{
		"TARGETS":             fmt.Sprintf(`[{"name":"receipt","url":%q,"retry_unknown":%t}]`, recvURL+"/receipts", ps.RetryUnknown == 1),
		"RETRY_BASE_SECONDS":  strconv.Itoa(ps.RetryBase),
		"RETRY_CAP_SECONDS":   strconv.Itoa(ps.RetryCap),
		"SWEEP_AFTER_SECONDS": strconv.Itoa(ps.SweepAfter),
	}, log)
	if err != nil {
		return nil, err
	}
	sys.stack = stack
	if ps.MaxReceiveCount != stack.Resources.MaxReceiveCount {
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": stack.Resources.DLQARN, "maxReceiveCount": ps.MaxReceiveCount})
		if _, err := sys.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl:   &stack.Resources.QueueURL,
			Attributes: map[string]string{string(sqstypes.QueueAttributeNameRedrivePolicy): string(policy)},
		}); err != nil {
			return nil, fmt.Errorf("main queue redrive policy: %w", err)
		}
		// The emulator must hold it, or the run would test another budget.
		got, err := sys.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &stack.Resources.QueueURL,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
		if err != nil {
			return nil, fmt.Errorf("main queue redrive policy: %w", err)
		}
		var held struct {
			MaxReceiveCount json.Number `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(got.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]), &held); err != nil || held.MaxReceiveCount.String() != strconv.Itoa(ps.MaxReceiveCount) {
			return nil, fmt.Errorf("main queue redrive policy: set maxReceiveCount %d, the emulator holds %q", ps.MaxReceiveCount, got.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)])
		}
		stack.Resources.MaxReceiveCount = ps.MaxReceiveCount
		stack.Env["MAX_RECEIVE_COUNT"] = strconv.Itoa(ps.MaxReceiveCount)
	}
	if o.ProcessorTimeout > 0 {
		stack.Resources.FunctionTimeout = o.ProcessorTimeout
	}
	v := stack.Resources.VisibilityTimeout
	if o.Visibility > 0 {
		v = o.Visibility
	}
	if stack.Resources.FunctionTimeout > v {
		return nil, fmt.Errorf("processor timeout %s over the main queue's visibility timeout %s: Lambda requires it to be at most that", stack.Resources.FunctionTimeout, v)
	}
	if o.Visibility > 0 {
		v := strconv.Itoa(int(o.Visibility / time.Second))
		if _, err := sys.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl:   &stack.Resources.QueueURL,
			Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): v},
		}); err != nil {
			return nil, fmt.Errorf("main queue visibility: %w", err)
		}
		stack.Resources.VisibilityTimeout = o.Visibility
	}

	fn, err := tpl.Function("IngestFunction")
	if err != nil {
		return nil, err
	}
	maxBody, _ := strconv.ParseInt(stack.Env["MAX_BODY_BYTES"], 10, 64)
	api := local.NewAPI(stack.Ingest.HandleV2, local.APIOptions{MaxBodyBytes: maxBody, FunctionTimeout: fn.Timeout, Logger: log.With("component", "api")})
	apiURL, stopAPI, err := serve(api)
	if err != nil {
		return nil, err
	}
	sys.api = apiURL
	sys.stops = append(sys.stops, stopAPI)

	sweeper, err := stack.Sweeper(stack.Replay.Handle, log.With("component", "sweep"))
	if err != nil {
		return nil, err
	}
	sweeper.Every = o.SweepEvery
	sweepCtx, stopSweep := context.WithCancel(ctx)
	sweepDone := make(chan struct{})
	go func() { _ = sweeper.Run(sweepCtx); close(sweepDone) }()
	sys.stops = append(sys.stops, func() { stopSweep(); <-sweepDone })
	ok = true
	return sys, nil
}

// serve serves h on a free loopback port.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := local.NewServer(h, local.ServerTimeouts{})
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	}, nil
}

// workerEnvironment is a worker's environment: the processor function's,
// as the template sets it, and the SDK's settings pointing at the router.
func workerEnvironment(sys *system, o options) []string {
	r := sys.stack.Resources
	spec, _ := json.Marshal(pollerSpec{
		QueueURL: r.QueueURL, QueueARN: r.QueueARN, Region: emulators.Region,
		BatchSize: r.BatchSize, BatchingWindow: r.BatchingWindow, MaxConcurrency: r.MaxConcurrency,
		Timeout: r.FunctionTimeout,
	})
	env := []string{
		workerEnv + "=" + string(spec),
		"AWS_ENDPOINT_URL=" + sys.aws.Endpoint,
		"AWS_REGION=" + emulators.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_EC2_METADATA_DISABLED=true",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCOVERDIR", "GORACE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range sys.stack.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// sendStats is what the senders saw.
type sendStats struct {
	Requests atomic.Int64 // HTTP requests made, retries included
	Retried  atomic.Int64 // requests answered 5xx or not at all
	mu       sync.Mutex
	Status   map[int]int     // answers by status code
	Accepted map[string]bool // events answered 2xx at least once
	Refused  map[string]string
	GaveUp   map[string]string
	// Forged counts the forged Mailgun deliveries sent after the
	// workload's (a signature reused with another body), ForgedAnswers
	// their final answers by status, and ForgedAccepted the forgeries
	// answered 2xx.
	Forged         int
	ForgedAnswers  map[int]int
	ForgedAccepted []string
}

const (
	sendTries      = 40
	sendMaxBackoff = 2 * time.Second
)

// send delivers the workload through the API, o.Senders deliveries at a
// time, bursts as their copies at once. A delivery that is not answered,
// or is answered 5xx or 429, is sent again as a provider would, up to
// sendTries times.
func send(ctx context.Context, sys *system, w *workload, o options) (*sendStats, error) {
	sources, err := local.LoadSources(filepath.Join(o.Root, "infra/local/sources.json"))
	if err != nil {
		return nil, err
	}
	st, err := sources.Source("stripe")
	if err != nil {
		return nil, err
	}
	gh, err := sources.Source("github")
	if err != nil {
		return nil, err
	}
	mg, err := sources.Source("mailgun")
	if err != nil {
		return nil, err
	}
	w.signMailgun([]byte(mg.Secrets[0]), time.Now())
	keys := secrets{Stripe: map[string][]byte{}, GitHub: []byte(gh.Secrets[0])}
	for _, t := range tenants {
		if len(st.AccountSecrets[t]) == 0 {
			return nil, fmt.Errorf("infra/local/sources.json: stripe has no secret for the tenant %s", t)
		}
		keys.Stripe[t] = []byte(st.AccountSecrets[t][0])
	}
	stats := &sendStats{Status: map[int]int{}, Accepted: map[string]bool{}, Refused: map[string]string{}, GaveUp: map[string]string{}, ForgedAnswers: map[int]int{}}
	client := &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	one := func(ev *event, r *rand.Rand) {
		var last string
		for try := range sendTries {
			if ctx.Err() != nil {
				return
			}
			if try > 0 {
				d := min(sendMaxBackoff, 50*time.Millisecond<<min(try, 10))
				time.Sleep(d/2 + time.Duration(r.Int64N(int64(d/2)+1)))
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sys.api+ev.path(), bytes.NewReader(ev.Body))
			req.Header = ev.request(keys, time.Now())
			stats.Requests.Add(1)
			resp, err := client.Do(req)
			if err != nil {
				stats.Retried.Add(1)
				last = err.Error()
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			stats.mu.Lock()
			stats.Status[resp.StatusCode]++
			stats.mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted:
				stats.mu.Lock()
				stats.Accepted[ev.key()] = true
				stats.mu.Unlock()
				return
			case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
				stats.Retried.Add(1)
				last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
			default:
				stats.mu.Lock()
				stats.Refused[ev.key()] = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
				stats.mu.Unlock()
				return
			}
		}
		stats.mu.Lock()
		stats.GaveUp[ev.key()] = last
		stats.mu.Unlock()
	}

	// The senders hold back while the main queue is long: moto's SQS
	// computes every queue attribute, approximate counts included, on
	// each SendMessage, so a send costs time in proportion to the
	// messages queued (5.6 ms on an empty queue, 157 ms with 3,000
	// queued), and an inbox that outran its processor would slow every
	// call until nothing finished.
	gate := newGate(ctx, sys, o.Backlog)
	defer gate.stop()
	work := make(chan delivery)
	var wg sync.WaitGroup
	for i := range o.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				gate.wait(ctx)
				var bw sync.WaitGroup
				for c := range d.Copies {
					bw.Add(1)
					go func() {
						defer bw.Done()
						one(d.Event, rand.New(rand.NewPCG(o.Seed, uint64(i)<<32|uint64(c))))
					}()
				}
				bw.Wait()
			}
		}()
	}
	for _, d := range w.Deliveries {
		select {
		case work <- d:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()

	// Each Mailgun event's signature, reused with another body once the
	// event was delivered: refused (401), whatever the faults, until an
	// answer that is not a 5xx.
	r := rand.New(rand.NewPCG(o.Seed, 0x666f7267))
	for _, ev := range w.Events {
		if ev.Mailgun == nil || !stats.Accepted[ev.key()] || ctx.Err() != nil {
			continue
		}
		f := ev.forge()
		stats.Forged++
		for try := range sendTries {
			if try > 0 {
				time.Sleep(time.Duration(r.Int64N(int64(100 * time.Millisecond))))
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sys.api+f.path(), bytes.NewReader(f.Body))
			req.Header = f.request(keys, time.Now())
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
				continue
			}
			stats.mu.Lock()
			stats.ForgedAnswers[resp.StatusCode]++
			if resp.StatusCode < 300 {
				stats.ForgedAccepted = append(stats.ForgedAccepted, f.key())
			}
			stats.mu.Unlock()
			break
		}
	}
	return stats, ctx.Err()
}

// gate is open while the main queue holds at most max messages (visible,
// in flight or delayed), as read every 200 ms.
type gate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	open   bool
	cancel context.CancelFunc
	// Held is how long senders waited at the gate in all.
	held atomic.Int64
}

func newGate(ctx context.Context, sys *system, max int) *gate {
	g := &gate{open: true}
	g.cond = sync.NewCond(&g.mu)
	if max <= 0 {
		return g
	}
	ctx, g.cancel = context.WithCancel(ctx)
	go func() {
		for ctx.Err() == nil {
			n, err := queued(ctx, sys)
			g.mu.Lock()
			g.open = err != nil || n <= max
			g.cond.Broadcast()
			g.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		g.mu.Lock()
		g.open = true
		g.cond.Broadcast()
		g.mu.Unlock()
	}()
	return g
}

func (g *gate) wait(ctx context.Context) {
	start := time.Now()
	g.mu.Lock()
	for !g.open && ctx.Err() == nil {
		g.cond.Wait()
	}
	g.mu.Unlock()
	g.held.Add(int64(time.Since(start)))
}

func (g *gate) stop() {
	if g.cancel != nil {
		g.cancel()
	}
}

// progress is the table and the main queue at a moment, read straight
// from the emulators.
type progress struct {
	Unfinished, Unsettled int
	// The main queue's messages: visible, in flight (received, not yet
	// deleted) and delayed.
	Visible, InFlight, Delayed int
	// left describes the first unfinished events and rows not final.
	left []string
}

func (p progress) finished() bool { return p.Unfinished == 0 && p.Unsettled == 0 }
func (p progress) messages() int  { return p.Visible + p.InFlight + p.Delayed }
func (p progress) done() bool     { return p.finished() && p.messages() == 0 }

func (p progress) String() string {
	return fmt.Sprintf("%d events unfinished, %d outbox rows not final, %d messages in the main queue (%d visible, %d in flight, %d delayed)",
		p.Unfinished, p.Unsettled, p.messages(), p.Visible, p.InFlight, p.Delayed)
}

// drainBound is how long the main queue may take to empty once every
// event is finished and every row final, with kills and faults stopped:
// what is left then are copies of finished events' messages, each hidden
// at most the visibility timeout (a killed worker's receive, a lost
// answer) or the longest delay the processor sets (RetryCapSeconds),
// then received once and deleted; a long poll and a batching window come
// on top.
func drainBound(sys *system) time.Duration {
	r := sys.stack.Resources
	return max(r.VisibilityTimeout, time.Duration(sys.params.RetryCap)*time.Second) + r.BatchingWindow + 30*time.Second
}

// settle waits until every event is finished and every outbox row final,
// for at most o.Settle after the last delivery, and then for the main
// queue to empty, for at most drainBound after that. It calls final once,
// the first time every event is finished and every row final (and waits
// for it: the operator's last action may make an event unfinished
// again). "Settled" is precisely: both waits ended in time; what is left
// when one does not is printed.
func settle(ctx context.Context, sys *system, o options, out io.Writer, final func()) (bool, error) {
	deadline := time.Now().Add(o.Settle)
	lastPrint := time.Now()
	finalCalled := false
	for {
		p, err := measure(ctx, sys)
		if err != nil {
			return false, err
		}
		if p.finished() && !finalCalled {
			finalCalled = true
			final()
			deadline = time.Now().Add(drainBound(sys))
			continue
		}
		if p.done() {
			return true, nil
		}
		if time.Now().After(deadline) {
			if finalCalled {
				fmt.Fprintf(out, "torture: not drained %s after every event finished (the visibility timeout or the longest delay, and a poll): %s\n", drainBound(sys), p)
			} else {
				fmt.Fprintf(out, "torture: not settled after %s: %s\n", o.Settle, p)
			}
			for _, line := range p.left {
				fmt.Fprintf(out, "torture:   left: %s\n", line)
			}
			return false, nil
		}
		if time.Since(lastPrint) > 15*time.Second {
			fmt.Fprintf(out, "torture: settling: %s\n", p)
			lastPrint = time.Now()
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func measure(ctx context.Context, sys *system) (progress, error) {
	var p progress
	items, err := scan(ctx, sys)
	if err != nil {
		return p, err
	}
	for _, it := range items {
		switch {
		case strings.HasPrefix(it.PK, "event#"):
			if !it.finished() || it.Outbox == "pending" {
				p.Unfinished++
				if len(p.left) < 10 {
					p.left = append(p.left, it.brief(time.Now()))
				}
			}
		case strings.HasPrefix(it.PK, "outbox#"):
			if !it.rowFinal() {
				p.Unsettled++
				if len(p.left) < 10 {
					p.left = append(p.left, it.brief(time.Now()))
				}
			}
		}
	}
	p.Visible, p.InFlight, p.Delayed, err = queueCounts(ctx, sys)
	return p, err
}

// queued is the number of messages in the main queue: visible, in flight
// and delayed.
func queued(ctx context.Context, sys *system) (int, error) {
	v, f, d, err := queueCounts(ctx, sys)
	return v + f + d, err
}

// queueCounts is the main queue's visible, in flight and delayed
// messages.
func queueCounts(ctx context.Context, sys *system) (visible, inFlight, delayed int, err error) {
	return countsOf(ctx, sys, sys.stack.Resources.QueueURL, "main queue")
}

// countsOf is a queue's visible, in flight and delayed messages.
func countsOf(ctx context.Context, sys *system, url, name string) (visible, inFlight, delayed int, err error) {
	attrs, err := sys.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &url,
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	n := func(a sqstypes.QueueAttributeName) int {
		v, _ := strconv.Atoi(attrs.Attributes[string(a)])
		return v
	}
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed), nil
}
