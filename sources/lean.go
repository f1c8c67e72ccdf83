package sources

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
)

// stripPod keeps of a pod only what ovn-sync reads: its metadata, without
// managed fields and kubectl's last-applied copy of the object, and of its
// spec and status the node, host networking and phase (what storedPod
// holds). Containers, volumes and container statuses are most of a real
// pod's size, and pods are most of the objects: this is what bounds the
// informers' memory on a big cluster. The store's pod is never written
// back (annotations are published with a merge patch), so nothing dropped
// here can be lost. StatefulSets and Namespaces, which the same factory
// reads, are kept in their lean forms too (leanStatefulSet, leanNamespace).
func stripPod(obj any) (any, error) {
	switch p := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		o, err := stripPod(p.Obj)
		p.Obj = o
		return p, err
	case *corev1.Pod:
		s := storePod(p)
		return s.pod(), nil
	case *appsv1.StatefulSet:
		return leanStatefulSet(p), nil
	case *corev1.Namespace:
		return leanNamespace(p), nil
	}
	return stripManagedFields(obj)
}

func stripManagedFields(obj any) (any, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o, err := stripManagedFields(t.Obj)
		t.Obj = o
		return t, err
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// leanMeta is m without managed fields and kubectl's last-applied copy of
// the object (for a VM, a second copy of its whole spec).
func leanMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = nil
	if _, ok := m.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		m.Annotations = maps.Clone(m.Annotations)
		delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	return m
}

// typedTransform converts the dynamic informer's unstructured objects into
// their typed form (kubevirt.io/api, the NAD client's API types, ovn-sync's
// apis/kubeovn/v1 and apis/ipamclaims/v1alpha1), lean (leanKubeVirt,
// leanKubeOVN) and without managed fields, as they enter the store, so a
// pass does not convert every object again. It is idempotent, as client-go
// requires: typed objects pass through.
func typedTransform(k Kind) cache.TransformFunc {
	newObj := kindDefOf(k).newObj
	var convert func(any) any
	convert = func(obj any) any {
		switch v := obj.(type) {
		case cache.DeletedFinalStateUnknown:
			v.Obj = convert(v.Obj)
			return v
		case *unstructured.Unstructured:
			v.SetManagedFields(nil)
			typed := newObj()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v.Object, typed); err != nil {
				return &unconvertible{Unstructured: v, err: err.Error()}
			}
			return leanKubeOVN(leanKubeVirt(typed))
		}
		return obj
	}
	return func(obj any) (any, error) { return convert(obj), nil }
}

// unconvertible is an object kept in a store as read because it does not
// decode into its typed form.
type unconvertible struct {
	*unstructured.Unstructured
	err string
}

func (u *unconvertible) unreadable(k Kind) Unreadable {
	return Unreadable{Kind: k, Namespace: u.GetNamespace(), Name: u.GetName(), Err: u.err}
}

// leanKubeVirt keeps of a VirtualMachine, VirtualMachineInstance or
// migration only what ovn-sync reads, as stripPod does for pods: of a VM's
// or VMI's metadata what storedMeta keeps; of a VM whether it runs
// (running, runStrategy) and of its template the annotations Build reads,
// the networks and interfaces; of a VMI's spec the networks and
// interfaces, and of its status the node, phase and migration state (what
// storedVM and storedVMI hold: of networks, interfaces and the migration
// state the fields Build reads); of a migration the VMI's name, phase and
// migration state. Disks, volumes, data volume templates, resources and
// conditions are dropped: they are most of a real VM's size. Other objects
// pass through.
func leanKubeVirt(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *kubevirtv1.VirtualMachine:
		s := storeVM(o)
		return s.vm()
	case *kubevirtv1.VirtualMachineInstance:
		s := storeVMI(o)
		return s.vmi()
	case *kubevirtv1.VirtualMachineInstanceMigration:
		return &kubevirtv1.VirtualMachineInstanceMigration{
			TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(o.ObjectMeta),
			Spec:   kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: o.Spec.VMIName},
			Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: o.Status.Phase, MigrationState: o.Status.MigrationState},
		}
	}
	return obj
}

// leanNamespace keeps of a Namespace its identity and the annotation Build
// reads (desired.NamespaceSwitchAnnotation): a label or any other
// annotation edited is then no change.
func leanNamespace(ns *corev1.Namespace) *corev1.Namespace {
	lean := &corev1.Namespace{TypeMeta: ns.TypeMeta, ObjectMeta: identity(ns.ObjectMeta)}
	if v, ok := ns.Annotations[desired.NamespaceSwitchAnnotation]; ok {
		lean.Annotations = map[string]string{desired.NamespaceSwitchAnnotation: v}
	}
	return lean
}

// leanStatefulSet keeps of a StatefulSet its identity (and whether it is
// being deleted), its replicas and ordinals: its status, written at every
// replica that becomes ready, is dropped.
func leanStatefulSet(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   s.TypeMeta,
		ObjectMeta: identity(s.ObjectMeta),
		Spec:       appsv1.StatefulSetSpec{Replicas: s.Spec.Replicas, Ordinals: s.Spec.Ordinals},
	}
}

// leanKubeOVN keeps of a kube-ovn Subnet its identity and spec, of an IP
// object its identity and the fields of its spec Build reads: the owner
// it names, the switch, the addresses. (apis/kubeovn/v1 has no status for
// either: the conversion drops it.) An IP object's node, container and
// attachments, which kube-ovn rewrites when a pod is created again, are
// dropped. Other objects pass through.
func leanKubeOVN(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *kubeovnv1.Subnet:
		return &kubeovnv1.Subnet{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: o.Spec}
	case *kubeovnv1.IP:
		sp := &o.Spec
		lean := &kubeovnv1.IP{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: kubeovnv1.IPSpec{
			PodName: sp.PodName, Namespace: sp.Namespace, Subnet: sp.Subnet,
			IPAddress: sp.IPAddress, V4IPAddress: sp.V4IPAddress, V6IPAddress: sp.V6IPAddress, MacAddress: sp.MacAddress,
		}}
		if sp.PodType == kubeovnv1.PodTypeVirtualMachine {
			// A VM's port: where kube-ovn last wrote it from, checked
			// against where the VMI runs (desired's KubeOVNStaleIPObject).
			lean.Spec.PodType, lean.Spec.NodeName = sp.PodType, sp.NodeName
		}
		return lean
	}
	return obj
}

// identity is what names an object, orders it (its creation) and says it is
// being deleted, and its resourceVersion: of the few kinds every Build
// reads whole, no more of their metadata is read. A Problem or an Event
// names the object by kind, namespace, name and UID.
func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}
