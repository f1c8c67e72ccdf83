package observed

import (
	"cmp"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// portFromRow converts an NB row into a state.Port: its name, UUID,
// dynamic_addresses and vendor keys (external_ids:vendor and :ls), and every
// field of state.Fields that ports have, references as the referenced
// rows' UUIDs. It reads a row of libovsdb's generic cache as the port view
// reads it from the wire, for the tests to compare the two.
func portFromRow(r *nbdb.LogicalSwitchPort) *state.Port {
	return portFromRowNamed(r, func(string) string { return "" })
}

// portFromRowNamed is portFromRow with references to a row name gives a
// name for (one of ovn-sync's DHCP_Options rows) held as that name.
func portFromRowNamed(r *nbdb.LogicalSwitchPort, name func(uuid string) string) *state.Port {
	p := &state.Port{Name: r.Name, UUID: r.UUID}
	for i := range state.Fields {
		switch f := &state.Fields[i]; {
		case f.Ref != "":
			if c := portRef(r, f.Column); c != nil && *c != nil {
				f.SetPortKey(p, cmp.Or(name(**c), **c))
			}
		case f.PortSet != nil:
			if c := portSet(r, f.Column); c != nil {
				*f.PortSet(p) = *c
			}
		case f.PortKey != nil:
			if c := portMap(r, f.Column); c != nil {
				f.SetPortKey(p, (*c)[f.Key])
			}
		}
	}
	return p.EditRare(func(rare *state.Rare) {
		if r.DynamicAddresses != nil {
			rare.DynamicAddresses = *r.DynamicAddresses
		}
		// external_ids is monitored for our keys; kube-ovn's two are read
		// from it too, for adoption.
		if v := r.ExternalIDs[state.KeyVendor]; v != "" {
			rare.Vendor, rare.VendorSwitch = v, r.ExternalIDs[state.KeyVendorSwitch]
		}
	})
}

// portSet, portRef and portMap return where a row model keeps the column
// a field of state.Fields names, for portFromRowNamed; nil for a column
// they do not know.
func portSet(r *nbdb.LogicalSwitchPort, column string) *[]string {
	switch column {
	case "addresses":
		return &r.Addresses
	case "port_security":
		return &r.PortSecurity
	}
	return nil
}

func portRef(r *nbdb.LogicalSwitchPort, column string) **string {
	switch column {
	case "dhcpv4_options":
		return &r.Dhcpv4Options
	case "dhcpv6_options":
		return &r.Dhcpv6Options
	}
	return nil
}

func portMap(r *nbdb.LogicalSwitchPort, column string) *map[string]string {
	switch column {
	case "options":
		return &r.Options
	case "external_ids":
		return &r.ExternalIDs
	}
	return nil
}
