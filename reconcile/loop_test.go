package reconcile_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/sources"
)

func TestRunnerMassDeleteGuard(t *testing.T) {
	tr := looptest.Start(t, looptest.Options{Publish: true})
	tr.Pods(t, 0, 40)
	tr.WaitPorts(t, "a port per pod", 40)
	looptest.WaitFor(t, 30*time.Second, "pods annotated", func() error {
		p, err := tr.Kube.CoreV1().Pods("ns").Get(context.Background(), "p39", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if a, err := netip.ParseAddr(p.Annotations["ovn.kubernetes.io/ip_address"]); err != nil || !a.Is4() {
			return fmt.Errorf("annotations %v", p.Annotations)
		}
		return nil
	})
	// The first pass to see a deletion must see all 30: passes between
	// the deletes, each deleting no more than 20 ports, would be let
	// through. So the runner steps down while they are made and leads
	// again once its informers hold the 10 pods left.
	tr.StepDown()
	for i := range 30 {
		if err := tr.Kube.CoreV1().Pods("ns").Delete(context.Background(), fmt.Sprintf("p%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	looptest.WaitFor(t, 30*time.Second, "the informers without the deleted pods", func() error {
		if n := tr.Src.Inputs().Inputs.PodCount(); n != 10 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
	tr.Lead()
	looptest.WaitFor(t, 30*time.Second, "pass refused", func() error {
		if n := tr.Metric("ovn_sync_passes_total", "kind", "full", "result", "refused"); n < 1 {
			return fmt.Errorf("refused passes %v", n)
		}
		return nil
	})
	if n := tr.NB.State().OwnedPorts(); n != 40 {
		t.Errorf("after a refused mass delete: %d ports, want all 40 kept", n)
	}
	if ok, why := tr.Loop.Ready(); ok || !strings.Contains(why, "refusing mass delete") {
		t.Errorf("Ready() = %v, %q; want not ready naming the refusal", ok, why)
	}
}

func TestRunnerUnreadableWithholdsDeletes(t *testing.T) {
	broken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"namespace": "ns", "name": "broken"},
		"spec":     map[string]any{"running": "yes"},
	}}
	tr := looptest.Start(t, looptest.Options{DynObjs: []runtime.Object{broken}, Publish: true})
	tr.Pods(t, 0, 3)
	tr.WaitPorts(t, "a port per pod", 3)
	if err := tr.Kube.CoreV1().Pods("ns").Delete(context.Background(), "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "delete withheld", func() error {
		if n := tr.Metric("ovn_sync_withheld_deletes"); n != 1 {
			return fmt.Errorf("withheld %v", n)
		}
		return nil
	})
	if n := tr.NB.State().OwnedPorts(); n != 3 {
		t.Errorf("with an unreadable VM: %d ports, want 3 (no deletes)", n)
	}
	// Once the object is readable again, the delete goes through.
	if err := tr.Dyn.Resource(sources.GVRVirtualMachine).Namespace("ns").Delete(context.Background(), "broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.WaitPorts(t, "withheld delete carried out", 2)
}

// failList makes the fake dynamic client's lists of resource fail until
// the returned function is called, so that its informer stays unsynced
// meanwhile (its reflector retries with backoff). The reactor must not
// block: the fake client holds its lock while reactors run.
func failList(dyn *dynamicfake.FakeDynamicClient, resource string) (release func()) {
	var released atomic.Bool
	dyn.PrependReactor("list", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		if released.Load() {
			return false, nil, nil // on to the tracker
		}
		return true, nil, fmt.Errorf("list %s: unavailable", resource)
	})
	return func() { released.Store(true) }
}

// seedPort creates, with ovn-nbctl, a port of ours on ovn-default (created
// as ovn-sync creates it) and returns its UUID.
func seedPort(t *testing.T, s *nbtest.Server, name, owner, addrs string) string {
	t.Helper()
	s.NBCtl("--may-exist", "ls-add", "ovn-default", "--", "set", "Logical_Switch", "ovn-default",
		"external_ids:ovn-sync/owner=ovn-sync", "external_ids:ovn-sync/network=default", "other_config:subnet=10.16.0.0/12")
	s.NBCtl("lsp-add", "ovn-default", name, "--", "lsp-set-addresses", name, addrs, "--", "lsp-set-port-security", name, addrs,
		"--", "set", "Logical_Switch_Port", name, "external_ids:ovn-sync/owner="+owner,
		"external_ids:ovn-sync/network=default", "external_ids:ovn-sync/switch=ovn-default")
	return s.Get("Logical_Switch_Port", name, "_uuid")
}

// TestRunnerNoPassBeforeSync: while one informer cannot list its kind,
// run mode writes nothing, so the ports of objects it has not seen yet (a
// VM) and of objects that are gone (a pod) both stay; once it has, the pass
// deletes only the latter.
func TestRunnerNoPassBeforeSync(t *testing.T) {
	s := nbtest.Start(t)
	vmUUID := seedPort(t, s, "vm1.ns", "VirtualMachine/ns/vm1", "0a:58:0a:10:00:02 10.16.0.2")
	seedPort(t, s, "gone.ns", "Pod/ns/gone", "0a:58:0a:10:00:03 10.16.0.3")
	var release func()
	tr := looptest.Start(t, looptest.Options{
		NBAddr: s.Addr(), DynObjs: []runtime.Object{looptest.Unstructured(t, looptest.VM("vm1"))}, KubeObjs: []runtime.Object{looptest.Pod("p0")},
		BeforeStart: func(_ *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
			release = failList(dyn, "virtualmachines")
		},
	})
	before := s.Commits()
	looptest.WaitFor(t, 30*time.Second, "NB cache loaded", func() error {
		if ok, why := tr.Loop.Synced(); ok || why != "not synced: VirtualMachine" {
			return fmt.Errorf("Synced() = %v, %q; want only the VMs unsynced", ok, why)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // passes would have run by now
	if n := s.Commits() - before; n != 0 {
		t.Errorf("%d transactions committed before every informer synced", n)
	}
	for _, name := range []string{"vm1.ns", "gone.ns"} {
		if s.Get("Logical_Switch_Port", name, "_uuid") == "" {
			t.Errorf("port %s deleted before every informer synced", name)
		}
	}
	release()
	looptest.WaitFor(t, 15*time.Second, "the first pass", func() error {
		st := tr.NB.State()
		if st.Ports.Get("p0.ns") == nil || st.Ports.Get("gone.ns") != nil {
			return fmt.Errorf("p0.ns %v, gone.ns %v", st.Ports.Get("p0.ns") != nil, st.Ports.Get("gone.ns") != nil)
		}
		return nil
	})
	if u := s.Get("Logical_Switch_Port", "vm1.ns", "_uuid"); u != vmUUID {
		t.Errorf("vm1.ns uuid %q, want %q: the VM's port was deleted", u, vmUUID)
	}
}

// TestRunnerWithholdsDeletesUntilNewInformerSynced: a kind that appears
// after startup (its CRD installed, found at a resync) gets an informer
// that has not listed yet; passes meanwhile must delete nothing, or the
// ports of that kind's objects would go as if the objects were gone.
func TestRunnerWithholdsDeletesUntilNewInformerSynced(t *testing.T) {
	s := nbtest.Start(t)
	soloUUID := seedPort(t, s, "solo.ns", "VirtualMachineInstance/ns/solo", "0a:58:0a:10:00:09 10.16.0.9")
	solo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"namespace": "ns", "name": "solo"},
		"spec":     map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
		"status":   map[string]any{"phase": "Running"},
	}}
	// A VM that cannot be read withholds deletes until it goes, so the VMI's
	// port survives the passes before VMIs are served.
	broken := looptest.Unstructured(t, looptest.VM("broken"))
	broken.Object["spec"] = map[string]any{"running": "yes"}
	vmOnly := []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
		{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
	}}}
	var release func()
	tr := looptest.Start(t, looptest.Options{
		NBAddr: s.Addr(), DynObjs: []runtime.Object{broken, solo}, KubeObjs: []runtime.Object{looptest.Pod("p0")}, Resources: vmOnly,
		BeforeStart: func(_ *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
			release = failList(dyn, "virtualmachineinstances")
		},
	})
	looptest.WaitFor(t, 30*time.Second, "p0's port, and the delete withheld", func() error {
		if tr.NB.State().Ports.Get("p0.ns") == nil || tr.Metric("ovn_sync_withheld_deletes") != 1 {
			return fmt.Errorf("p0.ns %v, withheld %v", tr.NB.State().Ports.Get("p0.ns") != nil, tr.Metric("ovn_sync_withheld_deletes"))
		}
		return nil
	})

	// VMIs are served now; their informer starts and its lists fail.
	tr.Kube.Resources = []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
		{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
		{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Namespaced: true},
	}}}
	if err := tr.Src.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.Src.HasSynced() {
		t.Fatal("the new VMI informer is synced already: the list did not block")
	}
	// Every object is readable now: only the unsynced informer withholds.
	if err := tr.Dyn.Resource(sources.GVRVirtualMachine).Namespace("ns").Delete(context.Background(), "broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.Pods(t, 1, 2)
	looptest.WaitFor(t, 30*time.Second, "a pass after the VM went", func() error {
		if tr.NB.State().Ports.Get("p1.ns") == nil {
			return fmt.Errorf("no p1.ns")
		}
		return nil
	})
	if u := s.Get("Logical_Switch_Port", "solo.ns", "_uuid"); u != soloUUID {
		t.Errorf("solo.ns uuid %q, want %q: deleted while VMIs were not synced", u, soloUUID)
	}
	release()
	tr.WaitConverged(t)
	if u := s.Get("Logical_Switch_Port", "solo.ns", "_uuid"); u != soloUUID {
		t.Errorf("solo.ns uuid %q, want %q", u, soloUUID)
	}
}
