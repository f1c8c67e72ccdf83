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
	if out, _ := pods(ns); out != any(ns) {
		t.Errorf("transform of a namespace gave %T", out)
	}
	sv := check(compacting(typedTransform(KindVirtualMachineInstance)), vmi, vmi.DeepCopy())
	var bad []Unreadable
	vmis := collect[*kubevirtv1.VirtualMachineInstance](KindVirtualMachineInstance, []any{sv}, &bad)
	if len(bad) > 0 || len(vmis) != 1 || vmis[0].Name != "a" || vmis[0].Status.NodeName != "node-1" || vmis[0].Status.Phase != kubevirtv1.Running {
		t.Errorf("collect(stored VMI) = %+v, unreadable %v", vmis, bad)
	}
}
