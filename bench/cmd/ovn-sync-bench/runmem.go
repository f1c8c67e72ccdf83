package main

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
)

// runMemResult is the memory of run mode at one size: the reconcile loop
// in-process, its informers fed the generated cluster, writing it into an
// empty NB and running a few passes after; then the live heap each part of
// the state takes, added one at a time and dropped in reverse.
type runMemResult struct {
	Size  int `json:"size"`
	Ports int `json:"ports"` // ports of ours in the NB after the cold start
	// Cold is the loop's cold start, until the NB held every port.
	Cold time.Duration `json:"cold_ns"`
	// PeakRSS is VmHWM after the cold start and the passes after it;
	// SteadyRSS is VmRSS after idling for Idle then; FreedRSS VmRSS
	// once debug.FreeOSMemory has returned every free page.
	PeakRSS, SteadyRSS, FreedRSS uint64
	Idle                         time.Duration
	// Heap is the live heap of the running loop after those passes, less
	// the process's own before the cluster was generated; HeapLeft what
	// remained of it once the loop had ended, where the parts start.
	Heap     uint64
	HeapLeft int64
	// Parts are the live heap of each part of the state, as added and as
	// dropped, in the order added.
	Parts []memPart
}

// memPart is the live heap one part of run mode's state takes.
type memPart struct {
	Name           string
	Added, Dropped int64
	// DroppedWith, if set, names the part whose Dropped includes this
	// one's: the two could not be dropped apart.
	DroppedWith string `json:",omitempty"`
}

// The parts of measureRunMemory, in the order added.
const (
	partInputs   = "informer inputs (stores of Pods, VMs, VMIs, migrations, NADs)"
	partCache    = "NB client: Logical_Switch_Port view, libovsdb cache of the other tables"
	partObserved = "observed state (state.State, its Index, the conversions kept)"
	partDesired  = "desired state (desired.Engine: result, address book)"
)

// measureRunMemory measures run mode's memory at size ports, in a child
// process of its own unless opts.inProcess.
func measureRunMemory(ctx context.Context, opts options, size int) (*runMemResult, error) {
	if opts.inProcess {
		return runMemory(ctx, size, opts.memoryIdle)
	}
	var r runMemResult
	if err := inChild(ctx, []string{"-child-memory", strconv.Itoa(size), "-memory-idle", opts.memoryIdle.String()}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func runMemoryChild(ctx context.Context, opts options) error {
	r, err := runMemory(ctx, opts.childMemory, opts.memoryIdle)
	if err != nil {
		return err
	}
	return writeJSON(opts.childOut, r)
}

// runMemory is measureRunMemory in this process.
//
// The fake clients serve each list from a copy of the generated cluster
// made for it and dropped once listed (a second list is refused, so the
// informers keep what they hold), so that nothing but the informers holds
// the objects: the process holds what a deployment's would, and not the
// objects of a fake API server.
func runMemory(ctx context.Context, size int, idle time.Duration) (*runMemResult, error) {
	r := &runMemResult{Size: size, Idle: idle}
	base := liveheap.Bytes()
	cfg := bench.Config()
	srv, err := nbtest.Serve()
	if err != nil {
		return nil, err
	}
	defer srv.Close()

	logf("memory %d: run mode's cold start", size)
	start := time.Now()
	// The generated objects are garbage once listed: only the stores keep them.
	opts := func() looptest.Options {
		in := bench.Cluster(size)
		return looptest.Options{NBAddr: srv.Addr(), Config: &cfg, Passes: "incremental",
			Resources: clusterResources(in), BeforeStart: listOnce(in)}
	}()
	loop, err := looptest.New(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if loop != nil {
			loop.Close()
		}
	}()
	if r.Ports, err = waitSettled(ctx, loop, size); err != nil {
		return nil, err
	}
	r.Cold = time.Since(start)
	// A few passes after it, for one pod each, as run mode sees them.
	for i := range 5 {
		name := fmt.Sprintf("mem-%d", i)
		if _, err := loop.Kube.CoreV1().Pods("ns").Create(ctx, looptest.Pod(name), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := waitSettled(ctx, loop, r.Ports+i+1); err != nil {
			return nil, err
		}
	}
	// Steady: idle for a while, as the runtime returns freed pages to the
	// system in the background.
	time.Sleep(idle)
	if r.SteadyRSS, err = statusField("VmRSS"); err != nil {
		return nil, err
	}
	if r.PeakRSS, err = peakRSS(); err != nil {
		return nil, err
	}
	r.Heap = uint64(liveheap.Bytes() - base)
	debug.FreeOSMemory()
	if r.FreedRSS, err = statusField("VmRSS"); err != nil {
		return nil, err
	}
	logf("memory %d: %d ports after %s; peak RSS %s, steady RSS %s (%s once freed), live heap %s", size, r.Ports, seconds(r.Cold),
		megabytes(r.PeakRSS), megabytes(r.SteadyRSS), megabytes(r.FreedRSS), megabytes(r.Heap))
	err = loop.Close()
	loop = nil
	if err != nil {
		return nil, err
	}

	if err := r.measureParts(ctx, srv.Addr(), cfg, base); err != nil {
		return nil, err
	}
	logf("memory %d: parts %+v", size, r.Parts)
	return r, nil
}

// measureParts measures the parts of run mode's memory, one at a time, over
// the NB at addr that the loop filled, from the heap the ended loop leaves
// once its goroutines are gone; base is the heap before the loop.
func (r *runMemResult) measureParts(ctx context.Context, addr string, cfg desired.Config, base int64) error {
	heap := liveheap.Bytes
	h0 := settledHeap()
	r.HeapLeft = h0 - base
	ictx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	kube, dyn := kubefake.NewClientset(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), sources.ListKinds)
	func() {
		in := bench.Cluster(r.Size)
		kube.Resources = clusterResources(in)
		listOnce(in)(kube, dyn)
	}()
	src := sources.NewInformers(sources.InformerOptions{Kube: kube, Dynamic: dyn, Logger: logr.Discard()})
	if err := src.Start(ictx); err != nil {
		return err
	}
	if !src.WaitForCacheSync(ictx) {
		return errors.New("informers did not sync")
	}
	h1 := heap()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{addr}})
	if err != nil {
		return err
	}
	h2 := heap()
	have := nb.State()
	h3 := heap()
	var inc desired.Engine
	res := inc.Full(src.Inputs().Inputs, cfg, have)
	h4 := heap()
	if res.Want.Ports.Len() < r.Ports {
		return fmt.Errorf("desired state has %d ports, the NB %d", res.Want.Ports.Len(), r.Ports)
	}
	// The engine is read no more, but what it keeps is what is measured:
	// without this, it is garbage at h4 already.
	goruntime.KeepAlive(&inc)
	inc.Reset()
	h5 := heap()
	nb.Close()
	h6 := settledHeap() // the client's goroutines end after Close returns
	stopInformers()
	h7 := settledHeap()
	r.Parts = []memPart{
		{Name: partInputs, Added: h1 - h0, Dropped: h6 - h7},
		// Closing the NB client drops its cache and the observed state at once.
		{Name: partCache, Added: h2 - h1, Dropped: h5 - h6},
		{Name: partObserved, Added: h3 - h2, DroppedWith: partCache},
		{Name: partDesired, Added: h4 - h3, Dropped: h4 - h5},
	}
	return nil
}

// settledHeap returns the live heap once it has stopped falling: the
// goroutines of a client or an informer that was stopped end, and let go
// of what they hold, after the call that stops them returns.
func settledHeap() int64 {
	h := liveheap.Bytes()
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		next := liveheap.Bytes()
		if next > h-h/100 {
			return min(h, next)
		}
		h = next
	}
	return h
}

// waitSettled waits until the NB holds at least want ports of ours and
// their number has not changed for two seconds, and returns it.
func waitSettled(ctx context.Context, r *looptest.Runner, want int) (int, error) {
	deadline := time.Now().Add(10 * time.Minute)
	last, since := -1, time.Now()
	for {
		n := r.NB.State().OwnedPorts()
		if n != last {
			last, since = n, time.Now()
		}
		if n >= want && time.Since(since) >= 2*time.Second {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("%d ports of %d after 10 minutes", n, want)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// listOnce returns a BeforeStart for looptest that makes the fake clients
// serve the objects of in to the informers' first list of each kind, and
// refuse any list after it: a refused list is retried, and the informer
// keeps its store meanwhile. Nothing else holds the objects once listed.
// clusterResources is what discovery serves for in: KubeVirt's and
// Multus' kinds, and kube-ovn's when in has Subnets.
func clusterResources(in desired.Inputs) []*metav1.APIResourceList {
	rs := append(slices.Clone(looptest.KubeVirtResources), looptest.MultusResources)
	if len(in.Subnets) > 0 {
		rs = append(rs, &metav1.APIResourceList{GroupVersion: kubeovnv1.GroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: "subnets", Kind: "Subnet"}, {Name: "ips", Kind: "IP"}}})
	}
	return rs
}

func listOnce(in desired.Inputs) func(*kubefake.Clientset, *dynamicfake.FakeDynamicClient) {
	var mu sync.Mutex
	pods := &corev1.PodList{}
	for _, p := range in.Pods {
		pods.Items = append(pods.Items, *p)
	}
	dyn := map[string]*unstructured.UnstructuredList{}
	add := func(resource string, o any) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			panic(err) // generated objects always convert
		}
		if dyn[resource] == nil {
			dyn[resource] = &unstructured.UnstructuredList{}
		}
		dyn[resource].Items = append(dyn[resource].Items, unstructured.Unstructured{Object: m})
	}
	for _, o := range in.VirtualMachines {
		add(sources.GVRVirtualMachine.Resource, o)
	}
	for _, o := range in.VirtualMachineInstances {
		add(sources.GVRVirtualMachineInstance.Resource, o)
	}
	for _, o := range in.Migrations {
		add(sources.GVRVirtualMachineInstanceMigration.Resource, o)
	}
	for _, o := range in.NetworkAttachmentDefinitions {
		add(sources.GVRNetworkAttachmentDefinition.Resource, o)
	}
	for _, o := range in.Subnets {
		add(sources.GVRSubnet.Resource, o)
	}
	return func(kube *kubefake.Clientset, dc *dynamicfake.FakeDynamicClient) {
		kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if pods == nil {
				return true, nil, errors.New("listed once")
			}
			l := pods
			pods = nil
			return true, l, nil
		})
		dc.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			res := a.GetResource().Resource
			l, ok := dyn[res]
			if !ok {
				return false, nil, nil
			}
			if l == nil {
				return true, nil, errors.New("listed once")
			}
			dyn[res] = nil
			return true, l, nil
		})
	}
}
