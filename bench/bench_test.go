package bench

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// sizes are the cluster sizes, in ports. go test -short runs the smallest
// only, which is how make test keeps the benchmarks from rotting.
var sizes = []int{1_000, 10_000, 100_000, 1_000_000}

func sizesFor(b *testing.B) []int {
	if testing.Short() {
		return sizes[:1]
	}
	return sizes
}

// steady is a generated cluster and its NB after a first pass.
type steady struct {
	in   desired.Inputs
	want state.State
	have state.State
}

var steadyCache = map[int]steady{}

func steadyState(b *testing.B, ports int) steady {
	b.Helper()
	if s, ok := steadyCache[ports]; ok {
		return s
	}
	in := Cluster(ports)
	r := desired.Build(in, Config(), state.New(0))
	want, problems := r.Want, r.Problems
	if len(problems) > 0 {
		b.Fatalf("generated cluster has problems, first: %s", problems[0])
	}
	s := steady{in: in, want: want, have: Observe(want)}
	// Keep only the current size: a 1M cluster is several GB.
	clear(steadyCache)
	steadyCache[ports] = s
	return s
}

// meter reports ns/port and B/port over the timed region between start and stop.
type meter struct {
	b     *testing.B
	alloc uint64
}

func startMeter(b *testing.B) *meter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportAllocs()
	b.ResetTimer()
	return &meter{b: b, alloc: ms.TotalAlloc}
}

func (m *meter) stop(ports int) {
	m.b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := float64(m.b.N) * float64(ports)
	m.b.ReportMetric(float64(m.b.Elapsed().Nanoseconds())/n, "ns/port")
	m.b.ReportMetric(float64(ms.TotalAlloc-m.alloc)/n, "B/port")
}

func BenchmarkCompute(b *testing.B) {
	for _, n := range sizesFor(b) {
		cases := []struct {
			name string
			have func(steady) state.State
		}{
			{"noop", func(s steady) state.State { return s.have }},
			{"churn1pct", func(s steady) state.State { return Churn(s.have) }},
			{"cold", func(steady) state.State { return state.New(0) }},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/ports=%d", c.name, n), func(b *testing.B) {
				s := steadyState(b, n)
				have := c.have(s)
				var plan diff.Plan
				m := startMeter(b)
				for range b.N {
					plan = diff.Compute(s.want, have, diff.Policy{})
				}
				m.stop(s.want.Ports.Len())
				if c.name == "noop" && !plan.Empty() {
					b.Fatalf("Compute(want, observe(want)) is not empty:\n%s", plan)
				}
			})
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range sizesFor(b) {
		b.Run(fmt.Sprintf("ports=%d", n), func(b *testing.B) {
			s := steadyState(b, n)
			owners := len(s.in.Pods) + len(s.in.VirtualMachines)
			m := startMeter(b)
			for range b.N {
				desired.Build(s.in, Config(), s.have)
			}
			m.stop(s.want.Ports.Len())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(owners), "ns/owner")
		})
	}
}
