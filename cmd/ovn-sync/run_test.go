package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

func TestPortDrift(t *testing.T) {
	want := state.New(1)
	want.Ports["a.ns"] = &state.Port{Name: "a.ns", Owner: "Pod/ns/a", Network: "default", Switch: "ovn-default",
		Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"}, RequestedChassis: "n1"}
	ours := func(mut func(*nbdb.LogicalSwitchPort)) *nbdb.LogicalSwitchPort {
		r := &nbdb.LogicalSwitchPort{Name: "a.ns", Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"},
			ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/a", state.KeyNetwork: "default", state.KeySwitch: "ovn-default"},
			Options:     map[string]string{state.OptRequestedChassis: "n1", "foreign": "x"}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	foreign := &nbdb.LogicalSwitchPort{Name: "x", ExternalIDs: map[string]string{}}
	for _, tc := range []struct {
		name     string
		old, cur *nbdb.LogicalSwitchPort
		want     bool
	}{
		{"our insert as planned", nil, ours(nil), false},
		{"our update as planned", ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n0" }), ours(nil), false},
		{"someone else's key changed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options["foreign"] = "y" }), false},
		{"chassis edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n9" }), true},
		{"addresses edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Addresses = []string{"dynamic"} }), true},
		{"owner key removed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { delete(r.ExternalIDs, state.KeyOwner) }), true},
		{"wanted port deleted", ours(nil), nil, true},
		{"unwanted port deleted", ours(func(r *nbdb.LogicalSwitchPort) { r.Name = "gone.ns" }), nil, false},
		{"foreign port", nil, foreign, false},
		{"foreign port deleted", foreign, nil, false},
	} {
		if got := portDrift(want, tc.old, tc.cur); got != tc.want {
			t.Errorf("portDrift(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTriggerKind(t *testing.T) {
	for tr, want := range map[trigger]string{
		trigStartup: "full", trigKube: "change", trigDrift: "change", trigKube | trigResync: "full", trigReconnect: "full",
	} {
		if got := tr.kind(); got != want {
			t.Errorf("(%s).kind() = %s, want %s", tr, got, want)
		}
	}
	if got := retryDelay(1, time.Minute); got != 200*time.Millisecond {
		t.Errorf("retryDelay(1) = %s", got)
	}
	if got := retryDelay(20, time.Minute); got != 30*time.Second {
		t.Errorf("retryDelay(20) = %s", got)
	}
	if got := retryDelay(20, 5*time.Second); got != 5*time.Second {
		t.Errorf("retryDelay(20, resync 5s) = %s", got)
	}
}

func TestProblemEventsDeduplicated(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := &problemEvents{log: logr.Discard(), recorder: rec, seen: map[desired.Problem]bool{}}
	in := desired.Inputs{Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u"}}}}
	p := desired.Problem{Kind: "Pod", Namespace: "ns", Name: "bad", Reason: "InvalidAddressRequest", Message: `ovn.kubernetes.io/ip_address "x": not an IP address`}
	cfgProblem := desired.Problem{Kind: "Config", Name: "defaultNetwork", Reason: "X", Message: "y"}
	e.report([]desired.Problem{p, cfgProblem}, in)
	e.report([]desired.Problem{p}, in)
	e.report(nil, in)
	e.report([]desired.Problem{p}, in)
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "Warning InvalidAddressRequest") {
		t.Errorf("events = %q, want the problem twice (it went away in between), the config problem never", got)
	}
}

// testRunner runs the reconcile loop in-process on fake Kubernetes clients
// and the embedded NB.
type testRunner struct {
	r    *runner
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	nb   *observed.NB

	ctx      context.Context
	stopLead func() // ends the running lead and waits for it
}

func newTestRunner(t testing.TB, dynObjs ...runtime.Object) *testRunner {
	return startTestRunner(t, testRunnerOptions{dynObjs: dynObjs, publish: true})
}

type testRunnerOptions struct {
	dynObjs  []runtime.Object
	kubeObjs []runtime.Object
	// nbAddr is a real NB; empty means the embedded one.
	nbAddr  string
	publish bool
	// coalesce overrides the 5ms window of the tests (20ms is the default).
	coalesce time.Duration
	// resources, when set, is what discovery serves instead of every KubeVirt kind.
	resources []*metav1.APIResourceList
	// beforeStart, when set, is called before the informers start (to add
	// reactors to the fake clients, say).
	beforeStart func(*kubefake.Clientset, *dynamicfake.FakeDynamicClient)
}

func startTestRunner(t testing.TB, o testRunnerOptions) *testRunner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kube := kubefake.NewClientset(o.kubeObjs...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), sources.ListKinds, o.dynObjs...)
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
		{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
		{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Namespaced: true},
		{Name: "virtualmachineinstancemigrations", Kind: "VirtualMachineInstanceMigration", Namespaced: true},
	}}}
	if o.resources != nil {
		kube.Resources = o.resources
	}
	if o.beforeStart != nil {
		o.beforeStart(kube, dyn)
	}
	addr, closeNB := o.nbAddr, func() {}
	if addr == "" {
		emb, err := observed.StartEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		addr, closeNB = emb.Endpoint, emb.Close
	}
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	rf := newRunFlags(io.Discard)
	rf.coalesce = 5 * time.Millisecond
	if o.coalesce != 0 {
		rf.coalesce = o.coalesce
	}
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/12"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics()
	src := sources.NewInformers(sources.InformerOptions{Kube: kube, Dynamic: dyn, Logger: logr.Discard()})
	if err := src.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r := newRunner(logr.Discard(), cfg, rf, src, m)
	if o.publish {
		r.pub = newPublisher(kube, dyn, logr.Discard(), func(res string) { m.patches.WithLabelValues(res).Inc() })
	}
	r.attach(nb)
	watched := make(chan struct{})
	go func() { defer close(watched); r.watchNB(ctx) }()
	tr := &testRunner{r: r, kube: kube, dyn: dyn, nb: nb, ctx: ctx}
	tr.lead()
	t.Cleanup(func() { cancel(); <-watched; tr.stepDown(); nb.Close(); closeNB() })
	return tr
}

// lead runs the reconcile loop, as winning the lease does.
func (tr *testRunner) lead() {
	ctx, cancel := context.WithCancel(tr.ctx)
	done := make(chan struct{})
	go func() { defer close(done); tr.r.lead(ctx, ctx.Done()) }()
	tr.stopLead = func() { cancel(); <-done }
}

// stepDown ends the reconcile loop, as losing the lease does, and returns
// once it has ended.
func (tr *testRunner) stepDown() { tr.stopLead() }

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1"}}
}

func (tr *testRunner) pods(t testing.TB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := tr.kube.CoreV1().Pods("ns").Create(context.Background(), testPod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (tr *testRunner) waitPorts(t *testing.T, what string, want int) {
	t.Helper()
	waitFor(t, 5*time.Second, what, func() error {
		if n := tr.nb.State().OwnedPorts(); n != want {
			return fmt.Errorf("%d ports, want %d", n, want)
		}
		return nil
	})
}

func TestRunnerMassDeleteGuard(t *testing.T) {
	tr := newTestRunner(t)
	tr.pods(t, 0, 40)
	tr.waitPorts(t, "a port per pod", 40)
	waitFor(t, 5*time.Second, "pods annotated", func() error {
		p, err := tr.kube.CoreV1().Pods("ns").Get(context.Background(), "p39", metav1.GetOptions{})
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
	tr.stepDown()
	for i := range 30 {
		if err := tr.kube.CoreV1().Pods("ns").Delete(context.Background(), fmt.Sprintf("p%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the informers without the deleted pods", func() error {
		if n := len(tr.r.src.Inputs().Inputs.Pods); n != 10 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
	tr.lead()
	waitFor(t, 5*time.Second, "pass refused", func() error {
		if n := testutil.ToFloat64(tr.r.m.passes.WithLabelValues("full", "refused")); n < 1 {
			return fmt.Errorf("refused passes %v", n)
		}
		return nil
	})
	if n := tr.nb.State().OwnedPorts(); n != 40 {
		t.Errorf("after a refused mass delete: %d ports, want all 40 kept", n)
	}
	if ok, why := tr.r.ready(); ok || !strings.Contains(why, "refusing mass delete") {
		t.Errorf("ready() = %v, %q; want not ready naming the refusal", ok, why)
	}
}

func TestRunnerUnreadableWithholdsDeletes(t *testing.T) {
	broken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"namespace": "ns", "name": "broken"},
		"spec":     map[string]any{"running": "yes"},
	}}
	tr := newTestRunner(t, broken)
	tr.pods(t, 0, 3)
	tr.waitPorts(t, "a port per pod", 3)
	if err := tr.kube.CoreV1().Pods("ns").Delete(context.Background(), "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "delete withheld", func() error {
		if n := testutil.ToFloat64(tr.r.m.withheld); n != 1 {
			return fmt.Errorf("withheld %v", n)
		}
		return nil
	})
	if n := tr.nb.State().OwnedPorts(); n != 3 {
		t.Errorf("with an unreadable VM: %d ports, want 3 (no deletes)", n)
	}
	// Once the object is readable again, the delete goes through.
	if err := tr.dyn.Resource(sources.GVRVirtualMachine).Namespace("ns").Delete(context.Background(), "broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitPorts(t, "withheld delete carried out", 2)
}

func TestPublisherSkipsOnlyUntilTheInformerCatchesUp(t *testing.T) {
	kube := kubefake.NewClientset(testPod("a"))
	var results []string
	p := newPublisher(kube, nil, logr.Discard(), func(r string) { results = append(results, r) })
	live := map[types.UID]bool{"uid-a": true}
	pp := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.2"}}
	ctx := context.Background()
	p.publish(ctx, []reconcile.Publication{pp}, live)
	p.publish(ctx, []reconcile.Publication{pp}, live) // the informer still shows version 1
	pp.ResourceVersion = "3"                          // someone removed the annotation since
	p.publish(ctx, []reconcile.Publication{pp}, live)
	gone := pp
	gone.Name, gone.UID = "b", "uid-b"
	p.publish(ctx, []reconcile.Publication{gone}, map[types.UID]bool{"uid-b": true})
	if want := []string{"patched", "patched", "gone"}; !slices.Equal(results, want) {
		t.Errorf("publish results = %v, want %v", results, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.2" {
		t.Errorf("pod a = %v, %v; want annotated", got, err)
	}
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
	return get(t, s, "Logical_Switch_Port", name, "_uuid")
}

func unstructuredVM(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"runStrategy": "Halted"},
	}}
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
	tr := startTestRunner(t, testRunnerOptions{
		nbAddr: s.Addr(), dynObjs: []runtime.Object{unstructuredVM("ns", "vm1")}, kubeObjs: []runtime.Object{testPod("p0")},
		beforeStart: func(_ *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
			release = failList(dyn, "virtualmachines")
		},
	})
	before := s.Commits()
	waitFor(t, 5*time.Second, "NB cache loaded", func() error {
		if ok, why := tr.r.synced(); ok || why != "not synced: VirtualMachine" {
			return fmt.Errorf("synced() = %v, %q; want only the VMs unsynced", ok, why)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // passes would have run by now
	if n := s.Commits() - before; n != 0 {
		t.Errorf("%d transactions committed before every informer synced", n)
	}
	for _, name := range []string{"vm1.ns", "gone.ns"} {
		if get(t, s, "Logical_Switch_Port", name, "_uuid") == "" {
			t.Errorf("port %s deleted before every informer synced", name)
		}
	}
	release()
	waitFor(t, 15*time.Second, "the first pass", func() error {
		st := tr.nb.State()
		if st.Ports["p0.ns"] == nil || st.Ports["gone.ns"] != nil {
			return fmt.Errorf("p0.ns %v, gone.ns %v", st.Ports["p0.ns"] != nil, st.Ports["gone.ns"] != nil)
		}
		return nil
	})
	if u := get(t, s, "Logical_Switch_Port", "vm1.ns", "_uuid"); u != vmUUID {
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
	broken := unstructuredVM("ns", "broken")
	broken.Object["spec"] = map[string]any{"running": "yes"}
	vmOnly := []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
		{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
	}}}
	var release func()
	tr := startTestRunner(t, testRunnerOptions{
		nbAddr: s.Addr(), dynObjs: []runtime.Object{broken, solo}, kubeObjs: []runtime.Object{testPod("p0")}, resources: vmOnly,
		beforeStart: func(_ *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
			release = failList(dyn, "virtualmachineinstances")
		},
	})
	waitFor(t, 5*time.Second, "p0's port, and the delete withheld", func() error {
		if tr.nb.State().Ports["p0.ns"] == nil || testutil.ToFloat64(tr.r.m.withheld) != 1 {
			return fmt.Errorf("p0.ns %v, withheld %v", tr.nb.State().Ports["p0.ns"] != nil, testutil.ToFloat64(tr.r.m.withheld))
		}
		return nil
	})

	// VMIs are served now; their informer starts and its lists fail.
	tr.kube.Resources = []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
		{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
		{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Namespaced: true},
	}}}
	if err := tr.r.src.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.r.src.HasSynced() {
		t.Fatal("the new VMI informer is synced already: the list did not block")
	}
	// Every object is readable now: only the unsynced informer withholds.
	if err := tr.dyn.Resource(sources.GVRVirtualMachine).Namespace("ns").Delete(context.Background(), "broken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.pods(t, 1, 2)
	waitFor(t, 5*time.Second, "a pass after the VM went", func() error {
		if tr.nb.State().Ports["p1.ns"] == nil {
			return fmt.Errorf("no p1.ns")
		}
		return nil
	})
	if u := get(t, s, "Logical_Switch_Port", "solo.ns", "_uuid"); u != soloUUID {
		t.Errorf("solo.ns uuid %q, want %q: deleted while VMIs were not synced", u, soloUUID)
	}
	release()
	waitConvergedTo(t, tr, s, "solo.ns", soloUUID)
}

// waitConvergedTo waits until a pass plans nothing and checks that port
// name is still the row with uuid.
func waitConvergedTo(t *testing.T, tr *testRunner, s *nbtest.Server, name, uuid string) {
	t.Helper()
	waitConverged(t, tr)
	if u := get(t, s, "Logical_Switch_Port", name, "_uuid"); u != uuid {
		t.Errorf("%s uuid %q, want %q", name, u, uuid)
	}
}
