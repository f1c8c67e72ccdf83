package observed

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestDHCPRows: of the DHCP_Options rows, only ours are read (owner and
// name in external_ids); a second row of one of our names (an insert
// retried after its reply was lost) is read under a name of its own, so
// that the next plan deletes it and keeps the first; a port's reference to
// our row reads as the row's name, and one to a row that is not ours as
// its UUID, which the plan replaces.
func TestDHCPRows(t *testing.T) {
	nb := dial(t, nbtest.Start(t).Addr(), true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := map[string]string{state.KeyOwner: "ovn-sync", state.KeyDHCP: "sw/ipv4"}
	rows := []*nbdb.DHCPOptions{
		{UUID: "first", Cidr: "10.0.0.0/24", Options: map[string]string{"lease_time": "3600"}, ExternalIDs: ids},
		{UUID: "second", Cidr: "10.0.0.0/24", Options: map[string]string{"lease_time": "3600"}, ExternalIDs: ids},
		{UUID: "theirs", Cidr: "10.9.0.0/24", ExternalIDs: map[string]string{state.KeyDHCP: "sw/ipv4"}},
	}
	var ops []ovsdb.Operation
	for _, r := range rows {
		op, err := nb.Client().Create(r)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
	}
	theirsRef, ourRef := "theirs", "first"
	for _, p := range []*nbdb.LogicalSwitchPort{
		{UUID: "p1", Name: "a.ns", ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/a", state.KeySwitch: "sw"}, Dhcpv4Options: &theirsRef},
		{UUID: "p2", Name: "b.ns", ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/b", state.KeySwitch: "sw"}, Dhcpv4Options: &ourRef},
	} {
		op, err := nb.Client().Create(p)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
	}
	// Logical_Switch_Port is not a root table: a switch must hold them.
	op, err := nb.Client().Create(&nbdb.LogicalSwitch{UUID: "sw", Name: "sw", Ports: []string{"p1", "p2"}})
	if err != nil {
		t.Fatal(err)
	}
	ops = append(ops, op...)
	res, err := nb.Client().Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		t.Fatal(err)
	}
	uuids := map[string]string{}
	for i, r := range rows {
		uuids[r.UUID] = res[i].UUID.GoUUID
	}
	have := waitFor(t, nb, "the rows", func(s state.State) bool { return len(s.DHCP) == 2 && s.Ports.Len() == 2 })
	want := state.New(2)
	want.Switches["sw"] = &state.Switch{Name: "sw"}
	first, second := uuids["first"], uuids["second"]
	if first > second {
		first, second = second, first
	}
	if d := have.DHCP["sw/ipv4"]; d == nil || d.UUID != first {
		t.Fatalf("DHCP[sw/ipv4] = %+v, want the row of the lower UUID %s", d, first)
	}
	if d := have.DHCP["sw/ipv4#"+second]; d == nil {
		t.Fatalf("DHCP = %v, want the second row as sw/ipv4#%s", have.DHCP, second)
	}
	a, b := have.Ports.Get("a.ns"), have.Ports.Get("b.ns")
	if a.DHCPv4() != uuids["theirs"] {
		t.Errorf("a.ns's reference to a row that is not ours reads %q, want its UUID %s", a.DHCPv4(), uuids["theirs"])
	}
	// b.ns refers to the row inserted first, whichever name it reads under.
	if wantB := "sw/ipv4"; uuids["first"] != first && b.DHCPv4() != "sw/ipv4#"+second || uuids["first"] == first && b.DHCPv4() != wantB {
		t.Errorf("b.ns's reference to our row reads %q (rows %v)", b.DHCPv4(), have.DHCP)
	}

	want.DHCP["sw/ipv4"] = &state.DHCPOptions{Name: "sw/ipv4", Owner: "ovn-sync", CIDR: "10.0.0.0/24", Options: map[string]string{"lease_time": "3600"}}
	for _, p := range []*state.Port{a, b} {
		w := *p
		w.UUID = ""
		w.EditRare(func(r *state.Rare) { r.DHCPv4 = "sw/ipv4" })
		want.Ports.Set(w.Name, &w)
	}
	plan := diff.Compute(want, have, diff.Policy{})
	if _, err := apply.Apply(ctx, nb, plan, apply.Options{}); err != nil {
		t.Fatalf("Apply(%s): %v", plan, err)
	}
	got := waitFor(t, nb, "the plan applied", func(s state.State) bool {
		return len(s.DHCP) == 1 && s.Ports.Get("a.ns").DHCPv4() == "sw/ipv4" && s.Ports.Get("b.ns").DHCPv4() == "sw/ipv4"
	})
	if got.DHCP["sw/ipv4"].UUID != first {
		t.Errorf("the row kept is %s, want %s", got.DHCP["sw/ipv4"].UUID, first)
	}
	if r := nb.Client().Cache().Table(nbdb.DHCPOptionsTable).Row(uuids["theirs"]); r == nil {
		t.Errorf("the row that is not ours is gone")
	}
	if again := diff.Compute(want, got, diff.Policy{}); !again.Empty() {
		t.Errorf("a second plan: %s", again)
	}
}
