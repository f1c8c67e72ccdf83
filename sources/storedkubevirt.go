package sources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
)

// A VirtualMachine or VirtualMachineInstance keeps, as a pod does, only
// what Build reads: its metadata as storedMeta keeps it, with no labels;
// of a network its name and source, of an interface its name, MAC and
// state; of a VMI's migration state the nodes, pods and outcome. What
// KubeVirt writes beside them (an interface's binding and ports, a pod
// network's CIDRs, the labels and annotations virt-controller sets, a
// migration's timestamps and modes) is dropped, and an edit of it is then
// no change (sameRead). A running VM is held twice, as the VM with its
// template and as its VMI.

// storedVMISpec holds what leanKubeVirt keeps of a VMI's spec, or of a
// VM template's: its networks and interfaces, and whether the pod network
// is attached by default.
type storedVMISpec struct {
	networks   []storedNetwork
	interfaces []storedInterface
	autoattach *bool
}

// storedNetwork is what Build reads of a network: its name and source.
type storedNetwork struct {
	name string
	// multus is the Multus source's networkName, when source is
	// sourceMultus.
	multus        string
	source        networkSource
	multusDefault bool
}

// networkSource is the source a network names: none (KubeVirt's default,
// the pod network), the pod network or a Multus network.
type networkSource uint8

const (
	sourceNone networkSource = iota
	sourcePod
	sourceMultus
)

// storedInterface is what Build reads of an interface: the network it is
// on (by name), its MAC and whether it is being unplugged.
type storedInterface struct {
	name, mac string
	state     kubevirtv1.InterfaceState
}

func storeVMISpec(s *kubevirtv1.VirtualMachineInstanceSpec) storedVMISpec {
	out := storedVMISpec{autoattach: s.Domain.Devices.AutoattachPodInterface}
	if len(s.Networks) > 0 {
		out.networks = make([]storedNetwork, len(s.Networks))
		for i, n := range s.Networks {
			out.networks[i] = storedNetwork{name: n.Name}
			switch {
			case n.Multus != nil:
				out.networks[i].source, out.networks[i].multus, out.networks[i].multusDefault = sourceMultus, n.Multus.NetworkName, n.Multus.Default
			case n.Pod != nil:
				out.networks[i].source = sourcePod
			}
		}
	}
	if ifs := s.Domain.Devices.Interfaces; len(ifs) > 0 {
		out.interfaces = make([]storedInterface, len(ifs))
		for i, f := range ifs {
			out.interfaces[i] = storedInterface{name: f.Name, mac: f.MacAddress, state: f.State}
		}
	}
	return out
}

// spec makes the spec s holds, in slices of its own.
func (s *storedVMISpec) spec() kubevirtv1.VirtualMachineInstanceSpec {
	var spec kubevirtv1.VirtualMachineInstanceSpec
	if len(s.networks) > 0 {
		spec.Networks = make([]kubevirtv1.Network, len(s.networks))
		for i, n := range s.networks {
			spec.Networks[i].Name = n.name
			switch n.source {
			case sourcePod:
				spec.Networks[i].Pod = &kubevirtv1.PodNetwork{}
			case sourceMultus:
				spec.Networks[i].Multus = &kubevirtv1.MultusNetwork{NetworkName: n.multus, Default: n.multusDefault}
			}
		}
	}
	if len(s.interfaces) > 0 {
		ifs := make([]kubevirtv1.Interface, len(s.interfaces))
		for i, f := range s.interfaces {
			ifs[i] = kubevirtv1.Interface{Name: f.name, MacAddress: f.mac, State: f.state}
		}
		spec.Domain.Devices.Interfaces = ifs
	}
	spec.Domain.Devices.AutoattachPodInterface = s.autoattach
	return spec
}

// storedVM holds what leanKubeVirt keeps of a VM.
type storedVM struct {
	storedMeta
	running     *bool
	runStrategy *kubevirtv1.VirtualMachineRunStrategy
	template    *storedTemplate
}

// storedTemplate holds what leanKubeVirt keeps of a VM's template: the
// annotations Build reads and the spec.
type storedTemplate struct {
	annotations desired.Annotations
	spec        storedVMISpec
}

// storeVM is the stored form of v: its metadata as storedMeta keeps it,
// whether it runs, and of its template the annotations Build reads and
// the spec (storeVMISpec).
func storeVM(v *kubevirtv1.VirtualMachine) storedVM {
	s := storedVM{storedMeta: storeMeta(v.TypeMeta, &v.ObjectMeta, nil, nil), running: v.Spec.Running, runStrategy: v.Spec.RunStrategy}
	if t := v.Spec.Template; t != nil {
		s.template = &storedTemplate{annotations: storedAnnotations(t.ObjectMeta.Annotations, desired.PodAnnotationRead), spec: storeVMISpec(&t.Spec)}
	}
	return s
}

func (v *storedVM) object() runtime.Object { return v.vm() }

func (v *storedVM) vm() *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{TypeMeta: v.typeMeta(), ObjectMeta: v.meta()}
	vm.Spec.Running, vm.Spec.RunStrategy = v.running, v.runStrategy
	if t := v.template; t != nil {
		vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: t.annotations.Map()},
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
	storedMeta
	spec      storedVMISpec
	node      string
	phase     kubevirtv1.VirtualMachineInstancePhase
	migration *storedMigration
}

// storedMigration is what Build reads of a VMI's migration state: the
// migration, the source and target nodes and pods, and how it ended.
type storedMigration struct {
	uid                    string
	sourceNode, targetNode string
	sourcePod, targetPod   string
	completed, failed      bool
}

// storeVMI is the stored form of v: its metadata as storedMeta keeps it,
// its spec (storeVMISpec), and of its status the node, phase and
// migration state.
func storeVMI(v *kubevirtv1.VirtualMachineInstance) storedVMI {
	s := storedVMI{storedMeta: storeMeta(v.TypeMeta, &v.ObjectMeta, nil, nil), spec: storeVMISpec(&v.Spec),
		node: shared(v.Status.NodeName), phase: kubevirtv1.VirtualMachineInstancePhase(shared(string(v.Status.Phase)))}
	if m := v.Status.MigrationState; m != nil {
		s.migration = &storedMigration{uid: string(m.MigrationUID), sourceNode: shared(m.SourceNode), targetNode: shared(m.TargetNode),
			sourcePod: m.SourcePod, targetPod: m.TargetPod, completed: m.Completed, failed: m.Failed}
	}
	return s
}

func (v *storedVMI) object() runtime.Object { return v.vmi() }

func (v *storedVMI) vmi() *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{
		TypeMeta: v.typeMeta(), ObjectMeta: v.meta(),
		Spec:   v.spec.spec(),
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: v.node, Phase: v.phase},
	}
	if m := v.migration; m != nil {
		vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: types.UID(m.uid),
			SourceNode: m.sourceNode, TargetNode: m.targetNode, SourcePod: m.sourcePod, TargetPod: m.targetPod,
			Completed: m.completed, Failed: m.failed}
	}
	return vmi
}

func (v *storedVMI) DeepCopyObject() runtime.Object {
	return compact(v.vmi().DeepCopy()).(runtime.Object)
}
