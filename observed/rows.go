package observed

import (
	"cmp"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// namePort returns the view's row r with its references named by name:
// r itself when it has none or none is named, a copy otherwise, whose rare
// fields rares hands out.
func namePort(r *state.Port, name func(uuid string) string, rares *state.Rares) *state.Port {
	if r == nil || r.DHCPv4() == "" && r.DHCPv6() == "" {
		return r
	}
	rr := r.Rare()
	if rr.DHCPv4 != "" {
		rr.DHCPv4 = cmp.Or(name(rr.DHCPv4), rr.DHCPv4)
	}
	if rr.DHCPv6 != "" {
		rr.DHCPv6 = cmp.Or(name(rr.DHCPv6), rr.DHCPv6)
	}
	if rr.DHCPv4 == r.DHCPv4() && rr.DHCPv6 == r.DHCPv6() {
		return r
	}
	p := *r
	p.SetRare(rares.Of(rr))
	return &p
}

// DHCPFromRow converts a DHCP_Options row into a state.DHCPOptions, or
// returns nil when the row is not ovn-sync's (no external_ids:ovn-sync/owner
// or no ovn-sync/dhcp name).
func DHCPFromRow(r *nbdb.DHCPOptions) *state.DHCPOptions {
	owner, name := r.ExternalIDs[state.KeyOwner], r.ExternalIDs[state.KeyDHCP]
	if owner == "" || name == "" {
		return nil
	}
	return &state.DHCPOptions{Name: name, UUID: r.UUID, Owner: owner, Network: r.ExternalIDs[state.KeyNetwork],
		CIDR: r.Cidr, Options: r.Options}
}

// SwitchFromRow converts an NB row into a state.Switch: its name, UUID and
// every field of state.Fields that switches have.
func SwitchFromRow(r *nbdb.LogicalSwitch) *state.Switch {
	s := &state.Switch{Name: r.Name, UUID: r.UUID}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.SwitchKey != nil {
			if c := switchMap(r, f.Column); c != nil {
				*f.SwitchKey(s) = (*c)[f.Key]
			}
		}
	}
	return s
}

// switchMap returns where a row model keeps the column a field of
// state.Fields names, which is where the switches' monitor asks for it
// (switchColumns) and where SwitchFromRow reads it; nil for a column it
// does not know, which observed's tests catch. (The port view reads ports
// from the wire: package portview.)
func switchMap(r *nbdb.LogicalSwitch, column string) *map[string]string {
	switch column {
	case "external_ids":
		return &r.ExternalIDs
	case "other_config":
		return &r.OtherConfig
	}
	return nil
}

// switchColumns returns the fields of ls that the monitor asks for: the
// name and each column of state.Fields that switches have, once.
func switchColumns(ls *nbdb.LogicalSwitch) []any {
	cols := []any{&ls.Name}
	seen := map[string]bool{}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.SwitchKey != nil && !seen[f.Column] {
			cols = append(cols, switchMap(ls, f.Column))
			seen[f.Column] = true
		}
	}
	return cols
}
