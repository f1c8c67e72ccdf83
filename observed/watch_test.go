package observed

import (
	"testing"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

func TestPortDrift(t *testing.T) {
	want := state.New(1)
	want.Ports["a.ns"] = &state.Port{Name: "a.ns", Owner: "Pod/ns/a", Network: "default", Switch: "ovn-default",
		Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"}, RequestedChassis: "n1"}
	ours := func(mut func(*nbdb.LogicalSwitchPort)) *nbdb.LogicalSwitchPort {
		r := &nbdb.LogicalSwitchPort{Name: "a.ns", Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"},
			ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/a", state.KeyNetwork: "default", state.KeySwitch: "ovn-default"},
			Options:     map[string]string{state.OptRequestedChassis: "n1", "foreign": "x"}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	foreign := &nbdb.LogicalSwitchPort{Name: "x", ExternalIDs: map[string]string{}}
	for _, tc := range []struct {
		name     string
		old, cur *nbdb.LogicalSwitchPort
		want     bool
	}{
		{"our insert as planned", nil, ours(nil), false},
		{"our update as planned", ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n0" }), ours(nil), false},
		{"someone else's key changed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options["foreign"] = "y" }), false},
		{"chassis edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n9" }), true},
		{"addresses edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Addresses = []string{"dynamic"} }), true},
		{"owner key removed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { delete(r.ExternalIDs, state.KeyOwner) }), true},
		{"wanted port deleted", ours(nil), nil, true},
		{"unwanted port deleted", ours(func(r *nbdb.LogicalSwitchPort) { r.Name = "gone.ns" }), nil, false},
		{"foreign port", nil, foreign, false},
		{"foreign port deleted", foreign, nil, false},
	} {
		if got := PortDrift(want, tc.old, tc.cur); got != tc.want {
			t.Errorf("PortDrift(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
