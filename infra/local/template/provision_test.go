package template

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
)

// TestProvision runs the Provision tests over the wire, each against a
// fresh local AWS (kumo) and DynamoDB emulator (dynoxide): both start in
// a fraction of a second.
func TestProvision(t *testing.T) {
	tests := []struct {
		name string
		run  func(*testing.T, *dynamodb.Client, *sqs.Client)
	}{
		{"creates resources from the template", testProvisionCreates},
		{"updates an existing queue", testProvisionUpdatesExistingQueue},
		{"rejects a table with another key schema", testProvisionRejectsMismatchedTable},
		{"redrive moves a message to the DLQ", testProvisionRedrive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ddb := dynamodb.NewFromConfig(awstest.StartDynamoDB(t).SafeConfig())
			sq := sqs.NewFromConfig(awstest.Start(t).Config())
			tt.run(t, ddb, sq)
		})
	}
}

func mustProvision(tb testing.TB, ddb DynamoDBAPI, sq SQSAPI, tpl *Template, opts ProvisionOptions) Resources {
	tb.Helper()
	res, err := Provision(context.Background(), ddb, sq, tpl, opts)
	if err != nil {
		tb.Fatalf("Provision: %v", err)
	}
	return res
}

func mustQueueAttributes(tb testing.TB, sq *sqs.Client, url string) map[string]string {
	tb.Helper()
	out, err := sq.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		tb.Fatalf("GetQueueAttributes(%s): %v", url, err)
	}
	return out.Attributes
}

func testProvisionCreates(t *testing.T, ddb *dynamodb.Client, sq *sqs.Client) {
	ctx := context.Background()
	tpl := mustLoad(t)

	res := mustProvision(t, ddb, sq, tpl, ProvisionOptions{})
	want := Resources{
		TableName:         "webhook-inbox-inbox",
		MaxReceiveCount:   10,
		VisibilityTimeout: 180 * time.Second,
		BatchSize:         10,
		BatchingWindow:    time.Second,
		MaxConcurrency:    5,
		FunctionTimeout:   30 * time.Second,
	}
	got := res
	got.QueueURL, got.QueueARN, got.DLQURL, got.DLQARN = "", "", "", ""
	if got != want {
		t.Errorf("Provision = %+v, want %+v", got, want)
	}
	for name, v := range map[string]string{"QueueURL": res.QueueURL, "DLQURL": res.DLQURL} {
		if !strings.HasPrefix(v, "http") {
			t.Errorf("%s = %q, want a URL", name, v)
		}
	}
	if !strings.HasSuffix(res.QueueARN, ":webhook-inbox-main") || !strings.HasSuffix(res.DLQARN, ":webhook-inbox-dlq") {
		t.Errorf("QueueARN, DLQARN = %q, %q; want the ARNs of webhook-inbox-main and webhook-inbox-dlq", res.QueueARN, res.DLQARN)
	}

	t.Run("table", func(t *testing.T) {
		out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(res.TableName)})
		if err != nil {
			t.Fatal(err)
		}
		tbl := out.Table
		if got := keySchemaString(tbl.KeySchema); got != "[pk:HASH]" {
			t.Errorf("key schema = %s, want [pk:HASH]", got)
		}
		var defs []string
		for _, d := range tbl.AttributeDefinitions {
			defs = append(defs, aws.ToString(d.AttributeName)+":"+string(d.AttributeType))
		}
		slices.Sort(defs)
		if got := strings.Join(defs, " "); got != "pk:S received_ms:N sweep_shard:S" {
			t.Errorf("attribute definitions = %s, want pk:S received_ms:N sweep_shard:S", got)
		}
		if len(tbl.GlobalSecondaryIndexes) != 1 {
			t.Fatalf("indexes = %+v, want the unfinished index", tbl.GlobalSecondaryIndexes)
		}
		gsi := tbl.GlobalSecondaryIndexes[0]
		if aws.ToString(gsi.IndexName) != "unfinished" || keySchemaString(gsi.KeySchema) != "[sweep_shard:HASH received_ms:RANGE]" ||
			gsi.Projection == nil || gsi.Projection.ProjectionType != ddbtypes.ProjectionTypeInclude {
			t.Errorf("index = %s %s %+v, want unfinished [sweep_shard:HASH received_ms:RANGE] INCLUDE", aws.ToString(gsi.IndexName), keySchemaString(gsi.KeySchema), gsi.Projection)
		}
		if tbl.BillingModeSummary == nil || tbl.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
			t.Errorf("billing mode = %+v, want PAY_PER_REQUEST", tbl.BillingModeSummary)
		}
		ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(res.TableName)})
		if err != nil {
			t.Fatal(err)
		}
		d := ttl.TimeToLiveDescription
		if d == nil || d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "expires_at" {
			t.Errorf("TTL = %+v, want ENABLED on expires_at", d)
		}
	})

	t.Run("queues", func(t *testing.T) {
		main := mustQueueAttributes(t, sq, res.QueueURL)
		if got := main["VisibilityTimeout"]; got != "180" {
			t.Errorf("main VisibilityTimeout = %s, want 180", got)
		}
		if got := main["MessageRetentionPeriod"]; got != "345600" {
			t.Errorf("main MessageRetentionPeriod = %s, want 345600", got)
		}
		var policy struct {
			DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(main["RedrivePolicy"]), &policy); err != nil {
			t.Fatalf("RedrivePolicy %q: %v", main["RedrivePolicy"], err)
		}
		if policy.DeadLetterTargetArn != res.DLQARN {
			t.Errorf("RedrivePolicy.deadLetterTargetArn = %s, want %s", policy.DeadLetterTargetArn, res.DLQARN)
		}
		if got := strings.Trim(string(policy.MaxReceiveCount), `"`); got != "10" {
			t.Errorf("RedrivePolicy.maxReceiveCount = %s, want 10", got)
		}
		dlq := mustQueueAttributes(t, sq, res.DLQURL)
		if got := dlq["MessageRetentionPeriod"]; got != "1209600" {
			t.Errorf("DLQ MessageRetentionPeriod = %s, want 1209600", got)
		}
		if _, ok := dlq["RedrivePolicy"]; ok {
			t.Errorf("DLQ has a RedrivePolicy %s, want none", dlq["RedrivePolicy"])
		}
	})

	t.Run("twice", func(t *testing.T) {
		again := mustProvision(t, ddb, sq, tpl, ProvisionOptions{})
		if again != res {
			t.Errorf("second Provision = %+v, want %+v", again, res)
		}
	})
}

// testProvisionUpdatesExistingQueue: a queue left by an older template gets
// the current attributes.
func testProvisionUpdatesExistingQueue(t *testing.T, ddb *dynamodb.Client, sq *sqs.Client) {
	_, err := sq.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String("webhook-inbox-main"),
		Attributes: map[string]string{"VisibilityTimeout": "5"},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := mustProvision(t, ddb, sq, mustLoad(t), ProvisionOptions{})
	attrs := mustQueueAttributes(t, sq, res.QueueURL)
	if got := attrs["VisibilityTimeout"]; got != "180" {
		t.Errorf("VisibilityTimeout = %s, want 180", got)
	}
	if !strings.Contains(attrs["RedrivePolicy"], res.DLQARN) {
		t.Errorf("RedrivePolicy = %s, want one naming %s", attrs["RedrivePolicy"], res.DLQARN)
	}
}

func testProvisionRejectsMismatchedTable(t *testing.T, ddb *dynamodb.Client, sq *sqs.Client) {
	_, err := ddb.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String("webhook-inbox-inbox"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Provision(context.Background(), ddb, sq, mustLoad(t), ProvisionOptions{})
	if err == nil || !strings.Contains(err.Error(), "key schema") {
		t.Errorf("Provision over a table keyed on id = %v, want a key schema error", err)
	}
}

// testProvisionRedrive proves the provisioned redrive works end to end: after
// MaxReceiveCount receives without a delete the message is in the DLQ. moto
// moves it on the receive after the last one, as EMULATORS.md notes.
func testProvisionRedrive(t *testing.T, ddb *dynamodb.Client, sq *sqs.Client) {
	ctx := context.Background()
	tpl := mustLoad(t, WithParameter("MaxReceiveCount", "3"))
	res := mustProvision(t, ddb, sq, tpl, ProvisionOptions{})
	if res.MaxReceiveCount != 3 {
		t.Fatalf("MaxReceiveCount = %d, want the override 3", res.MaxReceiveCount)
	}

	const body = `{"event_key":"stripe#evt_1"}`
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(res.QueueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	receive := func(url string) []sqstypes.Message {
		t.Helper()
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		return out.Messages
	}
	for i := 1; i <= res.MaxReceiveCount; i++ {
		msgs := receive(res.QueueURL)
		if len(msgs) != 1 {
			t.Fatalf("receive %d: got %d messages, want 1", i, len(msgs))
		}
		if got, want := msgs[0].Attributes["ApproximateReceiveCount"], strconv.Itoa(i); got != want {
			t.Errorf("receive %d: ApproximateReceiveCount = %s, want %s", i, got, want)
		}
		if _, err := sq.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(res.QueueURL), ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatalf("ChangeMessageVisibility: %v", err)
		}
	}
	if msgs := receive(res.QueueURL); len(msgs) != 0 {
		t.Errorf("receive %d from the main queue: got %d messages, want 0 (moved to the DLQ)", res.MaxReceiveCount+1, len(msgs))
	}
	msgs := receive(res.DLQURL)
	if len(msgs) != 1 {
		t.Fatalf("DLQ: got %d messages, want 1", len(msgs))
	}
	if got := aws.ToString(msgs[0].Body); got != body {
		t.Errorf("DLQ message body = %s, want %s", got, body)
	}
}

func TestProvisionOptionsErrors(t *testing.T) {
	tpl := mustParse(t, globalsSrc)
	tests := []struct {
		name      string
		opts      ProvisionOptions
		wantInErr string
	}{
		{"missing table", ProvisionOptions{Table: "Nope", Queue: "Q", Processor: "F"}, "Nope"},
		{"queue without redrive", ProvisionOptions{Table: "T", Queue: "Q", Processor: "F"}, "no RedrivePolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The template is checked before any call: nil clients are never used.
			_, err := Provision(context.Background(), nil, nil, tpl, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("Provision = %v, want an error containing %q", err, tt.wantInErr)
			}
		})
	}
}
