// Package template reads the AWS SAM template (template.yaml) so that the local
// stack creates its table and queues, and configures its HTTP routes and SQS
// poller, from the same definitions that `sam deploy` uses: local and cloud
// cannot drift.
//
// It understands CloudFormation's short-form tags (!Ref, !GetAtt, !Sub, !Join,
// !If, …) and their long forms ({"Ref": …}, {"Fn::GetAtt": …}), resolves
// parameters to their defaults or to values set with SetParameter, and merges
// SAM Globals into serverless resources. It does not run the SAM transform:
// accessors read the resources as written.
package template

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNotFound is returned (wrapped) when a logical ID, parameter or required
// property is missing from the template.
var ErrNotFound = errors.New("not found")

// ErrUnresolvable is returned (wrapped) when a value depends on something only
// CloudFormation knows at deploy time, such as a resource's ARN inside !Sub.
var ErrUnresolvable = errors.New("no local value")

// Pseudo parameters and the values they resolve to unless SetParameter
// changes them. The account id is the one moto uses.
var defaultPseudo = map[string]string{
	"AWS::AccountId": "123456789012",
	"AWS::Partition": "aws",
	"AWS::Region":    "us-east-1",
	"AWS::StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/webhook-inbox/00000000-0000-0000-0000-000000000000",
	"AWS::StackName": "webhook-inbox",
	"AWS::URLSuffix": "amazonaws.com",
}

// Template is a parsed SAM/CloudFormation template. It is not safe for
// concurrent use while SetParameter is being called.
type Template struct {
	params     map[string]*Parameter
	pseudo     map[string]string
	conditions map[string]any
	rules      map[string]any
	mappings   map[string]any
	globals    map[string]map[string]any // section ("Function", "HttpApi", …) → properties
	resources  map[string]rawResource
}

type rawResource struct {
	typ                 string
	properties          map[string]any
	metadata            map[string]any
	deletionPolicy      string
	updateReplacePolicy string
	condition           string
}

// Parameter is a declared template parameter.
type Parameter struct {
	Name          string
	Type          string
	Default       *string // nil when the template declares no default
	AllowedValues []string
	MinValue      *float64
	MaxValue      *float64
	// AllowedPattern must match the whole value (CloudFormation's Java
	// regular expressions; the template's patterns mean the same in Go's).
	AllowedPattern *regexp.Regexp
	value          *string // set by SetParameter
}

// Value returns the parameter's value: the one set with SetParameter, else its
// default. ok is false when it has neither.
func (p *Parameter) Value() (v string, ok bool) {
	if p.value != nil {
		return *p.value, true
	}
	if p.Default != nil {
		return *p.Default, true
	}
	return "", false
}

// Resource is one entry of the Resources section. Properties hold the values
// as written (intrinsic functions in their long form, {"Ref": …}), with SAM
// Globals already merged in for serverless resources; pass them to Resolve.
type Resource struct {
	LogicalID           string
	Type                string
	Properties          map[string]any
	Metadata            map[string]any
	DeletionPolicy      string
	UpdateReplacePolicy string
	// Condition names the condition the resource exists under, if any.
	Condition string
}

// Reference is what a !Ref to a resource, or a !GetAtt, resolves to: the
// value only exists once CloudFormation has created the resource, so the
// local stack maps it to its own resources by logical ID.
type Reference struct {
	LogicalID string
	Attribute string // "" for !Ref
}

func (r Reference) String() string {
	if r.Attribute == "" {
		return "!Ref " + r.LogicalID
	}
	return "!GetAtt " + r.LogicalID + "." + r.Attribute
}

// Option configures Load and Parse.
type Option func(*Template) error

// WithParameter sets a parameter, or a pseudo parameter such as AWS::Region,
// as SetParameter does.
func WithParameter(name, value string) Option {
	return func(t *Template) error { return t.SetParameter(name, value) }
}

// Load reads and parses the template at path.
func Load(path string, opts ...Option) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load template: %w", err)
	}
	t, err := Parse(data, opts...)
	if err != nil {
		return nil, fmt.Errorf("load template %s: %w", path, err)
	}
	return t, nil
}

// Parse parses a template held in memory. It checks every parameter default
// against the parameter's constraints, as CloudFormation does on deploy.
func Parse(data []byte, opts ...Option) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	if doc.Kind == 0 {
		return nil, errors.New("parse template: empty document")
	}
	root, err := fromNode(&doc)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	top, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parse template: top level is %s, want a mapping", kindOf(root))
	}
	t := &Template{
		params:     map[string]*Parameter{},
		pseudo:     maps.Clone(defaultPseudo),
		conditions: map[string]any{},
		rules:      map[string]any{},
		mappings:   map[string]any{},
		globals:    map[string]map[string]any{},
		resources:  map[string]rawResource{},
	}
	if err := t.parseParameters(top["Parameters"]); err != nil {
		return nil, err
	}
	if m, ok := top["Conditions"].(map[string]any); ok {
		t.conditions = m
	}
	if m, ok := top["Rules"].(map[string]any); ok {
		t.rules = m
	}
	if m, ok := top["Mappings"].(map[string]any); ok {
		t.mappings = m
	}
	if g, ok := top["Globals"].(map[string]any); ok {
		for section, v := range g {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("parse template: Globals.%s is %s, want a mapping", section, kindOf(v))
			}
			t.globals[section] = m
		}
	}
	res, ok := top["Resources"].(map[string]any)
	if !ok {
		return nil, errors.New("parse template: no Resources mapping")
	}
	for id, v := range res {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("parse template: resource %s is %s, want a mapping", id, kindOf(v))
		}
		r := rawResource{}
		if r.typ, ok = m["Type"].(string); !ok {
			return nil, fmt.Errorf("parse template: resource %s has no Type", id)
		}
		r.properties, _ = m["Properties"].(map[string]any)
		r.metadata, _ = m["Metadata"].(map[string]any)
		r.deletionPolicy, _ = m["DeletionPolicy"].(string)
		r.updateReplacePolicy, _ = m["UpdateReplacePolicy"].(string)
		r.condition, _ = m["Condition"].(string)
		t.resources[id] = r
	}
	for _, opt := range opts {
		if err := opt(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Template) parseParameters(v any) error {
	if v == nil {
		return nil
	}
	decl, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("parse template: Parameters is %s, want a mapping", kindOf(v))
	}
	for name, d := range decl {
		m, ok := d.(map[string]any)
		if !ok {
			return fmt.Errorf("parse template: parameter %s is %s, want a mapping", name, kindOf(d))
		}
		p := &Parameter{Name: name}
		p.Type, _ = m["Type"].(string)
		if p.Type == "" {
			return fmt.Errorf("parse template: parameter %s has no Type", name)
		}
		if dv, ok := m["Default"]; ok {
			s, err := scalarString(dv)
			if err != nil {
				return fmt.Errorf("parse template: parameter %s Default: %w", name, err)
			}
			p.Default = &s
		}
		if av, ok := m["AllowedValues"].([]any); ok {
			for _, a := range av {
				s, err := scalarString(a)
				if err != nil {
					return fmt.Errorf("parse template: parameter %s AllowedValues: %w", name, err)
				}
				p.AllowedValues = append(p.AllowedValues, s)
			}
		}
		if ap, ok := m["AllowedPattern"].(string); ok {
			re, err := regexp.Compile(`^(?:` + ap + `)$`)
			if err != nil {
				return fmt.Errorf("parse template: parameter %s AllowedPattern: %w", name, err)
			}
			p.AllowedPattern = re
		}
		for key, dst := range map[string]**float64{"MinValue": &p.MinValue, "MaxValue": &p.MaxValue} {
			if mv, ok := m[key]; ok {
				s, err := scalarString(mv)
				if err != nil {
					return fmt.Errorf("parse template: parameter %s %s: %w", name, key, err)
				}
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return fmt.Errorf("parse template: parameter %s %s %q is not a number", name, key, s)
				}
				*dst = &f
			}
		}
		if p.Default != nil {
			if err := p.check(*p.Default); err != nil {
				return fmt.Errorf("parse template: parameter %s Default: %w", name, err)
			}
		}
		t.params[name] = p
	}
	return nil
}

// check validates a value against the parameter's type and constraints.
func (p *Parameter) check(v string) error {
	if p.Type == "Number" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if p.MinValue != nil && f < *p.MinValue {
			return fmt.Errorf("%s is below MinValue %g", v, *p.MinValue)
		}
		if p.MaxValue != nil && f > *p.MaxValue {
			return fmt.Errorf("%s is above MaxValue %g", v, *p.MaxValue)
		}
	}
	if p.AllowedPattern != nil && !p.AllowedPattern.MatchString(v) {
		return fmt.Errorf("%q does not match the AllowedPattern", v)
	}
	if len(p.AllowedValues) > 0 && !slices.Contains(p.AllowedValues, v) {
		return fmt.Errorf("%q is not one of the AllowedValues %v", v, p.AllowedValues)
	}
	return nil
}

// SetParameter overrides a parameter's default, as `sam deploy
// --parameter-overrides` does, or sets a pseudo parameter (AWS::Region,
// AWS::AccountId, AWS::Partition, AWS::StackName, AWS::URLSuffix). It returns
// an error wrapping ErrNotFound for an undeclared name, and an error when the
// value breaks the parameter's constraints.
func (t *Template) SetParameter(name, value string) error {
	if _, ok := t.pseudo[name]; ok {
		t.pseudo[name] = value
		return nil
	}
	p, ok := t.params[name]
	if !ok {
		return fmt.Errorf("set parameter %s: %w", name, ErrNotFound)
	}
	if err := p.check(value); err != nil {
		return fmt.Errorf("set parameter %s: %w", name, err)
	}
	p.value = &value
	return nil
}

// Parameter returns a declared parameter, or an error wrapping ErrNotFound.
func (t *Template) Parameter(name string) (Parameter, error) {
	p, ok := t.params[name]
	if !ok {
		return Parameter{}, fmt.Errorf("parameter %s: %w", name, ErrNotFound)
	}
	return *p, nil
}

// ParameterValue returns a parameter's effective value (set or default).
func (t *Template) ParameterValue(name string) (string, error) {
	p, ok := t.params[name]
	if !ok {
		return "", fmt.Errorf("parameter %s: %w", name, ErrNotFound)
	}
	v, ok := p.Value()
	if !ok {
		return "", fmt.Errorf("parameter %s has no Default and was not set: %w", name, ErrNotFound)
	}
	return v, nil
}

// LogicalIDs returns the logical IDs of the resources of the given type
// ("" for all), sorted.
func (t *Template) LogicalIDs(typ string) []string {
	var ids []string
	for id, r := range t.resources {
		if typ == "" || r.typ == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// globalsSection maps a serverless resource type to its Globals section.
var globalsSection = map[string]string{
	"AWS::Serverless::Function":     "Function",
	"AWS::Serverless::Api":          "Api",
	"AWS::Serverless::HttpApi":      "HttpApi",
	"AWS::Serverless::SimpleTable":  "SimpleTable",
	"AWS::Serverless::StateMachine": "StateMachine",
	"AWS::Serverless::LayerVersion": "LayerVersion",
}

// Resource returns a copy of the resource with that logical ID, SAM Globals
// merged into its properties the way SAM merges them (maps merge, lists
// append, the resource's own scalars and intrinsics win). It returns an error
// wrapping ErrNotFound when there is no such resource.
func (t *Template) Resource(logicalID string) (Resource, error) {
	r, ok := t.resources[logicalID]
	if !ok {
		return Resource{}, fmt.Errorf("resource %s: %w", logicalID, ErrNotFound)
	}
	props := deepCopy(r.properties)
	if section, ok := globalsSection[r.typ]; ok && t.globals[section] != nil {
		props = mergeGlobals(t.globals[section], props)
	}
	p, _ := props.(map[string]any)
	if p == nil {
		p = map[string]any{}
	}
	m, _ := deepCopy(r.metadata).(map[string]any)
	return Resource{
		LogicalID:           logicalID,
		Type:                r.typ,
		Properties:          p,
		Metadata:            m,
		DeletionPolicy:      r.deletionPolicy,
		UpdateReplacePolicy: r.updateReplacePolicy,
		Condition:           r.condition,
	}, nil
}

// resource returns the resource and checks its type.
func (t *Template) resource(logicalID, typ string) (Resource, error) {
	r, err := t.Resource(logicalID)
	if err != nil {
		return Resource{}, err
	}
	if r.Type != typ {
		return Resource{}, fmt.Errorf("resource %s is %s, want %s", logicalID, r.Type, typ)
	}
	return r, nil
}

// mergeGlobals merges a Globals section (g) under a resource's properties (l).
func mergeGlobals(g, l any) any {
	if l == nil {
		return deepCopy(g)
	}
	gm, gok := g.(map[string]any)
	lm, lok := l.(map[string]any)
	if gok && lok && !isIntrinsic(gm) && !isIntrinsic(lm) {
		out := map[string]any{}
		for k, v := range gm {
			out[k] = deepCopy(v)
		}
		for k, v := range lm {
			out[k] = mergeGlobals(gm[k], v)
		}
		return out
	}
	gl, gok := g.([]any)
	ll, lok := l.([]any)
	if gok && lok {
		return append(deepCopy(gl).([]any), ll...)
	}
	return l
}

func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// fromNode turns a YAML node into plain values (map[string]any, []any,
// string, int, float64, bool, nil), rewriting CloudFormation short-form tags
// into their long form: `!Ref X` → {"Ref": "X"}, `!GetAtt A.B` →
// {"Fn::GetAtt": ["A", "B"]}, `!Sub s` → {"Fn::Sub": s}, and so on.
func fromNode(n *yaml.Node) (any, error) {
	v, err := fromNodeUntagged(n)
	if err != nil {
		return nil, err
	}
	tag := n.Tag
	if n.Kind == yaml.AliasNode || !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v, nil
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, ok := strings.Cut(s, ".")
			if !ok {
				return nil, fmt.Errorf("line %d: !GetAtt %q: want LogicalID.Attribute", n.Line, s)
			}
			v = []any{id, attr}
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	default:
		return map[string]any{"Fn::" + name: v}, nil
	}
}

func fromNodeUntagged(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return fromNode(n.Content[0])
	case yaml.AliasNode:
		return fromNode(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromNode(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := fromNode(vn)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return v, nil
		default: // strings, timestamps, and the scalar under a custom tag
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

// scalarString renders a YAML scalar the way CloudFormation passes parameter
// values: as a string.
func scalarString(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", fmt.Errorf("want a scalar, got %s", kindOf(v))
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case Reference:
		return "a resource reference"
	}
	return fmt.Sprintf("%T", v)
}
