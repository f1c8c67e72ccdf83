package desired

import (
	"fmt"
	"slices"
	"strings"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/state"
)

// Where kube-ovn's own rows put a VM's address at risk. With --adopt
// kube-ovn, a Build reads kube-ovn's ports and IP objects as they are; a
// dry run beside kube-ovn's controller (which keeps writing them) reports
// these, each with a reason of its own, so that a user sees what kube-ovn
// would lose before ovn-sync writes anything. ovn-sync's own pass repairs
// each (it creates the port, keeps the address on one port, keeps the
// address where the VMI runs).
const (
	// ReasonKubeOVNAddressNotKept: a stopped VM's port is not in the NB and
	// no kube-ovn IP object records its address: nothing in kube-ovn keeps
	// it, so kube-ovn hands it out again and the VM's next start gets
	// another (kube-ovn #5556).
	ReasonKubeOVNAddressNotKept = "KubeOVNAddressNotKept"
	// ReasonKubeOVNAddressHeldTwice: another port kube-ovn made holds the
	// address of a VM's port (a second port for a migrating VM, kube-ovn
	// #6634).
	ReasonKubeOVNAddressHeldTwice = "KubeOVNAddressHeldTwice"
	// ReasonKubeOVNStaleIPObject: the IP object of a VM's port names a node
	// the VMI does not run on, or a virt-launcher pod rather than the VM: a
	// pod that terminates there may free the address (kube-ovn #7414).
	ReasonKubeOVNStaleIPObject = "KubeOVNStaleIPObject"
)

// kubeOVNRisks reports the stopped VMs whose address nothing in kube-ovn
// keeps (ReasonKubeOVNAddressNotKept): once IPAM has decided, so that the
// Problem says what the port would hold.
func (b *builder) kubeOVNRisks() {
	if b.adopt != state.VendorKubeOVN {
		return
	}
	for _, s := range b.specs {
		o := s.o
		if s.state != specBuild || o.kind() != kindVirtualMachine || o.chassis != "" || s.row != nil || b.ipObject(s.name) != nil {
			continue
		}
		b.ownerProblem(o, ReasonKubeOVNAddressNotKept, fmt.Sprintf("network %q: port %q is not in the NB and no kube-ovn IP object records it: "+
			"kube-ovn keeps nothing of this stopped VM's address, hands it out again and gives the VM another when it starts; "+
			"ovn-sync would create the port with %s", s.net.key, s.name, s.addressText()))
	}
}

// addressText is what s's port would hold, each address with its source.
func (s *portSpec) addressText() string {
	var parts []string
	for c := range numComps {
		a, x := s.target(c)
		if a.IsValid() || c == compMAC && x.Valid() {
			parts = append(parts, addrText(c, a, x)+" ("+s.src[c].String()+")")
		}
	}
	return strings.Join(parts, " ")
}

// kubeOVNHeldTwice reports, for an address d that ports of ours (ps, on
// one switch) hold beside ports that are not ours, each VM port of ours
// whose address a port kube-ovn made holds too (ReasonKubeOVNAddressHeldTwice).
func (b *builder) kubeOVNHeldTwice(d heldTwice, foreigns []*state.Port, ps []*state.Port) {
	if b.adopt != state.VendorKubeOVN {
		return
	}
	var theirs []string
	for _, f := range foreigns {
		if f.Vendor() == state.VendorKubeOVN {
			theirs = append(theirs, fmt.Sprintf("%q", f.Name))
		}
	}
	if len(theirs) == 0 {
		return
	}
	for _, p := range ps {
		if s := b.specOf(p); s != nil && s.o.kind() == kindVirtualMachine {
			b.ownerProblem(s.o, ReasonKubeOVNAddressHeldTwice, fmt.Sprintf("port %q holds %s, and so does kube-ovn's port %s: "+
				"one VM's address on two ports", s.name, d.what, strings.Join(theirs, ", ")))
		}
	}
}

// kubeOVNStaleIPObject reports the IP object of s's port (a VM's) when it
// contradicts where the VMI runs: a node other than the VMI's (or, during a
// migration, its source's and target's), or a virt-launcher pod of the VM
// named instead of the VM (ReasonKubeOVNStaleIPObject).
func (b *builder) kubeOVNStaleIPObject(s *portSpec, ip *kubeovnv1.IP) {
	o, sp := s.o, &ip.Spec
	if b.adopt != state.VendorKubeOVN || o.kind() != kindVirtualMachine {
		return
	}
	stale := func(format string, args ...any) {
		b.problemFor(o, state.KindIP, "", ip.Name, ReasonKubeOVNStaleIPObject, fmt.Sprintf(format, args...))
	}
	switch {
	case sp.Namespace == o.ns && strings.HasPrefix(sp.PodName, "virt-launcher-"+o.name+"-"):
		stale("spec.podName %q is a virt-launcher pod of VirtualMachine %s/%s, not the VM: when that pod goes, kube-ovn frees the VM's address",
			sp.PodName, o.ns, o.name)
	case sp.PodType == kubeovnv1.PodTypeVirtualMachine && sp.NodeName != "" && o.chassis != "" &&
		!slices.Contains(strings.Split(o.chassis, ","), sp.NodeName):
		stale("spec.nodeName %q: the VMI of VirtualMachine %s/%s runs on %s: the IP object was written by a pod on a node the VM has left",
			sp.NodeName, o.ns, o.name, o.chassis)
	}
}
