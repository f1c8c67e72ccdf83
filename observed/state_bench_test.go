package observed

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkState is a no-op pass's read of the NB: 20k ports in a real
// ovsdb-server, nothing changing between calls.
func BenchmarkState(b *testing.B) {
	nb, _ := loadedNB(b, 20000)
	b.ResetTimer()
	for range b.N {
		nb.State()
	}
}

// BenchmarkStateVersionAfterChange is what a pass's read of the NB costs
// after one row changed: one port of ours changes its requested-chassis in
// a real ovsdb-server, then StateVersion is timed. "incremental" reads the
// rows the port view reported changed; "rebuild" reads every row, as
// every call did before StateVersion followed changes (conversions of
// unchanged rows reused).
func BenchmarkStateVersionAfterChange(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("ports=%d", n), func(b *testing.B) {
			nb, ctx := loadedNB(b, n)
			var port *state.Port
			for _, p := range nb.State().Ports.All() {
				if p.Owned() {
					port = p
					break
				}
			}
			// The hook runs after nb's own record of the port view's
			// change: once it has seen the change, nb has too.
			seen := make(chan struct{}, 1)
			nb.WatchPorts(func(_, cur *state.Port) {
				if cur != nil && cur.UUID == port.UUID {
					select {
					case seen <- struct{}{}:
					default:
					}
				}
			})
			// flips counts the changes over every run of the sub-benchmarks:
			// each sets another requested-chassis than the one before.
			flips := 0
			for _, mode := range []string{"incremental", "rebuild"} {
				b.Run(mode, func(b *testing.B) {
					b.ReportAllocs()
					for range b.N {
						b.StopTimer()
						flips++
						chassis := fmt.Sprint("bench-", flips%2)
						row := &nbdb.LogicalSwitchPort{UUID: port.UUID, Options: map[string]string{state.OptRequestedChassis: chassis}}
						ops, err := nb.Client().Where(row).Update(row, &row.Options)
						if err == nil {
							var res []ovsdb.OperationResult
							if res, err = nb.Transact(ctx, ops...); err == nil {
								_, err = ovsdb.CheckOperationResults(res, ops)
							}
						}
						if err != nil {
							b.Fatal(err)
						}
						<-seen
						if mode == "rebuild" {
							nb.changed.setAll()
						}
						b.StartTimer()
						s, _ := nb.StateVersion()
						if got := s.Ports.Get(port.Name).RequestedChassis; got != chassis {
							b.Fatalf("StateVersion() has requested-chassis %q, want %q", got, chassis)
						}
					}
				})
			}
		})
	}
}

// loadedNB is a client of a real ovsdb-server that holds the ports of a
// generated cluster of n owners, once its cache shows them all.
func loadedNB(b *testing.B, n int) (*NB, context.Context) {
	srv := nbtest.Start(b)
	ctx := context.Background()
	nb, err := Dial(ctx, Options{Endpoints: []string{srv.Addr()}, LeaderOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nb.Close)
	want := desired.Build(bench.Cluster(n), bench.Config(), state.New(0)).Want
	if _, err := apply.Apply(ctx, nb.Client(), diff.Compute(want, nb.State(), diff.Policy{}), apply.Options{}); err != nil {
		b.Fatal(err)
	}
	for nb.State().OwnedPorts() < want.Ports.Len() {
		time.Sleep(10 * time.Millisecond)
	}
	return nb, ctx
}

// BenchmarkStateKeeps measures what the NB keeps beside the port view's
// rows once it has read every row: the last snapshot's Ports and Index,
// and the conversions it reuses by row UUID, in live heap a port. The
// time is that of a snapshot that reads every row (a reconnect's).
//
// A million ports (bench.Cluster's, at most 25,000 a switch) take minutes
// to write into ovsdb-server: name a size to leave it out
// (-bench 'StateKeeps/ports=100000$').
//
//	go test -run '^$' -bench StateKeeps -benchtime 3x ./observed
func BenchmarkStateKeeps(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("ports=%d", n), func(b *testing.B) {
			nb, _ := loadedNB(b, n)
			b.ResetTimer()
			for range b.N {
				nb.changed.setAll()
				ports := nb.State().Ports.Len()
				b.StopTimer()
				with := liveheap.Bytes()
				nb.mu.Lock()
				nb.last, nb.ports, nb.refs = state.State{}, map[string]*state.Port{}, map[string]refSource{}
				nb.mu.Unlock()
				b.ReportMetric(float64(with-liveheap.Bytes())/float64(ports), "kept-B/port")
				b.StartTimer()
			}
		})
	}
}
