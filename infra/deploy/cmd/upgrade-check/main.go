// Command upgrade-check compares template.yaml with its version at a git
// ref (the release a stack runs) and reports what updating that stack
// would do to its state: a stateful resource removed or replaced, an index
// change DynamoDB cannot make in one update.
//
//	go run ./infra/deploy/cmd/upgrade-check -ref v1.2.0
//
// Without -ref it compares with the last commit before HEAD that changed
// template.yaml.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/infra/deploy"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
)

func main() {
	ref := flag.String("ref", "", "the git ref of the deployed release (default: the last commit before HEAD that changed the template)")
	path := flag.String("template", "template.yaml", "the template")
	flag.Parse()
	if err := run(*ref, *path); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade-check:", err)
		os.Exit(1)
	}
}

func run(ref, path string) error {
	if ref == "" {
		out, err := exec.Command("git", "log", "-1", "--format=%H", "HEAD~1", "--", path).Output()
		if err != nil {
			return fmt.Errorf("git log: %w", err)
		}
		ref = strings.TrimSpace(string(out))
		if ref == "" {
			fmt.Println("upgrade-check: no earlier version of", path)
			return nil
		}
	}
	oldText, err := exec.Command("git", "show", ref+":"+filepath.ToSlash(path)).Output()
	if err != nil {
		return fmt.Errorf("git show %s:%s: %w", ref, path, err)
	}
	dir, err := os.MkdirTemp("", "upgrade-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	oldPath := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(oldPath, oldText, 0o644); err != nil {
		return err
	}
	old, err := template.Load(oldPath)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", path, ref, err)
	}
	cur, err := template.Load(path)
	if err != nil {
		return err
	}
	problems := deploy.UpgradeProblems(old, cur)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "upgrade-check:", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d changes from %s need a procedure or lose state", len(problems), ref)
	}
	fmt.Printf("upgrade-check: %s → the working tree: no stateful resource removed or replaced, no index change DynamoDB cannot make\n", shortRef(ref))
	return nil
}

func shortRef(ref string) string {
	if len(ref) == 40 {
		return ref[:12]
	}
	return ref
}
