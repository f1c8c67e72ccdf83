package observed

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkPortFromRow is portFromRow's conversion of one changed row,
// with our keys and someone else's.
func BenchmarkPortFromRow(b *testing.B) {
	addr := []string{"0a:58:0a:10:00:04 10.16.0.4"}
	r := &nbdb.LogicalSwitchPort{UUID: "u", Name: "vm-1.ns-1", Addresses: addr, PortSecurity: addr,
		Options: map[string]string{state.OptRequestedChassis: "node-1,node-2", state.OptActivationStrategy: "rarp", "mcast_flood": "true"},
		ExternalIDs: map[string]string{state.KeyOwner: "VirtualMachine/ns-1/vm-1", state.KeyNetwork: state.DefaultNetwork,
			state.KeySwitch: "ovn-default", "team": "net"}}
	b.ReportAllocs()
	for range b.N {
		sinkPort = portFromRow(r)
	}
}

var sinkPort *state.Port
