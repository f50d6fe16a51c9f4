package local

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
)

// A receive whose answer is lost (the SDK retries it) leaves its messages
// in flight; the drain waits for them to come back instead of ending at
// the first empty receives, which made an audit count those events never
// forwarded.
func TestDrainForwardedAfterALostReceive(t *testing.T) {
	srv := awstest.Start(t)
	client := sqs.NewFromConfig(srv.Config())
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("forwarded")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 25
	for i := range n {
		body := fmt.Sprintf(`{"source":"webhook-inbox.stripe","detail-type":"invoice.paid","detail":{"webhook_inbox":{"event_key":"stripe##evt_%d"}}}`, i)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := srv.Config()
	lose := &loseFirstAnswer{next: &http.Client{}, op: ".ReceiveMessage"}
	cfg.HTTPClient = lose
	got, err := DrainForwarded(ctx, sqs.NewFromConfig(cfg), *q.QueueUrl)
	if err != nil {
		t.Fatal(err)
	}
	if !lose.lost.Load() {
		t.Fatal("no receive's answer was lost")
	}
	keys := map[string]bool{}
	for _, f := range got {
		keys[f.EventKey()] = true
	}
	if len(keys) != n {
		t.Errorf("drained %d events (%d messages), want %d", len(keys), len(got), n)
	}
}
