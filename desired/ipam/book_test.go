package ipam

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestBookKeptUpToDate: a book kept up to date through ports added and
// removed in any order says what a book made from the ports left says —
// who holds each address, which are held twice on one switch, and what
// its windows mark.
func TestBookKeptUpToDate(t *testing.T) {
	subnet := netip.MustParsePrefix("10.16.0.0/24")
	rapid.Check(t, func(t *rapid.T) {
		ports := state.NewPorts(0)
		kept := NewBook(ports)
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			name := fmt.Sprintf("p%d", rapid.IntRange(0, 9).Draw(t, "port"))
			if old := ports.Get(name); old != nil && rapid.Bool().Draw(t, "remove") {
				kept.Remove(old)
				ports.Delete(name)
			} else {
				if old != nil {
					kept.Remove(old)
				}
				ip := fmt.Sprintf("10.16.0.%d", rapid.IntRange(1, 6).Draw(t, "ip"))
				entry := addr.FromIPv4(netip.MustParseAddr(ip)).String() + " " + ip
				if rapid.Bool().Draw(t, "twice") {
					entry += " " + ip // an address listed twice is held once
				}
				p := &state.Port{Name: name, Switch: rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "switch"), Addresses: []string{entry}}
				ports.Set(name, p)
				kept.Add(p)
			}
			if i == 3 { // windows made part way are kept up to date too
				kept.Window("a", subnet, addr.CompIPv4)
			}
		}
		fresh := NewBook(ports)
		if got, want := describe(kept, subnet), describe(fresh, subnet); got != want {
			t.Fatalf("kept up to date:\n%s\nmade from the ports left:\n%s", got, want)
		}
	})
}

// describe lists what a book says of the addresses of subnet and their
// MACs, on switch "a" for its window.
func describe(x *Book, subnet netip.Prefix) string {
	var b strings.Builder
	w := x.Window("a", subnet, addr.CompIPv4)
	for i := 1; i <= 6; i++ {
		a := netip.MustParseAddr(fmt.Sprintf("10.16.0.%d", i))
		for _, k := range []addr.Key{addr.IPKey(a), addr.MACKey(addr.FromIPv4(a))} {
			hs := slices.Collect(x.Holders(k))
			slices.SortFunc(hs, func(p, q Holder) int { return strings.Compare(p.Switch+"/"+p.Name, q.Switch+"/"+q.Name) })
			fmt.Fprintf(&b, "%v: %v", k, hs)
			if slices.Contains(slices.Collect(x.Dups()), k) {
				b.WriteString(" twice")
			}
			if k.Comp == addr.CompIPv4 {
				held, _ := w.Held(k)
				fmt.Fprintf(&b, " window %v", held)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestBook(t *testing.T) {
	p := func(name, sw, addrs, dynamic string) *state.Port {
		return (&state.Port{Name: name, Switch: sw, Addresses: []string{addrs}}).SetRare(&state.Rare{DynamicAddresses: dynamic})
	}
	ports := state.PortsOf(map[string]*state.Port{
		"a": p("a", "sw1", "0a:58:0a:10:00:05 10.16.0.5", ""),
		"b": p("b", "sw2", "0a:58:0a:10:00:05 10.16.0.5", ""), // another switch: not twice
		"c": p("c", "sw1", "router 10.16.0.5", ""),            // the same switch: twice
		"d": p("d", "", "dynamic", "0a:00:00:00:00:07 10.16.0.7"),
	})
	x := NewBook(ports)
	k5 := addr.IPKey(netip.MustParseAddr("10.16.0.5"))
	if got := len(slices.Collect(x.Holders(k5))); got != 3 {
		t.Errorf("10.16.0.5 has %d holders, want 3", got)
	}
	if dups := slices.Collect(x.Dups()); len(dups) != 1 || dups[0] != k5 {
		t.Errorf("Dups = %v, want 10.16.0.5 alone", dups)
	}
	if hs := slices.Collect(x.Holders(addr.IPKey(netip.MustParseAddr("10.16.0.7")))); len(hs) != 1 || hs[0] != (Holder{"", "d"}) {
		t.Errorf("dynamic_addresses' 10.16.0.7 held by %v, want d", hs)
	}
	x.Remove(ports.Get("c"))
	if dups := slices.Collect(x.Dups()); len(dups) != 0 {
		t.Errorf("Dups after c went = %v, want none", dups)
	}
}

// TestBookKeysApart: an IPv4 address, a MAC and an IPv6 address of the
// same low bits (10.16.0.5, 00:00:0a:10:00:05, ::a10:5) are three
// addresses: three ports on one switch holding one each hold nothing
// twice, each is found as its own, and a window marks its own component's.
func TestBookKeysApart(t *testing.T) {
	ports := state.PortsOf(map[string]*state.Port{
		"v4":  {Name: "v4", Switch: "sw", Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}},
		"mac": {Name: "mac", Switch: "sw", Addresses: []string{"00:00:0a:10:00:05 10.16.0.9"}},
		"v6":  {Name: "v6", Switch: "sw", Addresses: []string{"0a:58:0a:10:00:06 ::a10:5"}},
	})
	x := NewBook(ports)
	if dups := slices.Collect(x.Dups()); len(dups) != 0 {
		t.Errorf("Dups = %v, want none", dups)
	}
	for word, holder := range map[string]string{"10.16.0.5": "v4", "00:00:0a:10:00:05": "mac", "::a10:5": "v6"} {
		k, _ := addr.WordKey(word)
		if hs := slices.Collect(x.Holders(k)); len(hs) != 1 || hs[0].Name != holder {
			t.Errorf("%s held by %v, want %s alone", word, hs, holder)
		}
	}
	if x.Len() != 6 {
		t.Errorf("the book holds %d addresses, want 6", x.Len())
	}
	w := x.Window("sw", netip.MustParsePrefix("10.16.0.0/24"), addr.CompIPv4)
	for ip, held := range map[string]bool{"10.16.0.5": true, "10.16.0.9": true, "10.16.0.6": false} {
		if got, _ := w.Held(addr.IPKey(netip.MustParseAddr(ip))); got != held {
			t.Errorf("the IPv4 window marks %s: %v, want %v", ip, got, held)
		}
	}
	mw := x.Window("sw", netip.MustParsePrefix("10.16.0.0/24"), addr.CompMAC)
	for mac, held := range map[string]bool{"0a:58:0a:10:00:05": true, "0a:58:0a:10:00:06": true, "0a:58:0a:10:00:09": false} {
		k, _ := addr.WordKey(mac)
		if got, known := mw.Held(k); !known || got != held {
			t.Errorf("the MAC window marks %s: %v (known %v), want %v", mac, got, known, held)
		}
	}
	x.Remove(ports.Get("mac"))
	if !x.Held(addr.IPKey(netip.MustParseAddr("10.16.0.5"))) || !x.Held(addr.IPKey(netip.MustParseAddr("::a10:5"))) {
		t.Error("removing the MAC's port let go of 10.16.0.5 or ::a10:5")
	}
}

// BenchmarkBook: what a book of 30,000 ports (a MAC and an IPv4 address
// each, over 2 switches) keeps, a port, and what adding and removing one
// costs.
func BenchmarkBook(b *testing.B) {
	const n = 30000
	ports := state.NewPorts(n)
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, byte(16 + i%2), byte(i >> 8), byte(i)})
		name := fmt.Sprintf("pod%d.ns", i)
		ports.Set(name, &state.Port{Name: name, Switch: fmt.Sprint("sw", i%2),
			Addresses: []string{addr.FromIPv4(ip).String() + " " + ip.String()}})
	}
	before := liveheap.Bytes()
	x := NewBook(ports)
	kept := liveheap.Bytes() - before
	p := ports.Get("pod7.ns")
	b.ResetTimer()
	for range b.N {
		x.Remove(p)
		x.Add(p)
	}
	b.ReportMetric(float64(kept)/n, "kept-B/port")
	runtime.KeepAlive(x)
}
