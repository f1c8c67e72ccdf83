package desired

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/ipam"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// Switch owners (external_ids:ovn-sync/owner on Logical_Switch).
const (
	ownerDefaultSwitch = "ovn-sync"
	ownerNADPrefix     = "NetworkAttachmentDefinition/"
	kindNAD            = state.KindNetworkAttachmentDefinition
	providerDefault    = netconf.ProviderDefault
	providerSuffix     = netconf.ProviderSuffix
)

// network is one logical network ovn-sync allocates on: the default network
// or a managed NetworkAttachmentDefinition.
type network struct {
	key      string // state.DefaultNetwork or "<nadns>/<nad>"
	provider string // "ovn" or "<nad>.<nadns>.ovn"
	sw       string // logical switch name
	swID     uint32
	owner    string // the switch's external_ids:ovn-sync/owner when we create it
	// fam holds the IPv4 and the IPv6 side (see ipv4, ipv6).
	fam [2]family
	// gateway is the network's gateways as published ("10.16.0.1" or
	// "10.16.0.1,fd00:10:16::1"), "" when it has none; subnets its
	// subnets as published (cidr), each a port's facts read.
	gateway, subnets string
	// dhcp is the network's native DHCP (dhcp.go).
	dhcp netconf.DHCP
}

// The indexes of network.fam, portSpec.ip and requested.ip, and the names
// of the families: netconf's, under the short names the builder uses.
const (
	ipv4 = netconf.IPv4
	ipv6 = netconf.IPv6
)

var familyName = netconf.FamilyName

// familyOf returns the index of a's family.
func familyOf(a netip.Addr) int { return netconf.FamilyOf(a) }

// family is one address family of a network.
type family struct {
	// prefix is invalid when the network lacks the family.
	prefix netip.Prefix
	// usable is the range a port may hold: the prefix without its network
	// and broadcast addresses (see netconf.Usable).
	usable netconf.IPRange
	// gateway is reserved for the network's router: never a port's.
	gateway netip.Addr
	// excl is never handed out and never granted to a request: merged, sorted.
	excl []netconf.IPRange
	// first is, for IPv4 on a switch with other_config:subnet, the
	// subnet's first address, which northd's IPAM marks taken whatever
	// exclude_ips says (init_ipam_ipv4): a port of ours on it makes northd
	// log "Duplicate IP set". It is never handed out nor granted to a new
	// request; a port that holds it keeps it, as an excluded address.
	first netip.Addr
	// pool is created on first dynamic allocation.
	pool *ipam.Pool
}

func newNetwork(key, provider, sw, owner string, subnets []netip.Prefix, exclude []netconf.IPRange, gateways []netip.Addr) *network {
	n := &network{key: key, provider: provider, sw: sw, owner: owner}
	for _, p := range subnets {
		f := &n.fam[familyOf(p.Addr())]
		f.prefix = p
		f.usable.From, f.usable.To = netconf.Usable(p)
		f.excl = addr.MergeRanges(exclude, p.Addr().Is4())
	}
	var gw []string
	for _, g := range gateways {
		if f := &n.fam[familyOf(g)]; f.prefix.IsValid() && !f.gateway.IsValid() {
			f.gateway = g
			gw = append(gw, g.String())
		}
	}
	n.gateway = strings.Join(gw, ",")
	var parts []string
	for _, f := range n.fam {
		if f.prefix.IsValid() {
			parts = append(parts, f.prefix.String())
		}
	}
	n.subnets = strings.Join(parts, ",")
	return n
}

// excluded reports whether a is in one of f's excluded ranges.
func (f *family) excluded(a netip.Addr) bool {
	i, _ := slices.BinarySearchFunc(f.excl, a, func(r netconf.IPRange, a netip.Addr) int {
		if r.To.Less(a) {
			return -1
		}
		if a.Less(r.From) {
			return 1
		}
		return 0
	})
	return i < len(f.excl) && addr.InRange(f.excl[i], a)
}

// reservedByOVN says why a port of ours should not be given a, though it
// may keep it: excluded, or the first address northd marks taken; "" when
// neither.
func (f *family) reservedByOVN(a netip.Addr, key string) string {
	switch {
	case f.excluded(a):
		return "is excluded from allocation on network " + key + " (never handed out)"
	case a == f.first:
		return "is the first address of the switch's subnet, which OVN's northd reserves (never handed out)"
	}
	return ""
}

// northdHeld reports whether northd's IPAM marks a taken on the switch of
// f before it reads the ports' addresses: the subnet's first address, or
// one of exclude_ips. A port of ours holding such an address makes northd
// log "Duplicate IP set": exclude_ips leaves out those our ports hold.
func (f *family) northdHeld(a netip.Addr) bool {
	return a.Is4() && f.prefix.IsValid() && (a == f.first || f.excluded(a) || a == f.gateway)
}

// unusable says why a can never be a port's address on n, or returns "":
// no subnet of its family, outside it, the network or broadcast address,
// or the gateway. Excluded addresses are checked by the caller: a port that
// already holds one keeps it.
func (n *network) unusable(a netip.Addr) string {
	f := &n.fam[familyOf(a)]
	switch {
	case n.noIPAM() && !a.IsGlobalUnicast():
		return fmt.Sprintf("network %s has no subnets (no IPAM): a static address must be a unicast address", n.key)
	case n.noIPAM():
		return ""
	case !f.prefix.IsValid():
		return fmt.Sprintf("network %s has no %s subnet", n.key, familyName[familyOf(a)])
	case !f.prefix.Contains(a):
		return "not in subnet " + f.prefix.String()
	case !addr.InRange(f.usable, a):
		return netconf.Reserved(f.prefix, a)
	case a == f.gateway:
		return "is the gateway of network " + n.key
	}
	return ""
}

// noIPAM reports whether n has no subnets: an ovn-kubernetes layer2
// network whose guests bring their own addressing. Its ports hold a MAC,
// and the IPs requested for them (any unicast address, as ovn-kubernetes
// allows static IPs only on such networks); nothing is allocated.
func (n *network) noIPAM() bool {
	return !n.fam[ipv4].prefix.IsValid() && !n.fam[ipv6].prefix.IsValid()
}

// cidr is the network's subnets as published ("10.16.0.0/16,fd00:10:16::/64").
func (n *network) cidr() string { return n.subnets }

// switchValue is the Logical_Switch ovn-sync wants for n when it owns it.
//
// held lists the IPv4 addresses ports of ours on the switch hold that
// northd would mark taken (northdHeld), sorted: exclude_ips leaves them out,
// as northd holds a port's static address for it anyway, and a port on an
// excluded address (a request kube-ovn granted, one excluded later) would
// make northd log "Duplicate IP set" for it.
func (n *network) switchValue(held []netip.Addr) *state.Switch {
	s := &state.Switch{Name: n.sw, Owner: n.owner, Network: n.key}
	if p := n.fam[ipv4].prefix; p.IsValid() {
		s.Subnet = p.String()
	}
	if p := n.fam[ipv6].prefix; p.IsValid() {
		// OVN's other_config:ipv6_prefix is the prefix address without its length.
		s.IPv6Prefix = p.Addr().String()
	}
	s.ExcludeIPs = n.fam[ipv4].northdExclude(held)
	return s
}

// northdExclude is other_config:exclude_ips for an IPv4 family: what f
// never hands out, excluded ranges and the gateway, clamped to the usable
// range, without the addresses in held (sorted), as northd reads it:
// addresses and "a..b" ranges separated by spaces, sorted. Northd's IPAM
// has no exclusions for IPv6 (it derives addresses from MACs), so an IPv6
// family has none; nor has a family without a subnet.
func (f *family) northdExclude(held []netip.Addr) string {
	if !f.prefix.IsValid() || !f.prefix.Addr().Is4() {
		return ""
	}
	rs := slices.Clone(f.excl)
	if f.gateway.IsValid() {
		rs = append(rs, netconf.IPRange{From: f.gateway, To: f.gateway})
	}
	rs = addr.MergeRanges(rs, true)
	if len(held) > 0 {
		rs = addr.Punch(rs, held)
	}
	var b strings.Builder
	for _, r := range rs {
		if r.From.Less(f.usable.From) {
			r.From = f.usable.From
		}
		if f.usable.To.Less(r.To) {
			r.To = f.usable.To
		}
		if r.To.Less(r.From) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.From.String())
		if r.From != r.To {
			b.WriteString("..")
			b.WriteString(r.To.String())
		}
	}
	return b.String()
}

// nadRef names a NetworkAttachmentDefinition.
type nadRef struct{ ns, name string }

func (r nadRef) String() string { return r.ns + "/" + r.name }

type nadState uint8

const (
	nadUnmanaged nadState = iota // not OVN's: no port, no problem
	nadManaged
	nadInvalid // unknown: ports on it are kept as they are
)

// nadRecord is what an incremental Update compares of a NAD between two
// Builds (nadScope): the state, switch and provider its owners' ports
// get, and what its config says of claims.
type nadRecord struct {
	state    nadState
	sw       string
	provider string
	bySubnet bool
	cc       netconf.ClaimConfig
}

// nadRecords returns the record of every NAD the Build read.
func (b *builder) nadRecords() map[nadRef]nadRecord {
	out := make(map[nadRef]nadRecord, len(b.nads))
	for ref, e := range b.nads {
		r := nadRecord{state: e.state, provider: e.provider, bySubnet: e.bySubnet, cc: e.cc}
		if e.net != nil {
			r.sw = e.net.sw
		}
		out[ref] = r
	}
	return out
}

type nadEntry struct {
	state nadState
	net   *network
	// why is, for nadInvalid, what owners on it are told ("is invalid").
	why string
	// provider names the NAD's ports and annotations: "<nad>.<nadns>.ovn",
	// or a kube-ovn config's "provider". Empty when unknown.
	provider string
	// bySubnet is set for a kube-ovn NAD without "subnets": its network is
	// a Subnet of its provider, chosen per port (chooseNetwork).
	bySubnet bool
	// cc is what its config says of IPAMClaims; unmanaged is set for an
	// OVN network of a topology or role ovn-sync does not manage.
	cc        netconf.ClaimConfig
	unmanaged bool
}

// buildNetworks sets up the default network from cfg and one network per
// managed NAD, in ns/name order so that switch-name clashes have a stable
// winner. The default network is nil when cfg is unusable.
//
// A NAD that ovn-sync manages in the NB (its switch or ports are there) and
// that stops being a network it can manage — a config that no longer
// parses, a CNI type that is not OVN's (a typo, say), subnets that no longer
// hold the addresses its ports have — is a Problem on the NAD, and its
// switch and ports are kept as they are: ports go only when their owners
// stop referencing the network.
func (b *builder) buildNetworks(cfg Config, nads []*nadv1.NetworkAttachmentDefinition) {
	b.def = b.defaultNetwork(cfg)
	if b.def != nil {
		b.switchOwner[b.def.sw] = "the default network"
	}
	b.buildSubnets(cfg, b.subnetObjs)

	sorted := make([]*nadv1.NetworkAttachmentDefinition, 0, len(nads))
	for _, n := range nads {
		if n != nil {
			sorted = append(sorted, n)
		}
	}
	slices.SortFunc(sorted, func(a, b *nadv1.NetworkAttachmentDefinition) int {
		return cmpStrings(a.Namespace, b.Namespace, a.Name, b.Name, a.Spec.Config, b.Spec.Config)
	})
	b.nads = make(map[nadRef]nadEntry, len(sorted))
	for _, nad := range sorted {
		if _, dup := b.nads[nadRef{nad.Namespace, nad.Name}]; !dup {
			b.buildNAD(nad)
		}
	}
}

// buildNAD reads nad into b.nads: a network of ours registered, the
// Subnet of its provider (a kube-ovn NAD without subnets), a network
// ovn-sync does not manage, or invalid (a Problem says why).
func (b *builder) buildNAD(nad *nadv1.NetworkAttachmentDefinition) {
	ref := nadRef{nad.Namespace, nad.Name}
	cc := netconf.ParseClaimConfig(nad.Spec.Config)
	invalid := func(reason, msg string) {
		b.problem(kindNAD, nad.Namespace, nad.Name, reason, msg)
		b.nads[ref] = nadEntry{state: nadInvalid, why: "is invalid"}
	}
	// unmanaged is an ovn-kubernetes network of a kind ovn-sync does
	// not manage: a Problem on the NAD; ports already on it are kept.
	unmanaged := func(reason string, err error, what string) {
		msg := err.Error()
		if b.inUse(ref.String()) {
			msg += "; its switch and ports are in the NB: kept as they are while owners use it"
		}
		b.problem(kindNAD, nad.Namespace, nad.Name, reason, msg)
		b.nads[ref] = nadEntry{state: nadInvalid, why: "is not managed: " + what, cc: cc, unmanaged: true}
	}
	mc, un, err := netconf.ParseNADConfig(nad.Spec.Config)
	var te netconf.TopologyError
	var re netconf.RoleError
	switch {
	case errors.As(err, &te):
		unmanaged("UnmanagedTopology", err, "topology "+te.Topology)
		return
	case errors.As(err, &re):
		unmanaged("UnmanagedRole", err, "role "+re.Role)
		return
	case err != nil:
		invalid("InvalidNetworkAttachmentDefinition", err.Error())
		return
	case mc == nil && b.inUse(ref.String()):
		invalid("InvalidNetworkAttachmentDefinition", fmt.Sprintf("%s: \"type\" %q: not a network ovn-sync manages (%s or %s), "+
			"but its switch and ports are in the NB: kept as they are while owners use it", un.Where, un.CNIType, netconf.TypeOVNKubernetes, netconf.TypeKubeOVN))
		return
	case mc == nil:
		b.nads[ref] = nadEntry{state: nadUnmanaged}
		return
	}
	provider := nad.Name + "." + nad.Namespace + providerSuffix
	if mc.Provider != "" {
		provider = mc.Provider
	}
	if len(mc.Subnets) == 0 && mc.CNIType == netconf.TypeKubeOVN {
		b.nadBySubnet(nad, ref, provider)
		if e, ok := b.nads[ref]; ok {
			e.cc = cc
			b.nads[ref] = e
		}
		return
	}
	key := ref.String()
	sw := mc.LogicalSwitch
	if sw == "" {
		sw = nad.Name + "." + nad.Namespace
	}
	n := newNetwork(key, provider, sw, ownerNADPrefix+key, mc.Subnets, mc.Exclude, mc.Gateways)
	n.dhcp = mc.DHCP
	if conflict, outside := b.register(n, "NetworkAttachmentDefinition "+key); conflict != "" {
		invalid("SwitchConflict", conflict)
		return
	} else if outside != "" {
		invalid("InvalidNetworkAttachmentDefinition", "spec.config: \"subnets\" "+outside)
		return
	}
	b.nads[ref] = nadEntry{state: nadManaged, net: n, provider: provider, cc: cc}
	if cc.Persistent && cc.Name != "" {
		if b.claimNets == nil {
			b.claimNets = map[string][]*network{}
		}
		b.claimNets[cc.Name] = append(b.claimNets[cc.Name], n)
	}
}

// register adds n, the network of a NAD or a Subnet, to the Build's, as
// owner (which messages name): unless another network has its switch
// (conflict says which) or a port of ours on it holds an address outside
// its subnets (outside says which, b.outside). Every network but the
// default one is registered so.
func (b *builder) register(n *network, owner string) (conflict, outside string) {
	if other, taken := b.switchOwner[n.sw]; taken {
		return fmt.Sprintf("logical switch %q is already used by %s", n.sw, other), ""
	}
	if msg := b.outside(n); msg != "" {
		return "", msg
	}
	n.swID = b.switchID(n.sw)
	b.switchOwner[n.sw] = owner
	b.networks = append(b.networks, n)
	return "", ""
}

// inUse reports whether the NB holds ports of ours on the network named
// key ("<nadns>/<nad>").
func (b *builder) inUse(key string) bool {
	b.indexHaveNetworks()
	return len(b.haveNets[key]) > 0
}

// outside checks that every address our ports on n hold is still in n's
// subnets. It returns the first one that is not, as a message, or "". When
// the switch is ours and its subnets are n's, nothing changed and no port
// is read; a switch that is not ours records no subnets, so then every
// port on n is.
func (b *builder) outside(n *network) string {
	hs := b.have.Switches[n.sw]
	if hs != nil && hs.Owned() && hs.Network == n.key {
		if want := n.switchValue(nil); want.Subnet == hs.Subnet && want.IPv6Prefix == hs.IPv6Prefix {
			return ""
		}
	}
	b.indexHaveNetworks()
	for _, p := range b.haveNets[n.key] {
		h := addr.ParseLSP(p.Addresses)
		for _, a := range h.IP {
			if a.IsValid() && !n.fam[familyOf(a)].prefix.Contains(a) {
				if n.cidr() == "" {
					return fmt.Sprintf("is gone (no IPAM), but port %q holds %s: the network is kept as it is until no port uses the address",
						p.Name, a)
				}
				return fmt.Sprintf("%q no longer holds %s of port %q: the network is kept as it is until no port uses the address",
					n.cidr(), a, p.Name)
			}
		}
	}
	return ""
}

// indexHaveNetworks indexes our have ports by network, sorted by name, once.
func (b *builder) indexHaveNetworks() {
	if b.haveNets != nil {
		return
	}
	b.haveNets = map[string][]*state.Port{}
	for _, p := range b.have.Ports.All() {
		if p != nil && p.Owned() {
			b.haveNets[p.Network] = append(b.haveNets[p.Network], p)
		}
	}
	for _, ps := range b.haveNets {
		slices.SortFunc(ps, func(x, y *state.Port) int { return strings.Compare(x.Name, y.Name) })
	}
}

const kindConfig = "Config"

// defaultNetwork validates cfg. Build takes a Config by value, so one not
// made by NewConfig may be unusable; that is a Problem, and the default
// network is then unknown (its ports are kept as they are).
func (b *builder) defaultNetwork(cfg Config) *network {
	bad := func(msg string) {
		b.problem(kindConfig, "", "defaultNetwork", "InvalidConfig", msg)
	}
	if cfg.DefaultSwitch == "" {
		bad("logical switch name is empty")
		return nil
	}
	var subnets []netip.Prefix
	var have [2]bool
	for _, p := range cfg.DefaultSubnets {
		if !p.IsValid() {
			bad("invalid subnet")
			return nil
		}
		p = p.Masked()
		f := familyOf(p.Addr())
		if have[f] {
			bad(fmt.Sprintf("subnet %s: more than one subnet of its family", p))
			return nil
		}
		have[f] = true
		subnets = append(subnets, p)
	}
	if len(subnets) == 0 {
		bad("no subnets")
		return nil
	}
	n := newNetwork(state.DefaultNetwork, providerDefault, cfg.DefaultSwitch, ownerDefaultSwitch, subnets, cfg.DefaultExclude, cfg.DefaultGateway)
	n.dhcp = cfg.DefaultDHCP
	n.swID = b.switchID(n.sw)
	b.networks = append(b.networks, n)
	return n
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}
