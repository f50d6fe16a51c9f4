package obs_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/obs/emftest"
)

func TestMetricsLine(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, slog.LevelInfo)
	m := obs.Metrics{Namespace: "WebhookInbox", Now: func() time.Time { return time.UnixMilli(1764590400123) }}
	log.Info("webhook", append([]any{"source", "stripe", "outcome", "accepted"},
		m.Attrs([]obs.Dimension{{Name: "Source", Value: "stripe"}, {Name: "Outcome", Value: ""}}, [][]string{{"Source", "Outcome"}, {"Outcome"}},
			obs.Count("Webhooks"), obs.Metric{Name: "Latency", Unit: obs.UnitMilliseconds, Value: 1.5})...)...)
	lines, err := emftest.Lines(buf.Bytes())
	if err != nil || len(lines) != 1 {
		t.Fatalf("got %v, %v\n%s", lines, err, buf.Bytes())
	}
	l := lines[0]
	if l.Namespace != "WebhookInbox" || !l.HasSets([]string{"Source", "Outcome"}, []string{"Outcome"}) ||
		l.Values["Source"] != "stripe" || l.Values["Outcome"] != "none" || l.Metrics["Webhooks"] != 1 || l.Metrics["Latency"] != 1.5 || l.Units["Latency"] != "Milliseconds" {
		t.Errorf("got %+v", l)
	}
	if !strings.Contains(buf.String(), `"Timestamp":1764590400123`) {
		t.Errorf("timestamp: %s", buf.Bytes())
	}
	// With no namespace, or no metric, nothing is added.
	if got := (obs.Metrics{}).Attrs(nil, nil, obs.Count("x")); got != nil {
		t.Errorf("no namespace: %v", got)
	}
	if got := m.Attrs(nil, nil); got != nil {
		t.Errorf("no metric: %v", got)
	}
}

// TestCheckCatchesBrokenLines: the checker refuses what CloudWatch would
// drop, so a test that passes through it means something.
func TestCheckCatchesBrokenLines(t *testing.T) {
	for _, line := range []string{
		`{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[{"Name":"M"}]}]},"A":"a","M":1}`,                        // no Timestamp
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"AWS/Lambda","Dimensions":[["A"]],"Metrics":[{"Name":"M"}]}]},"A":"a","M":1}`, // AWS/ namespace
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[{"Name":"M","Unit":"Things"}]}]},"A":"a","M":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[{"Name":"M"}]}]},"M":1}`,           // dimension missing
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[{"Name":"M"}]}]},"A":"a","M":"1"}`, // metric not a number
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[]}]},"A":"a"}`,                     // no metric
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["A"]],"Metrics":[{"Name":"M"}],"Extra":1}]},"A":"a","M":1}`,
	} {
		if _, err := emftest.Check([]byte(line)); err == nil {
			t.Errorf("accepted %s", line)
		}
	}
}

func TestCheckNamespace(t *testing.T) {
	for ns, ok := range map[string]bool{"": true, "WebhookInbox": true, "Team/Webhook Inbox#1": true, "AWS/Lambda": false, "a\u00e9": false, strings.Repeat("a", 256): false} {
		if err := obs.CheckNamespace(ns); (err == nil) != ok {
			t.Errorf("%q: got %v", ns, err)
		}
	}
}
