package sources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/randfill"
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

// The pod informer's transform stores pods, passes namespaces by, gives
// a stored pod back as it is (client-go may transform twice), and keeps
// tombstones.
func TestCompactingPods(t *testing.T) {
	tr := compacting(stripPod)
	out, err := tr(fatPod("a", nil))
	if err != nil {
		t.Fatal(err)
	}
	sp, ok := out.(*storedPod)
	if !ok {
		t.Fatalf("transform gave %T, want *storedPod", out)
	}
	if again, _ := tr(sp); again != any(sp) {
		t.Errorf("transform of a stored pod made a new object")
	}
	ts, _ := tr(cache.DeletedFinalStateUnknown{Key: "default/b", Obj: fatPod("b", nil)})
	if d, ok := ts.(cache.DeletedFinalStateUnknown); !ok || d.Key != "default/b" {
		t.Errorf("transform of a tombstone = %#v", ts)
	} else if _, ok := d.Obj.(*storedPod); !ok {
		t.Errorf("tombstone holds %T, want *storedPod", d.Obj)
	}
	if typedKind(sp) != KindPod {
		t.Errorf("typedKind(stored pod) = %q", typedKind(sp))
	}
	ns := &corev1.Namespace{}
	ns.Name = "default"
	if out, _ := tr(ns); out != any(ns) {
		t.Errorf("transform of a namespace gave %T", out)
	}
}

// The VMI informer's transform puts stored VMIs in its store, gives a
// stored one back as it is (client-go may transform twice), and keeps
// tombstones; lookups and snapshots give the API object.
func TestCompactingTransform(t *testing.T) {
	tr := compacting(typedTransform(KindVirtualMachineInstance))
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"namespace": "default", "name": "a", "resourceVersion": "7"},
		"status":   map[string]any{"nodeName": "node-1", "phase": "Running"},
	}}
	out, err := tr(u)
	if err != nil {
		t.Fatal(err)
	}
	sv, ok := out.(*storedVMI)
	if !ok {
		t.Fatalf("transform gave %T, want *storedVMI", out)
	}
	if again, _ := tr(sv); again != any(sv) {
		t.Errorf("transform of a stored VMI made a new object")
	}
	ts, _ := tr(cache.DeletedFinalStateUnknown{Key: "default/b", Obj: u.DeepCopy()})
	if d, ok := ts.(cache.DeletedFinalStateUnknown); !ok || d.Key != "default/b" {
		t.Errorf("transform of a tombstone = %#v", ts)
	} else if _, ok := d.Obj.(*storedVMI); !ok {
		t.Errorf("tombstone holds %T, want *storedVMI", d.Obj)
	}
	var bad []Unreadable
	vmis := collect[*kubevirtv1.VirtualMachineInstance](KindVirtualMachineInstance, []any{sv}, &bad)
	if len(bad) > 0 || len(vmis) != 1 || vmis[0].Name != "a" || vmis[0].Status.NodeName != "node-1" || vmis[0].Status.Phase != kubevirtv1.Running {
		t.Errorf("collect(stored VMI) = %+v, unreadable %v", vmis, bad)
	}
}
