package desired

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
)

// Objects looks up, by key, the objects Engine.Update reads for the
// owners it rebuilds, so that an Update costs what changed, not every
// object. ObjectsOf implements it over Inputs; sources implements it over
// the informers' stores and indexes.
//
// Lookups over live stores each see an object as it is at the call: one
// may show a change newer than those the caller was told of. The owners
// such a change touches are then named by a later change set, and rebuilt
// again; acting on a change twice is harmless.
type Objects interface {
	Pod(ns, name string) *corev1.Pod
	VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine
	VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance
	Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration
	// OwnedVMIs lists the VMIs of namespace ns whose owner reference names
	// the VM vm (OwnerVM).
	OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance
	// Launchers lists the virt-launcher pods of namespace ns that run the
	// VMI vmi (LauncherOf).
	Launchers(ns, vmi string) []*corev1.Pod
	// Migrations lists the migrations of namespace ns of the VMI vmi.
	Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration
	// IP is kube-ovn's IP object called name: the record of the port of
	// that name.
	IP(name string) *kubeovnv1.IP
	// StatefulSetIPs lists the IP objects that record a port of a pod of
	// namespace ns named like a pod of the StatefulSet set
	// (StatefulSetPod).
	StatefulSetIPs(ns, set string) []*kubeovnv1.IP
	// Networks holds the kinds every Build reads whole, which are few:
	// NetworkAttachmentDefinitions, Subnets, Namespaces and StatefulSets,
	// and IPAMClaims (one per VM network that keeps its addresses: an
	// incremental Build reserves those no port reads). Its other fields
	// are empty.
	Networks() Inputs
	// Unreadable names an object a lookup found and could not read, ""
	// when there was none. Update gives up when there was: the caller
	// lists every object (and withholds deletes, as for any object that
	// cannot be read).
	Unreadable() string
}

// LauncherOf reports whether p is a virt-launcher pod and names the VMI it
// runs (which may be ""): the key Objects.Launchers looks pods up by.
func LauncherOf(p *corev1.Pod) (vmi string, ok bool) {
	if !isLauncher(p) {
		return "", false
	}
	return launcherVMI(p), true
}

// OwnerVM names the VM a VMI's owner reference names, "" when none does:
// the key Objects.OwnedVMIs looks VMIs up by.
func OwnerVM(vmi *kubevirtv1.VirtualMachineInstance) string {
	if r := vmOwnerRef(vmi.OwnerReferences); r != nil {
		return r.Name
	}
	return ""
}

// StatefulSetPod splits the name of a pod of a StatefulSet, "<set>-<ordinal>",
// into the set's name and the ordinal. It reports false for a name of
// another form.
func StatefulSetPod(name string) (set string, ordinal int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	ord, ok := parseOrdinal(name[i+1:])
	if !ok {
		return "", 0, false
	}
	return name[:i], ord, true
}

// ObjectsOf returns an Objects over in, indexed once: the lookups of a
// full Build's own inputs (a self-check, a verification, tests). Where in
// holds two objects of one key, the first is looked up.
func ObjectsOf(in Inputs) Objects {
	x := &inputObjects{
		in:         in,
		pods:       make(map[nsName]*corev1.Pod, len(in.Pods)),
		vms:        make(map[nsName]*kubevirtv1.VirtualMachine, len(in.VirtualMachines)),
		vmis:       make(map[nsName]*kubevirtv1.VirtualMachineInstance, len(in.VirtualMachineInstances)),
		migrations: make(map[nsName]*kubevirtv1.VirtualMachineInstanceMigration, len(in.Migrations)),
		ips:        make(map[string]*kubeovnv1.IP, len(in.IPs)),
		ownedVMIs:  map[nsName][]*kubevirtv1.VirtualMachineInstance{},
		launchers:  map[nsName][]*corev1.Pod{},
		vmiMigs:    map[nsName][]*kubevirtv1.VirtualMachineInstanceMigration{},
		setIPs:     map[nsName][]*kubeovnv1.IP{},
	}
	for _, p := range in.Pods {
		if p == nil {
			continue
		}
		if k := (nsName{p.Namespace, p.Name}); x.pods[k] == nil {
			x.pods[k] = p
			if vmi, ok := LauncherOf(p); ok {
				x.launchers[nsName{p.Namespace, vmi}] = append(x.launchers[nsName{p.Namespace, vmi}], p)
			}
		}
	}
	for _, vm := range in.VirtualMachines {
		if k := (nsName{vm.Namespace, vm.Name}); vm != nil && x.vms[k] == nil {
			x.vms[k] = vm
		}
	}
	for _, vmi := range in.VirtualMachineInstances {
		if vmi == nil {
			continue
		}
		if k := (nsName{vmi.Namespace, vmi.Name}); x.vmis[k] == nil {
			x.vmis[k] = vmi
			if vm := OwnerVM(vmi); vm != "" {
				x.ownedVMIs[nsName{vmi.Namespace, vm}] = append(x.ownedVMIs[nsName{vmi.Namespace, vm}], vmi)
			}
		}
	}
	for _, m := range in.Migrations {
		if m == nil {
			continue
		}
		if k := (nsName{m.Namespace, m.Name}); x.migrations[k] == nil {
			x.migrations[k] = m
			x.vmiMigs[nsName{m.Namespace, m.Spec.VMIName}] = append(x.vmiMigs[nsName{m.Namespace, m.Spec.VMIName}], m)
		}
	}
	for _, ip := range in.IPs {
		if ip != nil && x.ips[ip.Name] == nil {
			x.ips[ip.Name] = ip
			if set, _, ok := StatefulSetPod(ip.Spec.PodName); ok {
				x.setIPs[nsName{ip.Spec.Namespace, set}] = append(x.setIPs[nsName{ip.Spec.Namespace, set}], ip)
			}
		}
	}
	return x
}

type inputObjects struct {
	in         Inputs
	pods       map[nsName]*corev1.Pod
	vms        map[nsName]*kubevirtv1.VirtualMachine
	vmis       map[nsName]*kubevirtv1.VirtualMachineInstance
	migrations map[nsName]*kubevirtv1.VirtualMachineInstanceMigration
	ips        map[string]*kubeovnv1.IP
	ownedVMIs  map[nsName][]*kubevirtv1.VirtualMachineInstance
	launchers  map[nsName][]*corev1.Pod
	vmiMigs    map[nsName][]*kubevirtv1.VirtualMachineInstanceMigration
	setIPs     map[nsName][]*kubeovnv1.IP
}

func (x *inputObjects) Pod(ns, name string) *corev1.Pod { return x.pods[nsName{ns, name}] }
func (x *inputObjects) VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine {
	return x.vms[nsName{ns, name}]
}
func (x *inputObjects) VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance {
	return x.vmis[nsName{ns, name}]
}
func (x *inputObjects) Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	return x.migrations[nsName{ns, name}]
}
func (x *inputObjects) OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance {
	return x.ownedVMIs[nsName{ns, vm}]
}
func (x *inputObjects) Launchers(ns, vmi string) []*corev1.Pod { return x.launchers[nsName{ns, vmi}] }
func (x *inputObjects) Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration {
	return x.vmiMigs[nsName{ns, vmi}]
}
func (x *inputObjects) IP(name string) *kubeovnv1.IP { return x.ips[name] }
func (x *inputObjects) StatefulSetIPs(ns, set string) []*kubeovnv1.IP {
	return x.setIPs[nsName{ns, set}]
}
func (x *inputObjects) Networks() Inputs {
	return Inputs{
		NetworkAttachmentDefinitions: x.in.NetworkAttachmentDefinitions,
		Subnets:                      x.in.Subnets, Namespaces: x.in.Namespaces, StatefulSets: x.in.StatefulSets,
		IPAMClaims: x.in.IPAMClaims,
	}
}
func (x *inputObjects) Unreadable() string { return "" }
