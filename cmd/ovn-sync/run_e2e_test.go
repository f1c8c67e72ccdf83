package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// now deletes without a grace period: no kubelet runs to finish a graceful
// pod delete.
var now = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// concurrently calls f for every i in [from, to), 16 at a time, and fails
// t with the errors.
func concurrently(t *testing.T, from, to int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, to-from)
	sem := make(chan struct{}, 16)
	for i := from; i < to; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// portIs waits until port name satisfies check (nil port: absent).
func portIs(t *testing.T, nb *observed.NB, name, what string, check func(*state.Port) error) *state.Port {
	t.Helper()
	var p *state.Port
	looptest.WaitFor(t, 30*time.Second, fmt.Sprintf("port %s %s", name, what), func() error {
		p = nb.State().Ports.Get(name)
		return check(p)
	})
	return p
}

func present(p *state.Port) error {
	if p == nil || len(p.Addresses) == 0 {
		return fmt.Errorf("absent")
	}
	return nil
}

func chassis(rc, strategy string) func(*state.Port) error {
	return func(p *state.Port) error {
		if p == nil {
			return fmt.Errorf("absent")
		}
		if p.RequestedChassis != rc || p.ActivationStrategy() != strategy {
			return fmt.Errorf("requested-chassis %q activation-strategy %q, want %q %q", p.RequestedChassis, p.ActivationStrategy(), rc, strategy)
		}
		return nil
	}
}

func absent(p *state.Port) error {
	if p != nil {
		return fmt.Errorf("still there: %v", p.Addresses)
	}
	return nil
}

// blueNAD is the layer2 network tenant/blue, which the VMs of these tests
// attach to as their interface blue.
const blueNAD = `
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: blue, namespace: tenant}
spec:
  config: '{"cniVersion":"0.3.1","name":"blue","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/24","netAttachDefName":"tenant/blue"}'
`

// TestRunKubeVirtLifecycle is a VM's life end to end (stopped with a Multus
// network only in its template, started, migrated, stopped): a real
// kube-apiserver and etcd, a real ovsdb-server, the ovn-sync binary
// running as the service account bound by deploy/rbac.yaml.
func TestRunKubeVirtLifecycle(t *testing.T) {
	e := startEnv(t, envOptions{RBAC: deployRBAC, Namespaces: []string{"tenant"}})
	k, nbs, nb := e.k, e.nbs, e.nb
	ctx := context.Background()
	run := e.run("--leader-elect=false", "--default-subnets", "10.16.0.0/16", "--default-gateway", "10.16.0.1")
	run.waitReady()

	// A NAD and a stopped VM whose Multus network is only in its template.
	k.Create(sources.GVRNetworkAttachmentDefinition, blueNAD)
	vm := k.Create(sources.GVRVirtualMachine, vmManifest("tenant", "db", "Halted", "blue", "blue"))
	const def, blue = "db.tenant", "db.tenant.blue.tenant.ovn"
	p0 := portIs(t, nb, def, "created for the stopped VM", present)
	b0 := portIs(t, nb, blue, "created for the stopped VM", present)
	if p0.RequestedChassis != "" || p0.Owner != "VirtualMachine/tenant/db" {
		t.Errorf("stopped VM's port: chassis %q owner %q, want none and VirtualMachine/tenant/db", p0.RequestedChassis, p0.Owner)
	}
	if !strings.Contains(b0.Addresses[0], "192.168.100.") {
		t.Errorf("blue port addresses %q, want one in 192.168.100.0/24", b0.Addresses)
	}

	// Start: a VMI and its launcher pod on node-a.
	vmi := k.Create(sources.GVRVirtualMachineInstance, vmiManifest(vm))
	patchStatus(t, k, sources.GVRVirtualMachineInstance, "tenant", "db", `{"status":{"phase":"Running","nodeName":"node-a"}}`)
	pa, err := k.Kube.CoreV1().Pods("tenant").Create(ctx, looptest.LauncherOf(vmi, "virt-launcher-db-aaaaa", "node-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	portIs(t, nb, def, "bound to node-a", chassis("node-a", ""))
	portIs(t, nb, blue, "bound to node-a", chassis("node-a", ""))
	ip := strings.Fields(p0.Addresses[0])
	blueIP := strings.Fields(b0.Addresses[0])
	looptest.WaitFor(t, 30*time.Second, "launcher pod annotated with the VM's addresses", func() error {
		p, err := k.Kube.CoreV1().Pods("tenant").Get(ctx, pa.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := map[string]string{
			"ovn.kubernetes.io/allocated":                  "true",
			"ovn.kubernetes.io/ip_address":                 ip[1],
			"ovn.kubernetes.io/mac_address":                ip[0],
			"ovn.kubernetes.io/cidr":                       "10.16.0.0/16",
			"ovn.kubernetes.io/gateway":                    "10.16.0.1",
			"ovn.kubernetes.io/logical_switch":             "ovn-default",
			"blue.tenant.ovn.kubernetes.io/ip_address":     blueIP[1],
			"blue.tenant.ovn.kubernetes.io/mac_address":    blueIP[0],
			"blue.tenant.ovn.kubernetes.io/cidr":           "192.168.100.0/24",
			"blue.tenant.ovn.kubernetes.io/logical_switch": "blue.tenant",
			"ovn.kubernetes.io/routed":                     "true",
			"blue.tenant.ovn.kubernetes.io/routed":         "true",
		}
		for k, v := range want {
			if p.Annotations[k] != v {
				return fmt.Errorf("annotation %s = %q, want %q", k, p.Annotations[k], v)
			}
		}
		return nil
	})

	// Migrate: a target launcher pod on node-b and the VMI's migrationState.
	k.Create(sources.GVRVirtualMachineInstanceMigration, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata: {name: db-mig, namespace: tenant}
spec: {vmiName: db}`)
	patchStatus(t, k, sources.GVRVirtualMachineInstanceMigration, "tenant", "db-mig", `{"status":{"phase":"Running","migrationState":{"sourceNode":"node-a","targetNode":"node-b"}}}`)
	pb, err := k.Kube.CoreV1().Pods("tenant").Create(ctx, looptest.LauncherOf(vmi, "virt-launcher-db-bbbbb", "node-b"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patchStatus(t, k, sources.GVRVirtualMachineInstance, "tenant", "db", `{"status":{"migrationState":{"sourceNode":"node-a","targetNode":"node-b","sourcePod":"virt-launcher-db-aaaaa","targetPod":"virt-launcher-db-bbbbb"}}}`)
	portIs(t, nb, def, "bound to both nodes", chassis("node-a,node-b", "rarp"))
	portIs(t, nb, blue, "bound to both nodes", chassis("node-a,node-b", "rarp"))
	looptest.WaitFor(t, 30*time.Second, "target launcher pod annotated", func() error {
		p, err := k.Kube.CoreV1().Pods("tenant").Get(ctx, pb.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := p.Annotations["ovn.kubernetes.io/ip_address"]; got != ip[1] {
			return fmt.Errorf("ip_address %q, want the VM's %q", got, ip[1])
		}
		return nil
	})

	// Complete: the VMI runs on node-b; the source pod goes.
	patchStatus(t, k, sources.GVRVirtualMachineInstance, "tenant", "db", `{"status":{"nodeName":"node-b","migrationState":{"completed":true}}}`)
	patchStatus(t, k, sources.GVRVirtualMachineInstanceMigration, "tenant", "db-mig", `{"status":{"phase":"Succeeded"}}`)
	if err := k.Kube.CoreV1().Pods("tenant").Delete(ctx, pa.Name, now); err != nil {
		t.Fatal(err)
	}
	portIs(t, nb, def, "bound to node-b", chassis("node-b", ""))
	portIs(t, nb, blue, "bound to node-b", chassis("node-b", ""))

	// Stop: the VMI and its pod go; the ports stay, addresses unchanged.
	if err := k.Dynamic.Resource(sources.GVRVirtualMachineInstance).Namespace("tenant").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.Kube.CoreV1().Pods("tenant").Delete(ctx, pb.Name, now); err != nil {
		t.Fatal(err)
	}
	p1 := portIs(t, nb, def, "unbound after stop", chassis("", ""))
	b1 := portIs(t, nb, blue, "unbound after stop", chassis("", ""))
	if p1.Addresses[0] != p0.Addresses[0] || b1.Addresses[0] != b0.Addresses[0] {
		t.Errorf("addresses after stop %q %q, want unchanged %q %q", p1.Addresses, b1.Addresses, p0.Addresses, b0.Addresses)
	}

	// Every write so far was ovn-sync's own, each phase changing the ports
	// the phase before wrote: none is drift. A pass's port writes reach the
	// drift watcher before its Transact returns (the port view's barrier),
	// so it judges them against that pass's want alone.
	if n := run.metric("ovn_sync_drift_events_total"); n != 0 {
		t.Errorf("ovn_sync_drift_events_total = %v after the VM's own start, migration and stop, want 0", n)
	}

	// Someone deletes one of our ports: it is back, in a new row. The watch
	// may not have seen the deletion yet, and may never see the port
	// absent: ovn-sync may recreate it before the watch looks.
	start := time.Now()
	nbs.NBCtl("lsp-del", def)
	var back time.Duration
	looptest.WaitFor(t, 30*time.Second, "deleted port back", func() error {
		p := nb.State().Ports.Get(def)
		if p == nil || p.UUID == p1.UUID {
			return fmt.Errorf("not back in a new row")
		}
		back = time.Since(start)
		if p.Addresses[0] != p0.Addresses[0] {
			return fmt.Errorf("back with %q, want %q", p.Addresses, p0.Addresses)
		}
		return nil
	})
	t.Logf("port deleted with ovn-nbctl was back after %s", back.Round(time.Millisecond))
	// The pass counts its repair once its transaction is answered, which
	// the watch may show first. Whatever else triggered that pass (the
	// launcher pod's deletion may reach the loop as late as the NB's), the
	// port is put back as the last pass wanted it: a repair.
	looptest.WaitFor(t, 30*time.Second, "the repair counted", func() error {
		if n := run.metric("ovn_sync_drift_repairs_total"); n < 1 {
			return fmt.Errorf("ovn_sync_drift_repairs_total = %v, want >= 1", n)
		}
		return nil
	})

	// A pod asking for an impossible address gets one Event, however many
	// passes find the problem.
	badIP := pausePod("tenant", "bad-ip", "node-a")
	badIP.Annotations = map[string]string{"ovn.kubernetes.io/ip_address": "999.1.1.1"}
	createPod(t, k, badIP)
	looptest.WaitFor(t, 30*time.Second, "an Event on the pod", func() error {
		evs, err := k.Kube.CoreV1().Events("tenant").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad-ip"})
		if err != nil {
			return err
		}
		if len(evs.Items) != 1 || evs.Items[0].Type != corev1.EventTypeWarning || !strings.Contains(evs.Items[0].Message, "999.1.1.1") {
			return fmt.Errorf("events %+v", evs.Items)
		}
		return nil
	})
	// More passes, same problem: each touch of the pod (a kube-ovn
	// annotation of a provider it has no interface on, which the stores
	// keep; an annotation or a label Build does not read would be no
	// change) is read by a pass that rebuilds it, and a pod created after the touch, once annotated,
	// says that pass has reported (a pass publishes after it reports, and
	// the pod informer delivers the touch before the creation).
	for i := range 3 {
		if _, err := k.Kube.CoreV1().Pods("tenant").Patch(ctx, "bad-ip", types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{"elsewhere.tenant.ovn.kubernetes.io/gateway":"192.168.9.%d"}}}`, i+1)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		probe := fmt.Sprintf("after-touch-%d", i)
		createPod(t, k, pausePod("tenant", probe, "node-a"))
		looptest.WaitFor(t, 30*time.Second, "pod "+probe+" annotated", func() error {
			p, err := k.Kube.CoreV1().Pods("tenant").Get(ctx, probe, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Annotations["ovn.kubernetes.io/routed"] != "true" {
				return fmt.Errorf("annotations %v", p.Annotations)
			}
			return nil
		})
	}
	if n := run.metric("ovn_sync_problem_events_total", `reason="InvalidAddressRequest"`); n != 1 {
		t.Errorf(`ovn_sync_problem_events_total{reason="InvalidAddressRequest"} = %v after more passes, want 1`, n)
	}
	evs, err := k.Kube.CoreV1().Events("tenant").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad-ip"})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Count != 1 {
		t.Errorf("events after more passes: %+v, %v; want one, reported once", evs, err)
	}
	if n := run.metric("ovn_sync_problems", `reason="InvalidAddressRequest"`); n != 1 {
		t.Errorf(`ovn_sync_problems{reason="InvalidAddressRequest"} = %v, want 1`, n)
	}

	// The NB restarts: ovn-sync reconnects and makes a full pass.
	nbs.Restart()
	looptest.WaitFor(t, 30*time.Second, "reconnected", func() error {
		if run.metric("ovn_sync_nb_reconnects_total") < 1 {
			return fmt.Errorf("no reconnect yet")
		}
		return nil
	})
	createPod(t, k, pausePod("tenant", "after-restart", "node-a"))
	portIs(t, nb, "after-restart.tenant", "created after the NB restarted", present)

	// Delete the VM: its ports go.
	if err := k.Dynamic.Resource(sources.GVRVirtualMachine).Namespace("tenant").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	portIs(t, nb, def, "deleted with the VM", absent)
	portIs(t, nb, blue, "deleted with the VM", absent)

	for _, m := range []string{"ovn_sync_passes_total", "ovn_sync_pass_duration_seconds_count", "ovn_sync_transaction_duration_seconds_count", "ovn_sync_annotation_patches_total"} {
		if run.metric(m) == 0 {
			t.Errorf("metric %s is 0 or missing", m)
		}
	}
	if n := run.metric("ovn_sync_changes_total", `action="create"`, `object="port"`); n < 2 {
		t.Errorf(`ovn_sync_changes_total{action="create",object="port"} = %v, want >= 2`, n)
	}
	if n := run.metric("ovn_sync_passes_total", `result="error"`); n != 0 {
		t.Errorf(`ovn_sync_passes_total{result="error"} = %v, want 0`, n)
	}
}

// TestRunBulkPods creates and deletes a few hundred plain pods at once and
// waits for the NB to converge each time.
func TestRunBulkPods(t *testing.T) {
	e := startEnv(t, envOptions{Namespaces: []string{"bulk"}})
	k, nb := e.k, e.nb
	ctx := context.Background()
	// The mass-delete guard would refuse deleting all of them at once, as
	// it should: this test is about convergence.
	run := e.run("--leader-elect=false", "--allow-mass-delete", "--publish=false")
	run.waitReady()
	passes0 := run.metric("ovn_sync_passes_total")
	const n = 300
	count := func() int {
		c := 0
		for _, p := range nb.State().Ports.All() {
			if strings.HasSuffix(p.Name, ".bulk") && p.Owned() {
				c++
			}
		}
		return c
	}
	start := time.Now()
	concurrently(t, 0, n, func(i int) error {
		_, err := k.Kube.CoreV1().Pods("bulk").Create(ctx, pausePod("bulk", fmt.Sprintf("p-%03d", i), fmt.Sprintf("node-%d", i%3)), metav1.CreateOptions{})
		return err
	})
	created := time.Since(start)
	looptest.WaitFor(t, 30*time.Second, "ports for every pod", func() error {
		if c := count(); c != n {
			return fmt.Errorf("%d ports, want %d", c, n)
		}
		return nil
	})
	t.Logf("%d pods: created in %s, all ports in the NB after %s", n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	seen := map[string]bool{}
	for _, p := range nb.State().Ports.All() {
		if p.Owned() {
			ip := strings.Fields(p.Addresses[0])[1]
			if seen[ip] {
				t.Errorf("IP %s held twice", ip)
			}
			seen[ip] = true
		}
	}
	t.Logf("%v passes for %v informer events", run.metric("ovn_sync_passes_total")-passes0, run.metric("ovn_sync_informer_events_total"))

	start = time.Now()
	concurrently(t, 0, n, func(i int) error {
		// No kubelet runs to finish a graceful delete: delete at once.
		return k.Kube.CoreV1().Pods("bulk").Delete(ctx, fmt.Sprintf("p-%03d", i), now)
	})
	looptest.WaitFor(t, 30*time.Second, "ports gone", func() error {
		if c := count(); c != 0 {
			return fmt.Errorf("%d ports left", c)
		}
		return nil
	})
	t.Logf("%d pods deleted: ports gone after %s", n, time.Since(start).Round(time.Millisecond))
}

// TestRunLeaderElection runs two processes against one API server and one
// NB: only the leader writes; when it dies the other takes over.
func TestRunLeaderElection(t *testing.T) {
	e := startEnv(t, envOptions{Namespaces: []string{"kube-system", "le"}})
	k, nb := e.k, e.nb
	ctx := context.Background()
	le := []string{"--leader-elect=true", "--lease-namespace", "kube-system", "--lease-duration", "3s",
		"--renew-deadline", "2s", "--retry-period", "250ms"}
	a := e.run(append(le, "--identity", "a")...)
	looptest.WaitFor(t, 15*time.Second, "a leads", func() error {
		if a.metric("ovn_sync_leader") != 1 {
			return fmt.Errorf("not leader")
		}
		return nil
	})
	b := e.run(append(le, "--identity", "b")...)
	mkpod := func(name string) {
		t.Helper()
		createPod(t, k, pausePod("le", name, "n1"))
	}
	mkpod("one")
	portIs(t, nb, "one.le", "created by the leader", present)
	b.waitReady() // as a standby
	if got := b.metric("ovn_sync_leader"); got != 0 {
		t.Errorf("standby b: ovn_sync_leader = %v, want 0", got)
	}
	if got := b.metric("ovn_sync_transactions_total"); got != 0 {
		t.Errorf("standby b sent %v transactions, want 0", got)
	}
	lease, err := k.Kube.CoordinationV1().Leases("kube-system").Get(ctx, "ovn-sync", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a" {
		t.Fatalf("lease = %v, %v; want held by a", lease, err)
	}

	// Kill the leader without letting it release the lease.
	start := time.Now()
	a.stop(syscall.SIGKILL)
	mkpod("two")
	portIs(t, nb, "two.le", "created by b after a died", present)
	t.Logf("leader killed: b wrote after %s (lease duration 3s)", time.Since(start).Round(time.Millisecond))
	if got := b.metric("ovn_sync_leader"); got != 1 {
		t.Errorf("b: ovn_sync_leader = %v, want 1", got)
	}

	// A graceful stop releases the lease: a new process takes over at once.
	c := e.run(append(le, "--identity", "c")...)
	c.waitReady() // as a standby
	start = time.Now()
	b.stop(syscall.SIGTERM)
	looptest.WaitFor(t, 30*time.Second, "c leads", func() error {
		if c.metric("ovn_sync_leader") != 1 {
			return fmt.Errorf("not leader")
		}
		return nil
	})
	t.Logf("leader stopped with SIGTERM: c led after %s", time.Since(start).Round(time.Millisecond))
	mkpod("three")
	portIs(t, nb, "three.le", "created by c", present)
	if !strings.Contains(b.logTail(1<<20), "leading") {
		t.Errorf("b never logged that it led")
	}
}

// TestRunCRDsInstalledAfterStart: KubeVirt and Multus installed after
// "ovn-sync run" started (as the service account deploy/rbac.yaml binds):
// a VM created right after gets its ports within seconds, not at the next
// resync.
func TestRunCRDsInstalledAfterStart(t *testing.T) {
	e := startEnv(t, envOptions{WithoutCRDs: true, RBAC: deployRBAC, Namespaces: []string{"tenant"}})
	k := e.k
	run := e.run("--leader-elect=false", "--resync", "1h")
	run.waitReady()

	start := time.Now()
	k.InstallCRDs()
	k.Create(sources.GVRNetworkAttachmentDefinition, blueNAD)
	k.Create(sources.GVRVirtualMachine, vmManifest("tenant", "db", "Halted", "blue", "blue"))
	portIs(t, e.nb, "db.tenant.blue.tenant.ovn", "created for a VM whose CRD came after start", present)
	t.Logf("CRDs installed, NAD and VM created: the VM's ports in the NB after %s", time.Since(start).Round(time.Millisecond))
}
