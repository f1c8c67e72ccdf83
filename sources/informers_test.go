package sources

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

type fakes struct {
	kube  *kubefake.Clientset
	dyn   *dynamicfake.FakeDynamicClient
	disco *fakediscovery.FakeDiscovery
	inf   *Informers
}

func newFakes(t *testing.T, kubevirt, multus bool, objs ...runtime.Object) *fakes {
	t.Helper()
	var kubeObjs, dynObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Pod, *corev1.Namespace, *appsv1.StatefulSet:
			kubeObjs = append(kubeObjs, o)
		default:
			dynObjs = append(dynObjs, o)
		}
	}
	f := &fakes{
		kube: kubefake.NewClientset(kubeObjs...),
		dyn:  dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), ListKinds, dynObjs...),
	}
	f.disco = f.kube.Discovery().(*fakediscovery.FakeDiscovery)
	f.install(kubevirt, multus)
	f.inf = NewInformers(InformerOptions{Kube: f.kube, Dynamic: f.dyn, Logger: logr.Discard()})
	return f
}

func (f *fakes) install(kubevirt, multus bool) {
	f.disco.Resources = nil
	if kubevirt {
		f.disco.Resources = append(f.disco.Resources, &metav1.APIResourceList{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
			{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
			{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Namespaced: true},
			{Name: "virtualmachineinstancemigrations", Kind: "VirtualMachineInstanceMigration", Namespaced: true},
		}})
	}
	if multus {
		f.disco.Resources = append(f.disco.Resources, &metav1.APIResourceList{GroupVersion: "k8s.cni.cncf.io/v1", APIResources: []metav1.APIResource{
			{Name: "network-attachment-definitions", Kind: "NetworkAttachmentDefinition", Namespaced: true},
		}})
	}
}

func start(t *testing.T, f *fakes) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.inf.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitSynced(t, f.inf)
	return ctx
}

func waitSynced(t *testing.T, inf *Informers) {
	t.Helper()
	if !cache.WaitForCacheSync(timeout(t, 5*time.Second), inf.HasSynced) {
		t.Fatalf("HasSynced() still false: %v", inf.Synced())
	}
}

func timeout(t *testing.T, d time.Duration) <-chan struct{} {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx.Done()
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
}

func vm(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

func TestInformersMissingCRDs(t *testing.T) {
	f := newFakes(t, false, false, pod("default", "a"))
	ctx := start(t, f)
	if got := f.inf.Absent(); len(got) != 7 {
		t.Errorf("Absent() = %v, want the 7 custom kinds", got)
	}
	snap := f.inf.Inputs()
	if snap.Inputs.PodCount() != 1 || snap.Inputs.VMCount() != 0 {
		t.Errorf("Inputs() = %d pods %d VMs, want 1 and 0", snap.Inputs.PodCount(), snap.Inputs.VMCount())
	}
	// Discovery again while still absent changes nothing (and logs nothing).
	if err := f.inf.Discover(ctx); err != nil || len(f.inf.Absent()) != 7 {
		t.Fatalf("Discover() = %v, Absent() = %v", err, f.inf.Absent())
	}

	// KubeVirt gets installed: Discover picks it up.
	if _, err := f.dyn.Resource(GVRVirtualMachine).Namespace("default").Create(ctx,
		vm("default", "db", map[string]any{"runStrategy": "Halted"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.install(true, false)
	drain(f.inf)
	if err := f.inf.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, f.inf)
	if got := f.inf.Absent(); !slices.Equal(got, []Kind{KindNetworkAttachmentDefinition, KindSubnet, KindIP, KindIPAMClaim}) {
		t.Errorf("Absent() after installing KubeVirt = %v, want [NetworkAttachmentDefinition Subnet IP IPAMClaim]", got)
	}
	eventually(t, "VM read after Discover", func() error {
		if n := f.inf.Inputs().Inputs.VMCount(); n != 1 {
			return fmt.Errorf("%d VMs", n)
		}
		return nil
	})
	select {
	case <-f.inf.Changes():
	default:
		t.Error("no change notification after a kind appeared")
	}
}

func drain(inf *Informers) {
	select {
	case <-inf.Changes():
	default:
	}
}

func TestInformersConvert(t *testing.T) {
	good := vm("ns", "db", map[string]any{
		"runStrategy": "Halted",
		"template": map[string]any{"spec": map[string]any{
			"networks": []any{
				map[string]any{"name": "default", "pod": map[string]any{}},
				map[string]any{"name": "blue", "multus": map[string]any{"networkName": "blue"}},
			},
		}},
	})
	good.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "virtctl"}})
	// A string where a boolean belongs: stored (the CRD does not validate)
	// but not a VirtualMachine.
	bad := vm("ns", "broken", map[string]any{"running": "yes"})
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"namespace": "ns", "name": "blue"},
		"spec":     map[string]any{"config": `{"type":"ovn-k8s-cni-overlay","subnets":"192.168.0.0/24"}`},
	}}
	f := newFakes(t, true, true, good, bad, pod("ns", "p"))
	// Seeded objects are tracked under a resource guessed from the kind
	// ("networkattachmentdefinitions"); create the NAD under its real one.
	if _, err := f.dyn.Resource(GVRNetworkAttachmentDefinition).Namespace("ns").Create(context.Background(), nad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, f)
	snap := f.inf.Inputs()
	if snap.Inputs.VMCount() != 1 {
		t.Fatalf("Inputs() holds %d VMs, want 1", snap.Inputs.VMCount())
	}
	var v *kubevirtv1.VirtualMachine
	for _, vm := range snap.Inputs.AllVMs() {
		v = vm
	}
	if v.Name != "db" || v.Spec.Template == nil || len(v.Spec.Template.Spec.Networks) != 2 ||
		v.Spec.Template.Spec.Networks[1].Multus == nil || v.Spec.Template.Spec.Networks[1].Multus.NetworkName != "blue" {
		t.Errorf("converted VM = %+v, want db with networks default and multus blue", v.Spec.Template)
	}
	if len(v.ManagedFields) != 0 || len(slices.Collect(snap.Inputs.AllPods())[0].ManagedFields) != 0 {
		t.Errorf("managed fields kept: VM %v pod %v", v.ManagedFields, slices.Collect(snap.Inputs.AllPods())[0].ManagedFields)
	}
	if len(snap.Unreadable) != 1 || snap.Unreadable[0].Name != "broken" || snap.Unreadable[0].Kind != KindVirtualMachine {
		t.Errorf("Unreadable = %v, want VirtualMachine ns/broken", snap.Unreadable)
	}
	if n := snap.Inputs.NetworkAttachmentDefinitions; len(n) != 1 || n[0].Spec.Config == "" {
		t.Errorf("Inputs().NetworkAttachmentDefinitions = %v, want blue with its config", n)
	}
}

// TestInformersIP reads kube-ovn's IP objects (cluster-scoped) into their
// typed form.
func TestInformersIP(t *testing.T) {
	ip := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeovn.io/v1", "kind": "IP",
		"metadata": map[string]any{"name": "db.tenant"},
		"spec": map[string]any{"podName": "db", "namespace": "tenant", "subnet": "ovn-default", "podType": "VirtualMachine", "nodeName": "node-1",
			"ipAddress": "10.16.0.7", "v4IpAddress": "10.16.0.7", "macAddress": "00:00:00:4f:7a:03", "attachSubnets": []any{}},
	}}
	f := newFakes(t, false, false)
	if _, err := f.dyn.Resource(GVRIP).Create(context.Background(), ip, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.disco.Resources = append(f.disco.Resources, &metav1.APIResourceList{GroupVersion: "kubeovn.io/v1", APIResources: []metav1.APIResource{
		{Name: "ips", Kind: "IP"},
	}})
	start(t, f)
	snap := f.inf.Inputs()
	got := snap.Inputs.IPs
	// The fields Build reads, as written: of a VM's port, its podType and
	// nodeName too (where kube-ovn last wrote it from); attachSubnets,
	// which it does not read, dropped.
	if len(got) != 1 || got[0].Name != "db.tenant" || got[0].Spec.PodName != "db" || got[0].Spec.Namespace != "tenant" ||
		got[0].Spec.Subnet != "ovn-default" || got[0].Spec.V4IPAddress != "10.16.0.7" || got[0].Spec.MacAddress != "00:00:00:4f:7a:03" ||
		got[0].Spec.PodType != "VirtualMachine" || got[0].Spec.NodeName != "node-1" || got[0].Spec.AttachSubnets != nil {
		t.Errorf("Inputs().IPs = %+v, want db.tenant as written, with podType and nodeName", got)
	}
	if len(snap.Unreadable) != 0 {
		t.Errorf("Unreadable = %v", snap.Unreadable)
	}
}

func TestInformersCoalesce(t *testing.T) {
	var events atomic.Int64
	f := newFakes(t, false, false)
	f.inf.opts.OnEvent = func(Kind) { events.Add(1) }
	ctx := start(t, f)
	drain(f.inf)
	const n = 50
	for i := range n {
		if _, err := f.kube.CoreV1().Pods("default").Create(ctx, pod("default", fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every pod listed and its event handled", func() error {
		if got := f.inf.Inputs().Inputs.PodCount(); got != n {
			return fmt.Errorf("%d pods", got)
		}
		if got := events.Load(); got < n {
			return fmt.Errorf("OnEvent called %d times, want >= %d", got, n)
		}
		return nil
	})
	// Many events, at most one pending notification.
	select {
	case <-f.inf.Changes():
	default:
		t.Fatal("no change notification")
	}
	select {
	case <-f.inf.Changes():
		t.Error("a second notification was pending: not coalesced")
	default:
	}
	// A delete notifies too.
	if err := f.kube.CoreV1().Pods("default").Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.inf.Changes():
	case <-timeout(t, 5*time.Second):
		t.Fatal("no notification after a delete")
	}
}

func TestUnwrap(t *testing.T) {
	p := pod("ns", "a")
	for _, tc := range []struct {
		name string
		in   any
	}{
		{"object", p},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}},
	} {
		if got := Unwrap(tc.in); got != p {
			t.Errorf("Unwrap(%s) = %v, want the pod", tc.name, got)
		}
	}
}

func TestTransformIdempotent(t *testing.T) {
	tr := typedTransform(KindVirtualMachine)
	u := vm("ns", "db", map[string]any{"runStrategy": "Always"})
	once, err := tr(u)
	if err != nil {
		t.Fatal(err)
	}
	twice, _ := tr(once)
	if once != twice {
		t.Errorf("transform(transform(x)) = %T, want the same object", twice)
	}
	ts, _ := tr(cache.DeletedFinalStateUnknown{Key: "ns/db", Obj: vm("ns", "db", nil)})
	if d, ok := ts.(cache.DeletedFinalStateUnknown); !ok || d.Obj == nil {
		t.Errorf("transform(tombstone) = %#v", ts)
	} else if _, ok := d.Obj.(*unstructured.Unstructured); ok {
		t.Errorf("tombstone's object not converted: %T", d.Obj)
	}
}

// Snapshot.Version stays while nothing changes and moves with every event,
// so a snapshot whose Version equals an earlier one's holds the same objects.
func TestInformersVersion(t *testing.T) {
	f := newFakes(t, false, false)
	ctx := start(t, f)
	if _, err := f.kube.CoreV1().Pods("default").Create(ctx, pod("default", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var v1 uint64
	eventually(t, "the pod listed", func() error {
		snap := f.inf.Inputs()
		if snap.Inputs.PodCount() != 1 {
			return fmt.Errorf("%d pods", snap.Inputs.PodCount())
		}
		// The store can hold the pod before its event is handled.
		if v := f.inf.Inputs().Version; v != snap.Version {
			return fmt.Errorf("version moved from %d to %d", snap.Version, v)
		}
		v1 = snap.Version
		return nil
	})
	if v := f.inf.Inputs().Version; v != v1 {
		t.Errorf("Inputs().Version = %d, then %d with nothing changed", v1, v)
	}
	if _, err := f.kube.CoreV1().Pods("default").Create(ctx, pod("default", "b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new version", func() error {
		if v := f.inf.Inputs().Version; v == v1 {
			return fmt.Errorf("version still %d after a pod was created", v)
		}
		return nil
	})
}

// TestInformersCRDInstalledAfterStart: KubeVirt's CRD installed after the
// informers started is seen through its CRD, without waiting for a resync:
// its kind is watched and read.
func TestInformersCRDInstalledAfterStart(t *testing.T) {
	f := newFakes(t, false, false)
	ctx := start(t, f)
	if _, err := f.dyn.Resource(GVRVirtualMachine).Namespace("default").Create(ctx,
		vm("default", "db", map[string]any{"runStrategy": "Halted"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.install(true, false)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "virtualmachines.kubevirt.io"},
		"spec":     map[string]any{"group": "kubevirt.io", "names": map[string]any{"plural": "virtualmachines", "kind": "VirtualMachine"}},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}},
	}}
	if _, err := f.dyn.Resource(GVRCustomResourceDefinition).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "VM read once its CRD appeared", func() error {
		if n := f.inf.Inputs().Inputs.VMCount(); n != 1 {
			return fmt.Errorf("%d VMs, absent %v", n, f.inf.Absent())
		}
		return nil
	})
}

// installKubeOVN makes discovery serve kube-ovn's Subnets.
func (f *fakes) installKubeOVN() {
	f.disco.Resources = append(f.disco.Resources, &metav1.APIResourceList{GroupVersion: "kubeovn.io/v1", APIResources: []metav1.APIResource{
		{Name: "subnets", Kind: "Subnet", Namespaced: false},
	}})
}

// TestInformersKubeOVN reads kube-ovn's Subnets (a CRD, through the dynamic
// client, converted to their typed form), Namespaces and StatefulSets (of
// which only replicas and ordinals are kept).
func TestInformersKubeOVN(t *testing.T) {
	replicas := int32(3)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "web",
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", ResourceVersion: "1",
		Annotations: map[string]string{"ovn.kubernetes.io/logical_switch": "subnet1"}}}
	subnet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeovn.io/v1", "kind": "Subnet",
		"metadata": map[string]any{"name": "subnet1"},
		"spec": map[string]any{"cidrBlock": "10.66.0.0/16", "gateway": "10.66.0.1", "excludeIps": []any{"10.66.0.1..10.66.0.10"},
			"namespaces": []any{"ns1"}, "natOutgoing": true, "gatewayType": "distributed"},
	}}
	f := newFakes(t, false, false, pod("default", "a"), ns, sts, subnet)
	f.installKubeOVN()
	start(t, f)
	if got := f.inf.Absent(); slices.Contains(got, KindSubnet) {
		t.Fatalf("Absent() = %v, want Subnet served", got)
	}
	snap := f.inf.Inputs()
	in := snap.Inputs
	if len(snap.Unreadable) != 0 {
		t.Fatalf("Unreadable = %v", snap.Unreadable)
	}
	if len(in.Subnets) != 1 || in.Subnets[0].Name != "subnet1" || in.Subnets[0].Spec.CIDRBlock != "10.66.0.0/16" ||
		!slices.Equal(in.Subnets[0].Spec.Namespaces, []string{"ns1"}) || !slices.Equal(in.Subnets[0].Spec.ExcludeIps, []string{"10.66.0.1..10.66.0.10"}) {
		t.Errorf("Inputs().Subnets = %+v, want subnet1 with its spec", in.Subnets)
	}
	if len(in.Namespaces) != 1 || in.Namespaces[0].Annotations["ovn.kubernetes.io/logical_switch"] != "subnet1" {
		t.Errorf("Inputs().Namespaces = %+v, want ns1 with its annotation", in.Namespaces)
	}
	if len(in.StatefulSets) != 1 || *in.StatefulSets[0].Spec.Replicas != 3 || len(in.StatefulSets[0].Spec.Template.Spec.Containers) != 0 {
		t.Errorf("Inputs().StatefulSets = %+v, want web with 3 replicas and no template", in.StatefulSets)
	}
}

// changedRefs parses "Kind/ns/name" (or "Kind/name") into refs, in order.
func changedRefs(refs ...string) []state.ObjectRef {
	out := make([]state.ObjectRef, 0, len(refs))
	for _, r := range refs {
		p := strings.Split(r, "/")
		if len(p) == 2 {
			p = []string{p[0], "", p[1]}
		}
		out = append(out, state.ObjectRef{Kind: p[0], Namespace: p[1], Name: p[2]})
	}
	return out
}

// waitEvents waits until OnEvent has been called n times: every handler
// has then recorded its object.
func waitEvents(t *testing.T, events *atomic.Int64, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d events handled", n), func() error {
		if got := events.Load(); got != n {
			return fmt.Errorf("%d events", got)
		}
		return nil
	})
}

// TestInformersChanged: consecutive snapshots name exactly the objects
// created, updated or deleted in between, of any kind, each once; an update
// that leaves the resource version (a resync) names nothing; the first
// snapshot and one after a kind appeared say AllChanged.
func TestInformersChanged(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", ResourceVersion: "1"}}
	f := newFakes(t, true, false, pod("default", "a"), pod("default", "b"), ns, vm("default", "db", nil))
	var events atomic.Int64
	f.inf.opts.OnEvent = func(Kind) { events.Add(1) }
	ctx := start(t, f)
	waitEvents(t, &events, 4)
	first := f.inf.Take()
	if !first.AllChanged || first.Changed != nil {
		t.Errorf("first Take() = AllChanged %v Changed %v, want AllChanged", first.AllChanged, first.Changed)
	}
	if snap := f.inf.Take(); snap.AllChanged || len(snap.Changed) != 0 || snap.Version != first.Version {
		t.Errorf("Take() with nothing changed = AllChanged %v Changed %v Version %d, want nothing since version %d",
			snap.AllChanged, snap.Changed, snap.Version, first.Version)
	}

	pods := f.kube.CoreV1().Pods("default")
	// The same resource version: what a relist delivers for an unchanged
	// object. It is handled before the events that follow it, and dropped.
	if _, err := pods.Update(ctx, pod("default", "b"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Created then updated: named once.
	if _, err := pods.Create(ctx, pod("default", "c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := pod("default", "c")
	c.ResourceVersion = "2"
	if _, err := pods.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := pod("default", "a")
	a.ResourceVersion, a.Annotations = "2", map[string]string{desired.DefaultIPAnnotation: "10.16.0.9"}
	if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns = ns.DeepCopy()
	ns.ResourceVersion, ns.Annotations = "2", map[string]string{desired.NamespaceSwitchAnnotation: "subnet1"}
	if _, err := f.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	vms := f.dyn.Resource(GVRVirtualMachine).Namespace("default")
	if err := vms.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Kept in the store as unconvertible, and named all the same.
	if _, err := vms.Create(ctx, vm("default", "broken", map[string]any{"running": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, &events, 4+6)
	snap := f.inf.Take()
	want := changedRefs("Namespace/ns1", "Pod/default/a", "Pod/default/c", "VirtualMachine/default/broken", "VirtualMachine/default/db")
	if snap.AllChanged || !slices.Equal(snap.Changed, want) {
		t.Errorf("Take().Changed = %v (AllChanged %v), want %v", snap.Changed, snap.AllChanged, want)
	}
	if len(snap.Unreadable) != 1 || snap.Inputs.PodCount() != 3 || snap.Inputs.VMCount() != 0 {
		t.Errorf("Take() = %d pods %d VMs, unreadable %v; want 3 pods and the broken VM unreadable",
			snap.Inputs.PodCount(), len(snap.Inputs.VirtualMachines), snap.Unreadable)
	}
	if next := f.inf.Take(); next.AllChanged || len(next.Changed) != 0 {
		t.Errorf("Take() after that = AllChanged %v Changed %v, want nothing", next.AllChanged, next.Changed)
	}

	// Multus installed: a kind appears, and the informer that starts for
	// it names no object.
	f.install(true, true)
	if err := f.inf.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if snap := f.inf.Take(); !snap.AllChanged {
		t.Errorf("Take() after a kind appeared = Changed %v, want AllChanged", snap.Changed)
	}
}

// captured is an informer that only holds the handler watch registers, so
// a test can deliver the events it chooses.
type captured struct {
	cache.SharedIndexInformer
	h     cache.ResourceEventHandler
	store cache.Store
}

func (c *captured) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	c.h = h
	return nil, nil
}

func (c *captured) GetStore() cache.Store { return c.store }

// GetIndexer is the store, for lookups through its indexes, when it is an
// Indexer.
func (c *captured) GetIndexer() cache.Indexer { return c.store.(cache.Indexer) }

// capture returns informers watching kinds through captured informers,
// their first snapshot taken.
func capture(t *testing.T, kinds ...Kind) (*Informers, map[Kind]*captured) {
	t.Helper()
	s := NewInformers(InformerOptions{Logger: logr.Discard()})
	h := map[Kind]*captured{}
	s.mu.Lock()
	for _, k := range kinds {
		c := &captured{store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
		s.watch(k, c)
		h[k] = c
	}
	s.mu.Unlock()
	if snap := s.Take(); !snap.AllChanged {
		t.Fatalf("first Take() = Changed %v, want AllChanged", snap.Changed)
	}
	return s, h
}

// TestInformersChangedTombstone: a delete delivered as a tombstone names
// the object inside it, or failing that the tombstone's key; an event that
// names nothing makes the snapshot AllChanged.
func TestInformersChangedTombstone(t *testing.T) {
	s, h := capture(t, KindPod, KindIP)
	h[KindPod].h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: pod("ns", "a")})
	h[KindPod].h.OnDelete(&cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod("ns", "b")})
	h[KindPod].h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c"})
	h[KindPod].h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: "not an object"})
	h[KindIP].h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ip1"})
	h[KindPod].h.OnUpdate(pod("ns", "e"), pod("ns", "e"))
	snap := s.Take()
	want := changedRefs("IP/ip1", "Pod/ns/a", "Pod/ns/b", "Pod/ns/c", "Pod/ns/d")
	if snap.AllChanged || !slices.Equal(snap.Changed, want) {
		t.Errorf("Take().Changed = %v (AllChanged %v), want %v", snap.Changed, snap.AllChanged, want)
	}

	h[KindPod].h.OnAdd(pod("ns", "f"), false)
	h[KindPod].h.OnDelete(cache.DeletedFinalStateUnknown{})
	if snap := s.Take(); !snap.AllChanged {
		t.Errorf("Take() after a delete naming nothing = Changed %v, want AllChanged", snap.Changed)
	}
}

// TestInformersChangedOverflow: MaxChanged objects are named; one more
// makes the snapshot AllChanged, and the next names again.
func TestInformersChangedOverflow(t *testing.T) {
	s, h := capture(t, KindPod)
	add := func(n int) {
		for i := range n {
			h[KindPod].h.OnAdd(pod("ns", fmt.Sprintf("p%05d", i)), false)
		}
	}
	add(MaxChanged)
	add(1) // again: no new object
	if snap := s.Take(); snap.AllChanged || len(snap.Changed) != MaxChanged {
		t.Errorf("Take() after %d objects = %d changed, AllChanged %v; want them all named", MaxChanged, len(snap.Changed), snap.AllChanged)
	}
	add(MaxChanged + 1)
	if snap := s.Take(); !snap.AllChanged || snap.Changed != nil {
		t.Errorf("Take() after %d objects = %d changed, AllChanged %v; want AllChanged", MaxChanged+1, len(snap.Changed), snap.AllChanged)
	}
	add(2)
	if snap, want := s.Take(), changedRefs("Pod/ns/p00000", "Pod/ns/p00001"); snap.AllChanged || !slices.Equal(snap.Changed, want) {
		t.Errorf("Take() after an overflow and 2 objects = %v (AllChanged %v), want %v", snap.Changed, snap.AllChanged, want)
	}
}

// TestInformersSyncedAfterHandlers: HasSynced waits until the handlers
// have been given the first listing. A take made before they were done
// left the listing's later objects, thousands, for the next take, which
// then could not say what changed: at 100k pods the first pass after the
// start-up one built in full (1.1 s). The handler's first call is held
// here so that it lags the stores.
func TestInformersSyncedAfterHandlers(t *testing.T) {
	var objs []runtime.Object
	for i := range MaxChanged + 500 {
		objs = append(objs, pod("ns", fmt.Sprintf("p%05d", i)))
	}
	f := newFakes(t, false, false, objs...)
	var once sync.Once
	f.inf = NewInformers(InformerOptions{Kube: f.kube, Dynamic: f.dyn, Logger: logr.Discard(),
		OnEvent: func(Kind) { once.Do(func() { time.Sleep(200 * time.Millisecond) }) }})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := f.inf.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !cache.WaitForCacheSync(timeout(t, 30*time.Second), f.inf.HasSynced) {
		t.Fatalf("HasSynced() still false: %v", f.inf.Synced())
	}
	if snap := f.inf.Take(); !snap.AllChanged || snap.Inputs.PodCount() != len(objs) {
		t.Fatalf("first Take: AllChanged %v, %d pods; want AllChanged and %d pods", snap.AllChanged, snap.Inputs.PodCount(), len(objs))
	}
	if c := f.inf.TakeChanges(); c.AllChanged || len(c.Changed) != 0 {
		t.Errorf("TakeChanges after the first Take, nothing changed since: AllChanged %v, %d named; want neither", c.AllChanged, len(c.Changed))
	}
}

// racingStore runs an event once, right after the store was listed.
type racingStore struct {
	cache.Store
	event func()
}

func (r *racingStore) List() []any {
	l := r.Store.List()
	if e := r.event; e != nil {
		r.event = nil
		e()
	}
	return l
}

// TestInformersChangedRace: an event handled while Take lists the stores,
// for a change that listing missed, is named by the next snapshot, which
// holds the change (this one may name it too: naming twice is harmless).
func TestInformersChangedRace(t *testing.T) {
	s, c := capture(t, KindPod)
	store := &racingStore{Store: c[KindPod].store}
	c[KindPod].store = store
	store.event = func() {
		p := pod("ns", "late")
		_ = store.Add(p)
		c[KindPod].h.OnAdd(p, false) // after the store, as client-go does
	}
	for i, want := range []struct {
		pods    int
		changed []state.ObjectRef
	}{{0, changedRefs("Pod/ns/late")}, {1, changedRefs("Pod/ns/late")}} {
		snap := s.Take()
		if snap.Inputs.PodCount() != want.pods || snap.AllChanged || !slices.Equal(snap.Changed, want.changed) {
			t.Errorf("Take() #%d = %d pods, Changed %v (AllChanged %v); want %d pods, Changed %v",
				i+1, snap.Inputs.PodCount(), snap.Changed, snap.AllChanged, want.pods, want.changed)
		}
	}
}

// TestTakeNamesWhatItShows creates and deletes pods while taking snapshots,
// and checks that every snapshot names each object whose change it shows
// (one it holds that the last did not, or the other way round) in its own
// Changed or an earlier one's: a change is recorded before the store
// holds it, so a pass that rebuilds only what changed sees everything a
// full Build of its snapshot would.
func TestTakeNamesWhatItShows(t *testing.T) {
	f := newFakes(t, false, false)
	ctx := start(t, f)
	if !f.inf.WaitForCacheSync(ctx) {
		t.Fatal("not synced")
	}
	f.inf.Take()
	pods := f.kube.CoreV1().Pods("default")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 400 {
			p := pod("default", fmt.Sprintf("p%d", i))
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				if err := pods.Delete(ctx, fmt.Sprintf("p%d", i/2), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Error(err)
					return
				}
			}
		}
	}()
	held := map[string]bool{} // held by the last snapshot
	takes := 0
	for finished := false; !finished; takes++ {
		select {
		case <-done:
			finished = true
		default:
		}
		snap := f.inf.Take()
		if snap.AllChanged {
			t.Fatalf("snapshot %d: AllChanged", takes)
		}
		named := map[string]bool{}
		for _, r := range snap.Changed {
			named[r.Name] = true
		}
		now := map[string]bool{}
		for p := range snap.Inputs.AllPods() {
			now[p.Name] = true
			if !held[p.Name] && !named[p.Name] {
				t.Fatalf("snapshot %d holds pod %s, which the last did not, and does not name it", takes, p.Name)
			}
		}
		for name := range held {
			if !now[name] && !named[name] {
				t.Fatalf("snapshot %d lost pod %s and does not name it", takes, name)
			}
		}
		held = now
	}
	t.Logf("%d snapshots", takes)
}

// TestInformersChangedTransformedTwice: client-go's watch-list transforms
// each object of an informer's first listing twice (into a temporary
// store, then into the queue) and runs its handler once; an object is in
// flight until the handler is given the last result, and named by no
// snapshot after the one that follows. Of two changes queued, the object
// is in flight until the handler of the second.
// TakeChanges names the same changes as Take.
func TestInformersChangedTransformedTwice(t *testing.T) {
	for _, name := range []string{"Take", "TakeChanges"} {
		t.Run(name, func(t *testing.T) { testChangedTransformedTwice(t, name) })
	}
}

func testChangedTransformedTwice(t *testing.T, take string) {
	s, c := capture(t, KindPod)
	tr := s.recording(typedKind, stripPod)
	deliver := func(obj any) {
		_ = c[KindPod].store.Add(obj)
		c[KindPod].h.OnAdd(obj, false)
	}
	want := func(step string, names ...string) {
		t.Helper()
		var changed []state.ObjectRef
		var all bool
		if take == "Take" {
			snap := s.Take()
			changed, all = snap.Changed, snap.AllChanged
		} else {
			ch := s.TakeChanges()
			changed, all = ch.Changed, ch.AllChanged
		}
		if all || !slices.Equal(changed, changedRefs(names...)) {
			t.Errorf("%s() %s = %v (AllChanged %v), want %v", take, step, changed, all, names)
		}
	}
	streamed, _ := tr(pod("ns", "a"))
	queued, _ := tr(streamed)
	want("with the listing in flight", "Pod/ns/a")
	deliver(queued)
	want("after the handler", "Pod/ns/a")
	want("after that")

	first, _ := tr(pod("ns", "a"))
	second, _ := tr(pod("ns", "a"))
	deliver(first)
	want("after the first of two changes", "Pod/ns/a")
	want("with the second in flight", "Pod/ns/a")
	deliver(second)
	want("after the second", "Pod/ns/a")
	want("after that")
}

// TestInformersKeepOnlyTheirIndexes: the stores keep the indexes lookups
// read and no other (client-go's default index by namespace is a second
// entry for every object), and nothing is left in flight, not even the
// map that held the first listing, once every change has landed.
func TestInformersKeepOnlyTheirIndexes(t *testing.T) {
	f := newFakes(t, true, true, pod("ns", "p"), vm("ns", "db", map[string]any{"runStrategy": "Halted"}))
	start(t, f)
	f.inf.mu.Lock()
	defer f.inf.mu.Unlock()
	for _, k := range []Kind{KindPod, KindVirtualMachine, KindVirtualMachineInstance, KindVirtualMachineInstanceMigration, KindNetworkAttachmentDefinition} {
		inf, ok := f.inf.inf[k]
		if !ok {
			t.Fatalf("no informer of %s", k)
		}
		var got []string
		for name := range inf.GetIndexer().GetIndexers() {
			got = append(got, name)
		}
		var want []string
		for name := range indexers[k] {
			want = append(want, name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s store indexes %v, want %v", k, got, want)
		}
	}
	f.inf.chmu.Lock()
	defer f.inf.chmu.Unlock()
	if f.inf.inflight != nil {
		t.Errorf("in flight after every change landed: %v (a nil map wanted: an empty one keeps its size)", f.inf.inflight)
	}
}
