package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
	"github.com/webhook-inbox/webhook-inbox/internal/config"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

const root = "../.."

func loadTemplate(t *testing.T) *template.Template {
	t.Helper()
	tpl, err := template.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// TestSamconfig: the shipped samconfig.toml sets only declared parameters,
// to values their constraints accept and that are the template's defaults
// or say why not; and with them every function starts.
func TestSamconfig(t *testing.T) {
	sc, err := ReadSamconfig(filepath.Join(root, "samconfig.toml"), "default")
	if err != nil {
		t.Fatal(err)
	}
	if sc.StackName == "" || sc.Region == "" {
		t.Errorf("stack_name %q, region %q: want both", sc.StackName, sc.Region)
	}
	tpl := loadTemplate(t)
	if err := Apply(tpl, sc.Values()); err != nil {
		t.Fatal(err)
	}
	for _, line := range StaleOverrides(tpl, sc) {
		t.Error(line)
	}
	if err := StartFunctions(tpl); err != nil {
		t.Error(err)
	}
}

func writeSamconfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "samconfig.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStaleOverrides: the samconfig.toml this project shipped before
// (MaxReceiveCount=5 and MaxBodyBytes=262144 against defaults of 10 and
// 5 MB, no word why) is caught; the same values with a comment each are
// not; a parameter the template does not declare is.
func TestStaleOverrides(t *testing.T) {
	old := writeSamconfig(t, `version = 0.1
[default.deploy.parameters]
parameter_overrides = [
  "MaxReceiveCount=5",
  "Sources='[{\"name\":\"stripe\",\"kind\":\"stripe\"}]'",
  "MaxBodyBytes=262144",
  "LogLevel=info",
  "NoSuchParameter=1",
]
`)
	sc, err := ReadSamconfig(old, "default")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(StaleOverrides(loadTemplate(t), sc), "\n")
	for _, want := range []string{"MaxReceiveCount=5 differs from the template's default 10", "MaxBodyBytes=262144 differs from the template's default 5242880", "NoSuchParameter: not a parameter"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q among:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Sources") || strings.Contains(got, "LogLevel") {
		t.Errorf("a default flagged:\n%s", got)
	}

	said := writeSamconfig(t, `[default.deploy.parameters]
parameter_overrides = [
  # Five receives: this team's backoff window is shorter.
  "MaxReceiveCount=5",

  # Payloads over 256 KB are refused here, on purpose.
  "MaxBodyBytes=262144",
]
`)
	sc, err = ReadSamconfig(said, "default")
	if err != nil {
		t.Fatal(err)
	}
	if got := StaleOverrides(loadTemplate(t), sc); len(got) != 0 {
		t.Errorf("values with their reasons flagged: %q", got)
	}
}

// TestParseOverrides: SAM CLI's reading, on the forms a user writes.
func TestParseOverrides(t *testing.T) {
	for _, c := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{`Sources='[{"name":"stripe","kind":"stripe"}]'`}, map[string]string{"Sources": `[{"name":"stripe","kind":"stripe"}]`}},
		// What the shell hands over for 'Sources=[{"name":…}]': the value
		// ends at its first double quote.
		{[]string{`Sources=[{"name":"stripe","kind":"stripe"}]`}, map[string]string{"Sources": `[{`}},
		{[]string{`A=1 B=two`, `C="x y"`}, map[string]string{"A": "1", "B": "two", "C": "x y"}},
		{[]string{`ParameterKey=A,ParameterValue=1 ParameterKey=B,ParameterValue='p q'`}, map[string]string{"A": "1", "B": "p q"}},
		{[]string{`Forward=''`}, map[string]string{"Forward": ""}},
		{[]string{`Quoted="say \"hi\""`}, map[string]string{"Quoted": `say "hi"`}},
		{[]string{`A=1`, `A=2`}, map[string]string{"A": "2"}},
	} {
		got, err := ParseOverrides(c.args...)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: got %q, want %q", c.args, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", c.args, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{"", "   ", "novalue", "=x"} {
		if got, err := ParseOverrides(bad); err == nil && len(got) > 0 {
			t.Errorf("%q: read as %q, want refused", bad, got)
		}
	}
}

// shellWords returns the arguments the shell passes to prog for cmd, a
// command line as documented: the real /bin/sh parses it.
func shellWords(t *testing.T, prog, cmd string) []string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := exec.Command(sh, "-c", prog+`() { for a; do printf '%s\0' "$a"; done; }; `+cmd).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestCommandLineSourcesBreak: the deploy command the runbook gave, as
// the shell and SAM CLI read it, sets Sources to `[{` and every function
// refuses to start. The check that would have caught it.
func TestCommandLineSourcesBreak(t *testing.T) {
	words := shellWords(t, "sam", `sam deploy --parameter-overrides 'Sources=[{"name":"stripe","kind":"stripe"},{"name":"github","kind":"github"}]'`)
	if len(words) != 3 || words[1] != "--parameter-overrides" {
		t.Fatalf("words %q", words)
	}
	kv, err := ParseOverrides(words[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	if kv["Sources"] != "[{" {
		t.Fatalf("Sources read as %q, want [{", kv["Sources"])
	}
	tpl := loadTemplate(t)
	if err := Apply(tpl, kv); err != nil {
		t.Fatal(err)
	}
	err = StartFunctions(tpl)
	if err == nil || !strings.Contains(err.Error(), "IngestFunction would not start") || !strings.Contains(err.Error(), "SOURCES") {
		t.Errorf("StartFunctions: %v, want the ingest function refusing SOURCES", err)
	}
}

// TestForwardWithoutABus: routes with ForwardBus none (the role may put
// no events) stop the processor at cold start, rather than every row
// ending dead; the template's rule refuses it before that (cfn-lint does
// not evaluate rules: the rule is in the template, the start-up check
// here, with the template's rules evaluated by StartFunctions).
func TestForwardWithoutABus(t *testing.T) {
	tpl := loadTemplate(t)
	if err := Apply(tpl, map[string]string{"Forward": `[{"source":"stripe"}]`}); err != nil {
		t.Fatal(err)
	}
	err := StartFunctions(tpl)
	if err == nil || !strings.Contains(err.Error(), "ProcessorFunction would not start") || !strings.Contains(err.Error(), "FORWARD_BUS") {
		t.Errorf("StartFunctions: %v, want the processor refusing routes without a bus", err)
	}
	if err == nil || !strings.Contains(err.Error(), "rule ForwardNeedsABus") {
		t.Errorf("StartFunctions: %v, want the template's ForwardNeedsABus rule refusing the deploy first", err)
	}
}

// TestReceiptSettingsMoved: a deployment that still sets the receipt's own
// parameters, replaced by Targets, is refused before anything changes (the
// template's rule) and at the processor's cold start; never deployed with
// its receipts going to the log. Both parameters at their defaults and the
// URL in Targets deploy.
func TestReceiptSettingsMoved(t *testing.T) {
	for _, set := range []map[string]string{
		{"ReceiptWebhookUrl": "https://receipts.example.com/hook"},
		{"ReceiptRetryUnknown": "true"},
	} {
		tpl := loadTemplate(t)
		if err := Apply(tpl, set); err != nil {
			t.Fatal(err)
		}
		err := StartFunctions(tpl)
		if err == nil || !strings.Contains(err.Error(), "rule ReceiptSettingsMoved") || !strings.Contains(err.Error(), "ProcessorFunction would not start") || !strings.Contains(err.Error(), "TARGETS") {
			t.Errorf("%v: StartFunctions: %v, want the rule and the processor refusing it", set, err)
		}
	}
	tpl := loadTemplate(t)
	if err := Apply(tpl, map[string]string{"ReceiptWebhookUrl": "", "ReceiptRetryUnknown": "false",
		"Targets": `[{"name":"receipt","url":"https://receipts.example.com/hook","retry_unknown":true}]`}); err != nil {
		t.Fatal(err)
	}
	if err := StartFunctions(tpl); err != nil {
		t.Errorf("moved into Targets: %v", err)
	}
}

// TestTargetsMatchTheHandlers: a Targets parameter that leaves out a
// target the handlers declare, or names one nobody declares, stops the
// processor at its start, naming it; never rows failing at run time.
func TestTargetsMatchTheHandlers(t *testing.T) {
	for set, want := range map[string]string{
		`[]`: `target "receipt", which internal/handlers declares, has no TARGETS entry`,
		`[{"name":"receipt"},{"name":"refund_notice","url":"https://example.com/r"}]`: `TARGETS entry 1 (name "refund_notice"): no handler declares this target`,
	} {
		tpl := loadTemplate(t)
		if err := Apply(tpl, map[string]string{"Targets": set}); err != nil {
			t.Fatal(err)
		}
		err := StartFunctions(tpl)
		if err == nil || !strings.Contains(err.Error(), "ProcessorFunction would not start") || !strings.Contains(err.Error(), want) {
			t.Errorf("Targets %s: StartFunctions: %v, want %q", set, err, want)
		}
	}
}

// TestForwardToAMissingSource: a route naming a source the deployment does
// not have stops the processor at cold start; the check says so.
func TestForwardToAMissingSource(t *testing.T) {
	tpl := loadTemplate(t)
	if err := Apply(tpl, map[string]string{"ForwardBus": "create", "Forward": `[{"source":"github"}]`}); err != nil {
		t.Fatal(err)
	}
	err := StartFunctions(tpl)
	if err == nil || !strings.Contains(err.Error(), "ProcessorFunction would not start") {
		t.Errorf("StartFunctions: %v, want the processor refusing FORWARD", err)
	}
}

// TestDocsSetParametersInSamconfig: no command (a fenced block's line) in
// the README or docs/ passes --parameter-overrides (it replaces samconfig.toml's whole
// list for that deploy, and the next plain deploy reverts it); each
// samconfig.toml excerpt they show (a ```toml block of entries) read into
// the shipped file's list, in place of the entries it names, leaves every
// function able to start.
func TestDocsSetParametersInSamconfig(t *testing.T) {
	base, err := ReadSamconfig(filepath.Join(root, "samconfig.toml"), "default")
	if err != nil {
		t.Fatal(err)
	}
	excerpts := 0
	for _, d := range docs(t) {
		doc, raw := d[0], d[1]
		inBlock := false
		for i, line := range strings.Split(raw, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
			}
			if inBlock && strings.Contains(line, "--parameter-overrides") {
				t.Errorf("%s:%d: a command with --parameter-overrides: set parameters in samconfig.toml instead", doc, i+1)
			}
		}
		for _, block := range fenced(raw, "toml") {
			kv := base.Values()
			p := writeSamconfig(t, "[default.deploy.parameters]\nparameter_overrides = [\n"+block+"\n]\n")
			sc, err := ReadSamconfig(p, "default")
			if err != nil {
				t.Errorf("%s: excerpt:\n%s\n%v", doc, block, err)
				continue
			}
			maps.Copy(kv, sc.Values())
			tpl := loadTemplate(t)
			if err := Apply(tpl, kv); err != nil {
				t.Errorf("%s: excerpt:\n%s\n%v", doc, block, err)
				continue
			}
			err = StartFunctions(tpl)
			if doc == "docs/handlers.md" {
				// The guide's excerpt configures the target of the handler
				// it adds (TestGuideAddsAHandler starts it so): with the
				// shipped handlers, that entry is refused, and nothing else.
				if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `(name "refund_notice"): no handler declares this target`) {
					t.Errorf("%s: excerpt:\n%s\n%v, want only the guide's target refused", doc, block, err)
				}
			} else if err != nil {
				t.Errorf("%s: excerpt:\n%s\n%v", doc, block, err)
			}
			excerpts++
		}
	}
	if excerpts == 0 {
		t.Error("no samconfig.toml excerpt in the README or docs/: the way to add a source is not shown")
	}
}

// fenced returns the bodies of the ```lang blocks of a Markdown text whose
// lines are samconfig.toml list entries or comments (an excerpt of its
// parameter_overrides).
func fenced(md, lang string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case !in && t == "```"+lang:
			in, cur = true, nil
		case in && t == "```":
			in = false
			entries := true
			for _, l := range cur {
				l = strings.TrimSpace(l)
				entries = entries && (l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, `"`))
			}
			if entries && len(cur) > 0 {
				out = append(out, strings.Join(cur, "\n"))
			}
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// docs are the README and every page of docs/, by path.
func docs(t *testing.T) [][2]string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	var out [][2]string
	list := []string{"README.md"}
	for _, page := range pages {
		rel, err := filepath.Rel(root, page)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, filepath.ToSlash(rel))
	}
	for _, doc := range list {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{doc, string(raw)})
	}
	return out
}

// commands returns the commands of the fenced blocks of a Markdown text
// that start with prefix, continuation lines joined, with their line
// numbers.
func commands(md, prefix string) (cmds []string, lines []int) {
	in := false
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			in = !in
			cur.Reset()
			continue
		}
		if !in {
			continue
		}
		if cur.Len() == 0 {
			if !strings.HasPrefix(t, prefix) {
				continue
			}
			start = i + 1
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		cmds, lines = append(cmds, cur.String()), append(lines, start)
		cur.Reset()
	}
	return cmds, lines
}

// TestDocsAWSCommands: every AWS CLI command the README and docs/ give parses in the shell; names the stack's region (the CLI's default
// region may be another: a secret created there leaves its source
// answering 404); an invoke of the replay function waits longer than the
// function may run (the CLI's default 60 s read timeout would give up and
// send the request again while the first still runs); and an inline
// --payload is JSON, a file:// one exists.
func TestDocsAWSCommands(t *testing.T) {
	sc, err := ReadSamconfig(filepath.Join(root, "samconfig.toml"), "default")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := loadTemplate(t).Function("ReplayFunction")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range docs(t) {
		doc := d[0]
		cmds, lines := commands(d[1], "aws ")
		for i, cmd := range cmds {
			seen++
			at := func(format string, args ...any) {
				t.Errorf("%s:%d: %s: %s", doc, lines[i], cmd, fmt.Sprintf(format, args...))
			}
			// Output redirections and pipes are the shell's, not the CLI's.
			line := cmd
			for _, sep := range []string{" && ", " | ", " # "} {
				line, _, _ = strings.Cut(line, sep)
			}
			words := shellWords(t, "aws", line)
			flags := map[string]string{}
			for j, w := range words {
				if strings.HasPrefix(w, "--") {
					v := ""
					if j+1 < len(words) && !strings.HasPrefix(words[j+1], "--") {
						v = words[j+1]
					}
					flags[w] = v
				}
			}
			if strings.HasPrefix(flags["--endpoint-url"], "http://127.0.0.1") {
				continue // against make run
			}
			if flags["--region"] != sc.Region {
				at("--region %q, want samconfig.toml's %q", flags["--region"], sc.Region)
			}
			if len(words) > 1 && words[0] == "lambda" && words[1] == "invoke" {
				if want := sc.StackName + "-replay"; flags["--function-name"] != want {
					at("--function-name %q, want %q", flags["--function-name"], want)
				}
				rt, err := strconv.Atoi(flags["--cli-read-timeout"])
				if err != nil || time.Duration(rt)*time.Second <= fn.Timeout {
					at("--cli-read-timeout %q: want more seconds than the replay function's timeout, %s", flags["--cli-read-timeout"], fn.Timeout)
				}
			}
			if p, ok := flags["--payload"]; ok {
				if f, ok := strings.CutPrefix(p, "file://"); ok {
					if _, err := os.Stat(filepath.Join(root, f)); err != nil {
						at("--payload: %v", err)
					}
				} else if !strings.Contains(p, "…") && !json.Valid([]byte(p)) {
					at("--payload %q is not JSON", p)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no aws command found in the README or docs/")
	}
}

// cfnLint finds cfn-lint as the Makefile does (CFN_LINT, PATH, .venv).
func cfnLint(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CFN_LINT"); p != "" {
		return p
	}
	if p, err := exec.LookPath("cfn-lint"); err == nil {
		return p
	}
	if p := filepath.Join(root, ".venv", "bin", "cfn-lint"); fileExists(p) {
		return p
	}
	t.Skip("no cfn-lint (make lint installs it)")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestIndexUpgradeSteps: the first template of the documented two-deploy
// index replacement (docs/configuration.md, "Upgrading a stack deployed before the replay
// actions") passes cfn-lint: the index gone and the attribute definitions
// only it used with it. Removing the index alone, as the procedure once
// said, is E3039 (DynamoDB refuses a definition no key uses).
func TestIndexUpgradeSteps(t *testing.T) {
	lint := cfnLint(t)
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	step1, err := WithoutIndexes(raw, "InboxTable")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name string, body []byte) (string, error) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lint, p).CombinedOutput()
		return string(out), err
	}
	if out, err := run("step1.yaml", step1); err != nil {
		t.Errorf("step 1 (index and its attributes removed): cfn-lint: %v\n%s", err, out)
	}
	tpl, err := template.Load(filepath.Join(dir, "step1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tpl.Table("InboxTable")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.GlobalSecondaryIndexes) != 0 || len(spec.AttributeDefinitions) != 1 {
		t.Errorf("step 1 keeps indexes %v, attribute definitions %v", spec.GlobalSecondaryIndexes, spec.AttributeDefinitions)
	}

	// Nothing else changed: every other resource and every parameter reads
	// the same.
	orig := loadTemplate(t)
	if got, want := tpl.LogicalIDs(""), orig.LogicalIDs(""); !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
	for _, id := range orig.LogicalIDs("") {
		a, _ := orig.Resource(id)
		b, _ := tpl.Resource(id)
		if id != "InboxTable" && !reflect.DeepEqual(a, b) {
			t.Errorf("%s changed:\n%+v\n%+v", id, a, b)
		}
	}
	for _, name := range []string{"Sources", "MaxReceiveCount", "Forward", "Targets"} {
		a, _ := orig.ParameterValue(name)
		b, _ := tpl.ParameterValue(name)
		if a != b {
			t.Errorf("parameter %s: %q, want %q", name, b, a)
		}
	}

	// The edit the procedure used to describe: the index alone.
	var naive []byte
	{
		lines := strings.Split(string(raw), "\n")
		var kept []string
		skip := false
		for _, l := range lines {
			if strings.HasPrefix(l, "      GlobalSecondaryIndexes:") {
				skip = true
				continue
			}
			if skip && strings.HasPrefix(l, "        ") {
				continue
			}
			skip = false
			kept = append(kept, l)
		}
		naive = []byte(strings.Join(kept, "\n"))
	}
	if out, err := run("naive.yaml", naive); err == nil || !strings.Contains(out, "E3039") {
		t.Errorf("the index removed alone: cfn-lint %v, want E3039\n%s", err, out)
	}
}

// nameLimits are the longest names each service takes, by resource type
// and property.
var nameLimits = map[[2]string]int{
	{"AWS::Serverless::Function", "FunctionName"}:   64,
	{"AWS::Lambda::Function", "FunctionName"}:       64,
	{"AWS::Logs::LogGroup", "LogGroupName"}:         512,
	{"AWS::CloudWatch::Alarm", "AlarmName"}:         255,
	{"AWS::CloudWatch::Dashboard", "DashboardName"}: 255,
	{"AWS::Events::EventBus", "Name"}:               256,
	{"AWS::EventSchemas::Registry", "RegistryName"}: 64,
	{"AWS::EventSchemas::Schema", "SchemaName"}:     385,
}

// accountWide are the resource types whose names are one namespace for
// the whole account (or, buckets, all accounts), not one per region.
var accountWide = map[[2]string]bool{
	{"AWS::CloudWatch::Dashboard", "DashboardName"}:  true,
	{"AWS::IAM::Role", "RoleName"}:                   true,
	{"AWS::IAM::ManagedPolicy", "ManagedPolicyName"}: true,
	{"AWS::IAM::User", "UserName"}:                   true,
	{"AWS::S3::Bucket", "BucketName"}:                true,
}

// explicitNames returns every explicit name of the template's resources,
// resolved for a stack name and region, by logical ID and property.
func explicitNames(t *testing.T, stack, region string) map[[2]string]string {
	t.Helper()
	tpl := loadTemplate(t)
	for k, v := range map[string]string{"AWS::StackName": stack, "AWS::Region": region} {
		if err := tpl.SetParameter(k, v); err != nil {
			t.Fatal(err)
		}
	}
	out := map[[2]string]string{}
	for _, id := range tpl.LogicalIDs("") {
		r, _ := tpl.Resource(id)
		for prop, v := range r.Properties {
			if !strings.HasSuffix(prop, "Name") || prop == "PolicyName" {
				continue
			}
			if _, ok := nameLimits[[2]string{r.Type, prop}]; !ok && !accountWide[[2]string{r.Type, prop}] {
				continue
			}
			rv, err := tpl.Resolve(v)
			if s, ok := rv.(string); ok && err == nil {
				out[[2]string{id, prop}] = s
			}
		}
	}
	return out
}

// TestExplicitNames: with samconfig.toml's stack name and any stack name
// up to the documented 54 characters, every explicit name fits its
// service's limit; one of 55 does not (a function's name would be over
// 64); and no account-wide name is the same in two regions.
func TestExplicitNames(t *testing.T) {
	sc, err := ReadSamconfig(filepath.Join(root, "samconfig.toml"), "default")
	if err != nil {
		t.Fatal(err)
	}
	tpl := loadTemplate(t)
	typeOf := func(id string) string { r, _ := tpl.Resource(id); return r.Type }
	over := func(stack string) []string {
		var bad []string
		for k, name := range explicitNames(t, stack, "us-east-1") {
			if limit, ok := nameLimits[[2]string{typeOf(k[0]), k[1]}]; ok && len(name) > limit {
				bad = append(bad, fmt.Sprintf("%s.%s %q: %d characters, over %d", k[0], k[1], name, len(name), limit))
			}
		}
		return bad
	}
	for _, stack := range []string{sc.StackName, strings.Repeat("s", maxStackName)} {
		for _, b := range over(stack) {
			t.Errorf("stack %q: %s", stack, b)
		}
	}
	if len(over(strings.Repeat("s", maxStackName+1))) == 0 {
		t.Errorf("a stack name of %d characters fits every name: the documented limit is wrong", maxStackName+1)
	}
	east, west := explicitNames(t, sc.StackName, "us-east-1"), explicitNames(t, sc.StackName, "eu-west-1")
	for k, name := range east {
		if accountWide[[2]string{typeOf(k[0]), k[1]}] && west[k] == name {
			t.Errorf("%s.%s %q is account-wide and the same in two regions: the second region's deploy fails with AlreadyExists", k[0], k[1], name)
		}
	}
}

// maxStackName is the longest stack name the template's names allow (the
// docs/configuration.md's deploy section says it).
const maxStackName = 54

// TestStatefulResourcesRetained: what holds records (the table, the
// payload bucket, the test-event registry others share) outlives the
// stack's deletion and a replacement, but not a failed first create, whose
// retained leftovers would make the retry fail with "already exists".
// Queues are transport only — every event is in the table, and the sweep
// re-enqueues the unfinished — so they go with the stack.
func TestStatefulResourcesRetained(t *testing.T) {
	tpl := loadTemplate(t)
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::EventSchemas::Registry"} {
		ids := tpl.LogicalIDs(typ)
		if len(ids) == 0 {
			t.Errorf("no %s in the template", typ)
		}
		for _, id := range ids {
			r, _ := tpl.Resource(id)
			if r.DeletionPolicy != "RetainExceptOnCreate" || r.UpdateReplacePolicy != "Retain" {
				t.Errorf("%s: DeletionPolicy %q, UpdateReplacePolicy %q: want RetainExceptOnCreate, Retain", id, r.DeletionPolicy, r.UpdateReplacePolicy)
			}
		}
	}
	for _, id := range tpl.LogicalIDs("AWS::SQS::Queue") {
		r, _ := tpl.Resource(id)
		if r.DeletionPolicy != "Delete" || r.UpdateReplacePolicy != "Delete" {
			t.Errorf("%s: DeletionPolicy %q, UpdateReplacePolicy %q: want Delete, Delete, said", id, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
	}
}

// TestMetricsNamespacePattern: the template's MetricsNamespace pattern
// takes exactly the namespaces the functions take at cold start, so a
// deploy the functions would refuse is refused first.
func TestMetricsNamespacePattern(t *testing.T) {
	for _, ns := range []string{"", "WebhookInbox", "A", "AW", "AWS", "AWSome", "AWS-x", "aws/lower", "AW/S", "My/NS: v1 #2", "AWS/", "AWS/Lambda", "x\u00e9", "with,comma", strings.Repeat("n", 255), strings.Repeat("n", 256), "A" + strings.Repeat("n", 254), "AWS" + strings.Repeat("n", 252), "AWS" + strings.Repeat("n", 253)} {
		tpl := loadTemplate(t)
		tplErr := tpl.SetParameter("MetricsNamespace", ns)
		codeErr := obs.CheckNamespace(ns)
		if (tplErr == nil) != (codeErr == nil) {
			t.Errorf("%q (%d bytes): template %v, functions %v", ns, len(ns), tplErr, codeErr)
		}
	}
}

// TestSecretsPrefixPattern: the template refuses a SecretsPrefix that
// would let ingest read secrets other than webhook ones (an empty one is
// the whole account's), as the functions' cold start does.
func TestSecretsPrefixPattern(t *testing.T) {
	for prefix, ok := range map[string]bool{"webhook-inbox/": true, "team/prod/webhooks/": true, "": false, "webhook-inbox": false, "a b/": false} {
		tpl := loadTemplate(t)
		if err := tpl.SetParameter("SecretsPrefix", prefix); (err == nil) != ok {
			t.Errorf("%q: template says %v, want accepted %t", prefix, err, ok)
		}
		_, err := config.Load(func(k string) string {
			return map[string]string{"SECRETS_PREFIX": prefix, "SOURCES": `[{"name":"s","kind":"github"}]`}[k]
		}, config.Need{Sources: true})
		if (err == nil) != (ok || prefix == "a b/") {
			t.Errorf("%q: functions say %v", prefix, err)
		}
	}
}

// TestUpgradeProblems: an update from today's template to itself is clean;
// each change that loses state or that DynamoDB refuses is named.
func TestUpgradeProblems(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(text string) *template.Template {
		t.Helper()
		p := filepath.Join(t.TempDir(), "template.yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tpl, err := template.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return tpl
	}
	cur := load(string(raw))
	if got := UpgradeProblems(cur, load(string(raw))); len(got) != 0 {
		t.Errorf("the same template: %q", got)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"projection", "NonKeyAttributes: [status, due_ms, event_type, expires_at]", "NonKeyAttributes: [status, due_ms]", "index unfinished changes its key or projection"},
		{"table key", "        - AttributeName: pk\n          KeyType: HASH", "        - AttributeName: id\n          KeyType: HASH", "InboxTable.KeySchema changes"},
		{"bucket removed", "  PayloadBucket:\n", "  PayloadBucketRenamed:\n", "PayloadBucket (AWS::S3::Bucket) is removed: CloudFormation stops managing (retains) it"},
	} {
		edited := strings.Replace(string(raw), c.from, c.to, 1)
		if edited == string(raw) {
			t.Fatalf("%s: %q not in the template", c.name, c.from)
		}
		got := strings.Join(UpgradeProblems(cur, load(edited)), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
