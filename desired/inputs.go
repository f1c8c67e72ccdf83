package desired

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// Inputs is everything Build reads from Kubernetes: every object of the
// kinds that matter, whichever source (informers or manifest files) read them.
// Order does not matter; Build sorts what it needs.
type Inputs struct {
	// Pods are the pods; StoredPods, when set, lists more (AllPods reads
	// both).
	Pods       []*corev1.Pod
	StoredPods PodStore
	// VirtualMachines and VirtualMachineInstances are the VMs and VMIs;
	// StoredVMs and StoredVMIs, when set, list more, made at the read
	// (AllVMs and AllVMIs read both).
	VirtualMachines              []*kubevirtv1.VirtualMachine
	VirtualMachineInstances      []*kubevirtv1.VirtualMachineInstance
	StoredVMs                    Stored[*kubevirtv1.VirtualMachine]
	StoredVMIs                   Stored[*kubevirtv1.VirtualMachineInstance]
	Migrations                   []*kubevirtv1.VirtualMachineInstanceMigration
	NetworkAttachmentDefinitions []*nadv1.NetworkAttachmentDefinition
	// Subnets are kube-ovn's networks (see subnets.go); Namespaces are read
	// for their ovn.kubernetes.io/logical_switch annotation, StatefulSets
	// for the ports of their pods that are gone and will come back.
	Subnets      []*kubeovnv1.Subnet
	Namespaces   []*corev1.Namespace
	StatefulSets []*appsv1.StatefulSet
	// IPs are kube-ovn's IP objects: records of the addresses of the port
	// each is named after, for the owner it names.
	IPs []*kubeovnv1.IP
	// IPAMClaims are the KubeVirt world's records of a VM's addresses on
	// one network (claims.go).
	IPAMClaims []*ipamclaimsv1alpha1.IPAMClaim
}

// PodStore lists pods kept in a form of their own, each made into its API
// object at the read: run mode's informers keep pods so (package
// sources). A corev1.Pod is 1.2 KB however little it holds; a full pass
// that made every pod at once would hold them all while it built, about
// 130 MB at 100,000 pods. Build reads the pods one at a time and keeps
// those it needs (virt-launcher pods): the others are garbage once read.
//
// The pods a PodStore lists do not change: a listing is of one moment.
type PodStore interface {
	// Len is how many pods it lists.
	Len() int
	// All yields every pod, each made at the call: shared with the
	// store, read only; and its annotations as the store holds them, equal
	// to the pod's, which a result keeps (Carrier) where it would keep a
	// map made for the pod alone.
	All() iter.Seq2[*corev1.Pod, Annotations]
	// Read yields what All yields, but a pod may be made in the memory
	// of the one yielded before it: it is good only until the next is
	// yielded (its annotations as the store holds them stay good). Build
	// reads pods so and keeps none (of a plain pod a Carrier, of a
	// virt-launcher pod a launcher), so a full pass leaves no pod's API
	// object (about 1.2 KB) behind it as garbage, nor holds any.
	Read() iter.Seq2[*corev1.Pod, Annotations]
	// Launchers yields those Read yields that are virt-launcher pods
	// (IsLauncher), each good only until the next, as Read's, and makes
	// no other.
	Launchers() iter.Seq[*corev1.Pod]
	// Pod looks up the pod ns/name, nil when none is listed.
	Pod(ns, name string) *corev1.Pod
	// Versions yields the UID and resourceVersion of every pod All
	// yields, and makes none.
	Versions() iter.Seq2[string, string]
}

// PodCopies is a PodStore over pods that makes a copy of a pod at each
// read, as a store that keeps pods in another form makes them: what tests
// of a reader of a PodStore give it.
func PodCopies(pods []*corev1.Pod) PodStore { return podCopies(pods) }

type podCopies []*corev1.Pod

func (s podCopies) Len() int { return len(s) }

func (s podCopies) All() iter.Seq2[*corev1.Pod, Annotations] {
	return func(yield func(*corev1.Pod, Annotations) bool) {
		for _, p := range s {
			c := p.DeepCopy()
			if !yield(c, (*KeyLists)(nil).Of(c.Annotations, nil)) {
				return
			}
		}
	}
}

// Read makes every pod in one pod's memory, its annotations in one map,
// so that a reader that keeps one sees it change as the next is read.
func (s podCopies) Read() iter.Seq2[*corev1.Pod, Annotations] {
	return func(yield func(*corev1.Pod, Annotations) bool) {
		reused, ann := new(corev1.Pod), map[string]string{}
		for _, p := range s {
			c := p.DeepCopy()
			kept := (*KeyLists)(nil).Of(c.Annotations, nil)
			if c.Annotations != nil {
				clear(ann)
				maps.Copy(ann, c.Annotations)
				c.Annotations = ann
			}
			*reused, c = *c, reused
			if !yield(c, kept) {
				return
			}
		}
	}
}

// Launchers makes every launcher in one pod's memory, as Read does.
func (s podCopies) Launchers() iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for p := range s.Read() {
			if isLauncher(p) && !yield(p) {
				return
			}
		}
	}
}

func (s podCopies) Versions() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, p := range s {
			if !yield(string(p.UID), p.ResourceVersion) {
				return
			}
		}
	}
}

func (s podCopies) Pod(ns, name string) *corev1.Pod {
	for _, p := range s {
		if p.Namespace == ns && p.Name == name {
			return p.DeepCopy()
		}
	}
	return nil
}

// AllPods yields in's pods: Pods, then StoredPods'.
func (in Inputs) AllPods() iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for p := range in.annotatedPods(nil, PodStore.All) {
			if !yield(p) {
				return
			}
		}
	}
}

// annotatedPods is AllPods with each pod's annotations: as a PodStore
// holds them, or those Build reads (PodAnnotationRead), made through keys,
// for a pod of Pods (nil keys: none). list is how StoredPods are listed:
// All, or Read for a reader that keeps no pod but launchers.
func (in Inputs) annotatedPods(keys *KeyLists, list func(PodStore) iter.Seq2[*corev1.Pod, Annotations]) iter.Seq2[*corev1.Pod, Annotations] {
	return func(yield func(*corev1.Pod, Annotations) bool) {
		for _, p := range in.Pods {
			var ann Annotations
			if p != nil && keys != nil {
				ann = keys.Of(p.Annotations, PodAnnotationRead)
			}
			if !yield(p, ann) {
				return
			}
		}
		if in.StoredPods != nil {
			for p, ann := range list(in.StoredPods) {
				if !yield(p, ann) {
					return
				}
			}
		}
	}
}

// launcherPods yields in's virt-launcher pods, of Pods and of StoredPods:
// each stored one good only until the next is yielded.
func (in Inputs) launcherPods() iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for _, p := range in.Pods {
			if p != nil && isLauncher(p) && !yield(p) {
				return
			}
		}
		if in.StoredPods != nil {
			for p := range in.StoredPods.Launchers() {
				if !yield(p) {
					return
				}
			}
		}
	}
}

// PodCount is how many pods in holds, in Pods and StoredPods.
func (in Inputs) PodCount() int {
	n := len(in.Pods)
	if in.StoredPods != nil {
		n += in.StoredPods.Len()
	}
	return n
}

// Config is the part of ovn-sync's configuration Build depends on: the
// cluster's default network, and whose ports to adopt.
type Config struct {
	// Adopt is the vendor whose ports Build adopts: state.VendorKubeOVN, or
	// "" for none. A port that is not ovn-sync's, carries
	// external_ids:vendor=Adopt, and has the name and switch (its
	// external_ids:ls) ovn-sync would give an owner's port is taken over in
	// place: same row, same addresses, our keys added. Without it such a
	// port is a NotAdopted Problem and its owner has no port there.
	Adopt string
	// DefaultSwitch is the logical switch of the default network, e.g. "ovn-default".
	DefaultSwitch string
	// DefaultSubnets holds at most one IPv4 and one IPv6 prefix.
	DefaultSubnets []netip.Prefix
	// DefaultExclude lists addresses IPAM never hands out on the default network.
	DefaultExclude []netconf.IPRange
	// DefaultGateway holds at most one gateway per family; see WithGateway.
	DefaultGateway []netip.Addr
	// DefaultDHCP is the default network's native DHCP; see WithDHCP.
	DefaultDHCP netconf.DHCP

	// switchPorts, when not 0, replaces MaxSwitchPorts: tests reach a
	// full switch with a few ports.
	switchPorts int
}

// Problem is bad or conflicting input found while building the desired state.
// A Problem never causes a port to be deleted or rewritten: the object it
// names keeps whatever it had.
type Problem struct {
	// Kind, Namespace and Name identify the object at fault.
	Kind      string
	Namespace string
	Name      string
	// Reason is a stable CamelCase word for metrics and events, e.g. "InvalidAnnotation".
	Reason string
	// Message names the field and the value, e.g.
	// `ovn.kubernetes.io/ip_address "999.1.1.1": not an IP address`.
	Message string
}

// Object names the object at fault as a plan's changes name their owner:
// "<Kind>/<namespace>/<name>", or "<Kind>/<name>" without a namespace.
func (p Problem) Object() string {
	if p.Namespace == "" {
		return p.Kind + "/" + p.Name
	}
	return p.Kind + "/" + p.Namespace + "/" + p.Name
}

// MarshalJSON encodes p in the shape of a plan's changes (diff.Change):
// {"owner": "Pod/default/web", "reason": "InvalidAddressRequest",
// "message": "..."}, snake_case keys, the object under "owner".
func (p Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Owner   string `json:"owner"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}{p.Object(), p.Reason, p.Message})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Problem) UnmarshalJSON(b []byte) error {
	var j struct{ Owner, Reason, Message string }
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	parts := strings.SplitN(j.Owner, "/", 3)
	*p = Problem{Kind: parts[0], Reason: j.Reason, Message: j.Message}
	switch len(parts) {
	case 2:
		p.Name = parts[1]
	case 3:
		p.Namespace, p.Name = parts[1], parts[2]
	}
	return nil
}

// String renders the problem as "<Kind> <namespace>/<name>: <message>".
func (p Problem) String() string {
	return fmt.Sprintf("%s %s/%s: %s", p.Kind, p.Namespace, p.Name, p.Message)
}
