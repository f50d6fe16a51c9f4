// Package obs sets up structured logging: slog JSON lines on stdout, which
// Lambda ships to CloudWatch Logs, with the Lambda request id when there is
// one.
package obs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// ParseLevel reads LOG_LEVEL: debug, info (also ""), warn or error.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("LOG_LEVEL %q: want debug, info, warn or error", s)
}

// NewLogger returns a JSON logger writing to w at level.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// WithRequest adds the Lambda request id carried by ctx, if any.
func WithRequest(ctx context.Context, l *slog.Logger) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return l.With("request_id", lc.AwsRequestID)
	}
	return l
}

// RequestID returns the Lambda request id carried by ctx, or "".
func RequestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
