package ipam

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/puretest"
)

// TestPure keeps ipam pure: it reads values and returns values.
func TestPure(t *testing.T) {
	puretest.Check(t, "github.com/ovn-sync/ovn-sync/desired/addr", "github.com/ovn-sync/ovn-sync/desired/netconf",
		"github.com/ovn-sync/ovn-sync/state")
}
