package main

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// BenchmarkRunFullPass is run mode's periodic full pass (a resync) at
// 100k ports, in process: the reconcile loop over a real ovsdb-server, its
// informers fed the harness's generated cluster once (as runMemory sets
// them up: nothing else holds the objects), a full pass every
// fullPassResync. The first full pass after the cold start is not
// measured: it still finds what the cold start left (its plan of every
// create, a want of ports of its own). Each of the b.N passes after it is
// watched through liveheap.Peak (the collector at GOGC 10, the live heap
// read every 100µs): peak-MB is the most it reached while a pass ran, least-MB the live heap
// once a pass had ended (after a collection), the least of those; their
// ratio is what a full pass adds above what run mode keeps, the figure
// behind run mode's peak RSS over its steady RSS. The time per op is a
// resync period, and says nothing.
//
//	go test -run '^$' -bench RunFullPass -benchtime 2x ./bench/cmd/ovn-sync-bench/
func BenchmarkRunFullPass(b *testing.B) {
	const size = 100000
	nbtest.Require(b)
	srv, err := nbtest.Serve()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cfg := bench.Config()
	opts := func() looptest.Options {
		in := bench.Cluster(size)
		return looptest.Options{NBAddr: srv.Addr(), Config: &cfg, Passes: "incremental", Resync: fullPassResync,
			Resources: clusterResources(in), BeforeStart: listOnce(in)}
	}()
	loop, err := looptest.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer loop.Close()
	if _, err := waitSettled(context.Background(), loop, size); err != nil {
		b.Fatal(err)
	}
	// nextFullPass returns once the loop has ended another full pass.
	nextFullPass := func() {
		fulls := func() float64 { return loop.Metric("ovn_sync_passes_total", "kind", "full") }
		for n := fulls(); fulls() == n; {
			time.Sleep(50 * time.Millisecond)
		}
	}
	nextFullPass() // the first after the cold start
	var peak, least int64 = 0, 1 << 62
	b.ResetTimer()
	for range b.N {
		under := liveheap.Bytes()
		least = min(least, under)
		peak = max(peak, under+liveheap.Peak(nextFullPass))
	}
	b.StopTimer()
	least = min(least, liveheap.Bytes())
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
	b.ReportMetric(float64(least)/(1<<20), "least-MB")
	b.ReportMetric(float64(peak)/float64(least), "peak/least")
	b.Logf("%d full passes at %d ports: live heap at most %d MB, %d MB between passes", b.N, size, peak>>20, least>>20)
}

// fullPassResync is BenchmarkRunFullPass's resync period: long enough for
// a full pass at 100k ports and the collections after it.
const fullPassResync = 15 * time.Second
