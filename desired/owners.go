package desired

import (
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

	"github.com/ovn-sync/ovn-sync/state"
)

// Annotations ovn-sync reads requests from (kube-ovn compatible).
const (
	annNetworks   = nadv1.NetworkAttachmentAnnot // k8s.v1.cni.cncf.io/networks
	annIPSuffix   = ".kubernetes.io/ip_address"
	annMACSuffix  = ".kubernetes.io/mac_address"
	annDefaultIP  = providerDefault + annIPSuffix  // ovn.kubernetes.io/ip_address
	annDefaultMAC = providerDefault + annMACSuffix // ovn.kubernetes.io/mac_address
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
	ips    []request
	macs   []request
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
		o.chassis = p.Spec.NodeName
		atts := append(b.atts[:0], attachment{isDefault: true, iface: "eth0"})
		atts, ok := b.annotationAttachments(o, p.Annotations, atts)
		b.addOwner(o, atts, p.Annotations, !ok)
		b.atts = atts
	}
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
		o.chassis, o.activationStrategy = b.chassis(e.vmi, b.vmiEntry(e.vmi, e, vm.Name))
		var spec *kubevirtv1.VirtualMachineInstanceSpec
		var ann map[string]string
		if t := vm.Spec.Template; t != nil {
			spec, ann = &t.Spec, t.ObjectMeta.Annotations
		}
		atts, ok := b.kubevirtAttachments(o, spec, ann, "spec.template.spec")
		b.addOwner(o, atts, ann, !ok)
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
		o.chassis, o.activationStrategy = b.chassis(vmi, b.vmiEntry(vmi, nil, ""))
		atts, ok := b.kubevirtAttachments(o, &vmi.Spec, vmi.Annotations, "spec")
		b.addOwner(o, atts, vmi.Annotations, !ok)
		b.atts = atts
	}
}

// kubevirtAttachments reads a VMI spec's networks (with their interfaces)
// and the networks annotation. ok is false when some network could not be
// read, so the owner's other ports must be kept.
func (b *builder) kubevirtAttachments(o *owner, spec *kubevirtv1.VirtualMachineInstanceSpec, ann map[string]string, field string) ([]attachment, bool) {
	var nets []kubevirtv1.Network
	var ifaces []kubevirtv1.Interface
	autoattach := true
	if spec != nil {
		nets, ifaces = spec.Networks, spec.Domain.Devices.Interfaces
		if a := spec.Domain.Devices.AutoattachPodInterface; a != nil {
			autoattach = *a
		}
	}
	atts := b.atts[:0]
	ok := true
	if len(nets) == 0 && len(ifaces) == 0 && autoattach {
		// KubeVirt attaches the pod network when nothing is declared.
		atts = append(atts, attachment{isDefault: true, iface: "default"})
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
		at := attachment{iface: n.Name}
		if ifc != nil && ifc.MacAddress != "" {
			at.macs = []request{{src: field + ".domain.devices.interfaces[" + n.Name + "].macAddress", values: []string{ifc.MacAddress}}}
		}
		if n.Multus != nil {
			ref, err := parseNetworkName(n.Multus.NetworkName, o.ns)
			if err != nil {
				b.ownerProblem(o, "InvalidNetwork",
					fmt.Sprintf("%s.networks[%s].multus.networkName %q: %v", field, n.Name, n.Multus.NetworkName, err))
				ok = false
				continue
			}
			at.ref = ref
		} else {
			// pod: {} or no source at all, which KubeVirt defaults to the pod
			// network; a multus network marked default replaces it.
			if multusDefault {
				continue
			}
			at.isDefault = true
		}
		atts = append(atts, at)
	}
	atts, annOK := b.annotationAttachments(o, ann, atts)
	return atts, ok && annOK
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
		at.merged = true
		src := annNetworks + "[" + strconv.Itoa(i) + "]"
		if len(sel.ips) > 0 {
			at.ips = append(at.ips, request{src: src + ".ips", values: sel.ips})
		}
		if sel.mac != "" {
			at.macs = append(at.macs, request{src: src + ".mac", values: []string{sel.mac}})
		}
	}
	return atts, true
}

// addOwner turns an owner's attachments into port specs.
func (b *builder) addOwner(o *owner, atts []attachment, ann map[string]string, keepOthers bool) {
	var names []string
	for i := range atts {
		at := &atts[i]
		var n *network
		known := true
		provider := providerDefault
		if at.isDefault {
			n = b.def
			known = n != nil
		} else {
			provider = at.ref.name + "." + at.ref.ns + providerSuffix
			e, found := b.nads[at.ref]
			switch {
			case !found:
				b.ownerProblem(o, "UnknownNetworkAttachmentDefinition",
					fmt.Sprintf("network %q: NetworkAttachmentDefinition not found", at.ref.String()))
				known = false
			case e.state == nadInvalid:
				b.ownerProblem(o, "UnknownNetworkAttachmentDefinition",
					fmt.Sprintf("network %q: NetworkAttachmentDefinition is invalid (see its own problem)", at.ref.String()))
				known = false
			case e.state == nadUnmanaged:
				continue
			default:
				n = e.net
			}
		}
		for j := 0; j < i; j++ {
			if atts[j].isDefault == at.isDefault && atts[j].ref == at.ref {
				provider += "." + at.iface
				break
			}
		}
		name := o.base
		if provider != providerDefault {
			name = o.base + "." + provider
		}
		if keepOthers {
			names = append(names, name)
		}
		if !known {
			b.keepPort(o, name)
			continue
		}
		if len(name) > MaxPortName {
			netKey := state.DefaultNetwork
			if !at.isDefault {
				netKey = at.ref.String()
			}
			b.ownerProblem(o, "NameTooLong", fmt.Sprintf("metadata.name: port name %s on network %q is longer than %d bytes",
				abbreviate(name), netKey, MaxPortName))
			b.keepPort(o, name)
			continue
		}
		s := b.newSpec(o, name)
		s.net = n
		if !b.readRequests(s, at, ann, provider) {
			b.keepPort(o, name)
			continue
		}
		b.add(s)
	}
	if keepOthers {
		b.keepOwnerPorts(o, names)
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
	case !isDNSLabel(o.ns):
		b.ownerProblem(o, "InvalidName", fmt.Sprintf("metadata.namespace %s: not a valid namespace (RFC 1123 label, at most 63 characters)", abbreviate(o.ns)))
	case !isDNSSubdomain(o.name):
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

// readRequests fills s's requested addresses from the kube-ovn annotations
// for provider and from at. It reports false, after recording a Problem,
// when a request is invalid.
func (b *builder) readRequests(s *portSpec, at *attachment, ann map[string]string, provider string) bool {
	var ipKey, macKey string
	if len(ann) > 0 {
		ipKey, macKey = annDefaultIP, annDefaultMAC
		if provider != providerDefault {
			ipKey, macKey = provider+annIPSuffix, provider+annMACSuffix
		}
	}
	var ipFrom, macFrom string // value of the first request, for messages
	if v := strings.TrimSpace(ann[ipKey]); ipKey != "" && v != "" {
		if !b.ipRequest(s, ipKey, v, strings.Split(v, ","), &ipFrom) {
			return false
		}
	}
	for _, r := range at.ips {
		vals := make([]string, len(r.values))
		for i, x := range r.values {
			// Multus "ips" are usually CIDRs; only the address matters here.
			x, _, _ = strings.Cut(x, "/")
			vals[i] = x
		}
		if !b.ipRequest(s, r.src, strings.Join(r.values, ","), vals, &ipFrom) {
			return false
		}
	}
	if v := strings.TrimSpace(ann[macKey]); macKey != "" && v != "" {
		if !b.macRequest(s, macKey, v, &macFrom) {
			return false
		}
	}
	for _, r := range at.macs {
		if !b.macRequest(s, r.src, r.values[0], &macFrom) {
			return false
		}
	}
	return true
}

func (b *builder) badRequest(s *portSpec, src, value, why string) bool {
	b.ownerProblem(s.o, "InvalidAddressRequest", fmt.Sprintf("%s %q: %s", src, value, why))
	return false
}

// ipRequest validates one request against s's network and merges it with
// any earlier request for s, which must agree.
func (b *builder) ipRequest(s *portSpec, src, raw string, vals []string, from *string) bool {
	n := s.net
	var v4, v6 netip.Addr
	for _, v := range vals {
		v = strings.TrimSpace(v)
		a, err := parseIP(v)
		if err != nil {
			if v == "" {
				v = raw
			}
			return b.badRequest(s, src, v, err.Error())
		}
		var p netip.Prefix
		var r IPRange
		var dst *netip.Addr
		family := "IPv4"
		if a.Is4() {
			p, r, dst = n.v4, n.r4, &v4
		} else {
			p, r, dst, family = n.v6, n.r6, &v6, "IPv6"
		}
		switch {
		case !p.IsValid():
			return b.badRequest(s, src, v, fmt.Sprintf("network %s has no %s subnet", n.key, family))
		case !p.Contains(a):
			return b.badRequest(s, src, v, "not in subnet "+p.String())
		case !inRange(r, a):
			return b.badRequest(s, src, v, reserved(p, a))
		case dst.IsValid():
			return b.badRequest(s, src, raw, "more than one "+family+" address")
		}
		*dst = a
	}
	if !v4.IsValid() && !v6.IsValid() {
		return true
	}
	if *from != "" {
		if v4 != s.req.v4 || v6 != s.req.v6 {
			return b.badRequest(s, src, raw, fmt.Sprintf("conflicts with %s %q", s.req.ipSrc, *from))
		}
		return true
	}
	if s.req == &noRequest {
		s.req = &requested{}
	}
	s.req.v4, s.req.v6, s.req.ipSrc, *from = v4, v6, src, raw
	return true
}

func (b *builder) macRequest(s *portSpec, src, v string, from *string) bool {
	m, err := parseMAC(v)
	if err != nil {
		return b.badRequest(s, src, v, err.Error())
	}
	if *from != "" {
		if m != s.req.mac {
			return b.badRequest(s, src, v, fmt.Sprintf("conflicts with %s %q", s.req.macSrc, *from))
		}
		return true
	}
	if s.req == &noRequest {
		s.req = &requested{}
	}
	s.req.mac, s.req.macSrc, *from = m, src, v
	return true
}

// selection is one element of a networks annotation.
type selection struct {
	ref   nadRef
	iface string
	ips   []string
	mac   string
}

// parseSelections reads a k8s.v1.cni.cncf.io/networks value: either a JSON
// list of selection elements or Multus' short form "[ns/]name[@iface],...".
// Names without a namespace are in defNS. Errors quote the bad part.
func parseSelections(v, defNS string) ([]selection, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		var els []nadv1.NetworkSelectionElement
		if err := json.Unmarshal([]byte(v), &els); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		out := make([]selection, 0, len(els))
		for i, el := range els {
			ns := el.Namespace
			if ns == "" {
				ns = defNS
			}
			if !isDNSLabel(ns) || !isDNSSubdomain(el.Name) {
				return nil, fmt.Errorf("[%d]: %q is not a valid network name", i, el.Namespace+"/"+el.Name)
			}
			out = append(out, selection{ref: nadRef{ns, el.Name}, iface: el.InterfaceRequest, ips: el.IPRequest, mac: el.MacRequest})
		}
		return out, nil
	}
	var out []selection
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		rest, iface, hasIface := strings.Cut(item, "@")
		if hasIface && iface == "" {
			return nil, fmt.Errorf("%q: empty interface name", item)
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
	if !hasNS {
		ns, name = defNS, ns
	}
	if !isDNSLabel(ns) || !isDNSSubdomain(name) {
		return nadRef{}, fmt.Errorf("not a valid [<namespace>/]<name>")
	}
	return nadRef{ns, name}, nil
}

// isDNSLabel reports whether s is an RFC 1123 label, as namespaces are.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNSSubdomain reports whether s is an RFC 1123 subdomain, as object names are.
func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for s != "" {
		label, rest, dot := strings.Cut(s, ".")
		if !isDNSLabel(label) || dot && rest == "" {
			return false
		}
		s = rest
	}
	return true
}
