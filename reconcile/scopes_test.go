package reconcile_test

import (
	"context"
	"fmt"
	"strings"
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

// TestLoopScopesKinds: a Namespace naming a switch, a StatefulSet scaled,
// a kube-ovn IP object written, a NAD's subnets widened (its pod's address
// still in them) and a Subnet's excludeIps edited are incremental passes,
// each checked against a full Build (looptest verifies every pass), and
// the NAD's switch gets the new subnet; a Subnet created and a kube-ovn
// NAD whose network is a Subnet of its provider build in full, and
// ovn_sync_builds_total says so with reasons "subnet" and "nad".
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
	// The pass that committed them counts its build once its apply is
	// done: after the NB shows the ports.
	looptest.WaitFor(t, 30*time.Second, "the first full build counted", func() error {
		if n := tr.Metric("ovn_sync_builds_total", "kind", "full"); n < 1 {
			return fmt.Errorf("%v full builds", n)
		}
		return nil
	})
	tr.WaitConverged(t)
	fulls := tr.Metric("ovn_sync_builds_total", "kind", "full")
	step := func(what string, change func() error) {
		t.Helper()
		incs := tr.Metric("ovn_sync_builds_total", "kind", "incremental")
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		looptest.WaitFor(t, 30*time.Second, what+": an incremental pass", func() error {
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
	blue := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "on-blue", UID: "on-blue",
		Annotations: map[string]string{"k8s.v1.cni.cncf.io/networks": "ns/blue"}}, Spec: corev1.PodSpec{NodeName: "n1"}}
	step("a pod on the NAD's network", func() error {
		_, err := tr.Kube.CoreV1().Pods("ns").Create(ctx, blue, metav1.CreateOptions{})
		return err
	})
	step("the NAD's subnets edited", func() error {
		u := nad.DeepCopy()
		_ = unstructured.SetNestedField(u.Object, `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/23"}`, "spec", "config")
		u.SetResourceVersion("2")
		_, err := tr.Dyn.Resource(sources.GVRNetworkAttachmentDefinition).Namespace("ns").Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	looptest.WaitFor(t, 30*time.Second, "the NAD's switch on its new subnet, its pod's port kept", func() error {
		s := tr.NB.State()
		p, sw := s.Ports.Get("on-blue.ns.blue.ns.ovn"), s.Switches["blue.ns"]
		if sw == nil || sw.Subnet != "192.168.100.0/23" || p == nil || len(p.Addresses) == 0 || !strings.HasSuffix(p.Addresses[0], " 192.168.100.2") {
			return fmt.Errorf("switch %+v, port %+v", sw, p)
		}
		return nil
	})
	if got := tr.Metric("ovn_sync_builds_total", "kind", "full"); got != fulls {
		t.Errorf("ovn_sync_builds_total{kind=full} = %v, want %v: a Namespace, a StatefulSet, an IP object or a NAD built in full", got, fulls)
	}
	kovn := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"namespace": "ns", "name": "attachnet"},
		"spec":     map[string]any{"config": `{"cniVersion":"0.3.0","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"attachnet.ns.ovn"}`},
	}}
	// Its Subnet first (a Subnet builds in full, with its own reason).
	sub := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeovn.io/v1", "kind": "Subnet", "metadata": map[string]any{"name": "attachnet"},
		"spec": map[string]any{"cidrBlock": "172.17.0.0/16", "gateway": "172.17.0.1", "protocol": "IPv4", "provider": "attachnet.ns.ovn"},
	}}
	if _, err := tr.Dyn.Resource(sources.GVRSubnet).Create(ctx, sub, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "a full build for the Subnet", func() error {
		if n := tr.Metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonSubnet); n != 1 {
			return fmt.Errorf("%v full builds for a Subnet", n)
		}
		return nil
	})
	step("the Subnet's excludeIps edited", func() error {
		u := sub.DeepCopy()
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"172.17.0.2..172.17.0.9"}, "spec", "excludeIps")
		u.SetResourceVersion("2")
		_, err := tr.Dyn.Resource(sources.GVRSubnet).Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if n := tr.Metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonSubnet); n != 1 {
		t.Errorf("%v full builds for a Subnet, want 1: its spec edited built in full", n)
	}
	if _, err := tr.Dyn.Resource(sources.GVRNetworkAttachmentDefinition).Namespace("ns").Create(ctx, kovn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "a full build for the kube-ovn NAD", func() error {
		if n := tr.Metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonNAD); n != 1 {
			return fmt.Errorf("%v full builds for a kube-ovn NAD", n)
		}
		return nil
	})
}
