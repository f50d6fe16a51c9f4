// Package processorfn wires the processor function's handler from its
// validated configuration and AWS clients, with the routes of internal/handlers
// and the outbox targets TARGETS configures for them. The Lambda main, the local stack and the
// torture run's workers all build it here, so they cannot wire it
// differently; it is a package of its own so that the other functions'
// bootstraps do not link its clients (EventBridge).
package processorfn

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/eventbus"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
)

// New builds the processor handler (configuration loaded with
// app.ProcessorNeeds).
func New(cfg config.Config, awsCfg aws.Config, log *slog.Logger) (*processor.Processor, error) {
	client := sqs.NewFromConfig(awsCfg)
	store := app.CommitStore(cfg, awsCfg, log)
	targets := map[string]outbox.Target{}
	for _, t := range cfg.Targets {
		targets[t.Name] = outbox.Target{URL: t.URL, RetryUnknown: t.RetryUnknown, Timeout: t.Timeout}
	}
	var bus outbox.Bus
	if len(cfg.Forward) > 0 {
		bus = eventbus.New(eventbridge.NewFromConfig(awsCfg))
		for _, r := range cfg.Forward {
			targets[forward.TargetOf(r)] = outbox.Target{RetryUnknown: r.RetryUnknown, Timeout: cfg.ForwardTimeout}
		}
	}
	deliverer, err := outbox.New(outbox.Config{
		Store:     store,
		Targets:   targets,
		Bus:       bus,
		Events:    store,
		RetryBase: cfg.RetryBase,
		RetryCap:  cfg.RetryCap,
		Logger:    log,
		Metrics:   obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
	if err != nil {
		return nil, err
	}
	return processor.New(processor.Config{
		Store:           store,
		Outbox:          deliverer,
		DeadLetters:     queue.New(client, cfg.DLQURL),
		Visibility:      queue.New(client, cfg.QueueURL),
		Routes:          handlers.Routes(handlers.StripeModes(cfg.Sources.Livemodes())),
		Forward:         cfg.Forward,
		MaxReceiveCount: cfg.MaxReceiveCount,
		Concurrency:     cfg.Concurrency,
		RetryBase:       cfg.RetryBase,
		RetryCap:        cfg.RetryCap,
		Logger:          log,
		Metrics:         obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
}
