package addr

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/internal/puretest"
)

// TestPure keeps addr pure (STYLE rule 1): the standard library, netconf
// and state only, no I/O, no goroutines, no clock.
func TestPure(t *testing.T) {
	puretest.Check(t, "github.com/ovn-sync/ovn-sync/desired/netconf", "github.com/ovn-sync/ovn-sync/state")
}

func TestParseMAC(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		err  error
	}{
		{"0a:58:0a:10:00:05", "0a:58:0a:10:00:05", nil},
		{" 0A-58-0A-10-00-05 ", "0a:58:0a:10:00:05", nil},
		{"0a58.0a10.0005", "0a:58:0a:10:00:05", nil},
		{"01:00:5e:00:00:01", "", ErrNotUnicast},
		{"00:00:00:00:00:00", "", ErrZeroMAC},
		{"0a:58:0a:10:00", "", ErrNotMAC},
		{"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01", "", ErrNotMAC}, // 20 bytes (InfiniBand)
		{"dynamic", "", ErrNotMAC},
	} {
		m, err := ParseMAC(c.in)
		if !errors.Is(err, c.err) || err == nil && m.String() != c.want {
			t.Errorf("ParseMAC(%q) = %v, %v; want %s, %v", c.in, m, err, c.want, c.err)
		}
	}
}

func TestColonMAC(t *testing.T) {
	for in, want := range map[string]string{
		"0a:58:0a:10:00:05": "0a:58:0a:10:00:05",
		"0A:58:0A:10:00:FF": "0a:58:0a:10:00:ff",
		"00:00:00:00:00:00": "",
		"0a-58-0a-10-00-05": "",
		"0a:58:0a:10:00:0g": "",
		"10.16.0.5":         "",
	} {
		m, ok := ColonMAC(in)
		if got := ""; ok {
			got = m.String()
			if got != want {
				t.Errorf("ColonMAC(%q) = %s, want %q", in, got, want)
			}
		} else if want != "" {
			t.Errorf("ColonMAC(%q) failed, want %s", in, want)
		}
	}
}

// TestDerivedMACs: the MAC of an IPv4 address is 0a:58 and its bytes, as
// ovn-kubernetes and kube-ovn derive it; a name's MAC is the same on every
// call, unicast and locally administered, and another attempt gives
// another.
func TestDerivedMACs(t *testing.T) {
	if got := FromIPv4(netip.MustParseAddr("10.16.0.5")).String(); got != "0a:58:0a:10:00:05" {
		t.Errorf("FromIPv4(10.16.0.5) = %s", got)
	}
	a, b := FromName("web.default", 0), FromName("web.default", 0)
	if a != b || a>>32 != 0x0a58 {
		t.Errorf("FromName: %s then %s, want one 0a:58:... MAC", a, b)
	}
	if FromName("web.default", 1) == a || FromName("web-0.default", 0) == a {
		t.Errorf("FromName: another attempt or name gave the same MAC %s", a)
	}
}

func TestParseLSP(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, "00:00:00:00:00:00 invalid IP invalid IP"},
		{[]string{"0a:58:0a:10:00:05 10.16.0.5 fd00:10:16::5"}, "0a:58:0a:10:00:05 10.16.0.5 fd00:10:16::5"},
		// Only the first entry; words that are not addresses skipped; the
		// first of each family kept; IPv4-mapped addresses read as IPv4.
		{[]string{"router  0a:58:0a:10:00:05  ::ffff:10.16.0.7 10.16.0.8", "0a:58:0a:10:00:09 10.16.0.9"}, "0a:58:0a:10:00:05 10.16.0.7 invalid IP"},
		{[]string{"dynamic"}, "00:00:00:00:00:00 invalid IP invalid IP"},
		{[]string{"unknown"}, "00:00:00:00:00:00 invalid IP invalid IP"},
	} {
		r := ParseLSP(c.in)
		if got := r.MAC.String() + " " + r.IP[CompIPv4].String() + " " + r.IP[CompIPv6].String(); got != c.want {
			t.Errorf("ParseLSP(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := appendWords(nil, " a  b c "); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("appendWords = %q", got)
	}
}

// TestKeys: a key names its address and back, for every word an LSP
// lists; keys order as their addresses do, by component first.
func TestKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a netip.Addr
		if rapid.Bool().Draw(t, "v4") {
			a = netip.AddrFrom4([4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "ip")))
		} else {
			a = netip.AddrFrom16([16]byte(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "ip"))).Unmap()
		}
		k, ok := WordKey(a.String())
		if got, _ := k.Addr(); !ok || got != a || k != IPKey(a) {
			t.Fatalf("WordKey(%s) = %v, %v: names %s", a, k, ok, got)
		}
		if hi, lo := Words(a); FromWords(a.Is4(), hi, lo) != a {
			t.Fatalf("FromWords(Words(%s)) = %s", a, FromWords(a.Is4(), hi, lo))
		}
		m := MAC(rapid.Uint64Range(1, 1<<48-1).Draw(t, "mac")) &^ (1 << 40) // unicast
		if m == 0 {
			m = 2
		}
		mk, ok := WordKey(m.String())
		if _, got := mk.Addr(); !ok || got != m || mk != MACKey(m) {
			t.Fatalf("WordKey(%s) = %v, %v: names %s", m, mk, ok, got)
		}
		b := netip.AddrFrom4([4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "other")))
		if a.Is4() && IPKey(a).Compare(IPKey(b)) != a.Compare(b) {
			t.Fatalf("IPKey(%s).Compare(IPKey(%s)) != %d", a, b, a.Compare(b))
		}
		if IPKey(a).Compare(mk) >= 0 {
			t.Fatalf("%s's key does not sort before a MAC's", a)
		}
	})
	for _, w := range []string{"dynamic", "router", "unknown", "10.16.0.300"} {
		if _, ok := WordKey(w); ok {
			t.Errorf("WordKey(%q) is a key", w)
		}
	}
}

// TestWindow: a window covers the bottom of its subnet, says what it
// holds there and nothing elsewhere, and NextFree skips what it holds.
func TestWindow(t *testing.T) {
	p := netip.MustParsePrefix("10.16.0.0/16")
	w := NewWindow(p, CompIPv4, 10)
	at := func(i int) netip.Addr { return FromWords(true, 0, 0x0a100000+uint64(i)) }
	for i := range 70 {
		w.Set(IPKey(at(i)))
	}
	w.Clear(IPKey(at(66)))
	for _, c := range []struct {
		from, want int
	}{{0, 66}, {66, 66}, {67, 70}, {100, 100}} {
		if got := w.NextFree(at(c.from)); got != at(c.want) {
			t.Errorf("NextFree(%s) = %s, want %s", at(c.from), got, at(c.want))
		}
	}
	if held, known := w.Held(IPKey(at(5))); !held || !known {
		t.Errorf("Held(%s) = %v, %v", at(5), held, known)
	}
	out := IPKey(netip.MustParseAddr("10.17.0.1"))
	if held, known := w.Held(out); held || known || w.Covers(netip.MustParseAddr("10.17.0.1")) {
		t.Errorf("a window of %s knows %v", p, out)
	}
	if (*Window)(nil).Covers(at(0)) {
		t.Error("a nil window covers an address")
	}
	// A /30 has four addresses: its window is one word, not the 4,000
	// asked for.
	small := NewWindow(netip.MustParsePrefix("10.16.0.0/30"), CompIPv4, 1000)
	if small.Covers(at(64)) || !small.Covers(at(3)) {
		t.Error("a window of a /30 is not one word")
	}
	// A MAC window covers the MACs derived from the subnet's addresses.
	mw := NewWindow(p, CompMAC, 10)
	mw.Set(MACKey(FromIPv4(at(3))))
	if held, known := mw.Held(MACKey(FromIPv4(at(3)))); !held || !known || w.Comp() != CompIPv4 || mw.Comp() != CompMAC {
		t.Errorf("MAC window: Held(%s) = %v, %v", FromIPv4(at(3)), held, known)
	}
}
