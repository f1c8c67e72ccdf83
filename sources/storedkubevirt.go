package sources

import (
	"encoding/binary"
	"slices"
	"sync"

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
// is attached by default. The names of networks, Multus networks and
// interfaces, which VMs hold alike, are shared.
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
	// Read into room on the stack: the lists kept are the shared ones.
	var netRoom [8]storedNetwork
	var ifaceRoom [8]storedInterface
	nets, ifaces := netRoom[:0], ifaceRoom[:0]
	for _, n := range s.Networks {
		sn := storedNetwork{name: n.Name}
		switch {
		case n.Multus != nil:
			sn.source, sn.multus, sn.multusDefault = sourceMultus, n.Multus.NetworkName, n.Multus.Default
		case n.Pod != nil:
			sn.source = sourcePod
		}
		nets = append(nets, sn)
	}
	for _, f := range s.Domain.Devices.Interfaces {
		ifaces = append(ifaces, storedInterface{name: f.Name, mac: f.MacAddress, state: f.State})
	}
	specListsMu.Lock()
	defer specListsMu.Unlock()
	return storedVMISpec{networks: specLists.networks(nets), interfaces: specLists.interfaces(ifaces),
		autoattach: s.Domain.Devices.AutoattachPodInterface}
}

// sharedSpecLists hold the lists of networks and interfaces that stored
// VMs and VMIs share: the VMs made from one template hold theirs alike. A
// list of interfaces with a MAC is its VM's own, and not shared. Every
// list is forgotten once they hold maxSpecLists of a kind, so that lists
// which are not alike cannot make them grow: a list is then held again,
// not lost. The informers store objects on goroutines of their own, under
// specListsMu.
type sharedSpecLists struct {
	nets   map[string][]storedNetwork
	ifaces map[string][]storedInterface
}

const maxSpecLists = 1 << 12

var (
	specListsMu sync.Mutex
	specLists   sharedSpecLists
)

// networks returns the shared list equal to l (nil for none), its names
// shared, and never l itself.
func (sl *sharedSpecLists) networks(l []storedNetwork) []storedNetwork {
	if len(l) == 0 {
		return nil
	}
	var buf [256]byte
	id := buf[:0]
	for _, n := range l {
		id = append(appendField(appendField(id, n.name), n.multus), byte(n.source))
		if n.multusDefault {
			id = append(id, 1)
		} else {
			id = append(id, 0)
		}
	}
	if c, ok := sl.nets[string(id)]; ok {
		return c
	}
	c := slices.Clone(l)
	for i := range c {
		c[i].name, c[i].multus = shared(c[i].name), shared(c[i].multus)
	}
	if sl.nets == nil || len(sl.nets) >= maxSpecLists {
		sl.nets = map[string][]storedNetwork{}
	}
	sl.nets[string(id)] = c
	return c
}

// appendField appends s to id, its length first: fields so written
// never read as others.
func appendField(id []byte, s string) []byte {
	return append(binary.AppendUvarint(id, uint64(len(s))), s...)
}

// interfaces is networks for a list of interfaces; one with a MAC is a
// copy of its own.
func (sl *sharedSpecLists) interfaces(l []storedInterface) []storedInterface {
	if len(l) == 0 {
		return nil
	}
	own := slices.ContainsFunc(l, func(f storedInterface) bool { return f.mac != "" })
	var buf [256]byte
	id := buf[:0]
	if !own {
		for _, f := range l {
			id = appendField(appendField(id, f.name), string(f.state))
		}
		if c, ok := sl.ifaces[string(id)]; ok {
			return c
		}
	}
	c := slices.Clone(l)
	for i := range c {
		c[i].name, c[i].state = shared(c[i].name), kubevirtv1.InterfaceState(shared(string(c[i].state)))
	}
	if own {
		return c
	}
	if sl.ifaces == nil || len(sl.ifaces) >= maxSpecLists {
		sl.ifaces = map[string][]storedInterface{}
	}
	sl.ifaces[string(id)] = c
	return c
}

// specMemory is what a spec is made in (storedVMISpec.fill) beside
// itself: its networks, their sources and its interfaces.
type specMemory struct {
	networks []kubevirtv1.Network
	multus   []kubevirtv1.MultusNetwork
	pod      kubevirtv1.PodNetwork
	ifaces   []kubevirtv1.Interface
}

// fill makes the spec s holds in *spec and m: in slices of its own when m
// is new, else in m's, which the spec made in them before then no longer
// has.
func (s *storedVMISpec) fill(spec *kubevirtv1.VirtualMachineInstanceSpec, m *specMemory) {
	*spec = kubevirtv1.VirtualMachineInstanceSpec{}
	if n := len(s.networks); n > 0 {
		// Room for a Multus source a network, so that none moves.
		m.networks, m.multus, m.pod = slices.Grow(m.networks[:0], n)[:n], slices.Grow(m.multus[:0], n), kubevirtv1.PodNetwork{}
		for i, sn := range s.networks {
			m.networks[i] = kubevirtv1.Network{Name: sn.name}
			switch sn.source {
			case sourcePod:
				m.networks[i].Pod = &m.pod
			case sourceMultus:
				m.multus = append(m.multus, kubevirtv1.MultusNetwork{NetworkName: sn.multus, Default: sn.multusDefault})
				m.networks[i].Multus = &m.multus[len(m.multus)-1]
			}
		}
		spec.Networks = m.networks
	}
	if n := len(s.interfaces); n > 0 {
		m.ifaces = slices.Grow(m.ifaces[:0], n)[:n]
		for i, f := range s.interfaces {
			m.ifaces[i] = kubevirtv1.Interface{Name: f.name, MacAddress: f.mac, State: f.state}
		}
		spec.Domain.Devices.Interfaces = m.ifaces
	}
	spec.Domain.Devices.AutoattachPodInterface = s.autoattach
}

// reusable is the map to make the next object's annotations in: made, the
// map they were made in, or had when they were none (Annotations.MapInto
// then makes no map).
func reusable(made, had map[string]string) map[string]string {
	if made != nil {
		return made
	}
	return had
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

func (v *storedVM) vm() *kubevirtv1.VirtualMachine { return v.makeIn(new(vmMemory)) }

// vmMemory is what a stored VM is made in (storedVM.makeIn).
type vmMemory struct {
	vm       kubevirtv1.VirtualMachine
	template kubevirtv1.VirtualMachineInstanceTemplateSpec
	// ann and templateAnn are the maps of the VM's and its template's
	// annotations, kept when the VM made last had none.
	ann, templateAnn map[string]string
	spec             specMemory
}

// makeIn makes the VM's API object in m: all of it new when m is, else
// in the memory of the VM made in m before, maps and slices included,
// which that VM then no longer has.
func (v *storedVM) makeIn(m *vmMemory) *kubevirtv1.VirtualMachine {
	m.vm = kubevirtv1.VirtualMachine{TypeMeta: v.typeMeta()}
	v.fill(&m.vm.ObjectMeta, nil, m.ann)
	m.ann = reusable(m.vm.Annotations, m.ann)
	m.vm.Spec.Running, m.vm.Spec.RunStrategy = v.running, v.runStrategy
	if t := v.template; t != nil {
		m.template = kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: t.annotations.MapInto(m.templateAnn)},
		}
		m.templateAnn = reusable(m.template.ObjectMeta.Annotations, m.templateAnn)
		t.spec.fill(&m.template.Spec, &m.spec)
		m.vm.Spec.Template = &m.template
	}
	return &m.vm
}

func (v *storedVM) DeepCopyObject() runtime.Object {
	return compact(v.vm().DeepCopy()).(runtime.Object)
}

// storedVMI holds what leanKubeVirt keeps of a VMI.
type storedVMI struct {
	storedMeta
	spec      storedVMISpec
	node      string
	phase     phase
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
		node: shared(v.Status.NodeName), phase: phaseOf(string(v.Status.Phase))}
	if m := v.Status.MigrationState; m != nil {
		s.migration = &storedMigration{uid: string(m.MigrationUID), sourceNode: shared(m.SourceNode), targetNode: shared(m.TargetNode),
			sourcePod: m.SourcePod, targetPod: m.TargetPod, completed: m.Completed, failed: m.Failed}
	}
	return s
}

func (v *storedVMI) object() runtime.Object { return v.vmi() }

func (v *storedVMI) vmi() *kubevirtv1.VirtualMachineInstance { return v.makeIn(new(vmiMemory)) }

// vmiMemory is what a stored VMI is made in (storedVMI.makeIn).
type vmiMemory struct {
	vmi       kubevirtv1.VirtualMachineInstance
	migration *kubevirtv1.VirtualMachineInstanceMigrationState
	ann       map[string]string
	spec      specMemory
}

// makeIn is storedVM.makeIn for a VMI.
func (v *storedVMI) makeIn(m *vmiMemory) *kubevirtv1.VirtualMachineInstance {
	m.vmi = kubevirtv1.VirtualMachineInstance{TypeMeta: v.typeMeta(),
		Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: v.node, Phase: kubevirtv1.VirtualMachineInstancePhase(v.phase.String())}}
	v.fill(&m.vmi.ObjectMeta, nil, m.ann)
	m.ann = reusable(m.vmi.Annotations, m.ann)
	v.spec.fill(&m.vmi.Spec, &m.spec)
	if mig := v.migration; mig != nil {
		if m.migration == nil {
			m.migration = new(kubevirtv1.VirtualMachineInstanceMigrationState)
		}
		*m.migration = kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: types.UID(mig.uid),
			SourceNode: mig.sourceNode, TargetNode: mig.targetNode, SourcePod: mig.sourcePod, TargetPod: mig.targetPod,
			Completed: mig.completed, Failed: mig.failed}
		m.vmi.Status.MigrationState = m.migration
	}
	return &m.vmi
}

func (v *storedVMI) DeepCopyObject() runtime.Object {
	return compact(v.vmi().DeepCopy()).(runtime.Object)
}
