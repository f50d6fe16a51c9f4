package template

import (
	"testing"
	"time"
)

func TestTemplateSchedules(t *testing.T) {
	tpl := mustLoad(t)
	got, err := tpl.Schedules("ReplayFunction")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Event != "Sweep" || got[0].Every != 5*time.Minute || got[0].Input != `{"action":"sweep","dry_run":false,"max":1000}` || got[0].Disabled {
		t.Errorf("ReplayFunction schedules = %+v, want the sweep every 5 minutes, not a dry run", got)
	}
	for _, id := range []string{"IngestFunction", "ProcessorFunction"} {
		if s, err := tpl.Schedules(id); err != nil || len(s) != 0 {
			t.Errorf("%s: got %v, %v; want none", id, s, err)
		}
	}
	tpl = mustLoad(t, WithParameter("SweepSchedule", "rate(2 minutes)"))
	if got, err := tpl.Schedules("ReplayFunction"); err != nil || got[0].Every != 2*time.Minute {
		t.Errorf("rate(2 minutes): got %+v, %v", got, err)
	}
	// Slower than the oldest-unfinished alarm's 5-minute periods: refused.
	if err := mustLoad(t).SetParameter("SweepSchedule", "rate(1 hour)"); err == nil {
		t.Error("SweepSchedule rate(1 hour) accepted")
	}
}

func TestParseRate(t *testing.T) {
	for expr, want := range map[string]time.Duration{
		"rate(5 minutes)": 5 * time.Minute, "rate(1 minute)": time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour,
	} {
		if got, err := parseRate(expr); err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, expr := range []string{"rate(0 minutes)", "rate(1 minutes)", "rate(5 minute)", "rate(5 seconds)", "cron(0 12 * * ? *)", "rate(x minutes)", "rate(5minutes)", ""} {
		if got, err := parseRate(expr); err == nil {
			t.Errorf("%s: got %v, want an error", expr, got)
		}
	}
}
