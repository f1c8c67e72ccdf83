package desired

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/puretest"
)

// TestPure keeps desired pure (STYLE rule 1): beside the standard library
// it imports state and its own pure packages (netconf, addr, ipam), and
// Kubernetes, KubeVirt, NAD, kube-ovn and IPAMClaim API types only.
func TestPure(t *testing.T) {
	puretest.Check(t,
		"github.com/ovn-sync/ovn-sync/state",
		"github.com/ovn-sync/ovn-sync/desired/netconf",
		"github.com/ovn-sync/ovn-sync/desired/addr",
		"github.com/ovn-sync/ovn-sync/desired/ipam",
		"github.com/ovn-sync/ovn-sync/apis/",
		"k8s.io/api/",
		"k8s.io/apimachinery/pkg/apis/",
		"kubevirt.io/api/",
		"github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/",
	)
}
