package deploy

import (
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
)

// Override is one entry of samconfig.toml's parameter_overrides.
type Override struct {
	Entry string // as the file has it, after TOML's unescaping
	Key   string
	Value string // as SAM CLI passes it to CloudFormation
	// Comment is the comment lines right above the entry, without their
	// "#": where the file says why a value differs from the template's
	// default.
	Comment string
}

// Samconfig is what `sam deploy` reads from samconfig.toml for an
// environment's deploy command.
type Samconfig struct {
	StackName, Region string
	Overrides         []Override
}

// Values are the overrides as SAM CLI passes them: a later entry for a
// key replaces an earlier one.
func (sc *Samconfig) Values() map[string]string {
	kv := map[string]string{}
	for _, o := range sc.Overrides {
		kv[o.Key] = o.Value
	}
	return kv
}

// ReadSamconfig reads path's [env.deploy.parameters] (and the
// [env.global.parameters] it inherits) as SAM CLI does for `sam deploy
// --config-env env`.
func ReadSamconfig(path, env string) (*Samconfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]map[string]map[string]map[string]any
	if _, err := toml.Decode(string(raw), &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cmd := func(name string) map[string]any { return doc[env][name]["parameters"] }
	sc := &Samconfig{}
	for _, section := range []map[string]any{cmd("global"), cmd("deploy")} {
		if v, ok := section["stack_name"].(string); ok {
			sc.StackName = v
		}
		if v, ok := section["region"].(string); ok {
			sc.Region = v
		}
	}
	var entries []string
	switch v := cmd("deploy")["parameter_overrides"].(type) {
	case nil:
	case string:
		entries = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: parameter_overrides entry %v: want a string", path, e)
			}
			entries = append(entries, s)
		}
	default:
		return nil, fmt.Errorf("%s: parameter_overrides is %T: want a string or a list of strings", path, v)
	}
	comments := entryComments(string(raw))
	for i, e := range entries {
		kv, err := ParseOverrides(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(kv) != 1 {
			return nil, fmt.Errorf("%s: parameter_overrides entry %q sets %d parameters: want one an entry, so each can say why", path, e, len(kv))
		}
		o := Override{Entry: e}
		for k, v := range kv {
			o.Key, o.Value = k, v
		}
		if i < len(comments) {
			o.Comment = comments[i]
		}
		sc.Overrides = append(sc.Overrides, o)
	}
	return sc, nil
}

// entryComments returns, for each entry of the parameter_overrides list in
// order, the comment lines right above it. It reads the file's lines: a
// TOML decoder drops comments. Entries are one a line, as samconfig.toml
// writes them.
func entryComments(raw string) []string {
	var out []string
	in := false
	var pending []string
	for _, line := range strings.Split(raw, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case !in:
			if strings.HasPrefix(t, "parameter_overrides") && strings.HasSuffix(t, "[") {
				in = true
			}
		case t == "]":
			return out
		case strings.HasPrefix(t, "#"):
			pending = append(pending, strings.TrimSpace(strings.TrimPrefix(t, "#")))
		case t == "":
			pending = nil
		default:
			out = append(out, strings.Join(pending, " "))
			pending = nil
		}
	}
	return out
}
