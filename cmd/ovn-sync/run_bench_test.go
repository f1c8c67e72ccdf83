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

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
)

// BenchmarkEventToCommit measures run mode's latency from a Kubernetes
// event (a pod created) to its port committed in a real ovsdb-server, as
// another NB client sees it, with N ports already there. The reconcile loop
// runs in-process on client-go fakes (a real API server adds its own watch
// latency, 10-30 ms here); publishing is off. Each iteration creates one
// pod and waits for its port. Run it as
//
//	go test -run '^$' -bench EventToCommit -benchtime 200x ./cmd/ovn-sync
//
// and read p50-ms and p99-ms.
func BenchmarkEventToCommit(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) { benchEventToCommit(b, n) })
	}
}

func benchEventToCommit(b *testing.B, n int) {
	nbtest.Require(b)
	srv := nbtest.Start(b)
	pods := make([]runtime.Object, n)
	for i := range pods {
		pods[i] = looptest.Pod(fmt.Sprintf("p%d", i))
	}
	start := time.Now()
	tr := looptest.Start(b, looptest.Options{KubeObjs: pods, NBAddr: srv.Addr(), Coalesce: 20 * time.Millisecond})

	// The observer: another client, told of every port insert.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs, err := observed.Dial(ctx, observed.Options{Endpoints: []string{srv.Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	defer obs.Close()
	added := make(chan string, 1024)
	obs.Client().Cache().AddEventHandler(&cache.EventHandlerFuncs{AddFunc: func(table string, m model.Model) {
		if table == nbdb.LogicalSwitchPortTable {
			select {
			case added <- m.(*nbdb.LogicalSwitchPort).Name:
			default:
			}
		}
	}})
	for deadline := time.Now().Add(10 * time.Minute); tr.NB.State().OwnedPorts() < n; {
		if time.Now().After(deadline) {
			b.Fatalf("initial pass: %d of %d ports", tr.NB.State().OwnedPorts(), n)
		}
		time.Sleep(500 * time.Millisecond) // State() at 100k is not free
	}
	b.Logf("%d existing ports committed %s after start", n, time.Since(start).Round(time.Millisecond))
	for len(added) > 0 {
		<-added
	}

	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("new%d", i)
		t0 := time.Now()
		if _, err := tr.Kube.CoreV1().Pods("ns").Create(ctx, looptest.Pod(name), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		want := name + ".ns"
		timeout := time.After(30 * time.Second)
	wait:
		for {
			select {
			case got := <-added:
				if got == want {
					break wait
				}
			case <-timeout:
				b.Fatalf("port %s not committed within 30s", want)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
