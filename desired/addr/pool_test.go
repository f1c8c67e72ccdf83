package addr

import (
	"net/netip"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// TestPoolSkip: a pool that skips the addresses a window holds a word at a
// time hands out what one asking of every address does, over windows that
// cover part of the subnet, exclusions and the subnet's end.
func TestPoolSkip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := netip.MustParsePrefix(rapid.SampledFrom([]string{"10.0.0.0/24", "10.0.0.0/19", "fd00::/120", "fd00::/115"}).Draw(t, "subnet"))
		var r netconf.IPRange
		r.From, r.To = netconf.Usable(p)
		var excl []netconf.IPRange
		for range rapid.IntRange(0, 3).Draw(t, "exclusions") {
			from := addrAt(p, rapid.IntRange(0, 5000).Draw(t, "from"))
			excl = append(excl, netconf.IPRange{From: from, To: addrAt(p, rapid.IntRange(0, 40).Draw(t, "len")+offsetOf(p, from))})
		}
		excl = MergeRanges(excl, p.Addr().Is4())
		comp := CompIPv4
		if p.Addr().Is6() {
			comp = CompIPv6
		}
		w := NewWindow(p, comp, rapid.IntRange(0, 300).Draw(t, "window")/4)
		held := map[netip.Addr]bool{}
		for range rapid.IntRange(0, 6000).Draw(t, "held") {
			a := addrAt(p, rapid.IntRange(0, 5000).Draw(t, "at"))
			if w.Covers(a) && p.Contains(a) {
				w.Set(IPKey(a))
				held[a] = true
			}
		}
		taken := func(a netip.Addr) bool { return held[a] }
		want, got := NewPool(r, excl), NewPool(r, excl)
		for {
			a, ok := want.Take(taken, nil)
			b, ok2 := got.Take(taken, w.NextFree)
			if a != b || ok != ok2 {
				t.Fatalf("with skip %v %v, without %v %v", b, ok2, a, ok)
			}
			if !ok {
				break
			}
		}
	})
}

// addrAt is the address i after p's first.
func addrAt(p netip.Prefix, i int) netip.Addr {
	hi, lo := Words(p.Masked().Addr())
	return FromWords(p.Addr().Is4(), hi, lo+uint64(i))
}

func offsetOf(p netip.Prefix, a netip.Addr) int {
	_, base := Words(p.Masked().Addr())
	_, lo := Words(a)
	return int(lo - base)
}

func TestRanges(t *testing.T) {
	r := func(from, to string) netconf.IPRange {
		return netconf.IPRange{From: netip.MustParseAddr(from), To: netip.MustParseAddr(to)}
	}
	show := func(rs []netconf.IPRange) string {
		out := ""
		for _, x := range rs {
			out += " " + x.From.String() + "-" + x.To.String()
		}
		return out
	}
	merged := MergeRanges([]netconf.IPRange{
		r("10.0.0.20", "10.0.0.30"),
		r("10.0.0.1", "10.0.0.2"),
		r("10.0.0.3", "10.0.0.3"),     // adjacent to .1-.2
		r("10.0.0.25", "10.0.0.40"),   // overlaps .20-.30
		r("10.0.0.9", "10.0.0.8"),     // inverted: dropped
		r("fd00::1", "fd00::2"),       // the other family: dropped
		r("10.0.0.255", "10.0.0.255"), // alone
	}, true)
	if got, want := show(merged), " 10.0.0.1-10.0.0.3 10.0.0.20-10.0.0.40 10.0.0.255-10.0.0.255"; got != want {
		t.Errorf("MergeRanges =%s, want%s", got, want)
	}
	held := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.21"), netip.MustParseAddr("10.0.0.255")}
	if got, want := show(Punch(merged, held)), " 10.0.0.2-10.0.0.3 10.0.0.20-10.0.0.20 10.0.0.22-10.0.0.40"; got != want {
		t.Errorf("Punch =%s, want%s", got, want)
	}
	if !InRange(r("10.0.0.1", "10.0.0.3"), netip.MustParseAddr("10.0.0.3")) || InRange(netconf.IPRange{}, netip.MustParseAddr("10.0.0.3")) {
		t.Error("InRange: the last address of a range is out, or the zero range holds one")
	}
}
