package apply

import (
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

var sinkOp ovsdb.Operation

// BenchmarkPortInsert is the insert of one new port with every field set.
func BenchmarkPortInsert(b *testing.B) {
	p := port("vm.default", "ovn-default", "VirtualMachine/default/vm", "0a:58:0a:10:00:04 10.16.0.4", "n1,n2")
	p.EditRare(func(r *state.Rare) { r.ActivationStrategy = "rarp" })
	b.ReportAllocs()
	for range b.N {
		sinkOp = portInsert(p, "lsp0", refs{})
	}
}

// BenchmarkPortUpdate is the mutate of a port whose every updatable field differs.
func BenchmarkPortUpdate(b *testing.B) {
	after := port("vm.default", "ovn-default", "VirtualMachine/default/vm", "0a:58:0a:10:00:04 10.16.0.4", "n1,n2")
	after.EditRare(func(r *state.Rare) { r.ActivationStrategy = "rarp" })
	before := withUUID(port("vm.default", "ovn-default", "VirtualMachineInstance/default/vm", "0a:58:0a:10:00:05 10.16.0.5", "n1"), "LSP-vm")
	before.Network = "other"
	plan := diff.Compute(st([]*state.Switch{{Name: "ovn-default", UUID: "LS1"}}, after), st([]*state.Switch{{Name: "ovn-default", UUID: "LS1"}}, before), diff.Policy{})
	c := &plan.Changes[0]
	if c.Action != diff.Update {
		b.Fatalf("plan is %s, want one update", plan)
	}
	b.ReportAllocs()
	for range b.N {
		sinkOp = portUpdate(c, refs{})[0]
	}
}
