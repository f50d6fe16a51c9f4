package local

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/ingestfn"
	"github.com/webhook-inbox/webhook-inbox/internal/app/processorfn"
	"github.com/webhook-inbox/webhook-inbox/internal/app/replayfn"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/ingest"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// LocalSource is one entry of infra/local/sources.json: a source as the
// functions' SOURCES lists it, plus its dev-only signing secrets.
type LocalSource struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Options json.RawMessage `json:"options,omitempty"`
	// Secrets are dev-only signing secrets (for asymmetric schemes: public
	// keys), seeded into the local Secrets Manager; the first one signs
	// what `make send` sends.
	Secrets []string `json:"secrets"`
	// SigningKey is the dev-only private key that signs for asymmetric
	// schemes (discord, sendgrid, Standard Webhooks v1a).
	SigningKey string `json:"signing_key,omitempty"`
	// CertificateURL is where a certificate-signed source's provider
	// serves the certificate of SigningKey (ProviderHosts serves it
	// locally); its sample names the same URL.
	CertificateURL string `json:"certificate_url,omitempty"`
	// VerifyToken is the dev-only token of a GET subscription handshake.
	VerifyToken string `json:"verify_token,omitempty"`
	// AccountSecrets are dev-only signing secrets of the accounts the
	// source serves (its options' "accounts"), seeded under
	// SECRETS_PREFIX + name/account.
	AccountSecrets map[string][]string `json:"account_secrets,omitempty"`
}

// Scheme builds the source's signature scheme exactly as the functions do
// from SOURCES.
func (s LocalSource) Scheme() (signature.Scheme, error) {
	list, err := json.Marshal([]map[string]any{{"name": s.Name, "kind": s.Kind, "options": s.Options}})
	if err != nil {
		return nil, err
	}
	set, err := source.Parse(string(list), "")
	if err != nil {
		return nil, err
	}
	src, err := set.Lookup(s.Name, "")
	if err != nil {
		return nil, err
	}
	return src.Scheme, nil
}

// SignWith returns the key that signs for the source: its signing key when
// it has one ("hex:…" is decoded, for raw key bytes), else its first
// secret; for PayPal, its signing key with its webhook id.
func (s LocalSource) SignWith() ([]byte, error) {
	if s.Kind == "paypal" {
		// PayPal signs its webhook id (the secret) into each delivery.
		return json.Marshal(signature.PayPalSigningKey{WebhookID: s.Secrets[0], PrivateKey: s.SigningKey})
	}
	if s.SigningKey == "" {
		return []byte(s.Secrets[0]), nil
	}
	if h, ok := strings.CutPrefix(s.SigningKey, "hex:"); ok {
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("source %s: signing_key: %w", s.Name, err)
		}
		return b, nil
	}
	return []byte(s.SigningKey), nil
}

// SourcesFile is the shape of infra/local/sources.json.
type SourcesFile struct {
	SecretsPrefix string        `json:"secrets_prefix"`
	Sources       []LocalSource `json:"sources"`
	// Forward is the local FORWARD: routes to the local bus
	// (ForwardBusName), whose rule sends every forwarded event to the
	// ForwardedQueueName queue.
	Forward json.RawMessage `json:"forward,omitempty"`
}

// LoadSources reads and checks a sources file.
func LoadSources(path string) (SourcesFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SourcesFile{}, err
	}
	var f SourcesFile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return SourcesFile{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range f.Sources {
		if len(s.Secrets) == 0 {
			return SourcesFile{}, fmt.Errorf("%s: source %q has no secrets", path, s.Name)
		}
		for a, secrets := range s.AccountSecrets {
			if len(secrets) == 0 {
				return SourcesFile{}, fmt.Errorf("%s: source %q: account %q has no secrets", path, s.Name, a)
			}
		}
	}
	return f, nil
}

// Source returns the named source.
func (f SourcesFile) Source(name string) (LocalSource, error) {
	for _, s := range f.Sources {
		if s.Name == name {
			return s, nil
		}
	}
	return LocalSource{}, fmt.Errorf("no source %q in the sources file", name)
}

// Names are the sources' names, in the file's order.
func (f SourcesFile) Names() []string {
	names := make([]string, 0, len(f.Sources))
	for _, s := range f.Sources {
		names = append(names, s.Name)
	}
	return names
}

// sourcesJSON renders SOURCES: the list without the secrets.
func (f SourcesFile) sourcesJSON() (string, error) {
	type entry struct {
		Name    string          `json:"name"`
		Kind    string          `json:"kind"`
		Options json.RawMessage `json:"options,omitempty"`
	}
	list := make([]entry, 0, len(f.Sources))
	for _, s := range f.Sources {
		list = append(list, entry{s.Name, s.Kind, s.Options})
	}
	b, err := json.Marshal(list)
	return string(b), err
}

// Stack is the local deployment: resources provisioned from template.yaml
// in the emulator, and the three handlers wired exactly as in Lambda.
type Stack struct {
	Resources template.Resources
	// Env is the functions' environment, as the template would set it.
	Env map[string]string
	// ForwardedQueueURL is the queue of the local bus's example consumer:
	// every forwarded event arrives there. Empty when nothing is forwarded.
	ForwardedQueueURL string
	Ingest            *ingest.Handler
	// Providers stands in for the hosts certificate-signed sources fetch
	// from.
	Providers *ProviderHosts
	Processor *processor.Processor
	Replay    *replay.Replayer

	tpl     *template.Template
	sources []string
}

// Sources are the names of the sources in the functions' SOURCES.
func (s *Stack) Sources() []string { return s.sources }

// Sweeper returns the replay function's schedule as template.yaml declares
// it (its Sweep event: rate and input, the function's Timeout), calling
// handler as EventBridge would call the function.
func (s *Stack) Sweeper(handler ReplayFunc, log *slog.Logger) (*Sweeper, error) {
	scheds, err := s.tpl.Schedules("ReplayFunction")
	if err != nil {
		return nil, err
	}
	fn, err := s.tpl.Function("ReplayFunction")
	if err != nil {
		return nil, err
	}
	for _, sc := range scheds {
		if sc.Event != "Sweep" {
			continue
		}
		req, err := replay.DecodeRequest([]byte(sc.Input))
		if err != nil {
			return nil, fmt.Errorf("ReplayFunction.Events.Sweep.Input: %w", err)
		}
		return &Sweeper{Handler: handler, Every: sc.Every, Request: req, Timeout: fn.Timeout, Logger: log}, nil
	}
	return nil, errors.New("template.yaml: ReplayFunction has no Sweep schedule")
}

// The payload bucket: its logical ID in template.yaml and its local name.
const (
	PayloadBucketID   = "PayloadBucket"
	PayloadBucketName = "webhook-inbox-payloads"
)

// S3 is an S3 client of the local AWS, which serves every bucket under
// its path.
func S3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}

// Setup provisions the table and queues that template.yaml declares, seeds
// the sources' secrets, and builds the handlers with the same wiring as the
// Lambda mains. Settings take the template's parameter defaults, except
// those overrides names (by environment variable, e.g.
// TARGETS). It is idempotent against a running emulator.
func Setup(ctx context.Context, cfg aws.Config, templatePath string, sources SourcesFile, overrides map[string]string, log *slog.Logger) (*Stack, error) {
	tpl, err := template.Load(templatePath)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", templatePath, err)
	}
	res, err := template.Provision(ctx, dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg), tpl, template.ProvisionOptions{})
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	bucket, err := tpl.Bucket(PayloadBucketID)
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if err := template.ProvisionBucket(ctx, S3(cfg), bucket, PayloadBucketName); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if err := seedSecrets(ctx, secretsmanager.NewFromConfig(cfg), sources); err != nil {
		return nil, err
	}
	srcJSON, err := sources.sourcesJSON()
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"INBOX_TABLE":       res.TableName,
		"PAYLOAD_BUCKET":    PayloadBucketName,
		"QUEUE_URL":         res.QueueURL,
		"DLQ_URL":           res.DLQURL,
		"SOURCES":           srcJSON,
		"SECRETS_PREFIX":    sources.SecretsPrefix,
		"MAX_RECEIVE_COUNT": strconv.Itoa(res.MaxReceiveCount),
	}
	// The remaining settings take the template's parameter defaults.
	for name, param := range map[string]string{
		"MAX_BODY_BYTES":                 "MaxBodyBytes",
		"PAYLOAD_RETENTION_DAYS":         "PayloadRetentionDays",
		"LOG_LEVEL":                      "LogLevel",
		"METRICS_NAMESPACE":              "MetricsNamespace",
		"PREVIOUS_SECRET_WINDOW_SECONDS": "PreviousSecretWindowSeconds",
		"PROCESSOR_CONCURRENCY":          "ProcessorConcurrency",
		"RETRY_BASE_SECONDS":             "RetryBaseSeconds",
		"RETRY_CAP_SECONDS":              "RetryCapSeconds",
		"SWEEP_AFTER_SECONDS":            "SweepAfterSeconds",
		"TARGETS":                        "Targets",
		"RECEIPT_WEBHOOK_URL":            "ReceiptWebhookUrl",
		"RECEIPT_RETRY_UNKNOWN":          "ReceiptRetryUnknown",
	} {
		v, err := tpl.ParameterValue(param)
		if err != nil {
			return nil, fmt.Errorf("template parameter %s: %w", param, err)
		}
		env[name] = v
		if o, ok := overrides[name]; ok {
			env[name] = o
		}
	}
	env["FORWARD"] = string(sources.Forward)
	if o, ok := overrides["FORWARD"]; ok {
		env["FORWARD"] = o
	}
	var forwarded string
	if strings.TrimSpace(env["FORWARD"]) != "" {
		env["FORWARD_BUS"] = ForwardBusName
		if forwarded, err = provisionForwarding(ctx, cfg, tpl); err != nil {
			return nil, fmt.Errorf("provision: %w", err)
		}
	}
	getenv := func(k string) string { return env[k] }
	s := &Stack{Resources: res, Env: env, ForwardedQueueURL: forwarded, tpl: tpl, sources: sources.Names()}
	if s.Providers, err = NewProviderHosts(sources, time.Now(), log.With("function", "providers")); err != nil {
		return nil, err
	}
	var errs []error
	if c, err := config.Load(getenv, app.IngestNeeds); err != nil {
		errs = append(errs, err)
	} else if s.Ingest, err = ingestfn.New(c, cfg, log.With("function", "ingest"), s.Providers.Client()); err != nil {
		errs = append(errs, err)
	}
	if c, err := config.Load(getenv, app.ProcessorNeeds); err != nil {
		errs = append(errs, err)
	} else if s.Processor, err = processorfn.New(c, cfg, log.With("function", "processor")); err != nil {
		errs = append(errs, err)
	}
	if c, err := config.Load(getenv, app.ReplayNeeds); err != nil {
		errs = append(errs, err)
	} else {
		s.Replay = replayfn.New(c, cfg, log.With("function", "replay"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Poller returns the local event source mapping for the processor, with
// the template's BatchSize, MaximumBatchingWindowInSeconds,
// MaximumConcurrency (none declared: DefaultMaxConcurrency) and the
// processor's Timeout. A combination Lambda would refuse, such as a
// BatchSize over 10 without a window, makes the poller's PollOnce and Run
// fail with ErrPollerConfig.
func (s *Stack) Poller(client SQSAPI, region string, log *slog.Logger) *Poller {
	r := s.Resources
	return &Poller{
		SQS: client, QueueURL: r.QueueURL, QueueARN: r.QueueARN, Region: region,
		BatchSize: r.BatchSize, BatchingWindow: r.BatchingWindow,
		MaxConcurrency: r.MaxConcurrency, Timeout: r.FunctionTimeout,
		Handler: s.Processor.Handle, Logger: log,
	}
}

// seedSecrets stores each source's secrets under SECRETS_PREFIX + name:
// one secret as a plain SecretString, several (or a verify token) as
// {"signing_secrets":[…],"verify_token":…}.
func seedSecrets(ctx context.Context, sm *secretsmanager.Client, f SourcesFile) error {
	for _, s := range f.Sources {
		if err := seedSecret(ctx, sm, f.SecretsPrefix+s.Name, s.Secrets, s.VerifyToken); err != nil {
			return err
		}
		for _, a := range slices.Sorted(maps.Keys(s.AccountSecrets)) {
			if err := seedSecret(ctx, sm, f.SecretsPrefix+s.Name+"/"+a, s.AccountSecrets[a], ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedSecret stores one endpoint's secrets.
func seedSecret(ctx context.Context, sm *secretsmanager.Client, id string, secrets []string, verifyToken string) error {
	value := secrets[0]
	if len(secrets) > 1 || verifyToken != "" {
		b, err := json.Marshal(map[string]any{"signing_secrets": secrets, "verify_token": verifyToken})
		if err != nil {
			return err
		}
		value = string(b)
	}
	_, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &id, SecretString: &value})
	var exists *smtypes.ResourceExistsException
	if errors.As(err, &exists) {
		_, err = sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: &id, SecretString: &value})
	}
	if err != nil {
		return fmt.Errorf("seed secret %s: %w", id, err)
	}
	return nil
}
