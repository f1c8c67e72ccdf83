package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DHCPClient is the program DHCPv4 runs: busybox's udhcpc (Debian's
// busybox package).
const DHCPClient = "busybox"

// ErrNoDHCPClient is returned by DHCPv4 when DHCPClient is not installed.
var ErrNoDHCPClient = errors.New(DHCPClient + " not found on PATH: install Debian's busybox for udhcpc")

// Lease is what a DHCPv4 server acknowledged: the address with its prefix
// length, and the options udhcpc hands its script ("" when absent).
type Lease struct {
	Addr                    netip.Prefix
	Router, ServerID, Lease string
	DNS, MTU, Subnet        string
}

// udhcpcScript is what udhcpc runs on its events; on "bound" it prints the
// lease and changes nothing in the guest.
const udhcpcScript = `#!/bin/sh
[ "$1" = bound ] || exit 0
echo "lease ip=$ip mask=$mask router=$router serverid=$serverid lease=$lease dns=$dns mtu=$mtu subnet=$subnet"
`

// DHCPv4 asks for an address on the interface from the guest, as a VM's
// DHCP client does at boot: udhcpc broadcasts DISCOVER from 0.0.0.0 and
// takes the first offer (up to 10 tries a second apart), then exits. It
// returns what was acknowledged; the interface's addresses stay as they
// are.
func (i *Iface) DHCPv4(ctx context.Context) (Lease, error) {
	if _, err := exec.LookPath(DHCPClient); err != nil {
		return Lease{}, ErrNoDHCPClient
	}
	e := i.Chassis.env
	script := filepath.Join(e.Dir, "udhcpc.sh")
	if _, err := os.Stat(script); err != nil {
		if err := os.WriteFile(script, []byte(udhcpcScript), 0o755); err != nil {
			return Lease{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", i.Guest.NS, DHCPClient, "udhcpc",
		"-i", i.Name, "-f", "-q", "-n", "-t", "10", "-T", "1", "-s", script, "-O", "mtu").CombinedOutput()
	if err != nil {
		return Lease{}, fmt.Errorf("udhcpc on %s (%s): %w: %s", i.Name, i.Port, err, strings.TrimSpace(string(out)))
	}
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, "lease ")
		if !ok {
			continue
		}
		kv := map[string]string{}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		bits, err := strconv.Atoi(kv["mask"])
		if err != nil {
			return Lease{}, fmt.Errorf("udhcpc on %s: mask %q: %w", i.Name, kv["mask"], err)
		}
		a, err := netip.ParseAddr(kv["ip"])
		if err != nil {
			return Lease{}, fmt.Errorf("udhcpc on %s: ip %q: %w", i.Name, kv["ip"], err)
		}
		return Lease{Addr: netip.PrefixFrom(a, bits), Router: kv["router"], ServerID: kv["serverid"], Lease: kv["lease"],
			DNS: kv["dns"], MTU: kv["mtu"], Subnet: kv["subnet"]}, nil
	}
	return Lease{}, fmt.Errorf("udhcpc on %s (%s): no lease: %s", i.Name, i.Port, strings.TrimSpace(string(out)))
}

// DHCPv6Client is the program DHCPv6 runs: ISC's dhclient (Debian's
// isc-dhcp-client); busybox has no DHCPv6 client.
const DHCPv6Client = "dhclient"

// ErrNoDHCPv6Client is returned by DHCPv6 when DHCPv6Client is not installed.
var ErrNoDHCPv6Client = errors.New(DHCPv6Client + " not found on PATH: install Debian's isc-dhcp-client")

// dhclientScript is what dhclient runs on its events; once bound it writes
// the lease to the file $LEASE_OUT names and changes nothing in the guest.
const dhclientScript = `#!/bin/sh
case "$reason" in BOUND6|RENEW6|REBIND6|REBOOT6)
  echo "ip=$new_ip6_address prefixlen=$new_ip6_prefixlen serverid=$new_dhcp6_server_id dns=$new_dhcp6_name_servers" >"$LEASE_OUT.tmp" &&
    mv "$LEASE_OUT.tmp" "$LEASE_OUT";;
esac
exit 0
`

// Lease6 is what a DHCPv6 server acknowledged: the address (IA_NA) with
// the prefix length dhclient gives it, the server's DUID and the DNS
// servers.
type Lease6 struct {
	Addr          netip.Addr
	PrefixLen     string
	ServerID, DNS string
}

// DHCPv6 asks for an address on the interface by stateful DHCPv6 from the
// guest, as a VM's DHCPv6 client does: dhclient solicits from the
// interface's link-local address and, once an address is acknowledged, is
// stopped. It returns what was acknowledged; the interface's addresses stay
// as they are.
func (i *Iface) DHCPv6(ctx context.Context) (Lease6, error) {
	if _, err := exec.LookPath(DHCPv6Client); err != nil {
		return Lease6{}, ErrNoDHCPv6Client
	}
	e := i.Chassis.env
	script := filepath.Join(e.Dir, "dhclient.sh")
	if _, err := os.Stat(script); err != nil {
		if err := os.WriteFile(script, []byte(dhclientScript), 0o755); err != nil {
			return Lease6{}, err
		}
	}
	base := filepath.Join(e.Dir, "dhcp6-"+i.Guest.Name+"-"+i.Name)
	out := base + ".out"
	_ = os.Remove(out)
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", i.Guest.NS, DHCPv6Client, "-6", "-d", "-1",
		"-sf", script, "-lf", base+".leases", "-pf", base+".pid", "-e", "LEASE_OUT="+out, i.Name)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return Lease6{}, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var line []byte
	for {
		var err error
		if line, err = os.ReadFile(out); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return Lease6{}, fmt.Errorf("dhclient -6 on %s (%s): no lease within %s: %s", i.Name, i.Port, Wait, strings.TrimSpace(log.String()))
		case <-time.After(PollInterval):
		}
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(string(line)) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	a, err := netip.ParseAddr(kv["ip"])
	if err != nil {
		return Lease6{}, fmt.Errorf("dhclient -6 on %s: ip %q: %w", i.Name, kv["ip"], err)
	}
	return Lease6{Addr: a, PrefixLen: kv["prefixlen"], ServerID: kv["serverid"], DNS: kv["dns"]}, nil
}
