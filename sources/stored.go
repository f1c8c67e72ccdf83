package sources

import (
	"iter"
	"math"
	"sync"
	"sync/atomic"
	"time"

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
	// call, its maps made anew, sharing the stored slices, which must not
	// be modified.
	object() runtime.Object
}

// storedMeta is what a stored form keeps of an object's metadata, as
// fields of its own: an ObjectMeta is 248 bytes, most of them fields a
// stored form never holds, and a map of labels or annotations 300 bytes
// and more however few entries it holds, desired.Annotations about a
// third of that. It keeps no generation (which the kubelet's status
// updates move on a pod), grace period, selfLink, generateName or
// finalizers, none of which Build reads; of the labels and annotations,
// those Build reads.
type storedMeta struct {
	typ *metav1.TypeMeta // nil when empty, as the informers' pods are
	// ids holds the name, resourceVersion and UID end to end, in one
	// string where decoding made three: the name is ids[:nameEnd], the
	// version ids[nameEnd:versionEnd], the UID the rest.
	ids                 string
	nameEnd, versionEnd uint32
	namespace           string
	created             int64 // the creation time (storedTime)
	deleted             *metav1.Time
	labels, annotations desired.Annotations // storedAnnotations
	owners              []metav1.OwnerReference
}

// storeMeta is the stored form of an object's type t and metadata m: of
// its labels those labelRead accepts (none when nil), of its annotations
// those Build reads (storedAnnotations), of its owner references those
// ownerRead accepts (all when nil). The strings objects hold alike, the
// type, namespace and owners' kinds, are shared.
func storeMeta(t metav1.TypeMeta, m *metav1.ObjectMeta, labelRead func(string) bool, ownerRead func(metav1.OwnerReference) bool) storedMeta {
	s := storedMeta{namespace: shared(m.Namespace), created: storedTime(m.CreationTimestamp),
		deleted: m.DeletionTimestamp, owners: m.OwnerReferences,
		annotations: storedAnnotations(m.Annotations, desired.PodAnnotationRead)}
	s.setIDs(m.Name, m.ResourceVersion, m.UID)
	if labelRead != nil {
		s.labels = storedAnnotations(m.Labels, labelRead)
	}
	if len(s.owners) > 0 {
		s.owners = nil
		for _, r := range m.OwnerReferences {
			if ownerRead == nil || ownerRead(r) {
				r.APIVersion, r.Kind = shared(r.APIVersion), shared(r.Kind)
				s.owners = append(s.owners, r)
			}
		}
	}
	if t != (metav1.TypeMeta{}) {
		s.typ = sharedType(t)
	}
	return s
}

// setIDs makes name, version and uid the object's.
func (o *storedMeta) setIDs(name, version string, uid types.UID) {
	o.ids = name + version + string(uid)
	o.nameEnd, o.versionEnd = uint32(len(name)), uint32(len(name)+len(version))
}

func (o *storedMeta) name() string    { return o.ids[:o.nameEnd] }
func (o *storedMeta) version() string { return o.ids[o.nameEnd:o.versionEnd] }
func (o *storedMeta) uid() types.UID  { return types.UID(o.ids[o.versionEnd:]) }

// A time is stored as seconds since the Unix epoch (8 bytes, where a
// metav1.Time is 24): the API's own precision, as metav1.Time is written in
// whole seconds in JSON and protobuf alike, and decoded in time.Local,
// where madeTime makes it again. The zero time is the seconds of its
// instant, made again as the zero time.
var zeroTime = time.Time{}.Unix()

func storedTime(t metav1.Time) int64 { return t.Unix() }

func madeTime(sec int64) metav1.Time {
	if sec == zeroTime {
		return metav1.Time{}
	}
	return metav1.Time{Time: time.Unix(sec, 0)}
}

// typeMetas are the objects' types, each held once (sharedType).
var typeMetas sync.Map // metav1.TypeMeta → *metav1.TypeMeta

// sharedType returns the one copy of t that every stored object of that
// type shares, which nothing changes (GetObjectKind hands out copies).
// The types are the kinds stored: a few.
func sharedType(t metav1.TypeMeta) *metav1.TypeMeta {
	if p, ok := typeMetas.Load(t); ok {
		return p.(*metav1.TypeMeta)
	}
	p, _ := typeMetas.LoadOrStore(t, &metav1.TypeMeta{Kind: shared(t.Kind), APIVersion: shared(t.APIVersion)})
	return p.(*metav1.TypeMeta)
}

// fill sets the fields of *m the stored form keeps, its labels and
// annotations made in the maps labels and ann (Annotations.MapInto: nil
// for new ones); the rest are left as they were.
func (o *storedMeta) fill(m *metav1.ObjectMeta, labels, ann map[string]string) {
	o.fillFields(m)
	m.Labels, m.Annotations = o.labels.MapInto(labels), o.annotations.MapInto(ann)
}

// fillFields is fill but for the labels and annotations.
func (o *storedMeta) fillFields(m *metav1.ObjectMeta) {
	m.Name, m.Namespace, m.ResourceVersion, m.UID = o.name(), o.namespace, o.version(), o.uid()
	m.CreationTimestamp, m.DeletionTimestamp = madeTime(o.created), o.deleted
	m.OwnerReferences = o.owners
}

// kept is the stored metadata itself, of any stored form.
func (o *storedMeta) kept() *storedMeta { return o }

// typeMeta is the object's type.
func (o *storedMeta) typeMeta() metav1.TypeMeta {
	if o.typ == nil {
		return metav1.TypeMeta{}
	}
	return *o.typ
}

// GetObjectMeta returns the object's metadata, made anew (meta.Accessor
// reads a stored object through it): changing it changes nothing stored.
// Its labels and annotations are made when first read: client-go's key
// function reads a stored object's name through it at every event.
func (o *storedMeta) GetObjectMeta() metav1.Object {
	v := &metaView{kept: o}
	o.fillFields(&v.ObjectMeta)
	return v
}

// metaView is a stored object's metadata as GetObjectMeta gives it: an
// ObjectMeta whose labels and annotations are made at the first read,
// unless set before.
type metaView struct {
	metav1.ObjectMeta
	kept                   *storedMeta
	labelsMade, annotsMade bool
}

func (v *metaView) GetLabels() map[string]string {
	if !v.labelsMade {
		v.Labels, v.labelsMade = v.kept.labels.MapInto(nil), true
	}
	return v.Labels
}

func (v *metaView) SetLabels(m map[string]string) { v.Labels, v.labelsMade = m, true }

func (v *metaView) GetAnnotations() map[string]string {
	if !v.annotsMade {
		v.Annotations, v.annotsMade = v.kept.annotations.MapInto(nil), true
	}
	return v.Annotations
}

func (v *metaView) SetAnnotations(m map[string]string) { v.Annotations, v.annotsMade = m, true }

// GetObjectKind is the object's kind, as runtime.Object requires: a copy,
// as the stored objects of a type share theirs, so that setting it
// changes nothing stored.
func (o *storedMeta) GetObjectKind() schema.ObjectKind {
	if o.typ == nil {
		return schema.EmptyObjectKind
	}
	t := *o.typ
	return &t
}

// storedPod holds what stripPod keeps of a pod: its metadata as
// storedMeta keeps it, with KubeVirt's labels (desired.PodLabelRead) and
// the owners Build reads (desired.PodOwnerRead: a VMI's and a
// StatefulSet's, where a Deployment's pod carries one Build never reads),
// and of its spec and status the node, host networking and phase.
type storedPod struct {
	storedMeta
	node        string
	phase       phase
	hostNetwork bool
}

// storePod is the stored form of p.
func storePod(p *corev1.Pod) storedPod {
	return storedPod{storedMeta: storeMeta(p.TypeMeta, &p.ObjectMeta, desired.PodLabelRead, desired.PodOwnerRead),
		node: shared(p.Spec.NodeName), phase: phaseOf(string(p.Status.Phase)), hostNetwork: p.Spec.HostNetwork}
}

// shared returns s as the one copy of it that every stored object shares.
// A watch decodes every string of every object into memory of its own; the
// strings many pods hold alike — the annotation and label keys kept, a
// namespace, a node, a phase, an owner's kind — would otherwise be held
// once a pod. A cluster's keys, namespaces and nodes are far fewer than
// the bound. (An annotation's value is kept in one string with the
// object's others: desired.Annotations.)
func shared(s string) string { return common.Get(s) }

var common = intern.New(1 << 14)

// keyLists holds the lists of annotation keys stored pods share; the
// informers store pods on goroutines of their own, under keyListsMu.
var (
	keyListsMu sync.Mutex
	keyLists   = desired.KeyLists{Max: 1 << 12, Key: shared}
)

// storedAnnotations is what a stored object keeps of its annotations or
// labels m: those read accepts (of annotations, desired.PodAnnotationRead:
// no Multus network-status), their keys shared and their values in one
// string of the object's own.
func storedAnnotations(m map[string]string, read func(string) bool) desired.Annotations {
	keyListsMu.Lock()
	defer keyListsMu.Unlock()
	return keyLists.Of(m, read)
}

func (p *storedPod) object() runtime.Object { return p.pod() }

func (p *storedPod) pod() *corev1.Pod {
	pod := new(corev1.Pod)
	p.fill(pod, nil, nil)
	return pod
}

// fill makes *pod the pod's API object, whatever it held before, its
// labels and annotations made in the maps labels and ann (see
// storedMeta.fill).
func (p *storedPod) fill(pod *corev1.Pod, labels, ann map[string]string) {
	*pod = corev1.Pod{
		TypeMeta: p.typeMeta(),
		Spec:     corev1.PodSpec{NodeName: p.node, HostNetwork: p.hostNetwork},
		Status:   corev1.PodStatus{Phase: corev1.PodPhase(p.phase.String())},
	}
	p.storedMeta.fill(&pod.ObjectMeta, labels, ann)
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
		pod, labels, ann := new(corev1.Pod), map[string]string{}, map[string]string{}
		for _, p := range s.pods {
			p.fill(pod, labels, ann)
			if !yield(pod, p.annotations) {
				return
			}
		}
	}
}

func (s *storedPods) Versions() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, p := range s.pods {
			if !yield(string(p.uid()), p.version()) {
				return
			}
		}
	}
}

// Launchers makes every launcher in one pod's memory, as Read does.
func (s *storedPods) Launchers() iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		pod, labels, ann := new(corev1.Pod), map[string]string{}, map[string]string{}
		for _, p := range s.pods {
			if app, _ := p.labels.Get(kubevirtv1.AppLabel); desired.IsLauncher(app, p.owners) {
				p.fill(pod, labels, ann)
				if !yield(pod) {
					return
				}
			}
		}
	}
}

func (s *storedPods) Pod(ns, name string) *corev1.Pod {
	if s.byName == nil {
		s.byName = make(map[types.NamespacedName]*storedPod, len(s.pods))
		for _, p := range s.pods {
			k := types.NamespacedName{Namespace: p.namespace, Name: p.name()}
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
// 1.5 KB. A Reader makes them all in the memory M of one.
type storedList[S storedForm[M, T], M, T any] []S

// storedForm is a stored form whose API object T is made in memory M.
type storedForm[M, T any] interface {
	object() runtime.Object
	makeIn(*M) T
}

func (l storedList[S, M, T]) Len() int   { return len(l) }
func (l storedList[S, M, T]) At(i int) T { return l[i].makeIn(new(M)) }

func (l storedList[S, M, T]) Reader() func(int) T {
	m := new(M)
	return func(i int) T { return l[i].makeIn(m) }
}

// listStored returns a Stored of the objects listed (objs) in their
// stored form S, made in M, nil when none is, and sets *list to the
// others, in their API type T; those that cannot be read go to bad.
func listStored[S storedForm[M, T], M, T any](k Kind, objs []any, bad *[]Unreadable, list *[]T) desired.Stored[T] {
	kept, others := splitStored[S](objs)
	*list = collect[T](k, others, bad)
	if len(kept) == 0 {
		return nil
	}
	return storedList[S, M, T](kept)
}

// apiObject is obj in its API form: a stored object's, or obj itself.
func apiObject(obj any) any {
	if s, ok := obj.(stored); ok {
		return s.object()
	}
	return obj
}

// A phase is a pod's or a VMI's status.phase by number: a stored object
// holds a byte where the string would take 16. The phases are the few the
// APIs name (phaseNames); any other a status holds is numbered when first
// seen, up to 256 in all, and past them read as "Unknown", which Build
// reads as it reads any phase but Succeeded and Failed.
type phase uint8

// phaseTable numbers phases. Reading a number's name takes no lock.
type phaseTable struct {
	mu    sync.Mutex
	names atomic.Pointer[[]string] // by number; replaced, never changed
}

// phaseNames are the phases numbered first: corev1.PodPhase's and
// kubevirtv1.VirtualMachineInstancePhase's.
var phaseNames = []string{"", "Pending", "Running", "Succeeded", "Failed", "Unknown", "Scheduling", "Scheduled", "WaitingForSync"}

func newPhaseTable() *phaseTable {
	t := &phaseTable{}
	t.names.Store(&phaseNames)
	return t
}

var phases = newPhaseTable()

func phaseOf(s string) phase { return phases.of(s) }

// String is the phase's name.
func (p phase) String() string { return phases.name(p) }

// of numbers the phase s.
func (t *phaseTable) of(s string) phase {
	if i, ok := phaseIndex(*t.names.Load(), s); ok {
		return i
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	names := *t.names.Load()
	if i, ok := phaseIndex(names, s); ok {
		return i
	}
	if len(names) > math.MaxUint8 {
		i, _ := phaseIndex(names, "Unknown")
		return i
	}
	grown := append(names[:len(names):len(names)], shared(s))
	t.names.Store(&grown)
	return phase(len(grown) - 1)
}

func (t *phaseTable) name(p phase) string { return (*t.names.Load())[p] }

func phaseIndex(names []string, s string) (phase, bool) {
	for i, n := range names {
		if n == s {
			return phase(i), true
		}
	}
	return 0, false
}
