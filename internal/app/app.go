// Package app wires validated configuration and AWS clients into the three
// handlers. The Lambda mains and the local stack both build their handlers
// here, so they cannot be wired differently.
package app

import (
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/examples"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/ingest"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
	"github.com/webhook-inbox/webhook-inbox/internal/secrets"
)

// Needs of each function, for config.Load.
var (
	IngestNeeds    = config.Need{Table: true, Queue: true, Sources: true}
	ProcessorNeeds = config.Need{Table: true, Queue: true, DLQ: true, MaxReceiveCount: true}
	ReplayNeeds    = config.Need{Table: true, Queue: true, DLQ: true}
)

// SecretsTTL is how long a warm instance reuses a signing secret; a rotated
// secret is picked up within it (absent secrets within a fifth of it).
const SecretsTTL = 5 * time.Minute

// Ingest builds the ingest handler.
func Ingest(cfg config.Config, aws aws.Config, log *slog.Logger) (*ingest.Handler, error) {
	return ingest.New(ingest.Config{
		Sources:          cfg.Sources,
		Secrets:          secrets.NewStore(secretsmanager.NewFromConfig(aws), SecretsTTL),
		IsSecretNotFound: secrets.IsNotFound,
		Store:            inboxstore.New(dynamodb.NewFromConfig(aws), cfg.InboxTable),
		Queue:            queue.New(sqs.NewFromConfig(aws), cfg.QueueURL),
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Retention:        cfg.Retention,
		Logger:           log,
	})
}

// Processor builds the processor handler with the shipped example routes.
func Processor(cfg config.Config, aws aws.Config, log *slog.Logger) (*processor.Processor, error) {
	return processor.New(processor.Config{
		Store:           inboxstore.New(dynamodb.NewFromConfig(aws), cfg.InboxTable),
		DeadLetters:     queue.New(sqs.NewFromConfig(aws), cfg.DLQURL),
		Routes:          examples.Routes(),
		MaxReceiveCount: cfg.MaxReceiveCount,
		Logger:          log,
	})
}

// Replay builds the replay handler.
func Replay(cfg config.Config, aws aws.Config, log *slog.Logger) *replay.Replayer {
	client := sqs.NewFromConfig(aws)
	return &replay.Replayer{
		DLQ:    queue.New(client, cfg.DLQURL),
		Main:   queue.New(client, cfg.QueueURL),
		Logger: log,
	}
}
