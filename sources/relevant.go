package sources

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
)

// Most writes to the objects ovn-sync watches change nothing it reads: a
// StatefulSet's status, a Namespace's labels, a kube-ovn Subnet's status
// (usingIPs, at every allocation), a VirtualMachine's printableStatus, the
// managed fields of every write. The update event fires all the same, with
// a new resourceVersion. The stores keep each object in a lean form (the
// transforms below, stripPod, leanKubeVirt and the stored forms) that holds
// only what ovn-sync reads; an update whose old and new lean forms are
// equal but for the bookkeeping every write moves (resourceVersion,
// generation, managed fields) is no change: it names nothing and starts no
// pass (Informers.watch, sameRead).

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
		return &kubeovnv1.IP{TypeMeta: o.TypeMeta, ObjectMeta: identity(o.ObjectMeta), Spec: kubeovnv1.IPSpec{
			PodName: sp.PodName, Namespace: sp.Namespace, Subnet: sp.Subnet,
			IPAddress: sp.IPAddress, V4IPAddress: sp.V4IPAddress, V6IPAddress: sp.V6IPAddress, MacAddress: sp.MacAddress,
		}}
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

// sameRead reports whether old and cur, the stored forms of one object
// before and after an update, hold the same of everything the stores keep
// but bookkeeping: resourceVersion, generation (a VM's moves with spec
// fields the lean form drops) and managed fields. An object that could not
// be converted is never the same: its update is recorded, so that what
// can be read of it is known (Unreadable).
func sameRead(old, cur any) bool {
	a, b := Unwrap(old), Unwrap(cur)
	if _, bad := a.(*unconvertible); bad {
		return false
	}
	if _, bad := b.(*unconvertible); bad {
		return false
	}
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	return reflect.DeepEqual(withoutBookkeeping(a), withoutBookkeeping(b))
}

// withoutBookkeeping is a shallow copy of o, a pointer to an object, with
// its resourceVersion, generation and managed fields cleared; anything
// else is returned as it is.
func withoutBookkeeping(o any) any {
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return o
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	cp := c.Interface()
	m, err := meta.Accessor(cp)
	if err != nil {
		return o
	}
	m.SetResourceVersion("")
	m.SetGeneration(0)
	m.SetManagedFields(nil)
	return cp
}
