package addr

import (
	"net/netip"
	"slices"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// InRange reports whether a is in r.
func InRange(r netconf.IPRange, a netip.Addr) bool {
	return r.From.IsValid() && !a.Less(r.From) && !r.To.Less(a)
}

// Punch returns the merged, sorted ranges rs without the addresses of
// held, sorted.
func Punch(rs []netconf.IPRange, held []netip.Addr) []netconf.IPRange {
	var out []netconf.IPRange
	for _, r := range rs {
		for _, a := range held {
			if !InRange(r, a) {
				continue
			}
			if r.From.Less(a) {
				out = append(out, netconf.IPRange{From: r.From, To: a.Prev()})
			}
			if a == r.To {
				r = netconf.IPRange{} // nothing left
				break
			}
			r.From = a.Next()
		}
		if r.From.IsValid() {
			out = append(out, r)
		}
	}
	return out
}

// MergeRanges returns the ranges of one family sorted by From, with
// overlapping and adjacent ranges merged, which is the form Pool.Take walks.
func MergeRanges(rs []netconf.IPRange, is4 bool) []netconf.IPRange {
	var out []netconf.IPRange
	for _, r := range rs {
		if r.From.IsValid() && r.To.IsValid() && r.From.Is4() == is4 && r.To.Is4() == is4 && !r.To.Less(r.From) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b netconf.IPRange) int { return a.From.Compare(b.From) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			// Adjacent ranges merge too: last.To.Next() == r.From.
			if next := last.To.Next(); !next.IsValid() || !next.Less(r.From) {
				if last.To.Less(r.To) {
					last.To = r.To
				}
				continue
			}
		}
		merged = append(merged, r)
	}
	return merged
}
