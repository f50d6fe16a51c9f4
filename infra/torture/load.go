//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

// loadReport is the load benchmark: the system's figures beside the floor
// of the minimal calls per event on the same emulators, in the same run.
type loadReport struct {
	// PeakServices and PeakDynamo are the emulators' peak resident memory
	// (VmHWM) over the whole run, in MiB.
	PeakServices, PeakDynamo float64
	// Services names the emulator of SQS and the rest (kumo or moto).
	Services string
	// FirstTenth and LastTenth are the events processed per second over
	// the first and the last tenth of the events, in the order they were
	// processed: a table that slowed down as it filled would show it.
	FirstTenth, LastTenth float64
	// Floor is the floor's time for as many events; FloorIngest its
	// events stored and sent per second.
	Floor       time.Duration
	FloorIngest float64
	Ingest      float64 // the system's deliveries answered per second
	AllDone     time.Duration
	// Events is the workload's size; SysCalls and FloorCalls count the
	// AWS calls, by call type, that the system's run and the floor's made
	// through the router.
	Events               int
	SysCalls, FloorCalls map[string]int64
}

// measureLoad adds the load figures to rep: the tenths from the table,
// then the floor, then the emulators' peak memory. worked is the router's
// count of calls when the system's run ended.
func measureLoad(ctx context.Context, sys *system, o options, w *workload, rep *report, worked local.FaultCounts) error {
	items, err := scan(ctx, sys)
	if err != nil {
		return err
	}
	var done []time.Time
	for pk, it := range items {
		if strings.HasPrefix(pk, "event#") && it.ProcessedAt != "" {
			if t, err := time.Parse(time.RFC3339Nano, it.ProcessedAt); err == nil {
				done = append(done, t)
			}
		}
	}
	slices.SortFunc(done, time.Time.Compare)
	lr := &loadReport{AllDone: rep.AllDone, Ingest: float64(rep.Stats.Requests.Load()) / rep.SendTime.Seconds(),
		Events: len(w.Events), SysCalls: worked.CallsBy}
	if tenth := len(done) / 10; tenth > 1 {
		rate := func(a, b time.Time) float64 { return float64(tenth) / max(b.Sub(a).Seconds(), 0.001) }
		lr.FirstTenth = rate(done[0], done[tenth])
		lr.LastTenth = rate(done[len(done)-1-tenth], done[len(done)-1])
	}
	before := sys.faults.Counts()
	floor, ingest, err := runFloor(ctx, sys, o, len(w.Events))
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	lr.FloorCalls = map[string]int64{}
	for k, v := range sys.faults.Counts().CallsBy {
		if d := v - before.CallsBy[k]; d > 0 {
			lr.FloorCalls[k] = d
		}
	}
	lr.Floor, lr.FloorIngest = floor, ingest
	lr.Services = sys.aws.Services.Kind
	lr.PeakServices = peakMiB(sys.aws.Services.Pid())
	if sys.aws.Dynamo != sys.aws.Services {
		lr.PeakDynamo = peakMiB(sys.aws.Dynamo.Pid())
	}
	rep.Load = lr
	return nil
}

func (l *loadReport) print(out io.Writer) {
	fmt.Fprintf(out, "torture: load: ingest %.0f deliveries/s; all processed %s after the first delivery; floor (one conditional put, one send, batched receive and delete, one transaction per event) %s, ingest %.0f events/s: %.2fx the floor\n",
		l.Ingest, l.AllDone.Round(100*time.Millisecond), l.Floor.Round(100*time.Millisecond), l.FloorIngest, l.AllDone.Seconds()/l.Floor.Seconds())
	fmt.Fprintf(out, "torture: load: processed %.0f events/s over the first tenth, %.0f over the last (%.2fx); peak memory %s %.0f MiB, dynoxide %.0f MiB\n",
		l.FirstTenth, l.LastTenth, l.LastTenth/max(l.FirstTenth, 0.001), l.Services, l.PeakServices, l.PeakDynamo)
	fmt.Fprintf(out, "torture: load: AWS calls per event: system %s; floor %s\n", perEvent(l.SysCalls, l.Events), perEvent(l.FloorCalls, l.Events))
}

// perEvent formats calls by type as their total and the largest types per
// event, most first: "9.1 (SQS.SendMessage 3.0, DynamoDB.PutItem 2.6, …)".
func perEvent(calls map[string]int64, events int) string {
	if events == 0 {
		return "-"
	}
	type kv struct {
		k string
		v int64
	}
	var all []kv
	var total int64
	for k, v := range calls {
		all = append(all, kv{k, v})
		total += v
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.k, b.k)) })
	parts := make([]string, 0, len(all))
	for _, c := range all {
		parts = append(parts, fmt.Sprintf("%s %.2f", c.k, float64(c.v)/float64(events)))
	}
	return fmt.Sprintf("%.2f (%s)", float64(total)/float64(events), strings.Join(parts, ", "))
}

// runFloor stores, sends, receives and commits n events with the fewest
// calls the design allows — per event one conditional put and one send;
// per batch of ten one receive and one delete; per event one transaction
// (a fact and the event's status) — with as many producers as the
// workload's senders and as many consumers as the workers' batches in
// flight, through the same router. It returns the time until the last
// commit and the rate of puts and sends.
func runFloor(ctx context.Context, sys *system, o options, n int) (time.Duration, float64, error) {
	cfg := sys.aws.Dynamo.Config()
	cfg.BaseEndpoint = aws.String(sys.aws.Endpoint)
	ddb := dynamodb.NewFromConfig(cfg)
	sq := sqs.NewFromConfig(cfg)
	table := fmt.Sprintf("floor-%d", o.Seed)
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	}); err != nil {
		return 0, 0, err
	}
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(table)})
	if err != nil {
		return 0, 0, err
	}
	payload := strings.Repeat("x", 1200) // about a workload event's size

	start := time.Now()
	var committed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var produced sync.WaitGroup
	next := atomic.Int64{}
	var ingested atomic.Int64 // when the last producer finished, since start
	for range o.Senders {
		produced.Add(1)
		go func() {
			defer produced.Done()
			defer func() {
				d := int64(time.Since(start))
				for o := ingested.Load(); d > o && !ingested.CompareAndSwap(o, d); o = ingested.Load() {
				}
			}()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				pk := fmt.Sprintf("event#floor##%d", i)
				if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
					TableName: &table,
					Item: map[string]ddbtypes.AttributeValue{
						"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "status": &ddbtypes.AttributeValueMemberS{Value: "received"},
						"payload": &ddbtypes.AttributeValueMemberS{Value: payload},
					},
					ConditionExpression: aws.String("attribute_not_exists(pk)"),
				}); err != nil {
					fail(err)
					return
				}
				if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: &pk}); err != nil {
					fail(err)
					return
				}
			}
		}()
	}

	var consumed sync.WaitGroup
	consumers := o.Workers * max(sys.stack.Resources.MaxConcurrency, 1)
	for range consumers {
		consumed.Add(1)
		go func() {
			defer consumed.Done()
			for committed.Load() < int64(n) && ctx.Err() == nil {
				out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					fail(err)
					return
				}
				var del []sqstypes.DeleteMessageBatchRequestEntry
				fresh := 0
				for i, m := range out.Messages {
					pk := aws.ToString(m.Body)
					if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
						{Put: &ddbtypes.Put{TableName: &table, Item: map[string]ddbtypes.AttributeValue{
							"pk": &ddbtypes.AttributeValueMemberS{Value: "fact#" + pk}}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
						{Update: &ddbtypes.Update{TableName: &table, Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}},
							UpdateExpression:          aws.String("SET #s = :p"),
							ConditionExpression:       aws.String("#s = :r"),
							ExpressionAttributeNames:  map[string]string{"#s": "status"},
							ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "processed"}, ":r": &ddbtypes.AttributeValueMemberS{Value: "received"}}}},
					}}); err == nil {
						fresh++
					} else if !redelivered(err) {
						fail(err)
						return
					}
					// A message back after its visibility timeout (moto is
					// slow with a long queue) finds its event committed: it
					// is deleted, and not counted again.
					del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
				}
				if len(del) > 0 {
					if _, err := sq.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: del}); err != nil {
						fail(err)
						return
					}
					committed.Add(int64(fresh))
				}
			}
		}()
	}
	consumed.Wait()
	produced.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	elapsed := time.Since(start)
	return elapsed, float64(n) / time.Duration(ingested.Load()).Seconds(), nil
}

// peakMiB is a process's peak resident memory, from /proc; 0 where it
// cannot be read.
func peakMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// redelivered reports whether a floor transaction was refused because its
// event was committed already: both conditions failed.
func redelivered(err error) bool {
	var tc *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tc) || len(tc.CancellationReasons) == 0 {
		return false
	}
	for _, r := range tc.CancellationReasons {
		if aws.ToString(r.Code) != "ConditionalCheckFailed" {
			return false
		}
	}
	return true
}
