package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// TestLoopScopesKinds: a Namespace naming a switch, a StatefulSet scaled
// and a kube-ovn IP object written are incremental passes, each checked
// against a full Build (looptest verifies every pass); a NAD edited builds
// in full, and ovn_sync_builds_total says so with reason "nad".
func TestLoopScopesKinds(t *testing.T) {
	if looptest.FullPasses() {
		t.Skip("OVN_SYNC_FULL_PASSES: no incremental pass to check")
	}
	kubeOVN := &metav1.APIResourceList{GroupVersion: "kubeovn.io/v1", APIResources: []metav1.APIResource{
		{Name: "subnets", Kind: "Subnet"}, {Name: "ips", Kind: "IP"},
	}}
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"namespace": "ns", "name": "blue"},
		"spec":     map[string]any{"config": `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/24"}`},
	}}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: appsv1.StatefulSetSpec{Replicas: new(int32(3))}}
	tr := looptest.Start(t, looptest.Options{
		KubeObjs:  []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, set},
		NADs:      []*unstructured.Unstructured{nad},
		Resources: append(append([]*metav1.APIResourceList{}, looptest.KubeVirtResources...), looptest.MultusResources, kubeOVN),
	})
	ctx := context.Background()
	tr.Pods(t, 0, 10)
	tr.WaitPorts(t, "a port per pod", 10)
	fulls := tr.Metric("ovn_sync_builds_total", "kind", "full")
	step := func(what string, change func() error) {
		t.Helper()
		incs := tr.Metric("ovn_sync_builds_total", "kind", "incremental")
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		looptest.WaitFor(t, 5*time.Second, what+": an incremental pass", func() error {
			if n := tr.Metric("ovn_sync_builds_total", "kind", "incremental"); n <= incs {
				return fmt.Errorf("%v incremental builds", n)
			}
			return nil
		})
	}
	step("the Namespace names a switch", func() error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", ResourceVersion: "2",
			Annotations: map[string]string{desired.NamespaceSwitchAnnotation: "ovn-default"}}}
		_, err := tr.Kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		return err
	})
	step("the StatefulSet scaled", func() error {
		s := set.DeepCopy()
		s.ResourceVersion, s.Spec.Replicas = "2", new(int32(1))
		_, err := tr.Kube.AppsV1().StatefulSets("ns").Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	step("an IP object written", func() error {
		ip := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeovn.io/v1", "kind": "IP",
			"metadata": map[string]any{"name": "p3.ns"},
			"spec": map[string]any{"podName": "p3", "namespace": "ns", "subnet": "ovn-default",
				"ipAddress": "10.16.0.200", "v4IpAddress": "10.16.0.200", "macAddress": "00:00:00:53:1f:09"},
		}}
		_, err := tr.Dyn.Resource(sources.GVRIP).Create(ctx, ip, metav1.CreateOptions{})
		return err
	})
	if got := tr.Metric("ovn_sync_builds_total", "kind", "full"); got != fulls {
		t.Errorf("ovn_sync_builds_total{kind=full} = %v, want %v: a Namespace, a StatefulSet and an IP object built in full", got, fulls)
	}
	u := nad.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.101.0/24"}`, "spec", "config")
	u.SetResourceVersion("2")
	if _, err := tr.Dyn.Resource(sources.GVRNetworkAttachmentDefinition).Namespace("ns").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 5*time.Second, "a full build for the NAD", func() error {
		if n := tr.Metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonNAD); n != 1 {
			return fmt.Errorf("%v full builds for a NAD", n)
		}
		return nil
	})
}
