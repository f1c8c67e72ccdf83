package desired

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/state"
)

// pool hands out the addresses of one subnet in increasing order. Nothing is
// freed within a pass, so a cursor that only moves forward still returns the
// lowest free address: everything behind it was taken or excluded when it
// passed, and stays so.
type pool struct {
	prefix netip.Prefix
	next   netip.Addr
	last   netip.Addr
	// excl is sorted and merged; excl[ei] is the first range not entirely
	// behind next.
	excl []IPRange
	ei   int
	done bool
}

func newPool(p netip.Prefix, r IPRange, excl []IPRange) *pool {
	pl := &pool{prefix: p, next: r.From, last: r.To, excl: excl}
	pl.done = r.To.Less(r.From)
	for pl.ei < len(excl) && excl[pl.ei].To.Less(r.From) {
		pl.ei++
	}
	return pl
}

// take returns the lowest address from the cursor on that is not excluded
// and not taken, and moves the cursor past it.
func (p *pool) take(taken func(netip.Addr) bool) (netip.Addr, bool) {
	for !p.done {
		a := p.next
		if p.ei < len(p.excl) && !a.Less(p.excl[p.ei].From) {
			end := p.excl[p.ei].To // end >= a, by the invariant on ei
			p.ei++
			if !end.Less(p.last) {
				p.done = true
				break
			}
			p.next = end.Next()
			continue
		}
		if a == p.last {
			p.done = true
		} else {
			p.next = a.Next()
		}
		if !taken(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// Held addresses are keyed by switch: ports on different logical switches
// may share an address. Switch 0 stands for "any switch": ports that are not
// ours carry no switch (see state.Port.Switch), so what they hold is held on
// every switch.
//
// Most passes hand out a few dynamic addresses and claim nothing, so what
// have holds is first only listed (flat, pointer-free slices) and marked in
// bit windows over the low end of each subnet that allocates, which is all
// the cursor walk reads. The hash maps, which say who holds an address, are
// built from the lists only when something asks: a static claim, or an
// address outside the windows.
type (
	v4Key struct{ sw, a uint32 }
	v6Key struct {
		sw     uint32
		hi, lo uint64
	}
	macKey struct {
		sw uint32
		m  mac
	}
	// holderID says who holds an address: a have port (>= 0, an index into
	// ipam.ports), several have ports (shared), or a port given the address
	// in this pass (< 0, ^index into ipam.claims).
	holderID int32

	held4 struct {
		k  v4Key
		id holderID
	}
	held6 struct {
		k  v6Key
		id holderID
	}
	heldMAC struct {
		k  macKey
		id holderID
	}
)

const shared holderID = 1<<31 - 1

type ipam struct {
	ports  []*state.Port
	claims []*portSpec

	// list4, list6 and listMAC hold every address held, have ports first
	// then claims in claim order, until the map of the kind is built.
	list4   []held4
	list6   []held6
	listMAC []heldMAC
	v4      map[v4Key]holderID
	v6      map[v6Key]holderID
	macs    map[macKey]holderID

	windows []*window
}

// window marks held addresses (or, for MACs, the derived 0a:58:<IPv4>
// MACs) by offset from the start of a network's subnet, for its first
// len(bits)*64 addresses: pools hand out the lowest, so that is where held
// addresses cluster.
type window struct {
	n    *network
	kind windowKind
	base [2]uint64 // the subnet's first address (or MAC) as hi, lo
	bits []uint64
}

type windowKind uint8

const (
	window4 windowKind = iota
	window6
	windowMAC
)

const maxWindow = 1 << 20

// newWindow sizes the window for about want addresses: held ones cluster at
// the bottom, so a few times the number of ports covers them.
func newWindow(n *network, kind windowKind, want int) *window {
	p := n.v4
	if kind == window6 {
		p = n.v6
	}
	size := uint64(min(max(4*want, 4096), maxWindow))
	if host := p.Addr().BitLen() - p.Bits(); host < 64 && uint64(1)<<host < size {
		size = 1 << host
	}
	w := &window{n: n, kind: kind, bits: make([]uint64, (size+63)/64)}
	switch kind {
	case window4:
		w.base[1] = uint64(key4(0, p.Masked().Addr()).a)
	case window6:
		k := key6(0, p.Masked().Addr())
		w.base = [2]uint64{k.hi, k.lo}
	case windowMAC:
		w.base[1] = uint64(macFromIPv4(p.Masked().Addr()))
	}
	return w
}

func (w *window) offset(hi, lo uint64) (uint64, bool) {
	if hi != w.base[0] || lo < w.base[1] {
		return 0, false
	}
	off := lo - w.base[1]
	return off, off < uint64(len(w.bits))*64
}

func (w *window) set(hi, lo uint64) {
	if off, ok := w.offset(hi, lo); ok {
		w.bits[off/64] |= 1 << (off % 64)
	}
}

// held reports whether the address is held, and whether the window knows.
func (w *window) held(hi, lo uint64) (held, known bool) {
	off, ok := w.offset(hi, lo)
	if !ok {
		return false, false
	}
	return w.bits[off/64]&(1<<(off%64)) != 0, true
}

func key4(sw uint32, a netip.Addr) v4Key {
	b := a.As4()
	return v4Key{sw, binary.BigEndian.Uint32(b[:])}
}

func key6(sw uint32, a netip.Addr) v6Key {
	b := a.As16()
	return v6Key{sw, binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// words of an address, for windows.
func ipWords(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		return 0, uint64(key4(0, a).a)
	}
	k := key6(0, a)
	return k.hi, k.lo
}

// newIPAM lists every address any port in have holds, ours or not,
// including the dynamic_addresses OVN assigned, and marks the windows of the
// networks that allocate dynamically in this pass.
func (b *builder) newIPAM() *ipam {
	n := len(b.have.Ports)
	// Room for one address of each kind per have port and per claim.
	c := n + len(b.pending) + len(b.moved)
	m := &ipam{
		ports:   make([]*state.Port, 0, n),
		list4:   make([]held4, 0, c),
		listMAC: make([]heldMAC, 0, c),
	}
	for _, nw := range b.networks {
		if nw.v6.IsValid() {
			m.list6 = make([]held6, 0, c)
			break
		}
	}
	bySwitch := map[uint32][]*window{}
	for _, s := range b.pending {
		for _, need := range [3]struct {
			flag uint8
			kind windowKind
		}{{dyn4, window4}, {dyn6, window6}, {genMAC, windowMAC}} {
			if s.need&need.flag == 0 || need.kind == windowMAC && !s.net.v4.IsValid() {
				continue
			}
			if m.window(s.net, need.kind) == nil {
				w := newWindow(s.net, need.kind, n+len(b.pending))
				m.windows = append(m.windows, w)
				bySwitch[s.net.swID] = append(bySwitch[s.net.swID], w)
			}
		}
	}
	var words [8]string
	for _, p := range b.have.Ports {
		if p == nil {
			continue
		}
		var sw uint32
		if p.Owned() && p.Switch != "" {
			sw = b.switchID(p.Switch)
		}
		ws := m.windows // a port that is not ours holds its addresses everywhere
		if sw != 0 {
			ws = bySwitch[sw]
		}
		id := holderID(len(m.ports))
		m.ports = append(m.ports, p)
		list := words[:0]
		for _, e := range p.Addresses {
			list = appendWords(list, e)
		}
		list = appendWords(list, p.DynamicAddresses)
		for i, word := range list {
			if slices.Contains(list[:i], word) {
				continue // a port listing an address twice holds it once
			}
			if x, ok := colonMAC(word); ok {
				m.listMAC = append(m.listMAC, heldMAC{macKey{sw, x}, id})
				for _, w := range ws {
					if w.kind == windowMAC {
						w.set(0, uint64(x))
					}
				}
				continue
			}
			a, err := netip.ParseAddr(word)
			if err != nil {
				continue
			}
			a = a.Unmap()
			if a.Is4() {
				m.list4 = append(m.list4, held4{key4(sw, a), id})
			} else {
				m.list6 = append(m.list6, held6{key6(sw, a), id})
			}
			hi, lo := ipWords(a)
			for _, w := range ws {
				if w.kind == window4 && a.Is4() || w.kind == window6 && a.Is6() {
					w.set(hi, lo)
				}
			}
		}
	}
	return m
}

// appendWords appends the space-separated words of s.
func appendWords(ws []string, s string) []string {
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(ws, s)
		}
		if i > 0 {
			ws = append(ws, s[:i])
		}
		s = s[i+1:]
	}
	return ws
}

func (m *ipam) window(n *network, kind windowKind) *window {
	for _, w := range m.windows {
		if w.n == n && w.kind == kind {
			return w
		}
	}
	return nil
}

// holderMap turns a list into a map: a second have port holding an address
// makes it shared; a claim overrides (it was checked not to conflict).
func holderMap[K comparable, E any](list []E, get func(E) (K, holderID)) map[K]holderID {
	mp := make(map[K]holderID, len(list))
	for _, e := range list {
		k, id := get(e)
		n := len(mp)
		mp[k] = id
		if len(mp) == n && id >= 0 {
			mp[k] = shared
		}
	}
	return mp
}

func (m *ipam) map4() map[v4Key]holderID {
	if m.v4 == nil {
		m.v4 = holderMap(m.list4, func(e held4) (v4Key, holderID) { return e.k, e.id })
		m.list4 = nil
	}
	return m.v4
}

func (m *ipam) map6() map[v6Key]holderID {
	if m.v6 == nil {
		m.v6 = holderMap(m.list6, func(e held6) (v6Key, holderID) { return e.k, e.id })
		m.list6 = nil
	}
	return m.v6
}

func (m *ipam) mapMAC() map[macKey]holderID {
	if m.macs == nil {
		m.macs = holderMap(m.listMAC, func(e heldMAC) (macKey, holderID) { return e.k, e.id })
		m.listMAC = nil
	}
	return m.macs
}

// claimID registers s as a holder of addresses given out in this pass.
func (m *ipam) claimID(s *portSpec) holderID {
	m.claims = append(m.claims, s)
	return ^holderID(len(m.claims) - 1)
}

// setIP records that id, on network n, was given a.
func (m *ipam) setIP(n *network, a netip.Addr, id holderID) {
	if a.Is4() {
		k := key4(n.swID, a)
		if m.v4 != nil {
			m.v4[k] = id
		} else {
			m.list4 = append(m.list4, held4{k, id})
		}
		if w := m.window(n, window4); w != nil {
			w.set(ipWords(a))
		}
		return
	}
	k := key6(n.swID, a)
	if m.v6 != nil {
		m.v6[k] = id
	} else {
		m.list6 = append(m.list6, held6{k, id})
	}
	if w := m.window(n, window6); w != nil {
		w.set(ipWords(a))
	}
}

func (m *ipam) setMAC(n *network, x mac, id holderID) {
	k := macKey{n.swID, x}
	if m.macs != nil {
		m.macs[k] = id
	} else {
		m.listMAC = append(m.listMAC, heldMAC{k, id})
	}
	if w := m.window(n, windowMAC); w != nil {
		w.set(0, uint64(x))
	}
}

func (m *ipam) ipHolder(sw uint32, a netip.Addr) (holderID, bool) {
	if a.Is4() {
		mp := m.map4()
		if h, ok := mp[key4(0, a)]; ok {
			return h, true
		}
		h, ok := mp[key4(sw, a)]
		return h, ok
	}
	mp := m.map6()
	if h, ok := mp[key6(0, a)]; ok {
		return h, true
	}
	h, ok := mp[key6(sw, a)]
	return h, ok
}

func (m *ipam) macHolder(sw uint32, x mac) (holderID, bool) {
	mp := m.mapMAC()
	if h, ok := mp[macKey{0, x}]; ok {
		return h, true
	}
	h, ok := mp[macKey{sw, x}]
	return h, ok
}

// ipHeld reports whether a is held on network n's switch; w is n's window
// for a's family, if any.
func (m *ipam) ipHeld(n *network, w *window, a netip.Addr) bool {
	if w != nil {
		if held, known := w.held(ipWords(a)); known {
			return held
		}
	}
	_, ok := m.ipHolder(n.swID, a)
	return ok
}

func (m *ipam) macHeld(n *network, w *window, x mac) bool {
	if w != nil {
		if held, known := w.held(0, uint64(x)); known {
			return held
		}
	}
	_, ok := m.macHolder(n.swID, x)
	return ok
}

// blocks reports whether h stands in the way of s taking an address. The
// have port s replaces (same name, so the same row is rewritten) does not.
func (m *ipam) blocks(h holderID, s *portSpec) bool {
	switch {
	case h == shared:
		return true
	case h < 0:
		return m.claims[^h] != s
	default:
		p := m.ports[h]
		return p != s.have && p.Name != s.name
	}
}

func (m *ipam) describe(h holderID) string {
	switch {
	case h == shared:
		return "held by more than one port"
	case h < 0:
		c := m.claims[^h]
		return fmt.Sprintf("also requested by %s (port %q), which takes precedence", c.o.id, c.name)
	default:
		return fmt.Sprintf("held by port %q", m.ports[h].Name)
	}
}

// allocate gives every pending port the addresses it lacks. Sticky addresses
// are already held (they are in have). Then, in owner order (oldest first),
// static requests are claimed, and only after all of them dynamic addresses
// are handed out, so a new dynamic port never takes an address a static
// request in the same pass asks for.
func (b *builder) allocate() {
	m := b.newIPAM()
	// A kept address of a port moving to another switch must be held on the
	// new switch too.
	for _, s := range b.moved {
		id := m.claimID(s)
		for _, a := range [2]netip.Addr{s.v4, s.v6} {
			if a.IsValid() {
				m.setIP(s.net, a, id)
			}
		}
		if s.mac.valid() {
			m.setMAC(s.net, s.mac, id)
		}
	}
	slices.SortFunc(b.pending, comparePriority)

	for _, s := range b.pending {
		if s.need&needClaims == 0 {
			continue
		}
		sw, r := s.net.swID, s.req
		fail := func(src string, v fmt.Stringer, h holderID) {
			b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("%s %q: %s", src, v.String(), m.describe(h)))
			s.failed = true
		}
		if s.need&claim4 != 0 {
			if h, ok := m.ipHolder(sw, r.v4); ok && m.blocks(h, s) {
				fail(r.ipSrc, r.v4, h)
			}
		}
		if s.need&claim6 != 0 && !s.failed {
			if h, ok := m.ipHolder(sw, r.v6); ok && m.blocks(h, s) {
				fail(r.ipSrc, r.v6, h)
			}
		}
		if s.need&claimMAC != 0 && !s.failed {
			if h, ok := m.macHolder(sw, r.mac); ok && m.blocks(h, s) {
				fail(r.macSrc, r.mac, h)
			}
		}
		if s.failed {
			continue
		}
		id := m.claimID(s)
		if s.need&claim4 != 0 {
			s.v4 = r.v4
			m.setIP(s.net, s.v4, id)
		}
		if s.need&claim6 != 0 {
			s.v6 = r.v6
			m.setIP(s.net, s.v6, id)
		}
		if s.need&claimMAC != 0 {
			s.mac = r.mac
			m.setMAC(s.net, s.mac, id)
		}
	}

	for _, s := range b.pending {
		if s.failed || s.need&needDynamic == 0 {
			continue
		}
		n := s.net
		id := m.claimID(s)
		if s.need&dyn4 != 0 {
			if n.pool4 == nil {
				n.pool4 = newPool(n.v4, n.r4, n.excl4)
			}
			w := m.window(n, window4)
			a, ok := n.pool4.take(func(a netip.Addr) bool { return m.ipHeld(n, w, a) })
			if !ok {
				b.exhausted(s, "IPv4", n.v4)
				continue
			}
			s.v4 = a
			m.setIP(n, a, id)
		}
		if s.need&dyn6 != 0 {
			if n.pool6 == nil {
				n.pool6 = newPool(n.v6, n.r6, n.excl6)
			}
			w := m.window(n, window6)
			a, ok := n.pool6.take(func(a netip.Addr) bool { return m.ipHeld(n, w, a) })
			if !ok {
				b.exhausted(s, "IPv6", n.v6)
				continue
			}
			s.v6 = a
			m.setIP(n, a, id)
		}
		if s.need&genMAC != 0 {
			w := m.window(n, windowMAC)
			s.mac = generateMAC(s, func(x mac) bool { return m.macHeld(n, w, x) })
			m.setMAC(n, s.mac, id)
		}
	}
}

func (b *builder) exhausted(s *portSpec, family string, p netip.Prefix) {
	b.ownerProblem(s.o, "SubnetExhausted",
		fmt.Sprintf("network %s: no free %s address in %s for port %q", s.net.key, family, p, s.name))
	s.failed = true
}

// generateMAC derives a port's MAC when none is requested: from its IPv4
// address, or for IPv6-only ports from its name; if that MAC is taken, from
// its name with a retry counter, so the choice is the same on every pass.
func generateMAC(s *portSpec, taken func(mac) bool) mac {
	if s.v4.IsValid() {
		if x := macFromIPv4(s.v4); !taken(x) {
			return x
		}
	}
	for i := 0; ; i++ {
		if x := macFromName(s.name, i); !taken(x) || i > 1<<20 {
			return x
		}
	}
}
