package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Chassis is one node: an Open_vSwitch database, ovs-vswitchd with br-int
// on the userspace datapath, and ovn-controller, all in the namespace NS.
type Chassis struct {
	env *Env
	// Name is the SB chassis name (Open_vSwitch external_ids:system-id) and
	// Hostname its hostname; requested-chassis matches either.
	Name, Hostname string
	NS             string
	// EncapIP is the geneve tunnel endpoint, on br-phy.
	EncapIP string
	db, ctl string
	ports   int
}

// AddChassis starts a chassis named name, with hostname host, whose tunnel
// endpoint is encapIP (an address of 172.31.254.0/24, one per chassis).
func (e *Env) AddChassis(name, host, encapIP string) *Chassis {
	e.t.Helper()
	short := fmt.Sprintf("ch%d", len(e.chassis))
	c := &Chassis{env: e, Name: name, Hostname: host, NS: e.AddNetns(short), EncapIP: encapIP,
		db: e.path(short + "-ovs.sock"), ctl: e.path(short + "-vswitchd.ctl")}
	e.chassis = append(e.chassis, c)
	conf := e.path(short + "-conf.db")
	e.Cmd("ovsdb-tool", "create", conf, vswitchSchema)
	e.run(&daemon{name: "ovsdb-server " + short, log: e.path(short + "-ovsdb.log")}, nil, "ovsdb-server", conf,
		"--no-chdir", "-vconsole:off", "--unixctl="+e.path(short+"-ovsdb.ctl"),
		"--log-file="+e.path(short+"-ovsdb.log"), "--remote=punix:"+c.db)
	e.waitFor("ovsdb-server "+c.db, func() error { _, err := os.Stat(c.db); return err })
	c.Vsctl("--no-wait", "init")
	rundir := e.path(short + "-run")
	if err := os.Mkdir(rundir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	env := []string{"OVS_RUNDIR=" + rundir, "OVN_RUNDIR=" + rundir}
	e.run(&daemon{name: "ovs-vswitchd " + short, log: e.path(short + "-vswitchd.log"),
		// --cleanup removes the bridges' devices and datapath.
		stop: func() { _, _ = e.TryCmd("ovs-appctl", "--timeout=5", "-t", c.ctl, "exit", "--cleanup") }},
		env, "ip", "netns", "exec", c.NS, "ovs-vswitchd", "unix:"+c.db, "--no-chdir", "-vconsole:off",
		"--unixctl="+c.ctl, "--log-file="+e.path(short+"-vswitchd.log"))
	c.Vsctl("add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail-mode=secure",
		"other-config:disable-in-band=true")
	c.Vsctl("add-br", "br-phy", "--", "set", "Bridge", "br-phy", "datapath_type=netdev", "fail-mode=standalone")
	e.Cmd("ip", "-n", c.NS, "addr", "add", encapIP+"/24", "dev", "br-phy")
	e.Cmd("ip", "-n", c.NS, "link", "set", "br-phy", "up")
	c.Vsctl("set", "Open_vSwitch", ".", "external_ids:system-id="+name, "external_ids:hostname="+host,
		"external_ids:ovn-remote="+e.SB, "external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip="+encapIP, "external_ids:ovn-bridge=br-int")
	e.run(&daemon{name: "ovn-controller " + name, log: e.path(short + "-controller.log")},
		env, "ip", "netns", "exec", c.NS, "ovn-controller", "unix:"+c.db, "--no-chdir", "-vconsole:off",
		"--log-file="+e.path(short+"-controller.log"))
	e.waitFor("chassis "+name+" in the SB", func() error {
		if out, _ := e.TryCmd("ovn-sbctl", "--db="+e.SB, "--bare", "--columns=name", "find", "Chassis", "name="+name); out != name {
			return fmt.Errorf("not registered")
		}
		return nil
	})
	return c
}

// Vsctl runs ovs-vsctl on the chassis's database.
func (c *Chassis) Vsctl(args ...string) string {
	c.env.t.Helper()
	return c.env.Cmd("ovs-vsctl", append([]string{"--db=unix:" + c.db, "--timeout=60"}, args...)...)
}

// Link joins the two chassis's br-phy with a veth pair, so that geneve
// flows between their encap IPs.
func (e *Env) Link(a, b *Chassis) {
	e.t.Helper()
	e.Cmd("ip", "-n", a.NS, "link", "add", "phy0", "type", "veth", "peer", "name", "phy0", "netns", b.NS)
	for _, c := range []*Chassis{a, b} {
		e.Cmd("ip", "-n", c.NS, "link", "set", "phy0", "up")
		c.Vsctl("add-port", "br-phy", "phy0")
	}
	for _, p := range [][2]*Chassis{{a, b}, {b, a}} {
		mac := e.Cmd("ip", "netns", "exec", p[1].NS, "cat", "/sys/class/net/br-phy/address")
		e.Cmd("ovs-appctl", "-t", p[0].ctl, "tnl/neigh/set", "br-phy", p[1].EncapIP, mac)
	}
}

// Guest is a network namespace standing for a pod or a VM on a node.
type Guest struct {
	env  *Env
	Name string
	NS   string
}

// AddGuest creates a guest's namespace.
func (e *Env) AddGuest(name string) *Guest {
	e.t.Helper()
	g := &Guest{env: e, Name: name, NS: e.AddNetns(name)}
	// Neither router solicitations nor duplicate address detection: the
	// test's addresses are usable at once.
	e.Cmd("ip", "netns", "exec", g.NS, "sysctl", "-q", "-w", "net.ipv6.conf.all.accept_dad=0",
		"net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.default.router_solicitations=0")
	return g
}

// Iface is an interface of a guest plugged into a chassis's br-int.
type Iface struct {
	Guest   *Guest
	Chassis *Chassis
	// Name is the interface in the guest; Host the veth end on br-int.
	Name, Host string
	Port       string
	MAC        net.HardwareAddr
	Addrs      []netip.Prefix
}

// Plug gives guest g an interface ifname with mac and addrs, whose other
// end is on c's br-int with external_ids:iface-id=port, as a CNI does.
func (c *Chassis) Plug(g *Guest, ifname, port string, mac net.HardwareAddr, addrs []netip.Prefix) *Iface {
	e := c.env
	e.t.Helper()
	c.ports++
	i := &Iface{Guest: g, Chassis: c, Name: ifname, Host: fmt.Sprintf("vp%d", c.ports), Port: port, MAC: mac, Addrs: addrs}
	e.Cmd("ip", "-n", c.NS, "link", "add", i.Host, "type", "veth", "peer", "name", ifname, "netns", g.NS)
	e.Cmd("ip", "-n", g.NS, "link", "set", ifname, "address", mac.String())
	e.Cmd("ip", "netns", "exec", g.NS, "sysctl", "-q", "-w", "net.ipv6.conf."+ifname+".accept_dad=0")
	for _, a := range addrs {
		args := []string{"-n", g.NS, "addr", "add", a.String(), "dev", ifname}
		if a.Addr().Is6() {
			args = append(args, "nodad")
		}
		e.Cmd("ip", args...)
	}
	e.Cmd("ip", "-n", g.NS, "link", "set", ifname, "up")
	e.Cmd("ip", "-n", c.NS, "link", "set", i.Host, "up")
	c.Vsctl("add-port", "br-int", i.Host, "--", "set", "Interface", i.Host, "external_ids:iface-id="+port)
	return i
}

// Unplug removes the interface, as a CNI does when the pod goes.
func (i *Iface) Unplug() {
	e := i.Chassis.env
	e.t.Helper()
	i.Chassis.Vsctl("del-port", "br-int", i.Host)
	e.Cmd("ip", "-n", i.Chassis.NS, "link", "delete", i.Host)
}

// Installed reports an error unless ovn-controller has installed the
// port's flows (the Interface's external_ids:ovn-installed).
func (i *Iface) Installed() error {
	out, err := i.Chassis.env.TryCmd("ovs-vsctl", "--db=unix:"+i.Chassis.db, "--timeout=10", "--if-exists",
		"get", "Interface", i.Host, "external_ids:ovn-installed")
	if err != nil {
		return err
	}
	if strings.Trim(out, `"`) != "true" {
		return fmt.Errorf("%s on %s: ovn-installed is %q", i.Port, i.Chassis.Name, out)
	}
	return nil
}

// AddAddr adds an address to the interface that its port does not hold:
// a spoofed source.
func (i *Iface) AddAddr(a netip.Prefix) {
	args := []string{"-n", i.Guest.NS, "addr", "add", a.String(), "dev", i.Name}
	if a.Addr().Is6() {
		args = append(args, "nodad")
	}
	i.Chassis.env.Cmd("ip", args...)
}

// DelAddr removes an address AddAddr added.
func (i *Iface) DelAddr(a netip.Prefix) {
	i.Chassis.env.Cmd("ip", "-n", i.Guest.NS, "addr", "del", a.String(), "dev", i.Name)
}

// Ping sends one echo request from the guest to dst, from src when valid,
// and reports an error unless a reply came within a second.
func (g *Guest) Ping(src, dst netip.Addr) error {
	args := []string{"netns", "exec", g.NS, "ping", "-n", "-q", "-c", "1", "-W", "1"}
	if src.IsValid() {
		args = append(args, "-I", src.String())
	}
	_, err := g.env.TryCmd("ip", append(args, dst.String())...)
	return err
}

// WaitPing pings dst from g until a reply comes, failing the test after
// Wait; it returns how long that took.
func (g *Guest) WaitPing(src, dst netip.Addr) time.Duration {
	g.env.t.Helper()
	return g.env.waitFor(fmt.Sprintf("ping %s from %s", dst, g.Name), func() error { return g.Ping(src, dst) })
}

// SendRARP sends from the interface the broadcast RARP request QEMU sends
// for each of a VM's NICs when a migration completes: what activates the
// destination chassis of a port with activation-strategy=rarp.
func (i *Iface) SendRARP() error {
	frame := make([]byte, 60)
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], i.MAC)
	frame[12], frame[13] = 0x80, 0x35 // ETH_P_RARP
	copy(frame[14:22], []byte{0, 1, 0x08, 0, 6, 4, 0, 3})
	copy(frame[22:28], i.MAC) // sender hardware address; sender IP 0
	copy(frame[32:38], i.MAC) // target hardware address; target IP 0
	return inNetns(i.Guest.NS, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifi, err := net.InterfaceByName(i.Name)
		if err != nil {
			return err
		}
		addr := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(addr.Addr[:], frame[0:6])
		return unix.Sendto(fd, frame, 0, addr)
	})
}

// CaptureUnicast starts counting the frames the interface receives
// addressed to its own MAC (unicast to the guest; broadcast and multicast,
// such as ARP and neighbour solicitations flooded on the switch, are not
// counted). stop ends the capture and describes each frame counted.
func (i *Iface) CaptureUnicast() (stop func() []string, err error) {
	var fd int
	err = inNetns(i.Guest.NS, func() error {
		ifi, err := net.InterfaceByName(i.Name)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A read returns at least every 100ms, so that stop is seen.
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	var (
		done   = make(chan struct{})
		ended  = make(chan []string)
		frames []string
	)
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 2048)
		for {
			select {
			case <-done:
				ended <- frames
				return
			default:
			}
			n, from, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || n < 14 {
				continue
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_HOST {
				frames = append(frames, fmt.Sprintf("from %s ethertype %#04x, %d bytes", net.HardwareAddr(buf[6:12]), int(buf[12])<<8|int(buf[13]), n))
			}
		}
	}()
	return func() []string { close(done); return <-ended }, nil
}

// htons is v in network byte order, as AF_PACKET wants its protocol.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// inNetns runs f on a thread in the named network namespace.
func inNetns(ns string, f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, and so ends with this goroutine rather
		// than run others in the guest's namespace.
		return fmt.Errorf("back from %s: %w", ns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}
