package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/ipam"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// newPool returns the pool of f's usable addresses, without its excluded
// ones, its gateway and the first address northd takes.
func newPool(f *family) *ipam.Pool {
	excl := f.excl
	for _, a := range [2]netip.Addr{f.gateway, f.first} {
		if a.IsValid() {
			excl = addr.MergeRanges(append(slices.Clone(excl), netconf.IPRange{From: a, To: a}), a.Is4())
		}
	}
	return ipam.NewPool(f.usable, excl)
}

// table is a Build's who-holds-what (ipam.Table: the NB's rows and the
// claimants) and the specs it gives addresses: claims[i] is claimant ^i.
type table struct {
	*ipam.Table
	claims []*portSpec
}

// newTable sets up who holds what for a Build, from the NB's rows: every
// row listed in a Build of every owner; the engine's book for the rows of
// ours, and the others listed, in a Build of some.
func (b *builder) newTable() *table {
	if b.scope.book == nil {
		// Room for the claimants: about the ports the NB has no row of.
		room := 0
		for _, s := range b.specs {
			if s.row == nil {
				room++
			}
		}
		return &table{Table: ipam.List(b.have.Ports, b.switchID, room)}
	}
	return &table{Table: ipam.Booked(b.scope.book, b.have, b.switchID)}
}

// openWindows opens windows over the subnets where pending specs need
// fresh addresses, and holds the reservations of gone StatefulSet pods.
func (m *table) openWindows(b *builder) {
	var needs []ipam.SwitchComp
	type swComp struct {
		sw   uint32
		comp int
	}
	seen := map[swComp]bool{}
	for _, s := range b.pending {
		for c := range numComps {
			if s.need&dynBit(c) == 0 || c == compMAC && !s.net.fam[ipv4].prefix.IsValid() || seen[swComp{s.net.swID, c}] {
				continue
			}
			seen[swComp{s.net.swID, c}] = true
			needs = append(needs, ipam.SwitchComp{Switch: s.net.ipamSwitch(), Comp: c})
		}
	}
	m.OpenWindows(needs, b.have.Ports.Len()+len(b.pending))
	rs := make([]ipam.Reservation, len(b.reserved))
	for i, r := range b.reserved {
		rs[i] = ipam.Reservation{Sw: b.switchID(r.sw), Port: r.port}
	}
	m.Reserve(rs)
}

// ipamSwitch names n's switch to an ipam.Table.
func (n *network) ipamSwitch() ipam.Switch {
	return ipam.Switch{Name: n.sw, ID: n.swID, Prefix: [2]netip.Prefix{n.fam[ipv4].prefix, n.fam[ipv6].prefix}}
}

// claim registers s as a holder of addresses given out in this pass.
func (m *table) claim(s *portSpec) ipam.ID {
	m.claims = append(m.claims, s)
	return m.Claimant()
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
func (m *table) heldByAnother(s *portSpec, k addr.Key) string {
	for _, id := range m.HoldersOf(k, s.net.swID) {
		switch {
		case id < 0 && m.claims[^id] != s:
			return fmt.Sprintf("port %q", m.claims[^id].name)
		case id >= 0 && m.Row(id).Name != s.name:
			return fmt.Sprintf("port %q", m.Row(id).Name)
		}
	}
	return ""
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
func (b *builder) allocate(m *table) {
	m.openWindows(b)
	for _, g := range m.Duplicates() {
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
		id := m.claim(s)
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
			m.Set(s.net.swID, k, id)
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
func (s *portSpec) key(c int, a netip.Addr, x mac) addr.Key {
	if c == compMAC {
		return addr.MACKey(x)
	}
	return addr.IPKey(a)
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
func (b *builder) settle(m *table, g []ipam.Entry) {
	d := heldTwice{c: int(g[0].K.Comp)}
	d.a, d.x = g[0].K.Addr()
	d.what = compName[d.c] + " " + addrText(d.c, d.a, d.x)
	var foreigns []*state.Port
	bySwitch := map[uint32][]*state.Port{}
	var sws []uint32
	for _, e := range g {
		p := m.Row(e.ID)
		if p.Owned() && !b.scope.rebuilds(p.Owner) {
			b.scope.abort(Why{ReasonPortHeld, "an address held twice by a port of " + p.Owner})
			return
		}
		if e.K.Sw == 0 {
			foreigns = append(foreigns, p)
			continue
		}
		if bySwitch[e.K.Sw] == nil {
			sws = append(sws, e.K.Sw)
		}
		bySwitch[e.K.Sw] = append(bySwitch[e.K.Sw], p)
	}
	slices.Sort(sws)
	d.foreignText = describeForeign(foreigns)
	if len(foreigns) > 0 {
		d.foreign = foreigns[0]
	}
	for _, sw := range sws {
		if ps := bySwitch[sw]; d.foreign != nil || len(ps) > 1 {
			b.kubeOVNHeldTwice(d, foreigns, ps)
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
	case s.o.chassis != "" && s.o.kind() == kindPod:
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
func (b *builder) claim(m *table, s *portSpec) {
	sw := s.net.swID
	for c := range numComps {
		if s.need&claimBit(c) == 0 {
			continue
		}
		a, x := s.target(c)
		what := fmt.Sprintf("%s %q", s.field(c), addrText(c, a, x))
		for _, h := range m.HoldersOf(s.key(c, a, x), sw) {
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
				p := m.Row(h)
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
	id := m.claim(s)
	for c := range numComps {
		if s.need&claimBit(c) != 0 {
			a, x := s.target(c)
			m.Set(s.net.swID, s.key(c, a, x), id)
		}
	}
}

// failed notes why s could not take its component c: the IPsAllocated
// reason a claim reports.
func (s *portSpec) failed(c int, msg string) {
	reason := ipamclaimsv1alpha1.ReasonIPAddressConflict
	if c == compMAC {
		reason = ipamclaimsv1alpha1.ReasonMACAddressConflict
	}
	s.fail = &allocFailure{reason, msg}
}

func claimVerb(s Source) string {
	if s == SourceRecord {
		return "recorded"
	}
	return "requested"
}

// allocateFresh gives s the lowest free address of each family it lacks,
// then a MAC (step 3 of allocate).
func (b *builder) allocateFresh(m *table, s *portSpec) {
	n := s.net
	sw := n.ipamSwitch()
	id := m.claim(s)
	for f := range n.fam {
		if s.need&dynBit(f) == 0 {
			continue
		}
		fam := &n.fam[f]
		if fam.pool == nil {
			fam.pool = newPool(fam)
		}
		a, ok := fam.pool.Take(func(a netip.Addr) bool { return m.IsHeld(sw, addr.IPKey(a)) },
			func(a netip.Addr) netip.Addr { return m.NextFree(sw, f, a) })
		if !ok {
			msg := fmt.Sprintf("network %s: no free %s address in %s for port %q", n.key, familyName[f], fam.prefix, s.name)
			b.ownerProblem(s.o, "SubnetExhausted", msg)
			s.state = specFailed
			s.fail = &allocFailure{ipamclaimsv1alpha1.ReasonSubnetExhausted, msg}
			return
		}
		s.ip[f] = a
		m.Set(n.swID, addr.IPKey(a), id)
	}
	if s.need&dynBit(compMAC) != 0 {
		s.mac = generateMAC(s, func(x mac) bool { return m.IsHeld(sw, addr.MACKey(x)) })
		m.Set(n.swID, addr.MACKey(s.mac), id)
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
