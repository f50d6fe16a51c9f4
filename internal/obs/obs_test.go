package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"  ", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"DEBUG", slog.LevelDebug, false},
		{"info", slog.LevelInfo, false},
		{"Info", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"WARN", slog.LevelWarn, false},
		{"warning", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{" error\n", slog.LevelError, false},
		{"verbose", 0, true},
		{"trace", 0, true},
		{"err", 0, true},
		{"-4", 0, true},
		{"INFO+2", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLevel(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// logLine logs one line through WithRequest(ctx) and returns its fields.
func logLine(tb testing.TB, ctx context.Context) map[string]any {
	tb.Helper()
	var buf bytes.Buffer
	WithRequest(ctx, NewLogger(&buf, slog.LevelInfo)).Info("handled")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		tb.Fatalf("log line is not JSON: %v: %s", err, buf.Bytes())
	}
	return m
}

func TestWithRequest(t *testing.T) {
	tests := []struct {
		name string
		ctx  context.Context
		want string // "" means no request_id attribute
	}{
		{"lambda context", lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"}), "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"},
		{"lambda context without id", lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{}), ""},
		{"plain context", context.Background(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := logLine(t, tt.ctx)
			got, ok := m["request_id"]
			if tt.want == "" {
				if ok {
					t.Errorf("request_id: got %v, want none", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("request_id: got %v, want %q", got, tt.want)
			}
			if RequestID(tt.ctx) != tt.want {
				t.Errorf("RequestID: got %q, want %q", RequestID(tt.ctx), tt.want)
			}
		})
	}
}

func TestRequestIDWithoutLambdaContext(t *testing.T) {
	if got := RequestID(context.Background()); got != "" {
		t.Errorf("got %q, want empty", got)
	}
}

func TestNewLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogger(&buf, slog.LevelWarn)
	l.Info("dropped")
	if buf.Len() != 0 {
		t.Fatalf("info at warn level: got %q, want nothing", buf.String())
	}
	l.Warn("kept")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("log line is not JSON: %v: %s", err, buf.Bytes())
	}
	if m["msg"] != "kept" || m["level"] != "WARN" {
		t.Errorf("got %v, want msg kept at level WARN", m)
	}
}
