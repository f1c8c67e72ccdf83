package ipam

import (
	"net/netip"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// Pool hands out the addresses of one subnet in increasing order. Nothing is
// freed within a pass, so a cursor that only moves forward still returns the
// lowest free address: everything behind it was taken or excluded when it
// passed, and stays so.
type Pool struct {
	next netip.Addr
	last netip.Addr
	// excl is sorted and merged; excl[ei] is the first range not entirely
	// behind next.
	excl []netconf.IPRange
	ei   int
	done bool
}

// NewPool returns a pool of the addresses of usable without those of excl,
// which must be merged and sorted (MergeRanges).
func NewPool(usable netconf.IPRange, excl []netconf.IPRange) *Pool {
	pl := &Pool{next: usable.From, last: usable.To, excl: excl}
	pl.done = usable.To.Less(usable.From)
	for pl.ei < len(excl) && excl[pl.ei].To.Less(usable.From) {
		pl.ei++
	}
	return pl
}

// Take returns the lowest address from the cursor on that is not excluded
// and not taken, and moves the cursor past it. skip, if set, returns the
// first address from a on that may be free: every address it passes over
// must be taken. It lets the cursor pass a run of held addresses a word
// of a window at a time, where taken would be asked of each.
func (p *Pool) Take(taken func(netip.Addr) bool, skip func(netip.Addr) netip.Addr) (netip.Addr, bool) {
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
		if skip != nil {
			if b := skip(a); b != a {
				if !b.IsValid() || p.last.Less(b) {
					p.done = true
					break
				}
				p.next = b
				for p.ei < len(p.excl) && p.excl[p.ei].To.Less(b) {
					p.ei++
				}
				continue
			}
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
