// Package emftest checks log lines against CloudWatch's Embedded Metric
// Format for the tests of the packages that publish metrics. Tests only:
// no function imports it.
package emftest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed emf.schema.json
var schemaJSON []byte

var schema = func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("emf.schema.json", doc); err != nil {
		panic(err)
	}
	return c.MustCompile("emf.schema.json")
}()

// Line is one log line's metrics, as CloudWatch would extract them.
type Line struct {
	Msg       string
	Namespace string
	// Dimensions are the line's dimension sets, each in its order.
	Dimensions [][]string
	// Values are the dimensions' values and Metrics the metrics' values
	// (a number or the sum of an array), by name.
	Values  map[string]string
	Metrics map[string]float64
	Units   map[string]string
}

// Check validates one JSON log line that carries metrics: against the
// schema, then that every dimension it names is a string member of the
// root and every metric a number (or an array of at most 100 numbers),
// and that no name is both.
func Check(line []byte) (Line, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return Line{}, fmt.Errorf("not JSON: %w", err)
	}
	if err := schema.Validate(inst); err != nil {
		return Line{}, fmt.Errorf("against the EMF schema: %w", err)
	}
	var root map[string]any
	if err := json.Unmarshal(line, &root); err != nil {
		return Line{}, err
	}
	msg, _ := root["msg"].(string)
	out := Line{Msg: msg, Values: map[string]string{}, Metrics: map[string]float64{}, Units: map[string]string{}}
	var meta struct {
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	aws, _ := json.Marshal(root["_aws"])
	if err := json.Unmarshal(aws, &meta); err != nil {
		return Line{}, err
	}
	for _, d := range meta.CloudWatchMetrics {
		out.Namespace = d.Namespace
		for _, set := range d.Dimensions {
			out.Dimensions = append(out.Dimensions, set)
			for _, name := range set {
				v, ok := root[name].(string)
				if !ok {
					return Line{}, fmt.Errorf("dimension %q: the root has no string member of that name", name)
				}
				if v == "" || len(v) > 1024 {
					return Line{}, fmt.Errorf("dimension %q: value of %d bytes, want 1 to 1024", name, len(v))
				}
				out.Values[name] = v
			}
		}
		for _, m := range d.Metrics {
			switch v := root[m.Name].(type) {
			case float64:
				out.Metrics[m.Name] = v
			case []any:
				if len(v) == 0 || len(v) > 100 {
					return Line{}, fmt.Errorf("metric %q: %d values, want 1 to 100", m.Name, len(v))
				}
				sum := 0.0
				for _, x := range v {
					f, ok := x.(float64)
					if !ok {
						return Line{}, fmt.Errorf("metric %q: a value that is not a number", m.Name)
					}
					sum += f
				}
				out.Metrics[m.Name] = sum
			default:
				return Line{}, fmt.Errorf("metric %q: the root has no number member of that name", m.Name)
			}
			if _, both := out.Values[m.Name]; both {
				return Line{}, fmt.Errorf("%q is a dimension and a metric", m.Name)
			}
			out.Units[m.Name] = m.Unit
		}
	}
	return out, nil
}

// Lines checks every line of logs that carries metrics and returns them;
// lines without "_aws" are skipped, others that fail are errors.
func Lines(logs []byte) ([]Line, error) {
	var out []Line
	var errs []string
	for i, l := range bytes.Split(logs, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 || !bytes.Contains(l, []byte(`"_aws"`)) {
			continue
		}
		line, err := Check(l)
		if err != nil {
			errs = append(errs, fmt.Sprintf("line %d: %v\n\t%s", i+1, err, l))
			continue
		}
		out = append(out, line)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%d lines are not valid EMF:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	return out, nil
}

// HasSets reports whether a line's dimension sets are exactly want.
func (l Line) HasSets(want ...[]string) bool {
	return slices.EqualFunc(l.Dimensions, want, slices.Equal[[]string])
}
