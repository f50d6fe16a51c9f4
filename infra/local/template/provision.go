package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// DynamoDBAPI is the part of *dynamodb.Client that Provision uses.
type DynamoDBAPI interface {
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// SQSAPI is the part of *sqs.Client that Provision uses.
type SQSAPI interface {
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

var (
	_ DynamoDBAPI = (*dynamodb.Client)(nil)
	_ SQSAPI      = (*sqs.Client)(nil)
)

// ProvisionOptions names the local resources and the template entries they
// come from. Zero fields take the defaults noted beside them.
type ProvisionOptions struct {
	TableName           string // default "webhook-inbox-inbox"
	QueueName           string // default "webhook-inbox-main"
	DeadLetterQueueName string // default "webhook-inbox-dlq"

	Table     string // logical ID, default "InboxTable"
	Queue     string // logical ID, default "MainQueue"; its RedrivePolicy names the dead-letter queue
	Processor string // logical ID of the function with the SQS event, default "ProcessorFunction"

	// TableActiveTimeout bounds the wait for a new table to become ACTIVE;
	// default 1 minute.
	TableActiveTimeout time.Duration
}

func (o ProvisionOptions) withDefaults() ProvisionOptions {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.TableName, "webhook-inbox-inbox")
	def(&o.QueueName, "webhook-inbox-main")
	def(&o.DeadLetterQueueName, "webhook-inbox-dlq")
	def(&o.Table, "InboxTable")
	def(&o.Queue, "MainQueue")
	def(&o.Processor, "ProcessorFunction")
	if o.TableActiveTimeout <= 0 {
		o.TableActiveTimeout = time.Minute
	}
	return o
}

// Resources describes what Provision created or found, for wiring the local
// functions (INBOX_TABLE, QUEUE_URL, DLQ_URL) and the local SQS poller.
type Resources struct {
	TableName         string
	QueueURL          string
	QueueARN          string
	DLQURL            string
	DLQARN            string
	MaxReceiveCount   int
	VisibilityTimeout time.Duration
	BatchSize         int
	BatchingWindow    time.Duration
	MaxConcurrency    int           // the event source's MaximumConcurrency; 0 when unlimited
	FunctionTimeout   time.Duration // the processor function's Timeout
}

// Provision creates the inbox table (then enables its TTL), the dead-letter
// queue and the main queue, whose RedrivePolicy points at the dead-letter
// queue's real ARN, all as template.yaml declares them. It is idempotent: an
// existing table is reused when its key schema matches the template (an error
// otherwise), and existing queues get the template's attributes again.
// Encryption and point-in-time recovery have no local meaning and are left
// out.
func Provision(ctx context.Context, ddb DynamoDBAPI, sq SQSAPI, t *Template, opts ProvisionOptions) (Resources, error) {
	opts = opts.withDefaults()
	table, err := t.Table(opts.Table)
	if err != nil {
		return Resources{}, fmt.Errorf("provision: %w", err)
	}
	queue, err := t.Queue(opts.Queue)
	if err != nil {
		return Resources{}, fmt.Errorf("provision: %w", err)
	}
	if queue.Redrive == nil {
		return Resources{}, fmt.Errorf("provision: queue %s has no RedrivePolicy", opts.Queue)
	}
	dlq, err := t.Queue(queue.Redrive.DeadLetterQueue)
	if err != nil {
		return Resources{}, fmt.Errorf("provision: %w", err)
	}
	fn, err := t.Function(opts.Processor)
	if err != nil {
		return Resources{}, fmt.Errorf("provision: %w", err)
	}
	if fn.SQS == nil || fn.SQS.Queue != opts.Queue {
		return Resources{}, fmt.Errorf("provision: function %s has no SQS event on %s", opts.Processor, opts.Queue)
	}

	if err := provisionTable(ctx, ddb, table, opts); err != nil {
		return Resources{}, fmt.Errorf("provision table %s: %w", opts.TableName, err)
	}
	dlqURL, dlqARN, err := provisionQueue(ctx, sq, opts.DeadLetterQueueName, queueAttributes(dlq, ""))
	if err != nil {
		return Resources{}, fmt.Errorf("provision queue %s: %w", opts.DeadLetterQueueName, err)
	}
	queueURL, queueARN, err := provisionQueue(ctx, sq, opts.QueueName, queueAttributes(queue, dlqARN))
	if err != nil {
		return Resources{}, fmt.Errorf("provision queue %s: %w", opts.QueueName, err)
	}
	return Resources{
		TableName:         opts.TableName,
		QueueURL:          queueURL,
		QueueARN:          queueARN,
		DLQURL:            dlqURL,
		DLQARN:            dlqARN,
		MaxReceiveCount:   queue.Redrive.MaxReceiveCount,
		VisibilityTimeout: queue.VisibilityTimeout,
		BatchSize:         fn.SQS.BatchSize,
		BatchingWindow:    fn.SQS.BatchingWindow,
		MaxConcurrency:    fn.SQS.MaximumConcurrency,
		FunctionTimeout:   fn.Timeout,
	}, nil
}

func provisionTable(ctx context.Context, ddb DynamoDBAPI, spec TableSpec, opts ProvisionOptions) error {
	in := createTableInput(spec, opts.TableName)
	out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	var notFound *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		if _, err := ddb.CreateTable(ctx, in); err != nil {
			var inUse *ddbtypes.ResourceInUseException
			if !errors.As(err, &inUse) { // someone else just created it
				return fmt.Errorf("create: %w", err)
			}
		}
	case err != nil:
		return fmt.Errorf("describe: %w", err)
	default:
		if !sameKeySchema(out.Table.KeySchema, in.KeySchema) {
			return fmt.Errorf("exists with key schema %s, the template says %s: delete it or reset the emulator",
				keySchemaString(out.Table.KeySchema), keySchemaString(in.KeySchema))
		}
	}
	if err := waitActive(ctx, ddb, opts.TableName, opts.TableActiveTimeout); err != nil {
		return err
	}
	if spec.TTLAttribute == "" {
		return nil
	}
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: in.TableName})
	if err != nil {
		return fmt.Errorf("describe TTL: %w", err)
	}
	if d := ttl.TimeToLiveDescription; d != nil {
		switch d.TimeToLiveStatus {
		case ddbtypes.TimeToLiveStatusEnabled, ddbtypes.TimeToLiveStatusEnabling:
			if got := aws.ToString(d.AttributeName); got != spec.TTLAttribute {
				return fmt.Errorf("TTL is on %q, the template says %q: delete the table or reset the emulator", got, spec.TTLAttribute)
			}
			return nil
		}
	}
	_, err = ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: in.TableName,
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
			AttributeName: aws.String(spec.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable TTL on %s: %w", spec.TTLAttribute, err)
	}
	return nil
}

func createTableInput(spec TableSpec, name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		KeySchema:   keySchemaInput(spec.KeySchema),
		BillingMode: ddbtypes.BillingMode(spec.BillingMode),
	}
	for _, d := range spec.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(d.AttributeName),
			AttributeType: ddbtypes.ScalarAttributeType(d.AttributeType),
		})
	}
	provisioned := spec.BillingMode == string(ddbtypes.BillingModeProvisioned)
	if provisioned {
		in.ProvisionedThroughput = &ddbtypes.ProvisionedThroughput{
			ReadCapacityUnits:  aws.Int64(spec.ReadCapacityUnits),
			WriteCapacityUnits: aws.Int64(spec.WriteCapacityUnits),
		}
	}
	for _, g := range spec.GlobalSecondaryIndexes {
		gsi := ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(g.IndexName),
			KeySchema: keySchemaInput(g.KeySchema),
			Projection: &ddbtypes.Projection{
				ProjectionType:   ddbtypes.ProjectionType(g.ProjectionType),
				NonKeyAttributes: g.NonKeyAttributes,
			},
		}
		if provisioned {
			gsi.ProvisionedThroughput = &ddbtypes.ProvisionedThroughput{
				ReadCapacityUnits:  aws.Int64(g.ReadCapacityUnits),
				WriteCapacityUnits: aws.Int64(g.WriteCapacityUnits),
			}
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi)
	}
	if spec.StreamViewType != "" {
		in.StreamSpecification = &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewType(spec.StreamViewType),
		}
	}
	return in
}

func keySchemaInput(ks []KeyElement) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, 0, len(ks))
	for _, k := range ks {
		out = append(out, ddbtypes.KeySchemaElement{
			AttributeName: aws.String(k.AttributeName),
			KeyType:       ddbtypes.KeyType(k.KeyType),
		})
	}
	return out
}

func sameKeySchema(a, b []ddbtypes.KeySchemaElement) bool {
	return slices.EqualFunc(a, b, func(x, y ddbtypes.KeySchemaElement) bool {
		return aws.ToString(x.AttributeName) == aws.ToString(y.AttributeName) && x.KeyType == y.KeyType
	})
}

func keySchemaString(ks []ddbtypes.KeySchemaElement) string {
	s := "["
	for i, k := range ks {
		if i > 0 {
			s += " "
		}
		s += aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
	}
	return s + "]"
}

// waitActive polls DescribeTable until the table is ACTIVE (emulators create
// tables at once; real DynamoDB takes seconds).
func waitActive(ctx context.Context, ddb DynamoDBAPI, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("wait for ACTIVE: %w", err)
		}
		if out.Table.TableStatus == ddbtypes.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for ACTIVE (status %s): %w", out.Table.TableStatus, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// queueAttributes renders a queue spec as SQS attributes; dlqARN is the real
// ARN of its dead-letter queue when it has one.
func queueAttributes(spec QueueSpec, dlqARN string) map[string]string {
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(int(spec.VisibilityTimeout / time.Second)),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(int(spec.MessageRetentionPeriod / time.Second)),
	}
	if spec.Redrive != nil {
		policy, _ := json.Marshal(struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     int    `json:"maxReceiveCount"`
		}{dlqARN, spec.Redrive.MaxReceiveCount})
		attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	return attrs
}

// provisionQueue creates the queue, or gives an existing one the attributes,
// and returns its URL and ARN.
func provisionQueue(ctx context.Context, sq SQSAPI, name string, attrs map[string]string) (url, arn string, _ error) {
	got, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	switch {
	case isQueueMissing(err):
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", "", fmt.Errorf("create: %w", err)
		}
		url = aws.ToString(out.QueueUrl)
	case err != nil:
		return "", "", fmt.Errorf("get URL: %w", err)
	default:
		url = aws.ToString(got.QueueUrl)
		if _, err := sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs}); err != nil {
			return "", "", fmt.Errorf("set attributes: %w", err)
		}
	}
	out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("get ARN: %w", err)
	}
	arn = out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", "", errors.New("get ARN: no QueueArn attribute")
	}
	return url, arn, nil
}

// isQueueMissing reports whether err says the queue does not exist, in the
// JSON protocol's words or in the query protocol's older ones.
func isQueueMissing(err error) bool {
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue"
}
