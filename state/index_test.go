package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIndexSorted(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 10_000} {
		ports := map[string]*Port{}
		for range n {
			name := fmt.Sprintf("p%d", rand.IntN(1<<30))
			ports[name] = &Port{Name: name, Owner: "Pod/x/" + name}
		}
		idx := IndexPorts(ports)
		if len(idx) != len(ports) {
			t.Fatalf("IndexPorts(%d ports) has %d entries", len(ports), len(idx))
		}
		if !slices.IsSortedFunc(idx, func(a, b Entry) int {
			if a.NameHash < b.NameHash {
				return -1
			}
			if a.NameHash > b.NameHash {
				return 1
			}
			return 0
		}) {
			t.Fatalf("IndexPorts(%d ports) is not sorted by NameHash", n)
		}
		seen := map[string]bool{}
		for _, e := range idx {
			if e.NameHash != NameHash(e.Port.Name) || e.Sum != e.Port.Sum() || e.Owned != e.Port.Owned() || seen[e.Port.Name] {
				t.Fatalf("entry %+v does not describe its port, or repeats it", e)
			}
			seen[e.Port.Name] = true
		}
	}
}

func TestSumSeesEveryField(t *testing.T) {
	base := Port{Name: "a", Switch: "s", Owner: "o", Network: "n", RequestedChassis: "r", ActivationStrategy: "rarp",
		Addresses: []string{"m 1"}, PortSecurity: []string{"m 1"}}
	edits := map[string]func(*Port){
		"Name":               func(p *Port) { p.Name = "b" },
		"Switch":             func(p *Port) { p.Switch = "t" },
		"Owner":              func(p *Port) { p.Owner = "" },
		"Network":            func(p *Port) { p.Network = "m" },
		"RequestedChassis":   func(p *Port) { p.RequestedChassis = "r,s" },
		"ActivationStrategy": func(p *Port) { p.ActivationStrategy = "" },
		"Addresses":          func(p *Port) { p.Addresses = []string{"m 2"} },
		"PortSecurity":       func(p *Port) { p.PortSecurity = nil },
		"boundary":           func(p *Port) { p.Addresses, p.PortSecurity = nil, []string{"m 1", "m 1"} },
	}
	for field, edit := range edits {
		q := base
		edit(&q)
		if q.Sum() == base.Sum() {
			t.Errorf("Sum() ignores a change of %s", field)
		}
	}
	q := base
	q.UUID, q.DynamicAddresses = "u", "d"
	if q.Sum() != base.Sum() {
		t.Errorf("Sum() changed with UUID or DynamicAddresses, which Equal ignores")
	}
}
