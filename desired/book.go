package desired

import (
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// nbBook is the address book the engine keeps between passes: who holds
// what among the NB's rows of ours (addr.Book), and the index of the rows
// it was last brought up to date with. A Build of some owners reads the
// book for those rows, and lists the rest (ports that are not ours, and
// ours with dynamic_addresses), as a Build of every owner lists every
// row: either way, what holds an address is an NB row or a port this pass
// gives it.
type nbBook struct {
	book *addr.Book
	idx  state.Index
}

func newNBBook() *nbBook {
	return &nbBook{book: addr.NewBook(state.NewPorts(0)), idx: state.IndexOf(nil)}
}

// sync brings the book up to have: only the index shards that differ from
// the last sync are read (state.Index.SameShard), so a pass after a few
// ports changed costs those ports. It calls list with every row the book
// does not hold, in the shards it reads: a row that is not ours or has
// dynamic_addresses. A shard with such a row is always read.
func (bk *nbBook) sync(have state.State, list func(*state.Port)) {
	now := have.PortIndex()
	eachChange(now, bk.idx, func(cur, was *state.Entry) {
		if was != nil && booked(was) {
			bk.book.Remove(was.Port)
		}
		switch {
		case cur == nil:
		case booked(cur):
			bk.book.Add(cur.Port)
		default:
			list(cur.Port)
		}
	})
	bk.idx = now
}

// booked reports whether the book holds e's row: one of ours, with static
// addresses alone (Sum does not cover dynamic_addresses).
func booked(e *state.Entry) bool { return e.Owned && !e.Dynamic }

// eachChange walks two indexes side by side (both sorted by name hash),
// skipping the shards that hold the same rows of ours alone, and calls f
// with each entry of now that is not an entry of was the book holds, with
// the entry of was of its name (nil when none), and with each entry of
// was that now lacks (cur nil).
func eachChange(now, was state.Index, f func(cur, was *state.Entry)) {
	for sh := range state.NumShards {
		if same, plain := now.SameShard(was, sh); same && plain {
			continue
		}
		eachChangeIn(now.Shard(sh), was.Shard(sh), f)
	}
}

// eachChangeIn is eachChange over one shard of each index.
func eachChangeIn(now, was state.Entries, f func(cur, was *state.Entry)) {
	i, j := 0, 0
	for i < len(now) || j < len(was) {
		switch {
		case j == len(was) || i < len(now) && now[i].NameHash < was[j].NameHash:
			f(&now[i], nil)
			i++
		case i == len(now) || was[j].NameHash < now[i].NameHash:
			f(nil, &was[j])
			j++
		default:
			// A run of equal hashes: one name, or names that collide.
			h := now[i].NameHash
			ie, je := i, j
			for ie < len(now) && now[ie].NameHash == h {
				ie++
			}
			for je < len(was) && was[je].NameHash == h {
				je++
			}
			eachChangeRun(now[i:ie], was[j:je], f)
			i, j = ie, je
		}
	}
}

// eachChangeRun is eachChange over entries of one name hash, matched by
// name (an equal Sum is an equal name: Sum covers it).
func eachChangeRun(now, was state.Entries, f func(cur, was *state.Entry)) {
	same := func(a, b *state.Entry) bool { return a.Sum == b.Sum || a.Port.Name == b.Port.Name }
	for x := range now {
		e := &now[x]
		var w *state.Entry
		for y := range was {
			if same(e, &was[y]) {
				w = &was[y]
				break
			}
		}
		if w == nil || w.Sum != e.Sum || !booked(e) || !booked(w) {
			f(e, w)
		}
	}
	for y := range was {
		if !slices.ContainsFunc(now, func(e state.Entry) bool { return same(&e, &was[y]) }) {
			f(nil, &was[y])
		}
	}
}

// resolve returns the holder ID of the NB row called name, which the book
// holds.
func (m *ipam) resolve(name string) holderID {
	if id, ok := m.resolved[name]; ok {
		return id
	}
	id := holderID(len(m.ports))
	m.ports = append(m.ports, m.b.have.Ports.Get(name))
	m.resolved[name] = id
	return id
}

// booked returns the book's holders of k on switch sw (every switch when
// sw is 0), in name order.
func (m *ipam) booked(k addr.Key, sw uint32) []held {
	hs := m.book.Holders(k)
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
