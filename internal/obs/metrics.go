package obs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Metrics puts CloudWatch metrics in the JSON log lines the functions
// already write, in the Embedded Metric Format: CloudWatch Logs extracts
// them from the log group, so publishing a metric costs no AWS call and
// no SDK. A line carries an "_aws" member declaring its metrics, each
// metric's value and each dimension's value as members of its own.
//
// Dimension and metric members are named in CamelCase (Source, Outcome,
// Webhooks…) beside the line's own snake_case fields (source, outcome…):
// a dimension's value is always from a bounded set (a configured source,
// never the name in a request's path), since every distinct value is a
// metric CloudWatch bills for.
//
// The zero Metrics (no namespace) adds nothing.
type Metrics struct {
	Namespace string
	// Now stamps the lines; nil means time.Now.
	Now func() time.Time
}

// Units of the metrics the functions publish (CloudWatch's names).
const (
	UnitCount        = "Count"
	UnitMilliseconds = "Milliseconds"
	UnitSeconds      = "Seconds"
	UnitNone         = "None"
)

// Metric is one value a line publishes.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Dimension is one dimension of a line's metrics.
type Dimension struct {
	Name, Value string
}

// Limits of the Embedded Metric Format.
const (
	maxNamespace      = 255
	maxMetrics        = 100
	maxDimensionValue = 1024
)

// CheckNamespace reports what is wrong with a namespace for METRICS_NAMESPACE:
// 1 to 255 of the characters CloudWatch takes, not starting with "AWS/".
// "" is right: it turns metrics off.
func CheckNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if len(ns) > maxNamespace {
		return fmt.Errorf("metrics namespace is %d bytes: at most %d", len(ns), maxNamespace)
	}
	if strings.HasPrefix(ns, "AWS/") {
		return errors.New(`metrics namespace may not start with "AWS/": CloudWatch keeps those for AWS services`)
	}
	for _, r := range ns {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-/#: ", r):
		default:
			return fmt.Errorf("metrics namespace %q: %q is not one of the characters CloudWatch takes (letters, digits, . _ - / # : and space)", ns, r)
		}
	}
	return nil
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// Attrs returns the slog attributes that make a line publish metrics
// under dims, aggregated along each of sets (lists of dimension names
// from dims; one empty set aggregates over all). Off (no namespace), or
// with no metric, it returns nil.
func (m Metrics) Attrs(dims []Dimension, sets [][]string, metrics ...Metric) []any {
	if m.Namespace == "" || len(metrics) == 0 {
		return nil
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	if len(metrics) > maxMetrics {
		metrics = metrics[:maxMetrics]
	}
	d := emfDirective{Namespace: m.Namespace, Dimensions: sets, Metrics: make([]emfMetric, len(metrics))}
	if d.Dimensions == nil {
		d.Dimensions = [][]string{{}}
	}
	for i, mt := range metrics {
		d.Metrics[i] = emfMetric{Name: mt.Name, Unit: mt.Unit}
	}
	attrs := []any{"_aws", emfMeta{Timestamp: now().UnixMilli(), CloudWatchMetrics: []emfDirective{d}}}
	for _, dim := range dims {
		v := dim.Value
		if v == "" {
			// CloudWatch drops a line whose dimension value is empty.
			v = "none"
		}
		attrs = append(attrs, dim.Name, Clip(v, maxDimensionValue))
	}
	for _, mt := range metrics {
		attrs = append(attrs, mt.Name, mt.Value)
	}
	return attrs
}

// Count is a metric of one occurrence.
func Count(name string) Metric { return Metric{Name: name, Unit: UnitCount, Value: 1} }
