package sources

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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
	KindSubnet      Kind = "Subnet"
	KindNamespace   Kind = "Namespace"
	KindStatefulSet Kind = "StatefulSet"
	// KindIPAMClaim is an IPAMClaim (k8s.cni.cncf.io/v1alpha1): the
	// record of a VM's addresses on one network.
	KindIPAMClaim Kind = state.KindIPAMClaim
)

// Kinds lists every kind the informers watch.
var Kinds = []Kind{KindPod, KindVirtualMachine, KindVirtualMachineInstance, KindVirtualMachineInstanceMigration, KindNetworkAttachmentDefinition,
	KindSubnet, KindNamespace, KindStatefulSet, KindIP, KindIPAMClaim}

// typedKinds are the built-in kinds, always served: the typed factory reads them.
var typedKinds = []Kind{KindPod, KindNamespace, KindStatefulSet}

// GroupVersionResources of the custom resources, which may not be installed.
var (
	GVRVirtualMachine                  = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachines")
	GVRVirtualMachineInstance          = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstances")
	GVRVirtualMachineInstanceMigration = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations")
	GVRNetworkAttachmentDefinition     = nadv1.SchemeGroupVersion.WithResource("network-attachment-definitions")
	GVRSubnet                          = kubeovnv1.GroupVersion.WithResource("subnets")
	GVRIP                              = kubeovnv1.GroupVersion.WithResource("ips")
	GVRIPAMClaim                       = ipamclaimsv1alpha1.GroupVersion.WithResource("ipamclaims")
)

// crdKinds maps each custom kind to its resource.
var crdKinds = map[Kind]schema.GroupVersionResource{
	KindVirtualMachine:                  GVRVirtualMachine,
	KindVirtualMachineInstance:          GVRVirtualMachineInstance,
	KindVirtualMachineInstanceMigration: GVRVirtualMachineInstanceMigration,
	KindNetworkAttachmentDefinition:     GVRNetworkAttachmentDefinition,
	KindSubnet:                          GVRSubnet,
	KindIP:                              GVRIP,
	KindIPAMClaim:                       GVRIPAMClaim,
}

// InformerOptions configures NewInformers.
type InformerOptions struct {
	// Kube reads Pods, Namespaces and StatefulSets; its Discovery() tells
	// which custom resources exist unless Discovery is set.
	Kube kubernetes.Interface
	// Dynamic reads the custom kinds: KubeVirt's, Multus's, kube-ovn's
	// Subnets and IPs, and IPAMClaims.
	Dynamic dynamic.Interface
	// Discovery overrides Kube.Discovery(), for tests.
	Discovery discovery.DiscoveryInterface
	// Logger receives one line per kind found missing or appearing.
	Logger logr.Logger
	// OnEvent, when set, is called for every informer event with the kind
	// of the object, before the change notification is sent. It must not
	// block (a metrics counter, say).
	OnEvent func(Kind)
	// OnDrop, when set, is called for every update that changed nothing
	// ovn-sync reads (see sameRead), with the kind of the object: such an
	// update names nothing and starts no pass. It must not block.
	OnDrop func(Kind)
}

// Informers watches the objects desired.Build reads and hands them out as
// desired.Inputs, or to be looked up (TakeChanges). It is level-triggered:
// an event only says which object changed (its kind, namespace and name);
// Inputs re-reads every informer's store and a lookup reads the store, so
// no event payload is ever trusted and a missed event costs nothing but
// latency.
//
// A custom resource that is not installed (KubeVirt or Multus absent) is
// logged once and counts as an empty, synced source. Call Discover again
// (say at every resync) to pick it up once it is installed.
type Informers struct {
	opts    InformerOptions
	disco   discovery.DiscoveryInterface
	changes chan struct{}

	// chmu guards what changed since the last Inputs call. The event
	// handlers take only chmu; the other methods take mu, then chmu.
	chmu sync.Mutex
	// version counts informer events and informer starts; see
	// Snapshot.Version. It moves only under chmu, with changed or
	// allChanged, so a snapshot's Version and Changed agree.
	version uint64
	// changed holds the objects events named since the last Inputs call;
	// allChanged replaces it when that cannot say what changed (see
	// Snapshot.AllChanged), and changed is then nil.
	changed map[desired.ObjectRef]struct{}
	// inflight holds the objects whose informer has queued a change
	// (recording) that its handler has not seen yet (record, landed): for
	// each, the object as its last transform returned it, which is what the
	// handler of that change is given.
	inflight   map[desired.ObjectRef]runtime.Object
	allChanged bool
	// unreadable holds the objects a store may hold that could not be
	// converted (see TakeChanges): noted when a transform returns one,
	// forgotten when the handler of the object's last change is given a
	// readable object or a deletion.
	unreadable map[desired.ObjectRef]Unreadable

	mu      sync.Mutex
	started bool
	ctx     context.Context
	inf     map[Kind]cache.SharedIndexInformer // started informers
	// regs are the event handlers' registrations: synced once the
	// informer is and the handler has been given every object of its
	// first listing.
	regs   map[Kind]cache.ResourceEventHandlerRegistration
	absent map[Kind]bool // discovered missing
	// crdWatched marks the absent kinds whose CRD is watched.
	crdWatched map[Kind]bool
	podf       informers.SharedInformerFactory
}

// NewInformers returns informers that are not started yet.
func NewInformers(opts InformerOptions) *Informers {
	d := opts.Discovery
	if d == nil && opts.Kube != nil {
		d = opts.Kube.Discovery()
	}
	return &Informers{
		opts:       opts,
		disco:      d,
		changes:    make(chan struct{}, 1),
		allChanged: true, // nothing has been handed out yet
		inf:        map[Kind]cache.SharedIndexInformer{},
		regs:       map[Kind]cache.ResourceEventHandlerRegistration{},
		absent:     map[Kind]bool{},
		crdWatched: map[Kind]bool{},
	}
}

// Changes returns the change notification channel. It holds at most one
// pending notification: many events between two reads are one notification,
// which is what coalesces a burst of events into one pass.
func (s *Informers) Changes() <-chan struct{} { return s.changes }

// Start discovers which custom resources exist and starts an informer for
// Pods and for each that does. Informers run (in goroutines client-go
// starts) until ctx is done. Start returns an error only when discovery
// fails for a reason other than the resources being absent; the caller may
// call Start again.
func (s *Informers) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.ctx = ctx
		s.podf = informers.NewSharedInformerFactoryWithOptions(s.opts.Kube, 0,
			informers.WithTransform(s.recording(typedKind, compacting(stripPod))))
		// The stores keep only the indexes lookups read: not client-go's
		// default index by namespace, a second entry for every object.
		pods := s.podf.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewFilteredPodInformer(c, metav1.NamespaceAll, resync, indexers[KindPod], nil)
		})
		s.watch(KindPod, pods)
		s.watch(KindNamespace, s.podf.Core().V1().Namespaces().Informer())
		s.watch(KindStatefulSet, s.podf.Apps().V1().StatefulSets().Informer())
		s.podf.Start(ctx.Done())
		s.started = true
	}
	return s.discoverLocked(ctx)
}

// Discover checks again for custom resources found missing before and
// starts informers for those installed since. It is a no-op before Start.
func (s *Informers) Discover(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	return s.discoverLocked(ctx)
}

func (s *Informers) discoverLocked(ctx context.Context) error {
	var missing []Kind
	for _, k := range Kinds {
		if _, ok := s.inf[k]; !ok && !slices.Contains(typedKinds, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	present, err := s.served(ctx, missing)
	if err != nil {
		return err
	}
	for _, k := range missing {
		if !present[k] {
			if !s.absent[k] {
				s.opts.Logger.Info("custom resource not installed: treating it as empty until its CRD appears", "kind", k, "resource", crdKinds[k].String())
				s.absent[k] = true
				s.watchCRD(k)
			}
			continue
		}
		if s.absent[k] {
			s.opts.Logger.Info("custom resource installed: watching it", "kind", k, "resource", crdKinds[k].String())
			delete(s.absent, k)
		}
		ix := indexers[k]
		if ix == nil {
			ix = cache.Indexers{}
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(s.opts.Dynamic, crdKinds[k], metav1.NamespaceAll, 0, ix, nil).Informer()
		_ = inf.SetTransform(s.recording(func(any) Kind { return k }, compacting(typedTransform(k))))
		s.watch(k, inf)
		go inf.Run(s.ctx.Done())
	}
	// A kind that appeared changes the inputs.
	s.notify()
	return nil
}

// GVRCustomResourceDefinition is the resource of CRDs.
var GVRCustomResourceDefinition = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ListKinds maps every resource the informers list to its list kind, as
// client-go's fake dynamic client needs told.
var ListKinds = map[schema.GroupVersionResource]string{
	GVRVirtualMachine:                  "VirtualMachineList",
	GVRVirtualMachineInstance:          "VirtualMachineInstanceList",
	GVRVirtualMachineInstanceMigration: "VirtualMachineInstanceMigrationList",
	GVRNetworkAttachmentDefinition:     "NetworkAttachmentDefinitionList",
	GVRSubnet:                          "SubnetList",
	GVRIP:                              "IPList",
	GVRIPAMClaim:                       "IPAMClaimList",
	GVRCustomResourceDefinition:        "CustomResourceDefinitionList",
}

// crdName is the name of the CRD that defines kind k: "<plural>.<group>".
func crdName(k Kind) string { return crdKinds[k].Resource + "." + crdKinds[k].Group }

// watchCRD watches the one CustomResourceDefinition that would define the
// absent kind k (a field selector on its name: nothing else of the
// cluster's CRDs is listed or held) and runs discovery as soon as it is
// established, so that objects of a kind installed after start are read
// within seconds rather than at the next resync. The watch ends with the
// informers. If it cannot list CRDs (RBAC of an older release), discovery
// at every resync still finds the kind.
func (s *Informers) watchCRD(k Kind) {
	if s.crdWatched[k] {
		return
	}
	s.crdWatched[k] = true
	name := crdName(k)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.opts.Dynamic, GVRCustomResourceDefinition, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	seen := func(obj any) {
		u, ok := Unwrap(obj).(*unstructured.Unstructured)
		if !ok || !CRDEstablished(u) {
			return
		}
		// The API server may serve the kind a moment after the CRD is
		// established: look until it does, for a while.
		go func() {
			for wait := 100 * time.Millisecond; wait < 30*time.Second; wait *= 2 {
				if err := s.Discover(s.ctx); err != nil && s.ctx.Err() == nil {
					s.opts.Logger.Error(err, "discovery after a CRD appeared failed", "crd", name)
				}
				if !s.isAbsent(k) {
					return
				}
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			s.opts.Logger.Info("CRD established but its kind not served yet; the next resync looks again", "crd", name)
		}()
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, cur any) { seen(cur) },
	})
	go inf.Informer().Run(s.ctx.Done())
}

func (s *Informers) isAbsent(k Kind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.absent[k]
}

// CRDEstablished reports whether a CustomResourceDefinition's Established
// condition is True: its resource is served.
func CRDEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// WaitForCacheSync blocks until every started informer has listed its kind
// once (kinds not installed count as synced), and reports true; or until
// ctx is done, and reports false.
func (s *Informers) WaitForCacheSync(ctx context.Context) bool {
	s.mu.Lock()
	started := s.started
	synced := make([]cache.InformerSynced, 0, len(s.inf))
	for k := range s.inf {
		synced = append(synced, s.syncedFunc(k))
	}
	s.mu.Unlock()
	if !started {
		<-ctx.Done()
		return false
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// served reports which of kinds the API server serves.
func (s *Informers) served(ctx context.Context, kinds []Kind) (map[Kind]bool, error) {
	byGV := map[string][]Kind{}
	for _, k := range kinds {
		gv := crdKinds[k].GroupVersion().String()
		byGV[gv] = append(byGV[gv], k)
	}
	present := map[Kind]bool{}
	gvs := make([]string, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	for _, gv := range gvs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		list, err := s.disco.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discover %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			for _, k := range byGV[gv] {
				if r.Name == crdKinds[k].Resource {
					present[k] = true
				}
			}
		}
	}
	return present, nil
}

// MaxChanged bounds the objects Informers remembers as changed between two
// Inputs calls. Past it, the snapshot says AllChanged instead: a caller
// would rebuild most owners anyway, and the set stays small during a storm
// of events.
const MaxChanged = 4096

// watch registers the event handlers of one informer. Handlers read no
// more of an object than its namespace and name: they record which object
// changed and say that a pass is due. s.mu must be held.
func (s *Informers) watch(k Kind, inf cache.SharedIndexInformer) {
	event := func(obj any) {
		s.record(k, obj)
		if s.opts.OnEvent != nil {
			s.opts.OnEvent(k)
		}
		s.notify()
	}
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: event,
		UpdateFunc: func(old, cur any) {
			// Periodic relists deliver unchanged objects; they change nothing.
			if sameVersion(old, cur) {
				s.landed(k, cur)
				return
			}
			// Nor does a write of what the store does not keep (a status,
			// labels): the store holds cur, which reads as old did. Its
			// transform marked it in flight; it lands here.
			if sameRead(old, cur) {
				s.landed(k, cur)
				if s.opts.OnDrop != nil {
					s.opts.OnDrop(k)
				}
				return
			}
			event(cur)
		},
		DeleteFunc: func(obj any) {
			s.recordGone(k, obj)
			if s.opts.OnEvent != nil {
				s.opts.OnEvent(k)
			}
			s.notify()
		},
	})
	s.inf[k] = inf
	if reg != nil {
		s.regs[k] = reg
	}
	// A new informer's objects, or a kind that was absent and counted as
	// empty, change what Inputs holds without naming anything.
	s.chmu.Lock()
	s.version++
	s.setAllChangedLocked()
	s.chmu.Unlock()
}

// recording returns t, noting the object it is given as in flight.
// An informer transforms an object as it queues it, before its store
// holds it; its event handler runs after. From the one to the other, every
// snapshot names the object (Take does not consume it); the handler then
// records it as changed, for the next snapshot. So a snapshot whose stores
// show a change always names it: a pass that rebuilds what changed sees
// everything a full Build of the same snapshot would. (A deletion a relist
// finds reaches the handler only, as a tombstone: that one is named by the
// first snapshot after the handler ran.)
//
// An object is in flight until the handler is given what its last
// transform returned; counting transforms would not do. client-go's
// watch-list (an informer's first listing streamed by a watch) transforms
// each object twice, streaming it into a temporary store and again as it
// hands that store's content to the queue, and runs the handler once. A
// result never queued (a watch-list attempt given up, the object gone
// before the next) leaves the object in flight until the handler of a
// later change of it runs.
func (s *Informers) recording(kind func(any) Kind, t cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		out, err := t(obj)
		if err != nil {
			return out, err // not queued
		}
		k := kind(obj)
		ref, ok := refOf(k, obj)
		if k == "" || !ok {
			return out, nil
		}
		// The result is not queued yet, so the store does not hold it.
		s.chmu.Lock()
		s.version++
		if o, isObj := Unwrap(out).(runtime.Object); isObj {
			if s.inflight == nil {
				s.inflight = map[desired.ObjectRef]runtime.Object{}
			}
			s.inflight[ref] = o
		}
		if u, bad := Unwrap(out).(*unconvertible); bad {
			if s.unreadable == nil {
				s.unreadable = map[desired.ObjectRef]Unreadable{}
			}
			s.unreadable[ref] = u.unreadable(k)
		}
		s.chmu.Unlock()
		return out, nil
	}
}

// syncedFunc reports whether kind k's informer has synced and its event
// handler has been given every object of the first listing: until then
// handlers still record the listing's objects as changed, and a take
// made before they are done leaves thousands for the next, which then
// cannot say what changed and builds in full. s.mu must be held.
func (s *Informers) syncedFunc(k Kind) cache.InformerSynced {
	inf, reg := s.inf[k], s.regs[k]
	return func() bool { return inf.HasSynced() && (reg == nil || reg.HasSynced()) }
}

// typedKind is the kind of an object of the typed informers.
func typedKind(obj any) Kind {
	switch obj.(type) {
	case *corev1.Pod, *storedPod:
		return KindPod
	case *corev1.Namespace:
		return KindNamespace
	case *appsv1.StatefulSet:
		return KindStatefulSet
	}
	return ""
}

// landed notes that the handler of obj's change ran: if obj is what the
// last transform of it returned, it is no longer in flight.
func (s *Informers) landed(k Kind, obj any) {
	if ref, ok := refOf(k, obj); ok {
		s.chmu.Lock()
		s.landedLocked(ref, obj, obj)
		s.chmu.Unlock()
	}
}

// landedLocked notes that the handler of ref's change was given obj, after
// which the store holds held (nil: a deletion). Once ref is not in flight,
// held says whether it can be read. s.chmu must be held.
func (s *Informers) landedLocked(ref desired.ObjectRef, obj, held any) {
	if o, ok := Unwrap(obj).(runtime.Object); ok && o == s.inflight[ref] {
		delete(s.inflight, ref)
		if len(s.inflight) == 0 {
			s.inflight = nil // a map keeps its largest size: the first listing's
		}
	}
	if _, ok := s.inflight[ref]; ok {
		return // a later change's transform decides
	}
	if _, bad := held.(*unconvertible); !bad {
		delete(s.unreadable, ref)
	}
}

// record notes that an informer of kind k reported obj created, updated or
// deleted. client-go calls a handler after its store holds the change, so
// any Inputs call that takes the set after this lists the stores after the
// change too.
func (s *Informers) record(k Kind, obj any) { s.recordHeld(k, obj, Unwrap(obj)) }

// recordGone is record for a deletion: the store no longer holds obj.
func (s *Informers) recordGone(k Kind, obj any) { s.recordHeld(k, obj, nil) }

func (s *Informers) recordHeld(k Kind, obj, held any) {
	ref, ok := refOf(k, obj)
	s.chmu.Lock()
	defer s.chmu.Unlock()
	s.version++
	if ok {
		s.landedLocked(ref, obj, held)
	}
	if s.allChanged {
		return
	}
	if _, seen := s.changed[ref]; ok && seen {
		return
	}
	if !ok || len(s.changed) >= MaxChanged {
		s.setAllChangedLocked()
		return
	}
	if s.changed == nil {
		s.changed = map[desired.ObjectRef]struct{}{}
	}
	s.changed[ref] = struct{}{}
}

// setAllChangedLocked gives up naming what changed until the next Inputs
// call. s.chmu must be held.
func (s *Informers) setAllChangedLocked() {
	s.allChanged = true
	s.changed = nil
}

// refOf names the object of an event of kind k: from its metadata, or for
// a delete tombstone whose object cannot be read, from the tombstone's
// "namespace/name" key. It reports false if neither names it.
func refOf(k Kind, obj any) (desired.ObjectRef, bool) {
	if m, err := meta.Accessor(Unwrap(obj)); err == nil && m.GetName() != "" {
		return desired.ObjectRef{Kind: string(k), Namespace: m.GetNamespace(), Name: m.GetName()}, true
	}
	var key string
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		key = t.Key
	case *cache.DeletedFinalStateUnknown:
		if t != nil {
			key = t.Key
		}
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || name == "" {
		return desired.ObjectRef{}, false
	}
	return desired.ObjectRef{Kind: string(k), Namespace: ns, Name: name}, true
}

func (s *Informers) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

func sameVersion(a, b any) bool {
	ma, err1 := meta.Accessor(Unwrap(a))
	mb, err2 := meta.Accessor(Unwrap(b))
	return err1 == nil && err2 == nil && ma.GetResourceVersion() != "" && ma.GetResourceVersion() == mb.GetResourceVersion()
}

// Unwrap returns the object inside a delete tombstone
// (cache.DeletedFinalStateUnknown), or obj itself.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	if t, ok := obj.(*cache.DeletedFinalStateUnknown); ok && t != nil {
		return t.Obj
	}
	return obj
}

// HasSynced reports whether every started informer has listed its kind
// once. Missing custom resources count as synced; nothing counts before
// Start.
func (s *Informers) HasSynced() bool {
	for _, ok := range s.Synced() {
		if !ok {
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Synced reports, per kind, whether it has synced (or is absent).
func (s *Informers) Synced() map[Kind]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Kind]bool, len(Kinds))
	for _, k := range Kinds {
		if _, ok := s.inf[k]; ok {
			out[k] = s.syncedFunc(k)()
		} else {
			out[k] = s.absent[k]
		}
	}
	return out
}

// Absent lists the custom kinds found not installed.
func (s *Informers) Absent() []Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Kind
	for _, k := range Kinds {
		if s.absent[k] {
			out = append(out, k)
		}
	}
	return out
}

// Unreadable is an object an informer holds that could not be converted into
// its typed form. Its owner is unknown, and unknown is not absent: a pass
// that has any must not delete.
type Unreadable struct {
	Kind      Kind
	Namespace string
	Name      string
	Err       string
}

func (u Unreadable) String() string {
	return fmt.Sprintf("%s %s/%s: %s", u.Kind, u.Namespace, u.Name, u.Err)
}

// Snapshot is what the informers held at one moment.
type Snapshot struct {
	Inputs     desired.Inputs
	Unreadable []Unreadable
	// Version changes whenever an informer reports an event or a new
	// informer starts: two snapshots with the same Version hold the same
	// objects (it is read before the stores, so a change that races with
	// Inputs gives the next snapshot a new Version).
	// A snapshot whose Version equals the previous one's has neither
	// Changed nor AllChanged.
	Version uint64
	// Changed names the objects informers reported created, updated or
	// deleted since the previous Inputs call, each once, sorted (Kind,
	// Namespace, Name). It is meaningful only when AllChanged is false.
	//
	// Inputs hands each change out once: a caller that does not act on a
	// snapshot (a failed pass) must carry its Changed over to the next, or
	// treat every object as changed. An object may be named again in the
	// snapshot after the one whose stores first showed its change; acting
	// on it twice must be harmless.
	Changed []desired.ObjectRef
	// AllChanged is set when the snapshot cannot say what changed since the
	// previous one: the first Inputs call, an informer (re)started or was
	// added by Discover, or more than MaxChanged objects changed. A caller
	// must then treat every object as changed.
	AllChanged bool
}

// Inputs reads every store, leaving what changed for Take: its snapshot
// says AllChanged. The objects are the informers' own: they are shared and
// must not be modified.
func (s *Informers) Inputs() Snapshot { return s.snapshot(false) }

// Take is Inputs that also takes what changed since the previous Take
// (Changed, AllChanged): the reconcile loop, the one caller that acts on
// changes, calls it.
func (s *Informers) Take() Snapshot { return s.snapshot(true) }

func (s *Informers) snapshot(take bool) Snapshot {
	var lists map[Kind][]any
	var snap Snapshot
	snap.Version, snap.Changed, snap.AllChanged = s.around(take, func(inf map[Kind]cache.SharedIndexInformer) {
		lists = make(map[Kind][]any, len(Kinds))
		for k, i := range inf {
			lists[k] = i.GetStore().List()
		}
	})
	list := func(k Kind) []any { return lists[k] }
	in := &snap.Inputs
	in.Pods = collect[*corev1.Pod](KindPod, list(KindPod), &snap.Unreadable)
	in.VirtualMachines = collect[*kubevirtv1.VirtualMachine](KindVirtualMachine, list(KindVirtualMachine), &snap.Unreadable)
	in.VirtualMachineInstances = collect[*kubevirtv1.VirtualMachineInstance](KindVirtualMachineInstance, list(KindVirtualMachineInstance), &snap.Unreadable)
	in.Migrations = collect[*kubevirtv1.VirtualMachineInstanceMigration](KindVirtualMachineInstanceMigration, list(KindVirtualMachineInstanceMigration), &snap.Unreadable)
	collectNetworks(in, list, &snap.Unreadable)
	in.IPs = collect[*kubeovnv1.IP](KindIP, list(KindIP), &snap.Unreadable)
	return snap
}

// collectNetworks fills in the kinds every Build reads whole, which are
// few: those TakeChanges lists.
func collectNetworks(in *desired.Inputs, list func(Kind) []any, bad *[]Unreadable) {
	in.NetworkAttachmentDefinitions = collect[*nadv1.NetworkAttachmentDefinition](KindNetworkAttachmentDefinition, list(KindNetworkAttachmentDefinition), bad)
	in.Subnets = collect[*kubeovnv1.Subnet](KindSubnet, list(KindSubnet), bad)
	in.Namespaces = collect[*corev1.Namespace](KindNamespace, list(KindNamespace), bad)
	in.StatefulSets = collect[*appsv1.StatefulSet](KindStatefulSet, list(KindStatefulSet), bad)
	in.IPAMClaims = collect[*ipamclaimsv1alpha1.IPAMClaim](KindIPAMClaim, list(KindIPAMClaim), bad)
}

// networkKinds are the kinds collectNetworks reads.
var networkKinds = []Kind{KindNetworkAttachmentDefinition, KindSubnet, KindNamespace, KindStatefulSet, KindIPAMClaim}

// around reads what changed in two steps around list, which reads the
// stores of the informers it is given; with take, it takes the changes.
// Before list, the version and the changes the handlers recorded are
// taken. After it, the changes still in flight (queued, their handlers not
// run yet) and those handlers recorded meanwhile are named too, and left
// for the next take. A change list shows reached its store before list
// read it and was queued before that; by the second step its handler
// either had not run (in flight), ran after the first step (recorded
// since) or before it (taken): it is named. A change named but not shown
// (queued, not stored yet) is named again later.
func (s *Informers) around(take bool, list func(map[Kind]cache.SharedIndexInformer)) (version uint64, changed []desired.ObjectRef, all bool) {
	s.mu.Lock()
	inf := maps.Clone(s.inf)
	s.chmu.Lock()
	version, all = s.version, s.allChanged || !take
	var names map[desired.ObjectRef]struct{}
	if take {
		names = s.changed
		s.changed, s.allChanged = nil, false
	}
	s.chmu.Unlock()
	s.mu.Unlock()
	list(inf)
	if !all {
		s.chmu.Lock()
		if s.allChanged {
			all = true
		}
		if names == nil {
			names = map[desired.ObjectRef]struct{}{}
		}
		for ref := range s.inflight {
			names[ref] = struct{}{}
		}
		for ref := range s.changed {
			names[ref] = struct{}{}
		}
		s.chmu.Unlock()
	}
	if !all && len(names) > MaxChanged {
		all = true // a relist in flight, say
	}
	if !all {
		changed = slices.SortedFunc(maps.Keys(names), compareRefs)
	}
	return version, changed, all
}

// Changes is what changed since the previous take, and where to look the
// objects up: what a pass that rebuilds only what changed reads, without
// listing every store.
type Changes struct {
	// Version, Changed and AllChanged are as in a Snapshot.
	Version    uint64
	Changed    []desired.ObjectRef
	AllChanged bool
	// Objects looks objects up in the stores as they are at each lookup,
	// through indexes the informers keep; its Networks are the few objects
	// of the kinds every Build reads whole, listed at the take. It is not
	// safe for concurrent use.
	Objects desired.Objects
	// Unreadable are the objects that could not be read: of the kinds
	// listed, and of the others those a store may hold since a transform
	// found them so. A pass that has any must not delete, as with a
	// Snapshot's.
	Unreadable []Unreadable
}

// TakeChanges takes what changed since the previous take, as Take does,
// and lists only the stores of the few kinds every Build reads whole: the
// others are looked up (Changes.Objects), by key or through the informers'
// indexes, so that a pass that rebuilds what changed costs that, not every
// object. When the changes say AllChanged the caller builds in full, and
// lists every store (Inputs).
//
// The changes are read in two steps around the listing, as for Take: the
// objects listed are consistent with Changed. A lookup comes after the
// take: for a change Changed names, it shows that change (its handler ran
// before the second step, so its store held it) or a newer one, or, for a
// change still in flight, perhaps not yet; either way the next take names
// the object again, as any change whose handler runs after this take's
// second step is recorded for it, or in flight at it. So what a lookup
// shows beyond what Changed says is named by a later take, and an owner
// rebuilt from a newer object than it was told of is rebuilt again.
func (s *Informers) TakeChanges() Changes {
	var c Changes
	l := &lookup{}
	var lists map[Kind][]any
	c.Version, c.Changed, c.AllChanged = s.around(true, func(inf map[Kind]cache.SharedIndexInformer) {
		l.inf = inf
		lists = make(map[Kind][]any, len(networkKinds))
		for _, k := range networkKinds {
			if i, ok := inf[k]; ok {
				lists[k] = i.GetStore().List()
			}
		}
	})
	collectNetworks(&l.nets, func(k Kind) []any { return lists[k] }, &c.Unreadable)
	s.chmu.Lock()
	for ref, u := range s.unreadable {
		if !slices.Contains(networkKinds, Kind(ref.Kind)) {
			c.Unreadable = append(c.Unreadable, u)
		}
	}
	s.chmu.Unlock()
	slices.SortFunc(c.Unreadable, func(a, b Unreadable) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	c.Objects = l
	return c
}

// Names of the indexes the informers keep for lookups.
const (
	// indexVMI indexes virt-launcher pods and migrations by their VMI,
	// "<namespace>/<vmi>" (desired.LauncherOf, spec.vmiName).
	indexVMI = "vmi"
	// indexVM indexes VMIs by the VM their owner reference names,
	// "<namespace>/<vm>" (desired.OwnerVM).
	indexVM = "vm"
	// indexStatefulSet indexes IP objects by the StatefulSet their pod's
	// name is of, "<namespace>/<set>" (desired.StatefulSetPod).
	indexStatefulSet = "statefulset"
)

// indexers are the indexes each kind's informer keeps, added before it
// starts. They index the typed objects the transforms put in the stores
// (of a stored form, the API object it holds: apiObject).
var indexers = map[Kind]cache.Indexers{
	KindPod: {indexVMI: func(obj any) ([]string, error) {
		if p, ok := apiObject(obj).(*corev1.Pod); ok {
			if vmi, ok := desired.LauncherOf(p); ok {
				return []string{p.Namespace + "/" + vmi}, nil
			}
		}
		return nil, nil
	}},
	KindVirtualMachineInstance: {indexVM: func(obj any) ([]string, error) {
		if vmi, ok := apiObject(obj).(*kubevirtv1.VirtualMachineInstance); ok {
			if vm := desired.OwnerVM(vmi); vm != "" {
				return []string{vmi.Namespace + "/" + vm}, nil
			}
		}
		return nil, nil
	}},
	KindVirtualMachineInstanceMigration: {indexVMI: func(obj any) ([]string, error) {
		if m, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
		}
		return nil, nil
	}},
	KindIP: {indexStatefulSet: func(obj any) ([]string, error) {
		if ip, ok := obj.(*kubeovnv1.IP); ok {
			if set, _, ok := desired.StatefulSetPod(ip.Spec.PodName); ok {
				return []string{ip.Spec.Namespace + "/" + set}, nil
			}
		}
		return nil, nil
	}},
}

// lookup is desired.Objects over the informers' stores: each lookup reads
// a store (GetByKey) or one of its indexes as it is at the call.
type lookup struct {
	inf  map[Kind]cache.SharedIndexInformer
	nets desired.Inputs
	// bad is the first object looked up that could not be read.
	bad *Unreadable
}

// get looks up the object of kind k at key ("<namespace>/<name>", or the
// name of a cluster-scoped object).
func get[T any](l *lookup, k Kind, key string) T {
	var zero T
	i, ok := l.inf[k]
	if !ok {
		return zero // not installed: no object
	}
	obj, exists, err := i.GetStore().GetByKey(key)
	if err != nil || !exists {
		return zero
	}
	return typed[T](l, k, obj)
}

// byIndex looks up the objects of kind k whose index value is key.
func byIndex[T any](l *lookup, k Kind, index, key string) []T {
	i, ok := l.inf[k]
	if !ok {
		return nil
	}
	objs, err := i.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		var zero T
		if v := typed[T](l, k, o); any(v) != any(zero) {
			out = append(out, v)
		}
	}
	return out
}

// typed is obj in its typed form, as collect converts it: an object that
// could not be read is noted, and looked up as none.
func typed[T any](l *lookup, k Kind, obj any) T {
	var zero T
	switch v := apiObject(obj).(type) {
	case T:
		return v
	case *unconvertible:
		l.unread(v.unreadable(k))
	default:
		l.unread(Unreadable{Kind: k, Err: fmt.Sprintf("unexpected %T in the store", obj)})
	}
	return zero
}

func (l *lookup) unread(u Unreadable) {
	if l.bad == nil {
		l.bad = &u
	}
}

func key(ns, name string) string { return ns + "/" + name }

func (l *lookup) Pod(ns, name string) *corev1.Pod { return get[*corev1.Pod](l, KindPod, key(ns, name)) }

func (l *lookup) VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine {
	return get[*kubevirtv1.VirtualMachine](l, KindVirtualMachine, key(ns, name))
}

func (l *lookup) VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance {
	return get[*kubevirtv1.VirtualMachineInstance](l, KindVirtualMachineInstance, key(ns, name))
}

func (l *lookup) Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	return get[*kubevirtv1.VirtualMachineInstanceMigration](l, KindVirtualMachineInstanceMigration, key(ns, name))
}

func (l *lookup) OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance {
	return byIndex[*kubevirtv1.VirtualMachineInstance](l, KindVirtualMachineInstance, indexVM, key(ns, vm))
}

func (l *lookup) Launchers(ns, vmi string) []*corev1.Pod {
	return byIndex[*corev1.Pod](l, KindPod, indexVMI, key(ns, vmi))
}

func (l *lookup) Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration {
	return byIndex[*kubevirtv1.VirtualMachineInstanceMigration](l, KindVirtualMachineInstanceMigration, indexVMI, key(ns, vmi))
}

func (l *lookup) IP(name string) *kubeovnv1.IP { return get[*kubeovnv1.IP](l, KindIP, name) }

func (l *lookup) StatefulSetIPs(ns, set string) []*kubeovnv1.IP {
	return byIndex[*kubeovnv1.IP](l, KindIP, indexStatefulSet, key(ns, set))
}

func (l *lookup) Networks() desired.Inputs { return l.nets }

func (l *lookup) Unreadable() string {
	if l.bad == nil {
		return ""
	}
	return l.bad.String()
}

// compareRefs orders object refs by kind, namespace, then name.
func compareRefs(a, b desired.ObjectRef) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func collect[T any](k Kind, objs []any, bad *[]Unreadable) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		switch v := apiObject(o).(type) {
		case T:
			out = append(out, v)
		case *unconvertible:
			*bad = append(*bad, v.unreadable(k))
		default:
			*bad = append(*bad, Unreadable{Kind: k, Err: fmt.Sprintf("unexpected %T in the store", o)})
		}
	}
	return out
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

// typedTransform converts the dynamic informer's unstructured objects into
// their typed form (kubevirt.io/api, the NAD client's API types, apis/kubeovn/v1) as they
// enter the store, so a pass does not convert every object again. It is
// idempotent, as client-go requires: typed objects pass through.
func typedTransform(k Kind) cache.TransformFunc {
	newObj := func() runtime.Object {
		switch k {
		case KindVirtualMachine:
			return &kubevirtv1.VirtualMachine{}
		case KindVirtualMachineInstance:
			return &kubevirtv1.VirtualMachineInstance{}
		case KindVirtualMachineInstanceMigration:
			return &kubevirtv1.VirtualMachineInstanceMigration{}
		case KindSubnet:
			return &kubeovnv1.Subnet{}
		case KindIP:
			return &kubeovnv1.IP{}
		case KindIPAMClaim:
			return &ipamclaimsv1alpha1.IPAMClaim{}
		default:
			return &nadv1.NetworkAttachmentDefinition{}
		}
	}
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

// leanKubeVirt keeps of a VirtualMachine, VirtualMachineInstance or
// migration only what ovn-sync reads, as stripPod does for pods: metadata
// without managed fields and kubectl's last-applied copy; of a VM's
// template and a VMI's spec the networks and interfaces (and the template's
// annotations); of a VMI's status the node, phase and migration state; of a
// migration the VMI's name, phase and migration state. Disks, volumes,
// data volume templates, resources and conditions are dropped: they are
// most of a real VM's size. Other objects pass through.
func leanKubeVirt(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *kubevirtv1.VirtualMachine:
		lean := &kubevirtv1.VirtualMachine{TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(o.ObjectMeta)}
		if t := o.Spec.Template; t != nil {
			lean.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: t.ObjectMeta.Annotations, Labels: t.ObjectMeta.Labels},
				Spec:       leanVMISpec(&t.Spec),
			}
		}
		lean.Spec.Running, lean.Spec.RunStrategy = o.Spec.Running, o.Spec.RunStrategy
		return lean
	case *kubevirtv1.VirtualMachineInstance:
		return &kubevirtv1.VirtualMachineInstance{
			TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(o.ObjectMeta),
			Spec: leanVMISpec(&o.Spec),
			Status: kubevirtv1.VirtualMachineInstanceStatus{
				NodeName: o.Status.NodeName, Phase: o.Status.Phase, MigrationState: o.Status.MigrationState,
			},
		}
	case *kubevirtv1.VirtualMachineInstanceMigration:
		return &kubevirtv1.VirtualMachineInstanceMigration{
			TypeMeta: o.TypeMeta, ObjectMeta: leanMeta(o.ObjectMeta),
			Spec:   kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: o.Spec.VMIName},
			Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: o.Status.Phase, MigrationState: o.Status.MigrationState},
		}
	}
	return obj
}

// leanVMISpec is the part of a VMI spec ovn-sync reads: networks and
// interfaces (the fields storedVMISpec holds).
func leanVMISpec(s *kubevirtv1.VirtualMachineInstanceSpec) kubevirtv1.VirtualMachineInstanceSpec {
	st := storeVMISpec(s)
	return st.spec()
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

// stripPod keeps of a pod only what ovn-sync reads: its metadata, without
// managed fields and kubectl's last-applied copy of the object, and of its
// spec and status the node, host networking and phase. Containers, volumes
// and container statuses are most of a real pod's size, and pods are most
// of the objects: this is what bounds the informers' memory on a big
// cluster. The store's pod is never written back (annotations are
// published with a merge patch), so nothing dropped here can be lost.
// StatefulSets and Namespaces, which the same factory reads, are kept in
// their lean forms too (leanStatefulSet, leanNamespace).
func stripPod(obj any) (any, error) {
	switch p := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		o, err := stripPod(p.Obj)
		p.Obj = o
		return p, err
	case *corev1.Pod:
		return &corev1.Pod{
			TypeMeta:   p.TypeMeta,
			ObjectMeta: leanMeta(p.ObjectMeta),
			Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
			Status:     corev1.PodStatus{Phase: p.Status.Phase},
		}, nil
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

// ReadCluster lists every object a pass reads from a cluster, through the
// informers run mode uses, and stops them: a one-time read (ovn-sync
// explain). An object that cannot be read is an error.
func ReadCluster(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) (desired.Inputs, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src := NewInformers(InformerOptions{Kube: kube, Dynamic: dyn, Logger: logr.Discard()})
	if err := src.Start(ctx); err != nil {
		return desired.Inputs{}, err
	}
	if !src.WaitForCacheSync(ctx) {
		return desired.Inputs{}, fmt.Errorf("reading the cluster: %w", ctx.Err())
	}
	snap := src.Inputs()
	if len(snap.Unreadable) > 0 {
		return desired.Inputs{}, fmt.Errorf("%s could not be read", snap.Unreadable[0])
	}
	return snap.Inputs, nil
}
