package desired

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// addPods adds every plain pod's owner, and records the virt-launcher
// pods. It reads each pod once and keeps no plain pod (Carrier copies what
// a result needs of it), so pods a PodStore makes at the read are garbage
// once read.
func (b *builder) addPods(in Inputs) {
	// A pod read is good until the next (PodStore.Read): what is kept of
	// it is copied (a Carrier, a launcher).
	for p, ann := range in.annotatedPods(&b.keys, PodStore.Read) {
		if p == nil {
			continue
		}
		b.notePresent(p)
		if isLauncher(p) {
			b.addLauncher(p, ann)
			continue
		}
		if !live(p) {
			continue
		}
		o := b.newOwner(kindPod, p.Namespace, p.Name, p.CreationTimestamp.Time)
		if !b.validNames(o, "metadata.name") {
			continue
		}
		o.chassis, o.pod = p.Spec.NodeName, b.carrier(podCarrier(p, ann))
		if ord, ok := statefulSetOrdinal(p); ok {
			o.ordinal = int32(ord)
		}
		atts, ok := b.primaryAttachment(o, p.Annotations, b.atts[:0], "eth0")
		atts, annOK := b.annotationAttachments(o, p.Annotations, atts)
		names := b.addOwner(o, atts, p.Annotations)
		if !ok || !annOK {
			b.keepOwnerPorts(o, names)
		}
		b.atts = atts
	}
}

// addVirtualMachines adds every VM's ports. It reads the VMs, and the
// VMIs they run as, in the memory of one of each (ReadVMs, reader): of
// either it keeps strings and what it made of them, and a copy of the
// VMI's annotations.
func (b *builder) addVirtualMachines(in Inputs) {
	vmiAt := in.vmis().reader()
	for i, vm := range in.ReadVMs() {
		if vm == nil {
			continue
		}
		e := b.kv.get(nsName{vm.Namespace, vm.Name})
		if e.vm != i+1 {
			continue // a duplicate
		}
		o := b.newOwner(kindVirtualMachine, vm.Namespace, vm.Name, vm.CreationTimestamp.Time)
		if !b.validNames(o, "metadata.name") {
			continue
		}
		vmi := vmiOf(vmiAt, e)
		vmiEntry := b.vmiEntry(vmi, e, vm.Name)
		kv := b.vmPart(o)
		o.chassis, kv.activationStrategy = b.chassis(vmi, vmiEntry)
		kv.vm = &b.carrier(Carrier{Namespace: vm.Namespace, Name: vm.Name, UID: string(vm.UID), ResourceVersion: vm.ResourceVersion,
			Annotations: published(vm.Annotations, &b.keys), Live: vm.DeletionTimestamp == nil})[0]
		if vmiEntry != nil {
			kv.launchers = vmiEntry.launchers
		} else {
			kv.launchers = e.launchers
		}
		var spec *kubevirtv1.VirtualMachineInstanceSpec
		var ann map[string]string
		if t := vm.Spec.Template; t != nil {
			spec, ann = &t.Spec, t.ObjectMeta.Annotations
		}
		atts, ok := b.kubevirtAttachments(o, spec, ann, "spec.template.spec", b.atts[:0])
		if vmi != nil && !vmi.IsFinal() {
			// The VMI is a copy of the template as it was when the VM
			// started: its requests are what the guest runs with. Its
			// problems are the template's, reported once.
			n := len(b.problems)
			kv.running, _ = b.kubevirtAttachments(o, &vmi.Spec, vmi.Annotations, "spec", b.vmiAtts[:0])
			b.dropProblems(n)
			b.vmiAtts = kv.running
			kv.runningAnn = maps.Clone(vmi.Annotations)
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
	for i := range in.VMICount() {
		if b.kv.vmiHasVM[i] {
			continue // its VM's
		}
		vmi := in.vmis().at(i)
		if vmi == nil || vmi.IsFinal() {
			continue
		}
		var o *owner
		field := "metadata.name"
		if r := vmOwnerRef(vmi.OwnerReferences); r != nil && r.Name != "" {
			o = b.newOwner(kindVirtualMachine, vmi.Namespace, r.Name, vmi.CreationTimestamp.Time)
			b.vmPart(o).vmi = vmi.Name
			field = "metadata.ownerReferences[VirtualMachine].name"
		} else {
			o = b.newOwner(kindVirtualMachineInst, vmi.Namespace, vmi.Name, vmi.CreationTimestamp.Time)
		}
		if !b.validNames(o, field) {
			continue
		}
		e := b.vmiEntry(vmi, nil, "")
		kv := b.vmPart(o)
		o.chassis, kv.activationStrategy = b.chassis(vmi, e)
		if e != nil {
			kv.launchers = e.launchers
		}
		atts, ok := b.kubevirtAttachments(o, &vmi.Spec, vmi.Annotations, "spec", b.atts[:0])
		if names := b.addOwner(o, atts, vmi.Annotations); !ok {
			b.keepOwnerPorts(o, names)
		}
		b.atts = atts
	}
}

// addOwner turns an owner's attachments into port specs and returns the
// names of the ports they want. When the owner's list of networks could
// not be read whole, the caller keeps its other ports (keepOwnerPorts).
// The slice is reused by the next call.
func (b *builder) addOwner(o *owner, atts []attachment, ann map[string]string) []string {
	names := b.names[:0]
	guessed := false
	kv := o.vm()
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
		if kv.running != nil {
			b.readRunning(s, at)
		}
		if kv.running != nil || kv.runningAnn != nil {
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

// portName is the name of o's port on the network of provider, its
// interface suffix suffix.
func portName(o *owner, provider, suffix string) string {
	provider = withSuffix(provider, suffix)
	if provider == providerDefault {
		return o.base
	}
	return o.base + "." + provider
}

// switchAnnotations returns the annotations whose logical_switch says
// where o's ports go: for a VM whose VMI runs, the VMI's (a template edit
// waits for the next start), else ann.
func (b *builder) switchAnnotations(o *owner, ann map[string]string) map[string]string {
	if kv := o.vm(); kv.running != nil || kv.runningAnn != nil {
		return kv.runningAnn
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
	b.notices = append(b.notices, Problem{Kind: o.kind(), Namespace: o.ns, Name: o.name, Reason: "RestartRequired",
		Message: fmt.Sprintf("network %q: the template asks for Subnet %s (now %s, %s%s); port %q stays on %s with its running addresses until the VM starts again",
			s.net.key, v, s.net.sw, s.provider, AnnLogicalSwitchSuffix, s.name, s.net.sw)})
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
