// Command cost is `make cost`: the AWS bill per million events of each
// shipped example's paths, measured by running N signed deliveries of each
// through the local stack (the real ingest and processor handlers, the SQS
// event source as the local poller runs it) with an SDK middleware that
// counts every AWS call and the DynamoDB capacity it consumed, beside the
// floor of what these guarantees need at the least, and the ratio.
//
// What is measured here stands for Lambda's run in one respect only
// approximately: durations are this machine's against emulators on
// loopback (the GB-seconds line says so). Capacity units are dynoxide's
// ReturnConsumedCapacity, which follows DynamoDB's rules (a unit per KB
// written, twice inside a transaction, index entries included) except
// that it does not bill a write whose condition is refused (DynamoDB
// does: the duplicate path adds the stored event's units).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// Prices: us-east-1, on-demand list prices as published by AWS in 2025
// (check aws.amazon.com/pricing before relying on them), in dollars.
const (
	priceAPIRequest   = 1.00 / 1e6        // HTTP API, first 300 million a month, per 512 KB of request
	apiIncrement      = 512 << 10         // HTTP API meters requests in 512 KB increments
	priceLambdaGBs    = 0.0000133334      // arm64, per GB-second
	priceLambdaInvoke = 0.20 / 1e6        // per request
	priceWRU          = 0.625 / 1e6       // DynamoDB on-demand write request unit (standard table class)
	priceRRU          = 0.125 / 1e6       // read request unit
	priceSQSRequest   = 0.40 / 1e6        // standard queue, per 64 KB request
	priceSecretsCall  = 0.05 / 1e4        // Secrets Manager API call
	priceLogsGB       = 0.50 / (1 << 30)  // CloudWatch Logs ingestion, per byte
	priceS3Write      = 0.005 / 1e3       // S3 Standard PUT, COPY, POST, LIST per request
	priceS3Read       = 0.0004 / 1e3      // S3 Standard GET per request
	priceS3ByteMonth  = 0.023 / (1 << 30) // S3 Standard storage, first 50 TB, per byte-month
	priceEBEvent      = 1.00 / 1e6        // EventBridge custom event put, per 64 KB chunk of an entry
	ebChunk           = 64 << 10          // EventBridge bills each 64 KB of an entry as one event
	lambdaGB          = 0.25              // MemorySize 256 in template.yaml
	batchSize         = 10                // ProcessorBatchSize default
)

func main() {
	n := flag.Int("n", 100, "deliveries per path")
	logs := flag.String("logs", "", "also write the functions' logs, which the bill counts, to this file")
	flag.Parse()
	if *logs != "" {
		f, err := os.Create(*logs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cost:", err)
			os.Exit(1)
		}
		defer f.Close()
		logCopy = f
	}
	if err := run(*n, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cost:", err)
		os.Exit(1)
	}
}

// meter counts the AWS calls by service and operation (and, through its
// Capacity, DynamoDB's consumed units), the log bytes and Lambda's billed
// milliseconds.
type meter struct {
	emulators.Capacity
	mu       sync.Mutex
	calls    map[string]int
	logBytes int64
	lambdaMS float64 // billed: each invocation rounded up to 1 ms
	invokes  int
	// apiRequests is the HTTP API's metered requests: one per 512 KB.
	apiRequests int
	// objectBytes is the bytes of the payload objects put.
	objectBytes int64
	// ebEvents is the EventBridge events billed: each entry put, a unit
	// per 64 KB of it.
	ebEvents int
}

func newMeter() *meter { return &meter{calls: map[string]int{}} }

// logCopy, if set, gets a copy of every log line (-logs).
var logCopy io.Writer

// localOnly is what the local stack adds to every log line to tell its
// functions apart in one stream (infra/local); a deployed function's lines
// go to its own log group without it, and the bill counts them so.
var localOnly = regexp.MustCompile(`"function":"[a-z]+",`)

func (m *meter) Write(p []byte) (int, error) {
	m.mu.Lock()
	m.logBytes += int64(len(p))
	for _, loc := range localOnly.FindAllIndex(p, -1) {
		m.logBytes -= int64(loc[1] - loc[0])
	}
	if logCopy != nil {
		logCopy.Write(p)
	}
	m.mu.Unlock()
	return len(p), nil
}

func (m *meter) invoked(d time.Duration) {
	m.mu.Lock()
	m.invokes++
	m.lambdaMS += math.Ceil(float64(d) / float64(time.Millisecond))
	m.mu.Unlock()
}

// reset starts every count again.
func (m *meter) reset() {
	m.Capacity.Reset()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls, m.logBytes, m.lambdaMS, m.invokes, m.apiRequests, m.objectBytes, m.ebEvents = map[string]int{}, 0, 0, 0, 0, 0, 0
}

// count is the client option that counts calls.
func (m *meter) count(s *middleware.Stack) error {
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc("calls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		m.mu.Lock()
		m.calls[middleware.GetServiceID(ctx)+"."+middleware.GetOperationName(ctx)]++
		if put, ok := in.Parameters.(*s3.PutObjectInput); ok && put.ContentLength != nil {
			m.objectBytes += *put.ContentLength
		}
		if put, ok := in.Parameters.(*eventbridge.PutEventsInput); ok {
			for _, e := range put.Entries {
				r := forward.Row{Source: aws.ToString(e.Source), DetailType: aws.ToString(e.DetailType)}
				if e.Time != nil {
					r.Time = e.Time.Format(time.RFC3339)
				}
				m.ebEvents += (forward.Size(r, []byte(aws.ToString(e.Detail))) + ebChunk - 1) / ebChunk
			}
		}
		m.mu.Unlock()
		return next.HandleInitialize(ctx, in)
	}), middleware.After)
}

// path is one way an example's delivery goes.
type path struct {
	name, source string
	// deliver makes delivery i: a fresh one, or one sent before.
	deliver func(i int) (*http.Request, []byte)
	// setup, if set, runs uncounted before the path.
	setup func(i int) (*http.Request, []byte)
	// new says the delivery stores an event (else it is a duplicate).
	new bool
	// large says its payload goes to an S3 object (the claim check).
	large bool
	// forwarded says the event is put on an EventBridge bus (FORWARD).
	forwarded bool
}

func run(n int, out io.Writer) error {
	ctx := context.Background()
	for name, to := range map[string]*string{"testdata/corpus/github/push/payload.json": &pushBody, local.SampleStripeEvent: &stripeBody} {
		b, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("%w (run from the repository's root)", err)
		}
		*to = string(b)
	}
	dir, err := os.MkdirTemp("", "cost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	aws, err := local.StartAWS(ctx, 0, dir)
	if err != nil {
		return err
	}
	defer aws.Stop()
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": aws.Endpoint, "AWS_REGION": emulators.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		os.Setenv(k, v)
	}
	cfg, err := app.AWSFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// An unmetered client, for the floor's measurements.
	raw := dynamodb.NewFromConfig(cfg)
	m := newMeter()
	cfg.APIOptions = append(cfg.APIOptions, m.count, m.Middleware)
	sources, err := local.LoadSources("infra/local/sources.json")
	if err != nil {
		return err
	}
	// A receiver for the receipts, answering 200, as a deployment has one:
	// the template's default target delivers to the log, which no
	// deployment that sends receipts keeps.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer receiver.Close()
	// The shipped examples' paths, and forwarding to EventBridge for one
	// type they do not send (no Go handler takes it), so that the others
	// are not forwarded.
	stack, err := local.Setup(ctx, cfg, "template.yaml", sources, map[string]string{
		"FORWARD": `[{"source":"stripe","types":["invoice.voided"]}]`,
		"TARGETS": fmt.Sprintf(`[{"name":"receipt","url":%q}]`, receiver.URL),
	}, obs.NewLogger(m, slog.LevelInfo))
	if err != nil {
		return err
	}
	retention, err := strconv.Atoi(stack.Env["PAYLOAD_RETENTION_DAYS"])
	if err != nil {
		return fmt.Errorf("PAYLOAD_RETENTION_DAYS: %w", err)
	}
	objectDays := claimcheck.ObjectDays(time.Duration(retention) * 24 * time.Hour)
	poller := stack.Poller(local.PollerClient(cfg), emulators.Region, slog.New(slog.DiscardHandler))
	handle := poller.Handler
	poller.Handler = func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		start := time.Now()
		r, err := handle(ctx, e)
		m.invoked(time.Since(start))
		return r, err
	}
	stripe, err := signer(sources, "stripe")
	if err != nil {
		return err
	}
	github, err := signer(sources, "github")
	if err != nil {
		return err
	}
	paths := []path{
		{name: "stripe invoice.paid, new", source: "stripe", new: true, deliver: func(i int) (*http.Request, []byte) {
			return stripe(invoice("evt_new_%d", "in_new_%d", i))
		}},
		{name: "stripe invoice.paid, duplicate delivery", source: "stripe",
			setup:   func(i int) (*http.Request, []byte) { return stripe(invoice("evt_dup_%d", "in_dup_%d", i)) },
			deliver: func(i int) (*http.Request, []byte) { return stripe(invoice("evt_dup_%d", "in_dup_%d", i)) }},
		{name: "stripe same invoice, other event", source: "stripe", new: true,
			setup: func(i int) (*http.Request, []byte) { return stripe(invoice("evt_first_%d", "in_same_%d", i)) },
			deliver: func(i int) (*http.Request, []byte) {
				return stripe(strings.Replace(invoice("evt_second_%d", "in_same_%d", i), `"invoice.paid"`, `"invoice.payment_succeeded"`, 1))
			}},
		{name: "stripe invoice.paid of 1 MB, new", source: "stripe", new: true, large: true, deliver: func(i int) (*http.Request, []byte) {
			return stripe(padded(invoice("evt_large_%d", "in_large_%d", i), 1<<20))
		}},
		{name: "stripe invoice.voided, forwarded, new", source: "stripe", new: true, forwarded: true, deliver: func(i int) (*http.Request, []byte) {
			return stripe(strings.Replace(invoice("evt_fwd_%d", "in_fwd_%d", i), `"invoice.paid"`, `"invoice.voided"`, 1))
		}},
		{name: "github push, new", source: "github", new: true, deliver: func(i int) (*http.Request, []byte) {
			return github(push(i), fmt.Sprintf("push-new-%d", i))
		}},
		{name: "github push, duplicate delivery", source: "github",
			setup:   func(i int) (*http.Request, []byte) { return github(push(n+i), fmt.Sprintf("push-dup-%d", i)) },
			deliver: func(i int) (*http.Request, []byte) { return github(push(n+i), fmt.Sprintf("push-dup-%d", i)) }},
	}
	fmt.Fprintf(out, "per million events, us-east-1 on-demand list prices (2025); %d deliveries a path; durations are this machine's\n\n", n)
	fmt.Fprintf(out, "%-40s %9s %9s %7s %7s %6s %6s %8s %8s %6s\n", "path", "$/M", "floor $/M", "ratio", "WRU", "RRU", "SQS", "Lambda ms", "log B", "calls")
	for _, p := range paths {
		if p.setup != nil {
			for i := range n {
				r, body := p.setup(i)
				if err := ingest(ctx, stack, r, body); err != nil {
					return err
				}
			}
			if err := drain(ctx, poller); err != nil {
				return err
			}
		}
		m.reset()
		since := time.Now()
		for i := range n {
			start := time.Now()
			r, body := p.deliver(i)
			if err := ingest(ctx, stack, r, body); err != nil {
				return err
			}
			m.invoked(time.Since(start))
			m.mu.Lock()
			m.apiRequests += (len(body) + apiIncrement - 1) / apiIncrement
			m.mu.Unlock()
		}
		if err := drain(ctx, poller); err != nil {
			return err
		}
		var f floorUnits
		if p.new {
			if f, err = measureFloor(ctx, raw, stack.Resources.TableName, p.source, since); err != nil {
				return err
			}
			if !p.large && !p.forwarded {
				stored[p.source] = f.whole
			}
		} else {
			f.whole = stored[p.source]
		}
		report(out, p, m, n, f, objectDays)
	}
	return nil
}

// stored is the write units of a stored event of each source written
// whole, from its new path: what DynamoDB bills a duplicate's refused Put
// when there is one.
var stored = map[string]float64{}

// floorUnits is what the floor of a path is made of, measured on the
// table and averaged over the path's events: whole, the write units of an
// event written as one item with its index entry (as releases before the
// split layout stored events: payload, metadata and status together);
// status, the write units of its status item as the run left it.
type floorUnits struct{ whole, status float64 }

// measureFloor measures the floor's units on every event of source the
// table received since the path began: it writes each whole under another
// key (its id with "-floor"), reads what the write cost, and deletes it.
// Every event, not one: an event written whole is near a kilobyte's
// boundary (a Stripe invoice's is about 3 KB), so one event's units say
// 3 or 4 by the bytes of its ids.
func measureFloor(ctx context.Context, db *dynamodb.Client, table, source string, since time.Time) (floorUnits, error) {
	var f floorUnits
	n := 0
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName: &table, ConsistentRead: aws.Bool(true),
		FilterExpression: aws.String("begins_with(pk, :p) AND attribute_exists(body_id) AND received_ms >= :since"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p":     &ddbtypes.AttributeValueMemberS{Value: "event#" + source + "#"},
			":since": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(since.UnixMilli(), 10)},
		},
	})
	store := inboxstore.New(db, table, 0)
	c := &capacityOf{API: db}
	floorStore := inboxstore.New(c, table, 0)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return floorUnits{}, fmt.Errorf("floor: %w", err)
		}
		for _, it := range page.Items {
			k, err := inbox.ParseKey(strings.TrimPrefix(it["pk"].(*ddbtypes.AttributeValueMemberS).Value, "event#"))
			if err != nil {
				return floorUnits{}, fmt.Errorf("floor: %w", err)
			}
			ev, err := store.Get(ctx, k, time.Now())
			if err != nil {
				return floorUnits{}, fmt.Errorf("floor: %w", err)
			}
			// As ingest stores it: received, due at once (in the index),
			// nothing of its processing yet; a payload in S3 by its
			// reference, as the status holds it.
			whole := inbox.Event{
				Key: ev.Key, Kind: ev.Kind, Type: ev.Type, Created: ev.Created, Payload: ev.Payload, PayloadRef: ev.PayloadRef, Attributes: ev.Attributes,
				Headers: ev.Headers, RequestID: ev.RequestID, Scope: ev.Scope, Unscoped: ev.Unscoped,
				Status: inbox.StatusReceived, ReceivedAt: ev.ReceivedAt, UpdatedAt: ev.ReceivedAt, DueAt: ev.ReceivedAt,
			}
			whole.Key.EventID += "-floor"
			if err := floorStore.PutWhole(ctx, whole); err != nil {
				return floorUnits{}, fmt.Errorf("floor: %w", err)
			}
			if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "event#" + whole.Key.String()}}}); err != nil {
				return floorUnits{}, fmt.Errorf("floor: %w", err)
			}
			f.whole += c.units
			f.status += math.Ceil(float64(emulators.ItemSize(it)) / 1024)
			n++
		}
	}
	if n == 0 {
		return floorUnits{}, fmt.Errorf("floor: no event of %s in the table since %s", source, since.Format(time.RFC3339))
	}
	f.whole /= float64(n)
	f.status /= float64(n)
	return f, nil
}

// capacityOf is a table client that asks for, and keeps, the capacity its
// last PutItem consumed.
type capacityOf struct {
	inboxstore.API
	units float64
}

func (c *capacityOf) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
	out, err := c.API.PutItem(ctx, in, opts...)
	if err == nil && out.ConsumedCapacity != nil {
		c.units = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	return out, err
}

// The corpus payloads the paths send (run reads them).
var pushBody, stripeBody string

var (
	firstID    = regexp.MustCompile(`"id": ?"evt_[A-Za-z0-9]+"`)
	invoiceID  = regexp.MustCompile(`"in_[A-Za-z0-9]+"`)
	customerID = regexp.MustCompile(`"cus_[A-Za-z0-9]+"`)
)

// invoice is the corpus's invoice.paid with its event and invoice ids made
// from i, and a customer of its own per invoice: a stream of one
// customer's invoices all in one period would make every membership update
// after the first stale, and each commit be refused once and retried.
func invoice(evt, in string, i int) string {
	b := firstID.ReplaceAllString(stripeBody, fmt.Sprintf(`"id": "`+evt+`"`, i))
	inv := fmt.Sprintf(in, i)
	b = customerID.ReplaceAllString(b, `"cus_`+strings.TrimPrefix(inv, "in_")+`"`)
	return invoiceID.ReplaceAllString(b, `"`+inv+`"`)
}

// padded is a Stripe event body grown to size bytes by a metadata field of
// random base64 text on its object, which gzip cannot shrink much: a
// payload for the claim check.
func padded(body string, size int) string {
	const field = `"object": {`
	at := strings.Index(body, field)
	if at < 0 {
		panic("the sample event has no data object")
	}
	at += len(field)
	pad := size - len(body) - len(`"metadata_pad": "",`)
	raw := make([]byte, pad)
	r := mrand.New(mrand.NewPCG(uint64(size), uint64(len(body))))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	text := base64.StdEncoding.EncodeToString(raw)[:pad]
	return body[:at] + `"metadata_pad": "` + text + `",` + body[at:]
}

// push is the corpus's push to a repository of its own per i: the same
// commits pushed to one repository again would be duplicate facts.
func push(i int) string {
	return strings.ReplaceAll(pushBody, "Codertocat/Hello-World", fmt.Sprintf("Codertocat/Hello-World-%d", i))
}

// signer returns a function that signs a body (and a delivery id, for
// schemes that carry one in a header) for the named local source.
func signer(sources local.SourcesFile, name string) (func(body string, delivery ...string) (*http.Request, []byte), error) {
	src, err := sources.Source(name)
	if err != nil {
		return nil, err
	}
	sample, err := local.LoadSample(".", name)
	if err != nil {
		return nil, err
	}
	return func(body string, delivery ...string) (*http.Request, []byte) {
		s := sample
		s.Body, s.BodyFile = body, ""
		if len(delivery) > 0 {
			s.Headers = map[string]string{}
			for k, v := range sample.Headers {
				s.Headers[k] = v
			}
			s.Headers["X-GitHub-Delivery"] = delivery[0]
		}
		req, err := s.Signed(".", src, time.Now())
		if err != nil {
			panic(err)
		}
		hr := httptest.NewRequest(http.MethodPost, "https://api.example/webhooks/"+name, bytes.NewReader(req.Body))
		hr.Header = req.Header
		return hr, req.Body
	}, nil
}

func ingest(ctx context.Context, stack *local.Stack, r *http.Request, body []byte) error {
	ev, ok := local.EventFromRequest(r, body, time.Now())
	if !ok {
		return fmt.Errorf("no route for %s", r.URL.Path)
	}
	resp, err := stack.Ingest.HandleV2(ctx, ev)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ingest answered %d %s", resp.StatusCode, resp.Body)
	}
	return nil
}

func drain(ctx context.Context, p *local.Poller) error {
	for range 10000 {
		got, err := p.PollOnce(ctx)
		if err != nil {
			return err
		}
		if got == 0 {
			return nil
		}
	}
	return fmt.Errorf("the main queue did not empty")
}

// report prints one path's bill per million deliveries beside its floor:
// one API request (a request per 512 KB, as HTTP APIs meter them), one
// conditional write of the stored event, one send, receive and delete
// batched by ten, one transaction over a small status item (1 KB) and the
// effects, no reads, and Lambda's invocations at the same measured
// durations (for a duplicate: the request and the refused write); for a
// payload in S3, its object put once, read once and stored for the
// bucket's lifecycle (objectDays); for a forwarded event, its entry put
// once (EventBridge bills each 64 KB of an entry as an event, whatever the
// request that carried it).
func report(out io.Writer, p path, m *meter, n int, f floorUnits, objectDays int) {
	per := func(v float64) float64 { return v / float64(n) }
	sqsReq := 0
	secrets := 0
	s3Writes, s3Reads := 0, 0
	var calls []string
	for op, c := range m.calls {
		if strings.HasPrefix(op, "SQS.") {
			sqsReq += c
		}
		switch op {
		case "S3.PutObject", "S3.CopyObject":
			s3Writes += c
		case "S3.GetObject", "S3.HeadObject":
			s3Reads += c
		}
		if strings.HasPrefix(op, "Secrets Manager.") {
			secrets += c
		}
		calls = append(calls, fmt.Sprintf("%s %.2f", op, per(float64(c))))
	}
	sort.Strings(calls)
	u := m.Units()
	for op, w := range u.WriteBy {
		calls = append(calls, fmt.Sprintf("WRU %s %.2f", op, per(w)))
	}
	sort.Strings(calls[len(calls)-len(u.WriteBy):])
	wru := u.Write
	if !p.new {
		// DynamoDB bills a refused Put as the write it would have been
		// (the stored event's, at most); dynoxide reports none.
		wru += f.whole * float64(m.calls["DynamoDB.PutItem"])
	}
	gbs := m.lambdaMS / 1000 * lambdaGB
	s3Stored := float64(m.objectBytes) * float64(objectDays) / 30 * priceS3ByteMonth
	bill := float64(m.apiRequests)*priceAPIRequest + gbs*priceLambdaGBs + float64(m.invokes)*priceLambdaInvoke +
		wru*priceWRU + u.Read*priceRRU + float64(sqsReq)*priceSQSRequest + float64(secrets)*priceSecretsCall + float64(m.logBytes)*priceLogsGB +
		float64(s3Writes)*priceS3Write + float64(s3Reads)*priceS3Read + s3Stored + float64(m.ebEvents)*priceEBEvent

	// The floor, per delivery. A duplicate: one eventually consistent
	// read of the stored event's status (half a read unit). A new event:
	// the event written once, whole, with its index entry; the commit:
	// a transaction over a status item of 1 KB (2 units) and the effects
	// (the transaction's table units less the status item's, twice), and
	// one write of the status's index entry (the event leaves the sweep's
	// view: dynoxide bills index writes once, as plain writes). A commit
	// with no part (an UpdateItem, no transaction) is floored at its
	// status write and its index entry, 2 units.
	floorWRU, floorRRU, floorSQS := 0.0, 0.5, 0.0
	effects := 0.0
	if p.new {
		table := per(u.WriteBy["TransactWriteItems"] - u.IndexWriteBy["TransactWriteItems"])
		effects = math.Max(table-2*f.status, 0) + 1
		if table == 0 {
			effects = 0
		}
		floorWRU, floorRRU = f.whole+2*1+effects, 0
		floorSQS = 1 + 2.0/batchSize
	}
	floor := per(float64(m.apiRequests))*priceAPIRequest + per(gbs)*priceLambdaGBs + per(float64(m.invokes))*priceLambdaInvoke + floorWRU*priceWRU + floorRRU*priceRRU + floorSQS*priceSQSRequest
	if p.large {
		// The object put once, read once, stored as long as the item may be.
		floor += priceS3Write + priceS3Read + per(s3Stored)
	}
	if p.forwarded {
		// The entry put once (in the transaction, the row is among the
		// effects above).
		floor += per(float64(m.ebEvents)) * priceEBEvent
	}
	perM := func(v float64) float64 { return v * 1e6 }
	fmt.Fprintf(out, "%-40s %9.2f %9.2f %6.2fx %7.2f %6.2f %6.2f %8.2f %8.0f\n    %s\n    floor: WRU %.2f (the event whole %.2f, its status %.2f, effects and index %.2f), RRU %.2f\n",
		p.name, perM(bill/float64(n)), perM(floor), bill/float64(n)/floor, per(wru), per(u.Read), per(float64(sqsReq)), per(m.lambdaMS), per(float64(m.logBytes)), strings.Join(calls, ", "),
		floorWRU, f.whole, f.status, effects, floorRRU)
}
