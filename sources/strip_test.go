package sources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// fatPod is a pod as the API server serves it: managed fields, kubectl's
// last-applied copy, containers, volumes and statuses.
func fatPod(name string, ann map[string]string) *corev1.Pod {
	now := metav1.Unix(metav1.Now().Unix(), 0) // the API's times are whole seconds
	a := map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Pod","metadata":{}}`}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42",
			CreationTimestamp: now,
			Labels:            map[string]string{"app": "web"},
			Annotations:       a,
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", UID: "rs-uid"}},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: "Update"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1", HostNetwork: false,
			Containers: []corev1.Container{{Name: "compute", Image: "quay.io/kubevirt/virt-launcher:v1.7.1",
				Env:       []corev1.EnvVar{{Name: "POD_NAME", Value: name}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Volumes: []corev1.Volume{{Name: "private", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			PodIP:             "10.16.0.5",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "compute", Ready: true}},
		},
	}
}

// multusNetworkStatus is the annotation Multus writes on every pod it
// plumbs, networkStatus a value of it as Multus writes it.
const (
	multusNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
	networkStatus       = `[{
    "name": "kube-ovn",
    "interface": "eth0",
    "ips": [
        "10.16.0.9"
    ],
    "mac": "0a:58:0a:10:00:09",
    "default": true,
    "dns": {},
    "gateway": [
        "10.16.0.1"
    ]
},{
    "name": "default/red",
    "interface": "net1",
    "ips": [
        "192.168.10.5"
    ],
    "mac": "0a:58:c0:a8:0a:05",
    "dns": {}
}]`
)

// stripPod keeps every field ovn-sync reads, so Build cannot tell a
// stripped pod from the one the API server served; it drops the rest.
func TestStripPod(t *testing.T) {
	fat := []*corev1.Pod{
		fatPod("a", map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.9", "ovn.kubernetes.io/mac_address": "0a:58:0a:10:00:09",
			multusNetworkStatus: networkStatus, "kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z"}),
		fatPod("b", map[string]string{"k8s.v1.cni.cncf.io/networks": "default/red", multusNetworkStatus: networkStatus,
			"red.default.ovn.kubernetes.io/ip_address": "192.168.10.5", "prometheus.io/scrape": "true"}),
		fatPod("c", nil),
	}
	fat[2].Spec.HostNetwork = true
	fat[1].Status.Phase = corev1.PodSucceeded
	fat = append(fat, fatPod("d", nil))
	fat[3].DeletionTimestamp = &fat[3].CreationTimestamp
	// A virt-launcher pod and a StatefulSet's pod: the labels and owners
	// Build reads are kept, the rest (a Deployment's) dropped.
	launcher := fatPod("virt-launcher-db-x7k2p", nil)
	launcher.Labels = map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": "db", "kubevirt.io/created-by": "uid-vmi", "app": "db"}
	launcher.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "db", UID: "uid-vmi"}}
	launcher.Finalizers = []string{"kubevirt.io/foreground"}
	sts := fatPod("web-0", nil)
	sts.GenerateName = "web-"
	sts.OwnerReferences = append(sts.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-sts"})
	fat = append(fat, launcher, sts)
	keptLabels := map[string]map[string]string{launcher.Name: {"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": "db"}}
	keptOwners := map[string][]metav1.OwnerReference{launcher.Name: launcher.OwnerReferences, sts.Name: sts.OwnerReferences[1:]}
	var lean []*corev1.Pod
	for _, p := range fat {
		before := p.DeepCopy()
		o, err := stripPod(p)
		if err != nil {
			t.Fatal(err)
		}
		l := o.(*corev1.Pod)
		if !reflect.DeepEqual(p, before) {
			t.Errorf("stripPod(%s) modified its argument", p.Name)
		}
		if len(l.Spec.Containers) != 0 || len(l.Spec.Volumes) != 0 || len(l.Status.ContainerStatuses) != 0 || l.ManagedFields != nil {
			t.Errorf("stripPod(%s) kept containers, volumes, statuses or managed fields: %+v", p.Name, l)
		}
		for k, v := range p.Annotations {
			if kept, ok := l.Annotations[k]; ok != desired.PodAnnotationRead(k) || ok && kept != v {
				t.Errorf("stripPod(%s): annotation %s kept %v (%q), want kept only if Build reads it", p.Name, k, ok, kept)
			}
		}
		if l.Spec.NodeName != p.Spec.NodeName || l.Spec.HostNetwork != p.Spec.HostNetwork || l.Status.Phase != p.Status.Phase ||
			l.UID != p.UID || l.ResourceVersion != p.ResourceVersion || !reflect.DeepEqual(l.OwnerReferences, keptOwners[p.Name]) ||
			!reflect.DeepEqual(l.Labels, keptLabels[p.Name]) || !l.CreationTimestamp.Equal(&p.CreationTimestamp) || !reflect.DeepEqual(l.DeletionTimestamp, p.DeletionTimestamp) {
			t.Errorf("stripPod(%s) lost a field ovn-sync reads, or kept labels or owners it does not: %+v", p.Name, l)
		}
		if l.GenerateName != "" || l.Finalizers != nil {
			t.Errorf("stripPod(%s) kept generateName %q or finalizers %v", p.Name, l.GenerateName, l.Finalizers)
		}
		if again, _ := stripPod(l); !reflect.DeepEqual(again, l) {
			t.Errorf("stripPod(stripPod(%s)) = %+v, want %+v", p.Name, again, l)
		}
		lean = append(lean, l)
	}
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fat2 := desired.Build(desired.Inputs{Pods: fat}, cfg, state.New(0))
	wantFat, probFat := fat2.Want, fat2.Problems
	lean2 := desired.Build(desired.Inputs{Pods: lean}, cfg, state.New(0))
	wantLean, probLean := lean2.Want, lean2.Problems
	if !state.DeepEqual(wantFat, wantLean) || !reflect.DeepEqual(probFat, probLean) {
		t.Errorf("Build(stripped pods) = %v %v, want Build(pods) = %v %v", wantLean.Ports, probLean, wantFat.Ports, probFat)
	}
	if wantFat.Ports.Len() == 0 {
		t.Errorf("Build(pods) made no ports: the comparison shows nothing")
	}

	ts, _ := stripPod(cache.DeletedFinalStateUnknown{Key: "default/a", Obj: fatPod("a", nil)})
	if d, ok := ts.(cache.DeletedFinalStateUnknown); !ok || len(d.Obj.(*corev1.Pod).Spec.Containers) != 0 {
		t.Errorf("stripPod(tombstone) = %#v, want the tombstone of a stripped pod", ts)
	}
}

// fatten adds to a KubeVirt object, as unstructured, what the API server
// serves beside what ovn-sync reads: managed fields, kubectl's last-applied
// copy, disks, volumes, resources and conditions.
func fatten(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: "Update"}})
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"kubevirt.io/v1","spec":{}}`
	u.SetAnnotations(ann)
	spec := []string{"spec"}
	if u.GetKind() == "VirtualMachine" {
		spec = []string{"spec", "template", "spec"}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"metadata": map[string]any{"name": "root"}}}, "spec", "dataVolumeTemplates")
	}
	if u.GetKind() != "VirtualMachineInstanceMigration" {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "root", "disk": map[string]any{"bus": "virtio"}}}, append(spec, "domain", "devices", "disks")...)
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "root", "containerDisk": map[string]any{"image": "quay.io/containerdisks/fedora:41"}}}, append(spec, "volumes")...)
		_ = unstructured.SetNestedField(u.Object, "2Gi", append(spec, "domain", "resources", "requests", "memory")...)
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions")
	return u
}

// The KubeVirt transform keeps every field ovn-sync reads, so Build cannot
// tell a lean VM, VMI or migration from the one the API server served; it
// drops disks, volumes, resources, conditions and metadata copies.
func TestLeanKubeVirt(t *testing.T) {
	in, _, err := ReadManifests([]string{"../examples/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	fat, lean := in, desired.Inputs{Pods: in.Pods, NetworkAttachmentDefinitions: in.NetworkAttachmentDefinitions}
	convert := func(k Kind, obj runtime.Object) runtime.Object {
		u := fatten(t, obj)
		full := typedTransformFull(t, k, u)
		got, _ := typedTransform(k)(u.DeepCopy())
		g := got.(runtime.Object)
		if a := g.(metav1.Object).GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" || g.(metav1.Object).GetManagedFields() != nil {
			t.Errorf("%s %s kept managed fields or %s", k, u.GetName(), corev1.LastAppliedConfigAnnotation)
		}
		if reflect.DeepEqual(g, full) {
			t.Errorf("%s %s: nothing dropped", k, u.GetName())
		}
		return g
	}
	fat.VirtualMachines, fat.VirtualMachineInstances, fat.Migrations = nil, nil, nil
	for _, vm := range in.VirtualMachines {
		fat.VirtualMachines = append(fat.VirtualMachines, typedTransformFull(t, KindVirtualMachine, fatten(t, vm)).(*kubevirtv1.VirtualMachine))
		l := convert(KindVirtualMachine, vm).(*kubevirtv1.VirtualMachine)
		if l.Spec.Template != nil && (len(l.Spec.Template.Spec.Volumes) != 0 || len(l.Spec.Template.Spec.Domain.Devices.Disks) != 0) {
			t.Errorf("VM %s kept volumes or disks", vm.Name)
		}
		lean.VirtualMachines = append(lean.VirtualMachines, l)
	}
	for _, vmi := range in.VirtualMachineInstances {
		fat.VirtualMachineInstances = append(fat.VirtualMachineInstances, typedTransformFull(t, KindVirtualMachineInstance, fatten(t, vmi)).(*kubevirtv1.VirtualMachineInstance))
		lean.VirtualMachineInstances = append(lean.VirtualMachineInstances, convert(KindVirtualMachineInstance, vmi).(*kubevirtv1.VirtualMachineInstance))
	}
	for _, m := range in.Migrations {
		fat.Migrations = append(fat.Migrations, typedTransformFull(t, KindVirtualMachineInstanceMigration, fatten(t, m)).(*kubevirtv1.VirtualMachineInstanceMigration))
		lean.Migrations = append(lean.Migrations, convert(KindVirtualMachineInstanceMigration, m).(*kubevirtv1.VirtualMachineInstanceMigration))
	}
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The lean VMs must build what the fat ones build, on an empty NB and on
	// the NB the fat ones made (records, the running VM's addresses).
	have := state.New(0)
	for round := range 2 {
		f := desired.Build(fat, cfg, have)
		l := desired.Build(lean, cfg, have)
		if !state.DeepEqual(f.Want, l.Want) || !reflect.DeepEqual(f.Problems, l.Problems) || !reflect.DeepEqual(f.Notices, l.Notices) {
			t.Errorf("round %d: Build(lean) = %v %v %v, want Build(fat) = %v %v %v", round, l.Want.Ports, l.Problems, l.Notices, f.Want.Ports, f.Problems, f.Notices)
		}
		if f.Want.Ports.Len() == 0 {
			t.Fatalf("Build made no ports: the comparison shows nothing")
		}
		have = f.Want
	}
	// Typed objects pass through: the transform is idempotent.
	if again, _ := typedTransform(KindVirtualMachine)(lean.VirtualMachines[0]); again != lean.VirtualMachines[0] {
		t.Errorf("typedTransform(typed VM) changed it")
	}
}

// typedTransformFull converts u into its typed form keeping every field.
func typedTransformFull(t *testing.T, k Kind, u *unstructured.Unstructured) runtime.Object {
	t.Helper()
	var obj runtime.Object
	switch k {
	case KindVirtualMachine:
		obj = &kubevirtv1.VirtualMachine{}
	case KindVirtualMachineInstance:
		obj = &kubevirtv1.VirtualMachineInstance{}
	default:
		obj = &kubevirtv1.VirtualMachineInstanceMigration{}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.DeepCopy().Object, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}
