package dataplane

import (
	"context"
	"net/netip"
	"testing"

	"github.com/ovn-sync/ovn-sync/desired"
)

// TestDataPlaneQuietLogs: on a NAD network without a gateway and on a
// kube-ovn Subnet, the rows ovn-sync writes carry traffic between two
// nodes, and northd and ovn-controller log no warning about any of them.
// northd reserves a switch's first address whatever exclude_ips says and
// warns "Duplicate IP set" about a port on it: on the network without a
// gateway, no port is given it.
func TestDataPlaneQuietLogs(t *testing.T) {
	e := Start(t)
	a := e.AddChassis("node-a", "node-a", "172.31.254.1")
	b := e.AddChassis("node-b", "node-b", "172.31.254.2")
	e.Link(a, b)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	applyManifest(ctx, t, e, cfg, "testdata/quiet.yaml")

	green := netip.MustParsePrefix("192.168.60.0/24")
	purple := netip.MustParsePrefix("10.66.0.0/24")
	plug := func(c *Chassis, guest, port string, subnet netip.Prefix) (*Guest, netip.Addr) {
		t.Helper()
		lsp, err := e.LSP(port)
		if err != nil {
			t.Fatal(err)
		}
		if len(lsp.Addresses) != 1 {
			t.Fatalf("%s: addresses %q: want one entry", port, lsp.Addresses)
		}
		mac, ips, err := ParseAddresses(lsp.Addresses[0])
		if err != nil || len(ips) != 1 || !subnet.Contains(ips[0]) {
			t.Fatalf("%s: addresses %q (%v): want one address of %s", port, lsp.Addresses[0], err, subnet)
		}
		g := e.AddGuest(guest)
		i := c.Plug(g, "eth0", port, mac, []netip.Prefix{netip.PrefixFrom(ips[0], subnet.Bits())})
		waitBound(t, e, i)
		return g, ips[0]
	}
	c, cIP := plug(a, "qc", "pod-c.dp.green.dp.ovn", green)
	d, dIP := plug(b, "qd", "pod-d.dp.green.dp.ovn", green)
	f1, eIP := plug(a, "qe", "pod-e.dpsub", purple)
	f2, fIP := plug(b, "qf", "pod-f.dpsub", purple)
	for _, ip := range []netip.Addr{cIP, dIP} {
		if ip == green.Addr().Next() {
			t.Errorf("a port on %s, the first address of a switch without a gateway, which northd reserves", ip)
		}
	}
	c.WaitPing(netip.Addr{}, dIP)
	d.WaitPing(netip.Addr{}, cIP)
	f1.WaitPing(netip.Addr{}, fIP)
	f2.WaitPing(netip.Addr{}, eIP)

	// northd has read every row: its last change is bound in the SB.
	for _, l := range e.Problems() {
		t.Errorf("log: %s", l)
	}
}
