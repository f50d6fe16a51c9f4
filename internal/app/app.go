// Package app wires validated configuration and AWS clients into the three
// handlers. The Lambda mains and the local stack both build their handlers
// here, so they cannot be wired differently.
package app

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/examples"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/ingest"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
	"github.com/webhook-inbox/webhook-inbox/internal/secrets"
)

// Needs of each function, for config.Load.
var (
	IngestNeeds    = config.Need{Table: true, Bucket: true, Queue: true, Sources: true}
	ProcessorNeeds = config.Need{Table: true, Bucket: true, Queue: true, DLQ: true, MaxReceiveCount: true, Forward: true}
	ReplayNeeds    = config.Need{Table: true, Bucket: true, Queue: true, DLQ: true}
)

// SecretsTTL is how long a warm instance reuses a signing secret; a rotated
// secret is picked up within it (absent secrets within a fifth of it).
const SecretsTTL = 5 * time.Minute

// Load is a function's cold start: its configuration from getenv (checked
// against needs), the SDK's configuration from its standard environment
// (AWS_REGION, AWS_ENDPOINT_URL, credentials) and a JSON logger on stdout.
func Load(ctx context.Context, getenv func(string) string, needs config.Need) (config.Config, aws.Config, *slog.Logger, error) {
	cfg, err := config.Load(getenv, needs)
	if err != nil {
		return config.Config{}, aws.Config{}, nil, err
	}
	awsCfg, err := AWSFromEnv(getenv)
	if err != nil {
		return config.Config{}, aws.Config{}, nil, err
	}
	return cfg, awsCfg, obs.NewLogger(os.Stdout, cfg.LogLevel), nil
}

// Ingest builds the ingest handler.
func Ingest(cfg config.Config, awsCfg aws.Config, log *slog.Logger) (*ingest.Handler, error) {
	return ingest.New(ingest.Config{
		Sources:          cfg.Sources,
		Secrets:          secrets.NewStore(secretsmanager.NewFromConfig(awsCfg), SecretsTTL).WithRotationWindow(cfg.PreviousSecretWindow),
		IsSecretNotFound: secrets.IsNotFound,
		Store:            Store(cfg, awsCfg),
		Queue:            queue.New(sqs.NewFromConfig(awsCfg), cfg.QueueURL),
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Logger:           log,
		Metrics:          obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
}

// Processor builds the processor handler with the shipped example routes
// and their outbox targets.
func Processor(cfg config.Config, awsCfg aws.Config, log *slog.Logger) (*processor.Processor, error) {
	client := sqs.NewFromConfig(awsCfg)
	store := Store(cfg, awsCfg)
	targets := map[string]outbox.Target{
		examples.ReceiptTarget: {URL: cfg.ReceiptWebhookURL, RetryUnknown: cfg.ReceiptRetryUnknown},
	}
	var bus outbox.PutEventsAPI
	if len(cfg.Forward) > 0 {
		bus = eventbridge.NewFromConfig(awsCfg)
		for _, r := range cfg.Forward {
			targets[forward.TargetOf(r)] = outbox.Target{RetryUnknown: r.RetryUnknown, Timeout: cfg.ForwardTimeout}
		}
	}
	deliverer, err := outbox.New(outbox.Config{
		Store:       store,
		Targets:     targets,
		EventBridge: bus,
		Events:      store,
		RetryBase:   cfg.RetryBase,
		RetryCap:    cfg.RetryCap,
		Logger:      log,
		Metrics:     obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
	if err != nil {
		return nil, err
	}
	return processor.New(processor.Config{
		Store:           store,
		Outbox:          deliverer,
		DeadLetters:     queue.New(client, cfg.DLQURL),
		Visibility:      queue.New(client, cfg.QueueURL),
		Routes:          examples.Routes(),
		Forward:         cfg.Forward,
		MaxReceiveCount: cfg.MaxReceiveCount,
		Concurrency:     cfg.Concurrency,
		RetryBase:       cfg.RetryBase,
		RetryCap:        cfg.RetryCap,
		Logger:          log,
		Metrics:         obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
}

// Replay builds the replay handler.
func Replay(cfg config.Config, awsCfg aws.Config, log *slog.Logger) *replay.Replayer {
	client := sqs.NewFromConfig(awsCfg)
	return &replay.Replayer{
		DLQ:        queue.New(client, cfg.DLQURL),
		Main:       queue.New(client, cfg.QueueURL),
		Store:      Store(cfg, awsCfg),
		SweepAfter: cfg.SweepAfter,
		Logger:     log,
		Metrics:    obs.Metrics{Namespace: cfg.MetricsNamespace},
	}
}

// Store is the inbox every function uses: the table, with the payloads too
// large for an item in the bucket.
func Store(cfg config.Config, awsCfg aws.Config) *claimcheck.Store {
	objects := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// An emulator on one host serves every bucket under its path.
		o.UsePathStyle = awsCfg.BaseEndpoint != nil
	})
	return claimcheck.New(inboxstore.New(dynamodb.NewFromConfig(awsCfg), cfg.InboxTable, cfg.Retention), claimcheck.NewObjects(objects, cfg.PayloadBucket))
}
