package desired

import (
	"slices"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/state"
)

// Two ports that move to one switch with the same MAC (each derived from
// the same address of another network, held at different times) do not
// both keep it there: the older owner does, the other gets a new MAC and an
// AddressConflict Problem naming the first.
func TestMovedPortsKeepNoMACTwice(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pods := olderPods("tenant", 2)
	const m = "0a:58:0a:11:00:02" // 10.17.0.2's
	have := state.New(2)
	have.Ports.Set("p0.tenant", &state.Port{Name: "p0.tenant", UUID: "u0", Switch: "old-a", Owner: "Pod/tenant/p0", Network: "default",
		Addresses: []string{m + " 10.17.0.2"}, PortSecurity: []string{m + " 10.17.0.2"}})
	have.Ports.Set("p1.tenant", &state.Port{Name: "p1.tenant", UUID: "u1", Switch: "old-b", Owner: "Pod/tenant/p1", Network: "default",
		Addresses: []string{m + " 10.17.0.2"}, PortSecurity: []string{m + " 10.17.0.2"}})
	r := Build(Inputs{Pods: pods}, cfg, have)
	p0, p1 := r.Want.Ports.Get("p0.tenant"), r.Want.Ports.Get("p1.tenant")
	if p0 == nil || p1 == nil || p0.Switch != "ovn-default" || p1.Switch != "ovn-default" {
		t.Fatalf("ports %v and %v, want both moved to ovn-default", p0, p1)
	}
	if mac0, mac1 := strings.Fields(p0.Addresses[0])[0], strings.Fields(p1.Addresses[0])[0]; mac0 != m || mac1 == m {
		t.Errorf("MACs %s (p0) and %s (p1): want p0, the older, to keep %s and p1 a new one", mac0, mac1, m)
	}
	if !slices.ContainsFunc(r.Problems, func(p Problem) bool {
		return p.Name == "p1" && p.Reason == "AddressConflict" && strings.Contains(p.Message, `"p0.tenant"`)
	}) {
		t.Errorf("problems %v: want an AddressConflict of p1 naming p0.tenant", r.Problems)
	}
}

// A port that moves to a switch where another port holds its address (a
// NAD that took another's switch, then gave it back: its port is on the
// other switch, and a new pod got the address on its own) does not keep
// it there: it gets a new address and an AddressConflict naming the
// holder, which keeps its own.
func TestMovedPortKeepsNoAddressAnotherHolds(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pods := olderPods("tenant", 2)
	const a0, a1 = "0a:58:0a:10:00:05 10.16.0.5", "0a:58:0a:10:00:06 10.16.0.5"
	have := state.New(2)
	have.Ports.Set("p0.tenant", &state.Port{Name: "p0.tenant", UUID: "u0", Switch: "old", Owner: "Pod/tenant/p0", Network: "default",
		Addresses: []string{a0}, PortSecurity: []string{a0}})
	have.Ports.Set("p1.tenant", &state.Port{Name: "p1.tenant", UUID: "u1", Switch: "ovn-default", Owner: "Pod/tenant/p1", Network: "default",
		Addresses: []string{a1}, PortSecurity: []string{a1}})
	r := Build(Inputs{Pods: pods}, cfg, have)
	p0, p1 := r.Want.Ports.Get("p0.tenant"), r.Want.Ports.Get("p1.tenant")
	if p0 == nil || p1 == nil || p0.Switch != "ovn-default" || p1.Switch != "ovn-default" {
		t.Fatalf("ports %v and %v, want p0 moved to ovn-default, p1 kept there", p0, p1)
	}
	if p1.Addresses[0] != a1 {
		t.Errorf("p1, on the switch already, has %q, want %q kept", p1.Addresses[0], a1)
	}
	if ip0 := strings.Fields(p0.Addresses[0])[1]; ip0 == "10.16.0.5" {
		t.Errorf("p0 moved to ovn-default with 10.16.0.5, which p1 holds there")
	}
	if !slices.ContainsFunc(r.Problems, func(p Problem) bool {
		return p.Name == "p0" && p.Reason == "AddressConflict" && strings.Contains(p.Message, `"p1.tenant"`) && strings.Contains(p.Message, "10.16.0.5")
	}) {
		t.Errorf("problems %v: want an AddressConflict of p0 naming p1.tenant and 10.16.0.5", r.Problems)
	}
}
