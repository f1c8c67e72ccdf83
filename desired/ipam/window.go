package ipam

import (
	"github.com/ovn-sync/ovn-sync/desired/addr"

	"math/bits"
	"net/netip"
)

// Window marks held addresses of one component (or, for MACs, the
// 0a:58:<IPv4> MACs derived from a subnet's addresses) by offset from the
// start of a subnet, for its first len(bits)*64 addresses: pools hand out
// the lowest, so that is where held addresses cluster.
type Window struct {
	comp int
	base [2]uint64 // the subnet's first address (or MAC) as hi, lo
	bits []uint64
}

// MaxWindow is the most addresses a window covers.
const MaxWindow = 1 << 20

// NewWindow returns a window over subnet p for component comp (addr.CompMAC: the
// MACs derived from p's IPv4 addresses), sized for about want addresses:
// held ones cluster at the bottom, so a few times the number of ports
// covers them.
func NewWindow(p netip.Prefix, comp int, want int) *Window {
	size := uint64(min(max(4*want, 4096), MaxWindow))
	if host := p.Addr().BitLen() - p.Bits(); host < 64 && uint64(1)<<host < size {
		size = 1 << host
	}
	w := &Window{comp: comp, bits: make([]uint64, (size+63)/64)}
	switch comp {
	case addr.CompMAC:
		w.base[1] = uint64(addr.FromIPv4(p.Masked().Addr()))
	default:
		w.base[0], w.base[1] = addr.Words(p.Masked().Addr())
	}
	return w
}

// Comp is the component w marks.
func (w *Window) Comp() int { return w.comp }

func (w *Window) offset(hi, lo uint64) (uint64, bool) {
	if hi != w.base[0] || lo < w.base[1] {
		return 0, false
	}
	off := lo - w.base[1]
	return off, off < uint64(len(w.bits))*64
}

// Set marks the address k names held, if w covers it.
func (w *Window) Set(k addr.Key) {
	if off, ok := w.offset(k.Hi, k.Lo); ok {
		w.bits[off/64] |= 1 << (off % 64)
	}
}

// Clear marks the address k names free, if w covers it.
func (w *Window) Clear(k addr.Key) {
	if off, ok := w.offset(k.Hi, k.Lo); ok {
		w.bits[off/64] &^= 1 << (off % 64)
	}
}

// Covers reports whether w, which may be nil, knows whether a is held.
func (w *Window) Covers(a netip.Addr) bool {
	if w == nil {
		return false
	}
	_, ok := w.offset(addr.Words(a))
	return ok
}

// NextFree returns the first address from a on that the window does not
// hold: a when it is free or the window does not cover it, the first
// address past the window when the window holds every one from a on. The
// invalid Addr stands for an address past the last of its family.
func (w *Window) NextFree(a netip.Addr) netip.Addr {
	hi, lo := addr.Words(a)
	off, ok := w.offset(hi, lo)
	if !ok {
		return a
	}
	i := off / 64
	word := w.bits[i] | (1<<(off%64) - 1) // those below a count as held
	for word == ^uint64(0) {
		if i++; i == uint64(len(w.bits)) {
			break
		}
		word = w.bits[i]
	}
	next := i*64 + uint64(bits.TrailingZeros64(^word))
	if i == uint64(len(w.bits)) {
		next = i * 64
	}
	if next == off {
		return a
	}
	lo = w.base[1] + next
	if lo < w.base[1] || a.Is4() && lo > 1<<32-1 {
		return netip.Addr{}
	}
	return addr.FromWords(a.Is4(), hi, lo)
}

// Held reports whether the address k names is held, and whether the
// window knows.
func (w *Window) Held(k addr.Key) (held, known bool) {
	off, ok := w.offset(k.Hi, k.Lo)
	if !ok {
		return false, false
	}
	return w.bits[off/64]&(1<<(off%64)) != 0, true
}
