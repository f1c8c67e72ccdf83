package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
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

// BenchmarkHeldPerEvent measures the live heap run mode keeps per event,
// incremental passes, over 10,000 existing ports on a real ovsdb-server:
// event=vm-cycle starts and stops a VM (its VMI and launcher pod created
// and deleted), event=migration starts a migration and undoes it, each
// back to where it began, so a heap that grows with them holds what it no
// longer needs; event=pod-add creates a pod, which adds its objects, row
// and port. Run it as
//
//	go test -run '^$' -bench HeldPerEvent -benchtime 300x ./cmd/ovn-sync
//
// and read held-B/event (the live heap after a collection, after the
// events less before them, per event).
func BenchmarkHeldPerEvent(b *testing.B) {
	nbtest.Require(b)
	srv := nbtest.Start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := eventlat.Start(ctx, eventlat.Options{Existing: 10000, NBAddr: srv.Addr(), Passes: "incremental"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
	}()
	for _, ev := range []struct {
		name string
		do   []eventlat.Event
	}{
		{"vm-cycle", []eventlat.Event{eventlat.VMStart, eventlat.VMStop}},
		{"migration", []eventlat.Event{eventlat.Migration}},
		{"pod-add", []eventlat.Event{eventlat.PodAdd}},
	} {
		b.Run("event="+ev.name, func(b *testing.B) {
			run := func() {
				for _, e := range ev.do {
					if _, err := c.Do(ctx, e); err != nil {
						b.Fatal(err)
					}
				}
			}
			run() // the first of its kind may set up what the next reuse
			before := liveheap.Bytes()
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.StopTimer()
			b.ReportMetric(float64(liveheap.Bytes()-before)/float64(b.N), "held-B/event")
		})
	}
}
