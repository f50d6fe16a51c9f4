package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
)

// Forwarding, locally: the bus FORWARD's routes put on (the template's
// ForwardBus create), and the template's example consumer — its rule,
// with the template's event pattern, sending every forwarded event to a
// queue, where a developer (or a test) sees what was forwarded.
const (
	ForwardBusName       = "webhook-inbox-local-webhooks"
	ForwardedQueueName   = "webhook-inbox-forwarded"
	forwardRuleName      = "webhook-inbox-forwarded"
	forwardExampleRuleID = "ForwardExampleRule"
)

// provisionForwarding creates the local bus, the forwarded-events queue
// and the rule between them, and returns the queue's URL. It is
// idempotent.
func provisionForwarding(ctx context.Context, cfg aws.Config, tpl *template.Template) (string, error) {
	rule, err := tpl.Resource(forwardExampleRuleID)
	if err != nil {
		return "", err
	}
	pattern, err := json.Marshal(rule.Properties["EventPattern"])
	if err != nil || rule.Properties["EventPattern"] == nil {
		return "", fmt.Errorf("%s: no EventPattern (%v)", forwardExampleRuleID, err)
	}
	eb := eventbridge.NewFromConfig(cfg)
	_, err = eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(ForwardBusName)})
	var exists *ebtypes.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		return "", fmt.Errorf("create bus %s: %w", ForwardBusName, err)
	}
	q := sqs.NewFromConfig(cfg)
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(ForwardedQueueName)})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", ForwardedQueueName, err)
	}
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: created.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", ForwardedQueueName, err)
	}
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String(forwardRuleName), EventBusName: aws.String(ForwardBusName), EventPattern: aws.String(string(pattern)),
	}); err != nil {
		return "", fmt.Errorf("put rule %s: %w", forwardRuleName, err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule: aws.String(forwardRuleName), EventBusName: aws.String(ForwardBusName),
		Targets: []ebtypes.Target{{Id: aws.String("forwarded-events"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}},
	}); err != nil {
		return "", fmt.Errorf("put targets of %s: %w", forwardRuleName, err)
	}
	return aws.ToString(created.QueueUrl), nil
}

// Forwarded is one event as the local bus's rule delivered it to the
// forwarded-events queue: EventBridge's envelope, its detail as put.
type Forwarded struct {
	ID         string          `json:"id"`
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`
	// MessageID is the SQS message that carried it.
	MessageID string `json:"-"`
}

// EventKey is the event key the detail carries (detail.webhook_inbox).
func (f Forwarded) EventKey() string {
	var d struct {
		Meta struct {
			EventKey string `json:"event_key"`
		} `json:"webhook_inbox"`
	}
	_ = json.Unmarshal(f.Detail, &d)
	return d.Meta.EventKey
}

// ReceiveForwarded receives (and deletes) what the forwarded-events queue
// holds now, waiting up to wait seconds for the first.
func ReceiveForwarded(ctx context.Context, q *sqs.Client, url string, wait int32) ([]Forwarded, error) {
	return receiveForwarded(ctx, q, url, wait, 0)
}

// receiveForwarded is ReceiveForwarded with the received messages'
// visibility timeout (0: the queue's).
func receiveForwarded(ctx context.Context, q *sqs.Client, url string, wait, visibility int32) ([]Forwarded, error) {
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: visibility})
	if err != nil {
		return nil, err
	}
	var got []Forwarded
	for _, m := range out.Messages {
		var f Forwarded
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &f); err != nil {
			return got, fmt.Errorf("forwarded message %s: %w", aws.ToString(m.MessageId), err)
		}
		f.MessageID = aws.ToString(m.MessageId)
		got = append(got, f)
		if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return got, err
		}
	}
	return got, nil
}

// drainVisibility is how long a message the drain received stays hidden:
// a receive whose answer was lost (the SDK then retries it) leaves its
// messages in flight, and the drain waits for them to come back. A
// message that comes back before its delete (a slow one) is received
// again, and counted once: the drain keeps each SQS message once.
const drainVisibility = 2

// DrainForwarded receives (and deletes) everything the forwarded-events
// queue holds, visible or in flight: it ends when two receives of a second
// find nothing and the queue counts no message at all. A drain that ended
// at the first empty receives would miss the messages of a receive whose
// answer was lost, and an audit would count their events never forwarded.
// Each SQS message is returned once, however often it was received.
func DrainForwarded(ctx context.Context, q *sqs.Client, url string) ([]Forwarded, error) {
	var all []Forwarded
	seen := map[string]bool{}
	for {
		for empty, failed := 0, 0; empty < 2; {
			batch, err := receiveForwarded(ctx, q, url, 1, drainVisibility)
			if err != nil {
				// A receive whose answer was cut (kumo once ended a 200
				// mid-body): its messages come back after drainVisibility
				// and are counted once, so it is tried again, a few times.
				if failed++; failed > 3 || ctx.Err() != nil {
					return all, err
				}
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if len(batch) == 0 {
				empty++
			}
			for _, f := range batch {
				if !seen[f.MessageID] {
					seen[f.MessageID] = true
					all = append(all, f)
				}
			}
		}
		attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		}})
		if err != nil {
			return all, err
		}
		left := 0
		for _, v := range attrs.Attributes {
			n, _ := strconv.Atoi(v)
			left += n
		}
		if left == 0 {
			return all, nil
		}
		select {
		case <-ctx.Done():
			return all, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// LogForwarded logs each event arriving on the forwarded-events queue
// until ctx ends.
func LogForwarded(ctx context.Context, q *sqs.Client, url string, log *slog.Logger) {
	for ctx.Err() == nil {
		got, err := ReceiveForwarded(ctx, q, url, 5)
		if err != nil && ctx.Err() == nil {
			log.Warn("forwarded events queue", "error", err.Error())
			time.Sleep(time.Second)
		}
		for _, f := range got {
			log.Info("forwarded event received", "source", f.Source, "detail_type", f.DetailType, "event_key", f.EventKey(), "detail_bytes", len(f.Detail))
		}
	}
}
