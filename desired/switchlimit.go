package desired

import (
	"fmt"
	"slices"
)

// MaxSwitchPorts is how many ports of one logical switch OVN can bind.
// northd gives every port of a switch a tunnel key of 15 bits: ovn-nb(5)
// documents a Logical_Switch_Port's options:requested-tnl-key as "in range
// 1 to 32767", and northd leaves a port past that unbound ("all port
// tunnel ids exhausted"), its pod or VM without a network. Build never
// writes a port that would make a switch hold more.
const MaxSwitchPorts = 32767

// portLimit is the most ports Build puts on one switch: MaxSwitchPorts,
// or in tests cfg's own.
func (c *Config) portLimit() int {
	if c.switchPorts > 0 {
		return c.switchPorts
	}
	return MaxSwitchPorts
}

// switchPorts is Result.SwitchPorts: on each switch, the ports of want
// (refs) and those of others counted there (foreign).
func switchPorts(refs, foreign map[string]int) map[string]int {
	n := make(map[string]int, len(refs)+len(foreign))
	for sw, k := range refs {
		n[sw] += k
	}
	for sw, k := range foreign {
		n[sw] += k
	}
	return n
}

// newOnSwitch reports whether s's port would be a port its switch does not
// hold yet: one that is built and has no port of its own on that switch.
func (b *builder) newOnSwitch(s *portSpec) bool {
	return s.state == specBuild && (s.have == nil || s.have.Switch != s.net.sw)
}

// limitPorts holds every switch to what OVN binds (the config's
// portLimit): a port new on a switch is written only while the switch has
// room, older owners first (comparePriority). A port a switch holds is
// never removed to make room. An owner refused keeps the port it has on
// another switch, if any, and a SwitchFull Problem names the network and
// the limit; if ports of ours leave the switch in this pass, Result.Again
// asks for a pass once they have.
//
// A full Build counts the switch's ports in have (scope.haveOurs,
// scope.foreign). An incremental one counts the last result's ports and
// the others' ports the last full Build counted (scope.refs,
// scope.foreign), and gives up where the switch would pass the limit:
// which owners get its last ports is for a full Build to decide.
func (b *builder) limitPorts() {
	limit := b.cfg.portLimit()
	// Fewer ports in all than one switch can hold: none can be full.
	if b.have.Ports.Len()+len(b.specs) <= limit {
		return
	}
	var fresh []*portSpec
	adds := map[string]int{}
	for _, s := range b.specs {
		if b.newOnSwitch(s) {
			fresh = append(fresh, s)
			adds[s.net.sw]++
		}
	}
	if !b.scope.all {
		for sw, n := range adds {
			if b.scope.refs[sw]+b.scope.foreign[sw]+n > limit {
				b.scope.abort(Why{ReasonSwitchFull, fmt.Sprintf("switch %s would hold more than %d ports", sw, limit)})
			}
		}
		return
	}
	if len(fresh) == 0 {
		return
	}
	// have's ports on each switch, as the scope counted them: a port this
	// Build adopts is counted among the others'; adoption keeps its
	// switch, so each switch's total is the same.
	occupied := switchPorts(b.scope.haveOurs, b.scope.foreign)
	// Only the switches the new ports would take past the limit choose.
	fresh = slices.DeleteFunc(fresh, func(s *portSpec) bool {
		return occupied[s.net.sw]+adds[s.net.sw] <= limit
	})
	slices.SortFunc(fresh, comparePriority)
	refused := false
	left := map[string]bool{} // switches already asked whether ports leave
	for _, s := range fresh {
		sw := s.net.sw
		if occupied[sw] < limit {
			occupied[sw]++
			continue
		}
		refused = true
		s.state = specFailed
		b.ownerProblem(s.o, "SwitchFull", fmt.Sprintf("port %q is not created: %s's switch %q holds %d ports, "+
			"the most OVN binds on one switch (%d)", s.name, b.networkName(s.net), sw, occupied[sw], limit))
		if !left[sw] {
			left[sw] = true
			if b.leaving(sw) {
				b.again = true
			}
		}
	}
	if refused {
		b.pending = slices.DeleteFunc(b.pending, func(s *portSpec) bool { return s.state != specBuild })
		b.moved = slices.DeleteFunc(b.moved, func(s *portSpec) bool { return s.state != specBuild })
	}
}

// leaving reports whether a port of ours on switch sw in have is not
// wanted there: it goes in this pass and makes room.
func (b *builder) leaving(sw string) bool {
	for _, p := range b.have.Ports.All() {
		if !p.Owned() || p.Switch != sw {
			continue
		}
		s := b.specNamed(p.Name)
		if s == nil || s.o.id != p.Owner || s.state == specDropped || s.state == specEvicted ||
			(s.state == specBuild && s.net.sw != sw) {
			return true
		}
	}
	return false
}

// networkName names n for messages: "the default network",
// "NetworkAttachmentDefinition ns/name", "Subnet name".
func (b *builder) networkName(n *network) string {
	if o := b.switchOwner[n.sw]; o != "" {
		return o
	}
	return "network " + n.key
}
