package observed

import (
	"slices"
	"strings"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed/portview"
	"github.com/ovn-sync/ovn-sync/state"
)

// tables are the tables a snapshot is read from: the view's load of the
// ports, the cache's switches and DHCP_Options.
type tables struct {
	ports          *portview.Table
	switches, dhcp *cache.RowCache
}

// refSource is the row, as the view holds it, that the conversion of a
// port referring to a DHCP_Options row was made from, and the dhcpGen it
// was made in.
type refSource struct {
	row *state.Port
	gen uint64
}

type memoSwitch struct {
	row model.Model
	sw  *state.Switch
}

// State returns a snapshot of the switches and ports in the cache, with its
// Index. It is safe to call concurrently with cache updates. The snapshot is
// shared: while the cache does not change, every call returns the same one,
// so callers must not modify it (Clone it to make changes).
//
// The snapshot follows the cache by the time libovsdb takes to run its
// event handlers; a pass computed from a snapshot that trails the NB fails
// its transaction (apply.ErrStale) and is computed again.
func (nb *NB) State() state.State {
	s, _ := nb.StateVersion()
	return s
}

// StateVersion is State with the snapshot's version: two calls return the
// same version only if they return the same snapshot, so the version can
// tell whether anything changed between two.
//
// A call costs what changed since the previous one: the rows the cache's
// event handler reported are read again, and the snapshot's Ports map and
// Index are copied, never changed, as the previous snapshot holds them.
// Every row is read when which rows changed is not known: at the first
// call, after the cache was purged (a reconnect) or dropped an event, and
// when many rows changed.
func (nb *NB) StateVersion() (state.State, uint64) {
	return nb.stateOf(nb.tables())
}

// tables returns the tables a snapshot is read from now.
func (nb *NB) tables() tables {
	tc := nb.client.Cache()
	return tables{nb.view.Table(), tc.Table(nbdb.LogicalSwitchTable), tc.Table(nbdb.DHCPOptionsTable)}
}

// stateOf is StateVersion reading t, the cache's tables now.
func (nb *NB) stateOf(t tables) (state.State, uint64) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	ch := nb.changed.take()
	if !ch.all && t == nb.read && len(ch.ports) == 0 && len(ch.switches) == 0 && !ch.dhcp {
		return nb.last, nb.version
	}
	nb.version++
	var names []string
	ok := false
	if !ch.all && t == nb.read {
		names, ok = nb.update(t, ch)
	}
	if !ok {
		nb.read = t
		nb.rebuild(t)
		nb.knownFrom, nb.changedAt, nb.changedNames = nb.version, nil, 0
		return nb.last, nb.version
	}
	nb.changedAt = append(nb.changedAt, names)
	nb.changedNames += len(names)
	for len(nb.changedAt) > maxChangedVersions || nb.changedNames > maxChangedNames {
		nb.changedNames -= len(nb.changedAt[0])
		nb.changedAt[0] = nil
		nb.changedAt = nb.changedAt[1:]
		nb.knownFrom++
	}
	return nb.last, nb.version
}

// ChangedPorts kept: the names of the last maxChangedVersions snapshots,
// at most maxChangedNames in all (a pass asks about the last few).
const (
	maxChangedVersions = 1024
	maxChangedNames    = 1 << 16
)

// ChangedPorts returns the names of the ports whose rows changed between
// the snapshots StateVersion handed out as versions from and to: every
// port the snapshot of to holds otherwise than that of from holds it
// (added, changed or gone, renamed under either name) is named, and a
// name may come more than once. ok is false when that is not known: a
// snapshot after from read every row (the first, after a reconnect or a
// dropped event, when many rows changed), from is older than the changes
// kept, or to is not a version handed out yet. A caller diffing against
// the snapshot of to uses it to look only at what changed since it diffed
// the snapshot of from.
func (nb *NB) ChangedPorts(from, to uint64) (names []string, ok bool) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	if from > to || from < nb.knownFrom || to > nb.version {
		return nil, false
	}
	for v := from + 1; v <= to; v++ {
		names = append(names, nb.changedAt[v-nb.knownFrom-1]...)
	}
	return names, true
}

// rebuild sets nb.last to a snapshot of every row of t. Rows whose
// conversion nb holds are not converted again.
func (nb *NB) rebuild(t tables) {
	nb.rebuilds++
	switchRows := t.switches.RowsShallow()

	n := nb.view.Len()
	s := state.State{Ports: state.NewPorts(n)}
	s.DHCP, _ = nb.readDHCP(t.dhcp)
	// The view replaces a row when it changes, so an unchanged pointer
	// means an unchanged row and its conversion is reused.
	ports := make(map[string]*state.Port, n)
	refs := map[string]refSource{}
	idx := make(state.Entries, 0, n)
	nb.read.ports = nb.view.Each(func(uuid string, row *state.Port) {
		var e state.Entry
		p, ok := nb.ports[uuid]
		if ok && nb.current(uuid, p, row) {
			if src, ref := nb.refs[uuid]; ref {
				refs[uuid] = src
			}
			if e, ok = nb.last.Index.Entry(p); !ok {
				e = state.EntryOf(p)
			}
		} else {
			e = nb.convertPort(refs, uuid, row)
		}
		ports[uuid] = e.Port
		s.Ports.Set(e.Port.Name, e.Port)
		idx = append(idx, e)
	})
	nb.ports, nb.refs = ports, refs
	// Logical_Switch_Port.name is a unique index in the NB schema, so every
	// row has its own entry in s.Ports and s.Index lists each once.
	idx.Sort()
	s.Index = state.IndexOf(idx)
	switches := make(map[string]memoSwitch, len(switchRows))
	for uuid, row := range switchRows {
		m, ok := nb.switches[uuid]
		if !ok || m.row != row {
			m = memoSwitch{row: row, sw: SwitchFromRow(row.(*nbdb.LogicalSwitch))}
		}
		switches[uuid] = m
	}
	nb.switches = switches
	s.Switches = switchesByName(switches)
	nb.last = s
}

// update sets nb.last to the previous snapshot with the rows in ch read
// again from t, and returns the names of the ports it read again (before
// and after); ch.all is not set. The maps and Index of the previous
// snapshot, which callers may hold, are replaced, not changed. It returns
// false, and nb.last is not set, when so many ports changed that rebuild is
// cheaper, and when the ports have fewer names than rows (an update that
// renames one port and gives its name to another, read half applied): only
// rebuild gives the snapshot it would then. The conversions update made
// are current, and rebuild reuses what it can of them.
//
// The DHCP_Options rows are read first: a port referring to one whose
// name changed is among the ports read again.
func (nb *NB) update(t tables, ch changes) ([]string, bool) {
	if len(ch.ports) > 1024 && 4*len(ch.ports) > len(nb.ports) || nb.view.Table() != t.ports {
		return nil, false
	}
	s := nb.last
	if ch.dhcp {
		s.DHCP, ch.ports = nb.updateDHCP(t.dhcp, ch.ports)
	}
	if ch.refs {
		for uuid := range nb.refs {
			ch.ports = addUUID(ch.ports, uuid)
		}
	}
	names, ok := nb.updatePorts(&s, t.ports, ch.ports)
	if !ok {
		return nil, false
	}
	if len(ch.switches) > 0 {
		s.Switches = nb.updateSwitches(t.switches, ch.switches)
	}
	nb.last = s
	return names, true
}

// updateDHCP is update's step for the DHCP_Options rows: it reads our rows
// of table again and returns them by name, with ports (the UUIDs of the
// ports to read again) holding those referring to a row whose name
// changed. The other ports' conversions stand for the new names too.
func (nb *NB) updateDHCP(table *cache.RowCache, ports map[string]struct{}) (map[string]*state.DHCPOptions, map[string]struct{}) {
	byName, renamed := nb.readDHCP(table)
	for uuid, src := range nb.refs {
		if r := src.row; r.DHCPv4() != "" && renamed[r.DHCPv4()] || r.DHCPv6() != "" && renamed[r.DHCPv6()] {
			ports = addUUID(ports, uuid)
		} else {
			src.gen = nb.dhcpGen
			nb.refs[uuid] = src
		}
	}
	return byName, ports
}

// updatePorts is update's step for the ports: it reads the rows uuids of
// table again into s.Ports and s.Index, copies of the previous snapshot's
// once one changed, and returns the names of the ports it read again
// (before and after). It returns false when the ports have fewer names
// than rows.
func (nb *NB) updatePorts(s *state.State, table *portview.Table, uuids map[string]struct{}) ([]string, bool) {
	cloned := false
	var del, ins []state.Entry
	var names []string
	for uuid := range uuids {
		// Row returns the row, or nil once it is deleted.
		r := nb.view.Row(table, uuid)
		old, had := nb.ports[uuid]
		switch {
		case !had && r == nil:
			continue // inserted and deleted since the last snapshot
		case had && r != nil && nb.current(uuid, old, r):
			continue // as converted: a snapshot read the row before its event came
		}
		if !cloned {
			s.Ports, cloned = s.Ports.Clone(), true
		}
		if had {
			e, ok := s.Index.Entry(old)
			if !ok {
				return nil, false // not as last holds it: rebuild reads every row
			}
			if s.Ports.Get(old.Name) == old {
				s.Ports.Delete(old.Name)
			}
			names = append(names, old.Name)
			del = append(del, e)
			delete(nb.ports, uuid)
			delete(nb.refs, uuid)
		}
		if r != nil {
			e := nb.convertPort(nb.refs, uuid, r)
			nb.ports[uuid] = e.Port
			s.Ports.Set(e.Port.Name, e.Port)
			ins = append(ins, e)
			if !had || r.Name != names[len(names)-1] {
				names = append(names, r.Name)
			}
		}
	}
	if !cloned {
		return names, true
	}
	s.Index = s.Index.Patch(del, ins)
	// A port's entry in s.Ports is deleted only when it is that port's,
	// and each port is set under its name: s.Ports has as many entries as
	// there are rows only when no two rows share a name, and then it is
	// what rebuild makes.
	return names, s.Ports.Len() == len(nb.ports)
}

// updateSwitches is update's step for the switches: it reads the rows
// uuids of table again and returns every switch by name. Switches are few
// (one per network): their map is built anew.
func (nb *NB) updateSwitches(table *cache.RowCache, uuids map[string]struct{}) map[string]*state.Switch {
	for uuid := range uuids {
		if r, ok := table.Row(uuid).(*nbdb.LogicalSwitch); ok {
			nb.switches[uuid] = memoSwitch{row: r, sw: SwitchFromRow(r)}
		} else {
			delete(nb.switches, uuid)
		}
	}
	return switchesByName(nb.switches)
}

// convertPort returns the index entry of the row uuid, r, converted with
// the DHCP_Options names nb holds now, and notes in refs what it was
// converted from when r refers to a DHCP_Options row. A row without
// references is the snapshot's port as it is: it is not copied.
func (nb *NB) convertPort(refs map[string]refSource, uuid string, r *state.Port) state.Entry {
	if r.DHCPv4() != "" || r.DHCPv6() != "" {
		refs[uuid] = refSource{row: r, gen: nb.dhcpGen}
	}
	return state.EntryOf(namePort(r, func(uuid string) string { return nb.dhcpNames[uuid] }, &nb.rares))
}

// current reports whether p, the conversion nb holds of the port row
// uuid, is that of r with the DHCP_Options names nb holds now: the view
// replaces a row when it changes, so an unchanged pointer means an
// unchanged row.
func (nb *NB) current(uuid string, p, r *state.Port) bool {
	if src, ref := nb.refs[uuid]; ref {
		return src.row == r && src.gen == nb.dhcpGen
	}
	return p == r
}

// readDHCP reads our DHCP_Options rows of table (nil reads none), sets
// nb.dhcpNames to their names and returns them by name, with the UUIDs
// whose name changed (one named before or now, and not the same).
// DHCP_Options rows are few (one per subnet and family): they are read
// whole every time one changes.
func (nb *NB) readDHCP(table *cache.RowCache) (map[string]*state.DHCPOptions, map[string]bool) {
	// Two rows of one name (an insert retried after its reply was lost)
	// are both ours: the lower UUID keeps the name, the other is read as
	// "<name>#<uuid>", which no pass desires, so the next plan deletes it.
	byName, names := map[string]*state.DHCPOptions{}, map[string]string{}
	if table != nil {
		var rows []*state.DHCPOptions
		for _, row := range table.RowsShallow() {
			if d := DHCPFromRow(row.(*nbdb.DHCPOptions)); d != nil {
				rows = append(rows, d)
			}
		}
		slices.SortFunc(rows, func(a, b *state.DHCPOptions) int { return strings.Compare(a.UUID, b.UUID) })
		for _, d := range rows {
			if _, dup := byName[d.Name]; dup {
				c := *d
				c.Name = d.Name + "#" + d.UUID
				d = &c
			}
			byName[d.Name] = d
			names[d.UUID] = d.Name
		}
	}
	renamed := map[string]bool{}
	for uuid, n := range names {
		if nb.dhcpNames[uuid] != n {
			renamed[uuid] = true
		}
	}
	for uuid := range nb.dhcpNames {
		if _, ok := names[uuid]; !ok {
			renamed[uuid] = true
		}
	}
	if len(renamed) > 0 {
		nb.dhcpNames = names
		nb.dhcpGen++
	}
	return byName, renamed
}

// switchesByName returns the switches of memo by name. Logical_Switch.name
// is not unique in the NB schema: of two switches of one name, the one of
// the lower UUID is read.
func switchesByName(memo map[string]memoSwitch) map[string]*state.Switch {
	out := make(map[string]*state.Switch, len(memo))
	for _, m := range memo {
		if o := out[m.sw.Name]; o == nil || m.sw.UUID < o.UUID {
			out[m.sw.Name] = m.sw
		}
	}
	return out
}
