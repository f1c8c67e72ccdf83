package sources

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/randfill"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// A stored object gives back, field for field, the lean API object it was
// made from: randomly filled pods, VMs and VMIs (every field, nil or set)
// go through stripPod or leanKubeVirt, then compact and object(). A field
// the lean form keeps and the stored form drops fails here.
func TestStoredRoundTrip(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 2).MaxDepth(8)
	for i := range 300 {
		var pod corev1.Pod
		f.Fill(&pod)
		switch i % 4 { // random keys are seldom those a pod keeps
		case 0:
			pod.Annotations = map[string]string{}
		case 1:
			pod.Annotations = map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5", "kubevirt.io/domain": "vm1",
				"blue.tenant.ovn.kubernetes.io/mac_address.eth1": "0a:58:0a:10:00:05", "k8s.v1.cni.cncf.io/networks": "[]"}
		}
		p, _ := stripPod(&pod)
		var vm kubevirtv1.VirtualMachine
		f.Fill(&vm)
		var vmi kubevirtv1.VirtualMachineInstance
		f.Fill(&vmi)
		for _, l := range []runtime.Object{p.(runtime.Object), leanKubeVirt(&vm), leanKubeVirt(&vmi)} {
			s, ok := compact(l).(stored)
			if !ok {
				t.Fatalf("compact(%T) is not a stored form", l)
			}
			if got := s.object(); !reflect.DeepEqual(got, l) {
				t.Fatalf("object %d: %T stored and given back differs:\n got  %+v\n want %+v", i, l, got, l)
			}
			if again := compact(s); again != s {
				t.Fatalf("compact(stored %T) made a new object", l)
			}
			if cp := s.DeepCopyObject().(stored).object(); !reflect.DeepEqual(cp, l) {
				t.Fatalf("DeepCopyObject of stored %T differs:\n got  %+v\n want %+v", l, cp, l)
			}
		}
	}
}

// The informers' transforms store pods and VMIs, give a stored object
// back as it is (client-go may transform twice), keep tombstones, and pass
// other kinds by (namespaces share the pod informers' transform).
func TestCompactingTransforms(t *testing.T) {
	vmi := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"namespace": "default", "name": "a", "resourceVersion": "7"},
		"status":   map[string]any{"nodeName": "node-1", "phase": "Running"},
	}}
	check := func(tr cache.TransformFunc, obj, gone any) stored {
		t.Helper()
		out, err := tr(obj)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := out.(stored)
		if !ok {
			t.Fatalf("transform of %T gave %T, want a stored form", obj, out)
		}
		if again, _ := tr(s); again != any(s) {
			t.Errorf("transform of a stored %T made a new object", s)
		}
		ts, _ := tr(cache.DeletedFinalStateUnknown{Key: "default/b", Obj: gone})
		if d, ok := ts.(cache.DeletedFinalStateUnknown); !ok || d.Key != "default/b" {
			t.Errorf("transform of a tombstone = %#v", ts)
		} else if _, ok := d.Obj.(stored); !ok {
			t.Errorf("tombstone holds %T, want a stored form", d.Obj)
		}
		return s
	}
	pods := compacting(stripPod)
	if sp := check(pods, fatPod("a", nil), fatPod("b", nil)); typedKind(sp) != KindPod {
		t.Errorf("typedKind(stored pod) = %q", typedKind(sp))
	}
	ns := &corev1.Namespace{}
	ns.Name = "default"
	if out, _ := pods(ns); !reflect.DeepEqual(out, any(ns)) {
		t.Errorf("transform of a namespace gave %#v, want it as it was", out)
	}
	sv := check(compacting(typedTransform(KindVirtualMachineInstance)), vmi, vmi.DeepCopy())
	var bad []Unreadable
	vmis := collect[*kubevirtv1.VirtualMachineInstance](KindVirtualMachineInstance, []any{sv}, &bad)
	if len(bad) > 0 || len(vmis) != 1 || vmis[0].Name != "a" || vmis[0].Status.NodeName != "node-1" || vmis[0].Status.Phase != kubevirtv1.Running {
		t.Errorf("collect(stored VMI) = %+v, unreadable %v", vmis, bad)
	}
}

// The objects of the field manifests (kube-ovn's docs, KubeVirt's examples,
// user guide and migration docs, Multus and ovn-kubernetes multi-homing, as
// those projects publish them) and of examples/cluster, served with
// managed fields and put through the informers' transforms into their
// stored forms, build what the served objects build, on an empty NB and on
// the NB those made.
func TestStoredFieldManifests(t *testing.T) {
	files, err := filepath.Glob("../desired/testdata/field/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no field manifests: %v", err)
	}
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, "../examples/cluster") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			served, _, err := ReadManifests([]string{f})
			if err != nil {
				t.Fatal(err)
			}
			buildsAlike(t, served, throughStores(t, served), cfg, func(_ int, want desired.Result) {
				if want.Want.Ports.Len() == 0 && len(want.Problems) == 0 {
					t.Fatalf("Build made no ports and no problems: the comparison shows nothing")
				}
			})
		})
	}
}

// buildsAlike builds served and read, the same objects through the
// stores, on an empty NB and then on the NB the first round made, and
// fails where they differ; check sees what served builds each round.
func buildsAlike(t *testing.T, served, read desired.Inputs, cfg desired.Config, check func(round int, want desired.Result)) {
	t.Helper()
	have := state.New(0)
	for round := range 2 {
		want := desired.Build(served, cfg, have)
		check(round, want)
		if m := desired.Mismatch(desired.Build(read, cfg, have), want); m != "" {
			t.Errorf("round %d: stored forms build otherwise: %s", round, m)
		}
		have = want.Want
	}
}

// throughStores is served put through the transforms the informers run,
// into the stores' forms, and back out as a snapshot reads it: each object
// served with managed fields (and a VM or VMI with kubectl's last-applied
// copy, disks and volumes).
func throughStores(t *testing.T, served desired.Inputs) desired.Inputs {
	t.Helper()
	pods := transformed(served.Pods, compacting(stripPod), func(p *corev1.Pod) any {
		fat := p.DeepCopy()
		fat.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
		return fat
	})
	vms := transformed(served.VirtualMachines, compacting(typedTransform(KindVirtualMachine)),
		func(vm *kubevirtv1.VirtualMachine) any { return fatten(t, vm) })
	vmis := transformed(served.VirtualMachineInstances, compacting(typedTransform(KindVirtualMachineInstance)),
		func(vmi *kubevirtv1.VirtualMachineInstance) any { return fatten(t, vmi) })
	// The few kinds every Build reads whole, in their lean forms.
	nss := transformed(served.Namespaces, compacting(stripPod), func(ns *corev1.Namespace) any { return ns.DeepCopy() })
	sets := transformed(served.StatefulSets, compacting(stripPod), func(s *appsv1.StatefulSet) any { return s.DeepCopy() })
	subnets := transformed(served.Subnets, compacting(typedTransform(KindSubnet)),
		func(s *kubeovnv1.Subnet) any { return unstructuredOf(t, s) })
	ips := transformed(served.IPs, compacting(typedTransform(KindIP)), func(ip *kubeovnv1.IP) any { return unstructuredOf(t, ip) })
	var bad []Unreadable
	read := served
	read.Namespaces = collect[*corev1.Namespace](KindNamespace, nss, &bad)
	read.StatefulSets = collect[*appsv1.StatefulSet](KindStatefulSet, sets, &bad)
	read.Subnets = collect[*kubeovnv1.Subnet](KindSubnet, subnets, &bad)
	read.IPs = collect[*kubeovnv1.IP](KindIP, ips, &bad)
	read.Pods = collect[*corev1.Pod](KindPod, pods, &bad)
	read.VirtualMachines = collect[*kubevirtv1.VirtualMachine](KindVirtualMachine, vms, &bad)
	read.VirtualMachineInstances = collect[*kubevirtv1.VirtualMachineInstance](KindVirtualMachineInstance, vmis, &bad)
	if len(bad) > 0 {
		t.Fatalf("unreadable: %v", bad)
	}
	for _, objs := range [][]any{pods, vms, vmis} {
		for _, o := range objs {
			if _, ok := o.(stored); !ok {
				t.Fatalf("the transform gave %T, not a stored form", o)
			}
		}
	}
	return read
}

// transformed is each of objs as an informer whose transform is tr stores
// it, served as wire makes it.
func transformed[T any](objs []T, tr cache.TransformFunc, wire func(T) any) []any {
	out := make([]any, 0, len(objs))
	for _, o := range objs {
		s, _ := tr(wire(o))
		out = append(out, s)
	}
	return out
}

// unstructuredOf is obj as the dynamic informer lists it, with managed
// fields.
func unstructuredOf(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-ovn-controller", Operation: "Update"}})
	return u
}

// Two pods decoded from the wire, each string in memory of its own, are
// stored sharing what they hold alike: annotation and label keys,
// namespace, node, phase and owner kind. The annotations' values are each
// pod's own, in one string (desired.Annotations).
func TestStoredPodsShareStrings(t *testing.T) {
	ctrl := true
	pod := func(name, ip, mac string) *storedPod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name),
				Labels: map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": name},
				Annotations: map[string]string{
					"ovn.kubernetes.io/logical_switch": "subnet-a", "ovn.kubernetes.io/cidr": "10.16.0.0/16",
					"ovn.kubernetes.io/gateway": "10.16.0.1", "ovn.kubernetes.io/allocated": "true",
					"ovn.kubernetes.io/ip_address": ip, "ovn.kubernetes.io/mac_address": mac,
				},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: name, UID: "vmi", Controller: &ctrl}},
			},
			Spec:   corev1.PodSpec{NodeName: "node-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		s := storePod(fromWire(t, p))
		return &s
	}
	a := pod("a", "10.16.0.5", "0a:58:0a:10:00:05")
	lists := keyLists.Len()
	b := pod("b", "10.16.0.5", "0a:58:0a:10:00:05") // same values, apart
	if keyLists.Len() != lists {
		t.Error("the pods keep one set of annotation keys in two lists")
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string", what, x, y)
		}
	}
	key := func(m map[string]string, k string) string {
		for mk := range m {
			if mk == k {
				return mk
			}
		}
		t.Fatalf("no key %q in %v", k, m)
		return ""
	}
	same("namespace", a.namespace, b.namespace)
	same("node", a.node, b.node)
	same("phase", a.phase.String(), b.phase.String())
	same("owner kind", a.owners[0].Kind, b.owners[0].Kind)
	same("owner API version", a.owners[0].APIVersion, b.owners[0].APIVersion)
	same("label key", key(a.labels.Map(), "kubevirt.io"), key(b.labels.Map(), "kubevirt.io"))
	am, bm := a.annotations.Map(), b.annotations.Map()
	if len(am) != 6 {
		t.Errorf("annotations kept %v, want the six written", am)
	}
	for k := range am {
		same("annotation key "+k, key(am, k), key(bm, k))
		if am[k] != bm[k] {
			t.Errorf("annotation %s: %q and %q", k, am[k], bm[k])
		}
	}
}

// Two VMIs decoded from JSON, each string in memory of its own, are
// stored sharing the names of their networks, Multus networks and
// interfaces and their interfaces' states; their MACs stay their own.
func TestStoredVMIsShareNetworkNames(t *testing.T) {
	vmi := func(name, mac string) *storedVMI {
		v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
					{Name: "blue", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/blue-net"}}}},
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
					{Name: "default"}, {Name: "blue", MacAddress: mac, State: kubevirtv1.InterfaceStateAbsent}}}},
			}}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var decoded kubevirtv1.VirtualMachineInstance
		if err := json.Unmarshal(data, &decoded); err != nil {
			t.Fatal(err)
		}
		s := storeVMI(&decoded)
		return &s
	}
	a, b := vmi("a", "02:00:00:00:00:0a"), vmi("b", "02:00:00:00:00:0a")
	one := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string", what, x, y)
		}
	}
	for i := range 2 {
		one("network name", a.spec.networks[i].name, b.spec.networks[i].name)
		one("interface name", a.spec.interfaces[i].name, b.spec.interfaces[i].name)
	}
	one("Multus network", a.spec.networks[1].multus, b.spec.networks[1].multus)
	one("interface state", string(a.spec.interfaces[1].state), string(b.spec.interfaces[1].state))
	if x, y := a.spec.interfaces[1].mac, b.spec.interfaces[1].mac; x != y || unsafe.StringData(x) == unsafe.StringData(y) {
		t.Errorf("MACs %q and %q: want equal strings of their own", x, y)
	}
}

// VMIs of one shape (networks, their sources and interfaces alike, no
// MAC) share their stored lists of networks and interfaces; a list with a
// MAC is the VMI's own, and lists that differ in any field are apart, even
// where their strings joined read alike. Each is made back as stored.
func TestStoredVMIsShareSpecLists(t *testing.T) {
	spec := func(netName, multus string, deflt bool, mac string) kubevirtv1.VirtualMachineInstanceSpec {
		return kubevirtv1.VirtualMachineInstanceSpec{
			Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
				{Name: netName, NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: multus, Default: deflt}}}},
			Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
				{Name: "default"}, {Name: netName, MacAddress: mac}}}},
		}
	}
	store := func(name string, sp kubevirtv1.VirtualMachineInstanceSpec) *storedVMI {
		v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}, Spec: sp}
		s := storeVMI(v.DeepCopy())
		var m specMemory
		var back kubevirtv1.VirtualMachineInstanceSpec
		s.spec.fill(&back, &m)
		if !equality.Semantic.DeepEqual(back, sp) {
			t.Errorf("%s: made back as networks %s, interfaces %+v; want %s, %+v", name,
				toJSON(t, back.Networks), back.Domain.Devices.Interfaces, toJSON(t, sp.Networks), sp.Domain.Devices.Interfaces)
		}
		return &s
	}
	a, b := store("a", spec("blue", "tenant/blue", false, "")), store("b", spec("blue", "tenant/blue", false, ""))
	if &a.spec.networks[0] != &b.spec.networks[0] || &a.spec.interfaces[0] != &b.spec.interfaces[0] {
		t.Error("two VMIs of one shape do not share their lists")
	}
	withMAC := store("mac", spec("blue", "tenant/blue", false, "02:00:00:00:00:0a"))
	if &withMAC.spec.networks[0] != &a.spec.networks[0] {
		t.Error("a VMI whose interface has a MAC does not share its networks")
	}
	if &withMAC.spec.interfaces[0] == &a.spec.interfaces[0] {
		t.Error("a VMI whose interface has a MAC shares its interfaces")
	}
	for name, sp := range map[string]kubevirtv1.VirtualMachineInstanceSpec{
		"the default Multus network": spec("blue", "tenant/blue", true, ""),
		"another Multus network":     spec("blue", "tenant/green", false, ""),
		"names cut elsewhere":        spec("blu", "etenant/blue", false, ""),
	} {
		if c := store(name, sp); &c.spec.networks[0] == &a.spec.networks[0] {
			t.Errorf("%s: shares the networks of another", name)
		}
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Stored objects of one type share one TypeMeta, which setting an
// object's kind through GetObjectKind does not change.
func TestStoredTypeShared(t *testing.T) {
	vm := func(name string) *storedVM {
		s := storeVM(&kubevirtv1.VirtualMachine{TypeMeta: metav1.TypeMeta{Kind: strings.Clone("VirtualMachine"), APIVersion: strings.Clone("kubevirt.io/v1")},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"}})
		return &s
	}
	a, b := vm("a"), vm("b")
	if a.typ != b.typ {
		t.Error("two VMs keep a TypeMeta each")
	}
	a.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v9", Kind: "Other"})
	if got := b.typeMeta(); got.Kind != "VirtualMachine" || got.APIVersion != "kubevirt.io/v1" || a.typeMeta() != got {
		t.Errorf("setting one VM's kind made the stored types %v and %v", a.typeMeta(), got)
	}
}

// A store's stored pods are listed in Inputs.StoredPods, each made into
// its API object at the read: every read a new object, equal to the lean
// pod stored; Pod finds each by name. A pod a store holds in its API form
// (no transform made it stored) is in Pods, and one that could not be
// read is Unreadable, as before.
func TestStoredPodsListed(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		p, _ := stripPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name), ResourceVersion: "rv-" + name,
			Annotations: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5"}},
			Spec: corev1.PodSpec{NodeName: "node-1"}})
		return p.(*corev1.Pod)
	}
	a, b, plain := pod("a"), pod("b"), pod("plain")
	var in desired.Inputs
	var bad []Unreadable
	u := &unstructured.Unstructured{}
	u.SetNamespace("tenant")
	u.SetName("broken")
	broken := &unconvertible{Unstructured: u, err: "bad"}
	listPods(&in, []any{compact(a), plain, compact(b), broken}, &bad)

	if len(in.Pods) != 1 || in.Pods[0] != plain {
		t.Errorf("Pods = %v, want the pod stored in its API form", in.Pods)
	}
	if len(bad) != 1 || bad[0].Name != "broken" || bad[0].Kind != KindPod {
		t.Errorf("unreadable = %v, want tenant/broken", bad)
	}
	if in.StoredPods == nil || in.StoredPods.Len() != 2 || in.PodCount() != 3 {
		t.Fatalf("StoredPods lists %v, PodCount %d; want a and b, and 3", in.StoredPods, in.PodCount())
	}
	var first []*corev1.Pod
	for p, ann := range in.StoredPods.All() {
		first = append(first, p)
		if !reflect.DeepEqual(ann.Map(), p.Annotations) || ann.Len() == 0 {
			t.Errorf("StoredPods.All() gave %s with annotations %v, want its own %v", p.Name, ann.Map(), p.Annotations)
		}
	}
	want := []*corev1.Pod{a, b}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("StoredPods.All() = %+v, want %+v", first, want)
	}
	i := 0
	for p := range in.StoredPods.All() {
		if p == first[i] {
			t.Errorf("StoredPods.All() gave %s twice as one object: a reader may keep what it reads", p.Name)
		}
		i++
	}
	versions := map[string]string{}
	for uid, rv := range in.StoredPods.Versions() {
		versions[uid] = rv
	}
	if want := (map[string]string{string(a.UID): a.ResourceVersion, string(b.UID): b.ResourceVersion}); !maps.Equal(versions, want) {
		t.Errorf("StoredPods.Versions() = %v, want %v", versions, want)
	}
	if got := slices.Collect(in.AllPods()); len(got) != 3 || got[0] != plain {
		t.Errorf("AllPods() = %v, want plain, then a and b", got)
	}
	if got := in.StoredPods.Pod("tenant", "b"); !reflect.DeepEqual(got, b) {
		t.Errorf("StoredPods.Pod(tenant, b) = %+v, want %+v", got, b)
	}
	if got := in.StoredPods.Pod("tenant", "plain"); got != nil {
		t.Errorf("StoredPods.Pod(tenant, plain) = %v, want none", got)
	}
	if got := slices.Collect(in.StoredPods.Launchers()); len(got) != 0 {
		t.Errorf("StoredPods.Launchers() = %v, want none", got)
	}
	launcher := pod("virt-launcher-vm1-abcde")
	launcher.Labels = map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": "vm1"}
	listPods(&in, []any{compact(a), compact(launcher)}, &bad)
	if got := slices.Collect(in.StoredPods.Launchers()); len(got) != 1 || !reflect.DeepEqual(got[0], launcher) {
		t.Errorf("StoredPods.Launchers() = %v, want the virt-launcher pod alone", got)
	}
	objs := desired.ObjectsOf(in)
	if objs.Pod("tenant", "a") == nil || objs.Pod("tenant", "gone") != nil || len(objs.Launchers("tenant", "vm1")) != 1 {
		t.Error("ObjectsOf(in) does not find the stored pods")
	}
}

// StoredPods.Read yields the pods All yields, launchers too, in one pod's
// memory, each made whole over what the one before left there.
func TestStoredPodsRead(t *testing.T) {
	gone := metav1.Now()
	mk := func(name string, labels map[string]string, deleted *metav1.Time) any {
		p, _ := stripPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name),
			Labels: labels, DeletionTimestamp: deleted,
			Annotations: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5"}},
			Spec: corev1.PodSpec{NodeName: "node-" + name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		return compact(p)
	}
	var in desired.Inputs
	listPods(&in, []any{
		mk("leaving", map[string]string{"vm.kubevirt.io/name": "x"}, &gone),
		mk("launcher", map[string]string{"kubevirt.io": "virt-launcher"}, nil),
		mk("plain", nil, nil),
		mk("last", nil, nil),
	}, nil)
	all := slices.Collect(maps.Keys(maps.Collect(in.StoredPods.All())))
	slices.SortFunc(all, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	var read, seen []*corev1.Pod
	for p := range in.StoredPods.Read() {
		read, seen = append(read, p), append(seen, p.DeepCopy())
	}
	slices.SortFunc(seen, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	if !reflect.DeepEqual(seen, all) {
		t.Fatalf("Read() yielded\n%+v\nAll()\n%+v", seen, all)
	}
	for i := range read {
		if read[i] != read[0] {
			t.Errorf("Read() made pod %d in a memory of its own", i)
		}
		if reflect.ValueOf(read[i].Annotations).UnsafePointer() != reflect.ValueOf(read[0].Annotations).UnsafePointer() {
			t.Errorf("Read() made the annotations of pod %d in a map of their own", i)
		}
	}
}

// A listing's VMs and VMIs in their stored form are listed through a
// desired.Stored that makes each at each read, anew; those in their API
// form stay in the list before them, and one that cannot be read is
// reported. The kinds' table lists them so.
func TestStoredKubeVirtListed(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name), ResourceVersion: "rv-" + name}
	}
	nets := []kubevirtv1.Network{{Name: "data", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/data"}}}}
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: meta("a"), Spec: kubevirtv1.VirtualMachineSpec{
		Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: nets}}}}
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: meta("a"), Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: nets},
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: "node-1", Phase: kubevirtv1.Running}}
	plain := &kubevirtv1.VirtualMachine{ObjectMeta: meta("plain")}
	u := &unstructured.Unstructured{}
	u.SetNamespace("tenant")
	u.SetName("broken")
	broken := &unconvertible{Unstructured: u, err: "bad"}

	var in desired.Inputs
	var bad []Unreadable
	kindDefOf(KindVirtualMachine).collect(&in, []any{compact(vm), plain, broken}, &bad)
	kindDefOf(KindVirtualMachineInstance).collect(&in, []any{compact(vmi)}, &bad)
	if len(in.VirtualMachines) != 1 || in.VirtualMachines[0] != plain {
		t.Errorf("VirtualMachines = %v, want the VM stored in its API form", in.VirtualMachines)
	}
	if len(bad) != 1 || bad[0].Name != "broken" || bad[0].Kind != KindVirtualMachine {
		t.Errorf("unreadable = %v, want tenant/broken", bad)
	}
	if in.StoredVMs == nil || in.StoredVMs.Len() != 1 || in.VMCount() != 2 || in.StoredVMIs == nil || in.VMICount() != 1 {
		t.Fatalf("StoredVMs %v, VMCount %d, StoredVMIs %v; want a, 2, and a", in.StoredVMs, in.VMCount(), in.StoredVMIs)
	}
	var names []string
	for i, v := range in.AllVMs() {
		names = append(names, fmt.Sprint(i, v.Name))
	}
	if want := []string{"0plain", "1a"}; !slices.Equal(names, want) {
		t.Errorf("AllVMs() = %v, want %v", names, want)
	}
	first := in.StoredVMs.At(0)
	if !reflect.DeepEqual(first, apiObject(compact(vm))) || first.Spec.Template.Spec.Networks[0].Multus.NetworkName != "tenant/data" {
		t.Errorf("StoredVMs.At(0) = %+v, want the VM as stored", first)
	}
	if in.StoredVMs.At(0) == first {
		t.Error("StoredVMs.At(0) gave one object twice: a reader may keep what it reads")
	}
	if got := in.StoredVMIs.At(0); got.Status.NodeName != "node-1" || got.Name != "a" || !reflect.DeepEqual(got.Spec.Networks, nets) {
		t.Errorf("StoredVMIs.At(0) = %+v, want a on node-1", got)
	}
	// Listed with none stored, there is no store.
	var none desired.Inputs
	kindDefOf(KindVirtualMachine).collect(&none, []any{plain}, &bad)
	if none.StoredVMs != nil || none.VMCount() != 1 {
		t.Errorf("a listing of a VM in its API form: StoredVMs %v, VMCount %d; want none and 1", none.StoredVMs, none.VMCount())
	}
}

// A stored object keeps its creation and deletion times as the API gives
// them, in whole seconds and time.Local, whether decoded from protobuf or
// JSON; the zero time stays zero. A time finer than a second, which no
// API server serves, is kept to the second.
func TestStoredTimes(t *testing.T) {
	created, deleted := metav1.Unix(1796680800, 0), metav1.Unix(1796684400, 0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "4c1a7a57-3e0b-4c87-9d0e-2c1f6b1f6a10",
		ResourceVersion: "81234", CreationTimestamp: created, DeletionTimestamp: &deleted}}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON corev1.Pod
	if err := json.Unmarshal(data, &fromJSON); err != nil {
		t.Fatal(err)
	}
	for what, decoded := range map[string]*corev1.Pod{"protobuf": fromWire(t, p), "JSON": &fromJSON} {
		s := storePod(decoded)
		got := s.pod()
		if !reflect.DeepEqual(got.CreationTimestamp, decoded.CreationTimestamp) || !reflect.DeepEqual(got.DeletionTimestamp, decoded.DeletionTimestamp) {
			t.Errorf("%s: stored times %v, %v; decoded %v, %v", what, got.CreationTimestamp, got.DeletionTimestamp,
				decoded.CreationTimestamp, decoded.DeletionTimestamp)
		}
		if got.Name != "web" || got.ResourceVersion != "81234" || got.UID != p.UID {
			t.Errorf("%s: stored name, version and UID %q %q %q", what, got.Name, got.ResourceVersion, got.UID)
		}
	}
	if s := storePod(&corev1.Pod{}); !s.pod().CreationTimestamp.Time.Equal(time.Time{}) || s.pod().CreationTimestamp != (metav1.Time{}) {
		t.Errorf("the zero time is stored as %v", s.pod().CreationTimestamp)
	}
	fine := metav1.NewTime(time.Unix(1796680800, 999_999_999))
	if s := storePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: fine}}); !s.pod().CreationTimestamp.Equal(&created) {
		t.Errorf("a time finer than a second is stored as %v, want %v", s.pod().CreationTimestamp, created)
	}
}

// Phases are numbered: the APIs' first, then any other as first seen, its
// name read back; past 256, any new one reads as "Unknown".
func TestPhases(t *testing.T) {
	tab := newPhaseTable()
	for _, name := range phaseNames {
		if got := tab.name(tab.of(name)); got != name {
			t.Errorf("phase %q reads back as %q", name, got)
		}
	}
	odd := tab.of("Terminating")
	if int(odd) != len(phaseNames) || tab.name(odd) != "Terminating" || tab.of("Terminating") != odd {
		t.Errorf("a phase not the APIs' is %d, named %q", odd, tab.name(odd))
	}
	for i := len(phaseNames) + 1; i < 256; i++ {
		if p := tab.of(fmt.Sprintf("phase-%d", i)); int(p) != i || tab.name(p) != fmt.Sprintf("phase-%d", i) {
			t.Fatalf("phase-%d is %d, named %q", i, p, tab.name(p))
		}
	}
	if p := tab.of("one-too-many"); tab.name(p) != "Unknown" {
		t.Errorf("the 257th phase reads as %q, want Unknown", tab.name(p))
	}
	if tab.name(tab.of("phase-200")) != "phase-200" || tab.name(tab.of("Running")) != "Running" {
		t.Error("a full table lost a phase it numbered")
	}
	if s := storePod(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}); s.pod().Status.Phase != corev1.PodSucceeded {
		t.Errorf("a pod's phase Succeeded is stored as %q", s.pod().Status.Phase)
	}
}

// meta.Accessor reads a stored object's metadata as its API object has
// it, labels and annotations made when first read; what is set on it
// reads back and changes nothing stored. refOf reads the stored fields.
func TestStoredMetaAccessor(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-db-x7k2p", Namespace: "tenant-a", UID: "4c1a7a57-3e0b-4c87-9d0e-2c1f6b1f6a10",
		ResourceVersion: "81234", CreationTimestamp: metav1.Unix(1796680800, 0),
		Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: "7d9f"},
		Annotations: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.5", "kubevirt.io/domain": "db"},
	}}
	s := storePod(p)
	want := s.pod().ObjectMeta
	m, err := meta.Accessor(&s)
	if err != nil {
		t.Fatal(err)
	}
	if m.GetName() != want.Name || m.GetNamespace() != want.Namespace || m.GetUID() != want.UID || m.GetResourceVersion() != want.ResourceVersion ||
		!m.GetCreationTimestamp().Time.Equal(want.CreationTimestamp.Time) || !reflect.DeepEqual(m.GetLabels(), want.Labels) ||
		!reflect.DeepEqual(m.GetAnnotations(), want.Annotations) || len(want.Labels) == 0 || len(want.Annotations) == 0 {
		t.Fatalf("meta.Accessor reads %s/%s %s %s %v %v; want %+v", m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion(),
			m.GetLabels(), m.GetAnnotations(), want)
	}
	m.SetLabels(map[string]string{"a": "b"})
	m.GetAnnotations()["ovn.kubernetes.io/ip_address"] = "10.16.0.99"
	m.SetName("other")
	if !reflect.DeepEqual(m.GetLabels(), map[string]string{"a": "b"}) || m.GetAnnotations()["ovn.kubernetes.io/ip_address"] != "10.16.0.99" {
		t.Errorf("the accessor reads back %v, %v", m.GetLabels(), m.GetAnnotations())
	}
	if got := s.pod().ObjectMeta; !reflect.DeepEqual(got, want) {
		t.Errorf("setting the accessor's fields changed the stored pod: %+v", got)
	}
	if m2, _ := meta.Accessor(&s); m2.GetAnnotations()["ovn.kubernetes.io/ip_address"] != "10.16.0.5" {
		t.Error("a second accessor reads the first one's annotations")
	}
	if key, err := cache.MetaNamespaceKeyFunc(&s); err != nil || key != "tenant-a/virt-launcher-db-x7k2p" {
		t.Errorf("MetaNamespaceKeyFunc = %q, %v", key, err)
	}
	if ref, ok := refOf(KindPod, &s); !ok || ref != (state.ObjectRef{Kind: string(KindPod), Namespace: "tenant-a", Name: "virt-launcher-db-x7k2p"}) {
		t.Errorf("refOf = %+v, %v", ref, ok)
	}
}
