package diff

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestComputeProperties checks, for random want and have states mixing
// owned and foreign rows, that carrying out the plan converges on want for
// every row ovn-sync may touch, leaves every other row as it was, and that a
// state compared with itself needs no change.
func TestComputeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		have := genState(t, "have", true)
		want := genState(t, "want", false)
		policy := Policy{WithholdDeletes: rapid.Float64Range(0, 1).Draw(t, "withhold") < 0.2}
		p := Compute(want, have, policy)
		if msg := checkApplied(want, have, p); msg != "" {
			t.Fatalf("%s\nplan:\n%s", msg, p)
		}
		if q := Compute(want, want, Policy{}); !q.Empty() {
			t.Fatalf("Compute(want, want) = %s, want no changes", q)
		}
		if q := Compute(have, have, Policy{}); !q.Empty() {
			t.Fatalf("Compute(have, have) = %s, want no changes", q)
		}
	})
}

var (
	genSwitches = []string{"sw0", "sw1", "sw2", "sw3"}
	genDHCP     = []string{"sw0/ipv4", "sw1/ipv4"}
	genPorts    = []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}
)

func genValue(t *rapid.T, label string, values ...string) string {
	return rapid.SampledFrom(values).Draw(t, label)
}

// genState draws a state over a small set of names so that want and have
// overlap. Observed states carry UUIDs and foreign ports without a switch;
// desired ones hold only owned ports (but rarely one without an owner, which
// Compute must refuse), and may name switches it does not own.
func genState(t *rapid.T, label string, observed bool) state.State {
	s := state.New(len(genPorts))
	for i, name := range genSwitches {
		if !rapid.Bool().Draw(t, label+" has "+name) {
			continue
		}
		sw := &state.Switch{Name: name}
		if rapid.Float64Range(0, 1).Draw(t, label+" "+name+" owned") < 0.6 {
			sw.Owner = genValue(t, label+" "+name+" owner", "ovn-sync", "NetworkAttachmentDefinition/ns/n")
			sw.Network = genValue(t, label+" "+name+" network", "", "default", "ns/n")
			sw.Subnet = genValue(t, label+" "+name+" subnet", "", "10.0.0.0/24", "10.1.0.0/24")
			sw.IPv6Prefix = genValue(t, label+" "+name+" ipv6", "", "fd00::/64")
			sw.ExcludeIPs = genValue(t, label+" "+name+" exclude", "", "10.0.0.1", "10.0.0.1 10.0.0.5..10.0.0.9")
		}
		if observed {
			sw.UUID = fmt.Sprintf("ls-%d", i)
		}
		s.Switches[name] = sw
	}
	for i, name := range genDHCP {
		if !rapid.Bool().Draw(t, label+" has "+name) {
			continue
		}
		d := &state.DHCPOptions{Name: name, Owner: "ovn-sync"}
		d.Network = genValue(t, label+" "+name+" network", "", "default")
		d.CIDR = genValue(t, label+" "+name+" cidr", "10.0.0.0/24", "10.0.1.0/24")
		d.Options = map[string]string{"server_id": "10.0.0.1"}
		if rapid.Bool().Draw(t, label+" "+name+" lease") {
			d.Options["lease_time"] = genValue(t, label+" "+name+" lease_time", "60", "3600")
		}
		if observed {
			d.UUID = fmt.Sprintf("dhcp-%d", i)
		}
		s.DHCP[name] = d
	}
	for i, name := range genPorts {
		if p := genPort(t, label, i, observed); p != nil {
			s.Ports.Set(name, p)
		}
	}
	return s
}

// genPort draws port genPorts[i] of a state genState draws, or nil when
// the state does not hold it.
func genPort(t *rapid.T, label string, i int, observed bool) *state.Port {
	name := genPorts[i]
	if !rapid.Bool().Draw(t, label+" has "+name) {
		return nil
	}
	p := &state.Port{Name: name}
	owned := !observed || rapid.Float64Range(0, 1).Draw(t, label+" "+name+" owned") < 0.7
	if !observed && rapid.Float64Range(0, 1).Draw(t, label+" "+name+" ownerless") < 0.05 {
		owned = false
	}
	addrs := [][]string{nil, {"a1"}, {"a2"}, {"a1", "a2"}}
	p.Addresses = rapid.SampledFrom(addrs).Draw(t, label+" "+name+" addr")
	p.PortSecurity = rapid.SampledFrom(addrs).Draw(t, label+" "+name+" ps")
	if owned {
		p.Owner = genValue(t, label+" "+name+" owner", "Pod/ns/x", "VirtualMachine/ns/x")
		p.Network = genValue(t, label+" "+name+" network", "", "default", "ns/n")
		p.Switch = genValue(t, label+" "+name+" switch", append([]string{""}, genSwitches...)...)
		p.RequestedChassis = genValue(t, label+" "+name+" chassis", "", "n1", "n1,n2")
		p.SetRare(&state.Rare{ActivationStrategy: genValue(t, label+" "+name+" activation", "", "rarp"),
			DHCPv4: genValue(t, label+" "+name+" dhcpv4", append([]string{""}, genDHCP...)...)})
	}
	if observed {
		p.UUID = fmt.Sprintf("lsp-%d", i)
	}
	return p
}

// phase is a change's position in the order apply runs a plan in.
func phase(c *Change) int {
	switch {
	case c.Kind == KindSwitch && c.Action != Delete:
		return 0
	case c.Kind == KindDHCP && c.Action != Delete:
		return 1
	case c.Kind == KindPort && c.Action == Delete:
		return 2
	case c.Kind == KindPort && c.Action == Update:
		return 3
	case c.Kind == KindPort && c.Action == Create:
		return 4
	case c.Kind == KindDHCP:
		return 5
	}
	return 6
}

// usable reports whether a port may be put on switch name (see switchUUID).
func usable(want, have state.State, name string) bool {
	_, observed := have.Switches[name]
	w, desired := want.Switches[name]
	return observed || desired && w.Owned()
}

// checkApplied returns what is wrong with plan p for want and have, or "".
func checkApplied(want, have state.State, p Plan) string {
	// Order, and no change to a row that is not ours.
	for i := range p.Changes {
		c := &p.Changes[i]
		if i > 0 {
			prev := &p.Changes[i-1]
			if phase(prev) > phase(c) || phase(prev) == phase(c) && prev.Name >= c.Name {
				return fmt.Sprintf("change %d %c %s %q out of order after %c %s %q", i, c.Action, c.Kind, c.Name, prev.Action, prev.Kind, prev.Name)
			}
		}
		if c.Before != nil && !c.Before.Owned() && !adopts(c.After, c.Before) || c.SwitchBefore != nil && !c.SwitchBefore.Owned() {
			return fmt.Sprintf("change %c %s %q touches a row ovn-sync does not own", c.Action, c.Kind, c.Name)
		}
		if c.Action == Update && c.Kind == KindDHCP {
			if d := DiffDHCP(c.DHCPBefore, c.DHCPAfter); c.Fields != 0 || !d.CIDR && !d.Network && d.Set == nil && d.Remove == nil {
				return fmt.Sprintf("update %s %q has fields %v and changes %+v", c.Kind, c.Name, c.Fields, d)
			}
		} else if c.Action == Update {
			var f Fields
			if c.Kind == KindPort {
				f = portFields(c.After, c.Before)
				if c.Before.Switch != c.After.Switch {
					f |= FieldSwitch // adopted, or ours with no switch recorded
				}
			} else {
				f = switchFields(c.SwitchAfter, c.SwitchBefore)
			}
			if c.Fields == 0 || c.Fields != f {
				return fmt.Sprintf("update %s %q has fields %v, want exactly the differing %v", c.Kind, c.Name, c.Fields, f)
			}
		}
		if c.Kind == KindPort && c.Action != Update {
			sw := c.After
			if c.Action == Delete {
				sw = c.Before
			}
			if h, ok := have.Switches[sw.Switch]; ok && c.SwitchUUID != h.UUID || !ok && c.SwitchUUID != "" {
				return fmt.Sprintf("%c port %q has switch UUID %q for switch %q", c.Action, c.Name, c.SwitchUUID, sw.Switch)
			}
		}
	}

	res := p.ApplyTo(have)
	for name, h := range have.Ports.All() {
		if !h.Owned() && res.Ports.Get(name) != h && !adopts(want.Ports.Get(name), h) {
			return fmt.Sprintf("foreign port %q changed", name)
		}
	}
	for name, h := range have.Switches {
		if !h.Owned() && res.Switches[name] != h {
			return fmt.Sprintf("foreign switch %q changed", name)
		}
	}
	if q := Compute(want, res, Policy{WithholdDeletes: p.Withheld > 0}); !q.Empty() && !onlyStamps(q, p.Withheld) {
		return fmt.Sprintf("after the plan, Compute finds more to do:\n%s", q)
	}
	if p.Withheld > 0 {
		return ""
	}
	for name, w := range want.Ports.All() {
		h, observed := have.Ports.Lookup(name)
		r := res.Ports.Get(name)
		switch {
		case !w.Owned() || observed && !h.Owned() && !adopts(w, h):
			if r != h {
				return fmt.Sprintf("port %q: ownerless or colliding desired port was applied", name)
			}
		case !usable(want, have, w.Switch):
			if r != nil && r.Switch == w.Switch && !(observed && h.Switch == w.Switch) {
				return fmt.Sprintf("port %q put on unusable switch %q", name, w.Switch)
			}
		case r == nil || !r.Equal(w):
			return fmt.Sprintf("port %q = %+v, want %+v", name, r, w)
		case observed && (r.Switch == h.Switch || h.Switch == "" && have.Switches[w.Switch] != nil) && r.UUID != h.UUID:
			return fmt.Sprintf("port %q updated in place lost its UUID", name)
		}
	}
	for name, r := range res.Ports.All() {
		if _, ok := want.Ports.Lookup(name); r.Owned() && !ok {
			return fmt.Sprintf("owned port %q not in want survived", name)
		}
	}
	for name, w := range want.DHCP {
		if r := res.DHCP[name]; r == nil || !r.Equal(w) || have.DHCP[name] != nil && r.UUID != have.DHCP[name].UUID {
			return fmt.Sprintf("dhcp_options %q = %+v, want %+v (UUID kept)", name, r, w)
		}
	}
	for name, r := range res.DHCP {
		if _, ok := want.DHCP[name]; !ok && r.Owned() {
			return fmt.Sprintf("dhcp_options %q not in want survived", name)
		}
		if h := have.DHCP[name]; h != nil && !h.Owned() && r != h {
			return fmt.Sprintf("foreign dhcp_options %q changed", name)
		}
	}
	for name, w := range want.Switches {
		h, observed := have.Switches[name]
		if w.Owned() && (!observed || h.Owned()) && !res.Switches[name].Equal(w) {
			return fmt.Sprintf("switch %q = %+v, want %+v", name, res.Switches[name], w)
		}
	}
	used := map[string]bool{}
	for _, w := range want.Ports.All() {
		if w.Owned() {
			used[w.Switch] = true
		}
	}
	for _, r := range res.Ports.All() {
		if r.Owned() {
			used[r.Switch] = true
		}
	}
	for name, r := range res.Switches {
		if _, ok := want.Switches[name]; r.Owned() && !ok && !used[name] {
			return fmt.Sprintf("owned switch %q, not desired and without desired ports, survived", name)
		}
	}
	for name := range have.Switches {
		if _, ok := res.Switches[name]; !ok && used[name] {
			return fmt.Sprintf("switch %q deleted under a desired port", name)
		}
	}
	return ""
}

func TestCheckDeletes(t *testing.T) {
	plan := func(deletes, creates int) Plan {
		var p Plan
		for i := range deletes {
			p.Changes = append(p.Changes, Change{Action: Delete, Kind: KindPort, Name: fmt.Sprint("d", i)})
		}
		for i := range creates {
			p.Changes = append(p.Changes, Change{Action: Create, Kind: KindPort, Name: fmt.Sprint("c", i)})
		}
		// Switch deletes are not port deletes.
		p.Changes = append(p.Changes, Change{Action: Delete, Kind: KindSwitch, Name: "sw"})
		return p
	}
	for _, tt := range []struct {
		deletes, owned int
		max            float64
		want           string
	}{
		{0, 0, 0.5, ""},
		{20, 20, 0.5, ""}, // at the floor: always allowed
		{21, 1000, 0.5, ""},
		{500, 1000, 0.5, ""}, // exactly the fraction: allowed
		{501, 1000, 0.5, "refusing mass delete: would delete 501 of 1000 ports (50%), more than --max-delete-fraction 0.5; pass --allow-mass-delete to proceed"},
		{731, 1000, 0.5, "refusing mass delete: would delete 731 of 1000 ports (73%), more than --max-delete-fraction 0.5; pass --allow-mass-delete to proceed"},
		{21, 21, 0.5, "refusing mass delete: would delete 21 of 21 ports (100%), more than --max-delete-fraction 0.5; pass --allow-mass-delete to proceed"},
		{21, 0, 0.5, "refusing mass delete: would delete 21 of 0 ports (100%), more than --max-delete-fraction 0.5; pass --allow-mass-delete to proceed"},
		{1000, 1000, 1, ""},
		{21, 1000, 0, "refusing mass delete: would delete 21 of 1000 ports (2%), more than --max-delete-fraction 0; pass --allow-mass-delete to proceed"},
	} {
		err := plan(tt.deletes, 5).CheckDeletes(ownedPorts(tt.owned, "default"), tt.max)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrMassDelete) {
				t.Errorf("CheckDeletes(%d, %g) with %d deletes = %v, not an ErrMassDelete", tt.owned, tt.max, tt.deletes, err)
			}
		}
		if got != tt.want {
			t.Errorf("CheckDeletes(%d, %g) with %d deletes = %q, want %q", tt.owned, tt.max, tt.deletes, got, tt.want)
		}
	}
}

// ownedPorts returns a State of n ports of ours on network.
func ownedPorts(n int, network string) state.State {
	s := state.New(n)
	for i := range n {
		name := fmt.Sprint(network, i)
		s.Ports.Set(name, &state.Port{Name: name, Owner: "Pod/default/" + name, Network: network})
	}
	return s
}

// TestCheckDeletesPerNetwork: a pass deleting most of one network's ports
// is refused though it is a small part of all ports.
func TestCheckDeletesPerNetwork(t *testing.T) {
	have := ownedPorts(1000, "default")
	for name, p := range ownedPorts(30, "tenant/blue").Ports.All() {
		have.Ports.Set(name, p)
	}
	del := func(network string, n int) Plan {
		var p Plan
		for i := range n {
			name := fmt.Sprint(network, i)
			p.Changes = append(p.Changes, Change{Action: Delete, Kind: KindPort, Name: name, Before: have.Ports.Get(name)})
		}
		return p
	}
	err := del("tenant/blue", 25).CheckDeletes(have, 0.5)
	want := `refusing mass delete: would delete 25 of 30 ports of network "tenant/blue" (83%), more than --max-delete-fraction 0.5; pass --allow-mass-delete to proceed`
	if err == nil || err.Error() != want || !errors.Is(err, ErrMassDelete) {
		t.Errorf("CheckDeletes(25 of 30 on tenant/blue) = %v, want %q", err, want)
	}
	for _, p := range []Plan{del("tenant/blue", 15), del("default", 100)} {
		if err := p.CheckDeletes(have, 0.5); err != nil {
			t.Errorf("CheckDeletes(%d deletes) = %v, want nil", p.PortDeletes(), err)
		}
	}
}

func TestFields(t *testing.T) {
	var all []string
	for f := range (PortFields | SwitchFields).All() {
		col, key := f.Column()
		all = append(all, col+"/"+key)
	}
	want := []string{
		"addresses/", "port_security/", "options/requested-chassis", "options/activation-strategy",
		"external_ids/ovn-sync/owner", "external_ids/ovn-sync/network", "external_ids/ovn-sync/switch",
		"other_config/subnet", "other_config/ipv6_prefix", "other_config/exclude_ips",
		"dhcpv4_options/", "dhcpv6_options/",
	}
	if !slices.Equal(all, want) {
		t.Errorf("Column() of every field = %q, want %q", all, want)
	}
	if got := (FieldAddresses | FieldRequestedChassis).String(); got != "addresses,options:requested-chassis" {
		t.Errorf("Fields.String() = %q", got)
	}
	if col, key := (FieldAddresses | FieldOwner).Column(); col != "" || key != "" {
		t.Errorf("Column() of two fields = %q, %q, want nothing", col, key)
	}
}

// adopts reports whether desired port w takes over h, a port that is not
// ours, in place.
func adopts(w, h *state.Port) bool {
	return w != nil && h != nil && !h.Owned() && w.Owned() && w.Adopt() != "" && w.Adopt() == h.Vendor()
}

// onlyStamps reports whether q, the plan after one that withheld deletes,
// only records switches: a withheld move of a port of ours with no switch
// recorded, to a switch the first plan created, becomes an in-place update
// once the switch exists (which apply commits only if the switch holds the
// port).
func onlyStamps(q Plan, withheld int) bool {
	if withheld == 0 {
		return false
	}
	for _, c := range q.Changes {
		if c.Action != Update || c.Reason != reasonStamp {
			return false
		}
	}
	return true
}
