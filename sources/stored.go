package sources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The stores keep the kinds a cluster has many of (pods, VMs, VMIs) in
// forms of their own that hold exactly the fields stripPod and leanKubeVirt
// keep, and give a pass the API object made from it at each read. The API
// types are big whatever is left in them: a corev1.Pod is 1,240 bytes with
// an empty spec and status, a VirtualMachineInstance 1,488, a
// VirtualMachine with a template 1,504; the stored forms about 300. A pass
// that rebuilds what changed makes the few objects it looks up; a full
// pass makes every object once, for that pass: its result names them
// (PortFacts) until the next pass's replaces it, and the incremental state
// kept between passes holds ports alone.
//
// A stored object is made from the lean API object and gives it back
// unchanged (TestStoredRoundTrip): the stores hold no less than before,
// only in less room.

// stored is an object in its stored form.
type stored interface {
	runtime.Object
	// object is the API object the stored form holds: a new one at each
	// call, sharing the stored maps and slices, which must not be
	// modified.
	object() runtime.Object
}

// storedPod holds what stripPod keeps of a pod.
type storedPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	node        string
	phase       corev1.PodPhase
	hostNetwork bool
}

func (p *storedPod) object() runtime.Object { return p.pod() }

func (p *storedPod) pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: p.ObjectMeta,
		Spec:       corev1.PodSpec{NodeName: p.node, HostNetwork: p.hostNetwork},
		Status:     corev1.PodStatus{Phase: p.phase},
	}
}

func (p *storedPod) DeepCopyObject() runtime.Object {
	return compact(p.pod().DeepCopy()).(runtime.Object)
}

// storedVMISpec holds what leanVMISpec keeps of a VMI's spec.
type storedVMISpec struct {
	networks   []kubevirtv1.Network
	interfaces []kubevirtv1.Interface
	autoattach *bool
}

func storeVMISpec(s *kubevirtv1.VirtualMachineInstanceSpec) storedVMISpec {
	return storedVMISpec{networks: s.Networks, interfaces: s.Domain.Devices.Interfaces, autoattach: s.Domain.Devices.AutoattachPodInterface}
}

func (s *storedVMISpec) spec() kubevirtv1.VirtualMachineInstanceSpec {
	var spec kubevirtv1.VirtualMachineInstanceSpec
	spec.Networks = s.networks
	spec.Domain.Devices.Interfaces = s.interfaces
	spec.Domain.Devices.AutoattachPodInterface = s.autoattach
	return spec
}

// storedVM holds what leanKubeVirt keeps of a VM.
type storedVM struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	running     *bool
	runStrategy *kubevirtv1.VirtualMachineRunStrategy
	template    *storedTemplate
}

// storedTemplate holds what leanKubeVirt keeps of a VM's template.
type storedTemplate struct {
	annotations, labels map[string]string
	spec                storedVMISpec
}

func (v *storedVM) object() runtime.Object { return v.vm() }

func (v *storedVM) vm() *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta}
	vm.Spec.Running, vm.Spec.RunStrategy = v.running, v.runStrategy
	if t := v.template; t != nil {
		vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: t.annotations, Labels: t.labels},
			Spec:       t.spec.spec(),
		}
	}
	return vm
}

func (v *storedVM) DeepCopyObject() runtime.Object {
	return compact(v.vm().DeepCopy()).(runtime.Object)
}

// storedVMI holds what leanKubeVirt keeps of a VMI.
type storedVMI struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	spec      storedVMISpec
	node      string
	phase     kubevirtv1.VirtualMachineInstancePhase
	migration *kubevirtv1.VirtualMachineInstanceMigrationState
}

func (v *storedVMI) object() runtime.Object { return v.vmi() }

func (v *storedVMI) vmi() *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta,
		Spec:   v.spec.spec(),
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: v.node, Phase: v.phase, MigrationState: v.migration},
	}
}

func (v *storedVMI) DeepCopyObject() runtime.Object {
	return compact(v.vmi().DeepCopy()).(runtime.Object)
}

// compact is obj in its stored form, if its kind has one: obj must be
// what stripPod or leanKubeVirt returned, as it keeps only their fields.
// Other objects, and objects already stored, pass through.
func compact(obj any) any {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		o.Obj = compact(o.Obj)
		return o
	case *corev1.Pod:
		return &storedPod{TypeMeta: o.TypeMeta, ObjectMeta: o.ObjectMeta,
			node: o.Spec.NodeName, phase: o.Status.Phase, hostNetwork: o.Spec.HostNetwork}
	case *kubevirtv1.VirtualMachine:
		v := &storedVM{TypeMeta: o.TypeMeta, ObjectMeta: o.ObjectMeta, running: o.Spec.Running, runStrategy: o.Spec.RunStrategy}
		if t := o.Spec.Template; t != nil {
			v.template = &storedTemplate{annotations: t.ObjectMeta.Annotations, labels: t.ObjectMeta.Labels, spec: storeVMISpec(&t.Spec)}
		}
		return v
	case *kubevirtv1.VirtualMachineInstance:
		return &storedVMI{TypeMeta: o.TypeMeta, ObjectMeta: o.ObjectMeta, spec: storeVMISpec(&o.Spec),
			node: o.Status.NodeName, phase: o.Status.Phase, migration: o.Status.MigrationState}
	}
	return obj
}

// compacting is transform t, then compact; a stored object passes
// through, as client-go may transform an object twice.
func compacting(t cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if _, ok := Unwrap(obj).(stored); ok {
			return obj, nil
		}
		out, err := t(obj)
		if err != nil {
			return out, err
		}
		return compact(out), nil
	}
}

// apiObject is obj in its API form: a stored object's, or obj itself.
func apiObject(obj any) any {
	if s, ok := obj.(stored); ok {
		return s.object()
	}
	return obj
}
