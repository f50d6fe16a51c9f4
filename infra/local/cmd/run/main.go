// Command run is `make run`: the whole system on this machine with no
// Docker and no AWS account. It starts the local AWS on 127.0.0.1:4566
// (kumo for SQS, S3, Secrets Manager and EventBridge, dynoxide for
// DynamoDB, behind one router; LOCAL_AWS=moto puts moto in kumo's place),
// creates the table and queues that template.yaml declares, seeds the
// secrets of infra/local/sources.json, serves the HTTP API on
// 127.0.0.1:3000 with the ingest handler, and feeds the main queue to the
// processor handler as Lambda's SQS event source would. Ctrl-C stops all of
// it, the emulators included.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// ingestFunction is the template's logical ID of the function behind the
// HTTP API.
const ingestFunction = "IngestFunction"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run() error {
	apiAddr := flag.String("api", "127.0.0.1:3000", "address of the local HTTP API")
	awsPort := flag.Int("aws-port", 4566, "port on 127.0.0.1 of the local AWS endpoint (kumo, and dynoxide for DynamoDB, behind one router)")
	tplPath := flag.String("template", "template.yaml", "SAM template to read resources from")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	stateDir := flag.String("state", ".local", "directory for the emulator's log")
	sweepEvery := flag.Duration("sweep-every", envDuration("SWEEP_EVERY"), "how often the sweep runs (default: the template's Sweep schedule; env SWEEP_EVERY)")
	sweepAfter := flag.Duration("sweep-after", envDuration("SWEEP_AFTER"), "how long an unfinished event may be overdue before the sweep re-enqueues it (default: the template's SweepAfterSeconds; env SWEEP_AFTER)")
	logFormat := flag.String("log", "text", "log lines as text (key=value, for reading here) or json (as in Lambda)")
	metrics := flag.Bool("metrics", false, "embed the CloudWatch metrics (EMF) in the log lines, as in Lambda")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sources, err := local.LoadSources(*srcPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*stateDir, 0o755); err != nil {
		return err
	}
	aws, err := local.StartAWS(ctx, *awsPort, *stateDir)
	if err != nil {
		return err
	}
	defer aws.Stop()
	if aws.Note != "" {
		fmt.Fprintln(os.Stderr, "note:", aws.Note)
	}

	// The functions find the emulators through the SDK's own settings, as
	// they would any endpoint: one, the router's.
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":      aws.Endpoint,
		"AWS_REGION":            emulators.Region,
		"AWS_ACCESS_KEY_ID":     "test",
		"AWS_SECRET_ACCESS_KEY": "test",
	} {
		os.Setenv(k, v)
	}
	cfg, err := app.AWSFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	var log *slog.Logger
	switch *logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	case "json":
		log = obs.NewLogger(os.Stdout, slog.LevelInfo)
	default:
		return fmt.Errorf("-log %q: want text or json", *logFormat)
	}
	// Where DynamoDB is moto's, the handlers' requests go one at a time:
	// moto checks a write's condition and then writes without a lock, and
	// with several processor batches in flight two claims of one event
	// could otherwise both pass a condition DynamoDB evaluates atomically.
	// The poller keeps its own client, as its long polls would hold up
	// everything else. dynoxide is atomic: no need.
	handlerCfg := cfg.Copy()
	if !aws.Atomic() {
		next := cfg.HTTPClient
		if next == nil {
			next = awshttp.NewBuildableClient() // what each client would build itself
		}
		handlerCfg.HTTPClient = emulators.Serial(next)
	}
	overrides := map[string]string{}
	if !*metrics {
		// No EMF blob in every line: the metrics are CloudWatch's, and
		// here nothing reads them.
		overrides["METRICS_NAMESPACE"] = ""
	}
	// Where the handlers' targets are (TARGETS: the developer's own
	// receivers, if any), and the receipt's settings before TARGETS,
	// which stop the stack with the entry to write instead.
	for _, name := range []string{"TARGETS", "RECEIPT_WEBHOOK_URL", "RECEIPT_RETRY_UNKNOWN"} {
		if v, ok := os.LookupEnv(name); ok {
			overrides[name] = v
		}
	}
	stack, err := local.Setup(ctx, handlerCfg, *tplPath, sources, overrides, log)
	if err != nil {
		return err
	}
	apiOpts, err := apiOptions(*tplPath, stack)
	if err != nil {
		return err
	}
	apiOpts.Logger = log.With("component", "api")

	ln, err := net.Listen("tcp", *apiAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *apiAddr, err)
	}
	srv := local.NewServer(local.NewAPI(stack.Ingest.HandleV2, apiOpts), local.ServerTimeouts{})
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()

	poller := stack.Poller(local.PollerClient(cfg), cfg.Region, log.With("component", "poller"))
	pollDone := make(chan error, 1)
	go func() { pollDone <- poller.Run(ctx) }()

	// The sweep, on the template's schedule as EventBridge runs it.
	sweeper, err := stack.Sweeper(stack.Replay.Handle, log.With("component", "sweep"))
	if err != nil {
		return err
	}
	if *sweepEvery > 0 {
		sweeper.Every = *sweepEvery
	}
	if *sweepAfter > 0 {
		stack.Replay.SweepAfter = *sweepAfter
	}
	sweepDone := make(chan error, 1)
	go func() { sweepDone <- sweeper.Run(ctx) }()

	// The example consumer of the forwarded events: each one the local
	// bus's rule delivers is logged.
	forwardDone := make(chan struct{})
	go func() {
		defer close(forwardDone)
		if stack.ForwardedQueueURL != "" {
			local.LogForwarded(ctx, local.PollerClient(cfg), stack.ForwardedQueueURL, log.With("component", "forwarded"))
		}
	}()
	forwarding := "off (no \"forward\" in the sources file)"
	if stack.ForwardedQueueURL != "" {
		forwarding = fmt.Sprintf("FORWARD %s → bus %s → queue %s (each arrival is logged)", stack.Env["FORWARD"], local.ForwardBusName, stack.ForwardedQueueURL)
	}

	targets, err := describeTargets(stack.Env["TARGETS"])
	if err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, `
webhook-inbox is running locally.
  API         http://%s/webhooks/{source}[/{account}]   sources: %v
  AWS         %s   (%s)   table %s
              main queue %s
              DLQ        %s (after %d receives; visibility %s)
  Sweep       every %s, events overdue by %s (-sweep-every, -sweep-after)
  Targets     %s (TARGETS)
  Forwarding  %s
  Send a signed Stripe invoice.paid:   make send
  Inspect:  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 \
              aws --endpoint-url %s dynamodb scan --table-name %s
  Ctrl-C stops everything.

`, ln.Addr(), sources.Names(), aws.Endpoint, aws.Emulators(), stack.Resources.TableName, stack.Resources.QueueURL,
		stack.Resources.DLQURL, stack.Resources.MaxReceiveCount, stack.Resources.VisibilityTimeout,
		sweeper.Every, stack.Replay.SweepAfter, targets, forwarding, aws.Endpoint, stack.Resources.TableName)

	pollerStopped := false
	select {
	case <-ctx.Done():
	case err = <-srvErr:
	case err = <-pollDone:
		pollerStopped = true
	}
	stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if !pollerStopped {
		<-pollDone
	}
	<-sweepDone
	<-forwardDone
	fmt.Fprintln(os.Stderr, "stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// apiOptions are the local API's limits from the template: the ingest
// function's Timeout and its MAX_BODY_BYTES, so that a declared oversized
// body is refused with the function's own answer before it is read.
func apiOptions(tplPath string, stack *local.Stack) (local.APIOptions, error) {
	tpl, err := template.Load(tplPath)
	if err != nil {
		return local.APIOptions{}, fmt.Errorf("load %s: %w", tplPath, err)
	}
	fn, err := tpl.Function(ingestFunction)
	if err != nil {
		return local.APIOptions{}, fmt.Errorf("%s: %w", tplPath, err)
	}
	maxBody, err := strconv.ParseInt(stack.Env["MAX_BODY_BYTES"], 10, 64)
	if err != nil {
		return local.APIOptions{}, fmt.Errorf("MAX_BODY_BYTES: %w", err)
	}
	return local.APIOptions{MaxBodyBytes: maxBody, FunctionTimeout: fn.Timeout}, nil
}

// envDuration reads a Go duration from the environment; unset is zero
// (the template's value). A value that is not a positive duration stops
// `make run` with a message, rather than silently sweeping on another
// schedule than the one asked for.
func envDuration(name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "run: %s=%q: want a positive Go duration such as 30s or 2m\n", name, v)
		os.Exit(2)
	}
	return d
}

// describeTargets says where each TARGETS entry's rows go, for the
// banner: "receipt → log, refund_notice → http://…".
func describeTargets(v string) (string, error) {
	var list []struct{ Name, URL string }
	if strings.TrimSpace(v) == "" {
		return "none", nil
	}
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return "", fmt.Errorf("TARGETS: %w", err)
	}
	var parts []string
	for _, t := range list {
		where := t.URL
		if where == "" {
			where = "the log"
		}
		parts = append(parts, t.Name+" → "+where)
	}
	if len(parts) == 0 {
		return "none", nil
	}
	return strings.Join(parts, ", "), nil
}
