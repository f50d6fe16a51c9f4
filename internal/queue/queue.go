// Package queue sends, receives and deletes the messages that point at
// stored events, over SQS. SDK failures come back wrapping
// inbox.ErrUnavailable, or inbox.ErrInvalid when SQS refused the request
// itself (awserr decides).
package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// API is the SQS calls the queue makes, with the SDK's signatures.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Queue is one SQS queue.
type Queue struct {
	api API
	url string
}

// New returns the queue at url.
func New(api API, url string) *Queue { return &Queue{api: api, url: url} }

// URL returns the queue's URL.
func (q *Queue) URL() string { return q.url }

// Enqueue sends the message that points at the stored event k.
func (q *Queue) Enqueue(ctx context.Context, k inbox.Key) error {
	body, err := inbox.EncodeMessage(k)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", k, err)
	}
	return q.Send(ctx, body)
}

// Send sends a raw message body, as it is (replay moves bodies unchanged).
func (q *Queue) Send(ctx context.Context, body string) error {
	if _, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q.url, MessageBody: &body}); err != nil {
		return awserr.Wrap("send to "+q.url, err)
	}
	return nil
}

// Message is a received message.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          string
}

// Receive takes up to max (1–10) messages and hides them for visibility
// seconds, waiting up to wait seconds for the first.
func (q *Queue) Receive(ctx context.Context, max, visibility, wait int32) ([]Message, error) {
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            &q.url,
		MaxNumberOfMessages: max,
		VisibilityTimeout:   visibility,
		WaitTimeSeconds:     wait,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
		},
	})
	if err != nil {
		return nil, awserr.Wrap("receive from "+q.url, err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msgs = append(msgs, Message{ID: deref(m.MessageId), ReceiptHandle: deref(m.ReceiptHandle), Body: deref(m.Body)})
	}
	return msgs, nil
}

// Delete removes a received message.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	if _, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &q.url, ReceiptHandle: &receiptHandle}); err != nil {
		return awserr.Wrap("delete from "+q.url, err)
	}
	return nil
}

// Release makes a received message visible again at once.
func (q *Queue) Release(ctx context.Context, receiptHandle string) error {
	return q.Delay(ctx, receiptHandle, 0)
}

// MaxDelay is the longest SQS keeps a received message invisible: 12 hours
// from its receipt.
const MaxDelay = 12 * time.Hour

// Delay hides a received message for d from now (rounded up to whole
// seconds, at most MaxDelay), so it is delivered again after d rather than
// after the queue's visibility timeout.
func (q *Queue) Delay(ctx context.Context, receiptHandle string, d time.Duration) error {
	secs := int32(min((d+time.Second-1)/time.Second, MaxDelay/time.Second))
	secs = max(secs, 0)
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: &q.url, ReceiptHandle: &receiptHandle, VisibilityTimeout: secs,
	})
	if err != nil {
		return awserr.Wrap(fmt.Sprintf("delay %s on %s", d, q.url), err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
