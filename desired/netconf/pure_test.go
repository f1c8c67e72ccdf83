package netconf

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/puretest"
)

// TestPure keeps netconf pure (STYLE rule 1): the standard library and
// kube-ovn's API types only, no I/O, no goroutines, no clock.
func TestPure(t *testing.T) {
	puretest.Check(t, "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1")
}
