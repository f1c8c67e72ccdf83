package addr

import (
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
	by map[Key][]Holder
	// dups are the addresses two ports hold on one switch.
	dups map[Key]bool
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
	x := &Book{by: make(map[Key][]Holder, 2*ports.Len()), dups: map[Key]bool{}}
	for _, p := range ports.All() {
		x.Add(p)
	}
	return x
}

// EachHeld calls fn with the key of each address p holds: those its
// addresses column and its dynamic_addresses list, each once.
func EachHeld(p *state.Port, fn func(Key)) {
	var words [8]string
	list := words[:0]
	for _, e := range p.Addresses {
		list = appendWords(list, e)
	}
	list = appendWords(list, p.DynamicAddresses)
	for i, word := range list {
		if slices.Contains(list[:i], word) {
			continue // a port listing an address twice holds it once
		}
		if k, ok := WordKey(word); ok {
			fn(k)
		}
	}
}

// Add records the addresses p holds on its switch.
func (x *Book) Add(p *state.Port) {
	EachHeld(p, func(k Key) {
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
	EachHeld(p, func(k Key) {
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
func (x *Book) Holders(k Key) []Holder { return x.by[k] }

// Len returns the number of addresses held.
func (x *Book) Len() int { return len(x.by) }

// Dups yields the addresses two ports hold on one switch.
func (x *Book) Dups() iter.Seq[Key] { return maps.Keys(x.dups) }

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
