package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/certfetch"
	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/ingest"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
	"github.com/webhook-inbox/webhook-inbox/internal/secrets"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

const (
	repoRoot    = "../.."
	invoicePaid = "testdata/corpus/stripe/invoice.paid.json"
)

type env struct {
	aws       *local.AWS
	endpoint  string
	awsConfig aws.Config
	stack     *local.Stack
	api       *httptest.Server
	poller    *local.Poller
	db        *dynamodb.Client
	store     *claimcheck.Store
	secret    []byte
	logs      *bytes.Buffer
}

// mustEnv runs the local stack as `make run` does, against its own moto.
func mustEnv(tb testing.TB) *env {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: needs the emulators (skipped with -short)")
	}
	aws, err := local.StartAWS(context.Background(), 0, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(aws.Stop)
	s := &awstest.Server{Endpoint: aws.Endpoint, Atomic: aws.Atomic()}
	cfg := s.Config()
	sources, err := local.LoadSources(filepath.Join(repoRoot, "infra/local/sources.json"))
	if err != nil {
		tb.Fatal(err)
	}
	src, err := sources.Source("stripe")
	if err != nil {
		tb.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	// The handlers' conditional writes must be atomic, as DynamoDB's are:
	// dynoxide's are; moto's only one request at a time (SerialConfig).
	stack, err := local.Setup(context.Background(), s.SafeConfig(), filepath.Join(repoRoot, "template.yaml"), sources, nil, log)
	if err != nil {
		tb.Fatalf("setup: %v", err)
	}
	api := httptest.NewServer(local.NewAPI(stack.Ingest.HandleV2, local.APIOptions{Logger: log}))
	tb.Cleanup(api.Close)
	db := dynamodb.NewFromConfig(cfg)
	return &env{
		aws: aws, endpoint: s.Endpoint, awsConfig: cfg,
		stack: stack, api: api, db: db, logs: logs,
		poller: stack.Poller(sqs.NewFromConfig(cfg), cfg.Region, log),
		store:  claimcheck.New(inboxstore.New(db, stack.Resources.TableName, 24*time.Hour), claimcheck.NewObjects(local.S3(cfg), local.PayloadBucketName)),
		secret: []byte(src.Secrets[0]),
	}
}

func (e *env) post(tb testing.TB, body []byte, signedAt time.Time) (int, map[string]string) {
	tb.Helper()
	return e.postTo(tb, "/webhooks/stripe", e.secret, body, signedAt)
}

// postTo signs body with secret as Stripe would and POSTs it to path.
func (e *env) postTo(tb testing.TB, path string, secret, body []byte, signedAt time.Time) (int, map[string]string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, e.api.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", signature.SignStripe(body, secret, signedAt))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]string
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("response %q: %v", raw, err)
	}
	return resp.StatusCode, out
}

// drain feeds the main queue to the processor until it is empty.
func (e *env) drain(tb testing.TB) {
	tb.Helper()
	e.drainCount(tb)
}

// drainCount drains the main queue and returns how many messages it held.
// A receive whose answer the emulator cut (docs/local-aws.md: a fast
// answer can end the connection under the response) leaves its messages
// in flight for the visibility timeout: the drain goes on until the queue
// holds none, visible or in flight, for at most that long and a margin
// after the last such receive.
func (e *env) drainCount(tb testing.TB) int {
	tb.Helper()
	total, polls := 0, 0
	wait := e.stack.Resources.VisibilityTimeout + 30*time.Second
	deadline := time.Now().Add(wait)
	cut := false
	for time.Now().Before(deadline) {
		n, err := e.poller.PollOnce(context.Background())
		if err != nil {
			if !lostAnswer(err) {
				tb.Fatal(err)
			}
			tb.Logf("a receive's answer was cut, its messages in flight until the visibility timeout: %v", err)
			cut = true
			deadline = time.Now().Add(wait)
			continue
		}
		total += n
		if n == 0 && (!cut || e.queued(tb) == 0) {
			return total
		}
		if n == 0 {
			time.Sleep(time.Second)
		}
		if polls++; polls >= 20 && !cut {
			break
		}
	}
	tb.Fatal("queue did not drain")
	return total
}

// lostAnswer reports whether err is a receive whose 200 answer was cut.
func lostAnswer(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "StatusCode: 200") && (strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "deserialization failed"))
}

// queued is the main queue's messages, visible and in flight.
func (e *env) queued(tb testing.TB) int {
	tb.Helper()
	out, err := sqs.NewFromConfig(e.awsConfig).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: &e.stack.Resources.QueueURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		c, _ := strconv.Atoi(v)
		n += c
	}
	return n
}

// effects counts the effect records in the table.
func (e *env) effects(tb testing.TB) int {
	tb.Helper()
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(e.stack.Resources.TableName),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: effects.FactPrefix}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return int(out.Count)
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestEndToEnd: a signed Stripe invoice.paid from the corpus travels local
// API → ingest → DynamoDB → SQS → processor → one effect; the same
// delivery again is a 200 duplicate and changes nothing.
func TestEndToEnd(t *testing.T) {
	e := mustEnv(t)
	body, key, invoice, err := local.SampleStripe(repoRoot)
	if err != nil {
		t.Fatal(err)
	}

	status, resp := e.post(t, body, time.Now())
	if status != http.StatusAccepted || resp["status"] != "accepted" || resp["event_id"] != key.EventID {
		t.Fatalf("first delivery: got %d %v, want 202 accepted %s", status, resp, key.EventID)
	}
	e.drain(t)
	ev, err := e.store.Get(context.Background(), key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied || ev.Attempts != 1 {
		t.Fatalf("event: got %s/%s after %d attempts, want processed/applied after 1", ev.Status, ev.Outcome, ev.Attempts)
	}
	if !bytes.Equal(ev.Payload, body) {
		t.Error("stored payload differs from the bytes sent")
	}
	eff, err := e.store.Fact(context.Background(), ev.PartScope(), handlers.InvoicePaidKind, invoice)
	if err != nil {
		t.Fatal(err)
	}
	if eff["event_key"] != key.String() {
		t.Errorf("effect event_key: got %v, want %s", eff["event_key"], key)
	}

	// The provider retries the same delivery (a new signature, same bytes).
	status, resp = e.post(t, body, time.Now())
	if status != http.StatusOK || resp["status"] != "duplicate" || resp["event_id"] != key.EventID {
		t.Fatalf("second delivery: got %d %v, want 200 duplicate", status, resp)
	}
	e.drain(t)
	if n := e.effects(t); n != 1 {
		t.Errorf("effect records: got %d, want 1", n)
	}
	if ev, _ := e.store.Get(context.Background(), key, time.Now()); ev.Attempts != 1 {
		t.Errorf("attempts after duplicate: got %d, want 1 (a processed event is not queued again)", ev.Attempts)
	}
	if strings.Contains(e.logs.String(), invoice) {
		t.Error("logs contain payload content")
	}
}

// TestRejectedAndMalformed: refused requests get their status and leave
// nothing stored or queued.
func TestRejectedAndMalformed(t *testing.T) {
	e := mustEnv(t)
	body := mustRead(t, invoicePaid)
	if status, _ := e.post(t, body, time.Now().Add(-10*time.Minute)); status != http.StatusUnauthorized {
		t.Errorf("expired signature: got %d, want 401", status)
	}
	if status, _ := e.post(t, []byte(`{"object":"event"}`), time.Now()); status != http.StatusBadRequest {
		t.Errorf("signed body without id: got %d, want 400", status)
	}
	resp, err := http.Get(e.api.URL + "/webhooks/stripe")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: got %d, want 405", resp.StatusCode)
	}
	resp, err = http.Post(e.api.URL+"/webhooks/unknown", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown source: got %d, want 404", resp.StatusCode)
	}
	e.drain(t)
	// Nothing but the table's layout item, which the processor wrote.
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.stack.Resources.TableName),
		FilterExpression:          aws.String("pk <> :layout"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":layout": &types.AttributeValueMemberS{Value: inboxstore.LayoutPK}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 0 {
		t.Errorf("refused requests stored %d items", out.Count)
	}
}

// TestConcurrentDeliveries: one event delivered by N concurrent requests is
// accepted once, answered duplicate for the rest, and applied once.
func TestConcurrentDeliveries(t *testing.T) {
	e := mustEnv(t)
	body := mustRead(t, invoicePaid)
	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _ := e.post(t, body, time.Now())
			statuses <- status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusAccepted] != 1 || count[http.StatusOK] != n-1 {
		t.Fatalf("statuses: got %v, want one 202 and %d 200", count, n-1)
	}
	e.drain(t)
	if got := e.effects(t); got != 1 {
		t.Errorf("effect records: got %d, want 1", got)
	}
}

// TestPermanentFailureToDLQAndReplay: a verified invoice.paid whose invoice
// cannot be read is marked dead with its error and its message lands in the
// DLQ at once; a dry-run replay lists it, a real one moves it back, and the
// processor, still unable to apply it, sends it to the DLQ again: nothing is
// lost and nothing is applied.
func TestPermanentFailureToDLQAndReplay(t *testing.T) {
	e := mustEnv(t)
	body := []byte(`{"id":"evt_bad_invoice","object":"event","type":"invoice.paid","created":1764500000,"livemode":false,"data":{"object":{"object":"invoice"}}}`)
	if status, resp := e.post(t, body, time.Now()); status != http.StatusAccepted {
		t.Fatalf("got %d %v, want 202", status, resp)
	}
	e.drain(t)
	key := inbox.Key{Source: "stripe", EventID: "evt_bad_invoice"}
	ev, err := e.store.Get(context.Background(), key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != inbox.StatusDead || !strings.Contains(ev.LastError, "not an invoice") || ev.Attempts != 1 {
		t.Fatalf("event: got status %s, attempts %d, last_error %q; want dead after 1 attempt with the handler's error", ev.Status, ev.Attempts, ev.LastError)
	}
	sum, err := e.stack.Replay.Handle(context.Background(), replay.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.DryRun || sum.Examined != 1 || len(sum.Events) != 1 || sum.Events[0] != key.String() {
		t.Fatalf("dry run: got %+v, want the dead event listed", sum)
	}
	// A provider's retry of a dead event is a duplicate: acknowledged, not
	// queued again (dead is final but for the operator's replay).
	if status, resp := e.post(t, body, time.Now()); status != http.StatusOK || resp["status"] != "duplicate" {
		t.Fatalf("retry of a dead event: got %d %v, want 200 duplicate", status, resp)
	}
	if n := e.drainCount(t); n != 0 {
		t.Errorf("retry of a dead event queued %d messages, want 0", n)
	}
	no := false
	if sum, err = e.stack.Replay.Handle(context.Background(), replay.Request{DryRun: &no}); err != nil || sum.Moved != 1 {
		t.Fatalf("replay: got %+v, %v; want 1 moved", sum, err)
	}
	e.drain(t)
	ev, _ = e.store.Get(context.Background(), key, time.Now())
	if ev.Status != inbox.StatusDead || ev.Attempts != 2 {
		t.Errorf("after replay: got %s after %d attempts, want dead after 2", ev.Status, ev.Attempts)
	}
	if sum, _ = e.stack.Replay.Handle(context.Background(), replay.Request{}); sum.Examined != 1 {
		t.Errorf("DLQ after the failed replay: got %d messages, want 1", sum.Examined)
	}
	if got := e.effects(t); got != 0 {
		t.Errorf("effect records: got %d, want 0", got)
	}
}

// TestReplayOfADeadEventApplies: an event that died of a cause since
// cured (its redrive budget spent during an outage) is processed after the
// operator replays it, exactly once.
func TestReplayOfADeadEventApplies(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	body := mustRead(t, invoicePaid)
	var evt struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &evt); err != nil {
		t.Fatal(err)
	}
	key := inbox.Key{Source: "stripe", EventID: evt.ID}
	now := time.Now()
	// Stored, then every attempt failed: the last receive marked it dead
	// and copied its message to the DLQ.
	if _, err := e.store.Insert(ctx, inbox.Event{Key: key, Kind: "stripe", Type: "invoice.paid", Payload: body, Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Fail(ctx, key, inbox.Failure{Status: inbox.StatusDead, Cause: "dependency unavailable", MessageID: "m-last"}, now); err != nil {
		t.Fatal(err)
	}
	dlqBody, _ := inbox.EncodeMessage(key)
	if err := queue.New(sqs.NewFromConfig(e.awsConfig), e.stack.Resources.DLQURL).Send(ctx, dlqBody); err != nil {
		t.Fatal(err)
	}
	no := false
	if sum, err := e.stack.Replay.Handle(ctx, replay.Request{DryRun: &no}); err != nil || sum.Moved != 1 {
		t.Fatalf("replay: got %+v, %v; want 1 moved", sum, err)
	}
	e.drain(t)
	ev, err := e.store.Get(ctx, key, time.Now())
	if err != nil || ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied || ev.Attempts != 1 {
		t.Fatalf("after replay: got %+v, %v; want processed/applied", ev, err)
	}
	if n := e.effects(t); n != 1 {
		t.Errorf("effect records: got %d, want 1", n)
	}
}

// failOnce is the main queue with its first send failing, as SQS may.
type failOnce struct {
	q      *queue.Queue
	failed bool
}

func (f *failOnce) Enqueue(ctx context.Context, k inbox.Key) error {
	if !f.failed {
		f.failed = true
		return fmt.Errorf("send: %w: injected", inbox.ErrUnavailable)
	}
	return f.q.Enqueue(ctx, k)
}

// TestStrandedEventIsSwept: the event is stored, its enqueue fails, ingest
// answers 503, and the provider never retries (GitHub does not): the
// scheduled sweep queues it once it is overdue, and it is processed.
func TestStrandedEventIsSwept(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	c, err := config.Load(func(k string) string { return e.stack.Env[k] }, app.IngestNeeds)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ingest.New(ingest.Config{
		Sources: c.Sources, Secrets: secrets.NewStore(secretsmanager.NewFromConfig(e.awsConfig), time.Minute),
		IsSecretNotFound: secrets.IsNotFound, Store: e.store, MaxBodyBytes: c.MaxBodyBytes,
		Queue:  &failOnce{q: queue.New(sqs.NewFromConfig(e.awsConfig), e.stack.Resources.QueueURL)},
		Remote: certfetch.New(e.stack.Providers.Client()),
		Nonces: e.store,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(local.NewAPI(h.HandleV2, local.APIOptions{}))
	defer api.Close()
	body := mustRead(t, invoicePaid)
	req, _ := http.NewRequest(http.MethodPost, api.URL+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Stripe-Signature", signature.SignStripe(body, e.secret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("delivery with the enqueue failing: got %d, want 503", resp.StatusCode)
	}
	var evt struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &evt); err != nil {
		t.Fatal(err)
	}
	key := inbox.Key{Source: "stripe", EventID: evt.ID}
	if ev, err := e.store.Get(ctx, key, time.Now()); err != nil || ev.Status != inbox.StatusReceived {
		t.Fatalf("stored: got %+v, %v; want received", ev, err)
	}
	if n := e.drainCount(t); n != 0 {
		t.Fatalf("main queue: got %d messages, want none (the enqueue failed)", n)
	}
	// The schedule of the template, run locally as `make run` does.
	sweeps, err := e.stack.Sweeper(e.stack.Replay.Handle, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if sweeps.Every != 5*time.Minute || sweeps.Request.Action != replay.ActionSweep || sweeps.Request.DryRun == nil || *sweeps.Request.DryRun {
		t.Fatalf("sweeper: got %+v, want the template's sweep every 5 minutes, not a dry run", sweeps)
	}
	if sum := sweeps.Once(ctx); sum.Moved != 0 || sum.OldestUnfinished != key.String() {
		t.Fatalf("sweep before the threshold: got %+v, want nothing moved and the event reported oldest", sum)
	}
	// The next scheduled sweep, overdue by more than the 5-minute threshold.
	now := time.Now()
	e.stack.Replay.Now = func() time.Time { return now.Add(sweeps.Every + time.Minute) }
	if sum := sweeps.Once(ctx); sum.Moved != 1 {
		t.Fatalf("sweep after the threshold: got %+v, want 1 moved", sum)
	}
	e.drain(t)
	if ev, err := e.store.Get(ctx, key, time.Now()); err != nil || ev.Status != inbox.StatusProcessed || ev.Outcome != inbox.OutcomeApplied {
		t.Fatalf("after the sweep: got %+v, %v; want processed/applied", ev, err)
	}
	if n := e.effects(t); n != 1 {
		t.Errorf("effect records: got %d, want 1", n)
	}
}

// TestStoreOutage: with the AWS endpoint gone, a valid delivery gets 503 so
// the provider retries, never a 500.
func TestStoreOutage(t *testing.T) {
	e := mustEnv(t)
	body := mustRead(t, invoicePaid)
	// The first request caches the signing secret, as a warm function has.
	if status, _ := e.post(t, []byte(`{"id":"evt_warmup","object":"event","type":"ping"}`), time.Now()); status != http.StatusAccepted {
		t.Fatalf("warm-up: got %d, want 202", status)
	}
	e.aws.Stop()
	if status, resp := e.post(t, body, time.Now()); status != http.StatusServiceUnavailable || resp["error"] != "temporarily unavailable" {
		t.Errorf("got %d %v, want 503 temporarily unavailable", status, resp)
	}
}

// TestSecretRotation: after a Secrets Manager rotation of an endpoint's
// secret, deliveries signed with the previous version are accepted (the
// provider may sign with it for a while), with the current one too, and
// with neither refused; through the real secrets store and Secrets
// Manager's own AWSPREVIOUS stage.
func TestSecretRotation(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	sm := secretsmanager.NewFromConfig(e.awsConfig)
	id := e.stack.Env["SECRETS_PREFIX"] + "stripe/acct_rotated"
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String("whsec_before")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String("whsec_after")}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		secret string
		want   int
	}{{"whsec_before", http.StatusAccepted}, {"whsec_after", http.StatusAccepted}, {"whsec_other", http.StatusUnauthorized}, {"whsec_before", http.StatusAccepted}} {
		body := []byte(fmt.Sprintf(`{"id":"evt_rot_%d","object":"event","type":"ping","created":1764500000,"data":{"object":{}}}`, i))
		if status, resp := e.postTo(t, "/webhooks/stripe/acct_rotated", []byte(c.secret), body, time.Now()); status != c.want {
			t.Errorf("signed with %s: got %d %v, want %d", c.secret, status, resp, c.want)
		}
	}
}

// TestCredentialsNeverStored: Authorization and Cookie headers sent with a
// delivery appear nowhere in the stored item; the delivery's signature,
// User-Agent and request id do.
func TestCredentialsNeverStored(t *testing.T) {
	e := mustEnv(t)
	body := []byte(`{"id":"evt_creds","object":"event","type":"ping","created":1764500000,"data":{"object":{}}}`)
	req, err := http.NewRequest(http.MethodPost, e.api.URL+"/webhooks/stripe", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sig := signature.SignStripe(body, e.secret, time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sig)
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Authorization", "Bearer sk_live_credential_one")
	req.Header.Set("Cookie", "session=credential_two")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("got %d", resp.StatusCode)
	}
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.stack.Resources.TableName),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "event#stripe##evt_creds"}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("get item: %v", err)
	}
	// The event's two items: its status and its body (payload, headers).
	id, ok := out.Item["body_id"].(*types.AttributeValueMemberS)
	if !ok {
		t.Fatal("the event's item names no body")
	}
	kept, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.stack.Resources.TableName),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "body#" + id.Value}},
	})
	if err != nil || kept.Item == nil {
		t.Fatalf("get body: %v", err)
	}
	var raw, status map[string]any
	if err := attributevalue.UnmarshalMap(kept.Item, &raw); err != nil {
		t.Fatal(err)
	}
	if err := attributevalue.UnmarshalMap(out.Item, &status); err != nil {
		t.Fatal(err)
	}
	dump := fmt.Sprint(raw, status)
	for _, secret := range []string{"credential_one", "credential_two", "Authorization", "Cookie"} {
		if strings.Contains(dump, secret) {
			t.Errorf("the stored item holds %q: %s", secret, dump)
		}
	}
	headers, _ := raw["headers"].(map[string]any)
	if headers["Stripe-Signature"] != sig || headers["User-Agent"] == nil || raw["request_id"] == "" || raw["request_id"] == nil {
		t.Errorf("kept headers %v, request id %v; want the signature, the user agent and the request id", headers, raw["request_id"])
	}
}

// TestLayoutDecidedAtStart: the processor decides the table's layout when
// it starts, on the new table, before ingest has stored anything: a look
// made later, at a commit after a burst, would find more items than it
// samples and make every commit check its facts' twins for good.
func TestLayoutDecidedAtStart(t *testing.T) {
	e := mustEnv(t)
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.stack.Resources.TableName), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: inboxstore.LayoutPK}}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item["unscoped_facts"].(*types.AttributeValueMemberBOOL); !ok || v.Value {
		t.Errorf("layout item at the start: %v, want unscoped_facts false", out.Item)
	}
}
