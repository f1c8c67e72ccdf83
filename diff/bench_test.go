package diff_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkComputeOnePort is the diff of an incremental pass for one new
// pod: Compute walks every port, ComputePorts looks at the one named (and
// at max(64, n/512) more: about the most a pass names before it walks them
// all, as a name looked up costs some hundred times a port walked).
func BenchmarkComputeOnePort(b *testing.B) {
	sizes := []int{1000, 10000, 100000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		r := desired.Build(bench.Cluster(n), bench.Config(), state.New(0))
		have := bench.Observe(r.Want)
		want := r.Want.Clone()
		var some *state.Port
		for _, p := range want.Ports.All() {
			some = p
			break
		}
		p := *some
		p.Name, p.Owner = "new.ns", "Pod/ns/new"
		want.Ports.Set(p.Name, &p)
		want.Index = state.IndexPorts(want.Ports)
		ref := diff.Compute(want, have, diff.Policy{})
		if c := ref.Counts(); c.Add != 1 || len(ref.Changes) != 1 {
			b.Fatalf("Compute = %s, want one create", ref)
		}
		// The new port, and as many unchanged ports again as a pass names
		// at most (reconcile's scope): what a name costs.
		many := []string{p.Name}
		for name := range want.Ports.All() {
			if len(many) > max(64, n/512) {
				break
			}
			many = append(many, name)
		}
		for _, c := range []struct {
			name  string
			ports []string
		}{{"full", nil}, {"scoped", []string{p.Name}}, {fmt.Sprintf("scoped-%d", len(many)), many}} {
			b.Run(fmt.Sprintf("%s/ports=%d", c.name, n), func(b *testing.B) {
				var plan diff.Plan
				b.ReportAllocs()
				for range b.N {
					if c.ports != nil {
						plan = diff.ComputePorts(want, have, diff.Policy{}, c.ports)
					} else {
						plan = diff.Compute(want, have, diff.Policy{})
					}
				}
				b.StopTimer()
				if !reflect.DeepEqual(plan, ref) {
					b.Fatalf("plan = %s, want %s", plan, ref)
				}
			})
		}
	}
}
