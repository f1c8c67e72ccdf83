package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
)

// No KubeVirt runs beside the end-to-end tests' API server: they write
// what it would. A VM is created from vmManifest; starting it is its
// instance, created from vmiManifest, its status set to Running on a node
// (setStatus), and a virt-launcher pod of the instance
// (looptest.LauncherOf).

// vmManifest is VM name of namespace ns as a user writes it: runStrategy,
// and in its template the pod network (masquerade) and NAD nad, as
// interface iface (bridge).
func vmManifest(ns, name, runStrategy, iface, nad string) string {
	return fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: %s, namespace: %s}
spec:
  runStrategy: %s
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: %s, bridge: {}}]}}
      networks: [{name: default, pod: {}}, {name: %[4]s, multus: {networkName: %s}}]`, name, ns, runStrategy, iface, nad)
}

// vmiManifest is the instance KubeVirt creates when vm, as the API server
// stored it, starts: its template's spec, owned by vm.
func vmiManifest(vm *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedMap(vm.Object, "spec", "template", "spec")
	vmi := map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"name": vm.GetName(), "namespace": vm.GetNamespace(),
			"ownerReferences": []any{map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
				"name": vm.GetName(), "uid": string(vm.GetUID()), "controller": true}}},
		"spec": spec,
	}
	data, err := json.Marshal(vmi)
	if err != nil {
		panic(err) // values a JSON decoder made always encode
	}
	return string(data)
}

// setStatus merge-patches the status of object name of namespace ns, a
// VMI, say, through the status subresource, as KubeVirt's controllers
// write it.
func setStatus(k *kubetest.Server, gvr schema.GroupVersionResource, ns, name, status string) error {
	_, err := k.Dynamic.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch %s %s/%s status: %w", gvr.Resource, ns, name, err)
	}
	return nil
}

// patchStatus is setStatus failing the test.
func patchStatus(t *testing.T, k *kubetest.Server, gvr schema.GroupVersionResource, ns, name, status string) {
	t.Helper()
	if err := setStatus(k, gvr, ns, name, status); err != nil {
		t.Fatal(err)
	}
}
