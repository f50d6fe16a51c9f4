package local

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// A message received twice (it came back before its delete) is one
// delivery: the drain returns it once. The queue here is a fake SQS over
// the wire that hands out the same message on its first two receives.
func TestDrainForwardedCountsAMessageOnce(t *testing.T) {
	var receives atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."); op {
		case "ReceiveMessage":
			if receives.Add(1) <= 2 {
				body := `{\"id\":\"put-1\",\"detail\":{\"webhook_inbox\":{\"event_key\":\"stripe##evt_1\"}}}`
				fmt.Fprintf(w, `{"Messages":[{"MessageId":"m-1","ReceiptHandle":"rh-%d","Body":"%s"}]}`, receives.Load(), body)
				return
			}
			fmt.Fprint(w, `{"Messages":[]}`)
		case "DeleteMessage":
			fmt.Fprint(w, `{}`)
		case "GetQueueAttributes":
			fmt.Fprint(w, `{"Attributes":{"ApproximateNumberOfMessages":"0","ApproximateNumberOfMessagesNotVisible":"0","ApproximateNumberOfMessagesDelayed":"0"}}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"__type":"InvalidAction","message":"%s"}`, op)
		}
	}))
	defer fake.Close()
	srv := &awstest.Server{Endpoint: fake.URL}
	got, err := DrainForwarded(context.Background(), sqs.NewFromConfig(srv.NoRetryConfig()), fake.URL+"/000000000000/forwarded")
	if err != nil {
		t.Fatal(err)
	}
	if receives.Load() < 2 {
		t.Fatalf("%d receives, want the message received twice", receives.Load())
	}
	if len(got) != 1 || got[0].EventKey() != "stripe##evt_1" {
		t.Errorf("drained %+v, want the one message once", got)
	}
}
