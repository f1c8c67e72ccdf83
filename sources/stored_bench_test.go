package sources

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkStores holds the pods, VMs and VMIs of a generated cluster in
// informer stores, as the lean API objects (form=api) or their stored
// forms (form=stored), side by side: bytes of live heap the stores hold
// per object, and the time of a full snapshot (Inputs), which makes the
// API object of every stored VM and VMI (a pod's is made as Build reads
// it: BenchmarkFullPass). The objects come as a watch gives
// them, decoded from their wire form (protobuf for pods, JSON for the
// KubeVirt kinds), every string in memory of its own, and every pod
// carries the annotations kube-ovn (or ovn-sync publishing) writes.
//
// A million ports take a minute and some GB: name a size to leave them
// out (-bench 'Stores/ports=100000/').
//
//	go test -run '^$' -bench Stores -benchtime 5x ./sources/
func BenchmarkStores(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		for _, form := range []string{"api", "stored"} {
			b.Run(fmt.Sprintf("ports=%d/form=%s", n, form), func(b *testing.B) {
				s, count := storesOf(b, bench.Cluster(n), form == "stored", annotated)
				b.ResetTimer()
				for range b.N {
					snap := s.Inputs()
					if len(snap.Unreadable) > 0 || snap.Inputs.PodCount() == 0 {
						b.Fatalf("snapshot: %d pods, unreadable %v", snap.Inputs.PodCount(), snap.Unreadable)
					}
				}
				b.StopTimer()
				// What the stores hold: the live heap with them, less
				// the live heap once they are dropped.
				with := liveheap.Bytes()
				runtime.KeepAlive(s)
				s = nil
				b.ReportMetric(float64(with-liveheap.Bytes())/float64(count), "B/object")
			})
		}
	}
}

// BenchmarkFullPass is run mode's full pass (a resync) over stores that
// hold a generated cluster in their stored forms: a snapshot, then an
// Engine's Full over an NB that shows the engine's last result. With
// pods=at-read the snapshot lists the stored pods (Inputs.StoredPods) and
// Build makes each pod as it reads it; with pods=whole every pod's API
// object is made first and held through the pass, as a snapshot did
// before. Reported, per port: the bytes the snapshot holds while the pass
// runs (snapshot-B/port), and the most live heap the pass held at once
// above the stores, the engine and the NB (peak-B/port, liveheap.Peak);
// the time is that of a pass alone.
//
//	go test -run '^$' -bench FullPass -benchtime 2x ./sources/
func BenchmarkFullPass(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, pods := range []string{"whole", "at-read"} {
			b.Run(fmt.Sprintf("ports=%d/pods=%s", n, pods), func(b *testing.B) {
				cluster := bench.Cluster(n)
				s, _ := storesOf(b, cluster, true, publishedBy(cluster))
				cluster = desired.Inputs{}
				list := func() desired.Inputs {
					in := s.Inputs().Inputs
					if pods == "whole" {
						in.Pods, in.StoredPods = slices.Collect(in.AllPods()), nil
					}
					return in
				}
				cfg := bench.Config()
				var x desired.Engine
				have := bench.Observe(x.Full(list(), cfg, state.New(0)).Want)
				ports := have.Ports.Len()
				b.ResetTimer()
				for range b.N {
					x.Full(list(), cfg, have)
				}
				b.StopTimer()
				before := liveheap.Bytes()
				in := list()
				snapshot := liveheap.Bytes() - before
				runtime.KeepAlive(in)
				peak := liveheap.Peak(func() { x.Full(list(), cfg, have) })
				b.ReportMetric(float64(snapshot)/float64(ports), "snapshot-B/port")
				b.ReportMetric(float64(peak)/float64(ports), "peak-B/port")
			})
		}
	}
}

// storesOf is informers whose stores hold the objects of in, a generated
// cluster, decoded from the wire as a watch gives them, each pod annotated
// by annotate: the pods, VMs and VMIs in their stored forms when stored is
// set, else as lean API objects. It returns how many pods, VMs and VMIs
// they hold.
func storesOf(b *testing.B, in desired.Inputs, stored bool, annotate func(*corev1.Pod, int) *corev1.Pod) (*Informers, int) {
	var objs []struct {
		k   Kind
		obj any
	}
	add := func(k Kind, obj any, strip cache.TransformFunc) {
		o, _ := strip(obj)
		if stored {
			o = compact(o)
		}
		objs = append(objs, struct {
			k   Kind
			obj any
		}{k, o})
	}
	for i, p := range in.Pods {
		add(KindPod, fromWire(b, annotate(p, i)), stripPod)
	}
	lean := func(obj any) (any, error) { return leanKubeVirt(obj.(k8sruntime.Object)), nil }
	for _, v := range in.VirtualMachines {
		add(KindVirtualMachine, fromJSON(b, v), lean)
	}
	for _, v := range in.VirtualMachineInstances {
		add(KindVirtualMachineInstance, fromJSON(b, v), lean)
	}
	count := len(objs)
	whole := func(obj any) (any, error) { return obj, nil }
	for _, v := range in.NetworkAttachmentDefinitions {
		add(KindNetworkAttachmentDefinition, v, whole)
	}
	for _, v := range in.Subnets {
		add(KindSubnet, v, whole)
	}
	s := NewInformers(InformerOptions{Logger: logr.Discard()})
	s.mu.Lock()
	stores := map[Kind]cache.Store{}
	for _, k := range []Kind{KindPod, KindVirtualMachine, KindVirtualMachineInstance, KindNetworkAttachmentDefinition, KindSubnet} {
		c := &captured{store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
		s.watch(k, c)
		stores[k] = c.store
	}
	s.mu.Unlock()
	for _, o := range objs {
		_ = stores[o.k].Add(o.obj)
	}
	return s, count
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

// publishedBy is an annotate for storesOf that gives each plain pod of in
// the annotations ovn-sync publishes for its port in a Build of in, as
// the pods of a cluster it runs carry them.
func publishedBy(in desired.Inputs) func(*corev1.Pod, int) *corev1.Pod {
	ann := map[string]map[string]string{}
	for f := range desired.Build(in, bench.Config(), state.New(0)).Published() {
		if f.OwnerKind != state.KindPod || f.Provider == "" || len(f.Port.Addresses) == 0 {
			continue
		}
		mac, ip, _ := strings.Cut(f.Port.Addresses[0], " ")
		k := f.Provider + ".kubernetes.io/"
		ann[f.OwnerNamespace+"/"+f.OwnerName] = map[string]string{
			k + "allocated": "true", k + "routed": "true", k + "logical_switch": f.Port.Switch,
			k + "cidr": f.CIDR, k + "gateway": f.Gateway, k + "ip_address": ip, k + "mac_address": mac,
		}
	}
	return func(p *corev1.Pod, _ int) *corev1.Pod {
		p = p.DeepCopy()
		if a := ann[p.Namespace+"/"+p.Name]; a != nil {
			p.Annotations = a
		}
		return p
	}
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

// BenchmarkLauncherIndex holds 30,000 virt-launcher pods over four
// namespaces, as a watch decodes them and the informers store them, in a
// store with the pods' indexes (indexers) and in one without: the bytes
// of live heap the indexes hold a pod; the time is that of a lookup of
// one VMI's launchers (Launchers).
//
//	go test -run '^$' -bench LauncherIndex -benchtime 1000x ./sources/
func BenchmarkLauncherIndex(b *testing.B) {
	const n = 30_000
	var pods []any
	for i := range n {
		p := pod(fmt.Sprint("ns-", i%4), fmt.Sprintf("virt-launcher-vm-%d-x7k2q", i))
		p.Labels = map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": fmt.Sprint("vm-", i)}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance",
			Name: fmt.Sprint("vm-", i), UID: types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))}}
		o, _ := stripPod(fromWire(b, p))
		pods = append(pods, compact(o))
	}
	fill := func(s cache.Store) cache.Store {
		for _, p := range pods {
			_ = s.Add(p)
		}
		return s
	}
	before := liveheap.Bytes()
	plain := fill(cache.NewStore(cache.MetaNamespaceKeyFunc))
	mid := liveheap.Bytes()
	indexed := fill(cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers[KindPod])).(cache.Indexer)
	after := liveheap.Bytes()
	runtime.KeepAlive(plain)
	l := &lookup{inf: map[Kind]cache.SharedIndexInformer{KindPod: &captured{store: indexed}}}
	b.ResetTimer()
	for i := range b.N {
		if got := l.Launchers(fmt.Sprint("ns-", i%4), fmt.Sprint("vm-", i%n)); len(got) != 1 {
			b.Fatalf("Launchers(vm-%d) = %d pods", i%n, len(got))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((after-mid)-(mid-before))/n, "index-B/pod")
	runtime.KeepAlive(indexed)
}

// BenchmarkStoredKey measures what an informer's event costs to name a
// stored pod: client-go's key function (meta.Accessor, through
// GetObjectMeta) and the event handler's refOf, on a launcher pod with
// KubeVirt's labels and kube-ovn's annotations.
//
//	go test -run '^$' -bench StoredKey -benchmem ./sources/
func BenchmarkStoredKey(b *testing.B) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-db-x7k2p", Namespace: "tenant-a", UID: "4c1a7a57-3e0b-4c87-9d0e-2c1f6b1f6a10",
		ResourceVersion: "81234", CreationTimestamp: metav1.Unix(1796680800, 0),
		Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "7d9f", "vm.kubevirt.io/name": "db"},
		Annotations: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5", "ovn.kubernetes.io/mac_address": "0a:58:0a:10:00:05",
			"ovn.kubernetes.io/logical_switch": "ovn-default", "ovn.kubernetes.io/allocated": "true", "kubevirt.io/domain": "db"},
	}}
	s := compact(fromWire(b, p))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.MetaNamespaceKeyFunc(s); err != nil {
			b.Fatal(err)
		}
		if _, ok := refOf(KindPod, s); !ok {
			b.Fatal("no ref")
		}
	}
}
