package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// CNI types whose NetworkAttachmentDefinitions ovn-sync manages.
const (
	typeOVNKubernetes = "ovn-k8s-cni-overlay"
	typeKubeOVN       = "kube-ovn"
)

// topologyLayer2 is the one ovn-kubernetes topology ovn-sync manages: a
// switch per network. layer3 (a switch per node behind a router) and
// localnet (a switch bridged to a physical network) are not.
const topologyLayer2 = "layer2"

// ovn-kubernetes network roles: a secondary network (the default) is an
// attachment pods ask for; a primary one is not ours (roleError).
const (
	roleSecondary = "secondary"
	rolePrimary   = "primary"
)

// Switch owners (external_ids:ovn-sync/owner on Logical_Switch).
const (
	ownerDefaultSwitch = "ovn-sync"
	ownerNADPrefix     = "NetworkAttachmentDefinition/"
	kindNAD            = state.KindNetworkAttachmentDefinition
	providerDefault    = "ovn"
	providerSuffix     = ".ovn"
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
	// "10.16.0.1,fd00:10:16::1"), "" when it has none.
	gateway string
	// dhcp is the network's native DHCP (dhcp.go).
	dhcp DHCP
}

// The indexes of network.fam, portSpec.ip and requested.ip.
const (
	ipv4 = 0
	ipv6 = 1
)

var familyName = [2]string{"IPv4", "IPv6"}

// familyOf returns the index of a's family.
func familyOf(a netip.Addr) int {
	if a.Is4() {
		return ipv4
	}
	return ipv6
}

// family is one address family of a network.
type family struct {
	// prefix is invalid when the network lacks the family.
	prefix netip.Prefix
	// usable is the range a port may hold: the prefix without its network
	// and broadcast addresses (see usable).
	usable IPRange
	// gateway is reserved for the network's router: never a port's.
	gateway netip.Addr
	// excl is never handed out and never granted to a request: merged, sorted.
	excl []IPRange
	// first is, for IPv4 on a switch with other_config:subnet, the
	// subnet's first address, which northd's IPAM marks taken whatever
	// exclude_ips says (init_ipam_ipv4): a port of ours on it makes northd
	// log "Duplicate IP set". It is never handed out nor granted to a new
	// request; a port that holds it keeps it, as an excluded address.
	first netip.Addr
	// pool is created on first dynamic allocation.
	pool *pool
}

func newNetwork(key, provider, sw, owner string, subnets []netip.Prefix, exclude []IPRange, gateways []netip.Addr) *network {
	n := &network{key: key, provider: provider, sw: sw, owner: owner}
	for _, p := range subnets {
		f := &n.fam[familyOf(p.Addr())]
		f.prefix = p
		f.usable.From, f.usable.To = usable(p)
		f.excl = mergeRanges(exclude, p.Addr().Is4())
	}
	var gw []string
	for _, g := range gateways {
		if f := &n.fam[familyOf(g)]; f.prefix.IsValid() && !f.gateway.IsValid() {
			f.gateway = g
			gw = append(gw, g.String())
		}
	}
	n.gateway = strings.Join(gw, ",")
	return n
}

func inRange(r IPRange, a netip.Addr) bool {
	return r.From.IsValid() && !a.Less(r.From) && !r.To.Less(a)
}

// excluded reports whether a is in one of f's excluded ranges.
func (f *family) excluded(a netip.Addr) bool {
	i, _ := slices.BinarySearchFunc(f.excl, a, func(r IPRange, a netip.Addr) int {
		if r.To.Less(a) {
			return -1
		}
		if a.Less(r.From) {
			return 1
		}
		return 0
	})
	return i < len(f.excl) && inRange(f.excl[i], a)
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
	case !inRange(f.usable, a):
		return reserved(f.prefix, a)
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
func (n *network) cidr() string {
	var parts []string
	for _, f := range n.fam {
		if f.prefix.IsValid() {
			parts = append(parts, f.prefix.String())
		}
	}
	return strings.Join(parts, ",")
}

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
		rs = append(rs, IPRange{From: f.gateway, To: f.gateway})
	}
	rs = mergeRanges(rs, true)
	if len(held) > 0 {
		rs = punch(rs, held)
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

// punch returns the merged, sorted ranges rs without the addresses of
// held, sorted.
func punch(rs []IPRange, held []netip.Addr) []IPRange {
	var out []IPRange
	for _, r := range rs {
		for _, a := range held {
			if !inRange(r, a) {
				continue
			}
			if r.From.Less(a) {
				out = append(out, IPRange{From: r.From, To: a.Prev()})
			}
			if a == r.To {
				r = IPRange{} // nothing left
				break
			}
			r.From = a.Next()
		}
		if r.From.IsValid() {
			out = append(out, r)
		}
	}
	return out
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
	cc       claimConfig
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
	cc        claimConfig
	unmanaged bool
}

// nadConfigError is a problem with a NAD's spec.config; its text names the field.
type nadConfigError string

func (e nadConfigError) Error() string { return string(e) }

// topologyError is an ovn-kubernetes config of a topology ovn-sync does not
// manage: a Problem on the NAD, never an overlay by default.
type topologyError struct{ where, topology string }

func (e topologyError) Error() string {
	return fmt.Sprintf("%s: \"topology\": not managed: topology %s (ovn-sync manages %s networks of topology %s only)",
		e.where, e.topology, typeOVNKubernetes, topologyLayer2)
}

// roleError is an ovn-kubernetes config of role primary (a user-defined
// network): ovn-kubernetes makes it the primary interface of every pod in
// the NAD's namespace, annotation or not, and refuses it in a network
// selection. ovn-sync manages secondary networks only, so it is a Problem
// on the NAD, never a secondary network by default.
type roleError struct{ where, role string }

func (e roleError) Error() string {
	return fmt.Sprintf("%s: \"role\": not managed: role %s (ovn-sync manages %s networks of role %s only; "+
		"a primary network is the primary interface of every pod in its namespace)", e.where, e.role, typeOVNKubernetes, roleSecondary)
}

// managedConfig is the part of an ovn-kubernetes layer2 (or kube-ovn) CNI
// config ovn-sync reads. An ovn-kubernetes layer2 config without
// "subnets" has no subnets: a network without IPAM, whose ports carry a
// MAC only.
type managedConfig struct {
	cniType string
	// provider is a kube-ovn config's "provider", "" when absent.
	provider      string
	subnets       []netip.Prefix
	exclude       []IPRange
	gateways      []netip.Addr
	logicalSwitch string
	dhcp          DHCP
}

// unmanagedConfig describes a NAD config that is not OVN's: its CNI type
// and where it was read, for the Problem raised when a NAD in use turns
// into one.
type unmanagedConfig struct {
	cniType string
	where   string
}

// parseNADConfig reads a NAD's spec.config. It returns (nil, u, nil) for a
// config that is not OVN's, including an empty one (Multus then reads a file
// on the node). A conflist ("plugins") is ours when one of its plugins is.
func parseNADConfig(raw string) (*managedConfig, unmanagedConfig, error) {
	none := unmanagedConfig{where: "spec.config"}
	if strings.TrimSpace(raw) == "" {
		return nil, none, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		return nil, none, nadConfigError(fmt.Sprintf("spec.config: invalid JSON: %v", err))
	}
	t := jsonString(top["type"])
	if t == typeOVNKubernetes || t == typeKubeOVN {
		mc, err := parseManaged(t, top, "spec.config")
		return mc, none, err
	}
	plugins, ok := top["plugins"]
	if !ok {
		return nil, unmanagedConfig{cniType: t, where: "spec.config"}, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(plugins, &list); err != nil {
		return nil, none, nadConfigError(fmt.Sprintf("spec.config: \"plugins\": %v", err))
	}
	var types []string
	for i, p := range list {
		t := jsonString(p["type"])
		if t == typeOVNKubernetes || t == typeKubeOVN {
			mc, err := parseManaged(t, p, fmt.Sprintf("spec.config: plugins[%d]", i))
			return mc, none, err
		}
		types = append(types, t)
	}
	return nil, unmanagedConfig{cniType: strings.Join(types, ","), where: "spec.config: plugins[*]"}, nil
}

// jsonString returns raw as a string, or "" if it is absent or not a string.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func stringField(obj map[string]json.RawMessage, key, where string) (string, bool, error) {
	raw, ok := obj[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, nadConfigError(fmt.Sprintf("%s: %q must be a string", where, key))
	}
	return strings.TrimSpace(s), true, nil
}

// parseSubnets reads a list of CIDRs, at most one IPv4 and one IPv6, with
// host bits cleared ("10.16.0.5/16" is 10.16.0.0/16). Empty entries are
// skipped; an empty list is not an error here. Errors name the entry.
func parseSubnets(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var have [2]bool
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return nil, fmt.Errorf("%q: not a CIDR", s)
		}
		p = p.Masked()
		f := familyOf(p.Addr())
		if have[f] {
			return nil, fmt.Errorf("%q: more than one %s subnet", s, familyName[f])
		}
		have[f] = true
		out = append(out, p)
	}
	return out, nil
}

// parseGateways reads gateway addresses, at most one per family, each a
// usable address of the subnet of its family. Errors name the entry.
func parseGateways(list []string, subnets []netip.Prefix) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		a, err := parseIP(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		i := slices.IndexFunc(subnets, func(p netip.Prefix) bool { return p.Contains(a) })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%q: not in a subnet of the network", s)
		case reserved(subnets[i], a) != "":
			return nil, fmt.Errorf("%q: %s", s, reserved(subnets[i], a))
		case slices.ContainsFunc(out, func(b netip.Addr) bool { return b.Is4() == a.Is4() }):
			return nil, fmt.Errorf("%q: more than one %s gateway", s, familyName[familyOf(a)])
		}
		out = append(out, a)
	}
	return out, nil
}

// parseManaged reads an OVN config. For ovn-kubernetes, "topology" decides:
// layer2 is managed, with or without "subnets"; no topology (configs written
// before the field) is read as layer2 with "subnets" required; any other
// topology is a topologyError.
func parseManaged(cniType string, obj map[string]json.RawMessage, where string) (*managedConfig, error) {
	mc := &managedConfig{cniType: cniType}
	noIPAM := false
	if cniType == typeOVNKubernetes {
		var err error
		if noIPAM, err = parseOVNKubernetesKind(obj, where); err != nil {
			return nil, err
		}
	}
	subnets, _, err := stringField(obj, "subnets", where)
	if err != nil {
		return nil, err
	}
	mc.subnets, err = parseSubnets(strings.Split(subnets, ","))
	if err != nil {
		return nil, nadConfigError(fmt.Sprintf("%s: \"subnets\" %v", where, err))
	}
	if cniType == typeKubeOVN {
		if mc.provider, err = parseKubeOVNProvider(obj, where); err != nil {
			return nil, err
		}
	}
	if len(mc.subnets) == 0 && cniType == typeKubeOVN {
		// kube-ovn's own form: the network is the Subnet of the provider.
		return mc, nil
	}
	if len(mc.subnets) == 0 && !noIPAM {
		return nil, nadConfigError(fmt.Sprintf("%s: %q is required for type %q", where, "subnets", cniType))
	}
	if mc.exclude, err = parseExcludeSubnets(obj, where, len(mc.subnets) > 0); err != nil {
		return nil, err
	}
	gw, _, err := stringField(obj, "gateway", where)
	if err != nil {
		return nil, err
	}
	mc.gateways, err = parseGateways(strings.Split(gw, ","), mc.subnets)
	if err != nil {
		return nil, nadConfigError(fmt.Sprintf("%s: \"gateway\" %v", where, err))
	}
	if cniType == typeKubeOVN {
		mc.gateways = kubeOVNGateways(mc.subnets, mc.gateways)
	}
	if mc.dhcp, err = nadDHCP(obj, where); err != nil {
		return nil, err
	}
	ls, present, err := stringField(obj, "logical_switch", where)
	if err != nil {
		return nil, err
	}
	if present && ls == "" {
		return nil, nadConfigError(fmt.Sprintf("%s: \"logical_switch\" is empty", where))
	}
	mc.logicalSwitch = ls
	return mc, nil
}

// parseOVNKubernetesKind reads an ovn-kubernetes NAD's topology and role:
// ovn-sync manages secondary layer3 (the default) and layer2 networks, the
// latter without IPAM when they have no subnets (noIPAM); any other is a
// topologyError or roleError (not managed), or an invalid config.
func parseOVNKubernetesKind(obj map[string]json.RawMessage, where string) (noIPAM bool, err error) {
	topology, _, err := stringField(obj, "topology", where)
	if err != nil {
		return false, err
	}
	switch topology {
	case "":
	case topologyLayer2:
		noIPAM = true
	default:
		return false, topologyError{where: where, topology: topology}
	}
	role, _, err := stringField(obj, "role", where)
	if err != nil {
		return false, err
	}
	switch role {
	case "", roleSecondary:
	case rolePrimary:
		return false, roleError{where: where, role: role}
	default:
		return false, nadConfigError(fmt.Sprintf("%s: \"role\" %q: not %s or %s", where, role, rolePrimary, roleSecondary))
	}
	return noIPAM, nil
}

// parseKubeOVNProvider reads a kube-ovn NAD's provider, "" when it has
// none: "<name>.ovn", kube-ovn's form being "<nad>.<namespace>.ovn".
func parseKubeOVNProvider(obj map[string]json.RawMessage, where string) (string, error) {
	prov, present, err := stringField(obj, "provider", where)
	if err != nil {
		return "", err
	}
	if present && (!isDNSSubdomain(prov) || !strings.HasSuffix(prov, providerSuffix) || strings.Count(prov, ".") < 1) {
		return "", nadConfigError(fmt.Sprintf("%s: \"provider\" %q: not \"<name>.ovn\" (kube-ovn's form is \"<nad>.<namespace>.ovn\")", where, prov))
	}
	return prov, nil
}

// parseExcludeSubnets reads "excludeSubnets", a comma-separated list of
// CIDRs, addresses and ranges; hasSubnets says the network has subnets to
// exclude them from.
func parseExcludeSubnets(obj map[string]json.RawMessage, where string, hasSubnets bool) ([]IPRange, error) {
	excl, _, err := stringField(obj, "excludeSubnets", where)
	if err != nil {
		return nil, err
	}
	if !hasSubnets && strings.TrimSpace(excl) != "" {
		return nil, nadConfigError(fmt.Sprintf("%s: \"excludeSubnets\" without \"subnets\": a network without IPAM has nothing to exclude", where))
	}
	var out []IPRange
	for _, s := range strings.Split(excl, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		r, err := parseExclude(s)
		if err != nil {
			return nil, nadConfigError(fmt.Sprintf("%s: \"excludeSubnets\" %q: not a CIDR or IP address", where, s))
		}
		out = append(out, r)
	}
	return out, nil
}

// kubeOVNGateways adds to gateways, kube-ovn's convention, the first
// address of each subnet of a family no gateway was given for, IPv6 as
// IPv4.
func kubeOVNGateways(subnets []netip.Prefix, gateways []netip.Addr) []netip.Addr {
	for _, p := range subnets {
		if !slices.ContainsFunc(gateways, func(g netip.Addr) bool { return g.Is4() == p.Addr().Is4() }) {
			if first, _ := usable(p); first != p.Addr() {
				gateways = append(gateways, first)
			}
		}
	}
	return gateways
}

// parseExclude reads a CIDR, a single address or a range "a..b".
func parseExclude(s string) (IPRange, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return IPRange{}, err
		}
		return prefixRange(p), nil
	}
	return parseIPRange(s)
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
	cc := parseClaimConfig(nad.Spec.Config)
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
	mc, un, err := parseNADConfig(nad.Spec.Config)
	var te topologyError
	var re roleError
	switch {
	case errors.As(err, &te):
		unmanaged("UnmanagedTopology", err, "topology "+te.topology)
		return
	case errors.As(err, &re):
		unmanaged("UnmanagedRole", err, "role "+re.role)
		return
	case err != nil:
		invalid("InvalidNetworkAttachmentDefinition", err.Error())
		return
	case mc == nil && b.inUse(ref.String()):
		invalid("InvalidNetworkAttachmentDefinition", fmt.Sprintf("%s: \"type\" %q: not a network ovn-sync manages (%s or %s), "+
			"but its switch and ports are in the NB: kept as they are while owners use it", un.where, un.cniType, typeOVNKubernetes, typeKubeOVN))
		return
	case mc == nil:
		b.nads[ref] = nadEntry{state: nadUnmanaged}
		return
	}
	provider := nad.Name + "." + nad.Namespace + providerSuffix
	if mc.provider != "" {
		provider = mc.provider
	}
	if len(mc.subnets) == 0 && mc.cniType == typeKubeOVN {
		b.nadBySubnet(nad, ref, provider)
		if e, ok := b.nads[ref]; ok {
			e.cc = cc
			b.nads[ref] = e
		}
		return
	}
	key := ref.String()
	sw := mc.logicalSwitch
	if sw == "" {
		sw = nad.Name + "." + nad.Namespace
	}
	n := newNetwork(key, provider, sw, ownerNADPrefix+key, mc.subnets, mc.exclude, mc.gateways)
	n.dhcp = mc.dhcp
	if conflict, outside := b.register(n, "NetworkAttachmentDefinition "+key); conflict != "" {
		invalid("SwitchConflict", conflict)
		return
	} else if outside != "" {
		invalid("InvalidNetworkAttachmentDefinition", "spec.config: \"subnets\" "+outside)
		return
	}
	b.nads[ref] = nadEntry{state: nadManaged, net: n, provider: provider, cc: cc}
	if cc.persistent && cc.name != "" {
		if b.claimNets == nil {
			b.claimNets = map[string][]*network{}
		}
		b.claimNets[cc.name] = append(b.claimNets[cc.name], n)
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
		h := parseLSPAddresses(p.Addresses)
		for _, a := range h.ip {
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
