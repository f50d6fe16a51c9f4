// Command lint-matrix lints template.yaml with each parameter set of
// deploy.Matrix: cfn-lint with the set's values (it resolves the template's
// conditions with them), and the checks cfn-lint does not make — every
// value within its parameter's constraints, and every function able to
// start with the environment the template then gives it.
//
//	go run ./infra/deploy/cmd/lint-matrix -cfn-lint cfn-lint
package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/webhook-inbox/webhook-inbox/infra/deploy"
	"github.com/webhook-inbox/webhook-inbox/infra/local/template"
)

func main() {
	lint := flag.String("cfn-lint", "cfn-lint", "the cfn-lint executable")
	tplPath := flag.String("template", "template.yaml", "the template")
	flag.Parse()
	errs := make([]error, len(deploy.Matrix))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, set := range deploy.Matrix {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = check(*lint, *tplPath, set)
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "lint-matrix: set %d %s:\n%v\n", i, describe(deploy.Matrix[i]), err)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
	fmt.Printf("lint-matrix: %d parameter sets: cfn-lint clean, values within their constraints, every function starts\n", len(deploy.Matrix))
}

func check(lint, tplPath string, set map[string]string) error {
	var errs []error
	tpl, err := template.Load(tplPath)
	if err != nil {
		return err
	}
	if err := deploy.Apply(tpl, set); err != nil {
		errs = append(errs, err)
	} else if err := deploy.StartFunctions(tpl); err != nil {
		errs = append(errs, err)
	}
	args := []string{tplPath}
	if len(set) > 0 {
		args = append(args, "--parameters")
		for _, k := range keys(set) {
			args = append(args, k+"="+set[k])
		}
	}
	if out, err := exec.Command(lint, args...).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("cfn-lint: %v\n%s", err, out))
	}
	return errors.Join(errs...)
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func describe(set map[string]string) string {
	if len(set) == 0 {
		return "(defaults)"
	}
	parts := make([]string, 0, len(set))
	for _, k := range keys(set) {
		parts = append(parts, k+"="+set[k])
	}
	return strings.Join(parts, " ")
}
