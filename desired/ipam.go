package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// newPool returns the pool of f's usable addresses, without its excluded
// ones, its gateway and the first address northd takes.
func newPool(f *family) *addr.Pool {
	excl := f.excl
	for _, a := range [2]netip.Addr{f.gateway, f.first} {
		if a.IsValid() {
			excl = addr.MergeRanges(append(slices.Clone(excl), netconf.IPRange{From: a, To: a}), a.Is4())
		}
	}
	return addr.NewPool(f.usable, excl)
}

// Held addresses are keyed by component (IPv4, IPv6, MAC), address and
// switch: ports on different logical switches may share an address. Switch
// 0 stands for "any switch": ports that are not ours carry no switch (see
// state.Port.Switch), so what they hold is held on every switch.
//
// Most passes hand out a few dynamic addresses and claim few, so what have
// holds is first only listed (flat) and marked in bit windows over the low
// end of each subnet that allocates, which is all the cursor walk reads.
// The hash map, which says who holds an address, is built from the list
// only when something asks: a claim, or an address outside the windows.
type (
	// heldKey is an address held on a switch.
	heldKey struct {
		addr.Key
		sw uint32
	}
	// holderID says who holds an address: a have port (>= 0, an index into
	// ipam.ports), several have ports (shared), or a port given the address
	// in this pass (< 0, ^index into ipam.claims).
	holderID int32

	held struct {
		k  heldKey
		id holderID
	}
)

const shared holderID = 1<<31 - 1

type ipam struct {
	ports  []*state.Port
	claims []*portSpec

	// list holds every address held, have ports first then claims in claim
	// order, until the map is built.
	list    []held
	holders map[heldKey]holderID
	// dups lists, for each key held by more than one have port, those
	// ports; found once by findDuplicates.
	dups map[heldKey][]holderID

	// windows mark what the list and this pass's claims hold on the
	// networks that allocate in this pass; byNet finds each by network
	// and component.
	windows []*addr.Window
	byNet   map[netComp]*addr.Window

	// book, in a Build of some owners, holds the NB's rows of ours
	// (nbBook); list then holds only the others. resolved are the holder
	// IDs given to the book's rows.
	book     *addr.Book
	b        *builder
	resolved map[string]holderID
}

func ipKey(sw uint32, a netip.Addr) heldKey { return heldKey{addr.IPKey(a), sw} }

func macKey(sw uint32, m mac) heldKey { return heldKey{addr.MACKey(m), sw} }

// newWindow returns a window over n's subnet for comp, sized for about
// want addresses (addr.NewWindow): MACs are those derived from its IPv4
// subnet.
func newWindow(n *network, comp int, want int) *addr.Window {
	return addr.NewWindow(n.prefix(comp), comp, want)
}

// prefix is n's subnet for comp: its IPv6 subnet for IPv6 addresses, its
// IPv4 subnet for IPv4 addresses and the MACs derived from them.
func (n *network) prefix(comp int) netip.Prefix {
	if comp == ipv6 {
		return n.fam[ipv6].prefix
	}
	return n.fam[ipv4].prefix
}

// newIPAM sets up IPAM for a Build. What holds an address is an NB row,
// or a port this pass gives it. A Build of every owner lists every row,
// with the dynamic_addresses OVN assigned; a Build of some reads the
// engine's book (nbBook) for the rows of ours and lists the others. The
// windows of the networks that allocate in this pass mark what the list
// holds; the book keeps windows of its own.
func (b *builder) newIPAM() *ipam {
	sc := b.scope
	m := &ipam{b: b, resolved: map[string]holderID{}, byNet: map[netComp]*addr.Window{}}
	list := func(p *state.Port) {
		id := holderID(len(m.ports))
		m.ports = append(m.ports, p)
		eachHeld(p, b.holderSwitch(p), func(k heldKey) { m.list = append(m.list, held{k, id}) })
	}
	if sc.book == nil {
		m.book = addr.NewBook(state.NewPorts(0))
		n := b.have.Ports.Len()
		m.ports = make([]*state.Port, 0, n)
		// Room for an IPv4 address and a MAC per port, and the claims.
		m.list = make([]held, 0, 2*n+2*(len(b.pending)+len(b.moved)))
		for _, p := range b.have.Ports.All() {
			if p != nil {
				list(p)
			}
		}
	} else {
		sc.book.sync(b.have, list)
		m.book = sc.book.book
	}
	bySwitch := map[uint32][]*addr.Window{}
	for _, s := range b.pending {
		for c := range numComps {
			if s.need&dynBit(c) == 0 || c == compMAC && !s.net.fam[ipv4].prefix.IsValid() {
				continue
			}
			if m.window(s.net, c) == nil {
				w := newWindow(s.net, c, len(m.ports)+len(b.pending))
				m.windows = append(m.windows, w)
				m.byNet[netComp{s.net, c}] = w
				bySwitch[s.net.swID] = append(bySwitch[s.net.swID], w)
			}
		}
	}
	if len(m.windows) > 0 {
		for _, e := range m.list {
			ws := m.windows // a port that is not ours holds its addresses everywhere
			if e.k.sw != 0 {
				ws = bySwitch[e.k.sw]
			}
			for _, w := range ws {
				if w.Comp() == int(e.k.Comp) {
					w.Set(e.k.Key)
				}
			}
		}
	}
	m.reserve(b, bySwitch)
	return m
}

// holderSwitch is the switch on which p holds its addresses: its own for
// a port of ours, 0 (every switch) for one that is not.
func (b *builder) holderSwitch(p *state.Port) uint32 {
	if p.Owned() && p.Switch != "" {
		return b.switchID(p.Switch)
	}
	return 0
}

// eachHeld calls fn with the key, on switch sw, of each address p holds
// (addr.EachHeld).
func eachHeld(p *state.Port, sw uint32, fn func(heldKey)) {
	addr.EachHeld(p, func(k addr.Key) { fn(heldKey{k, sw}) })
}

// reserve holds the addresses of b.reserved on their switches, each as
// if a port that is not ours held it there: IPAM hands none out, and a
// claim of one fails with a Problem naming the reservation. An address a
// port already holds, anywhere, is not reserved: a reservation never takes
// an address from a port (nor makes it held twice).
func (m *ipam) reserve(b *builder, bySwitch map[uint32][]*addr.Window) {
	if len(b.reserved) == 0 {
		return
	}
	taken := make(map[addr.Key]bool, len(m.list))
	for _, e := range m.list {
		taken[e.k.Key] = true
	}
	for _, r := range b.reserved {
		sw := b.switchID(r.sw)
		id := holderID(len(m.ports))
		m.ports = append(m.ports, r.port)
		eachHeld(r.port, sw, func(k heldKey) {
			if taken[k.Key] || len(m.book.Holders(k.Key)) > 0 {
				return
			}
			taken[k.Key] = true
			m.list = append(m.list, held{k, id})
			for _, w := range bySwitch[sw] {
				if w.Comp() == int(k.Comp) {
					w.Set(k.Key)
				}
			}
		})
	}
}

// netComp is a component of the addresses of a network.
type netComp struct {
	n    *network
	comp int
}

// window returns the window of n for comp, nil if there is none.
func (m *ipam) window(n *network, comp int) *addr.Window { return m.byNet[netComp{n, comp}] }

// findDuplicates finds the addresses held twice — two of our ports on one
// switch, or one of ours and one that is not (which holds it everywhere) —
// among the rows listed and the book's ports. It returns them grouped by
// address, in address order; each group lists its holders. Most passes
// have none, so a cheap filter over the list (a table of hashes) leaves
// only the few candidates to group: addresses the list holds twice, and
// those it holds that the book holds too, beside those the book holds
// twice.
func (m *ipam) findDuplicates() [][]held {
	size := 1
	for size < 2*len(m.list) {
		size <<= 1
	}
	table := make([]uint64, size)
	hash := func(k addr.Key) uint64 {
		h := (k.Lo ^ k.Hi*0x9e3779b97f4a7c15 ^ uint64(k.Comp)<<61) * 0xbf58476d1ce4e5b9
		return h ^ h>>31 | 1 // never 0, the empty slot
	}
	var cand map[uint64]bool
	for _, e := range m.list {
		h := hash(e.k.Key)
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
	groups := map[addr.Key][]held{}
	for k := range m.book.Dups() {
		groups[k] = nil
	}
	book := m.book.Len() > 0
	for _, e := range m.list {
		if cand[hash(e.k.Key)] || book && len(m.book.Holders(e.k.Key)) > 0 {
			groups[e.k.Key] = append(groups[e.k.Key], e)
		}
	}
	var out [][]held
	for k, g := range groups {
		if g = append(g, m.booked(k, 0)...); conflicting(g) {
			out = append(out, g)
		}
	}
	sortGroups(out)
	return out
}

// conflicting reports whether the holders of one address g lists hold it
// twice: two of ours on one switch, or one of ours and one that is not.
func conflicting(g []held) bool {
	var foreign, ours bool
	sws := map[uint32]int{}
	for _, e := range g {
		if e.k.sw == 0 {
			foreign = true
		} else {
			ours = true
			sws[e.k.sw]++
		}
	}
	conflict := foreign && ours
	for _, n := range sws {
		conflict = conflict || n > 1
	}
	return conflict
}

// sortGroups sorts groups of holders by their address.
func sortGroups(groups [][]held) {
	slices.SortFunc(groups, func(a, b []held) int {
		x, y := a[0].k, b[0].k
		return x.Key.Compare(y.Key)
	})
}

// holderMap builds the map from the list: a second have port holding an
// address makes it shared; a claim overrides (it was checked not to
// conflict).
func (m *ipam) holderMap() map[heldKey]holderID {
	if m.holders == nil {
		m.holders = make(map[heldKey]holderID, len(m.list))
		m.dups = map[heldKey][]holderID{}
		for _, e := range m.list {
			n := len(m.holders)
			prev := m.holders[e.k]
			m.holders[e.k] = e.id
			if len(m.holders) == n && e.id >= 0 {
				if prev != shared {
					m.dups[e.k] = append(m.dups[e.k], prev)
				}
				m.dups[e.k] = append(m.dups[e.k], e.id)
				m.holders[e.k] = shared
			}
		}
		m.list = nil
	}
	return m.holders
}

// claimID registers s as a holder of addresses given out in this pass.
func (m *ipam) claimID(s *portSpec) holderID {
	m.claims = append(m.claims, s)
	return ^holderID(len(m.claims) - 1)
}

// describeForeign names ports that are not ovn-sync's, sorted by name in
// place, each with its UUID when known: `port "x" (UUID u), which is not
// ovn-sync's`, or `ports "x" (UUID u) and "y", which are not ovn-sync's`.
func describeForeign(ps []*state.Port) string {
	slices.SortFunc(ps, func(x, y *state.Port) int { return strings.Compare(x.Name, y.Name) })
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = strconv.Quote(p.Name)
		if p.UUID != "" {
			names[i] += " (UUID " + p.UUID + ")"
		}
	}
	switch len(ps) {
	case 0:
		return ""
	case 1:
		return "port " + names[0] + ", which is not ovn-sync's"
	}
	return "ports " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + ", which are not ovn-sync's"
}

// heldByAnother names the port, other than s's, that holds the address k
// names on s's switch (or, not ours, anywhere), "" when none does.
func (m *ipam) heldByAnother(s *portSpec, k heldKey) string {
	for _, id := range m.holdersOf(k, s.net.swID) {
		switch {
		case id < 0 && m.claims[^id] != s:
			return fmt.Sprintf("port %q", m.claims[^id].name)
		case id >= 0 && m.ports[id].Name != s.name:
			return fmt.Sprintf("port %q", m.ports[id].Name)
		}
	}
	return ""
}

// set records that id, on network n, holds the address k names.
func (m *ipam) set(n *network, k heldKey, id holderID) {
	k.sw = n.swID
	if m.holders != nil {
		m.holders[k] = id
	} else {
		m.list = append(m.list, held{k, id})
	}
	if w := m.window(n, int(k.Comp)); w != nil {
		w.Set(k.Key)
	}
}

// holdersOf returns who holds the address k names on switch sw: holders
// that are not ours (switch 0) first, then ours on sw. Shared keys list
// every have port.
func (m *ipam) holdersOf(k heldKey, sw uint32) []holderID {
	mp := m.holderMap()
	var out []holderID
	for _, s := range [2]uint32{0, sw} {
		k.sw = s
		var ids []holderID
		if h, ok := mp[k]; ok {
			if h == shared {
				ids = slices.Clone(m.dups[k])
			} else {
				ids = []holderID{h}
			}
		}
		// The book's ports on the switch too, unless a claim of this pass
		// overrides them.
		if s != 0 && !(len(ids) == 1 && ids[0] < 0) {
			for _, e := range m.booked(k.Key, s) {
				ids = append(ids, e.id)
			}
		}
		if len(ids) > 1 {
			// In name order, so that what a Problem names is stable.
			slices.SortFunc(ids, func(x, y holderID) int { return strings.Compare(m.ports[x].Name, m.ports[y].Name) })
		}
		out = append(out, ids...)
	}
	return out
}

// nextFree returns the first address from a on that isHeld may find free,
// reading the windows as isHeld does: w (the list's and this pass's
// claims) where it covers an address, and the book's. Every address it
// passes over isHeld finds held.
func (m *ipam) nextFree(n *network, w *addr.Window, comp int, a netip.Addr) netip.Addr {
	book := m.book.Window(n.sw, n.prefix(comp), comp)
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

// isHeld reports whether the address k names is held on n's switch: by a
// row listed or a claim of this pass (w, n's window for k's component if
// any, where it covers the address, else the holder map), or by a port of
// the book (its window, else its map).
func (m *ipam) isHeld(n *network, w *addr.Window, k heldKey) bool {
	held, known := false, false
	if w != nil {
		held, known = w.Held(k.Key)
	}
	if held {
		return true
	}
	if !known {
		mp := m.holderMap()
		if _, ok := mp[k]; ok { // k.sw is 0: a port that is not ours
			return true
		}
		if _, ok := mp[heldKey{k.Key, n.swID}]; ok {
			return true
		}
	}
	if int(k.Comp) != compMAC {
		if held, known := m.book.Window(n.sw, n.prefix(int(k.Comp)), int(k.Comp)).Held(k.Key); known {
			return held
		}
	}
	for _, h := range m.book.Holders(k.Key) {
		if h.Switch == n.sw {
			return true
		}
	}
	return false
}

// allocate gives every pending port the addresses it lacks, in three steps:
//
//  1. Addresses held twice. Where two of our ports on a switch (or one of
//     ours and one that is not) hold one address, one keeps it: a port that
//     is not ours, else ours kept exactly as it is, else the one whose
//     request, then record, names it, else the oldest owner. The others give
//     it up with a Problem: a port that asked for the address by request or
//     record fails (and is removed, as it holds what another keeps); one
//     that only held it gets a fresh one.
//  2. Claims: addresses asked for by request or record, those held before
//     (records, granted requests) first, then oldest owner first. A claim
//     of an address another port keeps fails with a Problem (conflicts
//     never steal); one held by a port this pass removes or readdresses
//     waits for the next pass (Result.Again).
//  3. Fresh addresses, lowest free, after every claim, so a new dynamic
//     port never takes an address a claim in the same pass asks for.
func (b *builder) allocate() {
	m := b.newIPAM()
	for _, g := range m.findDuplicates() {
		b.settle(m, g)
	}
	// A kept address of a port moving to another switch must be held on the
	// new switch too, older owners first. One another port holds there (a
	// port already on that switch, or an older one moving to it; a MAC
	// derived from an address of the old network, which a port of the new
	// one derived from the same address) is given up for a new one, with a
	// Problem: the port is new on that network anyway, and an address is
	// never held twice.
	slices.SortFunc(b.moved, comparePriority)
	for _, s := range b.moved {
		id := m.claimID(s)
		for c := range numComps {
			a, x := s.target(c)
			if !a.IsValid() && !x.Valid() || s.need&(claimBit(c)|dynBit(c)) != 0 {
				continue
			}
			k := s.key(c, a, x)
			if other := m.heldByAnother(s, k); other != "" {
				if c == compMAC {
					b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q moves to switch %q with MAC %s, which %s holds there: given a new MAC",
						s.name, s.net.sw, x, other))
					s.mac = 0
				} else {
					b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q moves to switch %q with address %s, which %s holds there: given a new address",
						s.name, s.net.sw, a, other))
					s.ip[c] = netip.Addr{}
				}
				s.need, s.src[c] = s.need|dynBit(c), SourceAllocated
				if !slices.Contains(b.pending, s) {
					b.pending = append(b.pending, s)
				}
				continue
			}
			m.set(s.net, k, id)
		}
	}
	if len(b.pending) == 0 {
		return
	}
	// Claims by rank (claimRank), oldest owner first within a rank; then
	// fresh addresses, oldest owner first, whatever else they claimed.
	// A claim changes no other spec, so one sort serves both.
	slices.SortFunc(b.pending, comparePriority)
	for rank := range 2 {
		for _, s := range b.pending {
			if s.state == specBuild && s.need&claimBits != 0 && s.claimRank() == rank {
				b.claim(m, s)
			}
		}
	}
	for _, s := range b.pending {
		if s.state != specBuild || s.need&(claimBits<<numComps) == 0 {
			continue
		}
		b.allocateFresh(m, s)
	}
}

func cmp2(a, b, then int) int {
	if a != b {
		return a - b
	}
	return then
}

// claimRank orders claims: addresses an owner held before — a record, or
// a request the kube-ovn "allocated" annotation says was granted — come
// before new requests. An owner's own request beats its record (resolve),
// but no owner's new request takes what another held: after the NB is
// lost, possession decides.
func (s *portSpec) claimRank() int {
	for c := range numComps {
		if s.need&claimBit(c) != 0 && (s.src[c] == SourceRecord || s.src[c] == SourceRequest && s.req.granted) {
			return 0
		}
	}
	return 1
}

// key returns the held key of component c of s holding a or x, on no switch.
func (s *portSpec) key(c int, a netip.Addr, x mac) heldKey {
	if c == compMAC {
		return macKey(0, x)
	}
	return ipKey(0, a)
}

// specOf returns the spec whose port in have is p, if any: nil for a port
// no owner wants any more (this pass deletes it) and for one not ours.
func (b *builder) specOf(p *state.Port) *portSpec {
	if !p.Owned() {
		return nil
	}
	if s := b.specNamed(p.Name); s != nil && s.have == p {
		return s
	}
	return nil
}

// keeps reports whether the have port p holds on, after this pass, to
// component c holding a or x. A port that is not ours, or ours kept as it
// is, keeps what it has; one being built keeps it if it is its target.
func (b *builder) keeps(p *state.Port, c int, a netip.Addr, x mac) bool {
	if !p.Owned() {
		return true
	}
	s := b.specOf(p)
	switch {
	case s == nil && !b.scope.rebuilds(p.Owner):
		// A port of an owner this Build leaves as it was.
		return true
	case s == nil:
		return false // deleted by this pass
	case s.kept():
		return s.lost == 0 // else removed by this pass
	case s.state != specBuild || s.lost&claimBit(c) != 0:
		return false
	}
	ta, tx := s.target(c)
	return ta == a && tx == x && s.need&claimBit(c) == 0
}

// settle decides who keeps an address held by several have ports (step 1
// of allocate). Among ours on one switch: ours kept as they are, else the
// port whose request, then record, names the address, else the older
// owner. A port that is not ovn-sync's is never written, so it keeps the
// address too; ours keeps it beside it only when its owner runs or has a
// record of it (holdsAgainstForeign), and otherwise yields. Every port of
// ours that lets go of the address, and every one that keeps it beside a
// port that is not ours, gets an AddressConflict Problem naming the other.
func (b *builder) settle(m *ipam, g []held) {
	d := heldTwice{c: int(g[0].k.Comp)}
	d.a, d.x = g[0].k.Addr()
	d.what = compName[d.c] + " " + addrText(d.c, d.a, d.x)
	var foreigns []*state.Port
	bySwitch := map[uint32][]*state.Port{}
	var sws []uint32
	for _, e := range g {
		p := m.ports[e.id]
		if p.Owned() && !b.scope.rebuilds(p.Owner) {
			b.scope.abort(Why{ReasonPortHeld, "an address held twice by a port of " + p.Owner})
			return
		}
		if e.k.sw == 0 {
			foreigns = append(foreigns, p)
			continue
		}
		if bySwitch[e.k.sw] == nil {
			sws = append(sws, e.k.sw)
		}
		bySwitch[e.k.sw] = append(bySwitch[e.k.sw], p)
	}
	slices.Sort(sws)
	d.foreignText = describeForeign(foreigns)
	if len(foreigns) > 0 {
		d.foreign = foreigns[0]
	}
	for _, sw := range sws {
		if ps := bySwitch[sw]; d.foreign != nil || len(ps) > 1 {
			b.settleOn(d, ps)
		}
	}
}

// heldTwice is an address settle decides on: component c, a or x, and the
// ports not ours that hold it (foreign, the first by name, if any).
type heldTwice struct {
	c           int
	a           netip.Addr
	x           mac
	what        string // "IPv4 address 10.16.0.5"
	foreign     *state.Port
	foreignText string // describeForeign of them
}

// settleOn settles d among ps, ours on one switch.
func (b *builder) settleOn(d heldTwice, ps []*state.Port) {
	c, a, x := d.c, d.a, d.x
	// Contenders: ours that would keep the address; leavers: ours whose
	// request or record names another; the rest are deleted or removed.
	var frozen, contenders, leavers []*portSpec
	for _, p := range ps {
		s := b.specOf(p)
		switch {
		case s == nil || s.state == specDropped || s.kept() && s.lost != 0:
			// Deleted by this pass, or removed: it lost another address.
		case s.kept():
			frozen = append(frozen, s)
		case s.state == specBuild && b.keeps(p, c, a, x):
			contenders = append(contenders, s)
		case s.state == specBuild && s.need&claimBit(c) != 0 && s.lost&claimBit(c) == 0:
			leavers = append(leavers, s)
		}
	}
	slices.SortFunc(frozen, comparePriority)
	slices.SortFunc(contenders, func(x, y *portSpec) int {
		return cmp2(int(x.src[c]), int(y.src[c]), comparePriority(x, y))
	})
	// keeper is ours that keeps the address, if any; winner says who
	// holds it for the Problems of those that let go of it.
	var keeper *portSpec
	winner := d.foreignText
	switch {
	case len(frozen) > 0:
		if d.foreign == nil {
			winner = fmt.Sprintf("port %q (%s)", frozen[0].name, frozen[0].o.id)
		}
	case len(contenders) > 0 && (d.foreign == nil || contenders[0].holdsAgainstForeign(c, a, x)):
		keeper, contenders = contenders[0], contenders[1:]
		winner = fmt.Sprintf("port %q (%s)", keeper.name, keeper.o.id)
	}
	if keeper != nil && d.foreign != nil {
		b.ownerProblem(keeper.o, "AddressConflict", fmt.Sprintf("port %q holds %s, also held by %s: kept, as %s; the other port is never written by ovn-sync",
			keeper.name, d.what, d.foreignText, keeper.whyHolds(c, a, x)))
	}
	for _, s := range contenders {
		b.giveUp(d, s, winner)
	}
	// Those whose request or record names another address go back to
	// it; the address was held twice all the same, and is reported.
	// They let go of this one: should their own fail later (claim),
	// the port is removed, not kept on the address held twice.
	for _, s := range leavers {
		s.lost |= claimBit(c)
		by := winner
		if by == "" {
			// Nobody keeps it: every holder goes back to its own.
			i := slices.IndexFunc(ps, func(p *state.Port) bool { return p.Name != s.name })
			by = fmt.Sprintf("port %q (%s)", ps[i].Name, ps[i].Owner)
		}
		ta, tx := s.target(c)
		b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q held %s, also held by %s: back on its %s %s (%s)",
			s.name, d.what, by, s.src[c], addrText(c, ta, tx), s.field(c)))
	}
	// Ours kept as they are cannot give the address up: the duplicate
	// stays, and is reported.
	for i, s := range frozen {
		if d.foreign != nil || i > 0 {
			b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q holds %s, also held by %s; it is kept as it is (see the owner's other problems)",
				s.name, d.what, winner))
		}
	}
}

// giveUp makes s, a port of ours that would keep d's address, let go of it
// to winner: a port that asked for it by request or record fails (and is
// removed until the conflict ends); one that only held it gets a fresh one.
func (b *builder) giveUp(d heldTwice, s *portSpec, winner string) {
	c := d.c
	s.lost |= claimBit(c)
	if s.src[c] == SourceRequest || s.src[c] == SourceRecord {
		s.state = specFailed
		b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("%s %q: also held by %s; port %q is removed until the conflict ends",
			s.field(c), addrText(c, d.a, d.x), winner, s.name))
		return
	}
	b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q held %s, also held by %s: given a new %s",
		s.name, d.what, winner, compName[c]))
	if c == compMAC {
		s.mac = 0
	} else {
		s.ip[c] = netip.Addr{}
	}
	if s.need == 0 {
		b.pending = append(b.pending, s)
	}
	s.need |= dynBit(c)
	s.src[c] = SourceAllocated
}

// holdsAgainstForeign reports whether s keeps the address component c
// holds (a or x) although a port that is not ovn-sync's holds it too: its
// owner runs (a pod scheduled, a VMI on a node), so a guest uses the
// address, or a record of the owner's names it (a record, or a request
// the kube-ovn "allocated" annotation says was granted). Whoever wrote the
// other port later does not take it from a guest, nor from a record.
func (s *portSpec) holdsAgainstForeign(c int, a netip.Addr, x mac) bool {
	return s.o.chassis != "" || s.recorded(c, a, x)
}

// recorded reports whether a record of s's owner names a (or x) for
// component c.
func (s *portSpec) recorded(c int, a netip.Addr, x mac) bool {
	for _, r := range [2]*requested{s.rec, s.req} {
		if r == s.req && !r.granted {
			continue
		}
		if c == compMAC && x.Valid() && r.mac == x || c != compMAC && a.IsValid() && r.ip[c] == a {
			return true
		}
	}
	return false
}

// whyHolds says why s keeps component c beside a port that is not ours
// (holdsAgainstForeign).
func (s *portSpec) whyHolds(c int, a netip.Addr, x mac) string {
	switch {
	case s.o.chassis != "" && s.o.kind == kindPod:
		return "the pod runs on " + s.o.chassis
	case s.o.chassis != "":
		return "its VMI runs on " + s.o.chassis
	}
	if s.rec != &noRequest && (c == compMAC && s.rec.mac == x || c != compMAC && s.rec.ip[c] == a) {
		return "it is recorded (" + s.rec.field(c) + ")"
	}
	return "it was granted (" + s.req.field(c) + ")"
}

// field names where r's component c came from.
func (r *requested) field(c int) string {
	if c == compMAC {
		return r.macSrc
	}
	return r.ipSrc
}

func addrText(c int, a netip.Addr, x mac) string {
	if c == compMAC {
		return x.String()
	}
	return a.String()
}

// claim takes the addresses s asks for by request or record (step 2 of
// allocate), or fails or defers it.
func (b *builder) claim(m *ipam, s *portSpec) {
	sw := s.net.swID
	for c := range numComps {
		if s.need&claimBit(c) == 0 {
			continue
		}
		a, x := s.target(c)
		what := fmt.Sprintf("%s %q", s.field(c), addrText(c, a, x))
		for _, h := range m.holdersOf(s.key(c, a, x), sw) {
			switch {
			case h < 0:
				if o := m.claims[^h]; o != s {
					msg := fmt.Sprintf("%s: also %s by %s (port %q), which takes precedence", what, claimVerb(o.src[c]), o.o.id, o.name)
					b.ownerProblem(s.o, "AddressConflict", msg)
					s.state = specFailed
					s.failed(c, msg)
					return
				}
			default:
				p := m.ports[h]
				if p == s.have || p.Name == s.name {
					continue // the row this spec rewrites
				}
				if b.keeps(p, c, a, x) {
					b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("%s: held by port %q", what, p.Name))
					s.state = specFailed
					s.failed(c, fmt.Sprintf("%s: held by port %q", what, p.Name))
					return
				}
				// Deleted or readdressed by this pass: the address is free
				// once that is applied.
				s.state = specDeferred
				b.again = true
				return
			}
		}
	}
	id := m.claimID(s)
	for c := range numComps {
		if s.need&claimBit(c) != 0 {
			a, x := s.target(c)
			m.set(s.net, s.key(c, a, x), id)
		}
	}
}

// failed notes why s could not take its component c: the IPsAllocated
// reason a claim reports.
func (s *portSpec) failed(c int, msg string) {
	s.fail, s.failWhy = ipamclaimsv1alpha1.ReasonIPAddressConflict, msg
	if c == compMAC {
		s.fail = ipamclaimsv1alpha1.ReasonMACAddressConflict
	}
}

func claimVerb(s Source) string {
	if s == SourceRecord {
		return "recorded"
	}
	return "requested"
}

// allocateFresh gives s the lowest free address of each family it lacks,
// then a MAC (step 3 of allocate).
func (b *builder) allocateFresh(m *ipam, s *portSpec) {
	n := s.net
	id := m.claimID(s)
	for f := range n.fam {
		if s.need&dynBit(f) == 0 {
			continue
		}
		fam := &n.fam[f]
		if fam.pool == nil {
			fam.pool = newPool(fam)
		}
		w := m.window(n, f)
		a, ok := fam.pool.Take(func(a netip.Addr) bool { return m.isHeld(n, w, ipKey(0, a)) },
			func(a netip.Addr) netip.Addr { return m.nextFree(n, w, f, a) })
		if !ok {
			msg := fmt.Sprintf("network %s: no free %s address in %s for port %q", n.key, familyName[f], fam.prefix, s.name)
			b.ownerProblem(s.o, "SubnetExhausted", msg)
			s.state = specFailed
			s.fail, s.failWhy = ipamclaimsv1alpha1.ReasonSubnetExhausted, msg
			return
		}
		s.ip[f] = a
		m.set(n, ipKey(0, a), id)
	}
	if s.need&dynBit(compMAC) != 0 {
		w := m.window(n, compMAC)
		s.mac = generateMAC(s, func(x mac) bool { return m.isHeld(n, w, macKey(0, x)) })
		m.set(n, macKey(0, s.mac), id)
	}
}

// generateMAC derives a port's MAC when none is requested: from its IPv4
// address, or for IPv6-only ports from its name; if that MAC is taken, from
// its name with a retry counter, so the choice is the same on every pass.
func generateMAC(s *portSpec, taken func(mac) bool) mac {
	if a := s.ip[ipv4]; a.IsValid() {
		if x := addr.FromIPv4(a); !taken(x) {
			return x
		}
	}
	for i := 0; ; i++ {
		if x := addr.FromName(s.name, i); !taken(x) || i > 1<<20 {
			return x
		}
	}
}
