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
