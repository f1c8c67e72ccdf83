package desired

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// benchInputs is n owners: three quarters pods, one quarter running VMs
// (each with a VMI and a launcher pod), in 100 namespaces. Up to
// MaxSwitchPorts of them share the default network; past that, as OVN
// binds no more on one switch, the namespaces are bound to kube-ovn
// Subnets (benchSubnets) of at most 20,000 owners each.
func benchInputs(n int) Inputs {
	var in Inputs
	in.Subnets = benchSubnets(n)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%100)
		created := metav1.NewTime(epoch.Add(time.Duration(i) * time.Second))
		if i%4 != 3 {
			in.Pods = append(in.Pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), CreationTimestamp: created},
				Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%500)},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning},
			})
			continue
		}
		name := fmt.Sprintf("vm-%d", i)
		in.VirtualMachines = append(in.VirtualMachines, &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
					Domain:   kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{{Name: "default"}}}},
				},
			}},
		})
		node := fmt.Sprintf("node-%d", i%500)
		in.VirtualMachineInstances = append(in.VirtualMachineInstances, &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
		})
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: "virt-launcher-" + name + "-abcde",
				Labels:      map[string]string{"kubevirt.io": "virt-launcher"},
				Annotations: map[string]string{"kubevirt.io/domain": name},
			},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return in
}

// benchSubnets binds benchInputs' 100 namespaces to kube-ovn Subnets when
// n owners would pass what one switch can hold: ns-i to Subnet bench-(i%k),
// 100.64.0.0/10 cut in k /16s.
func benchSubnets(n int) []*kubeovnv1.Subnet {
	if n <= MaxSwitchPorts {
		return nil
	}
	k := (n + 19_999) / 20_000
	subs := make([]*kubeovnv1.Subnet, k)
	for j := range subs {
		subs[j] = &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", j)},
			Spec: kubeovnv1.SubnetSpec{Protocol: "IPv4", CIDRBlock: fmt.Sprintf("100.%d.0.0/16", 64+j), Gateway: fmt.Sprintf("100.%d.0.1", 64+j)}}
	}
	for i := range 100 {
		subs[i%k].Spec.Namespaces = append(subs[i%k].Spec.Namespaces, fmt.Sprintf("ns-%d", i))
	}
	return subs
}

// BenchmarkBuild measures a first pass (empty NB: every address allocated),
// a steady pass (have equals the result: everything sticky) and a steady
// pass with one new pod (IPAM set up over every held address). ns/owner is
// the figure to compare across sizes.
func BenchmarkBuild(b *testing.B) {
	cfg, err := NewConfig("ovn-default", []string{"10.0.0.0/8", "fd00:10::/64"}, []string{"10.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		// Inputs are built only for the sizes a -bench pattern selects.
		var in, plusOne Inputs
		var have state.State
		setup := func(b *testing.B) {
			if in.Pods != nil {
				return
			}
			b.StopTimer()
			in = benchInputs(n)
			have, _ = wantProblems(Build(in, cfg, state.State{}))
			plusOne = withNewPod(in)
			runtime.GC()
			b.StartTimer()
		}
		for _, c := range []struct {
			name string
			args func() (Inputs, state.State)
		}{
			{"first", func() (Inputs, state.State) { return in, state.State{} }},
			{"steady", func() (Inputs, state.State) { return in, have }},
			{"steady+1", func() (Inputs, state.State) { return plusOne, have }},
		} {
			b.Run(fmt.Sprintf("%s/owners=%d", c.name, n), func(b *testing.B) {
				setup(b)
				in, have := c.args()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					Build(in, cfg, have)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/owner")
			})
		}
		b.Run(fmt.Sprintf("floor/owners=%d", n), func(b *testing.B) {
			setup(b)
			if want, _ := steadyFloor(in, have); want.Len() != n {
				b.Fatalf("the floor wrote %d ports for %d owners", want.Len(), n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				steadyFloor(in, have)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/owner")
		})
	}
}

// steadyFloor is the least a steady Build of in over have must do, and no
// more: name each owner's port, find its row in have by that name, write
// the port (the row's values) into a new set of ports, and read every
// row's addresses (addresses held twice are found among all of them).
// BenchmarkBuild's floor beside steady is what the rest of a Build costs.
func steadyFloor(in Inputs, have state.State) (state.Ports, int) {
	want := state.NewPorts(have.Ports.Len())
	var ports arena[state.Port]
	one := func(kind, ns, name string) {
		base := name + "." + ns
		hp := have.Ports.Get(base)
		if hp == nil {
			return
		}
		p := ports.alloc()
		*p = state.Port{Name: base, Switch: hp.Switch, Addresses: hp.Addresses, PortSecurity: hp.PortSecurity,
			Owner: kind + "/" + ns + "/" + name, Network: hp.Network, RequestedChassis: hp.RequestedChassis}
		want.Set(base, p)
	}
	for _, p := range in.Pods {
		if !isLauncher(p) {
			one(kindPod, p.Namespace, p.Name)
		}
	}
	for _, vm := range in.VirtualMachines {
		one(kindVirtualMachine, vm.Namespace, vm.Name)
	}
	held := make([]addr.Key, 0, 2*have.Ports.Len())
	for _, p := range have.Ports.All() {
		addr.EachHeld(p, func(k addr.Key) { held = append(held, k) })
	}
	return want, len(held)
}

// BenchmarkIncremental measures one event at n owners, side by side: a
// full Build of the inputs with one new pod (what a pass cost before it
// was incremental) and Engine.Update for the same event (what a
// Kubernetes-triggered pass costs now). The NB shows the last result.
// Update looks objects up in indexes built once (ObjectsOf), as run mode
// looks them up in the informers' indexes.
func BenchmarkIncremental(b *testing.B) {
	cfg, err := NewConfig("ovn-default", []string{"10.0.0.0/8", "fd00:10::/64"}, []string{"10.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		var in, plusOne Inputs
		var objs, objsPlusOne Objects
		var have state.State
		var x Engine
		setup := func(b *testing.B) {
			if in.Pods != nil {
				return
			}
			b.StopTimer()
			in = benchInputs(n)
			have = x.Full(in, cfg, state.State{}).Want
			plusOne = withNewPod(in)
			objs, objsPlusOne = ObjectsOf(in), ObjectsOf(plusOne)
			runtime.GC()
			b.StartTimer()
		}
		added := []state.ObjectRef{{Kind: kindPod, Namespace: "ns-0", Name: "new"}}
		b.Run(fmt.Sprintf("full/owners=%d", n), func(b *testing.B) {
			setup(b)
			b.ReportAllocs()
			for range b.N {
				Build(plusOne, cfg, have)
			}
		})
		b.Run(fmt.Sprintf("update/owners=%d", n), func(b *testing.B) {
			setup(b)
			b.ReportAllocs()
			for i := range b.N {
				// The pod comes and goes: each Update adds its port or
				// removes it, over an NB that shows the last result.
				ev := objsPlusOne
				if i%2 == 1 {
					ev = objs
				}
				r, why := x.Update(ev, added, cfg, have)
				if why.Gave() {
					b.Fatal(why)
				}
				b.StopTimer()
				have = r.Want
				b.StartTimer()
			}
		})
	}
}

// withNewPod returns in with one more pod, ns-0/new, pending.
func withNewPod(in Inputs) Inputs {
	in.Pods = append(append([]*corev1.Pod(nil), in.Pods...), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "new"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	})
	return in
}

// BenchmarkEngineKeeps measures what an Engine keeps between passes at n
// owners, in live heap an owner: its last result and the indexes an
// Update reads (built by the first), over an NB that holds the result (so
// the result's ports are the NB's rows, which the NB's view holds and are
// not counted here). The time is that of the Full and the first Update.
//
// A million owners (50 switches of 20,000 ports) take a minute or two and
// some GB: name a size to leave them out (-bench 'EngineKeeps/owners=100000$').
//
//	go test -run '^$' -bench EngineKeeps -benchtime 3x ./desired
func BenchmarkEngineKeeps(b *testing.B) {
	cfg, err := NewConfig("ovn-default", []string{"10.0.0.0/8", "fd00:10::/64"}, []string{"10.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("owners=%d", n), func(b *testing.B) {
			in := benchInputs(n)
			have := nbOf(state.State{}, Build(in, cfg, state.State{}).Want)
			objs := ObjectsOf(in)
			var kept int64
			for range b.N {
				var x Engine
				x.Full(in, cfg, have)
				if _, why := x.Update(objs, nil, cfg, have); why.Gave() {
					b.Fatal(why)
				}
				kept = freedBy(func() { x = Engine{} })
			}
			b.ReportMetric(float64(kept)/float64(n), "kept-B/owner")
		})
	}
}
