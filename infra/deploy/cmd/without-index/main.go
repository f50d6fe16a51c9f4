// Command without-index writes the template of the first of the two
// deploys that replace the inbox table's index (docs/configuration.md, "Upgrading a stack
// deployed before the replay actions"): template.yaml with the index and
// the attribute definitions only it used removed.
//
//	go run ./infra/deploy/cmd/without-index -o template-without-index.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/webhook-inbox/webhook-inbox/infra/deploy"
)

func main() {
	in := flag.String("template", "template.yaml", "the template")
	out := flag.String("o", "template-without-index.yaml", "where to write the first deploy's template (beside template.yaml: its code paths are relative)")
	flag.Parse()
	raw, err := os.ReadFile(*in)
	if err == nil {
		raw, err = deploy.WithoutIndexes(raw, "InboxTable")
	}
	if err == nil {
		err = os.WriteFile(*out, raw, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "without-index:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}
