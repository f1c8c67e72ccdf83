package state

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestPortsLikeMaps: Ports behaves as a map would, each Clone as a copy
// of its own. Random Sets, Deletes and Clones over a few Ports values
// (clones of clones, changed on both sides) are mirrored on plain maps;
// after every step every value holds exactly what its map holds.
func TestPortsLikeMaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ports := []Ports{NewPorts(0)}
		models := []map[string]*Port{{}}
		// Enough names that shards hold several, few enough to collide.
		name := rapid.Custom(func(t *rapid.T) string { return fmt.Sprint("p", rapid.IntRange(0, 600).Draw(t, "n")) })
		for step := range rapid.IntRange(1, 200).Draw(t, "steps") {
			i := rapid.IntRange(0, len(ports)-1).Draw(t, "which")
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1:
				ports = append(ports, ports[i].Clone())
				models = append(models, maps.Clone(models[i]))
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
