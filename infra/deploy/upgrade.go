package deploy

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
)

// replacing are, by stateful resource type, the properties whose change
// makes CloudFormation replace the resource (a new, empty one; the old one
// retained or deleted by its policy): AWS's resource reference, "Update
// requires: Replacement".
var replacing = map[string][]string{
	"AWS::DynamoDB::Table":        {"TableName", "KeySchema"},
	"AWS::SQS::Queue":             {"QueueName", "FifoQueue"},
	"AWS::S3::Bucket":             {"BucketName"},
	"AWS::EventSchemas::Registry": {"RegistryName"},
	"AWS::EventSchemas::Schema":   {"RegistryName", "SchemaName"},
	"AWS::Events::EventBus":       {"Name"},
}

// UpgradeProblems compares the template a stack was deployed from (old)
// with the one it is to be updated to (new), and returns what the update
// would do that loses state or fails: a stateful resource removed or
// replaced, and a change to the table's global secondary indexes that
// DynamoDB cannot make in one update (more than one index created or
// deleted, or an index's key or projection changed: the two-deploy
// procedure of docs/configuration.md).
func UpgradeProblems(old, new *template.Template) []string {
	var out []string
	for _, id := range old.LogicalIDs("") {
		o, _ := old.Resource(id)
		props, stateful := replacing[o.Type]
		if !stateful {
			continue
		}
		n, err := new.Resource(id)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s (%s) is removed: CloudFormation %s it", id, o.Type, deletes(o.DeletionPolicy)))
			continue
		case n.Type != o.Type:
			out = append(out, fmt.Sprintf("%s changes type from %s to %s: replaced", id, o.Type, n.Type))
			continue
		}
		for _, p := range props {
			if !reflect.DeepEqual(o.Properties[p], n.Properties[p]) {
				out = append(out, fmt.Sprintf("%s.%s changes: CloudFormation replaces %s with a new, empty one", id, p, id))
			}
		}
		if o.Type == "AWS::DynamoDB::Table" {
			out = append(out, indexProblems(id, o.Properties["GlobalSecondaryIndexes"], n.Properties["GlobalSecondaryIndexes"])...)
		}
	}
	return out
}

func deletes(policy string) string {
	switch policy {
	case "Retain", "RetainExceptOnCreate":
		return "stops managing (retains)"
	case "Snapshot":
		return "snapshots and deletes"
	}
	return "deletes"
}

func indexProblems(table string, old, new any) []string {
	byName := func(v any) map[string]map[string]any {
		m := map[string]map[string]any{}
		list, _ := v.([]any)
		for _, ix := range list {
			if ix, ok := ix.(map[string]any); ok {
				name, _ := ix["IndexName"].(string)
				m[name] = ix
			}
		}
		return m
	}
	o, n := byName(old), byName(new)
	var out []string
	changes := 0
	names := maps.Clone(o)
	maps.Copy(names, n)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		a, inOld := o[name]
		b, inNew := n[name]
		switch {
		case inOld != inNew:
			changes++
		case !reflect.DeepEqual(a["KeySchema"], b["KeySchema"]) || !reflect.DeepEqual(a["Projection"], b["Projection"]):
			out = append(out, fmt.Sprintf("%s index %s changes its key or projection: DynamoDB cannot change an index in place; deploy twice, without it and with it (docs/configuration.md, Upgrading a running stack)", table, name))
		}
	}
	if changes > 1 {
		out = append(out, fmt.Sprintf("%s: %d indexes created or deleted in one update: DynamoDB takes one an update; deploy once for each", table, changes))
	}
	return out
}
