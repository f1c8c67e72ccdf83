package desired

import (
	"go/build"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps desired pure (STYLE rule 1): its own imports are the
// standard library, state, netconf and addr (pure, each with its own test), and
// Kubernetes, KubeVirt and NAD API types (and kube-ovn's, apis/kubeovn/v1)
// only, and nothing it pulls in transitively is a client, an informer or OVSDB.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/ovn-sync/ovn-sync/state",
		"github.com/ovn-sync/ovn-sync/desired/netconf",
		"github.com/ovn-sync/ovn-sync/desired/addr",
		"github.com/ovn-sync/ovn-sync/apis/",
		"k8s.io/api/",
		"k8s.io/apimachinery/pkg/apis/",
		"kubevirt.io/api/",
		"github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/",
	}
	for _, imp := range pkg.Imports {
		if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			if imp == a || strings.HasPrefix(imp, a) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("desired imports %s", imp)
		}
	}
	for _, imp := range pkg.Imports {
		switch imp {
		case "sync", "time/tzdata", "os", "io/fs", "net/http", "os/exec", "syscall":
			t.Errorf("desired imports %s: it must do no I/O and start no goroutines", imp)
		}
	}

	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"k8s.io/client-go",
			"github.com/ovn-org/libovsdb",
			"github.com/ovn-sync/ovn-sync/nbdb",
			"github.com/ovn-sync/ovn-sync/observed",
			"github.com/ovn-sync/ovn-sync/diff",
			"github.com/ovn-sync/ovn-sync/apply",
			"github.com/ovn-sync/ovn-sync/sources",
		} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("desired depends on %s", dep)
			}
		}
	}
}

// TestNoGoroutinesOrClock scans the package's non-test sources for the
// words that would start a goroutine or read the clock.
func TestNoGoroutinesOrClock(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkg.GoFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"go func", "time.Now", "time.Since", "time.After", "time.Tick", "rand."} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s contains %q", f, bad)
			}
		}
	}
}
