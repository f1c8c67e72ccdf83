package diff

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/ovn-sync/ovn-sync/state"
)

// benchState returns n owned ports on one switch, plus n/100 foreign ones
// when it stands for the observed NB (withUUIDs). It builds everything
// afresh, so that want and have share no strings, as desired and observed
// states do not.
func benchState(n int, withUUIDs bool) state.State {
	s := state.New(n + n/100)
	sw := &state.Switch{Name: "ovn-default", Owner: "ovn-sync", Network: state.DefaultNetwork, Subnet: "10.0.0.0/8"}
	if withUUIDs {
		sw.UUID = "00000000-0000-0000-0000-000000000001"
	}
	s.Switches[sw.Name] = sw
	for i := range n {
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		addr := fmt.Sprintf("0a:58:0a:%02x:%02x:%02x %s", i>>16&255, i>>8&255, i&255, ip)
		p := &state.Port{
			Name:             "pod-" + strconv.Itoa(i) + ".ns-" + strconv.Itoa(i%97),
			Switch:           sw.Name,
			Addresses:        []string{addr},
			PortSecurity:     []string{addr},
			Owner:            "Pod/ns-" + strconv.Itoa(i%97) + "/pod-" + strconv.Itoa(i),
			Network:          state.DefaultNetwork,
			RequestedChassis: "node-" + strconv.Itoa(i%50),
		}
		if withUUIDs {
			p.UUID = fmt.Sprintf("%08x-0000-0000-0000-%012x", i, i)
		}
		s.Ports[p.Name] = p
	}
	for i := range n / 100 {
		p := &state.Port{Name: "foreign-" + strconv.Itoa(i), Addresses: []string{"router"}}
		if withUUIDs {
			s.Ports[p.Name] = p
		}
	}
	return s
}

// churn changes 1% of want's ports: a third updated, a third deleted, and a
// third replaced by new ports.
func churn(want state.State, n int) {
	i := 0
	for name, p := range want.Ports {
		if i >= n/100 {
			break
		}
		switch i % 3 {
		case 0:
			q := *p
			q.RequestedChassis = "node-x,node-y"
			q.ActivationStrategy = "rarp"
			want.Ports[name] = &q
		case 1:
			delete(want.Ports, name)
		case 2:
			delete(want.Ports, name)
			q := *p
			q.Name = "new-" + name
			want.Ports[q.Name] = &q
		}
		i++
	}
}

func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		if n == 1_000_000 && testing.Short() {
			continue
		}
		have := benchState(n, true)
		for _, mode := range []string{"noop", "churn", "create1"} {
			want := benchState(n, false)
			switch mode {
			case "churn":
				churn(want, n)
			case "create1":
				// One new pod: the usual event-driven pass.
				p := *want.Ports["pod-0.ns-0"]
				p.Name = "new-pod.ns-0"
				want.Ports[p.Name] = &p
			}
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				b.ReportAllocs()
				var p Plan
				for b.Loop() {
					p = Compute(want, have, Policy{})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/port")
				if mode == "noop" && !p.Empty() {
					b.Fatalf("Compute(x, x) = %d changes, want none", len(p.Changes))
				}
			})
		}
	}
}
