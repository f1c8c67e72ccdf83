package diff

import (
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/state"
)

func TestCostOf(t *testing.T) {
	kubeOVN := (&state.Port{Name: "web.default", UUID: "u1", Addresses: []string{"00:00:00:53:6b:b6 10.16.0.15"}}).
		SetRare(&state.Rare{Vendor: state.VendorKubeOVN})
	ours := &state.Port{Name: "web.default", UUID: "u1", Addresses: []string{"00:00:00:53:6b:b6 10.16.0.15"},
		PortSecurity: []string{"00:00:00:53:6b:b6 10.16.0.15"}, Owner: "Pod/default/web", Network: "default", Switch: "ovn-default",
		RequestedChassis: "node-1"}
	with := func(p *state.Port, f func(*state.Port)) *state.Port { c := *p; f(&c); return &c }
	for _, tc := range []struct {
		name   string
		c      Change
		want   Cost
		detail string
	}{
		{"created", Change{Action: Create, Kind: KindPort, After: ours}, CostPort, `created with addresses "00:00:00:53:6b:b6 10.16.0.15"`},
		{"deleted", Change{Action: Delete, Kind: KindPort, Before: ours}, CostPort, `deleted, freeing "00:00:00:53:6b:b6 10.16.0.15"`},
		{"adopted from kube-ovn", Change{Action: Update, Kind: KindPort, Before: kubeOVN, After: ours,
			Fields: FieldPortSecurity | FieldRequestedChassis | FieldOwner | FieldNetwork | FieldSwitch}, CostBookkeeping, ""},
		{"readdressed", Change{Action: Update, Kind: KindPort, Before: ours,
			After: with(ours, func(p *state.Port) { p.Addresses = []string{"0a:58:0a:10:00:09 10.16.0.9"} }), Fields: FieldAddresses},
			CostAddress, `addresses "00:00:00:53:6b:b6 10.16.0.15" -> "0a:58:0a:10:00:09 10.16.0.9"`},
		{"port_security narrowed", Change{Action: Update, Kind: KindPort, Before: ours,
			After: with(ours, func(p *state.Port) { p.PortSecurity = []string{"00:00:00:53:6b:b6"} }), Fields: FieldPortSecurity},
			CostAddress, `port_security "00:00:00:53:6b:b6 10.16.0.15" -> "00:00:00:53:6b:b6"`},
		{"moved to another chassis", Change{Action: Update, Kind: KindPort, Before: ours,
			After: with(ours, func(p *state.Port) { p.RequestedChassis = "node-1,node-2" }), Fields: FieldRequestedChassis},
			CostBinding, `options:requested-chassis "node-1" -> "node-1,node-2"`},
		{"external_ids only", Change{Action: Update, Kind: KindPort, Before: ours,
			After: with(ours, func(p *state.Port) { p.Network = "x" }), Fields: FieldNetwork}, CostBookkeeping, ""},
		{"a switch", Change{Action: Create, Kind: KindSwitch}, CostBookkeeping, ""},
		{"a DHCP_Options row", Change{Action: Delete, Kind: KindDHCP}, CostBookkeeping, ""},
	} {
		got, detail := CostOf(&tc.c)
		if got != tc.want || detail != tc.detail {
			t.Errorf("%s: CostOf = %s, %q; want %s, %q", tc.name, got, detail, tc.want, tc.detail)
		}
	}
}

func TestPlanCosts(t *testing.T) {
	p := func(name, owner string) *state.Port {
		return &state.Port{Name: name, Owner: owner, Addresses: []string{"0a:58:0a:10:00:02 10.16.0.2"}}
	}
	plan := Plan{Changes: []Change{
		{Action: Create, Kind: KindSwitch, Name: "sw"},
		{Action: Delete, Kind: KindPort, Name: "b.default", Owner: "Pod/default/b", Before: p("b.default", "Pod/default/b")},
		{Action: Update, Kind: KindPort, Name: "a.default", Owner: "Pod/default/a", Before: p("a.default", "Pod/default/a"),
			After: p("a.default", "Pod/default/a"), Fields: FieldOwner},
		{Action: Create, Kind: KindPort, Name: "vm.tenant", Owner: "VirtualMachine/tenant/vm", After: p("vm.tenant", "VirtualMachine/tenant/vm")},
	}}
	cs := plan.Costs()
	if cs.Bookkeeping != 2 || len(cs.Named) != 2 || cs.Named[0].Owner != "Pod/default/b" || cs.Named[1].Port != "vm.tenant" {
		t.Fatalf("Costs() = %+v", cs)
	}
	if cs.ByAction[Create][CostPort] != 1 || cs.ByAction[Create][CostBookkeeping] != 1 || cs.ByAction[Delete][CostPort] != 1 {
		t.Errorf("ByAction = %v", cs.ByAction)
	}
	text := cs.String()
	for _, want := range []string{`[port] VirtualMachine/tenant/vm: port "vm.tenant" created with addresses`, "bookkeeping only: 2 changes"} {
		if !strings.Contains(text, want) {
			t.Errorf("Costs().String() =\n%s\nwithout %q", text, want)
		}
	}
	if (Plan{}).Costs().String() != "" {
		t.Error("an empty plan's costs say something")
	}
}
