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
// its switch. desired's engine keeps one for the NB's rows of ours (NBBook)
// and brings it up to each snapshot, so a Build of a few owners costs those
// owners, not the cluster.
//
// It holds the ports themselves, which the snapshot it was brought up to
// holds anyway: an address costs one map entry, and the second holder of
// an address (a duplicate, or the same address on another switch) an entry
// in more.
type Book struct {
	// by holds an address's first holder, more the others.
	by   firsts
	more map[addr.Key][]*state.Port
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
	x := &Book{by: newFirsts(2 * ports.Len()), more: map[addr.Key][]*state.Port{}, dups: map[addr.Key]bool{}}
	for _, p := range ports.All() {
		x.Add(p)
	}
	return x
}

// Add records the addresses p holds on its switch. The book keeps p, which
// must not change while it does.
func (x *Book) Add(p *state.Port) {
	addr.EachHeld(p, func(k addr.Key) {
		if first, ok := x.by.get(k); !ok {
			x.by.set(k, p)
		} else {
			hs := x.more[k]
			if first.Switch == p.Switch || slices.ContainsFunc(hs, onSwitch(p.Switch)) {
				x.dups[k] = true
			}
			x.more[k] = append(hs, p)
		}
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil {
			w.Set(k)
		}
	})
}

func onSwitch(sw string) func(*state.Port) bool {
	return func(h *state.Port) bool { return h.Switch == sw }
}

// Remove forgets the addresses p (or the port of its name and switch) holds
// on its switch.
func (x *Book) Remove(p *state.Port) {
	addr.EachHeld(p, func(k addr.Key) {
		if !x.drop(k, p) {
			return
		}
		if w := x.windows[windowKey{p.Switch, int(k.Comp)}]; w != nil && !x.heldOn(k, p.Switch) {
			w.Clear(k)
		}
		if x.dups[k] && !x.dupAt(k) {
			delete(x.dups, k)
		}
	})
}

// drop takes the port of p's name and switch out of k's holders, the next
// holder becoming the first, and reports whether it held k.
func (x *Book) drop(k addr.Key, p *state.Port) bool {
	is := func(h *state.Port) bool { return h.Name == p.Name && h.Switch == p.Switch }
	first, ok := x.by.get(k)
	if !ok {
		return false
	}
	hs := x.more[k]
	switch i := slices.IndexFunc(hs, is); {
	case is(first) && len(hs) == 0:
		x.by.delete(k)
		return true
	case is(first):
		x.by.set(k, hs[0])
		hs = hs[1:]
	case i >= 0:
		hs = slices.Delete(hs, i, i+1)
	default:
		return false
	}
	if len(hs) == 0 {
		delete(x.more, k)
	} else {
		x.more[k] = hs
	}
	return true
}

// dupAt reports whether two holders of k are on one switch.
func (x *Book) dupAt(k addr.Key) bool {
	first, ok := x.by.get(k)
	if !ok {
		return false
	}
	more := x.more[k]
	for i, h := range more {
		if h.Switch == first.Switch || slices.ContainsFunc(more[:i], onSwitch(h.Switch)) {
			return true
		}
	}
	return false
}

// Held reports whether a port holds the address k names, on any switch.
func (x *Book) Held(k addr.Key) bool {
	_, ok := x.by.get(k)
	return ok
}

// Holders yields the ports that hold the address k names, on any switch.
func (x *Book) Holders(k addr.Key) iter.Seq[Holder] {
	return func(yield func(Holder) bool) {
		first, ok := x.by.get(k)
		if !ok || !yield(Holder{first.Switch, first.Name}) {
			return
		}
		for _, h := range x.more[k] {
			if !yield(Holder{h.Switch, h.Name}) {
				return
			}
		}
	}
}

// heldOn reports whether a port holds k on switch sw.
func (x *Book) heldOn(k addr.Key, sw string) bool {
	first, ok := x.by.get(k)
	return ok && (first.Switch == sw || slices.ContainsFunc(x.more[k], onSwitch(sw)))
}

// Len returns the number of addresses held.
func (x *Book) Len() int { return x.by.len() }

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
	w := NewWindow(p, comp, x.by.len())
	for k := range x.by.keys(comp) {
		if x.heldOn(k, sw) {
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

// firsts maps an address to a port, in the least memory: the book maps
// every address of every port. An IPv4 address or a MAC is keyed by one
// word, its bits with the component in the top byte, an IPv6 address by
// its two words: slots of 16 and 24 bytes where an addr.Key's take 32.
type firsts struct {
	short map[uint64]*state.Port
	v6    map[[2]uint64]*state.Port
}

func newFirsts(room int) firsts {
	return firsts{short: make(map[uint64]*state.Port, room), v6: map[[2]uint64]*state.Port{}}
}

// shortOf is the word that keys k, which is not an IPv6 address (its bits
// take 48 at most: a MAC).
func shortOf(k addr.Key) uint64 { return k.Lo | uint64(k.Comp)<<56 }

func (f firsts) get(k addr.Key) (*state.Port, bool) {
	if k.Comp == addr.CompIPv6 {
		p, ok := f.v6[[2]uint64{k.Hi, k.Lo}]
		return p, ok
	}
	p, ok := f.short[shortOf(k)]
	return p, ok
}

func (f firsts) set(k addr.Key, p *state.Port) {
	if k.Comp == addr.CompIPv6 {
		f.v6[[2]uint64{k.Hi, k.Lo}] = p
		return
	}
	f.short[shortOf(k)] = p
}

func (f firsts) delete(k addr.Key) {
	if k.Comp == addr.CompIPv6 {
		delete(f.v6, [2]uint64{k.Hi, k.Lo})
		return
	}
	delete(f.short, shortOf(k))
}

func (f firsts) len() int { return len(f.short) + len(f.v6) }

// keys yields the addresses of component comp.
func (f firsts) keys(comp int) iter.Seq[addr.Key] {
	return func(yield func(addr.Key) bool) {
		if comp == addr.CompIPv6 {
			for w := range f.v6 {
				if !yield(addr.Key{Comp: addr.CompIPv6, Hi: w[0], Lo: w[1]}) {
					return
				}
			}
			return
		}
		for w := range f.short {
			if c := int(w >> 56); c == comp && !yield(addr.Key{Comp: uint8(c), Lo: w &^ (0xff << 56)}) {
				return
			}
		}
	}
}
