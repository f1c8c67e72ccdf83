package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIndexSorted(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 10_000} {
		ports := map[string]*Port{}
		for range n {
			name := fmt.Sprintf("p%d", rand.IntN(1<<30))
			ports[name] = &Port{Name: name, Owner: "Pod/x/" + name}
		}
		idx := IndexPorts(PortsOf(ports)).Entries()
		if len(idx) != len(ports) {
			t.Fatalf("IndexPorts(%d ports) has %d entries", len(ports), len(idx))
		}
		if !slices.IsSortedFunc(idx, func(a, b Entry) int {
			if a.NameHash < b.NameHash {
				return -1
			}
			if a.NameHash > b.NameHash {
				return 1
			}
			return 0
		}) {
			t.Fatalf("IndexPorts(%d ports) is not sorted by NameHash", n)
		}
		seen := map[string]bool{}
		for _, e := range idx {
			if e.NameHash != NameHash(e.Port.Name) || e.Sum != e.Port.Sum() || e.Owned != e.Port.Owned() || seen[e.Port.Name] {
				t.Fatalf("entry %+v does not describe its port, or repeats it", e)
			}
			seen[e.Port.Name] = true
		}
	}
}

// Entry finds a port's entry by the port itself: not an equal port's,
// not one of another index.
func TestIndexEntry(t *testing.T) {
	ports := map[string]*Port{}
	for i := range 2000 {
		name := fmt.Sprintf("pod-%d.shop", i)
		ports[name] = &Port{Name: name, Owner: "Pod/shop/" + name, Addresses: []string{fmt.Sprintf("0a:58:0a:10:%02x:%02x 10.16.%d.%d", i>>8, i&255, i>>8, i&255)}}
	}
	idx := IndexPorts(PortsOf(ports))
	for _, p := range ports {
		e, ok := idx.Entry(p)
		if !ok || e != EntryOf(p) {
			t.Fatalf("Entry(%s) = %+v, %v; want its entry", p.Name, e, ok)
		}
		if c := *p; func() bool { _, ok := idx.Entry(&c); return ok }() {
			t.Fatalf("Entry found a copy of %s", p.Name)
		}
	}
	if _, ok := idx.Entry(&Port{Name: "other"}); ok {
		t.Error("Entry found a port not in the index")
	}
	if _, ok := (Index{}).Entry(&Port{Name: "other"}); ok {
		t.Error("the zero Index has an entry")
	}
}

func TestSumSeesEveryField(t *testing.T) {
	base := Port{Name: "a", Switch: "s", Owner: "o", Network: "n", RequestedChassis: "r",
		Addresses: []string{"m 1"}, PortSecurity: []string{"m 1"}}
	base.SetRare(&Rare{ActivationStrategy: "rarp", DHCPv4: "s/ipv4"})
	edits := map[string]func(*Port){
		"Name":               func(p *Port) { p.Name = "b" },
		"Switch":             func(p *Port) { p.Switch = "t" },
		"Owner":              func(p *Port) { p.Owner = "" },
		"Network":            func(p *Port) { p.Network = "m" },
		"RequestedChassis":   func(p *Port) { p.RequestedChassis = "r,s" },
		"ActivationStrategy": func(p *Port) { p.EditRare(func(r *Rare) { r.ActivationStrategy = "" }) },
		"DHCPv4":             func(p *Port) { p.EditRare(func(r *Rare) { r.DHCPv4 = "t/ipv4" }) },
		"Addresses":          func(p *Port) { p.Addresses = []string{"m 2"} },
		"PortSecurity":       func(p *Port) { p.PortSecurity = nil },
		"boundary":           func(p *Port) { p.Addresses, p.PortSecurity = nil, []string{"m 1", "m 1"} },
	}
	for field, edit := range edits {
		q := base
		edit(&q)
		if q.Sum() == base.Sum() {
			t.Errorf("Sum() ignores a change of %s", field)
		}
	}
	q := base
	q.UUID = "u"
	q.EditRare(func(r *Rare) { r.DynamicAddresses = "d" })
	if q.Sum() != base.Sum() {
		t.Errorf("Sum() changed with UUID or DynamicAddresses, which Equal ignores")
	}
}

// TestIndexPatch: Patch leaves its index as it was and returns one sorted
// as Sort sorts, holding exactly the entries kept and inserted, for
// entries that change (deleted and inserted under one name), go and come.
func TestIndexPatch(t *testing.T) {
	sorted := func(idx Entries) bool {
		return slices.IsSortedFunc(idx, func(a, b Entry) int {
			if a.NameHash < b.NameHash {
				return -1
			}
			if a.NameHash > b.NameHash {
				return 1
			}
			return 0
		})
	}
	for _, n := range []int{0, 1, 255, 256, 5000} {
		for _, changes := range []int{0, 1, 3, 100} {
			ports := map[string]*Port{}
			for i := range n {
				name := fmt.Sprintf("p%d", i)
				ports[name] = &Port{Name: name}
			}
			ix := IndexPorts(PortsOf(ports))
			idx := ix.Entries()
			before := slices.Clone(idx)
			want := map[*Port]bool{}
			for _, e := range idx {
				want[e.Port] = true
			}
			var del, ins []Entry
			for _, i := range rand.Perm(n)[:min(n, changes)] {
				del = append(del, idx[i])
				delete(want, idx[i].Port)
				if rand.IntN(2) == 0 { // changed rather than gone
					p := &Port{Name: idx[i].Port.Name, Owner: "o"}
					ins = append(ins, EntryOf(p))
					want[p] = true
				}
			}
			for i := range changes {
				p := &Port{Name: fmt.Sprintf("new%d", i)}
				ins = append(ins, EntryOf(p))
				want[p] = true
			}
			got := ix.Patch(del, ins).Entries()
			if !slices.Equal(ix.Entries(), before) {
				t.Fatalf("Patch changed the index it was called on (%d entries, %d changes)", n, changes)
			}
			if !sorted(got) || len(got) != len(want) {
				t.Fatalf("Patch(%d entries, %d changes) = %d entries, sorted %v; want %d sorted", n, changes, len(got), sorted(got), len(want))
			}
			for _, e := range got {
				if !want[e.Port] {
					t.Fatalf("Patch(%d entries, %d changes) holds %+v, deleted or repeated", n, changes, e)
				}
				delete(want, e.Port)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Patch deleting an entry not in the index did not panic")
		}
	}()
	IndexPorts(PortsOf(map[string]*Port{"a": {Name: "a"}})).Patch([]Entry{EntryOf(&Port{Name: "a"})}, nil)
}

// TestIndexSameShard: a patched index's shards compare the same as those
// of an index built anew over the same ports, and differ from the
// original's exactly where a port changed; plain says whether every port
// of the shard is ours and not dynamic; both count the ports that are ours
// alike.
func TestIndexSameShard(t *testing.T) {
	ports := map[string]*Port{}
	for i := range 3000 {
		name := fmt.Sprintf("p%d", i)
		ports[name] = &Port{Name: name, Owner: "Pod/x/" + name}
	}
	ix := IndexPorts(PortsOf(ports))
	touched := map[int]bool{}
	var del, ins []Entry
	for i, e := range ix.Entries() {
		sh := int(e.NameHash >> (64 - shardBits))
		switch i % 300 {
		case 0: // readdressed
			p := *e.Port
			p.Addresses = []string{"0a:58:0a:10:00:02 10.16.0.2"}
			del, ins = append(del, e), append(ins, EntryOf(&p))
			ports[p.Name] = &p
		case 1: // gone
			del = append(del, e)
			delete(ports, e.Port.Name)
		case 2: // rewritten as it was: the same port
			p := *e.Port
			del, ins = append(del, e), append(ins, EntryOf(&p))
			ports[p.Name] = &p
			continue
		case 3: // not ours any more
			p := *e.Port
			p.Owner = ""
			del, ins = append(del, e), append(ins, EntryOf(&p))
			ports[p.Name] = &p
		default:
			continue
		}
		touched[sh] = true
	}
	patched, built := ix.Patch(del, ins), IndexPorts(PortsOf(ports))
	for sh := range NumShards {
		same, plain := patched.SameShard(built, sh)
		wantPlain := !slices.ContainsFunc(built.Shard(sh), func(e Entry) bool { return !e.Owned || e.Dynamic })
		if !same || plain != wantPlain {
			t.Errorf("shard %d: patched and built anew: same %v, plain %v; want true, %v", sh, same, plain, wantPlain)
		}
		if same, _ := ix.SameShard(patched, sh); same == touched[sh] {
			t.Errorf("shard %d: same as before the patch %v, but a port in it changed: %v", sh, same, touched[sh])
		}
	}
	owned := 0
	for _, p := range ports {
		if p.Owned() {
			owned++
		}
	}
	if patched.Owned() != owned || built.Owned() != owned {
		t.Errorf("Owned() = %d patched, %d built anew; %d ports are owned", patched.Owned(), built.Owned(), owned)
	}
	if same, plain := (Index{}).SameShard(Index{}, 0); !same || !plain {
		t.Errorf("two zero Indexes: same %v, plain %v", same, plain)
	}
}

// TestOwnedPorts: OwnedPorts counts the same with and without an Index.
func TestOwnedPorts(t *testing.T) {
	s := New(0)
	for i := range 1000 {
		p := &Port{Name: fmt.Sprint("p", i)}
		if rand.IntN(3) == 0 {
			p.Owner = "Pod/ns/" + p.Name
		}
		s.Ports.Set(p.Name, p)
	}
	without := s.OwnedPorts()
	s.Index = IndexPorts(s.Ports)
	if with := s.OwnedPorts(); with != without {
		t.Errorf("OwnedPorts() = %d with an Index, %d without", with, without)
	}
}
