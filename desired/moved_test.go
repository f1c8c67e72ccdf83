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
