package sources

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// InformerOptions configures NewInformers.
type InformerOptions struct {
	// Kube reads Pods, Namespaces and StatefulSets; its Discovery() tells
	// which custom resources exist unless Discovery is set.
	Kube kubernetes.Interface
	// Dynamic reads the custom kinds (KubeVirt's, Multus's, kube-ovn's
	// Subnets and IPs, and IPAMClaims) and the CRDs of those not installed.
	Dynamic dynamic.Interface
	// Discovery overrides Kube.Discovery(), for tests.
	Discovery discovery.DiscoveryInterface
	// Logger receives one line per kind found missing or appearing, and
	// one per failed or fruitless discovery after a CRD appeared.
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
// A custom resource that is not installed (KubeVirt, Multus or kube-ovn
// absent, say) is logged once and counts as an empty, synced source. Its
// CRD is watched, and its informer starts once the CRD is established;
// Discover, called again (say at every resync), also picks it up, where
// CRDs cannot be listed.
type Informers struct {
	opts    InformerOptions
	disco   discovery.DiscoveryInterface
	changes chan struct{}

	// chmu guards what changed since the last take (Take, TakeChanges).
	// The transforms and event handlers take only chmu; the other methods
	// take mu, then chmu.
	chmu sync.Mutex
	// version counts the changes informers queue and report, and informer
	// starts; see Snapshot.Version. It moves only under chmu, with what
	// changed (changed, allChanged, inflight), so a snapshot's Version and
	// Changed agree.
	version uint64
	// changed holds the objects events named since the last take;
	// allChanged replaces it when that cannot say what changed (see
	// Snapshot.AllChanged), and changed is then nil.
	changed map[state.ObjectRef]struct{}
	// inflight holds the objects whose informer has queued a change
	// (recording) that its handler has not seen yet (record, landed): for
	// each, the object as its last transform returned it, which is what the
	// handler of that change is given.
	inflight   map[state.ObjectRef]runtime.Object
	allChanged bool
	// unreadable holds the objects a store may hold that could not be
	// converted (see TakeChanges): noted when a transform returns one,
	// forgotten when the handler of the object's last change is given a
	// readable object or a deletion.
	unreadable map[state.ObjectRef]Unreadable

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
// Pods, Namespaces and StatefulSets and for each custom kind served.
// Informers run (in goroutines client-go starts) until ctx is done. Start
// returns an error only when discovery fails for a reason other than the
// resources being absent; the caller may call Start again.
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
