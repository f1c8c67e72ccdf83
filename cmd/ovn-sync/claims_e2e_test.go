package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
)

// claimCluster writes, in namespace vms, the objects KubeVirt and
// kubevirt/ipam-extensions write for VMs on a NAD that allows persistent
// IPs: the VM (interface data on NAD l2), its VMI and launcher pod (whose
// network selection element the webhook gave "ipam-claim-reference"), and
// the claim the VMI controller creates, named "<vm>.<network>" and owned
// by the VM, with a finalizer and the kubevirt.io/vm label.
type claimCluster struct {
	t *testing.T
	k *kubetest.Server
}

// vm creates a stopped VM and, as ipam-extensions does, its claim.
func (c claimCluster) vm(name string) *unstructured.Unstructured {
	c.t.Helper()
	vm := c.k.Create(sources.GVRVirtualMachine, vmManifest("vms", name, "Halted", "data", "l2"))
	c.k.Create(sources.GVRIPAMClaim, fmt.Sprintf(`
apiVersion: k8s.cni.cncf.io/v1alpha1
kind: IPAMClaim
metadata:
  name: %s.data
  namespace: vms
  finalizers: [kubevirt.io/persistent-ipam]
  labels: {kubevirt.io/vm: %s}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: %s, uid: %s, controller: true, blockOwnerDeletion: true}]
spec: {network: tenantnet, interface: ""}`, name, name, name, vm.GetUID()))
	return vm
}

// start starts VM vm on node: its VMI and a launcher pod named pod, whose
// networks annotation is what KubeVirt writes with the claim reference
// ipam-extensions' webhook adds.
func (c claimCluster) start(vm *unstructured.Unstructured, pod, node string) {
	c.t.Helper()
	vmi := c.k.Create(sources.GVRVirtualMachineInstance, vmiManifest(vm))
	c.setVMIStatus(vm.GetName(), fmt.Sprintf(`{"status":{"phase":"Running","nodeName":%q}}`, node))
	c.launcher(vmi, pod, node)
}

func (c claimCluster) launcher(vmi *unstructured.Unstructured, pod, node string) {
	c.t.Helper()
	p := looptest.LauncherOf(vmi, pod, node)
	p.Annotations["k8s.v1.cni.cncf.io/networks"] = fmt.Sprintf(`[{"name":"l2","namespace":"vms","interface":"pod3a6eb0790f3","ipam-claim-reference":"%s.data"}]`, vmi.GetName())
	createPod(c.t, c.k, p)
}

func (c claimCluster) setVMIStatus(name, status string) {
	c.t.Helper()
	patchStatus(c.t, c.k, sources.GVRVirtualMachineInstance, "vms", name, status)
}

// stop deletes VM name's VMI and launcher pods.
func (c claimCluster) stop(name string, pods ...string) {
	c.t.Helper()
	ctx := context.Background()
	for _, p := range pods {
		if err := c.k.Kube.CoreV1().Pods("vms").Delete(ctx, p, now); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := c.k.Dynamic.Resource(sources.GVRVirtualMachineInstance).Namespace("vms").Delete(ctx, name, now); err != nil {
		c.t.Fatal(err)
	}
}

// fillClaim writes status.ips as a network plugin would.
func (c claimCluster) fillClaim(name string, ips ...string) {
	c.t.Helper()
	body := fmt.Sprintf(`{"status":{"ips":[%q]}}`, strings.Join(ips, `","`))
	if _, err := c.k.Dynamic.Resource(sources.GVRIPAMClaim).Namespace("vms").Patch(context.Background(), name,
		types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status"); err != nil {
		c.t.Fatal(err)
	}
}

func (c claimCluster) claim(name string) (*ipamclaimsv1alpha1.IPAMClaim, error) {
	u, err := c.k.Dynamic.Resource(sources.GVRIPAMClaim).Namespace("vms").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var cl ipamclaimsv1alpha1.IPAMClaim
	err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cl)
	return &cl, err
}

// claimSays checks claim name's status: its ips, its owner pod ("" for
// none) and its IPsAllocated condition's reason.
func (c claimCluster) claimSays(name string, ips []string, ownerPod, reason string) error {
	cl, err := c.claim(name)
	if err != nil {
		return err
	}
	var cond *metav1.Condition
	for i := range cl.Status.Conditions {
		if cl.Status.Conditions[i].Type == ipamclaimsv1alpha1.ConditionIPsAllocated {
			cond = &cl.Status.Conditions[i]
		}
	}
	pod := ""
	if cl.Status.OwnerPod != nil {
		pod = cl.Status.OwnerPod.Name
	}
	switch {
	case !slices.Equal(cl.Status.IPs, ips):
		return fmt.Errorf("claim %s: status.ips %q, want %q", name, cl.Status.IPs, ips)
	case pod != ownerPod:
		return fmt.Errorf("claim %s: ownerPod %q, want %q", name, pod, ownerPod)
	case cond == nil:
		return fmt.Errorf("claim %s: no IPsAllocated condition", name)
	case cond.Reason != reason || (cond.Status == metav1.ConditionTrue) != (reason == ipamclaimsv1alpha1.ReasonSuccessfulAllocation):
		return fmt.Errorf("claim %s: IPsAllocated %s %s (%s), want reason %s", name, cond.Status, cond.Reason, cond.Message, reason)
	case cond.LastTransitionTime.IsZero():
		return fmt.Errorf("claim %s: IPsAllocated without lastTransitionTime", name)
	}
	return nil
}

// portIP is the IPv4 address of port name on the NAD, "" when it has none.
func portIP(nb *observed.NB, name string) string {
	p := nb.State().Ports.Get(name)
	if p == nil || len(p.Addresses) == 0 {
		return ""
	}
	f := strings.Fields(p.Addresses[0])
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// TestRunIPAMClaims runs ovn-sync as deploy/rbac.yaml's service account
// against a real kube-apiserver serving the upstream IPAMClaim CRD, with
// the objects KubeVirt and ipam-extensions write: a running VM's empty
// claim is filled (status.ips, ownerPod, IPsAllocated) and stays so
// through a stop, a start on another node and a live migration; a
// pre-filled claim gives a new VM its address; a claim naming an address
// another port holds reports IPAddressConflict; a claim filled after its
// VM was given another address is a ClaimMismatch Problem, and its status
// is left alone; after the NB is wiped and
// the VMs' annotations lost, a stopped VM comes back on its claim's
// address, not the lowest free one; a deleted VM's claim holds its
// address until the claim is deleted too.
func TestRunIPAMClaims(t *testing.T) {
	e := startEnv(t, envOptions{CRDFiles: []string{"testdata/ipamclaims/k8s.cni.cncf.io_ipamclaims.yaml"},
		RBAC: deployRBAC, Namespaces: []string{"vms"}})
	k, nbs, nb := e.k, e.nbs, e.nb
	ctx := context.Background()
	c := claimCluster{t: t, k: k}
	c.k.Create(sources.GVRNetworkAttachmentDefinition, `
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: vms}
spec:
  config: '{"cniVersion":"0.3.1","name":"tenantnet","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.10.0/24","netAttachDefName":"vms/l2","allowPersistentIPs":true}'
`)
	// A pod that takes the lowest address first, and goes before the NB
	// is wiped: then the lowest free address is not db's.
	c.k.Create(gvrPod, `{apiVersion: v1, kind: Pod, metadata: {name: early, namespace: vms, annotations: {k8s.v1.cni.cncf.io/networks: l2}},
  spec: {nodeName: node-1, containers: [{name: c, image: pause}]}}`)
	// Claims filled before ovn-sync ran (a cluster taken over, say): one
	// gives its VM its address; another naming the same address, of a VM
	// that comes later, is a conflict, reported on the claim.
	c.vm("web")
	c.fillClaim("web.data", "192.168.10.50/24")
	c.vm("web2")
	c.fillClaim("web2.data", "192.168.10.50/24")
	run := e.run("--leader-elect=false", "--default-subnets", "10.16.0.0/16")
	const (
		dbPort  = "db.vms.l2.vms.ovn"
		webPort = "web.vms.l2.vms.ovn"
		dupPort = "web2.vms.l2.vms.ovn"
	)
	looptest.WaitFor(t, 30*time.Second, "the early pod's port", func() error {
		if a := portIP(nb, "early.vms.l2.vms.ovn"); a != "192.168.10.2" {
			return fmt.Errorf("early holds %q", a)
		}
		return nil
	})

	// A VM started: ipam-extensions made its claim empty; ovn-sync fills it.
	db := c.vm("db")
	c.start(db, "virt-launcher-db-a", "node-1")
	looptest.WaitFor(t, 30*time.Second, "db's claim filled", func() error {
		if a := portIP(nb, dbPort); a != "192.168.10.3" {
			return fmt.Errorf("db holds %q", a)
		}
		return c.claimSays("db.data", []string{"192.168.10.3/24"}, "virt-launcher-db-a", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})

	// Stopped, then started on another node: same address, the claim
	// names the new launcher pod.
	c.stop("db", "virt-launcher-db-a")
	looptest.WaitFor(t, 30*time.Second, "db stopped", func() error {
		if p := nb.State().Ports.Get(dbPort); p == nil || p.RequestedChassis != "" {
			return fmt.Errorf("db's port: %+v", p)
		}
		return nil
	})
	vmi := func() *unstructured.Unstructured {
		u, err := k.Dynamic.Resource(sources.GVRVirtualMachineInstance).Namespace("vms").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	looptest.WaitFor(t, 30*time.Second, "db's VMI gone", func() error {
		if _, err := k.Dynamic.Resource(sources.GVRVirtualMachineInstance).Namespace("vms").Get(ctx, "db", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	c.start(db, "virt-launcher-db-b", "node-2")
	looptest.WaitFor(t, 30*time.Second, "db started on node-2", func() error {
		if p := nb.State().Ports.Get(dbPort); p == nil || p.RequestedChassis != "node-2" || portIP(nb, dbPort) != "192.168.10.3" {
			return fmt.Errorf("db's port: %+v", p)
		}
		return c.claimSays("db.data", []string{"192.168.10.3/24"}, "virt-launcher-db-b", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})

	// Live migration to node-3: both nodes, the same address, the claim
	// unchanged; once it completes, the target's pod holds the claim.
	c.launcher(vmi(), "virt-launcher-db-c", "node-3")
	c.setVMIStatus("db", `{"status":{"migrationState":{"sourceNode":"node-2","targetNode":"node-3","migrationUid":"m1"}}}`)
	looptest.WaitFor(t, 30*time.Second, "db migrating", func() error {
		if p := nb.State().Ports.Get(dbPort); p == nil || p.RequestedChassis != "node-2,node-3" || portIP(nb, dbPort) != "192.168.10.3" {
			return fmt.Errorf("db's port: %+v", p)
		}
		return c.claimSays("db.data", []string{"192.168.10.3/24"}, "virt-launcher-db-b", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})
	c.setVMIStatus("db", `{"status":{"nodeName":"node-3","migrationState":{"sourceNode":"node-2","targetNode":"node-3","migrationUid":"m1","completed":true}}}`)
	if err := k.Kube.CoreV1().Pods("vms").Delete(ctx, "virt-launcher-db-b", now); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "db migrated", func() error {
		if p := nb.State().Ports.Get(dbPort); p == nil || p.RequestedChassis != "node-3" || portIP(nb, dbPort) != "192.168.10.3" {
			return fmt.Errorf("db's port: %+v", p)
		}
		return c.claimSays("db.data", []string{"192.168.10.3/24"}, "virt-launcher-db-c", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})

	looptest.WaitFor(t, 30*time.Second, "web on its claim's address, web2 in conflict", func() error {
		if a := portIP(nb, webPort); a != "192.168.10.50" {
			return fmt.Errorf("web holds %q", a)
		}
		if p := nb.State().Ports.Get(dupPort); p != nil {
			return fmt.Errorf("web2 has a port: %+v", p)
		}
		if err := c.claimSays("web.data", []string{"192.168.10.50/24"}, "", ipamclaimsv1alpha1.ReasonSuccessfulAllocation); err != nil {
			return err
		}
		return c.claimSays("web2.data", []string{"192.168.10.50/24"}, "", ipamclaimsv1alpha1.ReasonIPAddressConflict)
	})

	// A claim written with another address once its VM holds one: never
	// followed, never written over, reported.
	c.vm("late")
	looptest.WaitFor(t, 30*time.Second, "late's claim filled", func() error {
		return c.claimSays("late.data", []string{"192.168.10.4/24"}, "", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})
	if _, err := k.Dynamic.Resource(sources.GVRIPAMClaim).Namespace("vms").Patch(ctx, "late.data", types.MergePatchType,
		[]byte(`{"status":{"ips":["192.168.10.99/24"]}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "late's mismatch reported", func() error {
		evs, err := k.Kube.CoreV1().Events("vms").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=late.data"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "ClaimMismatch" && e.InvolvedObject.Kind == "IPAMClaim" {
				if a := portIP(nb, "late.vms.l2.vms.ovn"); a != "192.168.10.4" {
					return fmt.Errorf("late holds %q", a)
				}
				return nil
			}
		}
		return fmt.Errorf("no ClaimMismatch event in %d", len(evs.Items))
	})
	if cl, err := c.claim("late.data"); err != nil || !slices.Equal(cl.Status.IPs, []string{"192.168.10.99/24"}) {
		t.Errorf("late.data: %v %+v, want its status.ips left as written", err, cl)
	}

	// db stops, early goes, ovn-sync stops; the NB is wiped and the VMs'
	// annotations are lost: their claims are their only record.
	c.stop("db", "virt-launcher-db-c")
	if err := k.Kube.CoreV1().Pods("vms").Delete(ctx, "early", now); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "db stopped, early gone", func() error {
		if p := nb.State().Ports.Get(dbPort); p == nil || p.RequestedChassis != "" || nb.State().Ports.Get("early.vms.l2.vms.ovn") != nil {
			return fmt.Errorf("db's port: %+v", p)
		}
		return nil
	})
	run.stop(syscall.SIGTERM)
	for _, name := range []string{"db", "web", "web2"} {
		if _, err := k.Dynamic.Resource(sources.GVRVirtualMachine).Namespace("vms").Patch(ctx, name, types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/annotations"}]`), metav1.PatchOptions{}); err != nil && !strings.Contains(err.Error(), "nonexistent") {
			t.Fatal(err)
		}
	}
	nbs.Wipe()
	run = e.run("--leader-elect=false", "--default-subnets", "10.16.0.0/16")
	nb = nbWatch(t, nbs.Addr())
	looptest.WaitFor(t, 60*time.Second, "db and web back on their claims' addresses", func() error {
		if a := portIP(nb, dbPort); a != "192.168.10.3" {
			return fmt.Errorf("db holds %q", a)
		}
		if a := portIP(nb, webPort); a != "192.168.10.50" {
			return fmt.Errorf("web holds %q", a)
		}
		return c.claimSays("web2.data", []string{"192.168.10.50/24"}, "", ipamclaimsv1alpha1.ReasonIPAddressConflict)
	})

	// web is deleted: its claim stays (its finalizer), and so does the
	// hold on .50. Deleting the claim frees it, and web2 takes it.
	if err := k.Dynamic.Resource(sources.GVRVirtualMachine).Namespace("vms").Delete(ctx, "web", now); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "web's port gone", func() error {
		if p := nb.State().Ports.Get(webPort); p != nil {
			return fmt.Errorf("web's port: %+v", p)
		}
		return nil
	})
	// A pass after that one: a pod created now has its port.
	c.k.Create(gvrPod, `{apiVersion: v1, kind: Pod, metadata: {name: marker, namespace: vms, annotations: {k8s.v1.cni.cncf.io/networks: l2}},
  spec: {nodeName: node-1, containers: [{name: c, image: pause}]}}`)
	looptest.WaitFor(t, 30*time.Second, "the marker pod's port", func() error {
		if a := portIP(nb, "marker.vms.l2.vms.ovn"); a == "" || a == "192.168.10.50" {
			return fmt.Errorf("marker holds %q", a)
		}
		return nil
	})
	if p := nb.State().Ports.Get(dupPort); p != nil {
		t.Fatalf("web2 has a port while web's claim holds .50: %+v", p)
	}
	if err := c.claimSays("web2.data", []string{"192.168.10.50/24"}, "", ipamclaimsv1alpha1.ReasonIPAddressConflict); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Dynamic.Resource(sources.GVRIPAMClaim).Namespace("vms").Patch(ctx, "web.data", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.Dynamic.Resource(sources.GVRIPAMClaim).Namespace("vms").Delete(ctx, "web.data", now); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "web2 on .50", func() error {
		if a := portIP(nb, dupPort); a != "192.168.10.50" {
			return fmt.Errorf("web2 holds %q", a)
		}
		return c.claimSays("web2.data", []string{"192.168.10.50/24"}, "", ipamclaimsv1alpha1.ReasonSuccessfulAllocation)
	})
	if n := run.metric("ovn_sync_incremental_mismatches_total"); n != 0 {
		t.Errorf("%v incremental mismatches", n)
	}
}
