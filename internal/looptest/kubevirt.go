package looptest

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The KubeVirt objects of one VM in namespace ns, shaped as KubeVirt writes
// them: a VM on the default network (bridge binding), its VMI owned by it,
// the VMI's virt-launcher pods and migrations. UIDs are derived from names:
// "vm-<name>", "vmi-<name>".

// VM is a stopped VM (runStrategy Halted) on the default network.
func VM(name string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("vm-" + name)},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: []kubevirtv1.Network{*kubevirtv1.DefaultPodNetwork()},
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
					{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}}},
			}}},
	}
}

// VMI is vm's instance, running on node.
func VMI(vm, node string) *kubevirtv1.VirtualMachineInstance {
	t := true
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: vm, UID: types.UID("vmi-" + vm),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm, UID: types.UID("vm-" + vm), Controller: &t}}},
		Spec:   VM(vm).Spec.Template.Spec,
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
	}
}

// Launcher is the virt-launcher pod "virt-launcher-<vm>-<suffix>" of vm's
// instance, on node.
func Launcher(vm, suffix, node string) *corev1.Pod {
	return LauncherOf(VMI(vm, node), fmt.Sprintf("virt-launcher-%s-%s", vm, suffix), node)
}

// LauncherOf is the virt-launcher pod named name that KubeVirt runs for
// the instance vmi on node: in vmi's namespace, owned by vmi, labelled and
// annotated with its name, with UID "uid-<name>" (an API server gives it
// one of its own). Tests against a real API server create it from the
// instance the server stored; tests on fake clients from VMI's.
func LauncherOf(vmi metav1.Object, name, node string) *corev1.Pod {
	t := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmi.GetNamespace(), Name: name, UID: types.UID("uid-" + name),
			Labels:      map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.GetUID()), "vm.kubevirt.io/name": vmi.GetName()},
			Annotations: map[string]string{"kubevirt.io/domain": vmi.GetName()},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance",
				Name: vmi.GetName(), UID: vmi.GetUID(), Controller: &t}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher"}}},
	}
}

// Migration is a running migration, named name, of vm's instance from
// source to target.
func Migration(vm, name, source, target string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("mig-" + name)},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vm},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning,
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: source, TargetNode: target}},
	}
}

// Unstructured is o as the fake dynamic client holds it.
func Unstructured(t testing.TB, o any) *unstructured.Unstructured {
	t.Helper()
	u, err := ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// ToUnstructured is Unstructured for a caller that is not a test.
func ToUnstructured(o any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
