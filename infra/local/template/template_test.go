package template

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/claimcheck"
	"github.com/webhook-inbox/webhook-inbox/internal/inboxstore"
	"github.com/webhook-inbox/webhook-inbox/internal/outbox"
	"github.com/webhook-inbox/webhook-inbox/internal/processor"
)

// templatePath is the project's real SAM template: these tests hold it to
// the contract that DESIGN.md and the local stack rely on.
const templatePath = "../../../template.yaml"

var functionIDs = []string{"IngestFunction", "ProcessorFunction", "ReplayFunction"}

func mustLoad(tb testing.TB, opts ...Option) *Template {
	tb.Helper()
	t, err := Load(templatePath, opts...)
	if err != nil {
		tb.Fatalf("Load(%s): %v", templatePath, err)
	}
	return t
}

func mustParse(tb testing.TB, src string, opts ...Option) *Template {
	tb.Helper()
	t, err := Parse([]byte(src), opts...)
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return t
}

func mustFunction(tb testing.TB, t *Template, id string) FunctionSpec {
	tb.Helper()
	f, err := t.Function(id)
	if err != nil {
		tb.Fatalf("Function(%s): %v", id, err)
	}
	return f
}

func mustQueue(tb testing.TB, t *Template, id string) QueueSpec {
	tb.Helper()
	q, err := t.Queue(id)
	if err != nil {
		tb.Fatalf("Queue(%s): %v", id, err)
	}
	return q
}

func mustParamInt(tb testing.TB, t *Template, name string) int {
	tb.Helper()
	v, err := t.ParameterValue(name)
	if err != nil {
		tb.Fatalf("ParameterValue(%s): %v", name, err)
	}
	n, err := toInt(v)
	if err != nil {
		tb.Fatalf("parameter %s: %v", name, err)
	}
	return n
}

func TestTemplateQueues(t *testing.T) {
	tpl := mustLoad(t)
	main := mustQueue(t, tpl, "MainQueue")
	dlq := mustQueue(t, tpl, "DeadLetterQueue")
	proc := mustFunction(t, tpl, "ProcessorFunction")

	if min := 6 * proc.Timeout; main.VisibilityTimeout < min {
		t.Errorf("MainQueue VisibilityTimeout = %v, want >= 6 × processor timeout = %v", main.VisibilityTimeout, min)
	}
	if main.Redrive == nil {
		t.Fatal("MainQueue has no RedrivePolicy")
	}
	if got, want := main.Redrive.DeadLetterQueue, "DeadLetterQueue"; got != want {
		t.Errorf("redrive target = %s, want %s", got, want)
	}
	if got, want := main.Redrive.MaxReceiveCount, mustParamInt(t, tpl, "MaxReceiveCount"); got != want {
		t.Errorf("redrive maxReceiveCount = %d, want MaxReceiveCount default %d", got, want)
	}
	if got, want := dlq.MessageRetentionPeriod, 14*24*time.Hour; got != want {
		t.Errorf("DeadLetterQueue retention = %v, want %v", got, want)
	}
	if main.MessageRetentionPeriod >= dlq.MessageRetentionPeriod {
		t.Errorf("MainQueue retention %v is not below the DLQ's %v (a moved message keeps its enqueue time)",
			main.MessageRetentionPeriod, dlq.MessageRetentionPeriod)
	}
	for _, q := range []QueueSpec{main, dlq} {
		if !q.SQSManagedSSE {
			t.Errorf("%s: SqsManagedSseEnabled = false, want true", q.LogicalID)
		}
	}
}

func TestTemplateProcessorEventSource(t *testing.T) {
	tpl := mustLoad(t)
	src := mustFunction(t, tpl, "ProcessorFunction").SQS
	if src == nil {
		t.Fatal("ProcessorFunction has no SQS event")
	}
	if src.Queue != "MainQueue" {
		t.Errorf("SQS event queue = %s, want MainQueue", src.Queue)
	}
	if !src.ReportsBatchItemFailures() {
		t.Errorf("FunctionResponseTypes = %v, want ReportBatchItemFailures", src.FunctionResponseTypes)
	}
	if got, want := src.BatchSize, mustParamInt(t, tpl, "ProcessorBatchSize"); got != want {
		t.Errorf("BatchSize = %d, want ProcessorBatchSize default %d", got, want)
	}
	if got, want := src.MaximumConcurrency, mustParamInt(t, tpl, "ProcessorMaxConcurrency"); got != want || got < 2 {
		t.Errorf("MaximumConcurrency = %d, want ProcessorMaxConcurrency default %d (>= 2)", got, want)
	}
	if src.BatchingWindow <= 0 {
		t.Errorf("BatchingWindow = %v, want > 0", src.BatchingWindow)
	}
	if !src.Enabled {
		t.Error("SQS event is disabled")
	}
}

func TestTemplateFunctions(t *testing.T) {
	tpl := mustLoad(t)
	common := []string{"DLQ_URL", "INBOX_TABLE", "LOG_LEVEL", "MAX_BODY_BYTES", "METRICS_NAMESPACE", "PAYLOAD_BUCKET", "PAYLOAD_RETENTION_DAYS", "QUEUE_URL", "SECRETS_PREFIX", "SOURCES"}
	tests := []struct {
		id       string
		timeout  time.Duration
		extraEnv []string
		hasSQS   bool
	}{
		{"IngestFunction", 10 * time.Second, []string{"PREVIOUS_SECRET_WINDOW_SECONDS"}, false},
		{"ProcessorFunction", 30 * time.Second, []string{"MAX_RECEIVE_COUNT", "PROCESSOR_CONCURRENCY", "RETRY_BASE_SECONDS", "RETRY_CAP_SECONDS", "TARGETS", "RECEIPT_WEBHOOK_URL", "RECEIPT_RETRY_UNKNOWN", "FORWARD", "FORWARD_BUS"}, true},
		{"ReplayFunction", 300 * time.Second, []string{"SWEEP_AFTER_SECONDS"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			f := mustFunction(t, tpl, tt.id)
			if f.Runtime != "provided.al2023" {
				t.Errorf("Runtime = %q, want provided.al2023", f.Runtime)
			}
			if !slices.Equal(f.Architectures, []string{"arm64"}) {
				t.Errorf("Architectures = %v, want [arm64]", f.Architectures)
			}
			if f.Handler != "bootstrap" {
				t.Errorf("Handler = %q, want bootstrap", f.Handler)
			}
			if f.BuildMethod != "makefile" {
				t.Errorf("Metadata.BuildMethod = %q, want makefile", f.BuildMethod)
			}
			if f.Timeout != tt.timeout {
				t.Errorf("Timeout = %v, want %v", f.Timeout, tt.timeout)
			}
			if f.MemorySize < 128 {
				t.Errorf("MemorySize = %d, want >= 128", f.MemorySize)
			}
			want := slices.Sorted(slices.Values(append(slices.Clone(common), tt.extraEnv...)))
			if !slices.Equal(f.Env, want) {
				t.Errorf("Env = %v, want %v", f.Env, want)
			}
			if got := f.SQS != nil; got != tt.hasSQS {
				t.Errorf("has SQS event = %v, want %v", got, tt.hasSQS)
			}
			r, err := tpl.Resource(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Properties["CodeUri"]; got != "." {
				t.Errorf("CodeUri = %v, want . (the root Makefile builds it)", got)
			}
		})
	}
}

func TestTemplateRoutes(t *testing.T) {
	tpl := mustLoad(t)
	routes, err := tpl.Routes("IngestFunction")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range routes {
		keys = append(keys, r.Key())
		if r.API != "HttpApi" {
			t.Errorf("route %s: API = %q, want HttpApi", r.Key(), r.API)
		}
		if r.PayloadFormatVersion != "2.0" {
			t.Errorf("route %s: PayloadFormatVersion = %q, want 2.0", r.Key(), r.PayloadFormatVersion)
		}
	}
	want := []string{
		"ANY /webhooks/{source}",
		"POST /webhooks/{source}",
		"ANY /webhooks/{source}/{account}",
		"POST /webhooks/{source}/{account}",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("IngestFunction routes = %q, want %q", keys, want)
	}
	if api, err := tpl.Resource("HttpApi"); err != nil || api.Type != "AWS::Serverless::HttpApi" {
		t.Errorf("HttpApi = %+v, %v; want an AWS::Serverless::HttpApi", api.Type, err)
	}
	for _, id := range []string{"ProcessorFunction", "ReplayFunction"} {
		if routes, err := tpl.Routes(id); err != nil || len(routes) != 0 {
			t.Errorf("Routes(%s) = %v, %v; want none", id, routes, err)
		}
	}
}

func TestTemplateTable(t *testing.T) {
	tpl := mustLoad(t)
	tbl, err := tpl.Table("InboxTable")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tbl.KeySchema, []KeyElement{{"pk", "HASH"}}; !slices.Equal(got, want) {
		t.Errorf("KeySchema = %v, want %v", got, want)
	}
	if got, want := tbl.AttributeDefinitions, []AttributeDefinition{{"pk", "S"}, {"sweep_shard", "S"}, {"received_ms", "N"}}; !slices.Equal(got, want) {
		t.Errorf("AttributeDefinitions = %v, want %v", got, want)
	}
	// The store queries the index by these names.
	if len(tbl.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("GlobalSecondaryIndexes = %+v, want the unfinished index", tbl.GlobalSecondaryIndexes)
	}
	gsi := tbl.GlobalSecondaryIndexes[0]
	if gsi.IndexName != inboxstore.UnfinishedIndex || !slices.Equal(gsi.KeySchema, []KeyElement{{"sweep_shard", "HASH"}, {"received_ms", "RANGE"}}) ||
		gsi.ProjectionType != "INCLUDE" || !slices.Equal(gsi.NonKeyAttributes, inboxstore.TableInput("t").GlobalSecondaryIndexes[0].Projection.NonKeyAttributes) {
		t.Errorf("index = %+v, want %s on sweep_shard, received_ms including what inboxstore.TableInput does", gsi, inboxstore.UnfinishedIndex)
	}
	if tbl.BillingMode != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %q, want PAY_PER_REQUEST", tbl.BillingMode)
	}
	// The table the store's tests create is this one.
	in := inboxstore.TableInput("inbox")
	var attrs []AttributeDefinition
	for _, a := range in.AttributeDefinitions {
		attrs = append(attrs, AttributeDefinition{*a.AttributeName, string(a.AttributeType)})
	}
	var keys []KeyElement
	for _, k := range in.GlobalSecondaryIndexes[0].KeySchema {
		keys = append(keys, KeyElement{*k.AttributeName, string(k.KeyType)})
	}
	if ix := in.GlobalSecondaryIndexes[0]; !slices.Equal(attrs, tbl.AttributeDefinitions) || !slices.Equal(keys, gsi.KeySchema) ||
		string(ix.Projection.ProjectionType) != gsi.ProjectionType || !slices.Equal(ix.Projection.NonKeyAttributes, gsi.NonKeyAttributes) ||
		string(in.BillingMode) != tbl.BillingMode || len(in.GlobalSecondaryIndexes) != len(tbl.GlobalSecondaryIndexes) {
		t.Errorf("inboxstore.TableInput differs from the template's table: %+v", in)
	}
	if !tbl.PointInTimeRecovery {
		t.Error("PointInTimeRecovery = false, want true")
	}
	if !tbl.SSEEnabled {
		t.Error("SSEEnabled = false, want true")
	}
	if tbl.TTLAttribute != "expires_at" {
		t.Errorf("TTLAttribute = %q, want expires_at", tbl.TTLAttribute)
	}
	r, err := tpl.Resource("InboxTable")
	if err != nil {
		t.Fatal(err)
	}
	if r.DeletionPolicy != "RetainExceptOnCreate" || r.UpdateReplacePolicy != "Retain" {
		t.Errorf("DeletionPolicy, UpdateReplacePolicy = %q, %q; want RetainExceptOnCreate, Retain", r.DeletionPolicy, r.UpdateReplacePolicy)
	}
}

// TestTemplateLeastPrivilege walks each function's role: no Resource "*",
// no managed policies, no SAM Policies (which would make SAM generate a role
// with its managed policies), and logs only to the function's own log group.
func TestTemplateLeastPrivilege(t *testing.T) {
	tpl := mustLoad(t)
	for _, id := range functionIDs {
		t.Run(id, func(t *testing.T) {
			fn, err := tpl.Resource(id)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := fn.Properties["Policies"]; ok {
				t.Errorf("function has SAM Policies %v, want an explicit Role only", p)
			}
			role := mustRef(t, tpl, fn.Properties["Role"], "Arn", "AWS::IAM::Role")
			if m, ok := role.Properties["ManagedPolicyArns"]; ok {
				t.Errorf("role %s has ManagedPolicyArns %v, want inline policies only", role.LogicalID, m)
			}
			logs, ok := fn.Properties["LoggingConfig"].(map[string]any)
			if !ok {
				t.Fatal("no LoggingConfig")
			}
			logGroup := mustRef(t, tpl, logs["LogGroup"], "", "AWS::Logs::LogGroup")
			if got := logGroup.Properties["RetentionInDays"]; !reflect.DeepEqual(got, map[string]any{"Ref": "LogRetentionDays"}) {
				t.Errorf("log group %s RetentionInDays = %v, want !Ref LogRetentionDays", logGroup.LogicalID, got)
			}
			statements := policyStatements(t, role)
			if len(statements) == 0 {
				t.Fatalf("role %s has no policy statements", role.LogicalID)
			}
			for i, st := range statements {
				if _, ok := st["NotResource"]; ok {
					t.Errorf("statement %d uses NotResource", i)
				}
				for _, r := range asSlice(st["Resource"]) {
					if r == "*" {
						t.Errorf("statement %d (%v) has Resource \"*\"", i, st["Action"])
					}
				}
				for _, a := range asSlice(st["Action"]) {
					if s, _ := a.(string); strings.Contains(s, "*") {
						t.Errorf("statement %d has wildcard action %q", i, s)
					}
					if s, _ := a.(string); strings.HasPrefix(s, "logs:") {
						want := map[string]any{"Fn::GetAtt": []any{logGroup.LogicalID, "Arn"}}
						if !reflect.DeepEqual(st["Resource"], want) {
							t.Errorf("statement %d: %s on %v, want only %v", i, s, st["Resource"], want)
						}
					}
				}
			}
		})
	}
}

// TestTemplateRoleActions: each role grants exactly the calls its function's
// adapters make, so a new call (the processor's consistent read after a lost
// answer, the sweep's index query) cannot ship without its permission, nor a
// permission outlive its call.
func TestTemplateRoleActions(t *testing.T) {
	logs := []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	want := map[string][]string{
		// The claim check: ingest writes a payload object; the processor
		// and replay read it and renew it (a copy onto itself is a PUT).
		"IngestFunction": append([]string{"dynamodb:PutItem", "s3:PutObject", "sqs:SendMessage", "secretsmanager:GetSecretValue"}, logs...),
		"ProcessorFunction": append([]string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:TransactWriteItems",
			// The table's layout, decided once (inboxstore.DetectUnscopedFacts).
			"dynamodb:Scan",
			"s3:GetObject", "s3:PutObject", "s3:ListBucket",
			"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility", "sqs:SendMessage",
			// Forwarding (with ForwardBus other than none).
			"events:PutEvents",
		}, logs...),
		"ReplayFunction": append([]string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:TransactWriteItems",
			"s3:GetObject", "s3:PutObject", "s3:ListBucket",
			"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:SendMessage",
		}, logs...),
	}
	tpl := mustLoad(t)
	for _, id := range functionIDs {
		fn, err := tpl.Resource(id)
		if err != nil {
			t.Fatal(err)
		}
		role := mustRef(t, tpl, fn.Properties["Role"], "Arn", "AWS::IAM::Role")
		var got []string
		for _, st := range policyStatements(t, role) {
			for _, a := range asSlice(st["Action"]) {
				if s, _ := a.(string); !slices.Contains(got, s) {
					got = append(got, s)
				}
			}
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want[id]))
		if !slices.Equal(got, w) {
			t.Errorf("%s: actions %v, want %v", id, got, w)
		}
	}
}

// mustRef resolves v to a Reference with the given attribute and returns the
// resource it names, which must be of type typ.
func mustRef(tb testing.TB, tpl *Template, v any, attr, typ string) Resource {
	tb.Helper()
	r, err := tpl.Resolve(v)
	if err != nil {
		tb.Fatalf("resolve %v: %v", v, err)
	}
	ref, ok := r.(Reference)
	if !ok || ref.Attribute != attr {
		tb.Fatalf("%v resolves to %v, want a reference with attribute %q", v, r, attr)
	}
	res, err := tpl.Resource(ref.LogicalID)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Type != typ {
		tb.Fatalf("%s is %s, want %s", ref.LogicalID, res.Type, typ)
	}
	return res
}

func policyStatements(tb testing.TB, role Resource) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, p := range asSlice(role.Properties["Policies"]) {
		doc, ok := p.(map[string]any)["PolicyDocument"].(map[string]any)
		if !ok {
			tb.Fatalf("role %s: policy without a PolicyDocument: %v", role.LogicalID, p)
		}
		for _, st := range asSlice(doc["Statement"]) {
			m, ok := st.(map[string]any)
			if !ok {
				tb.Fatalf("role %s: statement is %T", role.LogicalID, st)
			}
			// A statement behind a condition: its branch that is one.
			if cond, ok := m["Fn::If"].([]any); ok && len(cond) == 3 {
				for _, branch := range cond[1:] {
					if b, ok := branch.(map[string]any); ok && b["Action"] != nil {
						out = append(out, b)
					}
				}
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

// asSlice treats a single IAM value as a one-element list.
func asSlice(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func TestTemplateParameterOverrides(t *testing.T) {
	tpl := mustLoad(t, WithParameter("MaxReceiveCount", "3"))
	if got := mustQueue(t, tpl, "MainQueue").Redrive.MaxReceiveCount; got != 3 {
		t.Errorf("maxReceiveCount after override = %d, want 3", got)
	}
	tests := []struct {
		name, value string
		wantErr     error // nil: any error
	}{
		{"ProcessorMaxConcurrency", "1", nil},
		{"MaxReceiveCount", "0", nil},
		{"MaxReceiveCount", "five", nil},
		{"LogLevel", "verbose", nil},
		{"LogRetentionDays", "31", nil},
		{"NoSuchParameter", "x", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			err := tpl.SetParameter(tt.name, tt.value)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("SetParameter(%s, %s) = %v, want an error (%v)", tt.name, tt.value, err, tt.wantErr)
			}
		})
	}
	if err := tpl.SetParameter("LogLevel", "debug"); err != nil {
		t.Errorf("SetParameter(LogLevel, debug) = %v, want nil", err)
	}
}

const resolverSrc = `
Parameters:
  Count: {Type: Number, Default: 7}
  Name: {Type: String, Default: inbox}
  Env: {Type: String, Default: dev, AllowedValues: [dev, prod]}
  Zones: {Type: CommaDelimitedList, Default: "a, b"}
  NoDefault: {Type: String}
Conditions:
  IsProd: !Equals [!Ref Env, prod]
  IsDev: !Not [!Condition IsProd]
Mappings:
  Sizes:
    dev: {mem: 128}
    prod: {mem: 1024}
Resources:
  Q:
    Type: AWS::SQS::Queue
  X:
    Type: Custom::Cases
    Properties:
      refParam: !Ref Count
      refLong: {Ref: Name}
      refResource: !Ref Q
      refPseudo: !Ref AWS::Region
      refList: !Ref Zones
      getAtt: !GetAtt Q.Arn
      getAttList: !GetAtt [Q, Arn]
      getAttLong: {"Fn::GetAtt": [Q, Arn]}
      sub: !Sub "${Name}-${AWS::Region}-${Count}"
      subLong: {"Fn::Sub": "arn:${AWS::Partition}:x:${Name}"}
      subLiteral: !Sub "${!Literal}-${Name}"
      subVars: !Sub ["${Prefix}/${Name}", {Prefix: !Ref Count}]
      subResource: !Sub "${Q.Arn}/x"
      subMissing: !Sub "${Nope}"
      join: !Join ["-", [!Ref Name, x, !Ref Count]]
      joinResource: !Join ["", [!Ref Q]]
      selectSplit: !Select [1, !Split [",", "a,b,c"]]
      ifFalse: !If [IsProd, big, small]
      ifNot: !If [IsDev, dev, notdev]
      findInMap: !FindInMap [Sizes, !Ref Env, mem]
      base64: !Base64 hi
      noValue: {A: 1, B: !Ref AWS::NoValue}
      nested: {"Fn::Join": ["", [!Ref Name, {"Fn::Sub": "-${Env}"}]]}
      missingRef: !Ref Nope
      missingGetAtt: !GetAtt Nope.Arn
      noDefault: !Ref NoDefault
      unsupported: !GetAZs ""
      plain: {Count: 1, List: [a, 2, true]}
`

func TestResolve(t *testing.T) {
	tpl := mustParse(t, resolverSrc)
	cases, err := tpl.Resource("X")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		want    any
		wantErr error
	}{
		{"refParam", "7", nil},
		{"refLong", "inbox", nil},
		{"refResource", Reference{LogicalID: "Q"}, nil},
		{"refPseudo", "us-east-1", nil},
		{"refList", []any{"a", "b"}, nil},
		{"getAtt", Reference{"Q", "Arn"}, nil},
		{"getAttList", Reference{"Q", "Arn"}, nil},
		{"getAttLong", Reference{"Q", "Arn"}, nil},
		{"sub", "inbox-us-east-1-7", nil},
		{"subLong", "arn:aws:x:inbox", nil},
		{"subLiteral", "${Literal}-inbox", nil},
		{"subVars", "7/inbox", nil},
		{"subResource", nil, ErrUnresolvable},
		{"subMissing", nil, ErrNotFound},
		{"join", "inbox-x-7", nil},
		{"joinResource", nil, ErrUnresolvable},
		{"selectSplit", "b", nil},
		{"ifFalse", "small", nil},
		{"ifNot", "dev", nil},
		{"findInMap", 128, nil},
		{"base64", "aGk=", nil},
		{"noValue", map[string]any{"A": 1}, nil},
		{"nested", "inbox-dev", nil},
		{"missingRef", nil, ErrNotFound},
		{"missingGetAtt", nil, ErrNotFound},
		{"noDefault", nil, ErrNotFound},
		{"unsupported", nil, ErrUnresolvable},
		{"plain", map[string]any{"Count": 1, "List": []any{"a", 2, true}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ok := cases.Properties[tt.name]
			if !ok {
				t.Fatalf("no case %s in the template", tt.name)
			}
			got, err := tpl.Resolve(raw)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Resolve(%v) = %v, %v; want error %v", raw, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve(%v) = %#v, %v; want %#v", raw, got, err, tt.want)
			}
		})
	}
}

func TestResolveAfterSetParameter(t *testing.T) {
	tpl := mustParse(t, resolverSrc, WithParameter("Env", "prod"), WithParameter("AWS::Region", "eu-west-1"))
	cases, err := tpl.Resource("X")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]any{"ifFalse": "big", "findInMap": 1024, "refPseudo": "eu-west-1", "ifNot": "notdev"} {
		if got, err := tpl.Resolve(cases.Properties[name]); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Resolve = %#v, %v; want %#v", name, got, err, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, wantInErr string
	}{
		{"not yaml", "Resources: [", "parse template"},
		{"empty", "", "empty"},
		{"no resources", "Parameters: {}\n", "no Resources"},
		{"resource without type", "Resources:\n  A: {Properties: {}}\n", "has no Type"},
		{"duplicate key", "Resources:\n  A: {Type: X}\n  A: {Type: Y}\n", "duplicate key"},
		{"getatt without attribute", "Resources:\n  A: {Type: X, Properties: {P: !GetAtt A}}\n", "LogicalID.Attribute"},
		{"default breaks MinValue", "Parameters:\n  N: {Type: Number, Default: 1, MinValue: 2}\nResources:\n  A: {Type: X}\n", "MinValue"},
		{"default not allowed", "Parameters:\n  S: {Type: String, Default: c, AllowedValues: [a, b]}\nResources:\n  A: {Type: X}\n", "AllowedValues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.wantInErr)
			}
		})
	}
	if _, err := Load("testdata/does-not-exist.yaml"); err == nil {
		t.Error("Load(missing file) = nil error, want one")
	}
}

const globalsSrc = `
Globals:
  Function:
    Timeout: 5
    Runtime: provided.al2023
    Layers: [g]
    Environment:
      Variables: {A: a, B: b}
Parameters:
  Window: {Type: Number, Default: 2}
Resources:
  Q: {Type: AWS::SQS::Queue, Properties: {VisibilityTimeout: 60}}
  NoDefaults: {Type: AWS::SQS::Queue}
  F:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 9
      Layers: [f]
      Environment:
        Variables: {B: override, C: c}
      Events:
        One:
          Type: SQS
          Properties: {Queue: !GetAtt Q.Arn, MaximumBatchingWindowInSeconds: !Ref Window}
  Bare:
    Type: AWS::Serverless::Function
  TwoQueues:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}
        B: {Type: SQS, Properties: {Queue: !GetAtt NoDefaults.Arn}}
  LiteralQueue:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        A: {Type: SQS, Properties: {Queue: "arn:aws:sqs:us-east-1:1:q"}}
  ImplicitApi:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Get: {Type: HttpApi, Properties: {Method: get, Path: "/things/{id+}", PayloadFormatVersion: "1.0"}}
        Default: {Type: HttpApi}
  BadRedrive:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: "arn:aws:sqs:us-east-1:1:dlq", maxReceiveCount: 3}
  JSONRedrive:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: '{"deadLetterTargetArn": "x", "maxReceiveCount": 3}'
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: pk, KeyType: HASH}, {AttributeName: sk, KeyType: RANGE}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}, {AttributeName: sk, AttributeType: S}, {AttributeName: status, AttributeType: S}]
      ProvisionedThroughput: {ReadCapacityUnits: 1, WriteCapacityUnits: 2}
      GlobalSecondaryIndexes:
        - IndexName: by-status
          KeySchema: [{AttributeName: status, KeyType: HASH}]
          Projection: {ProjectionType: INCLUDE, NonKeyAttributes: [pk]}
          ProvisionedThroughput: {ReadCapacityUnits: 3, WriteCapacityUnits: 4}
`

func TestGlobalsAndDefaults(t *testing.T) {
	tpl := mustParse(t, globalsSrc)
	f := mustFunction(t, tpl, "F")
	if f.Timeout != 9*time.Second {
		t.Errorf("Timeout = %v, want the function's own 9s over the global 5s", f.Timeout)
	}
	if f.Runtime != "provided.al2023" {
		t.Errorf("Runtime = %q, want the global provided.al2023", f.Runtime)
	}
	if want := []string{"A", "B", "C"}; !slices.Equal(f.Env, want) {
		t.Errorf("Env = %v, want %v (maps merge)", f.Env, want)
	}
	r, err := tpl.Resource("F")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Properties["Layers"], []any{"g", "f"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Layers = %v, want %v (lists append)", got, want)
	}
	if got := r.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)["B"]; got != "override" {
		t.Errorf("Variables.B = %v, want override", got)
	}
	want := SQSEventSource{Event: "One", Queue: "Q", BatchSize: 10, BatchingWindow: 2 * time.Second, Enabled: true}
	if f.SQS == nil || !reflect.DeepEqual(*f.SQS, want) {
		t.Errorf("SQS = %+v, want %+v", f.SQS, want)
	}

	bare := mustFunction(t, tpl, "Bare")
	if bare.Timeout != 5*time.Second || bare.MemorySize != 128 || !slices.Equal(bare.Architectures, []string{"x86_64"}) || bare.SQS != nil {
		t.Errorf("Bare = %+v, want Timeout 5s, MemorySize 128, [x86_64], no SQS", bare)
	}
	q := mustQueue(t, tpl, "NoDefaults")
	if q.VisibilityTimeout != 30*time.Second || q.MessageRetentionPeriod != 96*time.Hour || q.Redrive != nil {
		t.Errorf("NoDefaults = %+v, want SQS defaults 30s, 96h, no redrive", q)
	}

	tbl, err := tpl.Table("T")
	if err != nil {
		t.Fatal(err)
	}
	wantTable := TableSpec{
		LogicalID:            "T",
		KeySchema:            []KeyElement{{"pk", "HASH"}, {"sk", "RANGE"}},
		AttributeDefinitions: []AttributeDefinition{{"pk", "S"}, {"sk", "S"}, {"status", "S"}},
		BillingMode:          "PROVISIONED",
		ReadCapacityUnits:    1,
		WriteCapacityUnits:   2,
		GlobalSecondaryIndexes: []IndexSpec{{
			IndexName: "by-status", KeySchema: []KeyElement{{"status", "HASH"}},
			ProjectionType: "INCLUDE", NonKeyAttributes: []string{"pk"},
			ReadCapacityUnits: 3, WriteCapacityUnits: 4,
		}},
	}
	if !reflect.DeepEqual(tbl, wantTable) {
		t.Errorf("Table(T) = %+v, want %+v", tbl, wantTable)
	}
	if tbl.HashKey() != "pk" {
		t.Errorf("HashKey = %q, want pk", tbl.HashKey())
	}

	routes, err := tpl.Routes("ImplicitApi")
	if err != nil {
		t.Fatal(err)
	}
	wantRoutes := []Route{
		{Event: "Default", Method: "ANY", Path: "$default", PayloadFormatVersion: "2.0"},
		{Event: "Get", Method: "GET", Path: "/things/{id+}", PayloadFormatVersion: "1.0"},
	}
	if !reflect.DeepEqual(routes, wantRoutes) {
		t.Errorf("Routes(ImplicitApi) = %+v, want %+v", routes, wantRoutes)
	}
}

func TestAccessorErrors(t *testing.T) {
	tpl := mustParse(t, globalsSrc)
	tests := []struct {
		name      string
		call      func() error
		wantErr   error
		wantInErr string
	}{
		{"missing table", func() error { _, err := tpl.Table("Nope"); return err }, ErrNotFound, "Nope"},
		{"table of wrong type", func() error { _, err := tpl.Table("Q"); return err }, nil, "want AWS::DynamoDB::Table"},
		{"missing queue", func() error { _, err := tpl.Queue("Nope"); return err }, ErrNotFound, "Nope"},
		{"missing function", func() error { _, err := tpl.Function("Nope"); return err }, ErrNotFound, "Nope"},
		{"routes of missing function", func() error { _, err := tpl.Routes("Nope"); return err }, ErrNotFound, "Nope"},
		{"two SQS events", func() error { _, err := tpl.Function("TwoQueues"); return err }, nil, "supports one"},
		{"literal queue ARN", func() error { _, err := tpl.Function("LiteralQueue"); return err }, nil, "!GetAtt <Queue>.Arn"},
		{"literal DLQ ARN", func() error { _, err := tpl.Queue("BadRedrive"); return err }, nil, "!GetAtt <Queue>.Arn"},
		{"redrive as JSON text", func() error { _, err := tpl.Queue("JSONRedrive"); return err }, nil, "!GetAtt <Queue>.Arn"},
		{"missing parameter", func() error { _, err := tpl.ParameterValue("Nope"); return err }, ErrNotFound, "Nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error = %v, want one containing %q (is %v)", err, tt.wantInErr, tt.wantErr)
			}
		})
	}
}

func TestRouteMatch(t *testing.T) {
	post := Route{Method: "POST", Path: "/webhooks/{source}"}
	anyAccount := Route{Method: "ANY", Path: "/webhooks/{source}/{account}"}
	greedy := Route{Method: "GET", Path: "/files/{path+}"}
	tests := []struct {
		route        Route
		method, path string
		want         map[string]string // nil: no match
	}{
		{post, "POST", "/webhooks/stripe", map[string]string{"source": "stripe"}},
		{post, "post", "/webhooks/stripe/", map[string]string{"source": "stripe"}},
		{post, "GET", "/webhooks/stripe", nil},
		{post, "POST", "/webhooks", nil},
		{post, "POST", "/webhooks/", nil},
		{post, "POST", "/webhooks/stripe/acct", nil},
		{post, "POST", "/other/stripe", nil},
		{anyAccount, "PUT", "/webhooks/stripe/acct_1", map[string]string{"source": "stripe", "account": "acct_1"}},
		{anyAccount, "GET", "/webhooks/stripe", nil},
		{greedy, "GET", "/files/a/b/c", map[string]string{"path": "a/b/c"}},
		{greedy, "GET", "/files", nil},
		{Route{Method: "ANY", Path: "$default"}, "DELETE", "/anything", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s", tt.route.Key(), tt.method, tt.path), func(t *testing.T) {
			got, ok := tt.route.Match(tt.method, tt.path)
			if ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) && tt.want != nil {
				t.Errorf("Match(%s, %s) = %v, %v; want %v", tt.method, tt.path, got, ok, tt.want)
			}
		})
	}
}

// TestProcessorHasTimeForTheOutbox: an outbox row is only started with a
// whole call's timeout left before the processor's deadline margin; a
// processor timeout shorter than that would never deliver a row, and its
// events would wait for their outbox forever.
func TestProcessorHasTimeForTheOutbox(t *testing.T) {
	f := mustFunction(t, mustLoad(t), "ProcessorFunction")
	margin := min(processor.DefaultMargin, f.Timeout/4)
	if room := f.Timeout - margin; room < 2*outbox.DefaultTimeout {
		t.Errorf("processor Timeout %s less its margin %s leaves %s, want at least two outbox calls of %s", f.Timeout, margin, room, outbox.DefaultTimeout)
	}
}

// TestTemplatePayloadBucket: the payload bucket is private, encrypted,
// TLS-only, and its lifecycle keeps objects claimcheck.ObjectDays of the
// retention, for every retention the parameter allows around the dead
// retention (CloudFormation's condition stands in for max()).
func TestTemplatePayloadBucket(t *testing.T) {
	tpl := mustLoad(t)
	r, err := tpl.Resource("PayloadBucket")
	if err != nil {
		t.Fatal(err)
	}
	if r.DeletionPolicy != "RetainExceptOnCreate" || r.UpdateReplacePolicy != "Retain" {
		t.Errorf("DeletionPolicy, UpdateReplacePolicy = %q, %q; want RetainExceptOnCreate, Retain (the table's items point at its objects)", r.DeletionPolicy, r.UpdateReplacePolicy)
	}
	pab, _ := r.Properties["PublicAccessBlockConfiguration"].(map[string]any)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if pab[k] != true {
			t.Errorf("PublicAccessBlockConfiguration.%s = %v, want true", k, pab[k])
		}
	}
	if !strings.Contains(fmt.Sprint(r.Properties["BucketEncryption"]), "AES256") {
		t.Errorf("BucketEncryption %v, want SSE-S3", r.Properties["BucketEncryption"])
	}
	pol, err := tpl.Resource("PayloadBucketPolicy")
	if err != nil || !strings.Contains(fmt.Sprint(pol.Properties), "aws:SecureTransport") {
		t.Errorf("PayloadBucketPolicy: %v, %v; want a TLS-only policy", pol.Properties, err)
	}
	for _, days := range []int{1, 7, 14, 15, 16, 30, 3650} {
		tpl := mustLoad(t)
		if err := tpl.SetParameter("PayloadRetentionDays", strconv.Itoa(days)); err != nil {
			t.Fatal(err)
		}
		spec, err := tpl.Bucket("PayloadBucket")
		if err != nil {
			t.Fatal(err)
		}
		want := claimcheck.ObjectDays(time.Duration(days) * 24 * time.Hour)
		if len(spec.Rules) != 1 || spec.Rules[0].Days != want || spec.Rules[0].Prefix != claimcheck.Prefix {
			t.Errorf("retention %d days: rules %+v, want one under %s of %d days", days, spec.Rules, claimcheck.Prefix, want)
		}
	}
}

// TestTemplateForward: forwarding is off unless ForwardBus says which bus;
// the processor alone may put events, on that bus only; the bus, its
// archive and the example consumer exist only when asked for.
func TestTemplateForward(t *testing.T) {
	tpl := mustLoad(t)
	fn := mustFunction(t, tpl, "ProcessorFunction")
	if !slices.Contains(fn.Env, "FORWARD") || !slices.Contains(fn.Env, "FORWARD_BUS") {
		t.Errorf("processor env %v: want FORWARD and FORWARD_BUS", fn.Env)
	}
	res, err := tpl.Resource("ProcessorFunction")
	if err != nil {
		t.Fatal(err)
	}
	role := mustRef(t, tpl, res.Properties["Role"], "Arn", "AWS::IAM::Role")
	var found bool
	for _, p := range asSlice(role.Properties["Policies"]) {
		for _, st := range asSlice(p.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"]) {
			cond, ok := st.(map[string]any)["Fn::If"].([]any)
			if !ok {
				continue
			}
			found = true
			grant := cond[1].(map[string]any)
			want := map[string]any{"Fn::If": []any{"CreateBus",
				map[string]any{"Fn::GetAtt": []any{"ForwardEventBus", "Arn"}},
				map[string]any{"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"}}}
			if cond[0] != "ForwardOn" || grant["Action"] != "events:PutEvents" || !reflect.DeepEqual(grant["Resource"], want) || !reflect.DeepEqual(cond[2], map[string]any{"Ref": "AWS::NoValue"}) {
				t.Errorf("conditional statement %v: want events:PutEvents on the ForwardBus's bus, only with ForwardOn", cond)
			}
		}
	}
	if !found {
		t.Error("processor role has no forwarding statement")
	}
	for id, cond := range map[string]string{
		"ForwardEventBus": "CreateBus", "ForwardArchive": "ArchiveBus", "ForwardExampleRule": "ForwardExample",
		"ForwardedEventsQueue": "ForwardExample", "ForwardedEventsQueuePolicy": "ForwardExample",
	} {
		r, err := tpl.Resource(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Condition != cond {
			t.Errorf("%s: condition %q, want %q", id, r.Condition, cond)
		}
	}
}
