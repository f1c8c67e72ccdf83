package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// The networks of testdata/cluster.yaml, and the ports of its owners.
var (
	defaultSubnets = []string{"10.16.0.0/16", "fd00:10:16::/64"}
	blueSubnets    = []string{"192.168.50.0/24", "fd00:50::/64"}
	subnets        = slices.Concat(defaultSubnets, blueSubnets)
)

// network is one of a guest's interfaces: its name in the guest and the
// suffix of its port name after "<owner>.dp".
type network struct{ ifname, suffix string }

var networks = []network{{"eth0", ""}, {"net1", ".blue.dp.ovn"}}

// What DHCP offers on each network (both have native DHCP: the config's
// defaultNetwork.dhcp, the NAD's "dhcp": true): the gateway as router and
// server_id, and the default network's dns_server.
var (
	gateways   = []string{"10.16.0.1", "192.168.50.1"}
	dnsServers = []string{"10.16.0.10", ""}
)

// guest is a pod or a VM of the test, plugged into a chassis.
type guest struct {
	*Guest
	ifaces []*Iface // one per network
}

// addrs returns the guest's addresses on network i: IPv4, IPv6.
func (g *guest) addrs(i int) []netip.Addr {
	var out []netip.Addr
	for _, p := range g.ifaces[i].Addrs {
		out = append(out, p.Addr())
	}
	return out
}

func TestDataPlane(t *testing.T) {
	e := Start(t)
	// Chassis A is named by a UUID and matched by its hostname, as in
	// clusters whose system-id is not the node name; B by its name.
	a := e.AddChassis("5b0c9f3e-8d2a-4c61-9e7b-2f4a1d6c0a01", "node-a", "172.31.254.1")
	b := e.AddChassis("node-b", "node-b", "172.31.254.2")
	e.Link(a, b)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Excluded addresses and the gateway become the default switch's
	// exclude_ips, which northd must read without a complaint.
	cfg, err := desired.NewConfig("ovn-default", defaultSubnets, []string{"10.16.0.200..10.16.0.209"})
	if err == nil {
		cfg, err = cfg.WithGateway([]string{"10.16.0.1", "fd00:10:16::1"})
	}
	if err == nil {
		cfg, err = cfg.WithDHCP("dns_server={10.16.0.10}", "")
	}
	if err != nil {
		t.Fatal(err)
	}
	nb, in, opts := applyManifest(ctx, t, e, cfg, "testdata/cluster.yaml")

	// Plug every owner where its pod runs, with what the NB holds.
	start := time.Now()
	podA := plugGuest(t, e, a, "pod-a")
	podB := plugGuest(t, e, b, "pod-b")
	vm := plugGuest(t, e, a, "vm1")
	for _, g := range []*guest{podA, podB, vm} {
		for _, i := range g.ifaces {
			waitBound(t, e, i)
		}
	}
	t.Logf("figure: 6 ports bound (SB chassis, ovn-installed, NB up) %v after plugging began", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	pingAll(t, podA, podB, vm)
	t.Logf("figure: first pings between pods and the VM on both networks and families within %v", time.Since(start).Round(time.Millisecond))
	checkDHCP(t, "the VM on node-a", vm)

	t.Run("port_security", func(t *testing.T) { checkPortSecurity(t, e, nb, in, opts, podA, podB) })
	if t.Failed() {
		return
	}

	// Run mode: the loop on the same cluster, as informers see it.
	kube, dyn, nads := looptest.Objects(t, in)
	run := looptest.Start(t, looptest.Options{KubeObjs: kube, DynObjs: dyn, NADs: nads, NBAddr: e.NB, Config: &cfg,
		Resources: append(slices.Clone(looptest.KubeVirtResources), looptest.MultusResources)})
	looptest.WaitFor(t, Wait, "run mode's first pass", func() error {
		if n := run.Metric("ovn_sync_passes_total", "result", "success"); n < 1 {
			return fmt.Errorf("%v successful passes", n)
		}
		return nil
	})
	if n := run.Metric("ovn_sync_changes_total"); n != 0 {
		t.Errorf("run mode's first pass after apply made %v changes, want 0", n)
	}
	k := &kubeCluster{t: t, ctx: ctx, run: run}

	// Stop the VM: KubeVirt deletes the VMI and its launcher pod, whose CNI
	// unplugs the interfaces.
	held := map[string]LSP{}
	for _, i := range vm.ifaces {
		if held[i.Port], err = e.LSP(i.Port); err != nil {
			t.Fatal(err)
		}
	}
	vmObj := in.VirtualMachines[0].DeepCopy()
	vmObj.Spec.RunStrategy = ptr(kubevirtv1.RunStrategyHalted)
	k.update(sources.GVRVirtualMachine, vmObj)
	k.delete(sources.GVRVirtualMachineInstance, "vm1")
	if err := run.Kube.CoreV1().Pods("dp").Delete(ctx, "virt-launcher-vm1-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range vm.ifaces {
		waitRequested(t, e, i.Port, "")
		i.Unplug()
	}
	for _, i := range vm.ifaces {
		WaitFor(t, i.Port+" unbound while the VM is stopped", func() error {
			pb, err := e.Binding(i.Port)
			if err != nil {
				return err
			}
			lsp, err := e.LSP(i.Port)
			if err != nil {
				return err
			}
			if len(pb.Chassis) > 0 || lsp.Up {
				return fmt.Errorf("chassis %v, up %v", pb.Chassis, lsp.Up)
			}
			if !slices.Equal(lsp.Addresses, held[i.Port].Addresses) || !slices.Equal(lsp.PortSecurity, held[i.Port].PortSecurity) {
				return fmt.Errorf("addresses %q, port_security %q; the VM ran with %q", lsp.Addresses, lsp.PortSecurity, held[i.Port].Addresses)
			}
			return nil
		})
	}
	e.SyncHV()
	if err := podA.Ping(netip.Addr{}, vm.addrs(0)[0]); err == nil {
		t.Errorf("the stopped VM's address %s answers", vm.addrs(0)[0])
	}

	// Start it again on node-b: a new VMI and launcher pod there.
	vmObj.Spec.RunStrategy = ptr(kubevirtv1.RunStrategyAlways)
	k.update(sources.GVRVirtualMachine, vmObj)
	vmi := in.VirtualMachineInstances[0].DeepCopy()
	vmi.UID = "0d0d0000-0000-4000-8000-0000000003f1"
	vmi.Status.NodeName = "node-b"
	k.create(sources.GVRVirtualMachineInstance, vmi)
	k.createPod(launcher("virt-launcher-vm1-2", vmi, "node-b"))
	for _, i := range vm.ifaces {
		waitRequested(t, e, i.Port, "node-b")
	}
	start = time.Now()
	vmB := plugGuest(t, e, b, "vm1")
	for n, i := range vmB.ifaces {
		if i.MAC.String() != vm.ifaces[n].MAC.String() || !slices.Equal(i.Addrs, vm.ifaces[n].Addrs) {
			t.Errorf("%s after a restart on node-b: %s %v, want %s %v", i.Port, i.MAC, i.Addrs, vm.ifaces[n].MAC, vm.ifaces[n].Addrs)
		}
		waitBound(t, e, i)
	}
	t.Logf("figure: the restarted VM's ports bound on node-b %v after plugging", time.Since(start).Round(time.Millisecond))
	pingAll(t, podA, vmB)
	checkDHCP(t, "the VM restarted on node-b", vmB)

	// Live migration from node-b to node-a.
	vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: "0d0d0000-0000-4000-8000-0000000004f1", SourceNode: "node-b", TargetNode: "node-a",
		TargetPod: "virt-launcher-vm1-3", StartTimestamp: &metav1.Time{Time: time.Now()}}
	k.update(sources.GVRVirtualMachineInstance, vmi)
	k.createPod(launcher("virt-launcher-vm1-3", vmi, "node-a"))
	// Judged by what northd makes of requested-chassis: the SB's chassis.
	for _, i := range vmB.ifaces {
		WaitFor(t, i.Port+" requested on both chassis in the SB", func() error {
			pb, err := e.Binding(i.Port)
			if err != nil {
				return err
			}
			if !slices.Equal(pb.RequestedChassis, []string{b.Name}) || !slices.Equal(pb.RequestedAdditionalChassis, []string{a.Name}) {
				return fmt.Errorf("requested_chassis %v, requested_additional_chassis %v", pb.RequestedChassis, pb.RequestedAdditionalChassis)
			}
			if pb.Options["activation-strategy"] != "rarp" {
				return fmt.Errorf("options %v", pb.Options)
			}
			return nil
		})
	}
	dst := plugGuest(t, e, a, "vm1-dst")
	for _, i := range dst.ifaces {
		WaitFor(t, i.Port+" additional chassis "+a.Name, func() error {
			pb, err := e.Binding(i.Port)
			if err != nil {
				return err
			}
			if !slices.Equal(pb.Chassis, []string{b.Name}) || !slices.Equal(pb.AdditionalChassis, []string{a.Name}) {
				return fmt.Errorf("chassis %v, additional_chassis %v", pb.Chassis, pb.AdditionalChassis)
			}
			return i.Installed()
		})
	}
	// Until it sends a RARP, the destination copy receives nothing of what
	// is sent to the VM, which the source answers, and cannot send. What
	// counts is what is addressed to the VM: frames flooded to every port
	// of the switch (ARP, neighbour solicitations) are not the VM's traffic.
	e.SyncHV()
	var stops []func() []string
	for _, i := range dst.ifaces {
		stop, err := i.CaptureUnicast()
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	for n := range networks {
		for _, addr := range vmB.addrs(n) {
			podA.WaitPing(netip.Addr{}, addr)
		}
	}
	for k, stop := range stops {
		if frames := stop(); len(frames) > 0 {
			t.Errorf("the migration's destination received on %s %d frames sent to the VM before its RARP: %s",
				dst.ifaces[k].Name, len(frames), strings.Join(frames, "; "))
		}
	}
	for n := range networks {
		if err := dst.Ping(netip.Addr{}, podA.addrs(n)[0]); err == nil {
			t.Errorf("the migration's destination reached %s before its RARP", podA.addrs(n)[0])
		}
	}
	start = time.Now()
	for _, i := range dst.ifaces {
		if err := i.SendRARP(); err != nil {
			t.Fatalf("RARP from %s: %v", i.Port, err)
		}
	}
	for _, i := range dst.ifaces {
		WaitFor(t, i.Port+" activated on "+a.Name, func() error {
			pb, err := e.Binding(i.Port)
			if err != nil {
				return err
			}
			if pb.Options["additional-chassis-activated"] != a.Name {
				return fmt.Errorf("options %v", pb.Options)
			}
			return nil
		})
	}
	activated := time.Since(start)
	dst.WaitPing(netip.Addr{}, podA.addrs(0)[0])
	t.Logf("figure: RARP to activation %v, to the destination's first ping %v", activated.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// The source stops; the VM answers from node-a, across the tunnel.
	for _, i := range vmB.ifaces {
		i.Unplug()
	}
	start = time.Now()
	for n := range networks {
		for _, addr := range dst.addrs(n) {
			podB.WaitPing(netip.Addr{}, addr)
		}
	}
	t.Logf("figure: pod-b on node-b reached the migrated VM on node-a %v after the source stopped", time.Since(start).Round(time.Millisecond))

	// The migration ends: the VMI is on node-a, the source pod is gone.
	vmi.Status.NodeName = "node-a"
	vmi.Status.MigrationState.Completed = true
	vmi.Status.MigrationState.EndTimestamp = &metav1.Time{Time: time.Now()}
	k.update(sources.GVRVirtualMachineInstance, vmi)
	if err := run.Kube.CoreV1().Pods("dp").Delete(ctx, "virt-launcher-vm1-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range dst.ifaces {
		waitRequested(t, e, i.Port, "node-a")
		WaitFor(t, i.Port+" bound on "+a.Name+" alone", func() error {
			pb, err := e.Binding(i.Port)
			if err != nil {
				return err
			}
			if !slices.Equal(pb.Chassis, []string{a.Name}) || len(pb.AdditionalChassis) > 0 ||
				!slices.Equal(pb.RequestedChassis, []string{a.Name}) || len(pb.RequestedAdditionalChassis) > 0 {
				return fmt.Errorf("chassis %v, additional_chassis %v, requested_chassis %v, requested_additional_chassis %v",
					pb.Chassis, pb.AdditionalChassis, pb.RequestedChassis, pb.RequestedAdditionalChassis)
			}
			return nil
		})
		waitBound(t, e, i)
	}
	pingAll(t, podA, podB, dst)
	checkDHCP(t, "the VM migrated to node-a", dst)

	for _, l := range e.Problems() {
		t.Errorf("log: %s", l)
	}
}

// checkPortSecurity shows that pod-a cannot send from an address its port
// does not hold, IPv4 or IPv6, until port_security is cleared by hand, and
// that a pass puts it back.
func checkPortSecurity(t *testing.T, e *Env, nb reconcile.NB, in desired.Inputs, opts reconcile.Options, from, to *guest) {
	spoofed := []netip.Prefix{netip.MustParsePrefix("10.16.0.250/32"), netip.MustParsePrefix("fd00:10:16::250/128")}
	for _, p := range spoofed {
		from.ifaces[0].AddAddr(p)
	}
	// Linux would pick the spoofed IPv6 address as the source of later
	// pings.
	defer func() {
		for _, p := range spoofed {
			from.ifaces[0].DelAddr(p)
		}
	}()
	port := from.ifaces[0].Port
	spoof := func() []error {
		var errs []error
		for n, p := range spoofed {
			errs = append(errs, from.Ping(p.Addr(), to.addrs(0)[n]))
		}
		return errs
	}
	e.SyncHV()
	for n, err := range spoof() {
		if err == nil {
			t.Errorf("%s sent from %s, which it does not hold", port, spoofed[n].Addr())
		}
	}
	// The control: without port_security the same packets pass.
	e.NBCtl("lsp-set-port-security", port)
	e.SyncHV()
	for n, p := range spoofed {
		WaitFor(t, fmt.Sprintf("%s sending from %s without port_security", port, p.Addr()), func() error {
			return from.Ping(p.Addr(), to.addrs(0)[n])
		})
	}
	out, err := reconcile.Pass(context.Background(), nb, reconcile.All(in), opts)
	if err != nil {
		t.Fatalf("Pass: %v", err)
	}
	if c := out.Plan.Counts(); c.Change != 1 {
		t.Errorf("a pass after port_security was cleared: %s", out.Plan)
	}
	e.SyncHV()
	for n, err := range spoof() {
		if err == nil {
			t.Errorf("%s sent from %s after a pass restored port_security", port, spoofed[n].Addr())
		}
	}
}

// checkDHCP asks for addresses by DHCPv4 and DHCPv6 on each of the
// guest's interfaces, as the guest of a VM with bridge binding does, and
// requires the offers to be exactly the addresses its port holds: IPv4
// with its prefix, the network's gateway as router and server and its DNS
// server; IPv6 by stateful DHCPv6. Without a DHCP client it says so and
// checks nothing with it, unless under CI.
func checkDHCP(t *testing.T, what string, g *guest) {
	t.Helper()
	for n, i := range g.ifaces {
		start := time.Now()
		lease, err := i.DHCPv4(context.Background())
		if errors.Is(err, ErrNoDHCPClient) {
			if os.Getenv("CI") != "" {
				t.Fatal(err)
			}
			t.Logf("DHCP of %s not checked: %v", what, err)
			return
		}
		if err != nil {
			t.Errorf("DHCP of %s on %s: %v", what, i.Port, err)
			continue
		}
		var want netip.Prefix
		for _, a := range i.Addrs {
			if a.Addr().Is4() {
				want = a
			}
		}
		if lease.Addr != want || lease.Router != gateways[n] || lease.ServerID != gateways[n] || lease.DNS != dnsServers[n] {
			t.Errorf("DHCP of %s on %s: offered %+v, want %s, router and server %s, dns %q", what, i.Port, lease, want, gateways[n], dnsServers[n])
			continue
		}
		t.Logf("figure: DHCP of %s on %s: %s (lease %ss) in %v", what, i.Port, lease.Addr, lease.Lease, time.Since(start).Round(time.Millisecond))

		start = time.Now()
		lease6, err := i.DHCPv6(context.Background())
		if errors.Is(err, ErrNoDHCPv6Client) {
			if os.Getenv("CI") != "" {
				t.Fatal(err)
			}
			t.Logf("DHCPv6 of %s not checked: %v", what, err)
			continue
		}
		if err != nil {
			t.Errorf("DHCPv6 of %s on %s: %v", what, i.Port, err)
			continue
		}
		var want6 netip.Addr
		for _, a := range i.Addrs {
			if a.Addr().Is6() {
				want6 = a.Addr()
			}
		}
		if lease6.Addr != want6 {
			t.Errorf("DHCPv6 of %s on %s: offered %+v, want %s", what, i.Port, lease6, want6)
			continue
		}
		t.Logf("figure: DHCPv6 of %s on %s: %s in %v", what, i.Port, lease6.Addr, time.Since(start).Round(time.Millisecond))
	}
}

// plugGuest creates a guest named name on c with an interface on each
// network, carrying the MAC and addresses the NB holds for owner's ports
// (owner is name up to "-dst").
func plugGuest(t *testing.T, e *Env, c *Chassis, name string) *guest {
	t.Helper()
	owner, _, _ := strings.Cut(name, "-dst")
	g := &guest{Guest: e.AddGuest(name + fmt.Sprint(len(e.netns)))}
	for _, n := range networks {
		port := owner + ".dp" + n.suffix
		lsp, err := e.LSP(port)
		if err != nil {
			t.Fatal(err)
		}
		// port_security is left to the data plane to judge.
		if len(lsp.Addresses) != 1 {
			t.Fatalf("%s: addresses %q: want one entry", port, lsp.Addresses)
		}
		mac, ips, err := ParseAddresses(lsp.Addresses[0])
		if err != nil {
			t.Fatal(err)
		}
		var addrs []netip.Prefix
		for _, ip := range ips {
			addrs = append(addrs, withSubnet(t, ip))
		}
		if len(addrs) != 2 {
			t.Fatalf("%s: addresses %q: want IPv4 and IPv6", port, lsp.Addresses[0])
		}
		g.ifaces = append(g.ifaces, c.Plug(g.Guest, n.ifname, port, mac, addrs))
	}
	return g
}

// withSubnet returns ip with the length of the test's subnet holding it.
func withSubnet(t *testing.T, ip netip.Addr) netip.Prefix {
	t.Helper()
	for _, s := range subnets {
		if p := netip.MustParsePrefix(s); p.Contains(ip) {
			return netip.PrefixFrom(ip, p.Bits())
		}
	}
	t.Fatalf("%s is in no subnet of the test", ip)
	return netip.Prefix{}
}

// waitBound waits until the interface's port is bound to its chassis: SB
// Port_Binding.chassis, the OVS Interface's ovn-installed, and NB up.
func waitBound(t *testing.T, e *Env, i *Iface) {
	t.Helper()
	WaitFor(t, i.Port+" bound on "+i.Chassis.Name, func() error {
		pb, err := e.Binding(i.Port)
		if err != nil {
			return err
		}
		if !slices.Equal(pb.Chassis, []string{i.Chassis.Name}) {
			return fmt.Errorf("SB chassis %v", pb.Chassis)
		}
		if err := i.Installed(); err != nil {
			return err
		}
		if lsp, err := e.LSP(i.Port); err != nil || !lsp.Up {
			return fmt.Errorf("NB up is false (%v)", err)
		}
		return nil
	})
}

// waitRequested waits until the NB port's options:requested-chassis is want.
func waitRequested(t *testing.T, e *Env, port, want string) {
	t.Helper()
	WaitFor(t, fmt.Sprintf("%s requested-chassis %q", port, want), func() error {
		lsp, err := e.LSP(port)
		if err != nil {
			return err
		}
		if lsp.RequestedChassis != want {
			return fmt.Errorf("requested-chassis %q", lsp.RequestedChassis)
		}
		return nil
	})
}

// pingAll pings, from every guest, every other guest's addresses on every
// network, until each answers.
func pingAll(t *testing.T, gs ...*guest) {
	t.Helper()
	for _, from := range gs {
		for _, to := range gs {
			if from == to {
				continue
			}
			for n := range networks {
				for _, addr := range to.addrs(n) {
					from.WaitPing(netip.Addr{}, addr)
				}
			}
		}
	}
}

// kubeCluster changes the objects run mode's informers read.
type kubeCluster struct {
	t   *testing.T
	ctx context.Context
	run *looptest.Runner
}

func (k *kubeCluster) unstructured(obj runtime.Object) *unstructured.Unstructured {
	k.t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		k.t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

func (k *kubeCluster) update(gvr schema.GroupVersionResource, obj runtime.Object) {
	k.t.Helper()
	u := k.unstructured(obj)
	if _, err := k.run.Dyn.Resource(gvr).Namespace(u.GetNamespace()).Update(k.ctx, u, metav1.UpdateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

func (k *kubeCluster) create(gvr schema.GroupVersionResource, obj runtime.Object) {
	k.t.Helper()
	u := k.unstructured(obj)
	if _, err := k.run.Dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(k.ctx, u, metav1.CreateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

func (k *kubeCluster) delete(gvr schema.GroupVersionResource, name string) {
	k.t.Helper()
	if err := k.run.Dyn.Resource(gvr).Namespace("dp").Delete(k.ctx, name, metav1.DeleteOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

func (k *kubeCluster) createPod(p *corev1.Pod) {
	k.t.Helper()
	if _, err := k.run.Kube.CoreV1().Pods(p.Namespace).Create(k.ctx, p, metav1.CreateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// launcher is a running virt-launcher pod of vmi on node.
func launcher(name string, vmi *kubevirtv1.VirtualMachineInstance, node string) *corev1.Pod {
	p := looptest.LauncherOf(vmi, name, node)
	p.Status.Phase = corev1.PodRunning
	return p
}

func ptr[T any](v T) *T { return &v }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// applyManifest reads file and applies it to e's NB with cfg, as one-shot
// `ovn-sync apply` does, failing t on any Problem; it returns the NB's
// client, the inputs read and the options of the pass.
func applyManifest(ctx context.Context, t *testing.T, e *Env, cfg desired.Config, file string) (*observed.NB, desired.Inputs, reconcile.Options) {
	t.Helper()
	in, notes, err := sources.ReadManifests([]string{file})
	if err != nil || len(notes) > 0 {
		t.Fatalf("ReadManifests: %v %v", err, notes)
	}
	nb, closeNB, err := observed.Connect(ctx, observed.Address{NB: e.NB, Timeout: Wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeNB)
	opts := reconcile.Options{Config: cfg, MaxDeleteFraction: 0.5,
		Apply: apply.Options{MaxOpsPerTxn: apply.DefaultMaxOpsPerTxn, InFlight: apply.DefaultInFlight}}
	out, err := reconcile.Pass(ctx, nb, reconcile.All(in), opts)
	if err != nil {
		t.Fatalf("Pass: %v", err)
	}
	if len(out.Result.Problems) > 0 {
		t.Fatalf("Pass: problems %v", out.Result.Problems)
	}
	t.Logf("one-shot apply: %s", strings.TrimSpace(lastLine(out.Plan.String())))
	return nb, in, opts
}
