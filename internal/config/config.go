// Package config reads and validates the functions' environment. It is
// given a lookup function: the functions' main packages pass os.Getenv
// (through app.Load), the local stack and the tests a map of their own.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/forward"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// Config is every setting a function may need. Load checks only those the
// function asks for.
type Config struct {
	InboxTable string
	// PayloadBucket keeps the payloads too large for an item (see package
	// claimcheck).
	PayloadBucket string
	QueueURL      string
	DLQURL        string
	Sources       *source.Set
	// Forward are the FORWARD routes to EventBridge (package forward);
	// ForwardTimeout bounds one PutEvents call.
	Forward         forward.Routes
	ForwardTimeout  time.Duration
	SecretsPrefix   string
	MaxBodyBytes    int
	Retention       time.Duration
	MaxReceiveCount int
	LogLevel        slog.Level
	// Processor: records of a batch processed at once, and the backoff of
	// a transient failure (see processor.Config).
	Concurrency         int
	RetryBase, RetryCap time.Duration
	// SweepAfter is how long an unfinished event may be overdue before the
	// sweep re-enqueues it.
	SweepAfter time.Duration
	// Targets are the TARGETS entries: where each outbound target the
	// handlers declare is (processor).
	Targets []Target
	// PreviousSecretWindow is how long after a secret's rotation its
	// previous version (AWSPREVIOUS) still verifies signatures (ingest); 0:
	// never.
	PreviousSecretWindow time.Duration
	// MetricsNamespace is the CloudWatch namespace of the metrics the log
	// lines publish (Embedded Metric Format); empty turns them off.
	MetricsNamespace string
}

// Need names the settings a function requires.
type Need struct {
	Table, Bucket, Queue, DLQ, Sources, MaxReceiveCount bool
	// Forward reads FORWARD, checked against SOURCES' names.
	Forward bool
	// Targets reads TARGETS, checked against Declared, the targets the
	// handlers send to (internal/handlers Targets): one entry each, and
	// none for another.
	Targets  bool
	Declared []effects.Target
}

// Defaults for optional settings.
const (
	DefaultMaxBodyBytes         = 5 << 20
	DefaultPayloadRetentionDays = 30
	DefaultConcurrency          = 10
	DefaultRetryBaseSeconds     = 30
	DefaultRetryCapSeconds      = 3600
	DefaultSweepAfterSeconds    = 300
	// PutEvents answers in tens of milliseconds; a call this slow is
	// unknown (or put again, for a route that retries unknowns).
	DefaultForwardTimeoutSeconds = 5
	// NoForwardBus is FORWARD_BUS when the template grants no bus
	// (ForwardBus none): FORWARD must then have no routes.
	NoForwardBus = "none"
	// A forwarding row is started only with time for its whole call
	// before the processor's work ends (its 30 s timeout less a 5 s
	// margin), so a longer call would never start in any invocation and
	// its row would stay pending for ever: 15 s leaves 10 for a batch's
	// claims and commits.
	MaxForwardTimeoutSeconds = 15
	// A day: Stripe keeps a rolled secret valid for up to 24 hours,
	// Shopify for one.
	DefaultPreviousSecretWindowSeconds = 86400
	// Lambda's limit on a synchronous invocation's request (6 MB, API
	// Gateway's event for the body included): no larger body reaches
	// ingest. Payloads too large for an item go to S3 (claimcheck).
	MaxMaxBodyBytes = 6291456
)

// Load reads the environment through getenv and reports every problem at
// once.
func Load(getenv func(string) string, need Need) (Config, error) {
	var c Config
	var errs []error
	required := func(name string, want bool) string {
		v := strings.TrimSpace(getenv(name))
		if want && v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
		return v
	}
	c.InboxTable = required("INBOX_TABLE", need.Table)
	c.PayloadBucket = required("PAYLOAD_BUCKET", need.Bucket)
	c.QueueURL = required("QUEUE_URL", need.Queue)
	c.DLQURL = required("DLQ_URL", need.DLQ)
	c.SecretsPrefix = getenv("SECRETS_PREFIX")
	if need.Sources && !strings.HasSuffix(c.SecretsPrefix, "/") {
		// Ingest may read every secret under it: an empty prefix would
		// be the account's every secret (the template's pattern too).
		errs = append(errs, fmt.Errorf("SECRETS_PREFIX %q: want a prefix ending in \"/\", naming only webhook secrets", c.SecretsPrefix))
	}
	if need.Sources || need.Forward {
		set, err := source.Parse(required("SOURCES", true), c.SecretsPrefix)
		if err != nil {
			errs = append(errs, err)
		}
		c.Sources = set
	}
	if need.Forward && c.Sources != nil {
		bus := strings.TrimSpace(getenv("FORWARD_BUS"))
		routes, err := forward.Parse(getenv("FORWARD"), c.Sources.Names(), bus)
		switch {
		case err != nil:
			errs = append(errs, err)
		case bus == NoForwardBus && len(routes) > 0:
			// The template's ForwardBus none: the role may put no events,
			// and every route's rows would be denied and end dead.
			errs = append(errs, fmt.Errorf("FORWARD has %d routes but FORWARD_BUS is %q: the function may put events on no bus (set the template's ForwardBus to default or create)", len(routes), bus))
		}
		c.Forward = routes
	}
	if need.Forward {
		c.ForwardTimeout = time.Duration(intVar(getenv, "FORWARD_TIMEOUT_SECONDS", DefaultForwardTimeoutSeconds, 1, MaxForwardTimeoutSeconds, &errs)) * time.Second
	}
	c.MaxBodyBytes = intVar(getenv, "MAX_BODY_BYTES", DefaultMaxBodyBytes, 1, MaxMaxBodyBytes, &errs)
	days := intVar(getenv, "PAYLOAD_RETENTION_DAYS", DefaultPayloadRetentionDays, 1, 3650, &errs)
	c.Retention = time.Duration(days) * 24 * time.Hour
	if need.MaxReceiveCount {
		c.MaxReceiveCount = intVar(getenv, "MAX_RECEIVE_COUNT", 0, 1, 1000, &errs)
		if strings.TrimSpace(getenv("MAX_RECEIVE_COUNT")) == "" {
			errs = append(errs, errors.New("MAX_RECEIVE_COUNT is required"))
		}
	}
	c.Concurrency = intVar(getenv, "PROCESSOR_CONCURRENCY", DefaultConcurrency, 1, 100, &errs)
	c.RetryBase = time.Duration(intVar(getenv, "RETRY_BASE_SECONDS", DefaultRetryBaseSeconds, 1, 43200, &errs)) * time.Second
	c.RetryCap = time.Duration(intVar(getenv, "RETRY_CAP_SECONDS", DefaultRetryCapSeconds, 1, 43200, &errs)) * time.Second
	// A cap below the base is not refused: template.yaml cannot refuse it
	// (CloudFormation's rules do not compare numbers), and refusing it here
	// would stop every function at its start. The backoff is then the cap
	// from the first receive on: min(cap, base·2^(n-1)).
	c.SweepAfter = time.Duration(intVar(getenv, "SWEEP_AFTER_SECONDS", DefaultSweepAfterSeconds, 1, 86400, &errs)) * time.Second
	if need.Targets {
		targets, err := parseTargets(getenv("TARGETS"), need.Declared)
		if err != nil {
			errs = append(errs, err)
		}
		c.Targets = targets
	}
	// The receipt's own settings, before TARGETS: an upgrade that still
	// sets them is refused, never silently dropped (the receipts would go
	// to the log).
	// The URL is not repeated: it may carry a token, and this is logged.
	if v := strings.TrimSpace(getenv("RECEIPT_WEBHOOK_URL")); v != "" {
		errs = append(errs, errors.New(`RECEIPT_WEBHOOK_URL (parameter ReceiptWebhookUrl) is replaced by TARGETS (parameter Targets): set it empty and put {"name":"receipt","url":"<its URL>"} in TARGETS`))
	}
	if v := strings.TrimSpace(getenv("RECEIPT_RETRY_UNKNOWN")); v != "" && v != "false" {
		errs = append(errs, fmt.Errorf("RECEIPT_RETRY_UNKNOWN %q (parameter ReceiptRetryUnknown) is replaced by TARGETS' retry_unknown (parameter Targets): set it to false and put \"retry_unknown\":true in the receipt's TARGETS entry", v))
	}
	c.PreviousSecretWindow = time.Duration(intVar(getenv, "PREVIOUS_SECRET_WINDOW_SECONDS", DefaultPreviousSecretWindowSeconds, 0, 7*86400, &errs)) * time.Second
	c.MetricsNamespace = strings.TrimSpace(getenv("METRICS_NAMESPACE"))
	if err := obs.CheckNamespace(c.MetricsNamespace); err != nil {
		errs = append(errs, fmt.Errorf("METRICS_NAMESPACE: %w", err))
	}
	lvl, err := obs.ParseLevel(getenv("LOG_LEVEL"))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

func intVar(getenv func(string) string, name string, def, lo, hi int, errs *[]error) int {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		*errs = append(*errs, fmt.Errorf("%s %q: want an integer in %d..%d", name, v, lo, hi))
		return def
	}
	return n
}
