package sources

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
)

// BenchmarkStores holds the pods, VMs and VMIs of a generated cluster in
// informer stores, as the lean API objects (form=api) or their stored
// forms (form=stored), side by side: bytes of live heap the stores hold
// per object, and the time of a full snapshot (Inputs), which makes the
// API object of every stored one.
//
//	go test -run '^$' -bench Stores -benchtime 5x ./sources/
func BenchmarkStores(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, form := range []string{"api", "stored"} {
			b.Run(fmt.Sprintf("ports=%d/form=%s", n, form), func(b *testing.B) {
				in := bench.Cluster(n)
				var objs []struct {
					k   Kind
					obj any
				}
				add := func(k Kind, obj any, strip cache.TransformFunc) {
					o, _ := strip(obj)
					if form == "stored" {
						o = compact(o)
					}
					objs = append(objs, struct {
						k   Kind
						obj any
					}{k, o})
				}
				for _, p := range in.Pods {
					add(KindPod, p, stripPod)
				}
				lean := func(obj any) (any, error) { return leanKubeVirt(obj.(k8sruntime.Object)), nil }
				for _, v := range in.VirtualMachines {
					add(KindVirtualMachine, v, lean)
				}
				for _, v := range in.VirtualMachineInstances {
					add(KindVirtualMachineInstance, v, lean)
				}
				count := len(objs)
				in = bench.Cluster(0) // only the stores hold the objects
				s := NewInformers(InformerOptions{Logger: logr.Discard()})
				s.mu.Lock()
				stores := map[Kind]cache.Store{}
				for _, k := range []Kind{KindPod, KindVirtualMachine, KindVirtualMachineInstance} {
					c := &captured{store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
					s.watch(k, c)
					stores[k] = c.store
				}
				s.mu.Unlock()
				for _, o := range objs {
					_ = stores[o.k].Add(o.obj)
				}
				objs = nil
				b.ResetTimer()
				for range b.N {
					snap := s.Inputs()
					if len(snap.Unreadable) > 0 || len(snap.Inputs.Pods) == 0 {
						b.Fatalf("snapshot: %d pods, unreadable %v", len(snap.Inputs.Pods), snap.Unreadable)
					}
				}
				b.StopTimer()
				// What the stores hold: the live heap with them, less
				// the live heap once they are dropped.
				with := liveheap.Bytes()
				runtime.KeepAlive(s)
				s, stores = nil, nil
				b.ReportMetric(float64(with-liveheap.Bytes())/float64(count), "B/object")
			})
		}
	}
}
