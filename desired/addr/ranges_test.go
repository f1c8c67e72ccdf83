package addr

import (
	"net/netip"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

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
