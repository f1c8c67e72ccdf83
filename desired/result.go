package desired

import (
	"iter"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// Result is what Build decides.
type Result struct {
	// Want is the desired state: every switch and port of ours that should
	// exist, with what they should hold.
	Want state.State
	// Problems are bad or conflicting input, sorted by object then reason.
	Problems []Problem
	// Notices are not faults but changes that wait for something, such as a
	// running VM's new address request, which takes effect at its next
	// start (Reason RestartRequired). Sorted like Problems.
	Notices []Problem
	// Again reports that an address some owner asks for (or has a record
	// of) is held by a port this pass removes or readdresses: the owner
	// keeps what it has until that is done, and a pass over the applied
	// result gives the address out. The caller should run one.
	Again bool
	// SwitchPorts counts, on each switch that holds ports, those it holds
	// once Want is applied, as far as Build can place them: ours, and
	// kube-ovn's by their external_ids:ls. None passes MaxSwitchPorts
	// through a port of ours.
	SwitchPorts map[string]int

	specs []*portSpec
	// raw are the problems before compacting, each with its owner.
	raw []ownedProblem
	// rebuilt, for an incremental result, are the owners rebuilt;
	// spliced how it came from the last one (Spliced).
	rebuilt map[string]bool
	spliced *Spliced
	// v4 is the IPv4 family of each network on a switch of ours, by
	// switch: what its other_config:exclude_ips is written from.
	v4 map[string]*family
	// foreign counts, on each switch, the ports that are not ours and that
	// kube-ovn placed there (a full Build's only).
	foreign map[string]int
	// claimNotes are the claims on networks ovn-sync does not manage.
	claimNotes []*ClaimFacts
	// lookups are the claims and NADs the owners built looked up, there
	// or not; nads what each NAD is, as far as its owners' ports go.
	lookups []lookup
	nads    map[nadRef]nadRecord
	subnets map[string]subnetRecord
}

// Claims returns what the pass decided about each IPAMClaim a port of
// Want reads (or could not take its addresses for), and about claims on
// networks ovn-sync does not manage: what publishing writes to their
// status. For an incremental result, those of the owners rebuilt.
func (r Result) Claims() []*ClaimFacts {
	var out []*ClaimFacts
	for _, s := range r.specs {
		if s.claim == nil || s.state == specDropped {
			continue
		}
		if f := s.claimFacts(); f != nil {
			out = append(out, f)
		}
	}
	return append(out, r.claimNotes...)
}

// Source says where one of a port's addresses came from.
type Source uint8

// The sources, strongest first.
const (
	SourceNone Source = iota
	// SourceRequest is an explicit request: a kube-ovn annotation on the pod
	// or the VM template, a KubeVirt interface's macAddress, a Multus
	// network selection's ips or mac.
	SourceRequest
	// SourceRecord is a published record of what the owner held: the
	// kube-ovn annotations on a VirtualMachine or on its virt-launcher pods.
	SourceRecord
	// SourceSticky is the address the owner's port holds in the NB.
	SourceSticky
	// SourceAllocated is the lowest free address (or, for a MAC, one derived
	// from the IPv4 address or the port name).
	SourceAllocated
)

var sourceNames = [...]string{"", "request", "record", "sticky", "allocated"}

// String returns "request", "record", "sticky" or "allocated".
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "Source(?)"
}

// MarshalText encodes s as its String.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// AddressFact is where one address of a port came from.
type AddressFact struct {
	Address string `json:"address"`
	Source  Source `json:"source"`
	// Field names the request or record: an annotation key (with the
	// object that carries it, for a record) or a spec field.
	Field string `json:"field,omitempty"`
}

// PortFacts is what Build knew about one port of Want: facts that are not
// columns of the row but that publishing and explain need, so that nothing
// has to be parsed back out of a port's name.
type PortFacts struct {
	// Port is the port as in Want.
	Port *state.Port
	// OwnerKind, OwnerNamespace and OwnerName name the owner.
	OwnerKind, OwnerNamespace, OwnerName string
	// Provider names the network in annotation keys:
	// "<provider>.kubernetes.io/ip_address". Empty for a port kept as it is
	// whose network is unknown.
	Provider string
	// CIDR and Gateway are the network's subnets and gateways as published,
	// comma-separated ("" when unknown or none).
	CIDR, Gateway string
	// Kept is set when the port is kept exactly as the NB has it (its
	// network or a request could not be read, or a claim failed): Addresses
	// is then empty.
	Kept bool
	// Addresses says where each address came from: IPv4, IPv6, then the MAC.
	Addresses []AddressFact
	// Chassis explains options:requested-chassis, e.g. "node-1: the pod's
	// node" ("" when unset).
	Chassis string

	// Pods are the pods that carry the port's addresses in annotations: a
	// plain pod itself, or the virt-launcher pods of a VM or VMI. VM is the
	// VirtualMachine that owns the port, when one does.
	Pods []Carrier
	VM   *Carrier
}

// Carrier is what a result keeps of a pod or VirtualMachine that carries a
// port's addresses in its annotations: what publishing them reads. Its
// strings are the object's as read: shared, read only.
type Carrier struct {
	Namespace, Name string
	UID             string
	ResourceVersion string
	// Annotations hold the object's kube-ovn annotations (KubeOVNSuffix),
	// those publishing sets, and of a plain pod those Build reads: a pod a
	// store keeps in a form of its own is made anew at every read, its
	// annotations' map with it, and a result that kept the map would hold
	// one a pod; it keeps the annotations as the store holds them
	// (PodStore.All).
	Annotations Annotations
	// Node is a pod's node ("" for a VM, or a pod not scheduled yet).
	Node string
	// Live is set when the object can still use its addresses: not being
	// deleted, and for a pod neither host-networked, Succeeded nor Failed.
	Live bool
}

// podCarrier is what a result keeps of p, whose annotations are ann.
func podCarrier(p *corev1.Pod, ann Annotations) Carrier {
	return Carrier{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion,
		Annotations: ann, Node: p.Spec.NodeName,
		Live: live(p) && p.DeletionTimestamp == nil}
}

// published are the annotations of m, a VirtualMachine's or a
// virt-launcher pod's, a Carrier keeps.
func published(m map[string]string, keys *KeyLists) Annotations {
	return keys.Of(m, func(k string) bool { return KubeOVNSuffix(k) != "" })
}

// carrier returns c in the builder's arena, as a slice of one (what
// PortFacts.Pods holds for a plain pod, shared).
func (b *builder) carrier(c Carrier) *[1]Carrier {
	p := b.carriers.alloc()
	p[0] = c
	return p
}

// carriers returns the pods that carry the owner's addresses: the plain
// pod, or the launchers.
func (o *owner) carriers() []Carrier {
	if o.pod != nil {
		return o.pod[:]
	}
	pods := o.vm().launchers.all()
	if len(pods) == 0 {
		return nil
	}
	out := make([]Carrier, len(pods))
	for i, p := range pods {
		out[i] = p.Carrier
	}
	return out
}

// Ports returns the facts of every port in Want, in the order Build added
// them (owners in input order). The values share memory with Want and the
// inputs: read only.
func (r Result) Ports() []PortFacts {
	out := make([]PortFacts, 0, len(r.specs))
	for s := range r.wanted() {
		f := s.facts()
		s.explain(&f)
		out = append(out, f)
	}
	return out
}

// Published yields what publishing reads of every port in Want, in the
// order of Ports: the facts of Ports without Chassis and Addresses, which
// say why and cost a string or more each a port. It makes them one at a
// time, as it yields them: a full pass's at once, a port each, were one
// slice of 18 MB at 100k ports.
func (r Result) Published() iter.Seq[PortFacts] {
	return func(yield func(PortFacts) bool) {
		for s := range r.wanted() {
			if !yield(s.facts()) {
				return
			}
		}
	}
}

// wanted yields the specs of the ports in Want, in the order Build added
// them.
func (r Result) wanted() iter.Seq[*portSpec] {
	return func(yield func(*portSpec) bool) {
		for _, s := range r.specs {
			if s.port != nil && r.Want.Ports.Get(s.name) == s.port && !yield(s) {
				return
			}
		}
	}
}

// facts are what publishing reads of s's port (Published).
func (s *portSpec) facts() PortFacts {
	o := s.o
	f := PortFacts{
		Port: s.port, OwnerKind: o.kind(), OwnerNamespace: o.ns, OwnerName: o.name,
		Provider: s.provider, Kept: s.state != specBuild,
		Pods: o.carriers(), VM: o.vm().vm,
	}
	if s.net != nil {
		f.CIDR, f.Gateway = s.net.cidr(), s.net.gateway
	}
	return f
}

// explain adds to f, s's facts, what says why (Ports): the chassis, and
// where each address came from.
func (s *portSpec) explain(f *PortFacts) {
	f.Chassis = s.o.chassisWhy()
	if s.state != specBuild {
		return
	}
	for c := range numComps {
		if s.src[c] == SourceNone {
			continue
		}
		var text string
		if c == compMAC {
			text = s.mac.String()
		} else {
			text = s.ip[c].String()
		}
		f.Addresses = append(f.Addresses, AddressFact{Address: text, Source: s.src[c], Field: s.field(c)})
	}
}

// chassisWhy explains o.chassis.
func (o *owner) chassisWhy() string {
	switch {
	case o.chassis == "":
		return ""
	case o.kind() == kindPod:
		return o.chassis + ": the pod's node"
	case o.vm().activationStrategy == activationRARP:
		src, dst, _ := strings.Cut(o.chassis, ",")
		return o.chassis + ": live migration from " + src + " to " + dst +
			"; bound on both until it ends, the target activated by the VM's first RARP"
	}
	return o.chassis + ": the VMI's node"
}

// field names where component c of s came from, when a request or record.
func (s *portSpec) field(c int) string {
	var r *requested
	switch s.src[c] {
	case SourceRequest:
		r = s.req
	case SourceRecord:
		r = s.rec
	default:
		return ""
	}
	if c == compMAC {
		return r.macSrc
	}
	return r.ipSrc
}
