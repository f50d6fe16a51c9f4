package template

import (
	"strings"
	"testing"
)

// TestCheckRules: a rule applies when its RuleCondition holds (or it has
// none), and each assertion that fails is reported with its rule's name
// and description.
func TestCheckRules(t *testing.T) {
	const src = `
Parameters:
  Mode: {Type: String, Default: off}
  Url: {Type: String, Default: ""}
Rules:
  NeedsUrl:
    RuleCondition: !Equals [!Ref Mode, on]
    Assertions:
      - Assert: !Not [!Equals [!Ref Url, ""]]
        AssertDescription: Mode on needs a Url.
  NoOldUrl:
    Assertions:
      - Assert: !Or [!Equals [!Ref Url, ""], !Equals [!Ref Mode, on]]
        AssertDescription: Url is only for Mode on.
Resources:
  Q: {Type: AWS::SQS::Queue}
`
	for _, tt := range []struct {
		mode, url string
		want      []string // failed rules
	}{
		{"off", "", nil},
		{"on", "https://x", nil},
		{"on", "", []string{"rule NeedsUrl: Mode on needs a Url."}},
		{"off", "https://x", []string{"rule NoOldUrl: Url is only for Mode on."}},
	} {
		tpl, err := Parse([]byte(src), WithParameter("Mode", tt.mode), WithParameter("Url", tt.url))
		if err != nil {
			t.Fatal(err)
		}
		err = tpl.CheckRules()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s %q: %v", tt.mode, tt.url, err)
			}
			continue
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: %v, want %q", tt.mode, tt.url, err, w)
			}
		}
	}
	bad, err := Parse([]byte("Rules:\n  R:\n    Assertions:\n      - Assert: {\"Fn::Contains\": [[a], a]}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.CheckRules(); err == nil || !strings.Contains(err.Error(), "rule R: assertion 0") {
		t.Errorf("a rule function conditions do not have: %v, want an error", err)
	}
}
