package sources

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ovn-sync/ovn-sync/desired"
)

// TestInformersDropIrrelevant: writes that change nothing the stores keep
// (a StatefulSet's status, a Namespace's labels and an annotation not read,
// a Subnet's status, a VirtualMachine's status, a pod's conditions and
// managed fields) name nothing and are counted by kind; writes of a field
// read (a Namespace's ovn.kubernetes.io/logical_switch, a pod's
// ovn.kubernetes.io/ip_address) are named.
func TestInformersDropIrrelevant(t *testing.T) {
	replicas := int32(3)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "web"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: "1"}}
	subnet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeovn.io/v1", "kind": "Subnet",
		"metadata": map[string]any{"name": "subnet1", "resourceVersion": "1"},
		"spec":     map[string]any{"cidrBlock": "10.66.0.0/16", "namespaces": []any{"shop"}},
	}}
	machine := vm("shop", "db", map[string]any{"running": true})
	machine.SetResourceVersion("1")
	f := newFakes(t, true, false, pod("shop", "web-0"), ns, sts, subnet, machine)
	f.installKubeOVN()
	var events atomic.Int64
	var mu sync.Mutex
	dropped := map[Kind]int{}
	f.inf.opts.OnEvent = func(Kind) { events.Add(1) }
	f.inf.opts.OnDrop = func(k Kind) {
		mu.Lock()
		dropped[k]++
		mu.Unlock()
	}
	ctx := start(t, f)
	waitEvents(t, &events, 5)
	if snap := f.inf.Take(); !snap.AllChanged {
		t.Fatalf("first Take() = Changed %v, want AllChanged", snap.Changed)
	}

	// What a busy cluster writes all the time.
	s := sts.DeepCopy()
	s.ResourceVersion, s.Generation = "2", 2
	s.Status = appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2, ObservedGeneration: 2}
	s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Subresource: "status"}}
	update(t, "StatefulSet status", func() error {
		_, err := f.kube.AppsV1().StatefulSets("shop").Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	n := ns.DeepCopy()
	n.ResourceVersion = "2"
	n.Labels = map[string]string{"team": "shop", "kubernetes.io/metadata.name": "shop"}
	n.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "shop:/Namespace:shop"}
	update(t, "Namespace labels", func() error {
		_, err := f.kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	sub := subnet.DeepCopy()
	sub.SetResourceVersion("2")
	_ = unstructured.SetNestedMap(sub.Object, map[string]any{"v4usingIPs": int64(12), "v4availableIPs": int64(65520)}, "status")
	update(t, "Subnet status", func() error {
		_, err := f.dyn.Resource(GVRSubnet).Update(ctx, sub, metav1.UpdateOptions{})
		return err
	})
	v := machine.DeepCopy()
	v.SetResourceVersion("2")
	_ = unstructured.SetNestedMap(v.Object, map[string]any{"printableStatus": "Running", "ready": true,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}, "status")
	update(t, "VirtualMachine status", func() error {
		_, err := f.dyn.Resource(GVRVirtualMachine).Namespace("shop").Update(ctx, v, metav1.UpdateOptions{})
		return err
	})
	p := pod("shop", "web-0")
	p.ResourceVersion = "2"
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Subresource: "status"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	// Multus reports the interfaces it plumbed on every pod.
	p.Annotations = map[string]string{multusNetworkStatus: networkStatus}
	update(t, "pod conditions and network-status", func() error {
		_, err := f.kube.CoreV1().Pods("shop").Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	waitDropped(t, &mu, dropped, map[Kind]int{KindStatefulSet: 1, KindNamespace: 1, KindSubnet: 1, KindVirtualMachine: 1, KindPod: 1})
	if snap := f.inf.Take(); snap.AllChanged || len(snap.Changed) != 0 {
		t.Errorf("Take() after writes of nothing read = Changed %v (AllChanged %v), want nothing", snap.Changed, snap.AllChanged)
	}
	if got := events.Load(); got != 5 {
		t.Errorf("%d events after writes of nothing read, want the 5 of the first listing", got)
	}

	// Fields read.
	n = n.DeepCopy()
	n.ResourceVersion = "3"
	n.Annotations[desired.NamespaceSwitchAnnotation] = "subnet1"
	update(t, "Namespace logical_switch", func() error {
		_, err := f.kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	p = p.DeepCopy()
	p.ResourceVersion = "3"
	p.Annotations = map[string]string{"ovn.kubernetes.io/ip_address": "10.66.0.20"}
	update(t, "pod ip_address", func() error {
		_, err := f.kube.CoreV1().Pods("shop").Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	waitEvents(t, &events, 7)
	snap := f.inf.Take()
	if want := changedRefs("Namespace/shop", "Pod/shop/web-0"); snap.AllChanged || !slices.Equal(snap.Changed, want) {
		t.Errorf("Take() after writes of fields read = Changed %v (AllChanged %v), want %v", snap.Changed, snap.AllChanged, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[Kind]int{KindStatefulSet: 1, KindNamespace: 1, KindSubnet: 1, KindVirtualMachine: 1, KindPod: 1}; !maps.Equal(dropped, want) {
		t.Errorf("dropped = %v, want %v", dropped, want)
	}
	if got := snap.Inputs.Namespaces; len(got) != 1 || got[0].Annotations[desired.NamespaceSwitchAnnotation] != "subnet1" {
		t.Errorf("Inputs().Namespaces = %+v, want shop on subnet1", got)
	}
}

// TestSameReadUnreadable: an update from or to an object that could not be
// converted is never dropped, even when nothing else changed.
func TestSameReadUnreadable(t *testing.T) {
	tr := typedTransform(KindVirtualMachine)
	broken := func(rv string) any {
		u := vm("default", "broken", map[string]any{"running": "yes"})
		u.SetResourceVersion(rv)
		o, _ := tr(u)
		return o
	}
	good := func(rv string) any {
		u := vm("default", "broken", map[string]any{"running": true})
		u.SetResourceVersion(rv)
		o, _ := tr(u)
		return o
	}
	if _, ok := broken("1").(*unconvertible); !ok {
		t.Fatalf("the broken VM converted: %T", broken("1"))
	}
	for _, c := range []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"unreadable, unreadable", broken("1"), broken("2"), false},
		{"unreadable, readable", broken("1"), good("2"), false},
		{"readable, unreadable", good("1"), broken("2"), false},
		{"readable, readable", good("1"), good("2"), true},
	} {
		if got := sameRead(c.old, c.cur); got != c.want {
			t.Errorf("sameRead(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

func update(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitDropped waits until OnDrop has counted want.
func waitDropped(t *testing.T, mu *sync.Mutex, dropped, want map[Kind]int) {
	t.Helper()
	eventually(t, fmt.Sprintf("dropped %v", want), func() error {
		mu.Lock()
		defer mu.Unlock()
		if !maps.Equal(dropped, want) {
			return fmt.Errorf("dropped %v", dropped)
		}
		return nil
	})
}

// TestSameVersion: a relist's update, the same resourceVersion before and
// after, is told apart from a write, for stored forms (read off their
// fields) and other objects alike; an object without a version never is.
func TestSameVersion(t *testing.T) {
	tr := typedTransform(KindVirtualMachine)
	stored := func(rv string) any {
		u := vm("default", "db", map[string]any{"running": true})
		u.SetResourceVersion(rv)
		o, _ := tr(u)
		return compact(o)
	}
	ns := func(rv string) any {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", ResourceVersion: rv}}
	}
	if _, ok := stored("1").(*storedVM); !ok {
		t.Fatalf("the VM is not stored: %T", stored("1"))
	}
	for _, c := range []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"stored, same version", stored("7"), stored("7"), true},
		{"stored, new version", stored("7"), stored("8"), false},
		{"stored, no version", stored(""), stored(""), false},
		{"namespace, same version", ns("7"), ns("7"), true},
		{"namespace, new version", ns("7"), ns("8"), false},
	} {
		if got := sameVersion(c.old, c.cur); got != c.want {
			t.Errorf("sameVersion(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
