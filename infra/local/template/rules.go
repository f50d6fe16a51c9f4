package template

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// CheckRules evaluates the Rules section with the parameters' values, as
// CloudFormation does before it creates or changes anything: a rule whose
// RuleCondition holds (or that has none) must have every Assert hold. Each
// failed assertion is reported with its rule's name and AssertDescription.
// The rule functions are the ones conditions use (Fn::Equals, Fn::And,
// Fn::Or, Fn::Not); a rule using another is an error.
func (t *Template) CheckRules() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(t.rules)) {
		rule, ok := t.rules[name].(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("rule %s: want a mapping, got %s", name, kindOf(t.rules[name])))
			continue
		}
		if c, ok := rule["RuleCondition"]; ok {
			applies, err := t.evalCondition(c)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %s: RuleCondition: %w", name, err))
				continue
			}
			if !applies {
				continue
			}
		}
		list, ok := rule["Assertions"].([]any)
		if !ok || len(list) == 0 {
			errs = append(errs, fmt.Errorf("rule %s: want a list of Assertions", name))
			continue
		}
		for i, a := range list {
			m, _ := a.(map[string]any)
			held, err := t.evalCondition(m["Assert"])
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("rule %s: assertion %d: %w", name, i, err))
			case !held:
				desc, _ := m["AssertDescription"].(string)
				errs = append(errs, fmt.Errorf("rule %s: %s", name, desc))
			}
		}
	}
	return errors.Join(errs...)
}
