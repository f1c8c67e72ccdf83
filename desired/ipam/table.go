package ipam

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// Held is an address held on a switch. Switch 0 stands for every switch:
// a row that is not ovn-sync's carries no switch (see state.Port.Switch),
// so what it holds is held everywhere.
type Held struct {
	addr.Key
	Sw uint32
}

// ID says who holds an address: a row (>= 0, Table.Row), several rows
// (Shared), or a claimant of the Build (< 0: ^ its number, in the order
// Claimant handed them out).
type ID int32

// Shared stands for several rows in Table.HoldersOf's map: it lists them.
const Shared ID = 1<<31 - 1

// Entry is one address held, and who holds it.
type Entry struct {
	K  Held
	ID ID
}

// Switch names a switch to a Table: Name as rows and the book name it, ID
// as Held keys it, and the subnets at whose low end its windows lie
// (Prefix[0] IPv4, which the MACs derived from it follow too; Prefix[1]
// IPv6).
type Switch struct {
	Name   string
	ID     uint32
	Prefix [2]netip.Prefix
}

// prefix is the subnet of sw's window of comp.
func (sw Switch) prefix(comp int) netip.Prefix {
	if comp == addr.CompIPv6 {
		return sw.Prefix[1]
	}
	return sw.Prefix[0]
}

// Table is who holds what in one Build: the NB's rows and the claimants the
// Build gives addresses. A Build of every owner lists every row (List); a
// Build of some reads the rows of ours from the engine's book and lists the
// others (Booked). Either way an address is held by a row or a claimant,
// on its switch.
//
// Most passes hand out a few dynamic addresses and claim few, so the rows
// are first only listed (flat) and marked in bit windows over the low end
// of each subnet that allocates, which is all the cursor walk reads. The
// hash map, which says who holds an address, is built from the list only
// when something asks (HoldersOf, IsHeld outside a window): Duplicates,
// which reads the list, must come first.
type Table struct {
	rows      []*state.Port
	claimants int
	// list holds every address held, rows first then claimants in order,
	// until the map is built.
	list    []Entry
	holders map[Held]ID
	// dups lists, for each key held by more than one row, those rows.
	dups map[Held][]ID

	// windows mark what the list and the claimants hold on the switches
	// that allocate; bySw finds each by switch and component.
	windows []*Window
	bySw    map[swComp]*Window

	// book, for a Build of some owners, holds the rows of ours; resolved
	// are the IDs given to its rows, as have holds them.
	book     *Book
	have     state.Ports
	resolved map[string]ID
	switchID func(string) uint32
}

type swComp struct {
	sw   uint32
	comp int
}

// List returns the table of have's rows, every one listed: a Build of
// every owner. switchID numbers a switch name (never 0); room is about how
// many claimants will follow.
func List(have state.Ports, switchID func(string) uint32, room int) *Table {
	t := newTable(have, NewBook(state.NewPorts(0)), switchID)
	t.rows = make([]*state.Port, 0, have.Len())
	// Room for an IPv4 address and a MAC per row, and the claimants'.
	t.list = make([]Entry, 0, 2*have.Len()+2*room)
	for _, p := range have.All() {
		if p != nil {
			t.add(p)
		}
	}
	return t
}

// Booked returns the table of a Build of some owners: book, brought up to
// have first (NBBook.Sync), for the rows of ours, and the other rows
// listed.
func Booked(book *NBBook, have state.State, switchID func(string) uint32) *Table {
	t := newTable(have.Ports, &book.Book, switchID)
	book.Sync(have, t.add)
	return t
}

func newTable(have state.Ports, book *Book, switchID func(string) uint32) *Table {
	return &Table{book: book, have: have, resolved: map[string]ID{}, switchID: switchID, bySw: map[swComp]*Window{}}
}

// add lists row p.
func (t *Table) add(p *state.Port) {
	id := ID(len(t.rows))
	t.rows = append(t.rows, p)
	sw := t.holderSwitch(p)
	addr.EachHeld(p, func(k addr.Key) { t.list = append(t.list, Entry{Held{k, sw}, id}) })
}

// holderSwitch is the switch on which p holds its addresses: its own for
// a row of ours, 0 (every switch) for one that is not.
func (t *Table) holderSwitch(p *state.Port) uint32 {
	if p.Owned() && p.Switch != "" {
		return t.switchID(p.Switch)
	}
	return 0
}

// Row returns the row id stands for (id >= 0).
func (t *Table) Row(id ID) *state.Port { return t.rows[id] }

// Claimant returns the ID of a new claimant.
func (t *Table) Claimant() ID {
	t.claimants++
	return ^ID(t.claimants - 1)
}

// OpenWindows opens a window over each switch and component of needs,
// where the Build hands out fresh addresses, sized for about want
// addresses, and marks what the list holds there.
func (t *Table) OpenWindows(needs []SwitchComp, want int) {
	byID := map[uint32][]*Window{}
	for _, n := range needs {
		k := swComp{n.Switch.ID, n.Comp}
		if t.bySw[k] != nil {
			continue
		}
		w := NewWindow(n.Switch.prefix(n.Comp), n.Comp, want)
		t.windows = append(t.windows, w)
		t.bySw[k] = w
		byID[n.Switch.ID] = append(byID[n.Switch.ID], w)
	}
	if len(t.windows) == 0 {
		return
	}
	for _, e := range t.list {
		ws := t.windows // a row that is not ours holds its addresses everywhere
		if e.K.Sw != 0 {
			ws = byID[e.K.Sw]
		}
		for _, w := range ws {
			if w.Comp() == int(e.K.Comp) {
				w.Set(e.K.Key)
			}
		}
	}
}

// SwitchComp is a component (addr.CompIPv4, CompIPv6, CompMAC) of the
// addresses of a switch.
type SwitchComp struct {
	Switch Switch
	Comp   int
}

// Reservation is addresses held on switch Sw by no port: Port lists them,
// and names them for messages.
type Reservation struct {
	Sw   uint32
	Port *state.Port
}

// Reserve holds the addresses of rs on their switches, each as if a row
// that is not ours held it there: none is handed out, and a claim of one
// fails naming the reservation. An address a row already holds, anywhere,
// is not reserved: a reservation never takes an address from a port (nor
// makes it held twice). It comes after OpenWindows and before the map is
// built.
func (t *Table) Reserve(rs []Reservation) {
	if len(rs) == 0 {
		return
	}
	taken := make(map[addr.Key]bool, len(t.list))
	for _, e := range t.list {
		taken[e.K.Key] = true
	}
	for _, r := range rs {
		id := ID(len(t.rows))
		t.rows = append(t.rows, r.Port)
		addr.EachHeld(r.Port, func(k addr.Key) {
			if taken[k] || t.book.Held(k) {
				return
			}
			taken[k] = true
			t.list = append(t.list, Entry{Held{k, r.Sw}, id})
			for c := range addr.NumComps {
				if w := t.bySw[swComp{r.Sw, c}]; w != nil && c == int(k.Comp) {
					w.Set(k)
				}
			}
		})
	}
}

// resolve returns the ID of the book's row called name, as have holds it.
func (t *Table) resolve(name string) ID {
	if id, ok := t.resolved[name]; ok {
		return id
	}
	id := ID(len(t.rows))
	t.rows = append(t.rows, t.have.Get(name))
	t.resolved[name] = id
	return id
}

// booked returns the book's holders of k on switch sw (every switch when
// sw is 0), in name order.
func (t *Table) booked(k addr.Key, sw uint32) []Entry {
	var out []Entry
	for h := range t.book.Holders(k) {
		id := t.switchID(h.Switch)
		if sw == 0 || id == sw {
			out = append(out, Entry{Held{k, id}, t.resolve(h.Name)})
		}
	}
	slices.SortFunc(out, func(x, y Entry) int { return strings.Compare(t.rows[x.ID].Name, t.rows[y.ID].Name) })
	return out
}

// Duplicates finds the addresses held twice — two rows of ours on one
// switch, or one of ours and one that is not (which holds it everywhere) —
// among the rows listed and the book's. It returns them grouped by
// address, in address order; each group lists its holders. Most passes
// have none, so a cheap filter over the list (a table of hashes) leaves
// only the few candidates to group: addresses the list holds twice, and
// those it holds that the book holds too, beside those the book holds
// twice.
func (t *Table) Duplicates() [][]Entry {
	size := 1
	for size < 2*len(t.list) {
		size <<= 1
	}
	table := make([]uint64, size)
	hash := func(k addr.Key) uint64 {
		h := (k.Lo ^ k.Hi*0x9e3779b97f4a7c15 ^ uint64(k.Comp)<<61) * 0xbf58476d1ce4e5b9
		return h ^ h>>31 | 1 // never 0, the empty slot
	}
	var cand map[uint64]bool
	for _, e := range t.list {
		h := hash(e.K.Key)
		for i := h & uint64(size-1); ; i = (i + 1) & uint64(size-1) {
			if table[i] == 0 {
				table[i] = h
				break
			}
			if table[i] == h {
				if cand == nil {
					cand = map[uint64]bool{}
				}
				cand[h] = true
				break
			}
		}
	}
	groups := map[addr.Key][]Entry{}
	for k := range t.book.Dups() {
		groups[k] = nil
	}
	book := t.book.Len() > 0
	for _, e := range t.list {
		if cand[hash(e.K.Key)] || book && t.book.Held(e.K.Key) {
			groups[e.K.Key] = append(groups[e.K.Key], e)
		}
	}
	var out [][]Entry
	for k, g := range groups {
		if g = append(g, t.booked(k, 0)...); conflicting(g) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []Entry) int { return a[0].K.Key.Compare(b[0].K.Key) })
	return out
}

// conflicting reports whether the holders of one address g lists hold it
// twice: two of ours on one switch, or one of ours and one that is not.
func conflicting(g []Entry) bool {
	var foreign, ours bool
	sws := map[uint32]int{}
	for _, e := range g {
		if e.K.Sw == 0 {
			foreign = true
		} else {
			ours = true
			sws[e.K.Sw]++
		}
	}
	conflict := foreign && ours
	for _, n := range sws {
		conflict = conflict || n > 1
	}
	return conflict
}

// holderMap builds the map from the list: a second row holding an address
// makes it shared; a claimant overrides (it was checked not to conflict).
func (t *Table) holderMap() map[Held]ID {
	if t.holders == nil {
		t.holders = make(map[Held]ID, len(t.list))
		t.dups = map[Held][]ID{}
		for _, e := range t.list {
			n := len(t.holders)
			prev := t.holders[e.K]
			t.holders[e.K] = e.ID
			if len(t.holders) == n && e.ID >= 0 {
				if prev != Shared {
					t.dups[e.K] = append(t.dups[e.K], prev)
				}
				t.dups[e.K] = append(t.dups[e.K], e.ID)
				t.holders[e.K] = Shared
			}
		}
		t.list = nil
	}
	return t.holders
}

// Set records that id holds the address k on switch sw.
func (t *Table) Set(sw uint32, k addr.Key, id ID) {
	h := Held{k, sw}
	if t.holders != nil {
		t.holders[h] = id
	} else {
		t.list = append(t.list, Entry{h, id})
	}
	if w := t.bySw[swComp{sw, int(k.Comp)}]; w != nil {
		w.Set(k)
	}
}

// HoldersOf returns who holds the address k on switch sw: rows that are
// not ours (switch 0) first, then ours and claimants on sw, rows in name
// order.
func (t *Table) HoldersOf(k addr.Key, sw uint32) []ID {
	mp := t.holderMap()
	var out []ID
	for _, s := range [2]uint32{0, sw} {
		h := Held{k, s}
		var ids []ID
		if id, ok := mp[h]; ok {
			if id == Shared {
				ids = slices.Clone(t.dups[h])
			} else {
				ids = []ID{id}
			}
		}
		// The book's rows on the switch too, unless a claimant overrides
		// them.
		if s != 0 && !(len(ids) == 1 && ids[0] < 0) {
			for _, e := range t.booked(k, s) {
				ids = append(ids, e.ID)
			}
		}
		if len(ids) > 1 {
			slices.SortFunc(ids, func(x, y ID) int { return strings.Compare(t.rows[x].Name, t.rows[y].Name) })
		}
		out = append(out, ids...)
	}
	return out
}

// NextFree returns the first address from a on that IsHeld may find free
// on sw, reading the windows as IsHeld does: the table's where it covers
// an address, and the book's. Every address it passes over IsHeld finds
// held.
func (t *Table) NextFree(sw Switch, comp int, a netip.Addr) netip.Addr {
	w := t.bySw[swComp{sw.ID, comp}]
	book := t.book.Window(sw.Name, sw.prefix(comp), comp)
	for a.IsValid() {
		b := a
		if w.Covers(a) {
			b = w.NextFree(a)
		}
		if b == a {
			b = book.NextFree(a)
		}
		if b == a {
			return a
		}
		a = b
	}
	return a
}

// IsHeld reports whether the address k is held on sw: by a row listed or a
// claimant (sw's window for k's component, where it covers the address,
// else the holder map), or by a row of the book (its window, else its
// map).
func (t *Table) IsHeld(sw Switch, k addr.Key) bool {
	held, known := false, false
	if w := t.bySw[swComp{sw.ID, int(k.Comp)}]; w != nil {
		held, known = w.Held(k)
	}
	if held {
		return true
	}
	if !known {
		mp := t.holderMap()
		if _, ok := mp[Held{k, 0}]; ok { // a row that is not ours
			return true
		}
		if _, ok := mp[Held{k, sw.ID}]; ok {
			return true
		}
	}
	if int(k.Comp) != addr.CompMAC {
		if held, known := t.book.Window(sw.Name, sw.prefix(int(k.Comp)), int(k.Comp)).Held(k); known {
			return held
		}
	}
	return t.book.heldOn(k, sw.Name)
}

// HeldAmong returns which of keys a row holds, and where: each Held it
// finds, ours on their switch and others' on switch 0. It reads the list
// and the book without building the map.
func (t *Table) HeldAmong(keys map[addr.Key]bool) map[Held]bool {
	out := map[Held]bool{}
	if len(keys) == 0 {
		return out
	}
	if t.holders != nil {
		for h, id := range t.holders {
			if keys[h.Key] && id >= 0 {
				out[h] = true
			}
		}
	}
	for _, e := range t.list {
		if keys[e.K.Key] && e.ID >= 0 {
			out[e.K] = true
		}
	}
	for k := range keys {
		for h := range t.book.Holders(k) {
			out[Held{k, t.switchID(h.Switch)}] = true
		}
	}
	return out
}
