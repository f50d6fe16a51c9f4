// Package ingestfn wires the ingest function's handler from its validated
// configuration and AWS clients. The Lambda main and the local stack both
// build it here, so they cannot wire it differently; it is a package of its
// own so that the other functions' bootstraps do not link its clients
// (Secrets Manager).
package ingestfn

import (
	"log/slog"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/certfetch"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/ingest"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
	"github.com/webhook-inbox/webhook-inbox/internal/secrets"
)

// New builds the ingest handler (configuration loaded with
// app.IngestNeeds). providers is the HTTP client that reaches the
// providers certificate-signed sources fetch from (SNS, PayPal); nil, in
// Lambda, is certfetch.Client's over the internet. The local stack gives
// one that reaches its own stand-ins for those hosts instead, as its AWS
// clients reach emulators: the allow-lists and the fetch are the same.
func New(cfg config.Config, awsCfg aws.Config, log *slog.Logger, providers *http.Client) (*ingest.Handler, error) {
	store := app.Store(cfg, awsCfg)
	return ingest.New(ingest.Config{
		Sources:          cfg.Sources,
		Secrets:          secrets.NewStore(secretsmanager.NewFromConfig(awsCfg), app.SecretsTTL).WithRotationWindow(cfg.PreviousSecretWindow),
		IsSecretNotFound: secrets.IsNotFound,
		Store:            store,
		Nonces:           store,
		Queue:            queue.New(sqs.NewFromConfig(awsCfg), cfg.QueueURL),
		Remote:           certfetch.New(providers),
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Logger:           log,
		Metrics:          obs.Metrics{Namespace: cfg.MetricsNamespace},
	})
}
