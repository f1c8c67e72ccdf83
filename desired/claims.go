package desired

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// IPAMClaims (k8s.cni.cncf.io/v1alpha1) are the KubeVirt world's records of
// a VM's addresses on one network. kubevirt/ipam-extensions creates one per
// network of a VM whose NAD config says "allowPersistentIPs": true, named
// ClaimName(vm, network) and owned by the VM, and its webhook names it in
// the launcher pod's network selection element ("ipam-claim-reference").
// The network plugin fills status.ips once and never changes them.
//
// Here a claim is a record of the owner's addresses on that network, the
// last one read: a request, a record (annotations, kube-ovn's IP object)
// and what the port holds come first. So a port that holds addresses keeps
// them whatever its claim says (a claim that differs is a ClaimMismatch
// Problem, never a renumbering), and a port that holds none — a stopped VM
// after the NB was lost, a new VM with a pre-filled claim — takes the
// claim's. The addresses of a claim no owner reads as its record (its VM
// gone, the claim kept by its finalizer) are reserved on their network
// while the claim exists, as ovn-kubernetes reserves every claim's at
// start-up.

// ClaimName is the name ipam-extensions gives the claim of VM vm's network
// network (the KubeVirt network's name, spec.template.spec.networks[].name):
// claims.ComposeKey, "<vm>.<network>" lower-cased, with what is not an
// RFC 1123 subdomain left out, at most 253 characters.
func ClaimName(vm, network string) string {
	name := strings.Join(rfc1123Run.FindAllString(strings.ToLower(vm+"."+network), -1), ".")
	if len(name) > 253 {
		name = name[:253]
	}
	return name
}

// rfc1123Run is ipam-extensions' pattern, as it is written there (its
// doubled backslash makes "\\." match a backslash and any character).
var rfc1123Run = regexp.MustCompile(`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`)

// claimUse is the claim a port reads.
type claimUse struct {
	obj *ipamclaimsv1alpha1.IPAMClaim
	// ip is the claim's status.ips, invalid where it has none; field
	// names it for messages and explain.
	ip  [2]netip.Addr
	src string
}

// ClaimFacts is what a pass decided about one IPAMClaim a port reads, for
// publishing its status: the addresses the port holds on the claim's
// network, or why it has none.
type ClaimFacts struct {
	// Claim is the object as read: shared, read only.
	Claim *ipamclaimsv1alpha1.IPAMClaim
	// Owner is the port's owner ("<Kind>/<ns>/<name>"), Port its name.
	Owner, Port string
	// IPs are the port's addresses as status.ips writes them
	// ("192.168.10.2/24"), set when Reason is "".
	IPs []string
	// Pods are the pods that run the owner (a plain pod, or the VM's
	// virt-launcher pods), Node its node ("" when not running).
	Pods []Carrier
	Node string
	// Reason is "" when the port holds its addresses, else why not, as
	// the IPsAllocated condition's reason (ReasonSubnetExhausted,
	// ReasonIPAddressConflict, ReasonMACAddressConflict,
	// ReasonNetworkNotManaged); Message says more.
	Reason, Message string
}

// ReasonNetworkNotManaged is the IPsAllocated reason for a claim on an
// OVN network ovn-sync does not manage (a topology or role it leaves to
// others): nobody will fill it.
const ReasonNetworkNotManaged = "NetworkNotManaged"

// lookup returns the claim of o's namespace called name, noting the
// look-up.
func (b *builder) lookup(o *owner, name string) *ipamclaimsv1alpha1.IPAMClaim {
	k := nsName{o.ns, name}
	b.lookups = append(b.lookups, lookup{state.KindIPAMClaim, k, o.id})
	return b.claims[k]
}

// indexClaims indexes in's claims by namespace and name.
func (b *builder) indexClaims(in Inputs) {
	if len(in.IPAMClaims) == 0 {
		return
	}
	b.claims = make(map[nsName]*ipamclaimsv1alpha1.IPAMClaim, len(in.IPAMClaims))
	for _, c := range in.IPAMClaims {
		if c == nil {
			continue
		}
		if k := (nsName{c.Namespace, c.Name}); b.claims[k] == nil {
			b.claims[k] = c
		}
	}
}

// readClaim finds the claim of s's port: the one its network selection
// element names (ipam-claim-reference: a plain pod's, or the VM's live
// virt-launcher pods' as ipam-extensions' webhook writes it), else, for a
// VM's network whose NAD allows persistent IPs, the claim ipam-extensions
// names after the VM and the network, when the VM owns it.
func (b *builder) readClaim(s *portSpec, at *attachment, cc netconf.ClaimConfig) {
	o := s.o
	ref, refSrc := at.claimRef, at.claimSrc
	if ref == "" && at.podIface != "" {
		ref, refSrc = b.launcherClaimRef(o, at)
	}
	if ref != "" {
		c := b.lookup(o, ref)
		if !cc.Persistent {
			b.ownerProblem(o, "InvalidClaimReference", fmt.Sprintf("%s %q: network %q does not allow persistent IPs "+
				"(its config has no \"allowPersistentIPs\": true); ignored", refSrc, ref, at.ref.String()))
			return
		}
		if c != nil {
			b.useClaim(s, c, cc)
		}
		return
	}
	if !cc.Persistent || at.podIface == "" || o.kind() == kindPod {
		return
	}
	c := b.lookup(o, ClaimName(o.name, at.iface))
	if c == nil {
		return
	}
	if why := b.notOwnedBy(c, o); why != "" {
		b.problemFor(o, state.KindIPAMClaim, c.Namespace, c.Name, "InvalidRecord",
			fmt.Sprintf("metadata.ownerReferences: %s, not %s, the owner of port %q; ignored", why, o.id, s.name))
		return
	}
	b.useClaim(s, c, cc)
}

// notOwnedBy says why claim c is not o's, "" when it is: an owner
// reference of o's kind and name (and UID, when the VM is known).
func (b *builder) notOwnedBy(c *ipamclaimsv1alpha1.IPAMClaim, o *owner) string {
	uid := ""
	if vm := o.vm().vm; vm != nil {
		uid = vm.UID
	}
	for _, r := range c.OwnerReferences {
		if r.Kind == o.kind() && r.Name == o.name {
			if uid != "" && r.UID != "" && string(r.UID) != uid {
				return fmt.Sprintf("owned by an earlier %s of that name (UID %s)", o.kind(), r.UID)
			}
			return ""
		}
	}
	if len(c.OwnerReferences) == 0 {
		return "owned by nobody"
	}
	return "owned by " + c.OwnerReferences[0].Kind + "/" + c.Namespace + "/" + c.OwnerReferences[0].Name
}

// launcherClaimRef returns the claim a VM's live virt-launcher pods name
// for the attachment at (its element: the NAD, with KubeVirt's pod
// interface name or none) and where.
func (b *builder) launcherClaimRef(o *owner, at *attachment) (string, string) {
	for _, p := range sortedLaunchers(o.vm().launchers) {
		v, _ := p.Annotations.Get(annNetworks)
		if !p.running || !strings.Contains(v, "ipam-claim-reference") {
			continue
		}
		sels, err := parseSelections(v, p.Namespace)
		if err != nil {
			continue // the pod's own problem, if it were an owner
		}
		for i, sel := range sels {
			if sel.claim != "" && sel.ref == at.ref && (sel.iface == "" || sel.iface == at.podIface) {
				return sel.claim, fmt.Sprintf("Pod %s/%s %s[%d].ipam-claim-reference", p.Namespace, p.Name, annNetworks, i)
			}
		}
	}
	return "", ""
}

// useClaim makes c the claim of s: checked against s's network, its
// status.ips read.
func (b *builder) useClaim(s *portSpec, c *ipamclaimsv1alpha1.IPAMClaim, cc netconf.ClaimConfig) {
	k := nsName{c.Namespace, c.Name}
	bad := func(format string, args ...any) {
		b.problemFor(s.o, state.KindIPAMClaim, c.Namespace, c.Name, "InvalidRecord", fmt.Sprintf(format, args...)+"; ignored")
	}
	if c.Spec.Network != cc.Name {
		bad("spec.network %q: port %q is on network %q (NetworkAttachmentDefinition %s)", c.Spec.Network, s.name, cc.Name, s.net.key)
		return
	}
	if other := b.claimedBy[k]; other != "" && other != s.name {
		if !b.claimShared(s, b.specNamed(other), c) {
			return
		}
	}
	if b.claimedBy == nil {
		b.claimedBy = map[nsName]string{}
	}
	b.claimedBy[k] = s.name
	u := &claimUse{obj: c, src: state.KindIPAMClaim + " " + c.Namespace + "/" + c.Name + " status.ips"}
	vals := make([]string, 0, len(c.Status.IPs))
	for _, v := range c.Status.IPs {
		vals = append(vals, claimAddr(v))
	}
	if len(vals) > 0 {
		got, why := recordIPs(s.net, vals)
		if why != "" {
			bad("status.ips %q: %s", strings.Join(c.Status.IPs, ","), why)
			return
		}
		u.ip = got
	}
	s.claim = u
}

// claimShared settles claim c, read by s and by other (the port it was
// given to first): the port whose NB row holds one of the claim's
// addresses keeps it, else the older owner's. It reports which keeps it and
// which is refused, on the claim, and reports whether s keeps it (other's
// reference is then dropped).
func (b *builder) claimShared(s, other *portSpec, c *ipamclaimsv1alpha1.IPAMClaim) bool {
	keep, refuse := other, s
	switch {
	case other == nil:
		keep, refuse = s, nil
	case b.holdsClaim(s, c) && !b.holdsClaim(other, c):
		keep, refuse = s, other
	case !b.holdsClaim(other, c) && !b.holdsClaim(s, c) && comparePriority(s, other) < 0:
		keep, refuse = s, other
	}
	if refuse == nil {
		return true
	}
	why := "the older owner's"
	if b.holdsClaim(keep, c) {
		why = "it holds the claim's address"
	}
	b.problemFor(refuse.o, state.KindIPAMClaim, c.Namespace, c.Name, "InvalidRecord", fmt.Sprintf(
		"referenced by port %q (%s) and by port %q (%s): it is the record of port %q (%s); port %q's reference is refused",
		keep.name, keep.o.id, refuse.name, refuse.o.id, keep.name, why, refuse.name))
	if keep != s {
		return false
	}
	other.claim = nil
	return true
}

// holdsClaim reports whether s's row in the NB holds one of c's addresses.
func (b *builder) holdsClaim(s *portSpec, c *ipamclaimsv1alpha1.IPAMClaim) bool {
	hp := b.haveRow(s.name)
	if hp == nil || hp.Owner != s.o.id && !(hp.Vendor() != "" && b.adopt == hp.Vendor()) {
		return false
	}
	held := addr.ParseLSP(hp.Addresses)
	for _, v := range c.Status.IPs {
		if a, err := netip.ParseAddr(claimAddr(v)); err == nil && (held.IP[ipv4] == a || held.IP[ipv6] == a) {
			return true
		}
	}
	return false
}

// claimAddr is the address of one entry of status.ips: ovn-kubernetes
// writes CIDRs ("192.168.10.2/24"); a bare address is read too.
func claimAddr(v string) string {
	v = strings.TrimSpace(v)
	if a, _, ok := strings.Cut(v, "/"); ok {
		return a
	}
	return v
}

// takeClaim makes s's claim its record where s has no other record of an
// IP and its port holds none (h): the claim is the record of last resort.
func (s *portSpec) takeClaim(h addr.LSP) {
	c := s.claim
	if c == nil || !c.ip[ipv4].IsValid() && !c.ip[ipv6].IsValid() || s.rec.ipSrc != "" || h.IP[ipv4].IsValid() || h.IP[ipv6].IsValid() {
		return
	}
	r := *s.rec
	r.ip, r.ipSrc = c.ip, c.src
	s.rec = &r
}

// checkClaims reports every claim whose status.ips differ from what its
// port holds once resolved: the port keeps them, and the claim is never
// written over.
func (b *builder) checkClaims() {
	for _, s := range b.specs {
		c := s.claim
		if c == nil || s.state != specBuild || !c.ip[ipv4].IsValid() && !c.ip[ipv6].IsValid() {
			continue
		}
		if c.ip == s.ip {
			continue
		}
		var holds []string
		for f, a := range s.ip {
			if a.IsValid() {
				holds = append(holds, fmt.Sprintf("%s (%s)", a, s.src[f]))
			}
		}
		b.problemFor(s.o, state.KindIPAMClaim, c.obj.Namespace, c.obj.Name, "ClaimMismatch",
			fmt.Sprintf("status.ips %q: port %q holds %s: kept, and the claim is not written over",
				strings.Join(c.obj.Status.IPs, ","), s.name, strings.Join(holds, " ")))
	}
}

// reserveClaims reserves the addresses of every claim no port read (its
// owner gone, or no longer on the network) on each managed network whose
// config names the claim's network and allows persistent IPs.
func (b *builder) reserveClaims() {
	if len(b.claims) == 0 {
		return
	}
	keys := make([]nsName, 0, len(b.claims))
	for k, c := range b.claims {
		if len(c.Status.IPs) > 0 && b.claimedBy[k] == "" {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y nsName) int { return cmpStrings(x.ns, y.ns, x.name, y.name) })
	for _, k := range keys {
		c := b.claims[k]
		for _, n := range b.claimNets[c.Spec.Network] {
			var addrs []string
			for _, v := range c.Status.IPs {
				if a, err := netconf.ParseIP(claimAddr(v)); err == nil && n.unusable(a) == "" {
					addrs = append(addrs, a.String())
				}
			}
			if len(addrs) == 0 {
				continue
			}
			b.reserved = append(b.reserved, reservation{sw: n.sw, port: &state.Port{
				Name:      fmt.Sprintf("%s/%s (IPAMClaim, its owner not on the network)", c.Namespace, c.Name),
				Addresses: []string{strings.Join(addrs, " ")},
			}})
		}
	}
}

// claimFacts returns what publishing needs of s's claim, nil when s has
// none.
func (s *portSpec) claimFacts() *ClaimFacts {
	c := s.claim
	if c == nil {
		return nil
	}
	o := s.o
	f := &ClaimFacts{Claim: c.obj, Owner: o.id, Port: s.name, Pods: o.carriers(), Node: o.chassis}
	switch {
	case s.state == specBuild:
		for fam, a := range s.ip {
			if a.IsValid() {
				f.IPs = append(f.IPs, netip.PrefixFrom(a, s.net.fam[fam].prefix.Bits()).String())
			}
		}
	case s.fail != nil:
		f.Reason, f.Message = s.fail.reason, s.fail.msg
	default:
		return nil // kept as it is: nothing new to say
	}
	return f
}

// unmanagedClaim notes the claim of o's attachment at to a NAD of an OVN
// network ovn-sync does not manage (e): nobody fills it, and its status
// says so.
func (b *builder) unmanagedClaim(o *owner, at *attachment, e nadEntry) {
	name := at.claimRef
	if name == "" && at.podIface != "" {
		name, _ = b.launcherClaimRef(o, at)
	}
	if name == "" && e.cc.Persistent && at.podIface != "" && o.kind() != kindPod {
		name = ClaimName(o.name, at.iface)
	}
	if name == "" {
		return
	}
	c := b.lookup(o, name)
	if c == nil || c.Spec.Network != e.cc.Name || len(c.Status.IPs) > 0 {
		return
	}
	f := &ClaimFacts{Claim: c, Owner: o.id, Pods: o.carriers(), Node: o.chassis,
		Reason:  ReasonNetworkNotManaged,
		Message: fmt.Sprintf("network %q (NetworkAttachmentDefinition %s) %s: ovn-sync allocates no addresses on it", c.Spec.Network, at.ref.String(), e.why)}
	b.claimNotes = append(b.claimNotes, f)
}
