package diff

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps diff pure: the standard library and state, nothing else.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "github.com/ovn-sync/ovn-sync/state" {
			continue
		}
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("diff imports %q; it may import only the standard library and state", imp)
		}
	}
}
