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
