package desired

import (
	"strings"
	"testing"
)

// TestKubevirtPodIface checks the pod interface names against those
// KubeVirt's own tests expect in a launcher pod's networks annotation
// (pkg/network/namescheme, pkg/virt-controller/services): networks
// "default" and "test1".
func TestKubevirtPodIface(t *testing.T) {
	for network, want := range map[string]string{"default": "pod37a8eec1ce1", "test1": "pod1b4f0e98519"} {
		if got := kubevirtPodIface(network); got != want {
			t.Errorf("kubevirtPodIface(%q) = %q, want %q", network, got, want)
		}
	}
}

// TestClaimName: the claim names ipam-extensions' ComposeKey gives, for
// names KubeVirt accepts and for network names that are not DNS labels.
func TestClaimName(t *testing.T) {
	for _, c := range []struct{ vm, network, want string }{
		{"vm-a", "anet", "vm-a.anet"},
		{"db", "data", "db.data"},
		{"vm-a", "Blue_Net", "vm-a.blue.net"},
		{"vm-a", "-x-", "vm-a.x"},
		{strings.Repeat("a", 250), "data", strings.Repeat("a", 250) + ".da"},
	} {
		if got := ClaimName(c.vm, c.network); got != c.want {
			t.Errorf("ClaimName(%q, %q) = %q, want %q", c.vm, c.network, got, c.want)
		}
	}
}
