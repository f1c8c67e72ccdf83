package state

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestPortsLikeMaps: Ports behaves as a map would, each Clone as a copy
// of its own, and so after one took another's shards (State.ShareWith).
// Random Sets, Deletes, Clones and shares over a few Ports values (clones
// of clones, changed on both sides) are mirrored on plain maps; after
// every step every value holds exactly what its map holds.
func TestPortsLikeMaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ports := []Ports{NewPorts(0)}
		models := []map[string]*Port{{}}
		// Enough names that shards hold several, few enough to collide.
		name := rapid.Custom(func(t *rapid.T) string { return fmt.Sprint("p", rapid.IntRange(0, 600).Draw(t, "n")) })
		for step := range rapid.IntRange(1, 200).Draw(t, "steps") {
			i := rapid.IntRange(0, len(ports)-1).Draw(t, "which")
			switch rapid.IntRange(0, 11).Draw(t, "op") {
			case 0, 1:
				ports = append(ports, ports[i].Clone())
				models = append(models, maps.Clone(models[i]))
			case 10:
				// The same ports in maps of their own.
				ports = append(ports, PortsOf(models[i]))
				models = append(models, maps.Clone(models[i]))
			case 11:
				// i takes the shards of j that hold what its own do.
				j := rapid.IntRange(0, len(ports)-1).Draw(t, "with")
				if j != i {
					s := State{Ports: ports[i], Index: IndexPorts(ports[i])}
					s.ShareWith(State{Ports: ports[j], Index: IndexPorts(ports[j])})
					if !s.Index.Equal(IndexPorts(s.Ports)) {
						t.Fatalf("step %d: after ShareWith, the index is not the ports'", step)
					}
				}
			case 2, 3:
				n := name.Draw(t, "delete")
				ports[i].Delete(n)
				delete(models[i], n)
			default:
				n := name.Draw(t, "set")
				p := &Port{Name: n, Owner: fmt.Sprint("step", step)}
				ports[i].Set(n, p)
				models[i][n] = p
			}
			for j := range ports {
				if got := ports[j].Map(); !maps.Equal(got, models[j]) || ports[j].Len() != len(models[j]) {
					t.Fatalf("step %d: Ports %d holds %d ports (Len %d), its model %d: %v", step, j, len(got), ports[j].Len(), len(models[j]), got)
				}
				for n, p := range models[j] {
					if ports[j].Get(n) != p || ports[j].GetBytes([]byte(n)) != p {
						t.Fatalf("step %d: Ports %d: Get(%s) = %v, GetBytes %v, want %v", step, j, n, ports[j].Get(n), ports[j].GetBytes([]byte(n)), p)
					}
				}
			}
		}
	})
}

// TestPortsZero: the zero Ports reads as empty, and clones into one that
// can be changed.
func TestPortsZero(t *testing.T) {
	var z Ports
	if z.Len() != 0 || z.Get("a") != nil || z.GetBytes([]byte("a")) != nil || len(z.Map()) != 0 {
		t.Fatalf("zero Ports not empty")
	}
	z.Delete("a") // no effect, no panic
	c := z.Clone()
	c.Set("a", &Port{Name: "a"})
	if c.Len() != 1 || z.Len() != 0 {
		t.Fatalf("clone of the zero Ports: %d, zero %d", c.Len(), z.Len())
	}
}

// TestGetBytesAllocatesNothing: a name looked up from bytes is not copied.
func TestGetBytesAllocatesNothing(t *testing.T) {
	ps := NewPorts(1)
	name := "a-pod-name-longer-than-32-bytes.a-namespace"
	ps.Set(name, &Port{Name: name})
	buf := []byte(name)
	if n := testing.AllocsPerRun(100, func() {
		if ps.GetBytes(buf) == nil {
			t.Fatal("not found")
		}
	}); n != 0 {
		t.Errorf("GetBytes allocates %v times", n)
	}
}

// TestPortsCloneWhileRead: snapshots are cloned and changed while other
// goroutines read (and clone) them, as run mode does with the NB's
// snapshots. Run with -race.
func TestPortsCloneWhileRead(t *testing.T) {
	s := NewPorts(0)
	for i := range 1000 {
		n := fmt.Sprint("p", i)
		s.Set(n, &Port{Name: n})
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				snap := s
				n := 0
				for range snap.All() {
					n++
				}
				if n != 1000 || snap.Get("p7") == nil {
					t.Errorf("a reader saw %d ports", n)
				}
				snap.Clone()
			}
		}()
	}
	for i := range 200 {
		c := s.Clone()
		n := fmt.Sprint("p", i)
		c.Set(n, &Port{Name: n, Owner: "x"})
		c.Delete(fmt.Sprint("p", 999-i))
		if s.Get(n).Owner != "" || s.Get(fmt.Sprint("p", 999-i)) == nil {
			t.Fatalf("changing a clone changed the snapshot")
		}
	}
	wg.Wait()
}

// TestShareWith: a State takes the shards of ports and index of another
// that hold the same entries, and only those: the shard where the other
// holds one more port stays its own, and so do the shards of a port that
// is equal but not the same. Both then read as before, and a change to
// either after it is not seen by the other.
func TestShareWith(t *testing.T) {
	rows := NewPorts(0)
	for i := range 2000 {
		n := fmt.Sprintf("p%d.ns", i)
		rows.Set(n, &Port{Name: n, Owner: "Pod/ns/" + n, Addresses: []string{fmt.Sprint("0a:58:00:00:00:01 10.0.0.", i)}})
	}
	want := PortsOf(rows.Map()) // the same rows, in maps of its own
	copied := *rows.Get("p7.ns")
	want.Set("p7.ns", &copied) // equal, not the row
	rows.Set("extra", &Port{Name: "extra"})
	s := State{Ports: want, Index: IndexPorts(want)}
	o := State{Ports: rows, Index: IndexPorts(rows)}
	before := maps.Clone(want.Map())
	differ := map[int]bool{shardOf("p7.ns"): true, shardOf("extra"): true}
	nonEmpty := 0
	for i := range nShards {
		if len(want.m.shards[i].ports) > 0 {
			nonEmpty++
		}
	}
	if n := s.ShareWith(o); n != nonEmpty-len(differ) {
		t.Fatalf("ShareWith shared %d shards, want %d", n, nonEmpty-len(differ))
	}
	same := func(a, b map[string]*Port) bool { return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b) }
	for i := range nShards {
		shared := same(s.Ports.m.shards[i].ports, o.Ports.m.shards[i].ports)
		if len(want.m.shards[i].ports) > 0 && shared == differ[i] {
			t.Errorf("shard %d: shared %v", i, shared)
		}
		if idxShared := len(s.Index.Shard(i)) > 0 && &s.Index.Shard(i)[0] == &o.Index.Shard(i)[0]; idxShared != (shared && len(s.Index.Shard(i)) > 0) {
			t.Errorf("shard %d: ports shared %v, index %v", i, shared, idxShared)
		}
	}
	if !maps.Equal(s.Ports.Map(), before) || !s.Index.Equal(IndexPorts(s.Ports)) || !o.Index.Equal(IndexPorts(o.Ports)) {
		t.Fatal("ShareWith changed what a State holds")
	}
	s.Ports.Set("p1.ns", &Port{Name: "p1.ns"})
	o.Ports.Set("p2.ns", &Port{Name: "p2.ns"})
	o.Ports.Delete("p3.ns")
	if s.Ports.Get("p2.ns") != before["p2.ns"] || s.Ports.Get("p3.ns") == nil || o.Ports.Get("p1.ns") != before["p1.ns"] {
		t.Error("a change after ShareWith shows on the other side")
	}
}
