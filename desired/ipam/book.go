package ipam

import (
	"github.com/ovn-sync/ovn-sync/desired/addr"

	"iter"
	"maps"
	"net/netip"
	"slices"

	"github.com/ovn-sync/ovn-sync/state"
)

// Book is the address book: by address, the ports that hold it, each on
// its switch. desired's engine keeps one for the ports of its last result
// and updates it as it splices each result in, so a Build of a few owners
// costs those owners, not the cluster.
type Book struct {
	by map[addr.Key][]Holder
	// dups are the addresses two ports hold on one switch.
	dups map[addr.Key]bool
	// windows mark, per switch and component, the addresses held at the
	// low end of its subnet, where fresh addresses are handed out: made on
	// the first need (Window) and kept up to date from then on.
	windows map[windowKey]*Window
}

type windowKey struct {
	sw   string
	comp int
}

// Holder is a port holding an address on its switch.
type Holder struct{ Switch, Name string }

// NewBook returns the book of ports.
func NewBook(ports state.Ports) *Book {
	x := &Book{by: make(map[addr.Key][]Holder, 2*ports.Len()), dups: map[addr.Key]bool{}}
	for _, p := range ports.All() {
		x.Add(p)
	}
	return x
}

// Add records the addresses p holds on its switch.
func (x *Book) Add(p *state.Port) {
	addr.EachHeld(p, func(k addr.Key) {
		hs := x.by[k]
		for _, h := range hs {
			if h.Switch == p.Switch {
				x.dups[k] = true
			}
		}
		x.by[k] = append(hs, Holder{p.Switch, p.Name})
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil {
			w.Set(k)
		}
	})
}

// Remove forgets the addresses p holds on its switch.
func (x *Book) Remove(p *state.Port) {
	addr.EachHeld(p, func(k addr.Key) {
		hs := x.by[k]
		i := slices.Index(hs, Holder{p.Switch, p.Name})
		if i < 0 {
			return
		}
		hs = slices.Delete(hs, i, i+1)
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil &&
			!slices.ContainsFunc(hs, func(h Holder) bool { return h.Switch == p.Switch }) {
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
					dup = dup || hs[i].Switch == hs[j].Switch
				}
			}
			if !dup {
				delete(x.dups, k)
			}
		}
	})
}

// Holders returns the ports that hold the address k names, on any switch.
// The slice is the book's: the caller must not change it.
func (x *Book) Holders(k addr.Key) []Holder { return x.by[k] }

// Len returns the number of addresses held.
func (x *Book) Len() int { return len(x.by) }

// Dups yields the addresses two ports hold on one switch.
func (x *Book) Dups() iter.Seq[addr.Key] { return maps.Keys(x.dups) }

// Window returns the window of switch sw for comp (an IP family) over
// subnet p, made from the book on the first call for sw and comp.
func (x *Book) Window(sw string, p netip.Prefix, comp int) *Window {
	wk := windowKey{sw, comp}
	if w, ok := x.windows[wk]; ok {
		return w
	}
	if x.windows == nil {
		x.windows = map[windowKey]*Window{}
	}
	w := NewWindow(p, comp, len(x.by))
	for k, hs := range x.by {
		if int(k.Comp) == comp && slices.ContainsFunc(hs, func(h Holder) bool { return h.Switch == sw }) {
			w.Set(k)
		}
	}
	x.windows[wk] = w
	return w
}

// NBBook is the book of the NB's rows of ours that the engine keeps between
// passes, and the index of the rows it was last brought up to (Sync). A
// Build of some owners reads it for those rows and lists the rest, as a
// Build of every owner lists every row (List, Booked).
type NBBook struct {
	Book
	idx state.Index
}

// NewNBBook returns a book of no rows.
func NewNBBook() *NBBook {
	return &NBBook{Book: *NewBook(state.NewPorts(0)), idx: state.IndexOf(nil)}
}

// Sync brings the book up to have: only the index shards that differ from
// the last Sync are read (state.Index.SameShard), so a pass after a few
// rows changed costs those rows. It calls list with every row the book
// does not hold, in the shards it reads: a row that is not ours or has
// dynamic_addresses. A shard with such a row is always read.
func (x *NBBook) Sync(have state.State, list func(*state.Port)) {
	now := have.PortIndex()
	eachChange(now, x.idx, func(cur, was *state.Entry) {
		if was != nil && booked(was) {
			x.Remove(was.Port)
		}
		switch {
		case cur == nil:
		case booked(cur):
			x.Add(cur.Port)
		default:
			list(cur.Port)
		}
	})
	x.idx = now
}

// Changes calls f, as Sync would, with each row of have that differs from
// the rows the book was last brought up to, and each row have lacks (cur
// nil), without bringing the book up to have.
func (x *NBBook) Changes(have state.State, f func(cur, was *state.Entry)) {
	eachChange(have.PortIndex(), x.idx, f)
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
