// Command replay is `make replay ARGS='{"action":"inspect","event_key":"…"}'`:
// it runs one replay request against the `make run` stack, through the
// replay handler wired as in Lambda and under the replay function's
// timeout, printing progress on long actions (examined, moved, rate, time
// left) to stderr and the summary, as the function returns it, to stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

func main() {
	err := run()
	switch {
	case errors.Is(err, errRefused):
		// The answer, printed, says why; exit 2 as for a usage error.
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "replay:", strings.TrimPrefix(err.Error(), "replay: "))
		os.Exit(1)
	}
}

// errRefused is a request the replay function refused, nothing done: its
// answer is printed as the function gives it.
var errRefused = errors.New("refused")

func run() error {
	awsPort := flag.Int("aws-port", 4566, "port on 127.0.0.1 of the `make run` stack's AWS endpoint")
	tplPath := flag.String("template", "template.yaml", "SAM template the stack was provisioned from")
	srcPath := flag.String("sources", "infra/local/sources.json", "local sources with dev-only secrets")
	every := flag.Duration("progress", time.Second, "how often to print progress on a long action (0: never)")
	logs := flag.Bool("logs", false, "print the handler's JSON log lines to stderr too")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), `usage: replay [flags] '{"action":"drain-dlq"}'   (or the request on stdin; events/replay-*.json are examples)`)
		flag.PrintDefaults()
	}
	flag.Parse()

	payload, err := request(flag.Args())
	if err != nil {
		return err
	}
	req, err := replay.DecodeRequest(payload)
	if err != nil {
		return err
	}
	if err := req.Validate(time.Now()); err != nil {
		return err
	}
	sources, err := local.LoadSources(*srcPath)
	if err != nil {
		return err
	}
	tpl, err := template.Load(*tplPath)
	if err != nil {
		return err
	}
	fn, err := tpl.Function("ReplayFunction")
	if err != nil {
		return err
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", *awsPort)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": emulators.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
	} {
		os.Setenv(k, v)
	}
	// The function's timeout bounds the run as Lambda would, and the
	// handler stops before it with a summary that says how to go on.
	ctx, cancel := context.WithTimeout(context.Background(), fn.Timeout)
	defer cancel()
	cfg, err := app.AWSFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	var logOut io.Writer = io.Discard
	if *logs {
		logOut = os.Stderr
	}
	stack, err := local.Setup(ctx, cfg, *tplPath, sources, nil, obs.NewLogger(logOut, slog.LevelInfo))
	if err != nil {
		return fmt.Errorf("%w (is `make run` running, with its AWS endpoint on %s?)", err, endpoint)
	}
	r := stack.Replay
	deadline, _ := ctx.Deadline()
	last := time.Now()
	if *every > 0 {
		r.Progress = func(s replay.Summary) {
			if time.Since(last) < *every {
				return
			}
			last = time.Now()
			fmt.Fprintln(os.Stderr, progressLine(s, time.Until(deadline)))
		}
	}
	// As the function runs it: a refusal is an answer saying why.
	sum, err := r.Invoke(ctx, payload)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	if sum.Refused != "" {
		return errRefused
	}
	if sum.Error != "" {
		return errors.New(sum.Error)
	}
	return nil
}

// request is the JSON request from the arguments ("@file" reads a file,
// such as events/replay-drain-dlq.json), or from stdin with none.
func request(args []string) ([]byte, error) {
	switch len(args) {
	case 0:
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, err
		}
		return b, nil
	case 1:
		if name, ok := strings.CutPrefix(args[0], "@"); ok {
			return os.ReadFile(name)
		}
		return []byte(args[0]), nil
	}
	return nil, fmt.Errorf("one request, as one JSON argument: got %d arguments (quote it: ARGS='{\"action\":\"drain-dlq\"}')", len(args))
}

// progressLine is one line of a long action's progress.
func progressLine(s replay.Summary, left time.Duration) string {
	rate := 0.0
	if s.ElapsedSeconds > 0 {
		rate = float64(s.Examined) / s.ElapsedSeconds
	}
	var counts []string
	for k, v := range s.Counts {
		counts = append(counts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(counts)
	return fmt.Sprintf("%s: examined %d, moved %d, %.0f/s, %s left (%s)",
		s.Action, s.Examined, s.Moved, rate, left.Round(time.Second), strings.Join(counts, ", "))
}
