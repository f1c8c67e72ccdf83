package desired

import (
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// How a Build of some owners reads the address book (addr.Book, the
// engine's, of the last result's ports) beside the NB rows it lists.

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
	hs := m.idx.Holders(k)
	if len(hs) == 0 {
		return nil
	}
	var out []held
	for _, h := range hs {
		id := m.b.switchID(h.Switch)
		if sw == 0 || id == sw {
			out = append(out, held{heldKey{k, id}, m.resolve(h.Name)})
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
