package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Defaults that AWS applies when the template leaves a property out; the
// local stack applies the same so that it behaves like the cloud.
const (
	defaultVisibilityTimeout = 30 * time.Second
	defaultMessageRetention  = 4 * 24 * time.Hour
	defaultFunctionTimeout   = 3 * time.Second
	defaultMemorySize        = 128
	defaultSQSBatchSize      = 10
)

// TableSpec is an AWS::DynamoDB::Table as the template declares it.
type TableSpec struct {
	LogicalID              string
	KeySchema              []KeyElement
	AttributeDefinitions   []AttributeDefinition
	BillingMode            string // PAY_PER_REQUEST or PROVISIONED (CloudFormation's default)
	ReadCapacityUnits      int64  // PROVISIONED only
	WriteCapacityUnits     int64  // PROVISIONED only
	GlobalSecondaryIndexes []IndexSpec
	TTLAttribute           string // "" unless TimeToLiveSpecification is enabled
	PointInTimeRecovery    bool
	SSEEnabled             bool
	StreamViewType         string // "" without a stream
}

// KeyElement is one entry of a key schema; KeyType is HASH or RANGE.
type KeyElement struct {
	AttributeName string
	KeyType       string
}

// AttributeDefinition declares a key attribute's type: S, N or B.
type AttributeDefinition struct {
	AttributeName string
	AttributeType string
}

// IndexSpec is a global secondary index.
type IndexSpec struct {
	IndexName          string
	KeySchema          []KeyElement
	ProjectionType     string // ALL, KEYS_ONLY or INCLUDE
	NonKeyAttributes   []string
	ReadCapacityUnits  int64 // PROVISIONED tables only
	WriteCapacityUnits int64
}

// HashKey returns the name of the table's partition key.
func (s TableSpec) HashKey() string {
	for _, k := range s.KeySchema {
		if k.KeyType == "HASH" {
			return k.AttributeName
		}
	}
	return ""
}

// QueueSpec is an AWS::SQS::Queue as the template declares it, with SQS's
// defaults for the properties it leaves out.
type QueueSpec struct {
	LogicalID              string
	VisibilityTimeout      time.Duration // whole seconds; 30s by default
	MessageRetentionPeriod time.Duration // whole seconds; 4 days by default
	SQSManagedSSE          bool
	Redrive                *RedrivePolicy // nil without a RedrivePolicy
}

// RedrivePolicy sends a message to DeadLetterQueue once it has been received
// MaxReceiveCount times without being deleted.
type RedrivePolicy struct {
	DeadLetterQueue string // logical ID of the dead-letter queue
	MaxReceiveCount int
}

// FunctionSpec is an AWS::Serverless::Function with Globals merged in.
type FunctionSpec struct {
	LogicalID     string
	Runtime       string
	Handler       string
	Architectures []string
	BuildMethod   string        // Metadata.BuildMethod
	Timeout       time.Duration // 3s by default
	MemorySize    int           // MB; 128 by default
	// Env holds the names of the environment variables the function gets,
	// sorted; their values are deployment-specific.
	Env []string
	// SQS is the function's SQS event source, nil when it has none.
	SQS *SQSEventSource
}

// SQSEventSource is an SQS event of a function: how Lambda polls the queue.
type SQSEventSource struct {
	Event                 string // name under Events
	Queue                 string // logical ID of the queue
	BatchSize             int    // 10 by default
	BatchingWindow        time.Duration
	FunctionResponseTypes []string
	MaximumConcurrency    int // 0 when unlimited
	Enabled               bool
}

// ReportsBatchItemFailures reports whether the function returns partial batch
// failures, so that only the failed messages are retried.
func (s SQSEventSource) ReportsBatchItemFailures() bool {
	return slices.Contains(s.FunctionResponseTypes, "ReportBatchItemFailures")
}

// Route is an HttpApi event of a function.
type Route struct {
	Event                string // name under Events
	API                  string // logical ID of the HttpApi; "" for SAM's implicit API
	Method               string // upper case; ANY matches every method
	Path                 string // e.g. /webhooks/{source}; "$default" for the catch-all route
	PayloadFormatVersion string // "2.0" unless the event says otherwise
}

// Key returns the API Gateway route key, e.g. "POST /webhooks/{source}".
func (r Route) Key() string {
	if r.Path == "$default" {
		return "$default"
	}
	return r.Method + " " + r.Path
}

// Match reports whether a request matches the route and returns the path
// parameters: {name} matches one segment, a final {name+} the rest of the
// path. Matching ANY does not tell which of several routes is the most
// specific; API Gateway prefers an exact method.
func (r Route) Match(method, path string) (map[string]string, bool) {
	if r.Path == "$default" {
		return map[string]string{}, true
	}
	if r.Method != "ANY" && !strings.EqualFold(r.Method, method) {
		return nil, false
	}
	want := strings.Split(strings.Trim(r.Path, "/"), "/")
	got := strings.Split(strings.Trim(path, "/"), "/")
	params := map[string]string{}
	for i, w := range want {
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "+}") && i == len(want)-1 {
			if i >= len(got) || got[i] == "" {
				return nil, false
			}
			params[w[1:len(w)-2]] = strings.Join(got[i:], "/")
			return params, true
		}
		if i >= len(got) {
			return nil, false
		}
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") {
			if got[i] == "" {
				return nil, false
			}
			params[w[1:len(w)-1]] = got[i]
			continue
		}
		if w != got[i] {
			return nil, false
		}
	}
	if len(got) != len(want) {
		return nil, false
	}
	return params, true
}

// Table returns the AWS::DynamoDB::Table with that logical ID.
func (t *Template) Table(logicalID string) (TableSpec, error) {
	r, err := t.resource(logicalID, "AWS::DynamoDB::Table")
	if err != nil {
		return TableSpec{}, fmt.Errorf("table: %w", err)
	}
	spec, err := t.table(r)
	if err != nil {
		return TableSpec{}, fmt.Errorf("table %s: %w", logicalID, err)
	}
	return spec, nil
}

func (t *Template) table(r Resource) (TableSpec, error) {
	p := props{t: t, r: r}
	spec := TableSpec{LogicalID: r.LogicalID, BillingMode: "PROVISIONED"}
	var err error
	if spec.KeySchema, err = keySchema(p.required("KeySchema")); err != nil {
		return spec, err
	}
	defs, err := asList(p.required("AttributeDefinitions"))
	if err != nil {
		return spec, err
	}
	for i, d := range defs {
		path := fmt.Sprintf("AttributeDefinitions[%d]", i)
		name, err := asString(field(d, path, "AttributeName", true))
		if err != nil {
			return spec, err
		}
		typ, err := asString(field(d, path, "AttributeType", true))
		if err != nil {
			return spec, err
		}
		spec.AttributeDefinitions = append(spec.AttributeDefinitions, AttributeDefinition{name, typ})
	}
	if v, ok, err := p.optional("BillingMode"); err != nil {
		return spec, err
	} else if ok {
		if spec.BillingMode, err = asString(v, "BillingMode", nil); err != nil {
			return spec, err
		}
	}
	provisioned := spec.BillingMode == "PROVISIONED"
	if provisioned {
		if spec.ReadCapacityUnits, spec.WriteCapacityUnits, err = throughput(p.required("ProvisionedThroughput")); err != nil {
			return spec, err
		}
	}
	if v, ok, err := p.optional("GlobalSecondaryIndexes"); err != nil {
		return spec, err
	} else if ok {
		list, err := asList(v, "GlobalSecondaryIndexes", nil)
		if err != nil {
			return spec, err
		}
		for i, g := range list {
			idx, err := index(g, fmt.Sprintf("GlobalSecondaryIndexes[%d]", i), provisioned)
			if err != nil {
				return spec, err
			}
			spec.GlobalSecondaryIndexes = append(spec.GlobalSecondaryIndexes, idx)
		}
	}
	if v, ok, err := p.optional("TimeToLiveSpecification"); err != nil {
		return spec, err
	} else if ok {
		on, err := asBool(field(v, "TimeToLiveSpecification", "Enabled", true))
		if err != nil {
			return spec, err
		}
		if on {
			if spec.TTLAttribute, err = asString(field(v, "TimeToLiveSpecification", "AttributeName", true)); err != nil {
				return spec, err
			}
		}
	}
	if v, ok, err := p.optional("PointInTimeRecoverySpecification"); err != nil {
		return spec, err
	} else if ok {
		if spec.PointInTimeRecovery, err = optionalBool(v, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); err != nil {
			return spec, err
		}
	}
	if v, ok, err := p.optional("SSESpecification"); err != nil {
		return spec, err
	} else if ok {
		if spec.SSEEnabled, err = asBool(field(v, "SSESpecification", "SSEEnabled", true)); err != nil {
			return spec, err
		}
	}
	if v, ok, err := p.optional("StreamSpecification"); err != nil {
		return spec, err
	} else if ok {
		if spec.StreamViewType, err = asString(field(v, "StreamSpecification", "StreamViewType", true)); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

func keySchema(v any, path string, err error) ([]KeyElement, error) {
	list, err := asList(v, path, err)
	if err != nil {
		return nil, err
	}
	var out []KeyElement
	for i, k := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		name, err := asString(field(k, p, "AttributeName", true))
		if err != nil {
			return nil, err
		}
		typ, err := asString(field(k, p, "KeyType", true))
		if err != nil {
			return nil, err
		}
		out = append(out, KeyElement{name, typ})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, nil
}

func throughput(v any, path string, err error) (read, write int64, _ error) {
	if err != nil {
		return 0, 0, err
	}
	r, err := asInt(field(v, path, "ReadCapacityUnits", true))
	if err != nil {
		return 0, 0, err
	}
	w, err := asInt(field(v, path, "WriteCapacityUnits", true))
	if err != nil {
		return 0, 0, err
	}
	return int64(r), int64(w), nil
}

func index(v any, path string, provisioned bool) (IndexSpec, error) {
	var idx IndexSpec
	var err error
	if idx.IndexName, err = asString(field(v, path, "IndexName", true)); err != nil {
		return idx, err
	}
	if idx.KeySchema, err = keySchema(field(v, path, "KeySchema", true)); err != nil {
		return idx, err
	}
	proj, pp, err := field(v, path, "Projection", true)
	if err != nil {
		return idx, err
	}
	if idx.ProjectionType, err = asString(field(proj, pp, "ProjectionType", true)); err != nil {
		return idx, err
	}
	if nk, np, err := field(proj, pp, "NonKeyAttributes", false); err != nil {
		return idx, err
	} else if nk != nil {
		list, err := asList(nk, np, nil)
		if err != nil {
			return idx, err
		}
		if idx.NonKeyAttributes, err = stringList(list); err != nil {
			return idx, fmt.Errorf("%s: %w", np, err)
		}
	}
	if provisioned {
		if idx.ReadCapacityUnits, idx.WriteCapacityUnits, err = throughput(field(v, path, "ProvisionedThroughput", true)); err != nil {
			return idx, err
		}
	}
	return idx, nil
}

// Queue returns the AWS::SQS::Queue with that logical ID.
func (t *Template) Queue(logicalID string) (QueueSpec, error) {
	r, err := t.resource(logicalID, "AWS::SQS::Queue")
	if err != nil {
		return QueueSpec{}, fmt.Errorf("queue: %w", err)
	}
	spec, err := t.queue(r)
	if err != nil {
		return QueueSpec{}, fmt.Errorf("queue %s: %w", logicalID, err)
	}
	return spec, nil
}

func (t *Template) queue(r Resource) (QueueSpec, error) {
	p := props{t: t, r: r}
	spec := QueueSpec{
		LogicalID:              r.LogicalID,
		VisibilityTimeout:      defaultVisibilityTimeout,
		MessageRetentionPeriod: defaultMessageRetention,
	}
	for name, dst := range map[string]*time.Duration{
		"VisibilityTimeout":      &spec.VisibilityTimeout,
		"MessageRetentionPeriod": &spec.MessageRetentionPeriod,
	} {
		if v, ok, err := p.optional(name); err != nil {
			return spec, err
		} else if ok {
			n, err := asInt(v, name, nil)
			if err != nil {
				return spec, err
			}
			*dst = time.Duration(n) * time.Second
		}
	}
	if v, ok, err := p.optional("SqsManagedSseEnabled"); err != nil {
		return spec, err
	} else if ok {
		if spec.SQSManagedSSE, err = asBool(v, "SqsManagedSseEnabled", nil); err != nil {
			return spec, err
		}
	}
	v, ok, err := p.optional("RedrivePolicy")
	if err != nil || !ok {
		return spec, err
	}
	if s, isString := v.(string); isString { // the policy may be written as JSON text
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return spec, fmt.Errorf("RedrivePolicy: %w", err)
		}
		v = m
	}
	target, _, err := field(v, "RedrivePolicy", "deadLetterTargetArn", true)
	if err != nil {
		return spec, err
	}
	ref, isRef := target.(Reference)
	if !isRef || ref.Attribute != "Arn" {
		return spec, fmt.Errorf("RedrivePolicy.deadLetterTargetArn is %v, want !GetAtt <Queue>.Arn of a queue in this template", target)
	}
	if dlq, err := t.resource(ref.LogicalID, "AWS::SQS::Queue"); err != nil {
		return spec, fmt.Errorf("RedrivePolicy.deadLetterTargetArn: %w", err)
	} else if dlq.LogicalID == r.LogicalID {
		return spec, errors.New("RedrivePolicy.deadLetterTargetArn is the queue itself")
	}
	n, err := asInt(field(v, "RedrivePolicy", "maxReceiveCount", true))
	if err != nil {
		return spec, err
	}
	spec.Redrive = &RedrivePolicy{DeadLetterQueue: ref.LogicalID, MaxReceiveCount: n}
	return spec, nil
}

// Function returns the AWS::Serverless::Function with that logical ID, with
// Globals merged and SAM's defaults for the properties it leaves out. A
// function with more than one SQS event is an error: the local poller feeds
// one queue per function.
func (t *Template) Function(logicalID string) (FunctionSpec, error) {
	r, err := t.resource(logicalID, "AWS::Serverless::Function")
	if err != nil {
		return FunctionSpec{}, fmt.Errorf("function: %w", err)
	}
	spec, err := t.function(r)
	if err != nil {
		return FunctionSpec{}, fmt.Errorf("function %s: %w", logicalID, err)
	}
	return spec, nil
}

func (t *Template) function(r Resource) (FunctionSpec, error) {
	p := props{t: t, r: r}
	spec := FunctionSpec{
		LogicalID:     r.LogicalID,
		Architectures: []string{"x86_64"},
		Timeout:       defaultFunctionTimeout,
		MemorySize:    defaultMemorySize,
	}
	for name, dst := range map[string]*string{"Runtime": &spec.Runtime, "Handler": &spec.Handler} {
		if v, ok, err := p.optional(name); err != nil {
			return spec, err
		} else if ok {
			if *dst, err = asString(v, name, nil); err != nil {
				return spec, err
			}
		}
	}
	if v, ok, err := p.optional("Architectures"); err != nil {
		return spec, err
	} else if ok {
		list, err := asList(v, "Architectures", nil)
		if err != nil {
			return spec, err
		}
		if spec.Architectures, err = stringList(list); err != nil {
			return spec, fmt.Errorf("property Architectures: %w", err)
		}
	}
	if v, ok, err := p.optional("Timeout"); err != nil {
		return spec, err
	} else if ok {
		n, err := asInt(v, "Timeout", nil)
		if err != nil {
			return spec, err
		}
		spec.Timeout = time.Duration(n) * time.Second
	}
	if v, ok, err := p.optional("MemorySize"); err != nil {
		return spec, err
	} else if ok {
		if spec.MemorySize, err = asInt(v, "MemorySize", nil); err != nil {
			return spec, err
		}
	}
	spec.BuildMethod, _ = r.Metadata["BuildMethod"].(string)
	// Only the names: the values refer to resources CloudFormation creates.
	if env, ok := r.Properties["Environment"].(map[string]any); ok {
		if vars, ok := env["Variables"].(map[string]any); ok {
			for name := range vars {
				spec.Env = append(spec.Env, name)
			}
			slices.Sort(spec.Env)
		}
	}
	events, err := t.events(r, "SQS")
	if err != nil {
		return spec, err
	}
	if len(events) > 1 {
		return spec, fmt.Errorf("%d SQS events (%s, %s, …), the local stack supports one", len(events), events[0].name, events[1].name)
	}
	for _, e := range events {
		src, err := sqsEvent(e)
		if err != nil {
			return spec, err
		}
		spec.SQS = &src
	}
	return spec, nil
}

func sqsEvent(e event) (SQSEventSource, error) {
	path := "Events." + e.name + ".Properties"
	src := SQSEventSource{Event: e.name, BatchSize: defaultSQSBatchSize, Enabled: true}
	q, _, err := field(e.props, path, "Queue", true)
	if err != nil {
		return src, err
	}
	ref, ok := q.(Reference)
	if !ok || ref.Attribute != "Arn" {
		return src, fmt.Errorf("%s.Queue is %v, want !GetAtt <Queue>.Arn of a queue in this template", path, q)
	}
	src.Queue = ref.LogicalID
	if v, fp, err := field(e.props, path, "BatchSize", false); err != nil {
		return src, err
	} else if v != nil {
		if src.BatchSize, err = asInt(v, fp, nil); err != nil {
			return src, err
		}
	}
	if v, fp, err := field(e.props, path, "MaximumBatchingWindowInSeconds", false); err != nil {
		return src, err
	} else if v != nil {
		n, err := asInt(v, fp, nil)
		if err != nil {
			return src, err
		}
		src.BatchingWindow = time.Duration(n) * time.Second
	}
	if v, fp, err := field(e.props, path, "FunctionResponseTypes", false); err != nil {
		return src, err
	} else if v != nil {
		list, err := asList(v, fp, nil)
		if err != nil {
			return src, err
		}
		if src.FunctionResponseTypes, err = stringList(list); err != nil {
			return src, fmt.Errorf("%s: %w", fp, err)
		}
	}
	if v, fp, err := field(e.props, path, "ScalingConfig", false); err != nil {
		return src, err
	} else if v != nil {
		if mc, mp, err := field(v, fp, "MaximumConcurrency", false); err != nil {
			return src, err
		} else if mc != nil {
			if src.MaximumConcurrency, err = asInt(mc, mp, nil); err != nil {
				return src, err
			}
		}
	}
	if v, fp, err := field(e.props, path, "Enabled", false); err != nil {
		return src, err
	} else if v != nil {
		if src.Enabled, err = asBool(v, fp, nil); err != nil {
			return src, err
		}
	}
	return src, nil
}

// Routes returns the HttpApi events of the function, sorted by path and
// method.
func (t *Template) Routes(functionLogicalID string) ([]Route, error) {
	r, err := t.resource(functionLogicalID, "AWS::Serverless::Function")
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	events, err := t.events(r, "HttpApi")
	if err != nil {
		return nil, fmt.Errorf("routes of %s: %w", functionLogicalID, err)
	}
	var routes []Route
	for _, e := range events {
		rt, err := httpRoute(e)
		if err != nil {
			return nil, fmt.Errorf("routes of %s: %w", functionLogicalID, err)
		}
		routes = append(routes, rt)
	}
	slices.SortFunc(routes, func(a, b Route) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return routes, nil
}

func httpRoute(e event) (Route, error) {
	path := "Events." + e.name + ".Properties"
	rt := Route{Event: e.name, PayloadFormatVersion: "2.0"}
	if v, fp, err := field(e.props, path, "ApiId", false); err != nil {
		return rt, err
	} else if v != nil {
		ref, ok := v.(Reference)
		if !ok || ref.Attribute != "" {
			return rt, fmt.Errorf("%s is %v, want !Ref <HttpApi>", fp, v)
		}
		rt.API = ref.LogicalID
	}
	method, mp, err := field(e.props, path, "Method", false)
	if err != nil {
		return rt, err
	}
	p, pp, err := field(e.props, path, "Path", false)
	if err != nil {
		return rt, err
	}
	if method == nil && p == nil {
		rt.Method, rt.Path = "ANY", "$default"
	} else {
		if rt.Method, err = asString(method, mp, nil); err != nil {
			return rt, err
		}
		if rt.Path, err = asString(p, pp, nil); err != nil {
			return rt, err
		}
		rt.Method = strings.ToUpper(rt.Method)
		if rt.Method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
			rt.Method = "ANY"
		}
	}
	if v, fp, err := field(e.props, path, "PayloadFormatVersion", false); err != nil {
		return rt, err
	} else if v != nil {
		if rt.PayloadFormatVersion, err = scalarString(v); err != nil {
			return rt, fmt.Errorf("%s: %w", fp, err)
		}
	}
	return rt, nil
}

type event struct {
	name  string
	props any // resolved Properties of the event
}

// events returns the function's events of one type, sorted by name, with
// their properties resolved.
func (t *Template) events(r Resource, typ string) ([]event, error) {
	raw, ok := r.Properties["Events"]
	if !ok {
		return nil, nil
	}
	all, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("property Events is %s, want a mapping", kindOf(raw))
	}
	var out []event
	for name, ev := range all {
		m, ok := ev.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("property Events.%s is %s, want a mapping", name, kindOf(ev))
		}
		if m["Type"] != typ {
			continue
		}
		props, err := t.Resolve(m["Properties"])
		if err != nil {
			return nil, fmt.Errorf("property Events.%s.Properties: %w", name, err)
		}
		if props == nil {
			props = map[string]any{}
		}
		out = append(out, event{name: name, props: props})
	}
	slices.SortFunc(out, func(a, b event) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// props reads top-level properties of a resource, resolving each on its own
// so an unresolvable value elsewhere does not get in the way.
type props struct {
	t *Template
	r Resource
}

// optional returns the resolved property; ok is false when it is absent.
func (p props) optional(name string) (v any, ok bool, err error) {
	raw, present := p.r.Properties[name]
	if !present {
		return nil, false, nil
	}
	if v, err = p.t.Resolve(raw); err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return v, v != nil, nil
}

// required returns the resolved property with its path, or an error wrapping
// ErrNotFound; its results feed the as* helpers directly.
func (p props) required(name string) (any, string, error) {
	v, ok, err := p.optional(name)
	if err != nil {
		return nil, name, err
	}
	if !ok {
		return nil, name, fmt.Errorf("property %s: %w", name, ErrNotFound)
	}
	return v, name, nil
}

// field returns m[key] of a resolved mapping with its path; a missing key is
// an error wrapping ErrNotFound when required, else a nil value.
func field(m any, path, key string, required bool) (any, string, error) {
	fp := path + "." + key
	mm, ok := m.(map[string]any)
	if !ok {
		return nil, fp, fmt.Errorf("%s is %s, want a mapping", path, kindOf(m))
	}
	v, ok := mm[key]
	if !ok && required {
		return nil, fp, fmt.Errorf("property %s: %w", fp, ErrNotFound)
	}
	return v, fp, nil
}

func asString(v any, path string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is %s, want a string", path, kindOf(v))
	}
	return s, nil
}

func asInt(v any, path string, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := toInt(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

func asBool(v any, path string, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	b, err := toBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

func asList(v any, path string, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, want a list", path, kindOf(v))
	}
	return l, nil
}

// optionalBool reads a boolean field that defaults to false.
func optionalBool(m any, path, key string) (bool, error) {
	v, fp, err := field(m, path, key, false)
	if err != nil || v == nil {
		return false, err
	}
	return asBool(v, fp, nil)
}
