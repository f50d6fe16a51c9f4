// Package deploy checks what a team deploys with: samconfig.toml's
// parameter overrides, read the way SAM CLI reads them, against the
// template's parameters and the functions' own configuration parsers, and
// the deploy commands the docs give, read as the shell
// and SAM CLI read them. Nothing here can run a deploy; it makes the
// documented one exactly right.
package deploy

import (
	"fmt"
	"regexp"
	"strings"
)

// SAM CLI (samcli/cli/types.py, CfnParameterOverridesType) reads each
// --parameter-overrides argument, and each entry of samconfig.toml's
// parameter_overrides list, with two regular expressions tried in order:
// "ParameterKey=K,ParameterValue=V" pairs, else space-separated "K=V". A
// value is a double-quoted or single-quoted string (backslash escapes
// inside), or a run of characters up to a space or a double quote. So an
// unquoted JSON value stops at its first double quote: `Sources=[{"name"`
// is read as Sources=[{ — which is what the shell hands over when the
// whole argument was single-quoted.
const (
	overrideKey   = `([A-Za-z0-9"']+)`
	overrideValue = `("(?:\\.|[^"\\]+)*"|'(?:\\.|[^'\\]+)*'|(?:\\.|[^ "\\]+)+)`
)

var (
	overridePairs = regexp.MustCompile(`(?:ParameterKey=` + overrideKey + `,ParameterValue=` + overrideValue + `)`)
	overrideKVs   = regexp.MustCompile(`(?:(?: )` + overrideKey + `=` + overrideValue + `)`)
)

// ParseOverrides reads parameter overrides as SAM CLI does: each of args
// is one --parameter-overrides word after the shell's, or one entry of
// samconfig.toml's list. A later key replaces an earlier one. An argument
// neither form matches is an error, as SAM CLI refuses it.
func ParseOverrides(args ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		v := " " + strings.TrimSpace(a)
		re := overridePairs
		if !re.MatchString(v) {
			re = overrideKVs
		}
		m := re.FindAllStringSubmatch(v, -1)
		if len(m) == 0 {
			return nil, fmt.Errorf("parameter override %q: SAM CLI refuses it (want Key=Value or ParameterKey=Key,ParameterValue=Value)", a)
		}
		for _, g := range m {
			out[unquoteWrapped(g[1])] = unquoteWrapped(g[2])
		}
	}
	return out, nil
}

// unquoteWrapped is SAM CLI's _unquote_wrapped_quotes: the outer pair of
// matching quotes off, then \<space>, \" and \' unescaped.
func unquoteWrapped(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		s = s[1 : len(s)-1]
	}
	return strings.NewReplacer(`\ `, " ", `\"`, `"`, `\'`, "'").Replace(s)
}
