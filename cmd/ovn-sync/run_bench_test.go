package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
)

// BenchmarkEventToCommit measures run mode's latency from a Kubernetes
// event to its port committed in a real ovsdb-server, as another NB client
// sees it, with N ports already there. The reconcile loop runs in-process
// on client-go fakes read through the real informers (a real API server
// adds its own watch latency, 10-30 ms here); publishing is off. Events:
//
//	pod-add    a pod created; done when its port is inserted
//	vm-start   a stopped VM's VMI and launcher pod created; done when its
//	           port's requested-chassis names the node
//	vm-stop    the same deleted; done when requested-chassis is cleared
//	migration  a migration of a running VM started (migration object and
//	           target launcher); done when requested-chassis names both nodes
//
// Each iteration is one event (vm-start and vm-stop alternate, each timed;
// a migration is undone, untimed, before the next). Run it as
//
//	go test -run '^$' -bench EventToCommit -benchtime 200x ./cmd/ovn-sync
//
// and read p50-ms and p99-ms.
func BenchmarkEventToCommit(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, ev := range []string{"pod-add", "vm-start-stop", "migration"} {
			b.Run(fmt.Sprintf("existing=%d/event=%s", n, ev), func(b *testing.B) { benchEventToCommit(b, n, ev) })
		}
	}
}

// portSeen is a port's name and requested-chassis as an NB client saw
// them in an insert or an update.
type portSeen struct{ name, chassis string }

var (
	gvrVMI       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrMigration = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}
)

func benchEventToCommit(b *testing.B, n int, event string) {
	nbtest.Require(b)
	srv := nbtest.Start(b)
	kube := make([]runtime.Object, n)
	for i := range kube {
		kube[i] = looptest.Pod(fmt.Sprintf("p%d", i))
	}
	dyn := []runtime.Object{toUnstructured(b, benchVM("vm0"))}
	if event == "migration" {
		dyn = append(dyn, toUnstructured(b, benchVMI("vm0", "n1")))
		kube = append(kube, benchLauncher("vm0", "n1", 0))
	}
	start := time.Now()
	tr := looptest.Start(b, looptest.Options{KubeObjs: kube, DynObjs: dyn, NBAddr: srv.Addr(), Coalesce: 20 * time.Millisecond})

	// The observer: another client, told of every port insert and update.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs, err := observed.Dial(ctx, observed.Options{Endpoints: []string{srv.Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	defer obs.Close()
	seen := make(chan portSeen, 1024)
	send := func(table string, m model.Model) {
		if table == nbdb.LogicalSwitchPortTable {
			p := m.(*nbdb.LogicalSwitchPort)
			select {
			case seen <- portSeen{p.Name, p.Options["requested-chassis"]}:
			default:
			}
		}
	}
	obs.Client().Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(table string, _, m model.Model) { send(table, m) },
	})
	for deadline := time.Now().Add(10 * time.Minute); tr.NB.State().OwnedPorts() < n+1; {
		if time.Now().After(deadline) {
			b.Fatalf("initial pass: %d of %d ports", tr.NB.State().OwnedPorts(), n+1)
		}
		time.Sleep(500 * time.Millisecond) // State() at 100k is not free
	}
	b.Logf("%d existing ports committed %s after start", n+1, time.Since(start).Round(time.Millisecond))
	drain := func() {
		for len(seen) > 0 {
			<-seen
		}
	}
	wait := func(want portSeen) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case got := <-seen:
				if got == want {
					return
				}
			case <-timeout:
				b.Fatalf("port %s with requested-chassis %q not committed within 30s", want.name, want.chassis)
			}
		}
	}
	timed := func(lat *[]time.Duration, do func(), want portSeen) {
		drain()
		t0 := time.Now()
		do()
		wait(want)
		*lat = append(*lat, time.Since(t0))
	}
	pods := tr.Kube.CoreV1().Pods("ns")
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	create := func(gvr schema.GroupVersionResource, o any) {
		_, err := tr.Dyn.Resource(gvr).Namespace("ns").Create(ctx, toUnstructured(b, o), metav1.CreateOptions{})
		must(err)
	}
	del := func(gvr schema.GroupVersionResource, name string) {
		must(tr.Dyn.Resource(gvr).Namespace("ns").Delete(ctx, name, metav1.DeleteOptions{}))
	}
	var lat, lat2 []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		switch event {
		case "pod-add":
			name := fmt.Sprintf("new%d", i)
			timed(&lat, func() {
				_, err := pods.Create(ctx, looptest.Pod(name), metav1.CreateOptions{})
				must(err)
			}, portSeen{name + ".ns", "n1"})
		case "vm-start-stop":
			if i%2 == 0 {
				timed(&lat, func() {
					create(gvrVMI, benchVMI("vm0", "n1"))
					_, err := pods.Create(ctx, benchLauncher("vm0", "n1", i), metav1.CreateOptions{})
					must(err)
				}, portSeen{"vm0.ns", "n1"})
			} else {
				timed(&lat2, func() {
					must(pods.Delete(ctx, fmt.Sprintf("virt-launcher-vm0-%d", i-1), metav1.DeleteOptions{}))
					del(gvrVMI, "vm0")
				}, portSeen{"vm0.ns", ""})
			}
		case "migration":
			target := fmt.Sprintf("virt-launcher-vm0-t%d", i)
			timed(&lat, func() {
				create(gvrMigration, benchMigration("vm0", i, "n2"))
				p := benchLauncher("vm0", "n2", 0)
				p.Name = target
				_, err := pods.Create(ctx, p, metav1.CreateOptions{})
				must(err)
			}, portSeen{"vm0.ns", "n1,n2"})
			b.StopTimer()
			drain()
			del(gvrMigration, fmt.Sprintf("vm0-migration-%d", i))
			must(pods.Delete(ctx, target, metav1.DeleteOptions{}))
			wait(portSeen{"vm0.ns", "n1"})
			b.StartTimer()
		}
	}
	b.StopTimer()
	report := func(lat []time.Duration, prefix string) {
		if len(lat) == 0 {
			return
		}
		slices.Sort(lat)
		pct := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), prefix+"p50-ms")
		b.ReportMetric(pct(0.99), prefix+"p99-ms")
	}
	if event == "vm-start-stop" {
		report(lat, "start-")
		report(lat2, "stop-")
	} else {
		report(lat, "")
	}
}

func toUnstructured(b *testing.B, o any) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// benchVM is a stopped VM on the default network, in namespace ns.
func benchVM(name string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("vm-" + name)},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: []kubevirtv1.Network{*kubevirtv1.DefaultPodNetwork()},
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
					{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}}},
			}}},
	}
}

// benchVMI is vm's instance, running on node.
func benchVMI(vm, node string) *kubevirtv1.VirtualMachineInstance {
	t := true
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: vm, UID: types.UID("vmi-" + vm),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm, UID: types.UID("vm-" + vm), Controller: &t}}},
		Spec:   benchVM(vm).Spec.Template.Spec,
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
	}
}

// benchLauncher is the n-th virt-launcher pod of vm's instance, on node.
func benchLauncher(vm, node string, n int) *corev1.Pod {
	t := true
	p := looptest.Pod(fmt.Sprintf("virt-launcher-%s-%d", vm, n))
	p.Spec.NodeName = node
	p.Labels = map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-" + vm, "vm.kubevirt.io/name": vm}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vm, UID: types.UID("vmi-" + vm), Controller: &t}}
	return p
}

// benchMigration is the i-th migration of vm's instance, running, to target.
func benchMigration(vm string, i int, target string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-migration-%d", vm, i), UID: types.UID(fmt.Sprintf("mig-%s-%d", vm, i))},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vm},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning,
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "n1", TargetNode: target}},
	}
}
