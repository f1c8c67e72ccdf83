package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
)

// wipeCluster creates owners in namespace wipe: pods (every third on the
// NAD), running VMs (VM, VMI and launcher pod), stopped VMs on the default
// network and the NAD, and one VM in mid-migration.
type wipeCluster struct {
	t *testing.T
	k *kubetest.Server
}

var gvrPod = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func wipePod(name, node, ann string) string {
	return fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {name: %s, namespace: wipe, annotations: {%s}},
  spec: {nodeName: %s, containers: [{name: c, image: pause}]}}`, name, ann, node)
}

// vm creates VM name on NAD l2; a running one with its instance and
// launcher pod, and a second launcher pod and the instance's migration
// state for a VM named migrating-*. It returns the error of the first
// write that failed: it is called from many goroutines.
func (c wipeCluster) vm(name string, running bool) error {
	strategy := "Halted"
	if running {
		strategy = "Always"
	}
	vm, err := c.k.TryCreate(sources.GVRVirtualMachine, vmManifest("wipe", name, strategy, "l2", "l2"))
	if err != nil || !running {
		return err
	}
	vmi, err := c.k.TryCreate(sources.GVRVirtualMachineInstance, vmiManifest(vm))
	if err != nil {
		return err
	}
	node := "node-" + fmt.Sprint(len(name)%3)
	if err := setStatus(c.k, sources.GVRVirtualMachineInstance, "wipe", name, fmt.Sprintf(`{"status":{"phase":"Running","nodeName":%q}}`, node)); err != nil {
		return err
	}
	launcher := func(pod, node string) error {
		_, err := c.k.Kube.CoreV1().Pods("wipe").Create(context.Background(), looptest.LauncherOf(vmi, pod, node), metav1.CreateOptions{})
		return err
	}
	if err := launcher("virt-launcher-"+name+"-a", node); err != nil {
		return err
	}
	if strings.HasPrefix(name, "migrating") {
		// A live migration: the target's launcher pod on another node, and
		// the VMI's migration state.
		if err := launcher("virt-launcher-"+name+"-b", "node-9"); err != nil {
			return err
		}
		ms := fmt.Sprintf(`{"status":{"migrationState":{"sourceNode":%q,"targetNode":"node-9","migrationUid":"m1"}}}`, node)
		err = setStatus(c.k, sources.GVRVirtualMachineInstance, "wipe", name, ms)
	}
	return err
}

// owners creates owners [from, to): the kind of each follows its index.
func (c wipeCluster) owners(from, to int) {
	c.t.Helper()
	concurrently(c.t, from, to, func(i int) error {
		switch {
		case i == 0:
			return c.vm("migrating-0", true)
		case i%5 == 1:
			return c.vm(fmt.Sprintf("running-%04d", i), true)
		case i%5 == 2:
			return c.vm(fmt.Sprintf("stopped-%04d", i), false)
		}
		ann := ""
		if i%3 == 0 {
			ann = "k8s.v1.cni.cncf.io/networks: l2"
		}
		_, err := c.k.TryCreate(gvrPod, wipePod(fmt.Sprintf("pod-%04d", i), fmt.Sprintf("node-%d", i%3), ann))
		return err
	})
}

// ownerPorts is how many ports owner i of wipeCluster.owners has.
func ownerPorts(i int) int {
	if i == 0 || i%5 == 1 || i%5 == 2 || i%3 == 0 {
		return 2 // a VM, or a pod on l2
	}
	return 1
}

func sumPorts(from, to, step int) int {
	n := 0
	for i := from; i < to; i += step {
		n += ownerPorts(i)
	}
	return n
}

// wipeAddresses is every port of ours in namespace wipe and its addresses.
func wipeAddresses(nb *observed.NB) map[string]string {
	out := map[string]string{}
	for _, p := range nb.State().Ports.All() {
		if p.Owned() && strings.Contains(p.Owner, "/wipe/") && len(p.Addresses) > 0 {
			out[p.Name] = p.Addresses[0]
		}
	}
	return out
}

// published reports the first owner whose published record (VM
// annotations, pod annotations) does not match its default-network port.
func published(k *kubetest.Server, ports map[string]string) error {
	ctx := context.Background()
	vms, err := k.Dynamic.Resource(sources.GVRVirtualMachine).Namespace("wipe").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	check := func(kind, name string, ann map[string]string) error {
		addrs := strings.Fields(ports[name+".wipe"])
		if len(addrs) < 2 {
			return fmt.Errorf("%s %s: no port", kind, name)
		}
		if ann["ovn.kubernetes.io/ip_address"] != addrs[1] || ann["ovn.kubernetes.io/mac_address"] != addrs[0] {
			return fmt.Errorf("%s %s: published %q %q, port holds %q", kind, name,
				ann["ovn.kubernetes.io/ip_address"], ann["ovn.kubernetes.io/mac_address"], ports[name+".wipe"])
		}
		return nil
	}
	for _, vm := range vms.Items {
		if err := check("VirtualMachine", vm.GetName(), vm.GetAnnotations()); err != nil {
			return err
		}
	}
	pods, err := k.Kube.CoreV1().Pods("wipe").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "pod-") {
			continue
		}
		if err := check("Pod", p.Name, p.Annotations); err != nil {
			return err
		}
	}
	return nil
}

// sameAddresses reports the first port whose addresses differ from want,
// or that is missing, as a new client of the NB at addr sees them: a
// client that was connected across a wipe may not have caught up yet.
func sameAddresses(addr string, want map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{addr}})
	if err != nil {
		return err
	}
	defer nb.Close()
	got := wipeAddresses(nb)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got[name] != want[name] {
			return fmt.Errorf("port %s holds %q, want %q (%d of %d ports)", name, got[name], want[name], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d ports, want %d", len(got), len(want))
	}
	return nil
}

// TestRunNBWipe is the durable record end to end: 1,000 owners (pods,
// running VMs, stopped VMs on a NAD, a VM in migration) converge under
// "ovn-sync run" and their addresses are published on the pods and VMs.
// A backup of the NB is taken, and 50 pods go, leaving holes in the
// addresses. The NB is then wiped — stopped, its database recreated empty,
// started — and run mode converges with every IP and MAC as before (a
// fresh allocation would close the holes). Then 100 owners come, taking
// freed addresses, and the NB is restored from the backup: again every
// owner converges on its own addresses, the restored ports of the pods
// that are gone are deleted, and no address is held twice.
func TestRunNBWipe(t *testing.T) {
	e := startEnv(t, envOptions{RBAC: deployRBAC, Namespaces: []string{"wipe"}})
	k, nbs, nb := e.k, e.nbs, e.nb
	ctx := context.Background()
	c := wipeCluster{t: t, k: k}
	k.Create(sources.GVRNetworkAttachmentDefinition, `
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: wipe}
spec:
  config: '{"cniVersion":"0.4.0","name":"l2","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.0.0/20","netAttachDefName":"wipe/l2"}'
`)
	start := time.Now()
	c.owners(0, 1000)
	t.Logf("1000 owners created in %s", time.Since(start).Round(time.Millisecond))

	run := e.run("--leader-elect=false", "--allow-mass-delete",
		"--default-subnets", "10.16.0.0/16", "--kube-api-qps", "500", "--kube-api-burst", "1000", "-v", "0")
	ports := sumPorts(0, 1000, 1)
	looptest.WaitFor(t, 120*time.Second, "every owner's ports", func() error {
		if n := len(wipeAddresses(nb)); n != ports {
			return fmt.Errorf("%d ports, want %d", n, ports)
		}
		return nil
	})
	all := wipeAddresses(nb)
	looptest.WaitFor(t, 120*time.Second, "addresses published", func() error { return published(k, all) })
	if p := nb.State().Ports.Get("migrating-0.wipe"); p == nil || !strings.Contains(p.RequestedChassis, ",node-9") || p.ActivationStrategy() != "rarp" {
		t.Errorf("migrating VM's port: %+v, want bound to both nodes", p)
	}
	backup := nbs.Backup()

	// 50 pods go: the addresses left are no longer the lowest a fresh
	// allocation would hand out.
	for i := 3; i < 3+5*50; i += 5 {
		if err := k.Kube.CoreV1().Pods("wipe").Delete(ctx, fmt.Sprintf("pod-%04d", i), now); err != nil {
			t.Fatal(err)
		}
	}
	ports -= sumPorts(3, 3+5*50, 5)
	looptest.WaitFor(t, 120*time.Second, "the ports of the pods that went deleted", func() error {
		if n := len(wipeAddresses(nb)); n != ports {
			return fmt.Errorf("%d ports, want %d", n, ports)
		}
		return nil
	})
	before := wipeAddresses(nb)

	// The NB is wiped.
	reconnects := run.metric("ovn_sync_nb_reconnects_total")
	start = time.Now()
	nbs.Wipe()
	waitReconnect := func() {
		looptest.WaitFor(t, 60*time.Second, "ovn-sync reconnected", func() error {
			if n := run.metric("ovn_sync_nb_reconnects_total"); n <= reconnects {
				return fmt.Errorf("%v reconnects", n)
			}
			return nil
		})
		reconnects = run.metric("ovn_sync_nb_reconnects_total")
	}
	waitReconnect()
	looptest.WaitFor(t, 120*time.Second, "converged after the wipe", func() error { return sameAddresses(nbs.Addr(), before) })
	t.Logf("after the wipe: every IP and MAC back in %s", time.Since(start).Round(time.Millisecond))

	// 100 owners come: new pods take the freed addresses.
	c.owners(1000, 1100)
	more := ports + sumPorts(1000, 1100, 1)
	looptest.WaitFor(t, 120*time.Second, "ports of the 100 new owners", func() error {
		if n := len(wipeAddresses(nb)); n != more {
			return fmt.Errorf("%d ports, want %d", n, more)
		}
		return nil
	})
	after := wipeAddresses(nb)
	looptest.WaitFor(t, 120*time.Second, "addresses published", func() error { return published(k, after) })
	reused := 0
	for name, a := range after {
		if _, old := before[name]; !old && slices.Contains(slices.Collect(maps.Values(all)), a) {
			reused++
		}
	}
	t.Logf("%d new ports reuse an address of a pod that went", reused)

	// The NB is restored from the backup taken before.
	start = time.Now()
	nbs.Restore(backup)
	waitReconnect()
	looptest.WaitFor(t, 120*time.Second, "converged after the restore", func() error { return sameAddresses(nbs.Addr(), after) })
	t.Logf("after the restore: every IP and MAC back in %s", time.Since(start).Round(time.Millisecond))
	nb = nbWatch(t, nbs.Addr())
	seen := map[string]string{}
	for _, p := range nb.State().Ports.All() {
		if !p.Owned() {
			continue
		}
		for _, w := range strings.Fields(p.Addresses[0]) {
			if other, ok := seen[p.Switch+" "+w]; ok {
				t.Errorf("%s held by %s and %s on %s", w, other, p.Name, p.Switch)
			}
			seen[p.Switch+" "+w] = p.Name
		}
	}
}
