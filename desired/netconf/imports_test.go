package netconf

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPure keeps netconf pure (STYLE rule 1): it imports the standard
// library and kube-ovn's API types only, none of the standard packages that
// do I/O, share memory between goroutines or read the clock, and no source
// file has a go statement.
func TestPure(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		switch {
		case imp == "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1":
		case strings.Contains(first, "."):
			t.Errorf("netconf imports %q; it may import only the standard library and apis/kubeovn/v1", imp)
		case first == "os" || first == "io" || first == "syscall" || first == "sync" || first == "time" ||
			imp == "net/http" || strings.HasPrefix(imp, "math/rand"):
			t.Errorf("netconf imports %q: it does no I/O, starts no goroutines and reads no clock", imp)
		}
	}
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement: netconf starts no goroutines", fset.Position(g.Pos()))
			}
			return true
		})
	}
}
