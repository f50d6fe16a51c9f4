// Package app is what the three functions' wiring shares: their cold
// start (configuration, the SDK's configuration, the logger) and the
// inbox store. Each function's handler is built in a package of its own
// (ingestfn, processorfn, replayfn), so that a bootstrap links only the
// AWS clients its function calls.
package app

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/handlers"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// Needs of each function, for config.Load.
var (
	IngestNeeds    = config.Need{Table: true, Bucket: true, Queue: true, Sources: true}
	ProcessorNeeds = config.Need{Table: true, Bucket: true, Queue: true, DLQ: true, MaxReceiveCount: true, Forward: true,
		Targets: true, Declared: handlers.Targets()}
	ReplayNeeds = config.Need{Table: true, Bucket: true, Queue: true, DLQ: true}
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

// Store is the inbox every function uses: the table, with the payloads too
// large for an item in the bucket.
func Store(cfg config.Config, awsCfg aws.Config) *claimcheck.Store {
	return withPayloads(cfg, awsCfg, inboxstore.New(dynamodb.NewFromConfig(awsCfg), cfg.InboxTable, cfg.Retention))
}

func withPayloads(cfg config.Config, awsCfg aws.Config, table *inboxstore.Store) *claimcheck.Store {
	objects := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// An emulator on one host serves every bucket under its path.
		o.UsePathStyle = awsCfg.BaseEndpoint != nil
	})
	return claimcheck.New(table, claimcheck.NewObjects(objects, cfg.PayloadBucket))
}

// CommitStore is Store for the function that commits plans (the
// processor): it checks the twins of facts written before parts had
// scopes when the table may hold such facts (inboxstore.DetectUnscopedFacts:
// one read at a cold start, and once per table a look at its first items,
// which the first processor makes before ingest has stored many). If the
// table cannot say, commits check them: never wrong, only dearer; the look
// is logged and made again from a commit a minute later.
func CommitStore(cfg config.Config, awsCfg aws.Config, log *slog.Logger) *claimcheck.Store {
	db := dynamodb.NewFromConfig(awsCfg)
	detect := func(ctx context.Context, now time.Time) (bool, error) {
		return inboxstore.DetectUnscopedFacts(ctx, db, cfg.InboxTable, now)
	}
	failed := func(err error) {
		log.Warn("table layout unknown: commits check their facts' unscoped twins until it is known", "error", err.Error())
	}
	table := inboxstore.New(db, cfg.InboxTable, cfg.Retention).WithLayoutDetected(detect, failed, scopes(cfg))
	table.LookAtLayout(context.Background(), time.Now())
	return withPayloads(cfg, awsCfg, table)
}

// scopes are the sources' scopes, when the function has them.
func scopes(cfg config.Config) inboxstore.Scopes {
	if cfg.Sources == nil {
		return nil
	}
	return cfg.Sources
}
