package state

import (
	"fmt"
	"testing"
)

// benchPort is a VM's port during a live migration: every managed field set.
func benchPort() *Port {
	addr := []string{"0a:58:0a:10:00:04 10.16.0.4 fd00:10:16::4"}
	return (&Port{Name: "vm-1.ns-1", UUID: "u", Switch: "ovn-default", Addresses: addr, PortSecurity: addr,
		Owner: "VirtualMachine/ns-1/vm-1", Network: DefaultNetwork, RequestedChassis: "node-1,node-2"}).
		SetRare(&Rare{ActivationStrategy: "rarp"})
}

// BenchmarkPortSum is the fingerprint every indexed port costs, once per
// build of desired and once per observed row.
func BenchmarkPortSum(b *testing.B) {
	p := benchPort()
	b.ReportAllocs()
	for range b.N {
		p.Sum()
	}
}

// BenchmarkPortEqual compares two equal ports, the case that reads every field.
func BenchmarkPortEqual(b *testing.B) {
	p, q := benchPort(), benchPort()
	b.ReportAllocs()
	for range b.N {
		if !p.Equal(q) {
			b.Fatal("Equal(equal ports) = false")
		}
	}
}

// BenchmarkOwnedPorts counts the ports of ours among 100k, as every pass
// does of the NB's, by the map and by the Index.
func BenchmarkOwnedPorts(b *testing.B) {
	s := New(100_000)
	for i := range 100_000 {
		p := *benchPort()
		p.Name = fmt.Sprint("vm-", i, ".ns-1")
		s.Ports.Set(p.Name, &p)
	}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s.OwnedPorts()
		}
	})
	s.Index = IndexPorts(s.Ports)
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s.OwnedPorts()
		}
	})
}

// BenchmarkSnapshotCopy is what a snapshot of the NB copies when one port
// changed (observed.NB.StateVersion): its Ports map, and its Index
// patched.
func BenchmarkSnapshotCopy(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		s := New(n)
		for i := range n {
			p := *benchPort()
			p.Name = fmt.Sprint("vm-", i, ".ns-1")
			s.Ports.Set(p.Name, &p)
		}
		s.Index = IndexPorts(s.Ports)
		old := s.Index.Entries()[n/2]
		q := *old.Port
		q.RequestedChassis = "node-3"
		b.Run(fmt.Sprintf("map/ports=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				c := s.Ports.Clone()
				c.Set(q.Name, &q)
			}
		})
		b.Run(fmt.Sprintf("index/ports=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				s.Index.Patch([]Entry{old}, []Entry{EntryOf(&q)})
			}
		})
	}
}
