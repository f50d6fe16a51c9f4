// Package model holds the protocol's Promela model (inbox.pml, checked by
// `make model`) and this test, which keeps the model's map to the code
// honest: every step names the function that implements it.
package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStepsNameRealFunctions: each "impl:" of the model names functions
// that exist (pkg.Func or pkg.Type.Method, pkg under internal/), so a
// renamed or removed step fails here until the model follows.
func TestStepsNameRealFunctions(t *testing.T) {
	var refs [][]string
	for file, least := range map[string]int{"inbox.pml": 10, "twins.pml": 2, "operator.pml": 8} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got := regexp.MustCompile(`impl: ([^*]+)\*/`).FindAllStringSubmatch(string(src), -1)
		if len(got) < least {
			t.Fatalf("%s: got %d impl: references, want the model's steps (at least %d)", file, len(got), least)
		}
		refs = append(refs, got...)
	}
	decls := map[string]map[string]bool{} // package -> "Func" or "Type.Method"
	for _, ref := range refs {
		for _, name := range strings.Split(ref[1], ",") {
			name = strings.TrimSpace(name)
			pkg, fn, ok := strings.Cut(name, ".")
			if !ok {
				t.Errorf("impl: %q: want pkg.Func or pkg.Type.Method", name)
				continue
			}
			if decls[pkg] == nil {
				decls[pkg] = declared(t, filepath.Join("..", "internal", pkg))
			}
			if !decls[pkg][fn] {
				t.Errorf("the model names %s, which internal/%s does not declare", name, pkg)
			}
		}
	}
}

// declared lists the functions and methods of the package in dir.
func declared(tb testing.TB, dir string) map[string]bool {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("package %s: %v (no Go files)", dir, err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				out[fd.Name.Name] = true
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				out[id.Name+"."+fd.Name.Name] = true
			}
		}
	}
	return out
}
