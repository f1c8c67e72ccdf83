package diff

import "github.com/ovn-sync/ovn-sync/state"

// ComputePorts returns Compute(want, have, p) for want and have that agree
// on every port not named in ports, looking only at the ports named (and,
// as Compute, at every switch and DHCP_Options row, which are few).
//
// Two states agree on a port when Compute plans nothing for it and has
// nothing to say about it: both hold it, equal and ours, or only have
// holds it and it is not ours. A port Compute would create, update, move,
// delete, withhold or name in a Notice must be named; the caller finds
// those as the ports whose desired or observed row changed since a plan
// that named every such port, plus the ports that plan named (a port is
// in a plan's Changes or Notices, a withheld delete is not: after a plan
// that withheld any, use Compute). A name named twice, or held by neither
// state, costs a lookup and nothing more.
//
// What Compute decides across ports comes out the same: a switch of ours
// to delete on which ports of ours stay is kept, as Compute keeps it, by
// a walk over every port of want and have (as Compute does, only when a
// switch is to be deleted); a port's move, the collision of its name and
// its switch recorded are decided on that port alone.
func ComputePorts(want, have state.State, p Policy, ports []string) Plan {
	var c computer
	c.policy = p
	c.want, c.have = want, have
	c.switches()
	c.dhcp()
	seen := make(map[string]struct{}, len(ports))
	for _, name := range ports {
		if _, ok := seen[name]; ok {
			continue
		}
		seen[name] = struct{}{}
		c.port(want.Ports.Get(name), have.Ports.Get(name))
	}
	c.keepUsedSwitches()
	if p.WithholdDeletes {
		c.withheld += len(c.switchDeletes) + len(c.dhcpDeletes)
		c.switchDeletes, c.dhcpDeletes = nil, nil
	}
	return c.plan()
}

// port decides one port as the index walk of ports does: w and h are the
// desired and observed ports of one name, either nil when that state lacks
// it.
func (c *computer) port(w, h *state.Port) {
	switch {
	case w == nil && h == nil:
	case w == nil:
		if h.Owned() {
			c.fromHave(h)
		}
	case h == nil:
		c.fromWant(w)
	case w.Sum() != h.Sum() || !w.Owned():
		if h.Owned() {
			c.fromHave(h)
		}
		c.fromWant(w)
	}
}

// PortNames returns the names of the ports p changes or names in a
// Notice, each once, in the order of p: what ComputePorts must be given
// of a plan computed before (see there).
func (p Plan) PortNames() []string {
	var names []string
	seen := map[string]bool{}
	add := func(kind Kind, name string) {
		if kind == KindPort && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for i := range p.Changes {
		add(p.Changes[i].Kind, p.Changes[i].Name)
	}
	for _, n := range p.Notices {
		add(n.Kind, n.Name)
	}
	return names
}
