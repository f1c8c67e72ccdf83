package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// Annotations ovn-sync reads requests from, other than kube-ovn's own
// (AnnIPSuffix and the rest).
const (
	annNetworks = nadv1.NetworkAttachmentAnnot // k8s.v1.cni.cncf.io/networks
	// annDefaultNetwork puts a pod's primary interface on a
	// NetworkAttachmentDefinition instead of the default network (Multus).
	annDefaultNetwork = "v1.multus-cni.io/default-network"
	// multusNamespace is where Multus looks for a default network named
	// without a namespace (its multusNamespace setting's default).
	multusNamespace = "kube-system"
)

// attachment is one network interface an owner asks for.
type attachment struct {
	isDefault bool
	ref       nadRef // when !isDefault
	// iface names the interface; it suffixes the provider of the second and
	// later attachments to one network.
	iface string
	// merged is set once a networks-annotation element was folded in.
	merged bool
	// reqIface is the interface a networks-annotation element names
	// explicitly ("" when none): kube-ovn's per-interface annotations
	// <nad>.<ns>.kubernetes.io/ip_address.<iface> are keyed by it.
	reqIface string
	// podIface is, for a VM's secondary network, the name KubeVirt gives
	// its pod interface in the launcher pod's networks annotation
	// (kubevirtPodIface): named explicitly, as reqIface is.
	podIface string
	ips      []request
	macs     []request
	// claimRef is the IPAMClaim a selection element names
	// ("ipam-claim-reference"), claimSrc where.
	claimRef, claimSrc string
}

// request is an address asked for outside the kube-ovn annotations: in a
// network selection element or a KubeVirt interface.
type request struct {
	src    string // e.g. `k8s.v1.cni.cncf.io/networks[0].ips`
	values []string
}

func (b *builder) addPods(in Inputs) {
	for _, p := range in.Pods {
		if p == nil {
			continue
		}
		if isLauncher(p) {
			b.addLauncher(p)
			continue
		}
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		o := b.newOwner(kindPod, p.Namespace, p.Name, p.CreationTimestamp.Time)
		if !b.validNames(o, "metadata.name") {
			continue
		}
		o.chassis, o.objects.pod = p.Spec.NodeName, p
		atts, ok := b.primaryAttachment(o, p.Annotations, b.atts[:0], "eth0")
		atts, annOK := b.annotationAttachments(o, p.Annotations, atts)
		names := b.addOwner(o, atts, p.Annotations)
		if !ok || !annOK {
			b.keepOwnerPorts(o, names)
		}
		b.atts = atts
	}
}

// primaryAttachment adds a pod's primary interface: the default network,
// unless the v1.multus-cni.io/default-network annotation puts it on a
// NetworkAttachmentDefinition. ok is false when that annotation cannot be
// read.
func (b *builder) primaryAttachment(o *owner, ann map[string]string, atts []attachment, iface string) ([]attachment, bool) {
	v := strings.TrimSpace(ann[annDefaultNetwork])
	if v == "" {
		return append(atts, attachment{isDefault: true, iface: iface}), true
	}
	sels, err := parseSelections(v, multusNamespace)
	switch {
	case err != nil:
		b.ownerProblem(o, "InvalidAnnotation", annDefaultNetwork+" "+err.Error())
		return atts, false
	case len(sels) != 1:
		b.ownerProblem(o, "InvalidAnnotation", fmt.Sprintf("%s %q: names %d networks, want one", annDefaultNetwork, v, len(sels)))
		return atts, false
	}
	at := attachment{ref: sels[0].ref, iface: iface}
	at.addSelection(sels[0], annDefaultNetwork)
	return append(atts, at), true
}

func (b *builder) addVirtualMachines(in Inputs) {
	for _, vm := range in.VirtualMachines {
		if vm == nil {
			continue
		}
		e := b.kv.get(nsName{vm.Namespace, vm.Name})
		if e.vm != vm {
			continue // a duplicate
		}
		o := b.newOwner(kindVirtualMachine, vm.Namespace, vm.Name, vm.CreationTimestamp.Time)
		if !b.validNames(o, "metadata.name") {
			continue
		}
		vmiEntry := b.vmiEntry(e.vmi, e, vm.Name)
		o.chassis, o.activationStrategy = b.chassis(e.vmi, vmiEntry)
		o.objects.vm = vm
		if vmiEntry != nil {
			o.objects.launchers = vmiEntry.launchers
		} else {
			o.objects.launchers = e.launchers
		}
		var spec *kubevirtv1.VirtualMachineInstanceSpec
		var ann map[string]string
		if t := vm.Spec.Template; t != nil {
			spec, ann = &t.Spec, t.ObjectMeta.Annotations
		}
		atts, ok := b.kubevirtAttachments(o, spec, ann, "spec.template.spec", b.atts[:0])
		if vmi := e.vmi; vmi != nil && !vmi.IsFinal() {
			// The VMI is a copy of the template as it was when the VM
			// started: its requests are what the guest runs with. Its
			// problems are the template's, reported once.
			n := len(b.problems)
			o.running, _ = b.kubevirtAttachments(o, &vmi.Spec, vmi.Annotations, "spec", b.vmiAtts[:0])
			b.dropProblems(n)
			b.vmiAtts = o.running
			o.runningAnn = vmi.Annotations
		}
		if names := b.addOwner(o, atts, ann); !ok {
			b.keepOwnerPorts(o, names)
		}
		b.atts = atts
	}
}

// addVirtualMachineInstances adds the VMIs no existing VM owns. A VMI whose
// owner reference names a VM that is gone (being garbage collected) keeps
// the VM's port, named and owned as the VM's, until it ends: it is still
// that VM running.
func (b *builder) addVirtualMachineInstances(in Inputs) {
	for i, vmi := range in.VirtualMachineInstances {
		if vmi == nil || vmi.IsFinal() || b.kv.vmiHasVM[i] {
			continue
		}
		var o *owner
		field := "metadata.name"
		if r := vmOwnerRef(vmi.OwnerReferences); r != nil && r.Name != "" {
			o = b.newOwner(kindVirtualMachine, vmi.Namespace, r.Name, vmi.CreationTimestamp.Time)
			o.vmi = vmi.Name
			field = "metadata.ownerReferences[VirtualMachine].name"
		} else {
			o = b.newOwner(kindVirtualMachineInst, vmi.Namespace, vmi.Name, vmi.CreationTimestamp.Time)
		}
		if !b.validNames(o, field) {
			continue
		}
		e := b.vmiEntry(vmi, nil, "")
		o.chassis, o.activationStrategy = b.chassis(vmi, e)
		if e != nil {
			o.objects.launchers = e.launchers
		}
		atts, ok := b.kubevirtAttachments(o, &vmi.Spec, vmi.Annotations, "spec", b.atts[:0])
		if names := b.addOwner(o, atts, vmi.Annotations); !ok {
			b.keepOwnerPorts(o, names)
		}
		b.atts = atts
	}
}

// kubevirtAttachments reads a VMI spec's networks (with their interfaces)
// and the networks annotation into atts. ok is false when some network
// could not be read, so the owner's other ports must be kept.
func (b *builder) kubevirtAttachments(o *owner, spec *kubevirtv1.VirtualMachineInstanceSpec, ann map[string]string, field string, atts []attachment) ([]attachment, bool) {
	var nets []kubevirtv1.Network
	var ifaces []kubevirtv1.Interface
	autoattach := true
	if spec != nil {
		nets, ifaces = spec.Networks, spec.Domain.Devices.Interfaces
		if a := spec.Domain.Devices.AutoattachPodInterface; a != nil {
			autoattach = *a
		}
	}
	ok := true
	if len(nets) == 0 && len(ifaces) == 0 && autoattach {
		// KubeVirt attaches the pod network when nothing is declared.
		atts, ok = b.primaryAttachment(o, ann, atts, "default")
	}
	multusDefault := false
	for i := range nets {
		if m := nets[i].Multus; m != nil && m.Default {
			multusDefault = true
		}
	}
	for i := range nets {
		n := &nets[i]
		if slices.ContainsFunc(nets[:i], func(m kubevirtv1.Network) bool { return m.Name == n.Name }) {
			// KubeVirt rejects this; objects read from files are not checked.
			b.ownerProblem(o, "InvalidNetwork", fmt.Sprintf("%s.networks[%s]: network name used more than once", field, n.Name))
			ok = false
			continue
		}
		var ifc *kubevirtv1.Interface
		for j := range ifaces {
			if ifaces[j].Name == n.Name {
				ifc = &ifaces[j]
				break
			}
		}
		if ifc != nil && ifc.State == kubevirtv1.InterfaceStateAbsent {
			continue // hot-unplugged
		}
		var macs []request
		if ifc != nil && ifc.MacAddress != "" {
			macs = []request{{src: field + ".domain.devices.interfaces[" + n.Name + "].macAddress", values: []string{ifc.MacAddress}}}
		}
		if n.Multus != nil {
			ref, err := parseNetworkName(n.Multus.NetworkName, o.ns)
			if err != nil {
				b.ownerProblem(o, "InvalidNetwork",
					fmt.Sprintf("%s.networks[%s].multus.networkName %q: %v", field, n.Name, n.Multus.NetworkName, err))
				ok = false
				continue
			}
			at := attachment{ref: ref, iface: n.Name, macs: macs}
			if !n.Multus.Default {
				at.podIface = kubevirtPodIface(n.Name) // the primary interface is eth0
			}
			atts = append(atts, at)
			continue
		}
		// pod: {} or no source at all, which KubeVirt defaults to the pod
		// network; a multus network marked default replaces it, as does the
		// v1.multus-cni.io/default-network annotation.
		if multusDefault {
			continue
		}
		var primOK bool
		atts, primOK = b.primaryAttachment(o, ann, atts, n.Name)
		ok = ok && primOK
		if primOK {
			atts[len(atts)-1].macs = append(atts[len(atts)-1].macs, macs...)
		}
	}
	atts, annOK := b.annotationAttachments(o, ann, atts)
	return atts, ok && annOK
}

// addSelection adds a network selection element's requests to at; src
// names the annotation it came from.
func (at *attachment) addSelection(sel selection, src string) {
	at.merged = true
	if len(sel.ips) > 0 {
		at.ips = append(at.ips, request{src: src + ".ips", values: sel.ips})
	}
	if sel.mac != "" {
		at.macs = append(at.macs, request{src: src + ".mac", values: []string{sel.mac}})
	}
	if sel.claim != "" {
		at.claimRef, at.claimSrc = sel.claim, src+".ipam-claim-reference"
	}
}

// annotationAttachments adds the elements of the networks annotation to
// atts. An element naming a NAD already attached from a KubeVirt network,
// with no interface or that network's name, adds its requests to that
// attachment instead of a second one. ok is false when the annotation cannot
// be read.
func (b *builder) annotationAttachments(o *owner, ann map[string]string, atts []attachment) ([]attachment, bool) {
	v := ann[annNetworks]
	if strings.TrimSpace(v) == "" {
		return atts, true
	}
	sels, err := parseSelections(v, o.ns)
	if err != nil {
		b.ownerProblem(o, "InvalidAnnotation", annNetworks+" "+err.Error())
		return atts, false
	}
	n := len(atts)
	for i, sel := range sels {
		var at *attachment
		for j := 0; j < n; j++ {
			c := &atts[j]
			if !c.isDefault && !c.merged && c.ref == sel.ref && (sel.iface == "" || sel.iface == c.iface) {
				at = c
				break
			}
		}
		if at == nil {
			iface := sel.iface
			if iface == "" {
				iface = "net" + strconv.Itoa(i+1) // Multus' own default name
			}
			atts = append(atts, attachment{ref: sel.ref, iface: iface})
			at = &atts[len(atts)-1]
		}
		at.addSelection(sel, annNetworks+"["+strconv.Itoa(i)+"]")
		if sel.iface != "" {
			at.reqIface = sel.iface
		}
	}
	return atts, true
}

// addOwner turns an owner's attachments into port specs and returns the
// names of the ports they want. When the owner's list of networks could
// not be read whole, the caller keeps its other ports (keepOwnerPorts).
// The slice is reused by the next call.
func (b *builder) addOwner(o *owner, atts []attachment, ann map[string]string) []string {
	names := b.names[:0]
	guessed := false
	for i := range atts {
		at := &atts[i]
		choice := networkChoice{isDefault: at.isDefault, provider: providerDefault}
		an := b.attachmentNetwork(o, at, &choice)
		guessed = guessed || an.guessed
		if an.unmanaged {
			continue
		}
		n, known, provider, e := an.n, an.known, an.provider, an.e
		name := o.base
		suffix, legacy := ifaceSuffix(atts, i)
		// A port named as before kube-ovn's names were followed keeps its
		// name: a running pod's interface is plugged into it.
		if suffix != legacy && b.ownedHave(o, portName(o, provider, legacy)) != nil && b.ownedHave(o, portName(o, provider, suffix)) == nil {
			suffix = legacy
		}
		provider = withSuffix(provider, suffix)
		if provider != providerDefault {
			name = o.base + "." + provider
		}
		names = append(names, name)
		if known && n == nil {
			choice.key = provider
			n, known = b.chooseNetwork(o, choice, name, b.switchAnnotations(o, ann))
		}
		if !known {
			b.keepPort(o, name, provider)
			continue
		}
		if len(name) > MaxPortName {
			netKey := state.DefaultNetwork
			if !at.isDefault {
				netKey = at.ref.String()
			}
			b.ownerProblem(o, "NameTooLong", fmt.Sprintf("metadata.name: port name %s on network %q is longer than %d bytes",
				abbreviate(name), netKey, MaxPortName))
			b.keepPort(o, name, provider)
			continue
		}
		s := b.newSpec(o, name)
		s.net, s.provider = n, provider
		if !b.readRequests(s, at, ann, provider, &s.req) {
			b.keepPort(o, name, provider)
			continue
		}
		if o.running != nil {
			b.readRunning(s, at)
		}
		if o.running != nil || o.runningAnn != nil {
			b.switchRestartRequired(s, choice, ann)
		}
		b.readRecords(s)
		if !at.isDefault {
			b.readClaim(s, at, e.cc)
		}
		b.add(s)
	}
	if guessed {
		// A NAD whose provider is unknown: any port of the owner may be on
		// it, under a name not guessed here. Keep them all.
		b.keepOwnerPorts(o, names)
		for _, p := range b.haveByOwner[o.id] {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	b.names = names
	return names
}

// attachmentNet is what an attachment's NAD says of its network.
type attachmentNet struct {
	e nadEntry
	// provider names the attachment's ports and annotations (before an
	// interface suffix); n is its network when the NAD fixes one (nil
	// when a Subnet is chosen per port, or unknown: known false).
	provider string
	n        *network
	known    bool
	// unmanaged is set for a NAD whose network is not ovn-sync's: no
	// port. guessed is set when the NAD's provider is unknown, so are its
	// ports' names.
	unmanaged, guessed bool
}

// attachmentNetwork reads at's NAD (none for the default network),
// recording the lookup for o and a Problem when the NAD is missing or
// invalid. A kube-ovn NAD without subnets sets choice's provider: its
// network is one of that provider's Subnets.
func (b *builder) attachmentNetwork(o *owner, at *attachment, choice *networkChoice) attachmentNet {
	an := attachmentNet{provider: providerDefault, known: true}
	if at.isDefault {
		return an
	}
	an.provider = at.ref.name + "." + at.ref.ns + providerSuffix
	e, found := b.nads[at.ref]
	an.e = e
	b.lookups = append(b.lookups, lookup{kindNAD, nsName(at.ref), o.id})
	if e.provider != "" {
		an.provider = e.provider
	} else if !found || e.state == nadInvalid {
		an.guessed = true
	}
	switch {
	case !found:
		b.ownerProblem(o, "UnknownNetworkAttachmentDefinition",
			fmt.Sprintf("network %q: NetworkAttachmentDefinition not found", at.ref.String()))
		an.known = false
	case e.state == nadInvalid:
		b.ownerProblem(o, "UnknownNetworkAttachmentDefinition",
			fmt.Sprintf("network %q: NetworkAttachmentDefinition %s (see its own problem)", at.ref.String(), e.why))
		an.known = false
		if e.unmanaged {
			b.unmanagedClaim(o, at, e)
		}
	case e.state == nadUnmanaged:
		an.unmanaged = true
	case e.bySubnet:
		choice.provider = e.provider
	default:
		an.n = e.net
	}
	return an
}

// ifaceSuffix returns the interface name that suffixes the provider of
// atts[i], "" for none, as kube-ovn names the ports of a network attached
// more than once: every attachment to it whose interface is named (a
// networks-annotation element's "interface" or "@iface", or the pod
// interface KubeVirt names after a VM's network) is suffixed with that
// name; of the others, every one but the first with the name Multus gives
// it (net<i>). legacy is the suffix ovn-sync gave before: none for the
// first attachment, the interface for the others.
func ifaceSuffix(atts []attachment, i int) (suffix, legacy string) {
	at := &atts[i]
	same := func(x attachment) bool { return x.isDefault == at.isDefault && x.ref == at.ref }
	first := slices.IndexFunc(atts, same) == i
	if !first {
		legacy = at.iface
	}
	if first && slices.IndexFunc(atts[i+1:], same) < 0 {
		return "", "" // attached once
	}
	switch {
	case at.reqIface != "":
		return at.reqIface, legacy
	case at.podIface != "":
		return at.podIface, legacy
	}
	return legacy, legacy
}

func withSuffix(provider, suffix string) string {
	if suffix == "" {
		return provider
	}
	return provider + "." + suffix
}

// portName is the name of o's port on the network of provider, its
// interface suffix suffix.
func portName(o *owner, provider, suffix string) string {
	provider = withSuffix(provider, suffix)
	if provider == providerDefault {
		return o.base
	}
	return o.base + "." + provider
}

// kubevirtPodIface is the name KubeVirt gives the pod interface of a VM's
// secondary (Multus) network, which it writes as the "interface" of the
// network's element in the launcher pod's networks annotation: "pod" and
// the first 11 hex digits of the SHA-256 of the network's name (KubeVirt's
// hashed network name scheme, pkg/network/namescheme).
func kubevirtPodIface(network string) string {
	sum := sha256.Sum256([]byte(network))
	return "pod" + hex.EncodeToString(sum[:])[:11]
}

// switchAnnotations returns the annotations whose logical_switch says
// where o's ports go: for a VM whose VMI runs, the VMI's (a template edit
// waits for the next start), else ann.
func (b *builder) switchAnnotations(o *owner, ann map[string]string) map[string]string {
	if o.running != nil || o.runningAnn != nil {
		return o.runningAnn
	}
	return ann
}

// switchRestartRequired notes, for a VM whose VMI runs, a template whose
// <provider>.kubernetes.io/logical_switch names another Subnet than the one
// s's port is on: the VMI keeps the one it was started with (KubeVirt
// copied the template into it), so the port moves, and is renumbered, when
// the VM starts again — a RestartRequired notice, as for addresses. A
// template naming no Subnet the interface may be on is reported by the next
// start.
func (b *builder) switchRestartRequired(s *portSpec, c networkChoice, tmpl map[string]string) {
	v := strings.TrimSpace(providerAnnotation(tmpl, s.provider, AnnLogicalSwitchSuffix))
	if v == "" || v == s.net.sw {
		return
	}
	if n, known := b.subnetOf(v); !known || !b.qualifies(c, n) {
		return
	}
	o := s.o
	b.notices = append(b.notices, Problem{Kind: o.kind, Namespace: o.ns, Name: o.name, Reason: "RestartRequired",
		Message: fmt.Sprintf("network %q: the template asks for Subnet %s (now %s, %s%s); port %q stays on %s with its running addresses until the VM starts again",
			s.net.key, v, s.net.sw, s.provider, AnnLogicalSwitchSuffix, s.name, s.net.sw)})
}

// readRunning sets, for a VM whose VMI runs, s.req to the requests of the
// VMI's attachment that matches at (none if the VMI has no such network)
// and s.tmpl to the template's.
func (b *builder) readRunning(s *portSpec, at *attachment) {
	s.tmpl = s.req
	s.req = &noRequest
	o := s.o
	for i := range o.running {
		r := &o.running[i]
		if r.isDefault == at.isDefault && r.ref == at.ref && r.iface == at.iface {
			n := len(b.problems)
			if !b.readRequests(s, r, o.runningAnn, s.provider, &s.req) {
				s.req = &noRequest
			}
			b.dropProblems(n)
			return
		}
	}
}

// MaxPortName is the longest logical switch port name ovn-sync creates, in
// bytes: the longest name Kubernetes gives an object (an RFC 1123
// subdomain), so that tools which name an object after the port, as
// kube-ovn does its IP resources, can. Each part of a port name is within
// Kubernetes' limits, but together they may not be (DESIGN.md, "Port
// names"): an owner whose port name would be longer gets a NameTooLong
// Problem and no new port, and keeps any port it has.
const MaxPortName = 253

// validNames reports whether o's namespace and name are ones Kubernetes
// accepts (an RFC 1123 label and subdomain), recording an InvalidName
// Problem when not. Objects read from files are not validated by an API
// server; a name that is not a Kubernetes name cannot be a CNI's iface-id.
// An owner with an invalid name keeps whatever ports it has.
func (b *builder) validNames(o *owner, field string) bool {
	switch {
	case !netconf.IsDNSLabel(o.ns):
		b.ownerProblem(o, "InvalidName", fmt.Sprintf("metadata.namespace %s: not a valid namespace (RFC 1123 label, at most 63 characters)", abbreviate(o.ns)))
	case !netconf.IsDNSSubdomain(o.name):
		b.ownerProblem(o, "InvalidName", fmt.Sprintf("%s %s: not a valid object name (RFC 1123 subdomain, at most 253 characters)", field, abbreviate(o.name)))
	default:
		return true
	}
	b.keepOwnerPorts(o, nil)
	return false
}

// abbreviate quotes s, cut to its first 64 bytes and followed by its length
// when longer, so that a hostile name does not make a Problem unreadable.
func abbreviate(s string) string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// readRequests fills *dst with the addresses requested for s from the
// kube-ovn annotations for provider and from at. It reports false, after
// recording a Problem, when a request is invalid.
func (b *builder) readRequests(s *portSpec, at *attachment, ann map[string]string, provider string, dst **requested) bool {
	var ipKey, macKey string
	granted := false
	if len(ann) > 0 {
		ipKey, macKey = provider+AnnIPSuffix, provider+AnnMACSuffix
		granted = ann[provider+AnnAllocatedSuffix] == "true"
	}
	r := reqReader{b: b, s: s, dst: dst, granted: granted}
	if v := strings.TrimSpace(ann[ipKey]); ipKey != "" && v != "" {
		if !r.ip(ipKey, v, strings.Split(v, ",")) {
			return false
		}
	}
	if at.reqIface != "" && len(ann) > 0 {
		k := at.ref.name + "." + at.ref.ns + AnnIPSuffix + "." + at.reqIface
		if v := strings.TrimSpace(ann[k]); v != "" && !r.ip(k, v, strings.Split(v, ",")) {
			return false
		}
	}
	for _, q := range at.ips {
		vals := make([]string, len(q.values))
		for i, x := range q.values {
			// Multus "ips" are usually CIDRs; only the address matters here.
			x, _, _ = strings.Cut(x, "/")
			vals[i] = x
		}
		if !r.ip(q.src, strings.Join(q.values, ","), vals) {
			return false
		}
	}
	if v := strings.TrimSpace(ann[macKey]); macKey != "" && v != "" {
		if !r.mac(macKey, v) {
			return false
		}
	}
	if at.reqIface != "" && len(ann) > 0 {
		k := at.ref.name + "." + at.ref.ns + AnnMACSuffix + "." + at.reqIface
		if v := strings.TrimSpace(ann[k]); v != "" && !r.mac(k, v) {
			return false
		}
	}
	for _, q := range at.macs {
		if !r.mac(q.src, q.values[0]) {
			return false
		}
	}
	if len(ann) > 0 && r.ipFrom == "" {
		if v := strings.TrimSpace(providerAnnotation(ann, provider, AnnIPPoolSuffix)); v != "" {
			return r.pool(provider+AnnIPPoolSuffix, v)
		}
	}
	return true
}

// reqReader validates the requests of one port and merges them: requests
// from several places must agree.
type reqReader struct {
	b   *builder
	s   *portSpec
	dst **requested
	// granted is set when the kube-ovn "allocated" annotation says the
	// addresses were given out before (by kube-ovn or by ovn-sync).
	granted         bool
	ipFrom, macFrom string // the value of the first request, for messages
}

func (r *reqReader) bad(src, value, why string) bool {
	r.b.ownerProblem(r.s.o, "InvalidAddressRequest", fmt.Sprintf("%s %q: %s", src, value, why))
	return false
}

func (r *reqReader) out() *requested {
	if *r.dst == &noRequest {
		*r.dst = &requested{granted: r.granted}
	}
	return *r.dst
}

// ip validates one IP request against the port's network. An excluded
// address is refused unless it was granted before (the port holds it, or
// the allocated annotation says so): a guest keeps what it has.
func (r *reqReader) ip(src, raw string, vals []string) bool {
	var got [2]netip.Addr
	for _, v := range vals {
		v = strings.TrimSpace(v)
		a, err := netconf.ParseIP(v)
		if err != nil {
			if v == "" {
				v = raw
			}
			return r.bad(src, v, err.Error())
		}
		f := familyOf(a)
		switch why := r.refused(a); {
		case why != "":
			return r.bad(src, v, why)
		case got[f].IsValid():
			return r.bad(src, raw, "more than one "+familyName[f]+" address")
		}
		got[f] = a
	}
	if !got[ipv4].IsValid() && !got[ipv6].IsValid() {
		return true
	}
	if r.ipFrom != "" {
		if got != (*r.dst).ip {
			return r.bad(src, raw, fmt.Sprintf("conflicts with %s %q", (*r.dst).ipSrc, r.ipFrom))
		}
		return true
	}
	q := r.out()
	q.ip, q.ipSrc, r.ipFrom = got, src, raw
	return true
}

// refused says why a cannot be granted to this port, or "": it can never
// be a port's address on the network, or it is excluded and was not
// granted before (the port holds it, or the allocated annotation says so).
func (r *reqReader) refused(a netip.Addr) string {
	n := r.s.net
	if why := n.unusable(a); why != "" {
		return why
	}
	if why := n.fam[familyOf(a)].reservedByOVN(a, n.key); why != "" && !r.granted && !r.b.holds(r.s, a) {
		return why
	}
	return ""
}

func (r *reqReader) mac(src, v string) bool {
	m, err := addr.ParseMAC(v)
	if err != nil {
		return r.bad(src, v, err.Error())
	}
	if r.macFrom != "" {
		if m != (*r.dst).mac {
			return r.bad(src, v, fmt.Sprintf("conflicts with %s %q", (*r.dst).macSrc, r.macFrom))
		}
		return true
	}
	q := r.out()
	q.mac, q.macSrc, r.macFrom = m, src, v
	return true
}

// holds reports whether s's port in have holds a.
func (b *builder) holds(s *portSpec, a netip.Addr) bool {
	hp := b.ownedHave(s.o, s.name)
	return hp != nil && addr.ParseLSP(hp.Addresses).IP[familyOf(a)] == a
}

// readRecords reads what s's owner was recorded to hold on s's network:
// the kube-ovn annotations (ip_address, mac_address) for s's provider on
// the owner's live virt-launcher pods, oldest first, then on the VM itself,
// then kube-ovn's IP object named after the port (for any owner, plain
// pods too). The first object with a value wins, per kind of value. A record that
// cannot be an address on the network is a Problem on its object, and
// ignored.
func (b *builder) readRecords(s *portSpec) {
	obj := &s.o.objects
	var r requested
	if obj.vm == nil && obj.launchers.one == nil {
		// A plain pod: its annotations are requests.
	} else if obj.launchers.more == nil {
		if p := obj.launchers.one; p != nil && liveLauncher(p) {
			b.readRecord(s, &r, kindPod, p.Namespace, p.Name, p.Annotations)
		}
	} else {
		for _, p := range sortedLaunchers(obj.launchers) {
			if liveLauncher(p) {
				b.readRecord(s, &r, kindPod, p.Namespace, p.Name, p.Annotations)
			}
		}
	}
	if vm := obj.vm; vm != nil {
		b.readRecord(s, &r, kindVirtualMachine, vm.Namespace, vm.Name, vm.Annotations)
	}
	if ip := b.ipObject(s.name); ip != nil {
		b.readIPRecord(s, &r, ip)
	}
	if r.ipSrc != "" || r.macSrc != "" {
		q := r
		s.rec = &q
	}
}

// readRecord reads one object's record of s's addresses into r, where r
// has none yet.
func (b *builder) readRecord(s *portSpec, r *requested, kind, ns, name string, ann map[string]string) {
	if len(ann) == 0 {
		return
	}
	if v := strings.TrimSpace(providerAnnotation(ann, s.provider, AnnIPSuffix)); v != "" && r.ipSrc == "" {
		key := s.provider + AnnIPSuffix
		got, why := recordIPs(s.net, strings.Split(v, ","))
		if why != "" {
			b.problemFor(s.o, kind, ns, name, "InvalidRecord", fmt.Sprintf("%s %q: %s; ignored", key, v, why))
		} else if got[ipv4].IsValid() || got[ipv6].IsValid() {
			r.ip, r.ipSrc = got, recordSource(kind, ns, name, key)
		}
	}
	if v := strings.TrimSpace(providerAnnotation(ann, s.provider, AnnMACSuffix)); v != "" && r.macSrc == "" {
		key := s.provider + AnnMACSuffix
		m, err := addr.ParseMAC(v)
		if err != nil {
			b.problemFor(s.o, kind, ns, name, "InvalidRecord", fmt.Sprintf("%s %q: %v; ignored", key, v, err))
			return
		}
		r.mac, r.macSrc = m, recordSource(kind, ns, name, key)
	}
}

// recordIPs reads the addresses a record lists for network n, at most one
// per family; why says what is wrong with them, if anything.
func recordIPs(n *network, vals []string) (got [2]netip.Addr, why string) {
	for _, w := range vals {
		a, err := netconf.ParseIP(w)
		switch {
		case err != nil:
			why = err.Error()
		case n.unusable(a) != "":
			why = n.unusable(a)
		case got[familyOf(a)].IsValid():
			why = "more than one " + familyName[familyOf(a)] + " address"
		}
		if why != "" {
			return [2]netip.Addr{}, why
		}
		got[familyOf(a)] = a
	}
	return got, ""
}

// readIPRecord reads kube-ovn's IP object of s's port into r, where r has
// no value yet: v4IpAddress and v6IpAddress (else ipAddress) and
// macAddress. An IP object that names another owner, or another switch,
// is not s's record: a Problem on the IP, and ignored.
func (b *builder) readIPRecord(s *portSpec, r *requested, ip *kubeovnv1.IP) {
	o, sp := s.o, &ip.Spec
	bad := func(format string, args ...any) {
		b.problemFor(o, state.KindIP, "", ip.Name, "InvalidRecord", fmt.Sprintf(format, args...)+"; ignored")
	}
	if sp.PodName != o.name || sp.Namespace != o.ns {
		bad("spec.podName %q and spec.namespace %q do not name %s, the owner of port %q", sp.PodName, sp.Namespace, o.id, s.name)
		return
	}
	if sp.Subnet != "" && sp.Subnet != s.net.sw {
		bad("spec.subnet %q: port %q is on switch %q", sp.Subnet, s.name, s.net.sw)
		return
	}
	if r.ipSrc == "" {
		var fields []string
		if strings.TrimSpace(sp.V4IPAddress) != "" {
			fields = append(fields, "spec.v4IpAddress")
		}
		if strings.TrimSpace(sp.V6IPAddress) != "" {
			fields = append(fields, "spec.v6IpAddress")
		}
		field, vals := strings.Join(fields, ","), nonEmpty(sp.V4IPAddress, sp.V6IPAddress)
		if len(vals) == 0 && strings.TrimSpace(sp.IPAddress) != "" {
			field, vals = "spec.ipAddress", strings.Split(sp.IPAddress, ",")
		}
		got, why := recordIPs(s.net, vals)
		switch {
		case why != "":
			bad("%s %q: %s", field, strings.Join(vals, ","), why)
		case got[ipv4].IsValid() || got[ipv6].IsValid():
			r.ip, r.ipSrc = got, state.KindIP+" "+ip.Name+" "+field
		}
	}
	if v := strings.TrimSpace(sp.MacAddress); v != "" && r.macSrc == "" {
		m, err := addr.ParseMAC(v)
		if err != nil {
			bad("spec.macAddress %q: %v", v, err)
			return
		}
		r.mac, r.macSrc = m, state.KindIP+" "+ip.Name+" spec.macAddress"
	}
}

func nonEmpty(vals ...string) []string {
	var out []string
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// providerAnnotation returns ann[provider+suffix] without building the
// key: objects carry few annotations, and most have none for provider.
func providerAnnotation(ann map[string]string, provider, suffix string) string {
	if len(ann) > 16 {
		return ann[provider+suffix]
	}
	for k, v := range ann {
		if len(k) == len(provider)+len(suffix) && strings.HasPrefix(k, provider) && strings.HasSuffix(k, suffix) {
			return v
		}
	}
	return ""
}

func recordSource(kind, ns, name, key string) string {
	return kind + " " + ns + "/" + name + " " + key
}

// selection is one element of a networks annotation.
type selection struct {
	ref   nadRef
	iface string
	ips   []string
	mac   string
	claim string // ipam-claim-reference
}

// parseSelections reads a k8s.v1.cni.cncf.io/networks value: either a JSON
// list of selection elements or Multus' short form "[ns/]name[@iface],...".
// Names without a namespace are in defNS. Errors quote the bad part.
func parseSelections(v, defNS string) ([]selection, error) {
	v = strings.TrimSpace(v)
	// Multus reads the value as JSON when it holds any of these (a list of
	// selection elements: a lone object is an error), else as a comma list.
	if strings.ContainsAny(v, "[{\"") {
		var els []nadv1.NetworkSelectionElement
		if strings.HasPrefix(v, "{") {
			return nil, fmt.Errorf("invalid JSON: a single object; Multus reads a list of network selection elements, [{...}]")
		}
		if err := json.Unmarshal([]byte(v), &els); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		out := make([]selection, 0, len(els))
		for i, el := range els {
			ns := el.Namespace
			if ns == "" {
				ns = defNS
			}
			if !netconf.IsDNSLabel(ns) || !netconf.IsDNSSubdomain(el.Name) {
				return nil, fmt.Errorf("[%d]: %q is not a valid network name", i, el.Namespace+"/"+el.Name)
			}
			out = append(out, selection{ref: nadRef{ns, el.Name}, iface: el.InterfaceRequest, ips: el.IPRequest, mac: el.MacRequest,
				claim: strings.TrimSpace(el.IPAMClaimReference)})
		}
		return out, nil
	}
	var out []selection
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		// Multus trims the namespace, the name and the interface.
		rest, iface, hasIface := strings.Cut(item, "@")
		iface = strings.TrimSpace(iface)
		switch {
		case hasIface && iface == "":
			return nil, fmt.Errorf("%q: empty interface name", item)
		case strings.Contains(iface, "@"):
			return nil, fmt.Errorf("%q: more than one \"@\"", item)
		}
		ref, err := parseNetworkName(rest, defNS)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		out = append(out, selection{ref: ref, iface: iface})
	}
	return out, nil
}

// parseNetworkName reads "name" or "namespace/name".
func parseNetworkName(s, defNS string) (nadRef, error) {
	ns, name, hasNS := strings.Cut(strings.TrimSpace(s), "/")
	ns, name = strings.TrimSpace(ns), strings.TrimSpace(name)
	if !hasNS {
		ns, name = defNS, ns
	}
	if !netconf.IsDNSLabel(ns) || !netconf.IsDNSSubdomain(name) {
		return nadRef{}, fmt.Errorf("not a valid [<namespace>/]<name>")
	}
	return nadRef{ns, name}, nil
}
