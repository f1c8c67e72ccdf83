package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// BenchmarkEventToCommit measures run mode's latency from a Kubernetes
// event to its port committed in a real ovsdb-server, as another NB client
// sees it, with N ports already there (package bench/eventlat, which the
// harness in bench/cmd/ovn-sync-bench runs too: see its section (g)). Each
// existing=N/passes=P sets up one loop and runs every event kind on it:
// passes=incremental is run mode, passes=full is --full-passes. Each
// iteration is one event; migration's undo is in ns/op but not in the
// latencies. Run it as
//
//	go test -run '^$' -bench EventToCommit -benchtime 100x ./cmd/ovn-sync
//
// and read p50-ms and p99-ms.
func BenchmarkEventToCommit(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, passes := range eventlat.Passes {
			b.Run(fmt.Sprintf("existing=%d/passes=%s", n, passes), func(b *testing.B) { benchEventToCommit(b, n, 1, passes) })
		}
	}
	// The pods of a kube-ovn cluster divided among subnets: a pod's insert
	// mutates its own switch's ports, a set of 5,000 here, not 100,000.
	b.Run("existing=100000/switches=20/passes=incremental", func(b *testing.B) { benchEventToCommit(b, 100000, 20, "incremental") })
}

func benchEventToCommit(b *testing.B, n, switches int, passes string) {
	nbtest.Require(b)
	srv := nbtest.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := eventlat.Start(ctx, eventlat.Options{Existing: n, Switches: switches, NBAddr: srv.Addr(), Passes: passes})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
	}()
	b.Logf("%d existing ports committed %s after start", n+2, c.Ready.Round(time.Millisecond))
	for _, ev := range eventlat.Events {
		b.Run("event="+string(ev), func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d, err := c.Do(ctx, ev)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, d)
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(eventlat.Percentile(lat, 0.50)), "p50-ms")
			b.ReportMetric(ms(eventlat.Percentile(lat, 0.99)), "p99-ms")
		})
	}
}
