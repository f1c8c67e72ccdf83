package desired

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// kube-ovn's Subnets as networks.
//
// A Subnet is one logical switch, named after it. Its spec.provider says
// whose network it is: "ovn" (or empty) is the default network, where an
// owner's primary interface goes; "<something>.ovn" is the network of the
// kube-ovn NetworkAttachmentDefinitions with that provider; anything else is
// an IPAM-only Subnet of another CNI (macvlan...), which has no ports.
//
// Which Subnet of the default network an owner's primary interface is on,
// first match wins (kube-ovn's order, with what the owner already holds
// before namespace and default, so that binding a namespace to a new
// Subnet renumbers nobody):
//
//  1. the request: ovn.kubernetes.io/logical_switch on the pod or the VM
//     template (for a running VM, on its VMI) without allocated "true";
//  2. the record: the same annotation marked allocated (a plain pod), or on
//     the VM object and its virt-launcher pods;
//  3. the switch the owner's port is on now;
//  4. the first Subnet (oldest, then by name) whose spec.namespaces lists
//     the owner's namespace, then the Namespace's own
//     ovn.kubernetes.io/logical_switch annotation (its first entry that is
//     a Subnet of the default network);
//  5. the Subnet with spec.default true (the oldest);
//  6. the configured default network.
//
// An attachment network follows steps 1 to 3 with its provider's keys
// (<provider>.kubernetes.io/logical_switch), then takes the oldest Subnet
// of its provider.

const (
	kindSubnet = state.KindSubnet
	// subnetKeyPrefix starts the network key of a Subnet that is not the
	// configured default switch: "Subnet/<name>". A namespace cannot start
	// with an upper-case letter, so it never equals a NAD's "<ns>/<name>".
	subnetKeyPrefix = kindSubnet + "/"
	// ownerSubnetPrefix starts external_ids:ovn-sync/owner of a switch
	// ovn-sync creates for a Subnet.
	ownerSubnetPrefix = kindSubnet + "/"
)

// subnetEntry is one Subnet as Build reads it.
type subnetEntry struct {
	state    nadState // nadManaged, nadInvalid, or nadUnmanaged (IPAM only)
	net      *network
	provider string
	obj      *kubeovnv1.Subnet
}

// subnetRecord is what an incremental Update compares of a Subnet between
// two Builds (subnetScope): its state, provider, whether it is the default
// network, and its spec but for spec.namespaces and spec.default, which
// place only a port that is new (step 4 and 5 of the choice above come
// after where the port is now).
type subnetRecord struct {
	state    nadState
	provider string
	isDef    bool
	spec     string
}

// subnetRecords returns the record of every Subnet the Build read.
func (b *builder) subnetRecords(cfg Config) map[string]subnetRecord {
	out := make(map[string]subnetRecord, len(b.kovn.subnets))
	for name, e := range b.kovn.subnets {
		out[name] = subnetRecord{state: e.state, provider: e.provider, isDef: name == cfg.DefaultSwitch, spec: recordedSpec(e.obj)}
	}
	return out
}

// recordedSpec is the part of s's spec a subnetRecord keeps: all of it but
// spec.namespaces and spec.default, which place only ports that are new.
func recordedSpec(s *kubeovnv1.Subnet) string {
	spec := s.Spec
	spec.Namespaces, spec.Default = nil, false
	j, _ := json.Marshal(spec)
	return string(j)
}

// kubeOVNIndex is the Subnets and Namespaces Build reads, indexed.
type kubeOVNIndex struct {
	subnets map[string]*subnetEntry
	// byProvider lists the managed Subnets of each attachment provider,
	// oldest first; bad names the providers of invalid ones.
	byProvider map[string][]*network
	badProv    map[string]string
	// byNamespace lists the managed default-network Subnets whose
	// spec.namespaces holds a namespace, oldest first.
	byNamespace map[string][]*network
	// nsSwitches is each Namespace's ovn.kubernetes.io/logical_switch.
	nsSwitches map[string]string
	// def is the spec.default Subnet, if any.
	def *network
}

// any reports whether there is anything that can move a primary interface
// off the configured default network.
func (k *kubeOVNIndex) any() bool { return len(k.subnets) > 0 || len(k.nsSwitches) > 0 }

// sortedSubnets returns the Subnets oldest first, then by name.
func sortedSubnets(in []*kubeovnv1.Subnet) []*kubeovnv1.Subnet {
	out := make([]*kubeovnv1.Subnet, 0, len(in))
	for _, s := range in {
		if s != nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *kubeovnv1.Subnet) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.CompactFunc(out, func(a, b *kubeovnv1.Subnet) bool { return a.Name == b.Name })
}

// buildSubnets reads every Subnet into a network, after the configured
// default network and before the NADs (which find theirs by provider). A
// Subnet named like the configured default switch is the default network:
// its spec replaces the configured subnets, exclusions and gateway.
//
// A Subnet that cannot be managed — a bad cidrBlock, gateway or excludeIps,
// addresses overlapping an older Subnet of its VPC, a switch name another
// network uses — is a Problem, and its network is unknown: ports of ours on
// it stay exactly as they are.
func (b *builder) buildSubnets(cfg Config, subnets []*kubeovnv1.Subnet) {
	k := &b.kovn
	k.subnets = make(map[string]*subnetEntry, len(subnets))
	k.byProvider = map[string][]*network{}
	k.badProv = map[string]string{}
	k.byNamespace = map[string][]*network{}
	t := &placements{def: -1}
	if b.def != nil {
		t.def = 0
		t.taken = append(t.taken, placed{name: "the default network (" + b.def.sw + ")", prefixes: b.defPrefixes()})
	}
	sorted := sortedSubnets(subnets)
	// The Subnet that is the default network goes first: it replaces the
	// configured subnets before anything is checked against them.
	if i := slices.IndexFunc(sorted, func(s *kubeovnv1.Subnet) bool { return s.Name == cfg.DefaultSwitch }); i > 0 {
		d := sorted[i]
		sorted = slices.Insert(slices.Delete(sorted, i, i+1), 0, d)
	}
	for _, s := range sorted {
		e := &subnetEntry{provider: netconf.SubnetProvider(s), obj: s}
		k.subnets[s.Name] = e
		n := b.buildSubnet(cfg, s, e, t)
		if n == nil {
			continue
		}
		if e.provider != providerDefault {
			k.byProvider[e.provider] = append(k.byProvider[e.provider], n)
			continue
		}
		for _, ns := range s.Spec.Namespaces {
			if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(k.byNamespace[ns], n) {
				k.byNamespace[ns] = append(k.byNamespace[ns], n)
			}
		}
		if s.Spec.Default {
			if k.def != nil {
				b.problem(kindSubnet, "", s.Name, "InvalidSubnet", fmt.Sprintf("spec.default: Subnet %s is the default already (older); ignored", k.def.sw))
				continue
			}
			k.def = n
		}
	}
}

// placements are what each VPC's managed Subnets hold so far, the default
// network first (in kube-ovn's default VPC): a Subnet that overlaps one of
// its VPC's is invalid. def is the default network's, -1 while none.
type placements struct {
	taken []placed
	def   int
}

type placed struct {
	name, vpc string
	prefixes  []netip.Prefix
}

// buildSubnet reads Subnet s into e and returns its network, registered
// (the default network replaced, for the Subnet named like its switch), or
// nil when it has none: not OVN's (IPAM only, for another CNI), or
// invalid (a Problem says why).
func (b *builder) buildSubnet(cfg Config, s *kubeovnv1.Subnet, e *subnetEntry, t *placements) *network {
	key := subnetKeyPrefix + s.Name
	isDef := s.Name == cfg.DefaultSwitch
	if isDef {
		key = state.DefaultNetwork
	}
	invalid := func(reason, msg string) *network {
		b.problem(kindSubnet, "", s.Name, reason, msg)
		e.state = nadInvalid
		if e.provider != providerDefault {
			b.kovn.badProv[e.provider] = s.Name
		}
		if isDef {
			// The default network is unknown: its ports stay as they are.
			b.dropDefault()
			if t.def >= 0 {
				t.taken[t.def].prefixes = nil
			}
		}
		return nil
	}
	if e.provider != providerDefault && !strings.HasSuffix(e.provider, providerSuffix) {
		// IPAM only, for a CNI that is not OVN: no switch, no ports.
		e.state = nadUnmanaged
		if b.inUse(key) {
			return invalid("InvalidSubnet", fmt.Sprintf("spec.provider %q: not OVN's (the default \"ovn\" or \"<name>.ovn\"), "+
				"but its switch and ports are in the NB: kept as they are while owners use it", e.provider))
		}
		return nil
	}
	if isDef && e.provider != providerDefault {
		return invalid("SwitchConflict", fmt.Sprintf("spec.provider %q: the Subnet named like the default network's switch must have provider %q", e.provider, providerDefault))
	}
	if !netconf.IsDNSSubdomain(s.Name) {
		return invalid("InvalidSubnet", fmt.Sprintf("metadata.name %s: not a valid object name", abbreviate(s.Name)))
	}
	sp, err := netconf.ParseSubnet(s)
	if err != nil {
		return invalid("InvalidSubnet", err.Error())
	}
	if i := slices.IndexFunc(t.taken, func(p placed) bool {
		return netconf.SameVPC(p.vpc, s.Spec.Vpc) && overlaps(p.prefixes, sp.Subnets)
	}); i >= 0 && !(isDef && i == t.def) {
		return invalid("SubnetOverlap", fmt.Sprintf("spec.cidrBlock %q overlaps %s", s.Spec.CIDRBlock, t.taken[i].name))
	}
	if !isDef {
		n := newNetwork(key, e.provider, s.Name, ownerSubnetPrefix+s.Name, sp.Subnets, sp.Exclude, sp.Gateways)
		n.dhcp = sp.DHCP
		if conflict, outside := b.register(n, "Subnet "+s.Name); conflict != "" {
			return invalid("SwitchConflict", conflict)
		} else if outside != "" {
			return invalid("InvalidSubnet", "spec.cidrBlock "+outside)
		}
		e.state, e.net = nadManaged, n
		t.taken = append(t.taken, placed{name: "Subnet " + s.Name, vpc: s.Spec.Vpc, prefixes: sp.Subnets})
		return n
	}
	n := newNetwork(state.DefaultNetwork, providerDefault, s.Name, ownerDefaultSwitch, sp.Subnets, sp.Exclude, sp.Gateways)
	n.dhcp = sp.DHCP
	if !s.Spec.EnableDHCP {
		// The Subnet does not ask for DHCP: the config file decides.
		n.dhcp = cfg.DefaultDHCP
	}
	if msg := b.outside(n); msg != "" {
		return invalid("InvalidSubnet", "spec.cidrBlock "+msg)
	}
	n.swID = b.switchID(n.sw)
	e.state, e.net = nadManaged, n
	b.replaceDefault(n)
	if t.def < 0 {
		t.def = len(t.taken)
		t.taken = append(t.taken, placed{})
	}
	t.taken[t.def] = placed{name: "Subnet " + s.Name + " (the default network)", prefixes: sp.Subnets}
	return n
}

// indexNamespaces reads each Namespace's ovn.kubernetes.io/logical_switch.
func (b *builder) indexNamespaces(nss []*corev1.Namespace) {
	for _, ns := range nss {
		if ns == nil {
			continue
		}
		if v := strings.TrimSpace(ns.Annotations[NamespaceSwitchAnnotation]); v != "" {
			if b.kovn.nsSwitches == nil {
				b.kovn.nsSwitches = map[string]string{}
			}
			b.kovn.nsSwitches[ns.Name] = v
		}
	}
}

// defPrefixes is the configured default network's subnets.
func (b *builder) defPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, f := range b.def.fam {
		if f.prefix.IsValid() {
			out = append(out, f.prefix)
		}
	}
	return out
}

// replaceDefault makes n, read from the Subnet named like the configured
// default switch, the default network.
func (b *builder) replaceDefault(n *network) {
	if i := slices.Index(b.networks, b.def); i >= 0 && b.def != nil {
		b.networks[i] = n
	} else {
		b.networks = slices.Insert(b.networks, 0, n)
	}
	b.def = n
	b.switchOwner[n.sw] = "the default network"
}

// dropDefault makes the default network unknown.
func (b *builder) dropDefault() {
	if b.def == nil {
		return
	}
	b.networks = slices.DeleteFunc(b.networks, func(n *network) bool { return n == b.def })
	b.needSwitch(b.def.sw)
	b.def = nil
}

func overlaps(a, b []netip.Prefix) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Overlaps(y) {
				return true
			}
		}
	}
	return false
}

// subnetOf returns the managed Subnet network called sw, or why there is
// none; known is false when such a Subnet exists but cannot be managed.
func (b *builder) subnetOf(sw string) (n *network, known bool) {
	if b.def != nil && b.def.sw == sw {
		return b.def, true
	}
	e := b.kovn.subnets[sw]
	if e == nil {
		return nil, true
	}
	if e.state == nadInvalid {
		return nil, false
	}
	return e.net, true
}

// networkChoice is where an attachment may go: the configured default
// network or a Subnet (isDefault, provider "ovn"), or the Subnets of a
// kube-ovn NAD's provider.
type networkChoice struct {
	isDefault bool
	provider  string // the provider whose Subnets qualify
	// key is the provider whose logical_switch annotation asks: the
	// port's own (suffixed by the interface for a second attachment).
	key string
}

// qualifies reports whether n is a network the choice may land on.
func (b *builder) qualifies(c networkChoice, n *network) bool {
	if n == nil {
		return false
	}
	if c.isDefault {
		return n == b.def || b.kovn.subnets[n.sw] != nil && b.kovn.subnets[n.sw].provider == providerDefault
	}
	return slices.Contains(b.kovn.byProvider[c.provider], n)
}

// chooseNetwork decides the network of o's port called name (see the
// order at the top of this file). It returns nil and false when the
// network is unknown (a Problem says why): the port is then kept as it is.
func (b *builder) chooseNetwork(o *owner, c networkChoice, name string, ann map[string]string) (*network, bool) {
	if c.isDefault && !b.kovn.any() && len(ann) == 0 {
		return b.def, b.def != nil
	}
	// 1 and 2: the owner's own annotation; allocated "true" makes it a
	// record of what it was given rather than a request.
	lsKey := NamespaceSwitchAnnotation // the default network's, not built per port
	if c.key != providerDefault {
		lsKey = c.key + AnnLogicalSwitchSuffix
	}
	if v := strings.TrimSpace(providerAnnotation(ann, c.key, AnnLogicalSwitchSuffix)); v != "" {
		granted := providerAnnotation(ann, c.key, AnnAllocatedSuffix) == "true"
		n, known := b.subnetOf(v)
		switch {
		case !known:
			b.ownerProblem(o, "UnknownSubnet", fmt.Sprintf("%s %q: Subnet is invalid (see its own problem)", lsKey, v))
			return nil, false
		case b.qualifies(c, n):
			return n, true
		case !granted:
			why := "no Subnet of that name"
			if n != nil {
				why = fmt.Sprintf("Subnet %s is not a network of provider %q", v, c.provider)
			}
			b.ownerProblem(o, "InvalidAnnotation", fmt.Sprintf("%s %q: %s", lsKey, v, why))
			return nil, false
		}
	}
	if !b.kovn.any() {
		if c.isDefault {
			return b.def, b.def != nil
		}
		return nil, false
	}
	if n, ok := b.recordedSwitch(o, c, lsKey); ok {
		return n, n != nil
	}
	// 3: where the port is now.
	if hp := b.ownedHave(o, name); hp != nil {
		n, known := b.subnetOf(hp.Switch)
		switch {
		case b.qualifies(c, n):
			return n, true
		case !known || n == nil && strings.HasPrefix(hp.Network, subnetKeyPrefix):
			b.ownerProblem(o, "UnknownSubnet", fmt.Sprintf("port %q is on Subnet %s, which is gone or invalid: kept as it is", name, hp.Switch))
			return nil, false
		}
	}
	if !c.isDefault {
		if l := b.kovn.byProvider[c.provider]; len(l) > 0 {
			return l[0], true
		}
		return nil, false
	}
	// 4: the namespace.
	if l := b.kovn.byNamespace[o.ns]; len(l) > 0 {
		return l[0], true
	}
	if v := b.kovn.nsSwitches[o.ns]; v != "" {
		for _, sw := range strings.Split(v, ",") {
			if n, _ := b.subnetOf(strings.TrimSpace(sw)); b.qualifies(c, n) {
				return n, true
			}
		}
	}
	// 5 and 6.
	if b.kovn.def != nil {
		return b.kovn.def, true
	}
	return b.def, b.def != nil
}

// recordedSwitch reads the switch a VM's (or VMI's) launcher pods, then the
// VM, were recorded on: found is false when none names a network the
// choice may land on. A record naming an invalid Subnet makes the network
// unknown (nil, true).
func (b *builder) recordedSwitch(o *owner, c networkChoice, lsKey string) (*network, bool) {
	obj := o.vm()
	var recorded []string
	for _, p := range sortedLaunchers(obj.launchers) {
		if p.running {
			v, _ := p.Annotations.Get(lsKey)
			recorded = append(recorded, v)
		}
	}
	if obj.vm != nil {
		v, _ := obj.vm.Annotations.Get(lsKey)
		recorded = append(recorded, v)
	}
	for _, v := range recorded {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		n, known := b.subnetOf(v)
		if !known {
			b.ownerProblem(o, "UnknownSubnet", fmt.Sprintf("%s %q (record): Subnet is invalid (see its own problem)", lsKey, v))
			return nil, true
		}
		if b.qualifies(c, n) {
			return n, true
		}
	}
	return nil, false
}

// nadBySubnet registers a kube-ovn NAD without "subnets": its network is
// the Subnet whose spec.provider is the NAD's provider. With none, or only
// invalid ones, the network is unknown and ports on it stay as they are.
func (b *builder) nadBySubnet(nad *nadv1.NetworkAttachmentDefinition, ref nadRef, provider string) {
	if len(b.kovn.byProvider[provider]) > 0 {
		b.nads[ref] = nadEntry{state: nadManaged, provider: provider, bySubnet: true}
		return
	}
	msg := fmt.Sprintf("spec.config: provider %q matches no Subnet's spec.provider "+
		"(a kube-ovn NetworkAttachmentDefinition without \"subnets\" is the network of the Subnet with its provider)", provider)
	if s, ok := b.kovn.badProv[provider]; ok {
		msg = fmt.Sprintf("spec.config: provider %q: its Subnet %s is invalid (see its own problem)", provider, s)
	}
	b.problem(kindNAD, nad.Namespace, nad.Name, "UnknownSubnet", msg)
	b.nads[ref] = nadEntry{state: nadInvalid, provider: provider, why: "has no valid Subnet of its provider"}
}
