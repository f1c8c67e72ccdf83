package diff

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestComputePortsProperties plays two passes. The first plans want0
// against have0 and some of its plan is carried out (all of it, or part
// of it: a cache that trails the NB, a pass that failed half way). Then
// anything may change in the switches and DHCP_Options rows, and some
// ports change in want, in the NB or both. ComputePorts over the ports
// that changed and those the first plan named must give exactly what
// Compute gives over everything: the same changes in the same order, the
// same notices and the same count withheld.
func TestComputePortsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want0, have0 := genSettled(t)
		last := Compute(want0, have0, Policy{})
		carried := last
		carried.Changes = nil
		all := rapid.Bool().Draw(t, "all carried out")
		for i, c := range last.Changes {
			if all || rapid.Bool().Draw(t, fmt.Sprint("carry out ", i)) {
				carried.Changes = append(carried.Changes, c)
			}
		}
		want, have := want0.Clone(), carried.ApplyTo(have0)
		if rapid.Bool().Draw(t, "switches change") {
			s := genState(t, "new switches", true)
			have.Switches, have.DHCP = s.Switches, s.DHCP
		}
		if rapid.Bool().Draw(t, "desired switches change") {
			s := genState(t, "new desired switches", false)
			want.Switches, want.DHCP = s.Switches, s.DHCP
		}
		var changed []string
		for i, name := range genPorts {
			switch rapid.IntRange(0, 5).Draw(t, name+" changes") {
			case 1:
				setPort(want, name, genPort(t, "want", i, false))
			case 2:
				setPort(have, name, genPort(t, "have", i, true))
			case 3:
				setPort(want, name, genPort(t, "want", i, false))
				setPort(have, name, genPort(t, "have", i, true))
			default:
				continue
			}
			changed = append(changed, name)
		}
		// Names neither state holds, and names twice, are harmless.
		scope := append(changed, last.PortNames()...)
		scope = append(scope, rapid.SliceOf(rapid.SampledFrom(append([]string{"nowhere"}, genPorts...))).Draw(t, "extra")...)
		policy := Policy{WithholdDeletes: rapid.Float64Range(0, 1).Draw(t, "withhold") < 0.2}

		full := Compute(want, have, policy)
		if got := ComputePorts(want, have, policy, scope); !reflect.DeepEqual(got, full) {
			t.Fatalf("ComputePorts(%q) =\n%s\nnotices %v, withheld %d\nCompute =\n%s\nnotices %v, withheld %d",
				scope, got, got.Notices, got.Withheld, full, full.Notices, full.Withheld)
		}
	})
}

// genSettled draws a desired and an observed state that agree on some of
// their ports (as the NB does after a pass) and differ on others.
func genSettled(t *rapid.T) (want, have state.State) {
	want, have = genState(t, "want", false), genState(t, "have", true)
	if rapid.Bool().Draw(t, "switches settled") {
		have.Switches = maps.Clone(want.Switches)
		for name, s := range want.Switches {
			c := *s
			c.UUID = "ls-" + name
			have.Switches[name] = &c
		}
	}
	for i, name := range genPorts {
		if !rapid.Bool().Draw(t, name+" settled") {
			continue
		}
		w := want.Ports.Get(name)
		if w == nil || !w.Owned() {
			if h := have.Ports.Get(name); h != nil && h.Owned() {
				have.Ports.Delete(name)
			}
			continue
		}
		h := *w
		h.UUID = fmt.Sprintf("lsp-%d", i)
		have.Ports.Set(name, &h)
	}
	return want, have
}

// setPort sets s's port of name to p, or removes it when p is nil.
func setPort(s state.State, name string, p *state.Port) {
	if p == nil {
		s.Ports.Delete(name)
	} else {
		s.Ports.Set(name, p)
	}
}

func TestPortNames(t *testing.T) {
	p := Plan{
		Changes: []Change{
			{Action: Create, Kind: KindSwitch, Name: "sw"},
			{Action: Delete, Kind: KindPort, Name: "b"},
			{Action: Update, Kind: KindPort, Name: "c"},
			{Action: Create, Kind: KindPort, Name: "b"},
		},
		Notices: []Notice{{Kind: KindPort, Name: "a"}, {Kind: KindSwitch, Name: "sw2"}, {Kind: KindPort, Name: "c"}},
	}
	if got, want := p.PortNames(), []string{"b", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("PortNames() = %q, want %q", got, want)
	}
}
