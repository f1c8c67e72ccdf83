package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
// a migration is undone, untimed, before the next). passes=incremental is
// run mode (a pass rebuilds the owners an event touches), passes=full
// builds the whole desired state every pass (--full-passes). Run it as
//
//	go test -run '^$' -bench EventToCommit -benchtime 200x ./cmd/ovn-sync
//
// and read p50-ms and p99-ms.
func BenchmarkEventToCommit(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, ev := range []string{"pod-add", "vm-start-stop", "migration"} {
			for _, passes := range []string{"incremental", "full"} {
				b.Run(fmt.Sprintf("existing=%d/event=%s/passes=%s", n, ev, passes), func(b *testing.B) { benchEventToCommit(b, n, ev, passes) })
			}
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

func benchEventToCommit(b *testing.B, n int, event, passes string) {
	nbtest.Require(b)
	srv := nbtest.Start(b)
	kube := make([]runtime.Object, n)
	for i := range kube {
		kube[i] = looptest.Pod(fmt.Sprintf("p%d", i))
	}
	dyn := []runtime.Object{looptest.Unstructured(b, looptest.VM("vm0"))}
	if event == "migration" {
		dyn = append(dyn, looptest.Unstructured(b, looptest.VMI("vm0", "n1")))
		kube = append(kube, looptest.Launcher("vm0", "0", "n1"))
	}
	start := time.Now()
	tr := looptest.Start(b, looptest.Options{KubeObjs: kube, DynObjs: dyn, NBAddr: srv.Addr(), Coalesce: 20 * time.Millisecond, Passes: passes})

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
		_, err := tr.Dyn.Resource(gvr).Namespace("ns").Create(ctx, looptest.Unstructured(b, o), metav1.CreateOptions{})
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
					create(gvrVMI, looptest.VMI("vm0", "n1"))
					_, err := pods.Create(ctx, looptest.Launcher("vm0", fmt.Sprint(i), "n1"), metav1.CreateOptions{})
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
				create(gvrMigration, looptest.Migration("vm0", fmt.Sprintf("vm0-migration-%d", i), "n1", "n2"))
				_, err := pods.Create(ctx, looptest.Launcher("vm0", fmt.Sprintf("t%d", i), "n2"), metav1.CreateOptions{})
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
