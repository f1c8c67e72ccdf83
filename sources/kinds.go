package sources

import (
	"iter"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Kind names one of the kinds of object the informers watch, as Kubernetes
// spells it.
type Kind string

// The kinds, in the order Informers lists them.
const (
	KindPod                             Kind = state.KindPod
	KindVirtualMachine                  Kind = state.KindVirtualMachine
	KindVirtualMachineInstance          Kind = state.KindVirtualMachineInstance
	KindVirtualMachineInstanceMigration Kind = state.KindVirtualMachineInstanceMigration
	KindNetworkAttachmentDefinition     Kind = state.KindNetworkAttachmentDefinition
	KindIP                              Kind = state.KindIP
	// KindSubnet is kube-ovn's Subnet (cluster-scoped, a CRD); Namespaces
	// (their logical_switch annotation) and StatefulSets (whose gone pods
	// keep their ports) are read for it.
	KindSubnet      Kind = state.KindSubnet
	KindNamespace   Kind = state.KindNamespace
	KindStatefulSet Kind = state.KindStatefulSet
	// KindIPAMClaim is an IPAMClaim (k8s.cni.cncf.io/v1alpha1): the
	// record of a VM's addresses on one network.
	KindIPAMClaim Kind = state.KindIPAMClaim
)

// The resources of the kinds.
var (
	GVRPod                             = corev1.SchemeGroupVersion.WithResource("pods")
	GVRNamespace                       = corev1.SchemeGroupVersion.WithResource("namespaces")
	GVRStatefulSet                     = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	GVRVirtualMachine                  = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachines")
	GVRVirtualMachineInstance          = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstances")
	GVRVirtualMachineInstanceMigration = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations")
	GVRNetworkAttachmentDefinition     = nadv1.SchemeGroupVersion.WithResource("network-attachment-definitions")
	GVRSubnet                          = kubeovnv1.GroupVersion.WithResource("subnets")
	GVRIP                              = kubeovnv1.GroupVersion.WithResource("ips")
	GVRIPAMClaim                       = ipamclaimsv1alpha1.GroupVersion.WithResource("ipamclaims")
)

// kindDef is one kind of object ovn-sync reads, declared once: the
// informers watch it (typed: the typed factory, always served; else the
// dynamic client, once its CRD is installed), the manifest reader accepts
// it, every pass collects it into its field of desired.Inputs, the chart's
// ClusterRole lets ovn-sync list and watch it (deploy's TestRBACLeastPrivilege
// reads KindResources), and desired declares which owners a change of it
// touches (desired.Scoped; TestKinds checks every row).
type kindDef struct {
	kind     Kind
	resource schema.GroupVersionResource
	listKind string
	typed    bool
	// whole is set for the few kinds every Build reads whole, which a take
	// lists (TakeChanges); the others are looked up.
	whole bool
	// newObj returns an empty object of the kind's API type.
	newObj func() runtime.Object
	// collect sets the kind's field of in to the objects listed, in their
	// API type; those that cannot be read go to bad.
	collect func(in *desired.Inputs, objs []any, bad *[]Unreadable)
	// decode reads one manifest document of the kind into in.
	decode func(raw []byte, in *desired.Inputs) error
	// count is how many objects of the kind in holds; objects yields
	// them, from the from-th on.
	count   func(in desired.Inputs) int
	objects func(in desired.Inputs, from int) iter.Seq[metav1.Object]
}

// kindDefs are the kinds, in the order Informers lists them.
var kindDefs = []kindDef{
	podDef(withDecode(def(KindPod, GVRPod, "PodList", func(in *desired.Inputs) *[]*corev1.Pod { return &in.Pods }).isTyped(),
		func(raw []byte, in *desired.Inputs) error { return decodePod(raw, &in.Pods) })),
	storedDef(def(KindVirtualMachine, GVRVirtualMachine, "VirtualMachineList",
		func(in *desired.Inputs) *[]*kubevirtv1.VirtualMachine { return &in.VirtualMachines }),
		func(in *desired.Inputs, objs []any, bad *[]Unreadable) {
			in.StoredVMs = listStored[*storedVM, vmMemory](KindVirtualMachine, objs, bad, &in.VirtualMachines)
		}, desired.Inputs.VMCount, desired.Inputs.AllVMs),
	storedDef(def(KindVirtualMachineInstance, GVRVirtualMachineInstance, "VirtualMachineInstanceList",
		func(in *desired.Inputs) *[]*kubevirtv1.VirtualMachineInstance { return &in.VirtualMachineInstances }),
		func(in *desired.Inputs, objs []any, bad *[]Unreadable) {
			in.StoredVMIs = listStored[*storedVMI, vmiMemory](KindVirtualMachineInstance, objs, bad, &in.VirtualMachineInstances)
		}, desired.Inputs.VMICount, desired.Inputs.AllVMIs),
	def(KindVirtualMachineInstanceMigration, GVRVirtualMachineInstanceMigration, "VirtualMachineInstanceMigrationList",
		func(in *desired.Inputs) *[]*kubevirtv1.VirtualMachineInstanceMigration { return &in.Migrations }),
	def(KindNetworkAttachmentDefinition, GVRNetworkAttachmentDefinition, "NetworkAttachmentDefinitionList",
		func(in *desired.Inputs) *[]*nadv1.NetworkAttachmentDefinition {
			return &in.NetworkAttachmentDefinitions
		}).isWhole(),
	clusterScoped(KindSubnet, GVRSubnet, "SubnetList",
		func(in *desired.Inputs) *[]*kubeovnv1.Subnet { return &in.Subnets }).isWhole(),
	clusterScoped(KindNamespace, GVRNamespace, "NamespaceList",
		func(in *desired.Inputs) *[]*corev1.Namespace { return &in.Namespaces }).isTyped().isWhole(),
	def(KindStatefulSet, GVRStatefulSet, "StatefulSetList",
		func(in *desired.Inputs) *[]*appsv1.StatefulSet { return &in.StatefulSets }).isTyped().isWhole(),
	clusterScoped(KindIP, GVRIP, "IPList", func(in *desired.Inputs) *[]*kubeovnv1.IP { return &in.IPs }),
	def(KindIPAMClaim, GVRIPAMClaim, "IPAMClaimList",
		func(in *desired.Inputs) *[]*ipamclaimsv1alpha1.IPAMClaim { return &in.IPAMClaims }).isWhole(),
}

// def is the kindDef of kind k, of resource r listed as listKind, whose
// objects go in the field of Inputs field returns.
func def[T any, P objectPtr[T]](k Kind, r schema.GroupVersionResource, listKind string, field func(*desired.Inputs) *[]P) kindDef {
	return kindDef{
		kind: k, resource: r, listKind: listKind,
		newObj:  func() runtime.Object { return any(P(new(T))).(runtime.Object) },
		collect: func(in *desired.Inputs, objs []any, bad *[]Unreadable) { *field(in) = collect[P](k, objs, bad) },
		decode:  func(raw []byte, in *desired.Inputs) error { return decodeInto[T, P](raw, field(in)) },
		count:   func(in desired.Inputs) int { return len(*field(&in)) },
		objects: func(in desired.Inputs, from int) iter.Seq[metav1.Object] {
			return func(yield func(metav1.Object) bool) {
				for _, o := range (*field(&in))[from:] {
					if !yield(any(o).(metav1.Object)) {
						return
					}
				}
			}
		},
	}
}

// clusterScoped is def for a kind without namespaces: a namespace in a
// manifest is dropped.
func clusterScoped[T any, P objectPtr[T]](k Kind, r schema.GroupVersionResource, listKind string, field func(*desired.Inputs) *[]P) kindDef {
	d := def(k, r, listKind, field)
	d.decode = func(raw []byte, in *desired.Inputs) error { return decodeClusterScoped[T, P](raw, field(in)) }
	return d
}

func withDecode(d kindDef, decode func(raw []byte, in *desired.Inputs) error) kindDef {
	d.decode = decode
	return d
}

// podDef is d, pods' kindDef, listing the pods kept in their stored form
// in Inputs.StoredPods (listPods); count and objects read both.
func podDef(d kindDef) kindDef {
	d.collect = listPods
	d.count = func(in desired.Inputs) int { return in.PodCount() }
	d.objects = func(in desired.Inputs, from int) iter.Seq[metav1.Object] {
		return func(yield func(metav1.Object) bool) {
			i := 0
			for p := range in.AllPods() {
				if i++; i > from && !yield(p) {
					return
				}
			}
		}
	}
	return d
}

// storedDef is d for a kind a store keeps in a form of its own, and a
// pass lists through a desired.Stored (VMs, VMIs): collect sets it; count
// and all count and yield every object of the kind in Inputs, listed or
// stored.
func storedDef[T metav1.Object](d kindDef, collect func(*desired.Inputs, []any, *[]Unreadable),
	count func(desired.Inputs) int, all func(desired.Inputs) iter.Seq2[int, T]) kindDef {
	d.collect, d.count = collect, count
	d.objects = func(in desired.Inputs, from int) iter.Seq[metav1.Object] {
		return func(yield func(metav1.Object) bool) {
			for i, o := range all(in) {
				if i >= from && !yield(o) {
					return
				}
			}
		}
	}
	return d
}

func (d kindDef) isTyped() kindDef { d.typed = true; return d }
func (d kindDef) isWhole() kindDef { d.whole = true; return d }

// Kinds lists every kind the informers watch.
var Kinds = func() []Kind {
	ks := make([]Kind, len(kindDefs))
	for i, d := range kindDefs {
		ks[i] = d.kind
	}
	return ks
}()

// kindDefOf returns the kindDef of k.
func kindDefOf(k Kind) *kindDef {
	for i := range kindDefs {
		if kindDefs[i].kind == k {
			return &kindDefs[i]
		}
	}
	return nil
}

// builtIn reports whether k is a built-in kind, read by the typed factory.
func builtIn(k Kind) bool {
	d := kindDefOf(k)
	return d != nil && d.typed
}

// readWhole reports whether every Build reads every object of k.
func readWhole(k Kind) bool {
	d := kindDefOf(k)
	return d != nil && d.whole
}

// EachObject calls f with every object in holds, its kind and its API
// version, kind by kind in the table's order.
func EachObject(in desired.Inputs, f func(k Kind, apiVersion string, o metav1.Object)) {
	for _, d := range kindDefs {
		v := d.resource.GroupVersion().String()
		for o := range d.objects(in, 0) {
			f(d.kind, v, o)
		}
	}
}

// KindResources maps every kind to its resource: the chart's ClusterRole
// must let ovn-sync list and watch each.
func KindResources() map[Kind]schema.GroupVersionResource {
	m := make(map[Kind]schema.GroupVersionResource, len(kindDefs))
	for _, d := range kindDefs {
		m[d.kind] = d.resource
	}
	return m
}

// ListKinds maps every custom resource the informers list to its list kind,
// as client-go's fake dynamic client needs told.
var ListKinds = func() map[schema.GroupVersionResource]string {
	m := map[schema.GroupVersionResource]string{GVRCustomResourceDefinition: "CustomResourceDefinitionList"}
	for _, d := range kindDefs {
		if !d.typed {
			m[d.resource] = d.listKind
		}
	}
	return m
}()

// GVRCustomResourceDefinition is the resource of CRDs.
var GVRCustomResourceDefinition = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
