package template

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// noValue is what !Ref AWS::NoValue resolves to: the enclosing key or list
// element is dropped.
type noValue struct{}

// Resolve evaluates the intrinsic functions in v (a value from
// Resource.Properties) with the template's parameters and pseudo parameters.
// A !Ref to a parameter gives its value (a string, or a []any of strings for
// list types); a !Ref to a resource, and any !GetAtt, give a Reference. It
// supports Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::If
// (with Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition), Fn::FindInMap and
// Fn::Base64. A value that only exists at deploy time (a resource inside
// Fn::Sub or Fn::Join) yields an error wrapping ErrUnresolvable; a missing
// logical ID, one wrapping ErrNotFound.
func (t *Template) Resolve(v any) (any, error) {
	r, err := t.resolve(v)
	if err != nil {
		return nil, err
	}
	if _, ok := r.(noValue); ok {
		return nil, nil
	}
	return r, nil
}

func (t *Template) resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if fn, arg := only(v); len(v) == 1 && (fn == "Ref" || strings.HasPrefix(fn, "Fn::")) {
			r, err := t.intrinsic(fn, arg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fn, err)
			}
			return r, nil
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := t.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, ok := r.(noValue); !ok {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(v))
		for i, e := range v {
			r, err := t.resolve(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if _, ok := r.(noValue); !ok {
				out = append(out, r)
			}
		}
		return out, nil
	default:
		return v, nil
	}
}

func (t *Template) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("want a logical ID, got %s", kindOf(arg))
		}
		return t.ref(name)
	case "Fn::GetAtt":
		return t.getAtt(arg)
	case "Fn::Sub":
		return t.sub(arg)
	case "Fn::Join":
		args, err := t.resolveArgs(arg, 2)
		if err != nil {
			return nil, err
		}
		delim, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("delimiter is %s, want a string", kindOf(args[0]))
		}
		parts, err := stringList(args[1])
		if err != nil {
			return nil, err
		}
		return strings.Join(parts, delim), nil
	case "Fn::Select":
		args, err := t.resolveArgs(arg, 2)
		if err != nil {
			return nil, err
		}
		i, err := toInt(args[0])
		if err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		list, ok := args[1].([]any)
		if !ok {
			return nil, fmt.Errorf("want a list, got %s", kindOf(args[1]))
		}
		if i < 0 || i >= len(list) {
			return nil, fmt.Errorf("index %d out of range [0,%d)", i, len(list))
		}
		return list[i], nil
	case "Fn::Split":
		args, err := t.resolveArgs(arg, 2)
		if err != nil {
			return nil, err
		}
		delim, ok1 := args[0].(string)
		s, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("want [delimiter, string], got [%s, %s]", kindOf(args[0]), kindOf(args[1]))
		}
		var out []any
		for _, p := range strings.Split(s, delim) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::If":
		list, ok := arg.([]any)
		if !ok || len(list) != 3 {
			return nil, fmt.Errorf("want [condition, then, else]")
		}
		name, ok := list[0].(string)
		if !ok {
			return nil, fmt.Errorf("condition name is %s, want a string", kindOf(list[0]))
		}
		cond, err := t.condition(name)
		if err != nil {
			return nil, err
		}
		if cond {
			return t.resolve(list[1])
		}
		return t.resolve(list[2])
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or":
		return t.evalCondition(map[string]any{fn: arg})
	case "Fn::FindInMap":
		args, err := t.resolveArgs(arg, 3)
		if err != nil {
			return nil, err
		}
		keys, err := stringList(args)
		if err != nil {
			return nil, err
		}
		var cur any = t.mappings
		for _, k := range keys {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%v: %w", keys, ErrNotFound)
			}
			if cur, ok = m[k]; !ok {
				return nil, fmt.Errorf("%v: %w", keys, ErrNotFound)
			}
		}
		return t.resolve(cur)
	case "Fn::Base64":
		r, err := t.resolve(arg)
		if err != nil {
			return nil, err
		}
		s, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", kindOf(r))
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	}
	return nil, fmt.Errorf("not supported locally: %w", ErrUnresolvable)
}

func (t *Template) resolveArgs(arg any, n int) ([]any, error) {
	r, err := t.resolve(arg)
	if err != nil {
		return nil, err
	}
	list, ok := r.([]any)
	if !ok || len(list) != n {
		return nil, fmt.Errorf("want a list of %d arguments", n)
	}
	return list, nil
}

// ref resolves a !Ref name: a parameter, a pseudo parameter or a resource.
func (t *Template) ref(name string) (any, error) {
	if name == "AWS::NoValue" {
		return noValue{}, nil
	}
	if name == "AWS::NotificationARNs" {
		return []any{}, nil
	}
	if v, ok := t.pseudo[name]; ok {
		return v, nil
	}
	if p, ok := t.params[name]; ok {
		v, ok := p.Value()
		if !ok {
			return nil, fmt.Errorf("parameter %s has no Default and was not set: %w", name, ErrNotFound)
		}
		if p.Type == "CommaDelimitedList" || strings.HasPrefix(p.Type, "List<") {
			var out []any
			for _, s := range strings.Split(v, ",") {
				out = append(out, strings.TrimSpace(s))
			}
			return out, nil
		}
		return v, nil
	}
	if _, ok := t.resources[name]; ok {
		return Reference{LogicalID: name}, nil
	}
	return nil, fmt.Errorf("%s is neither a parameter nor a resource: %w", name, ErrNotFound)
}

func (t *Template) getAtt(arg any) (any, error) {
	var id, attr string
	switch a := arg.(type) {
	case string:
		var ok bool
		if id, attr, ok = strings.Cut(a, "."); !ok {
			return nil, fmt.Errorf("%q: want LogicalID.Attribute", a)
		}
	case []any:
		r, err := t.resolveArgs(a, 2)
		if err != nil {
			return nil, err
		}
		var ok1, ok2 bool
		id, ok1 = r[0].(string)
		attr, ok2 = r[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("want [LogicalID, Attribute] strings")
		}
	default:
		return nil, fmt.Errorf("want LogicalID.Attribute, got %s", kindOf(arg))
	}
	if _, ok := t.resources[id]; !ok {
		return nil, fmt.Errorf("resource %s: %w", id, ErrNotFound)
	}
	return Reference{LogicalID: id, Attribute: attr}, nil
}

// sub evaluates Fn::Sub: "text ${Name} ${Res.Attr} ${!Literal}", optionally
// with a map of local variables.
func (t *Template) sub(arg any) (any, error) {
	var (
		s    string
		vars map[string]any
	)
	switch a := arg.(type) {
	case string:
		s = a
	case []any:
		if len(a) != 2 {
			return nil, fmt.Errorf("want a string or [string, variables]")
		}
		var ok bool
		if s, ok = a[0].(string); !ok {
			return nil, fmt.Errorf("template is %s, want a string", kindOf(a[0]))
		}
		if vars, ok = a[1].(map[string]any); !ok {
			return nil, fmt.Errorf("variables are %s, want a mapping", kindOf(a[1]))
		}
	default:
		return nil, fmt.Errorf("want a string or [string, variables], got %s", kindOf(arg))
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return nil, fmt.Errorf("unterminated ${ in %q", s)
		}
		name := s[:j]
		s = s[j+1:]
		if strings.HasPrefix(name, "!") { // ${!Literal} writes ${Literal}
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		v, err := t.subVar(strings.TrimSpace(name), vars)
		if err != nil {
			return nil, err
		}
		b.WriteString(v)
	}
}

func (t *Template) subVar(name string, vars map[string]any) (string, error) {
	var (
		v   any
		err error
	)
	if raw, ok := vars[name]; ok {
		v, err = t.resolve(raw)
	} else if id, attr, dotted := strings.Cut(name, "."); dotted && !strings.HasPrefix(name, "AWS::") {
		v, err = t.getAtt([]any{id, attr})
	} else {
		v, err = t.ref(name)
	}
	if err != nil {
		return "", fmt.Errorf("${%s}: %w", name, err)
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case Reference:
		return "", fmt.Errorf("${%s} is a resource value: %w", name, ErrUnresolvable)
	default:
		s, err := scalarString(v)
		if err != nil {
			return "", fmt.Errorf("${%s}: %w", name, err)
		}
		return s, nil
	}
}

// condition evaluates a named entry of the Conditions section.
func (t *Template) condition(name string) (bool, error) {
	c, ok := t.conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %s: %w", name, ErrNotFound)
	}
	b, err := t.evalCondition(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	return b, nil
}

func (t *Template) evalCondition(c any) (bool, error) {
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("want a condition function, got %s", kindOf(c))
	}
	fn, arg := only(m)
	switch fn {
	case "Condition":
		name, ok := arg.(string)
		if !ok {
			return false, fmt.Errorf("want a condition name, got %s", kindOf(arg))
		}
		return t.condition(name)
	case "Fn::Equals":
		args, err := t.resolveArgs(arg, 2)
		if err != nil {
			return false, fmt.Errorf("%s: %w", fn, err)
		}
		a, err1 := scalarString(args[0])
		b, err2 := scalarString(args[1])
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("%s: want two scalars", fn)
		}
		return a == b, nil
	case "Fn::Not", "Fn::And", "Fn::Or":
		list, ok := arg.([]any)
		if !ok || len(list) == 0 || (fn == "Fn::Not" && len(list) != 1) {
			return false, fmt.Errorf("%s: want a list of conditions", fn)
		}
		results := make([]bool, len(list))
		for i, e := range list {
			var err error
			if results[i], err = t.evalCondition(e); err != nil {
				return false, fmt.Errorf("%s: %w", fn, err)
			}
		}
		switch fn {
		case "Fn::Not":
			return !results[0], nil
		case "Fn::And":
			return !slices.Contains(results, false), nil
		default:
			return slices.Contains(results, true), nil
		}
	}
	return false, fmt.Errorf("%s is not a condition function", fn)
}

// only returns an entry of m: its only one when len(m) == 1.
func only(m map[string]any) (string, any) {
	for k, v := range m {
		return k, v
	}
	return "", nil
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, got %s", kindOf(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, err := scalarString(e)
		if err != nil {
			if _, isRef := e.(Reference); isRef {
				return nil, fmt.Errorf("[%d] is a resource value: %w", i, ErrUnresolvable)
			}
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

// toInt converts a resolved number, or a numeric string (a Number
// parameter's value), to an int.
func toInt(v any) (int, error) {
	switch v := v.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case uint64:
		return int(v), nil
	case float64:
		if v != float64(int(v)) {
			return 0, fmt.Errorf("%g is not an integer", v)
		}
		return int(v), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("want an integer, got %s", kindOf(v))
}

// toBool accepts a YAML boolean or the strings "true"/"false".
func toBool(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%q is not a boolean", v)
		}
		return b, nil
	}
	return false, fmt.Errorf("want a boolean, got %s", kindOf(v))
}
