package sources

import (
	"iter"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/intern"
)

// The stores keep the kinds a cluster has many of (pods, VMs, VMIs) in
// forms of their own that hold exactly the fields stripPod and leanKubeVirt
// keep, and give a pass the API object made from it at each read. The API
// types are big whatever is left in them: a corev1.Pod is 1,240 bytes with
// an empty spec and status, a VirtualMachineInstance 1,488, a
// VirtualMachine with a template 1,504; the stored forms about 300. A pass
// that rebuilds what changed makes the few objects it looks up; a full
// pass makes every object once, for that pass: its result names them
// (PortFacts) until the next pass's replaces it, and the incremental state
// kept between passes holds ports alone.
//
// A stored object is made from the lean API object and gives it back
// unchanged (TestStoredRoundTrip): the stores hold no less than the lean
// API objects would, only in less room. The transforms name the fields
// kept of these kinds only here, in each kind's store function (storePod,
// storeVM, storeVMI) and in the API object its stored form gives back:
// stripPod and leanKubeVirt return that object, so the lean and the stored
// forms cannot keep different fields.

// stored is an object in its stored form.
type stored interface {
	runtime.Object
	// object is the API object the stored form holds: a new one at each
	// call, sharing the stored maps and slices, which must not be
	// modified.
	object() runtime.Object
}

// storedPod holds what stripPod keeps of a pod: of its metadata, the
// fields podMeta keeps but the generation (which the kubelet's status
// updates move), grace period and selfLink, none of which Build reads, as
// fields of its own (an ObjectMeta is 248 bytes, most of them fields a
// pod's stored form never holds).
type storedPod struct {
	typ                      *metav1.TypeMeta // nil when empty, as the informers' pods are
	name, namespace, version string
	uid                      types.UID
	created                  metav1.Time
	deleted                  *metav1.Time
	labels                   map[string]string
	annotations              desired.Annotations // storedAnnotations
	owners                   []metav1.OwnerReference
	node                     string
	phase                    corev1.PodPhase
	hostNetwork              bool
}

// storePod is the stored form of p: its metadata as podMeta keeps it, its
// annotations as storedAnnotations does, and of its spec and status the
// node, host networking and phase.
func storePod(p *corev1.Pod) storedPod {
	m := podMeta(p.ObjectMeta)
	s := storedPod{name: m.Name, namespace: m.Namespace, version: m.ResourceVersion, uid: m.UID,
		created: m.CreationTimestamp, deleted: m.DeletionTimestamp,
		labels: m.Labels, annotations: storedAnnotations(p.Annotations), owners: m.OwnerReferences,
		node: shared(p.Spec.NodeName), phase: corev1.PodPhase(shared(string(p.Status.Phase))), hostNetwork: p.Spec.HostNetwork}
	if p.TypeMeta != (metav1.TypeMeta{}) {
		s.typ = &metav1.TypeMeta{Kind: p.Kind, APIVersion: p.APIVersion}
	}
	return s
}

// shared returns s as the one copy of it that every stored object shares.
// A watch decodes every string of every object into memory of its own; the
// strings many pods hold alike — the annotation and label keys kept, a
// namespace, a node, a phase, a subnet's switch, CIDR and gateway — would
// otherwise be held once a pod. At 100,000 pods that kube-ovn or ovn-sync
// annotated, that is about 20 MB (BenchmarkStores' decoded forms). A
// cluster's keys, namespaces, nodes and subnets are far fewer than the
// bound.
func shared(s string) string { return common.Get(s) }

var common = intern.New(1 << 14)

// keyLists holds the lists of annotation keys stored pods share; the
// informers store pods on goroutines of their own, under keyListsMu.
var (
	keyListsMu sync.Mutex
	keyLists   = desired.KeyLists{Max: 1 << 12, Key: shared, Value: sharedValue}
)

// storedAnnotations is what a stored pod keeps of its annotations m:
// those Build reads (desired.PodAnnotationRead: no Multus network-status),
// their keys and kube-ovn's values but addresses shared (sharedValue).
func storedAnnotations(m map[string]string) desired.Annotations {
	keyListsMu.Lock()
	defer keyListsMu.Unlock()
	return keyLists.Of(m, desired.PodAnnotationRead)
}

// sharedValue is an annotation's value, shared when it is a kube-ovn
// annotation's (logical_switch, cidr, gateway, allocated, ...) but a
// port's IP and MAC addresses (ip_address and mac_address, of any provider
// and interface), which are the pod's own, as Multus' and KubeVirt's are.
func sharedValue(key, v string) string {
	if suffix := desired.KubeOVNSuffix(key); suffix != "" && suffix != desired.AnnIPSuffix && suffix != desired.AnnMACSuffix {
		return shared(v)
	}
	return v
}

// podMeta is leanMeta of a pod's metadata without what Build never reads of
// a pod and a real one carries plenty of: labels but KubeVirt's
// (desired.PodLabelRead), owner references but a VMI's and a
// StatefulSet's (desired.PodOwnerRead), generateName and finalizers; and
// without its annotations, which storedAnnotations keeps. A Deployment's
// pod carries hundreds of bytes of these, and an edit of one is then no
// change (sameRead). What it keeps shares the strings pods hold alike
// (shared): the namespace, the label keys, an owner's API version and
// kind.
func podMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m = storedMeta(m)
	m.Labels = keepRead(m.Labels, desired.PodLabelRead)
	if len(m.OwnerReferences) > 0 {
		var kept []metav1.OwnerReference
		for _, r := range m.OwnerReferences {
			if desired.PodOwnerRead(r) {
				r.APIVersion, r.Kind = shared(r.APIVersion), shared(r.Kind)
				kept = append(kept, r)
			}
		}
		m.OwnerReferences = kept
	}
	return m
}

// storedMeta is leanMeta of m without what no stored form keeps: its
// annotations (each form keeps those Build reads apart), generateName
// and finalizers; its namespace is shared.
func storedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Annotations = nil // before leanMeta, which would copy them
	m = leanMeta(m)
	m.GenerateName, m.Finalizers = "", nil
	m.Namespace = shared(m.Namespace)
	return m
}

// keepRead returns the entries of m whose key read accepts, in a map of
// their own whose keys are shared: m itself when it is empty, nil when
// none is kept.
func keepRead(m map[string]string, read func(key string) bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	// Each key is read once; a pod keeps a few of its annotations.
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		if read(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	kept := make(map[string]string, len(keys))
	for _, k := range keys {
		kept[shared(k)] = m[k]
	}
	return kept
}

func (p *storedPod) object() runtime.Object { return p.pod() }

func (p *storedPod) pod() *corev1.Pod {
	pod := new(corev1.Pod)
	p.fill(pod, nil)
	return pod
}

// fill makes *pod the pod's API object, whatever it held before, its
// annotations made in ann (Annotations.MapInto).
func (p *storedPod) fill(pod *corev1.Pod, ann map[string]string) {
	*pod = corev1.Pod{
		Spec:   corev1.PodSpec{NodeName: p.node, HostNetwork: p.hostNetwork},
		Status: corev1.PodStatus{Phase: p.phase},
	}
	p.fillMeta(&pod.ObjectMeta, ann)
	if p.typ != nil {
		pod.TypeMeta = *p.typ
	}
}

func (p *storedPod) meta() *metav1.ObjectMeta {
	m := new(metav1.ObjectMeta)
	p.fillMeta(m, nil)
	return m
}

// fillMeta sets the fields of *m the stored form keeps, the annotations
// made in ann; the rest are left as they were.
func (p *storedPod) fillMeta(m *metav1.ObjectMeta, ann map[string]string) {
	m.Name, m.Namespace, m.ResourceVersion, m.UID = p.name, p.namespace, p.version, p.uid
	m.CreationTimestamp, m.DeletionTimestamp = p.created, p.deleted
	m.Labels, m.Annotations, m.OwnerReferences = p.labels, p.annotations.MapInto(ann), p.owners
}

// GetObjectMeta returns the pod's metadata, made anew (meta.Accessor reads
// a stored pod through it): changing it changes nothing stored.
func (p *storedPod) GetObjectMeta() metav1.Object { return p.meta() }

// GetObjectKind is the pod's kind, as runtime.Object requires.
func (p *storedPod) GetObjectKind() schema.ObjectKind {
	if p.typ == nil {
		return schema.EmptyObjectKind
	}
	return p.typ
}

func (p *storedPod) DeepCopyObject() runtime.Object {
	return compact(p.pod().DeepCopy()).(runtime.Object)
}

// compact is obj in its stored form, if its kind has one: of a pod, VM or
// VMI, what stripPod or leanKubeVirt keeps. Other objects, and objects
// already stored, pass through.
func compact(obj any) any {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		o.Obj = compact(o.Obj)
		return o
	case *corev1.Pod:
		s := storePod(o)
		return &s
	case *kubevirtv1.VirtualMachine:
		s := storeVM(o)
		return &s
	case *kubevirtv1.VirtualMachineInstance:
		s := storeVMI(o)
		return &s
	}
	return obj
}

// compacting is transform t, then compact; a stored object passes
// through, as client-go may transform an object twice.
func compacting(t cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if _, ok := Unwrap(obj).(stored); ok {
			return obj, nil
		}
		out, err := t(obj)
		if err != nil {
			return out, err
		}
		return compact(out), nil
	}
}

// storedPods lists the pods a store held, in their stored form: a full
// pass makes each pod's API object as Build reads it (desired.PodStore),
// and holds about 8 bytes a pod, where the API objects would be 1.3 KB.
// The first Pod indexes them: a listing is read by the one pass that took
// it, and is not safe for concurrent use.
type storedPods struct {
	pods []*storedPod
	// byName indexes pods, at the first lookup.
	byName map[types.NamespacedName]*storedPod
}

func (s *storedPods) Len() int { return len(s.pods) }

func (s *storedPods) All() iter.Seq2[*corev1.Pod, desired.Annotations] {
	return func(yield func(*corev1.Pod, desired.Annotations) bool) {
		for _, p := range s.pods {
			if !yield(p.pod(), p.annotations) {
				return
			}
		}
	}
}

// Read makes every pod in one pod's memory, its annotations in one map.
func (s *storedPods) Read() iter.Seq2[*corev1.Pod, desired.Annotations] {
	return func(yield func(*corev1.Pod, desired.Annotations) bool) {
		pod, ann := new(corev1.Pod), map[string]string{}
		for _, p := range s.pods {
			p.fill(pod, ann)
			if !yield(pod, p.annotations) {
				return
			}
		}
	}
}

func (s *storedPods) Versions() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, p := range s.pods {
			if !yield(string(p.uid), p.version) {
				return
			}
		}
	}
}

func (s *storedPods) Launchers() iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for _, p := range s.pods {
			if desired.IsLauncher(p.labels, p.owners) && !yield(p.pod()) {
				return
			}
		}
	}
}

func (s *storedPods) Pod(ns, name string) *corev1.Pod {
	if s.byName == nil {
		s.byName = make(map[types.NamespacedName]*storedPod, len(s.pods))
		for _, p := range s.pods {
			k := types.NamespacedName{Namespace: p.namespace, Name: p.name}
			if s.byName[k] == nil {
				s.byName[k] = p
			}
		}
	}
	if p := s.byName[types.NamespacedName{Namespace: ns, Name: name}]; p != nil {
		return p.pod()
	}
	return nil
}

// listPods sets in's pods to those listed (objs): those in their stored
// form in StoredPods, any other in Pods; those that cannot be read go to
// bad.
func listPods(in *desired.Inputs, objs []any, bad *[]Unreadable) {
	kept, others := splitStored[*storedPod](objs)
	in.Pods = collect[*corev1.Pod](KindPod, others, bad)
	if len(kept) > 0 {
		in.StoredPods = &storedPods{pods: kept}
	}
}

// splitStored splits the objects listed (objs) into those in their stored
// form S and the others.
func splitStored[S any](objs []any) (kept []S, others []any) {
	kept = make([]S, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(S); ok {
			kept = append(kept, s)
		} else {
			others = append(others, o)
		}
	}
	return kept, others
}

// storedList lists objects a store held in their stored form (storedVM,
// storedVMI), each made into its API object at At (desired.Stored): a
// full pass holds 8 bytes an object where the API objects would be about
// 1.5 KB.
type storedList[S interface{ object() runtime.Object }, T any] []S

func (l storedList[S, T]) Len() int   { return len(l) }
func (l storedList[S, T]) At(i int) T { return l[i].object().(T) }

// listStored returns a Stored of the objects listed (objs) in their
// stored form S, nil when none is, and sets *list to the others, in their
// API type T; those that cannot be read go to bad.
func listStored[S interface{ object() runtime.Object }, T any](k Kind, objs []any, bad *[]Unreadable, list *[]T) desired.Stored[T] {
	kept, others := splitStored[S](objs)
	*list = collect[T](k, others, bad)
	if len(kept) == 0 {
		return nil
	}
	return storedList[S, T](kept)
}

// apiObject is obj in its API form: a stored object's, or obj itself.
func apiObject(obj any) any {
	if s, ok := obj.(stored); ok {
		return s.object()
	}
	return obj
}
