package observed

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkState is a no-op pass's read of the NB: 20k ports in a real
// ovsdb-server, nothing changing between calls.
func BenchmarkState(b *testing.B) {
	srv := nbtest.Start(b)
	ctx := context.Background()
	nb, err := Dial(ctx, Options{Endpoints: []string{srv.Addr()}, LeaderOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	want := desired.Build(bench.Cluster(20000), bench.Config(), state.New(0)).Want
	if _, err := apply.Apply(ctx, nb.Client(), diff.Compute(want, nb.State(), diff.Policy{}), apply.Options{}); err != nil {
		b.Fatal(err)
	}
	for nb.State().OwnedPorts() < len(want.Ports) {
		time.Sleep(10 * time.Millisecond)
	}
	b.ResetTimer()
	for range b.N {
		nb.State()
	}
}
