package deploy

import (
	"bytes"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// WithoutIndexes returns the template with the table's global secondary
// indexes removed, and with them the attribute definitions only they used:
// the first deploy of the two that replace an index CloudFormation cannot
// change in place (a projection, a key). DynamoDB refuses a definition no
// key schema uses, so removing the index alone fails the update (cfn-lint:
// E3039). The template's tags (!Ref, !Sub, …) are kept as written.
func WithoutIndexes(tpl []byte, table string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(tpl, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("template: want one YAML document")
	}
	props := lookup(lookup(lookup(doc.Content[0], "Resources"), table), "Properties")
	if props == nil {
		return nil, fmt.Errorf("template: no Resources.%s.Properties", table)
	}
	if lookup(props, "GlobalSecondaryIndexes") == nil {
		return nil, fmt.Errorf("template: %s has no GlobalSecondaryIndexes", table)
	}
	remove(props, "GlobalSecondaryIndexes")
	var used []string
	if ks := lookup(props, "KeySchema"); ks != nil {
		for _, k := range ks.Content {
			if n := lookup(k, "AttributeName"); n != nil {
				used = append(used, n.Value)
			}
		}
	}
	if lsi := lookup(props, "LocalSecondaryIndexes"); lsi != nil {
		for _, ix := range lsi.Content {
			if ks := lookup(ix, "KeySchema"); ks != nil {
				for _, k := range ks.Content {
					if n := lookup(k, "AttributeName"); n != nil {
						used = append(used, n.Value)
					}
				}
			}
		}
	}
	if defs := lookup(props, "AttributeDefinitions"); defs != nil {
		defs.Content = slices.DeleteFunc(defs.Content, func(d *yaml.Node) bool {
			n := lookup(d, "AttributeName")
			return n != nil && !slices.Contains(used, n.Value)
		})
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// lookup returns the value of key in mapping node m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// remove deletes key from mapping node m.
func remove(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
