package template

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// alarmAnchors are the template's alarms and the runbook section of each.
var alarmAnchors = map[string]string{
	"DeadLetterQueueAlarm":  "dlq-not-empty",
	"OldestUnfinishedAlarm": "oldest-unfinished",
	"IngestErrorRateAlarm":  "ingest-5xx-rate",
	"DeadRateAlarm":         "dead-rate",
	"OutboxReviewAlarm":     "outbox-for-review",
	"LambdaErrorsAlarm":     "lambda-errors",
	"LambdaThrottlesAlarm":  "lambda-throttles",
}

// TestTemplateAlarms: the alarms are the documented ones, each notifies
// the optional topic (no topic, no actions), names its runbook section,
// and that section exists.
func TestTemplateAlarms(t *testing.T) {
	tpl := mustLoad(t)
	ids := tpl.LogicalIDs("AWS::CloudWatch::Alarm")
	want := slices.Sorted(func(yield func(string) bool) {
		for id := range alarmAnchors {
			if !yield(id) {
				return
			}
		}
	})
	if slices.Sort(ids); !slices.Equal(ids, want) {
		t.Fatalf("alarms %v, want %v", ids, want)
	}
	runbook, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]any{"Fn::If": []any{"HasAlarmTopic", []any{map[string]any{"Ref": "AlarmTopicArn"}}, map[string]any{"Ref": "AWS::NoValue"}}}
	for _, id := range ids {
		r, err := tpl.Resource(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"AlarmActions", "OKActions"} {
			if fmt.Sprint(r.Properties[p]) != fmt.Sprint(actions) {
				t.Errorf("%s.%s = %v, want the AlarmTopicArn topic only when set", id, p, r.Properties[p])
			}
		}
		anchor := alarmAnchors[id]
		desc, _ := r.Properties["AlarmDescription"].(string)
		if !strings.Contains(desc, "docs/runbook.md#"+anchor) {
			t.Errorf("%s: description %q does not name docs/runbook.md#%s", id, desc, anchor)
		}
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(anchor) + `$`).Match(runbook) {
			t.Errorf("%s: docs/runbook.md has no section %q", id, anchor)
		}
		if r.Properties["TreatMissingData"] == nil {
			t.Errorf("%s: no TreatMissingData", id)
		}
	}
}

// TestTemplateDashboard: the dashboard body is JSON once CloudFormation
// substitutes it, with the functions' metrics on (MetricsNamespace set) and
// off; on, it shows every alarm and every metric the functions publish;
// off, no widget queries the empty namespace.
func TestTemplateDashboard(t *testing.T) {
	tpl := mustLoad(t)
	d, err := tpl.Resource("Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := d.Properties["DashboardBody"].(map[string]any)["Fn::Sub"].([]any)
	if len(sub) != 2 {
		t.Fatalf("DashboardBody: want !Sub [body, vars], got %v", d.Properties["DashboardBody"])
	}
	body := sub[0].(string)
	vars, _ := sub[1].(map[string]any)
	// branch returns the string a variable's !If [MetricsOn, !Sub s, ""]
	// gives with the metrics on.
	branch := func(name string) string {
		args, _ := vars[name].(map[string]any)["Fn::If"].([]any)
		if len(args) != 3 || args[0] != "MetricsOn" || args[2] != "" {
			t.Fatalf("%s: want !If [MetricsOn, !Sub …, \"\"], got %v", name, vars[name])
		}
		s, _ := args[1].(map[string]any)["Fn::Sub"].(string)
		return s
	}
	widgets := branch("MetricWidgets")
	alarms := branch("MetricAlarms")
	ref := regexp.MustCompile(`\$\{([^}]+)\}`)
	// Numbers where a number goes, names elsewhere.
	subst := func(s string, on bool) string {
		return ref.ReplaceAllStringFunc(s, func(v string) string {
			switch v {
			case "${OldestUnfinishedAlarmSeconds}":
				return "3600"
			case "${MetricAlarms}":
				if on {
					return ref.ReplaceAllString(alarms, "x")
				}
				return ""
			case "${MetricWidgets}":
				if on {
					return ref.ReplaceAllStringFunc(widgets, func(v string) string {
						if v == "${OldestUnfinishedAlarmSeconds}" {
							return "3600"
						}
						return "x"
					})
				}
				return ""
			case "${MetricsNamespace}":
				if !on {
					return ""
				}
			}
			return "x"
		})
	}
	for _, on := range []bool{true, false} {
		var doc struct {
			Widgets []map[string]any `json:"widgets"`
		}
		text := subst(body, on)
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatalf("metrics on %v: dashboard body is not JSON once substituted: %v\n%s", on, err, text)
		}
		if on && len(doc.Widgets) < 10 || !on && len(doc.Widgets) != 4 {
			t.Errorf("metrics on %v: %d widgets", on, len(doc.Widgets))
		}
		if !on && strings.Contains(body, "${MetricsNamespace}") {
			t.Error("a widget always shown queries MetricsNamespace")
		}
	}
	all := body + alarms + widgets
	for id := range alarmAnchors {
		if !strings.Contains(all, "${"+id+".Arn}") {
			t.Errorf("dashboard does not show %s", id)
		}
	}
	for _, m := range []string{"Webhooks", "Records", "Attempt", "CommitConflicts", "OutboxRows", "DeliveryLatency", "OldestUnfinishedAge", "Moved", "OutboxForReview"} {
		if !strings.Contains(widgets, `"`+m+`"`) && !strings.Contains(widgets, `\"`+m+`\"`) {
			t.Errorf("dashboard does not show metric %s", m)
		}
	}
}
