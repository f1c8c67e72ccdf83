package netconf

import (
	"net/netip"
	"testing"
)

func TestLastAddr(t *testing.T) {
	for _, tc := range []struct{ p, want string }{
		{"10.16.0.0/16", "10.16.255.255"},
		{"0.0.0.0/0", "255.255.255.255"},
		{"10.0.0.7/32", "10.0.0.7"},
		{"fd00::/64", "fd00::ffff:ffff:ffff:ffff"},
		{"fd00::/120", "fd00::ff"},
		{"::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"fd00::1/128", "fd00::1"},
	} {
		if got := lastAddr(netip.MustParsePrefix(tc.p)).String(); got != tc.want {
			t.Errorf("lastAddr(%s) = %s, want %s", tc.p, got, tc.want)
		}
	}
}
