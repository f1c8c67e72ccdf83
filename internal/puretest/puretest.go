// Package puretest checks, in a package's own tests, that the package is
// pure (STYLE rule 1): it imports the standard library and the packages it
// names only, none of the standard packages that do I/O or share memory
// between goroutines, nothing it depends on is a client, an informer, OVSDB
// or one of ovn-sync's imperative packages, and no source file starts a
// goroutine or reads the clock.
//
//	func TestPure(t *testing.T) { puretest.Check(t, "github.com/ovn-sync/ovn-sync/state") }
package puretest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// imperative are the packages no pure package may depend on, even
// through another: clients, informers, OVSDB, and ovn-sync's packages that
// do I/O.
var imperative = []string{
	"k8s.io/client-go",
	"github.com/ovn-org/libovsdb",
	"github.com/ovn-sync/ovn-sync/nbdb",
	"github.com/ovn-sync/ovn-sync/observed",
	"github.com/ovn-sync/ovn-sync/apply",
	"github.com/ovn-sync/ovn-sync/sources",
	"github.com/ovn-sync/ovn-sync/reconcile",
	"github.com/ovn-sync/ovn-sync/publish",
	"github.com/ovn-sync/ovn-sync/cmd",
}

// clock are the functions of package time that read the clock or start
// timers; its types (time.Time, time.Duration) are values.
var clock = []string{"Now", "Since", "Until", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker", "Sleep"}

// Check checks the package in the test's working directory; allowed are the
// import paths, beside the standard library, it may import (a path ending
// in "/" allows every package under it).
func Check(t *testing.T, allowed ...string) {
	t.Helper()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		switch {
		case slices.ContainsFunc(allowed, func(a string) bool { return imp == a || strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a) }):
		case strings.Contains(first, "."):
			t.Errorf("%s imports %q; it may import only the standard library and %s", pkg.Name, imp, strings.Join(allowed, ", "))
		case first == "os" || first == "io" || first == "syscall" || first == "sync" ||
			imp == "net/http" || strings.HasPrefix(imp, "math/rand") || imp == "crypto/rand":
			t.Errorf("%s imports %q: it does no I/O and starts no goroutines", pkg.Name, imp)
		}
	}
	checkSources(t, pkg)
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range imperative {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("%s depends on %s", pkg.Name, dep)
			}
		}
	}
}

// checkSources fails t for each go statement and each call of package
// time's clock in pkg's non-test files.
func checkSources(t *testing.T, pkg *build.Package) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement: %s starts no goroutines", fset.Position(x.Pos()), pkg.Name)
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && slices.Contains(clock, x.Sel.Name) {
					t.Errorf("%s: time.%s: %s reads no clock", fset.Position(x.Pos()), x.Sel.Name, pkg.Name)
				}
			}
			return true
		})
	}
}
