package deploy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
)

// FunctionNeeds is what each function of the template reads from its
// environment at cold start (package app's needs, by logical ID).
var FunctionNeeds = map[string]config.Need{
	"IngestFunction":    app.IngestNeeds,
	"ProcessorFunction": app.ProcessorNeeds,
	"ReplayFunction":    app.ReplayNeeds,
}

// Apply sets the overrides on tpl, as CloudFormation would take them: an
// undeclared parameter or a value its constraints refuse is an error.
func Apply(tpl *template.Template, overrides map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(overrides)) {
		if err := tpl.SetParameter(k, overrides[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StaleOverrides returns, for each override whose value is not the
// template's default and has no comment right above it to say why, a line
// naming both values. Such an entry is how a deploy ships a setting nobody
// chose: the template's default moved, or the file was copied from an
// older one.
func StaleOverrides(tpl *template.Template, sc *Samconfig) []string {
	var out []string
	for _, o := range sc.Overrides {
		p, err := tpl.Parameter(o.Key)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: not a parameter of the template", o.Key))
			continue
		}
		def := "(none)"
		if p.Default != nil {
			def = *p.Default
		}
		if p.Default != nil && *p.Default == o.Value || o.Comment != "" {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s differs from the template's default %s, and no comment above it says why", o.Key, o.Value, def))
	}
	return out
}

// StartFunctions reads each function's environment as the template gives
// it with its parameters' values, and runs the function's own
// configuration parser on it: an error is a function that would refuse to
// start (every webhook answered 5xx, the queue not drained). A resource
// the environment names (a table, a queue URL) is given a value of its
// kind: it only exists once deployed.
//
// It checks the template's Rules first, as CloudFormation does before it
// changes anything: a rule that fails is a deploy refused.
func StartFunctions(tpl *template.Template) error {
	var errs []error
	if err := tpl.CheckRules(); err != nil {
		errs = append(errs, fmt.Errorf("the deploy would be refused: %w", err))
	}
	for _, id := range slices.Sorted(maps.Keys(FunctionNeeds)) {
		env, err := Environment(tpl, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		if _, err := config.Load(func(k string) string { return env[k] }, FunctionNeeds[id]); err != nil {
			errs = append(errs, fmt.Errorf("%s would not start: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Environment returns a function's environment variables, resolved with
// the template's parameters (SAM's Globals included).
func Environment(tpl *template.Template, logicalID string) (map[string]string, error) {
	r, err := tpl.Resource(logicalID)
	if err != nil {
		return nil, err
	}
	env, _ := r.Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	out := map[string]string{}
	for k, v := range vars {
		rv, err := tpl.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		switch rv := rv.(type) {
		case nil:
		case string:
			out[k] = rv
		case template.Reference:
			out[k], err = deployedValue(tpl, rv)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		default:
			out[k] = fmt.Sprint(rv)
		}
	}
	return out, nil
}

// deployedValue stands in for what a reference to a resource becomes once
// deployed, in the shape the functions check: a queue's URL, an ARN, a
// name.
func deployedValue(tpl *template.Template, ref template.Reference) (string, error) {
	r, err := tpl.Resource(ref.LogicalID)
	if err != nil {
		return "", err
	}
	region, account := "us-east-1", "123456789012"
	switch {
	case ref.Attribute == "Arn":
		service := strings.ToLower(strings.Split(strings.TrimPrefix(r.Type, "AWS::"), "::")[0])
		return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, region, account, ref.LogicalID), nil
	case ref.Attribute != "":
		return strings.ToLower(ref.LogicalID + "-" + ref.Attribute), nil
	case r.Type == "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", region, account, ref.LogicalID), nil
	default:
		return strings.ToLower(ref.LogicalID), nil
	}
}
