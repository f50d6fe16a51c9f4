// Package replayfn wires the replay function's handler from its validated
// configuration and AWS clients. The Lambda main and the local stack both
// build it here, so they cannot wire it differently; it is a package of its
// own so that its bootstrap links only the clients it calls.
package replayfn

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// New builds the replay handler (configuration loaded with
// app.ReplayNeeds).
func New(cfg config.Config, awsCfg aws.Config, log *slog.Logger) *replay.Replayer {
	client := sqs.NewFromConfig(awsCfg)
	return &replay.Replayer{
		DLQ:        queue.New(client, cfg.DLQURL),
		Main:       queue.New(client, cfg.QueueURL),
		Store:      app.Store(cfg, awsCfg),
		SweepAfter: cfg.SweepAfter,
		Logger:     log,
		Metrics:    obs.Metrics{Namespace: cfg.MetricsNamespace},
	}
}
