package desired

import (
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// heldIndex is the address book: by address, the ports of the last result
// that hold it. Incremental keeps it up to date as it splices each result
// in, so a Build of a few owners costs those owners and the NB rows that
// differ from the last result, not the cluster. A Build of every owner
// starts from an empty book.
type heldIndex struct {
	by map[addr.Key][]heldBy
	// dups are the addresses two ports hold on one switch.
	dups map[addr.Key]bool
	// windows mark, per switch and family, the addresses held at the low
	// end of its subnet, where fresh addresses are handed out: made on the
	// first need (windowOf) and kept up to date from then on.
	windows map[windowKey]*addr.Window
}

type windowKey struct {
	sw   string
	comp int
}

// heldBy is a port holding an address on its switch.
type heldBy struct{ sw, name string }

func newHeldIndex(ports state.Ports) *heldIndex {
	x := &heldIndex{by: make(map[addr.Key][]heldBy, 2*ports.Len()), dups: map[addr.Key]bool{}}
	for _, p := range ports.All() {
		x.add(p)
	}
	return x
}

func (x *heldIndex) add(p *state.Port) {
	eachHeld(p, 0, func(hk heldKey) {
		k := hk.Key
		hs := x.by[k]
		for _, h := range hs {
			if h.sw == p.Switch {
				x.dups[k] = true
			}
		}
		x.by[k] = append(hs, heldBy{p.Switch, p.Name})
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil {
			w.Set(k)
		}
	})
}

// windowOf returns the window of n's switch for comp (an IP family), made
// from the index on the first call.
func (x *heldIndex) windowOf(n *network, comp int) *addr.Window {
	wk := windowKey{n.sw, comp}
	if w, ok := x.windows[wk]; ok {
		return w
	}
	if x.windows == nil {
		x.windows = map[windowKey]*addr.Window{}
	}
	w := newWindow(n, comp, len(x.by))
	for k, hs := range x.by {
		if int(k.Comp) == comp && slices.ContainsFunc(hs, func(h heldBy) bool { return h.sw == n.sw }) {
			w.Set(k)
		}
	}
	x.windows[wk] = w
	return w
}

func (x *heldIndex) remove(p *state.Port) {
	eachHeld(p, 0, func(hk heldKey) {
		k := hk.Key
		hs := x.by[k]
		i := slices.Index(hs, heldBy{p.Switch, p.Name})
		if i < 0 {
			return
		}
		hs = slices.Delete(hs, i, i+1)
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil &&
			!slices.ContainsFunc(hs, func(h heldBy) bool { return h.sw == p.Switch }) {
			w.Clear(k)
		}
		if len(hs) == 0 {
			delete(x.by, k)
			delete(x.dups, k)
			return
		}
		x.by[k] = hs
		if x.dups[k] {
			dup := false
			for i := range hs {
				for j := range i {
					dup = dup || hs[i].sw == hs[j].sw
				}
			}
			if !dup {
				delete(x.dups, k)
			}
		}
	})
}

// resolve returns the holder ID of the book's port called name: the NB's
// row when it is the same, else the last result's.
func (m *ipam) resolve(name string) holderID {
	if id, ok := m.resolved[name]; ok {
		return id
	}
	p := m.b.have.Ports.Get(name)
	if p == nil || m.differ[name] {
		p = m.b.scope.prior.Ports.Get(name)
	}
	id := holderID(len(m.ports))
	m.ports = append(m.ports, p)
	m.resolved[name] = id
	return id
}

// indexed returns the book's holders of k on switch sw (every switch when
// sw is 0), in name order. A claim reads them all: the result keeps the
// port of an owner not rebuilt as the last result has it, whatever the NB
// shows until that result is applied, and a rebuilt owner's spec holds on
// to what the last result gave it (resolve), not to the NB's row.
func (m *ipam) indexed(k addr.Key, sw uint32) []held {
	hs := m.idx.by[k]
	if len(hs) == 0 {
		return nil
	}
	var out []held
	for _, h := range hs {
		id := m.b.switchID(h.sw)
		if sw == 0 || id == sw {
			out = append(out, held{heldKey{k, id}, m.resolve(h.name)})
		}
	}
	slices.SortFunc(out, func(x, y held) int { return strings.Compare(m.ports[x.id].Name, m.ports[y.id].Name) })
	return out
}

// listed reports whether the book's holder e stands for a port of an owner
// not rebuilt whose NB row differs from it and is listed: when addresses
// held twice are looked for, that row is the holder. (The book still
// counts the address as held: isHeld.)
func (m *ipam) listed(e held) bool {
	name := m.ports[e.id].Name
	if !m.differ[name] || m.b.have.Ports.Get(name) == nil {
		return false
	}
	return !m.b.scope.rebuilds(m.b.scope.prior.Ports.Get(name).Owner)
}

// oncePerPort keeps the first holder of each port name and switch in g: a
// rebuilt owner's port is listed by its NB row and by the last result's
// port when the two differ, and one port does not hold an address twice.
func (m *ipam) oncePerPort(g []held) []held {
	type port struct {
		name string
		sw   uint32
	}
	seen := make(map[port]bool, len(g))
	out := g[:0]
	for _, e := range g {
		k := port{m.ports[e.id].Name, e.k.sw}
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// eachDiffering walks two indexes side by side (both sorted by name hash)
// and calls nb with each entry of have that is not exactly, and ours, an
// entry of want, and missing with each entry of want that have lacks.
func eachDiffering(have, want state.Index, nb, missing func(*state.Entry)) {
	for sh := range state.NumShards {
		if same, plain := have.SameShard(want, sh); same && plain {
			continue // nothing differs, and nothing is listed however it is
		}
		eachDifferingIn(have.Shard(sh), want.Shard(sh), nb, missing)
	}
}

// eachDifferingIn is eachDiffering over one shard of each index.
func eachDifferingIn(have, want state.Entries, nb, missing func(*state.Entry)) {
	i, j := 0, 0
	for i < len(have) || j < len(want) {
		switch {
		case j == len(want) || i < len(have) && have[i].NameHash < want[j].NameHash:
			nb(&have[i])
			i++
		case i == len(have) || want[j].NameHash < have[i].NameHash:
			missing(&want[j])
			j++
		default:
			// A run of equal hashes (names that collide, or one name):
			// match its entries by name.
			h := have[i].NameHash
			ie, je := i, j
			for ie < len(have) && have[ie].NameHash == h {
				ie++
			}
			for je < len(want) && want[je].NameHash == h {
				je++
			}
			if ie-i == 1 && je-j == 1 {
				// One name (Sum covers the name too): the common case,
				// decided without reading either port.
				if e, w := &have[i], &want[j]; w.Sum != e.Sum || !e.Owned || e.Dynamic {
					nb(e)
				}
				i, j = ie, je
				continue
			}
			for x := i; x < ie; x++ {
				e := &have[x]
				same := false
				for y := j; y < je; y++ {
					if w := &want[y]; w.Port.Name == e.Port.Name {
						same = w.Sum == e.Sum && e.Owned && !e.Dynamic
						break
					}
				}
				if !same {
					nb(e)
				}
			}
			for y := j; y < je; y++ {
				found := false
				for x := i; x < ie; x++ {
					found = found || have[x].Port.Name == want[y].Port.Name
				}
				if !found {
					missing(&want[y])
				}
			}
			i, j = ie, je
		}
	}
}
