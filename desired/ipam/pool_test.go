package ipam

import (
	"net/netip"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/desired/addr"
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
		excl = addr.MergeRanges(excl, p.Addr().Is4())
		comp := addr.CompIPv4
		if p.Addr().Is6() {
			comp = addr.CompIPv6
		}
		w := NewWindow(p, comp, rapid.IntRange(0, 300).Draw(t, "window")/4)
		held := map[netip.Addr]bool{}
		for range rapid.IntRange(0, 6000).Draw(t, "held") {
			a := addrAt(p, rapid.IntRange(0, 5000).Draw(t, "at"))
			if w.Covers(a) && p.Contains(a) {
				w.Set(addr.IPKey(a))
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
	hi, lo := addr.Words(p.Masked().Addr())
	return addr.FromWords(p.Addr().Is4(), hi, lo+uint64(i))
}

func offsetOf(p netip.Prefix, a netip.Addr) int {
	_, base := addr.Words(p.Masked().Addr())
	_, lo := addr.Words(a)
	return int(lo - base)
}

// TestWindow: a window covers the bottom of its subnet, says what it
// holds there and nothing elsewhere, and NextFree skips what it holds.
func TestWindow(t *testing.T) {
	p := netip.MustParsePrefix("10.16.0.0/16")
	w := NewWindow(p, addr.CompIPv4, 10)
	at := func(i int) netip.Addr { return addr.FromWords(true, 0, 0x0a100000+uint64(i)) }
	for i := range 70 {
		w.Set(addr.IPKey(at(i)))
	}
	w.Clear(addr.IPKey(at(66)))
	for _, c := range []struct {
		from, want int
	}{{0, 66}, {66, 66}, {67, 70}, {100, 100}} {
		if got := w.NextFree(at(c.from)); got != at(c.want) {
			t.Errorf("NextFree(%s) = %s, want %s", at(c.from), got, at(c.want))
		}
	}
	if held, known := w.Held(addr.IPKey(at(5))); !held || !known {
		t.Errorf("Held(%s) = %v, %v", at(5), held, known)
	}
	out := addr.IPKey(netip.MustParseAddr("10.17.0.1"))
	if held, known := w.Held(out); held || known || w.Covers(netip.MustParseAddr("10.17.0.1")) {
		t.Errorf("a window of %s knows %v", p, out)
	}
	if (*Window)(nil).Covers(at(0)) {
		t.Error("a nil window covers an address")
	}
	// A /30 has four addresses: its window is one word, not the 4,000
	// asked for.
	small := NewWindow(netip.MustParsePrefix("10.16.0.0/30"), addr.CompIPv4, 1000)
	if small.Covers(at(64)) || !small.Covers(at(3)) {
		t.Error("a window of a /30 is not one word")
	}
	// A MAC window covers the MACs derived from the subnet's addresses.
	mw := NewWindow(p, addr.CompMAC, 10)
	mw.Set(addr.MACKey(addr.FromIPv4(at(3))))
	if held, known := mw.Held(addr.MACKey(addr.FromIPv4(at(3)))); !held || !known || w.Comp() != addr.CompIPv4 || mw.Comp() != addr.CompMAC {
		t.Errorf("MAC window: Held(%s) = %v, %v", addr.FromIPv4(at(3)), held, known)
	}
}
