package sources

import (
	"context"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func kubevirtObj(kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
	}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

// TestTakeChangesLooksUp looks objects up by key and through the
// informers' indexes (a VMI's launcher pods and migrations, a VM's VMIs,
// named as it or not, a StatefulSet's IP objects), and finds an object that cannot be read both
// in Changes.Unreadable and by its lookup, until it is readable again.
func TestTakeChangesLooksUp(t *testing.T) {
	vmi := kubevirtObj("VirtualMachineInstance", "ns", "vmi1", map[string]any{})
	vmi.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1"}})
	// A VMI named as its VM, as KubeVirt names those it starts, and one
	// that no VM owns.
	vmi2 := kubevirtObj("VirtualMachineInstance", "ns", "vm2", map[string]any{})
	vmi2.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm2"}})
	solo := kubevirtObj("VirtualMachineInstance", "ns", "solo", map[string]any{})
	mig := kubevirtObj("VirtualMachineInstanceMigration", "ns", "mig1", map[string]any{"spec": map[string]any{"vmiName": "vmi1"}})
	// A string where a list belongs: stored, but not a VMI.
	broken := kubevirtObj("VirtualMachineInstance", "ns", "broken", map[string]any{"spec": map[string]any{"networks": "yes"}})
	launcher := pod("ns", "virt-launcher-vmi1-a")
	launcher.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vmi1"}}
	// The launchers of another VMI indexed in vmi1's bucket, and of one of
	// its name in another namespace.
	other := ""
	for i := 0; other == ""; i++ {
		if n := fmt.Sprint("vmi-", i); launcherBucket("ns", n) == launcherBucket("ns", "vmi1") {
			other = n
		}
	}
	neighbour := pod("ns", "virt-launcher-"+other+"-b")
	neighbour.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: other}}
	ns2 := ""
	for i := 0; ns2 == ""; i++ {
		if n := fmt.Sprint("ns-", i); launcherBucket(n, "vmi1") == launcherBucket("ns", "vmi1") {
			ns2 = n
		}
	}
	elsewhere := pod(ns2, "virt-launcher-vmi1-c")
	elsewhere.OwnerReferences = launcher.OwnerReferences
	ip := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeovn.io/v1", "kind": "IP",
		"metadata": map[string]any{"name": "db-1.tenant"},
		"spec":     map[string]any{"podName": "db-1", "namespace": "tenant", "subnet": "ovn-default", "ipAddress": "10.16.0.7"},
	}}
	f := newFakes(t, true, false, kubevirtObj("VirtualMachine", "ns", "vm1", nil), launcher, neighbour, elsewhere, pod("ns", "plain"))
	ctx := context.Background()
	for _, c := range []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{{GVRVirtualMachineInstance, vmi}, {GVRVirtualMachineInstance, vmi2}, {GVRVirtualMachineInstance, solo}, {GVRVirtualMachineInstanceMigration, mig}, {GVRVirtualMachineInstance, broken}, {GVRIP, ip}} {
		r := f.dyn.Resource(c.gvr)
		var err error
		if ns := c.obj.GetNamespace(); ns != "" {
			_, err = r.Namespace(ns).Create(ctx, c.obj, metav1.CreateOptions{})
		} else {
			_, err = r.Create(ctx, c.obj, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.disco.Resources = append(f.disco.Resources, &metav1.APIResourceList{GroupVersion: "kubeovn.io/v1", APIResources: []metav1.APIResource{
		{Name: "ips", Kind: "IP"},
	}})
	start(t, f)

	ch := f.inf.TakeChanges()
	if !ch.AllChanged {
		t.Errorf("first TakeChanges() = Changed %v, want AllChanged", ch.Changed)
	}
	if len(ch.Unreadable) != 1 || ch.Unreadable[0].Name != "broken" || ch.Unreadable[0].Kind != KindVirtualMachineInstance {
		t.Errorf("Unreadable = %v, want VirtualMachineInstance ns/broken", ch.Unreadable)
	}
	o := ch.Objects
	names := func(objs ...metav1.Object) []string {
		var out []string
		for _, x := range objs {
			out = append(out, x.GetName())
		}
		return out
	}
	for _, c := range []struct {
		call      string
		got, want []string
	}{
		{"Pod(ns, plain)", names(o.Pod("ns", "plain")), []string{"plain"}},
		{"VirtualMachine(ns, vm1)", names(o.VirtualMachine("ns", "vm1")), []string{"vm1"}},
		{"Migration(ns, mig1)", names(o.Migration("ns", "mig1")), []string{"mig1"}},
		{"Launchers(ns, vmi1)", names(listOf(o.Launchers("ns", "vmi1"))...), []string{"virt-launcher-vmi1-a"}},
		{"Launchers(ns, " + other + ")", names(listOf(o.Launchers("ns", other))...), []string{"virt-launcher-" + other + "-b"}},
		{"Launchers(" + ns2 + ", vmi1)", names(listOf(o.Launchers(ns2, "vmi1"))...), []string{"virt-launcher-vmi1-c"}},
		{"OwnedVMIs(ns, vm1)", names(listOf(o.OwnedVMIs("ns", "vm1"))...), []string{"vmi1"}},
		{"OwnedVMIs(ns, vm2)", names(listOf(o.OwnedVMIs("ns", "vm2"))...), []string{"vm2"}},
		{"OwnedVMIs(ns, solo)", names(listOf(o.OwnedVMIs("ns", "solo"))...), nil},
		{"Migrations(ns, vmi1)", names(listOf(o.Migrations("ns", "vmi1"))...), []string{"mig1"}},
		{"IP(db-1.tenant)", names(o.IP("db-1.tenant")), []string{"db-1.tenant"}},
		{"StatefulSetIPs(tenant, db)", names(listOf(o.StatefulSetIPs("tenant", "db"))...), []string{"db-1.tenant"}},
		{"Launchers(ns, plain)", names(listOf(o.Launchers("ns", "plain"))...), nil},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.call, c.got, c.want)
		}
	}
	if o.Unreadable() != "" {
		t.Errorf("Unreadable() = %q before looking the broken VMI up", o.Unreadable())
	}
	if o.VirtualMachineInstance("ns", "broken") != nil || o.Unreadable() == "" {
		t.Errorf("VirtualMachineInstance(ns, broken) found, or Unreadable() = %q: want none, and named", o.Unreadable())
	}

	// Readable again: named as changed, and no longer unreadable.
	fixed := kubevirtObj("VirtualMachineInstance", "ns", "broken", map[string]any{})
	fixed.SetResourceVersion("")
	if _, err := f.dyn.Resource(GVRVirtualMachineInstance).Namespace("ns").Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VMI readable", func() error {
		ch := f.inf.TakeChanges()
		if len(ch.Unreadable) != 0 || ch.Objects.VirtualMachineInstance("ns", "broken") == nil {
			return fmt.Errorf("Unreadable %v, Changed %v", ch.Unreadable, ch.Changed)
		}
		return nil
	})
	if p := f.inf.Inputs(); len(p.Unreadable) != 0 {
		t.Errorf("Inputs().Unreadable = %v after the fix", p.Unreadable)
	}
}

// listOf turns a list of typed objects into their metadata.
func listOf[T metav1.Object](objs []T) []metav1.Object {
	out := make([]metav1.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// TestTakeChangesUnreadableInFlight: an object a transform found
// unreadable counts as unreadable from then on, before its handler ran,
// until the handler of its last change is given a readable object or a
// deletion.
func TestTakeChangesUnreadableInFlight(t *testing.T) {
	s, c := capture(t, KindVirtualMachine)
	tr := s.recording(func(any) Kind { return KindVirtualMachine }, typedTransform(KindVirtualMachine))
	h, store := c[KindVirtualMachine].h, c[KindVirtualMachine].store
	want := func(step string, unreadable ...string) {
		t.Helper()
		var got []string
		for _, u := range s.TakeChanges().Unreadable {
			got = append(got, u.Name)
		}
		if !slices.Equal(got, unreadable) {
			t.Errorf("TakeChanges().Unreadable %s = %v, want %v", step, got, unreadable)
		}
	}
	bad, _ := tr(vm("ns", "a", map[string]any{"running": "yes"}))
	want("with the unreadable change in flight", "a")
	_ = store.Add(bad)
	h.OnAdd(bad, false)
	want("after its handler", "a")
	good, _ := tr(vm("ns", "a", map[string]any{}))
	want("with a readable change in flight", "a")
	_ = store.Update(good)
	h.OnUpdate(bad, good)
	want("after its handler")
	bad2, _ := tr(vm("ns", "a", map[string]any{"running": "yes"}))
	_ = store.Update(bad2)
	h.OnUpdate(good, bad2)
	want("unreadable again", "a")
	_ = store.Delete(bad2)
	h.OnDelete(bad2)
	want("deleted")
}

// TestTakeChangesNamesWhatLookupsShow creates and deletes pods while taking
// changes and looking every pod up after each take, and checks that a pod
// whose lookup shows a change is named by that take or the next one: a
// pass that rebuilt an owner from an object newer than it was told of
// rebuilds it again.
func TestTakeChangesNamesWhatLookupsShow(t *testing.T) {
	f := newFakes(t, false, false)
	ctx := start(t, f)
	f.inf.TakeChanges()
	const n = 300
	pods := f.kube.CoreV1().Pods("default")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if _, err := pods.Create(ctx, pod("default", fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
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
	seen := map[string]bool{} // by the last round of lookups
	var owed []string         // shown by the last lookups, not named by their take
	takes := 0
	for finished := false; !finished; takes++ {
		select {
		case <-done:
			finished = true
		default:
		}
		ch := f.inf.TakeChanges()
		if ch.AllChanged {
			t.Fatalf("take %d: AllChanged", takes)
		}
		named := map[string]bool{}
		for _, r := range ch.Changed {
			named[r.Name] = true
		}
		for _, name := range owed {
			if !named[name] {
				t.Fatalf("take %d does not name pod %s, whose change the last lookups showed", takes, name)
			}
		}
		owed = nil
		for i := range n {
			name := fmt.Sprintf("p%d", i)
			now := ch.Objects.Pod("default", name) != nil
			if now != seen[name] && !named[name] {
				owed = append(owed, name)
			}
			seen[name] = now
		}
	}
	// Once every handler ran, a take names what the last lookups showed.
	eventually(t, "the last changes named", func() error {
		ch := f.inf.TakeChanges()
		for _, r := range ch.Changed {
			owed = slices.DeleteFunc(owed, func(s string) bool { return s == r.Name })
		}
		if len(owed) > 0 {
			return fmt.Errorf("not named: %v", owed)
		}
		return nil
	})
	t.Logf("%d takes", takes)
}
