// Package puretest checks, in a package's own tests, that the package is
// pure (STYLE rule 1): it imports the standard library and the packages it
// names only, none of the standard packages that do I/O, share memory
// between goroutines or read the clock, and no source file has a go
// statement.
package puretest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Check checks the package in the test's working directory; allowed are
// the import paths, beside the standard library, it may import.
func Check(t *testing.T, allowed ...string) {
	t.Helper()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		switch {
		case slices.Contains(allowed, imp):
		case strings.Contains(first, "."):
			t.Errorf("%s imports %q; it may import only the standard library and %s", pkg.Name, imp, strings.Join(allowed, ", "))
		case first == "os" || first == "io" || first == "syscall" || first == "sync" || first == "time" ||
			imp == "net/http" || strings.HasPrefix(imp, "math/rand"):
			t.Errorf("%s imports %q: it does no I/O, starts no goroutines and reads no clock", pkg.Name, imp)
		}
	}
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var gos []token.Pos
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				gos = append(gos, g.Pos())
			}
			return true
		})
		for _, p := range gos {
			t.Errorf("%s: a go statement: %s starts no goroutines", fset.Position(p), pkg.Name)
		}
	}
}
