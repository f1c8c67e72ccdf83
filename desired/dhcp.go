package desired

import (
	"hash/fnv"
	"maps"
	"net"

	"github.com/ovn-sync/ovn-sync/state"
)

// Native DHCP (OVN's, answered by ovn-controller on the port's chassis).
//
// A network opts in: the config file's defaultNetwork.dhcp, a NAD config's
// "dhcp": true, a kube-ovn Subnet's spec.enableDHCP. Such a network has one
// DHCP_Options row per subnet family, named "<switch>/ipv4" and
// "<switch>/ipv6" (external_ids:ovn-sync/dhcp), owned like its switch, and
// each of its ports that holds an address of a family refers to that
// family's row (dhcpv4_options, dhcpv6_options), so the guest is offered
// exactly the address its port holds. A network without a subnet of a
// family has no row of it, and a network without IPAM has none.
//
// The options are kube-ovn's defaults, each replaced or extended by the
// network's own (dhcpV4Options, dhcpV6Options: "key=value,key=value"; an
// empty value removes a default):
//
//	IPv4: lease_time=3600, router=<gateway> (when the network has one),
//	      server_id=<gateway> (else 169.254.0.254), server_mac=<MAC of the switch>
//	IPv6: server_id=<MAC of the switch>
//
// The server MAC is derived from the switch name, so every pass, and every
// replica, writes the same one. A network's settings are read by package
// netconf (netconf.DHCP); this file turns them into rows.

// dhcpServerID is kube-ovn's server_id for a subnet without a gateway.
const dhcpServerID = "169.254.0.254"

var familyKey = [2]string{"ipv4", "ipv6"}

// dhcpName is the name of n's DHCP_Options row of family f, "" when n has
// none: DHCP off, or no subnet of that family.
func (n *network) dhcpName(f int) string {
	if !n.dhcp.Enabled || !n.fam[f].prefix.IsValid() {
		return ""
	}
	return n.sw + "/" + familyKey[f]
}

// serverMAC is the MAC ovn-controller answers DHCP from on switch sw: a
// locally administered unicast address hashed from the name.
func serverMAC(sw string) string {
	h := fnv.New64a()
	h.Write([]byte(sw))
	s := h.Sum64()
	return net.HardwareAddr{0x02, byte(s >> 32), byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}.String()
}

// dhcpValue is n's DHCP_Options row of family f; dhcpName(f) must not be "".
func (n *network) dhcpValue(f int) *state.DHCPOptions {
	fam := &n.fam[f]
	opts := map[string]string{"server_id": serverMAC(n.sw)}
	over := n.dhcp.V6
	if f == ipv4 {
		over = n.dhcp.V4
		opts = map[string]string{"lease_time": "3600", "server_id": dhcpServerID, "server_mac": serverMAC(n.sw)}
		if fam.gateway.IsValid() {
			opts["router"] = fam.gateway.String()
			opts["server_id"] = fam.gateway.String()
		}
	}
	for k, v := range over {
		if v == "" {
			delete(opts, k)
		} else {
			opts[k] = v
		}
	}
	return &state.DHCPOptions{Name: n.dhcpName(f), Owner: n.owner, Network: n.key, CIDR: fam.prefix.String(), Options: opts}
}

// emitDHCP adds n's DHCP_Options rows to want.
func (b *builder) emitDHCP(n *network) {
	for f := range n.fam {
		if name := n.dhcpName(f); name != "" {
			b.want.DHCP[name] = n.dhcpValue(f)
		}
	}
}

// needDHCP keeps the DHCP_Options row a kept port refers to, as it is:
// the port's network is unknown, and so is whether its DHCP changed.
func (b *builder) needDHCP(name string) {
	if name == "" {
		return
	}
	if _, ok := b.want.DHCP[name]; ok {
		return
	}
	if hd := b.have.DHCP[name]; hd != nil {
		c := *hd
		c.UUID = ""
		c.Options = maps.Clone(hd.Options)
		b.want.DHCP[name] = &c
	}
}

// dhcpRef is where r holds a port's reference to the DHCP_Options row of
// family f.
func dhcpRef(r *state.Rare, f int) *string {
	if f == ipv4 {
		return &r.DHCPv4
	}
	return &r.DHCPv6
}

// keepForeignDHCP keeps the port's reference of family f to a DHCP_Options
// row that is not ovn-sync's (kube-ovn's, on a port adopted from it, or
// one set by hand) when its network has no DHCP of that family: the row is
// not ours, and neither is the guest's lease to take away. A network with
// DHCP refers to its own row instead.
func (b *builder) keepForeignDHCP(s *portSpec, r *state.Rare, f int) {
	if s.have == nil || *dhcpRef(r, f) != "" {
		return
	}
	v := s.have.DHCPv4()
	if f != ipv4 {
		v = s.have.DHCPv6()
	}
	if v != "" && b.have.DHCP[v] == nil {
		*dhcpRef(r, f) = v
	}
}
