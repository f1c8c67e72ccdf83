package sources

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
)

// BenchmarkStores holds the pods, VMs and VMIs of a generated cluster in
// informer stores, as the lean API objects (form=api) or their stored
// forms (form=stored), side by side: bytes of live heap the stores hold
// per object, and the time of a full snapshot (Inputs), which makes the
// API object of every stored one. The objects come as a watch gives
// them, decoded from their wire form (protobuf for pods, JSON for the
// KubeVirt kinds), every string in memory of its own, and every pod
// carries the annotations kube-ovn (or ovn-sync publishing) writes.
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
				for i, p := range in.Pods {
					add(KindPod, fromWire(b, annotated(p, i)), stripPod)
				}
				lean := func(obj any) (any, error) { return leanKubeVirt(obj.(k8sruntime.Object)), nil }
				for _, v := range in.VirtualMachines {
					add(KindVirtualMachine, fromJSON(b, v), lean)
				}
				for _, v := range in.VirtualMachineInstances {
					add(KindVirtualMachineInstance, fromJSON(b, v), lean)
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

// annotated is p with the annotations kube-ovn writes to the i-th pod of a
// cluster it runs (ovn-sync publishes the same), on one of four subnets.
func annotated(p *corev1.Pod, i int) *corev1.Pod {
	p = p.DeepCopy()
	sub := i % 4
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	maps.Copy(p.Annotations, map[string]string{
		"ovn.kubernetes.io/allocated":      "true",
		"ovn.kubernetes.io/routed":         "true",
		"ovn.kubernetes.io/logical_switch": fmt.Sprintf("subnet-%d", sub),
		"ovn.kubernetes.io/cidr":           fmt.Sprintf("10.%d.0.0/16", 16+sub),
		"ovn.kubernetes.io/gateway":        fmt.Sprintf("10.%d.0.1", 16+sub),
		"ovn.kubernetes.io/ip_address":     fmt.Sprintf("10.%d.%d.%d", 16+sub, i>>8&255, i&255),
		"ovn.kubernetes.io/mac_address":    fmt.Sprintf("0a:58:0a:%02x:%02x:%02x", 16+sub, i>>8&255, i&255),
	})
	return p
}

// fromWire is p as a watch decodes it from protobuf.
func fromWire(tb testing.TB, p *corev1.Pod) *corev1.Pod {
	data, err := p.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	var out corev1.Pod
	if err := out.Unmarshal(data); err != nil {
		tb.Fatal(err)
	}
	out.TypeMeta = p.TypeMeta
	return &out
}

// fromJSON is obj as a watch decodes it from JSON.
func fromJSON[T any](b *testing.B, obj *T) *T {
	data, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		b.Fatal(err)
	}
	return out
}
