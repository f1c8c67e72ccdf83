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

// ObjectsOf returns an Objects over in: the lookups of a Build of every
// owner, of a self-check or a verification, and of tests. Each kind is
// indexed on its first lookup, so a Build that asks nothing of a kind
// costs nothing for it. Where in holds two objects of one key, the first
// is looked up.
func ObjectsOf(in Inputs) Objects { return &inputObjects{in: in} }

type inputObjects struct {
	in        Inputs
	pods      map[nsName]*corev1.Pod
	launchers map[nsName][]*corev1.Pod
	// storedLaunchers is set once StoredPods' launchers are in launchers.
	storedLaunchers bool
	// vms, vmis and ownedVMIs hold positions (Inputs.AllVMs, AllVMIs),
	// each object made at its lookup: indexing StoredVMs or StoredVMIs by
	// object would hold them all.
	vms        map[nsName]int
	vmis       map[nsName]int
	ownedVMIs  map[nsName][]int
	migrations map[nsName]*kubevirtv1.VirtualMachineInstanceMigration
	vmiMigs    map[nsName][]*kubevirtv1.VirtualMachineInstanceMigration
	ips        map[string]*kubeovnv1.IP
	setIPs     map[nsName][]*kubeovnv1.IP
}

// index returns m, indexing objs into it (and into by, by the key key
// names, when key is set) on the first call: first of a key wins.
func index[T any, K comparable](m *map[K]*T, objs []*T, id func(*T) K, by *map[nsName][]*T, key func(*T) (nsName, bool)) map[K]*T {
	if *m != nil {
		return *m
	}
	*m = make(map[K]*T, len(objs))
	if by != nil {
		*by = map[nsName][]*T{}
	}
	for _, o := range objs {
		if o == nil {
			continue
		}
		if k := id(o); (*m)[k] == nil {
			(*m)[k] = o
			if by == nil {
				continue
			}
			if g, ok := key(o); ok {
				(*by)[g] = append((*by)[g], o)
			}
		}
	}
	return *m
}

// podIndex indexes Pods, and the launchers among them. A PodStore's pods
// are looked up in it (Pod), and its launchers found once, the first time
// they are asked for (Launchers): indexing its pods here would hold them
// all.
func (x *inputObjects) podIndex() map[nsName]*corev1.Pod {
	return index(&x.pods, x.in.Pods, func(p *corev1.Pod) nsName { return nsName{p.Namespace, p.Name} }, &x.launchers,
		launcherKey)
}

func launcherKey(p *corev1.Pod) (nsName, bool) {
	vmi, ok := LauncherOf(p)
	return nsName{p.Namespace, vmi}, ok
}

func (x *inputObjects) vmiIndex() map[nsName]int {
	if x.vmis == nil {
		x.vmis, x.ownedVMIs = map[nsName]int{}, map[nsName][]int{}
		for i, v := range x.in.ReadVMIs() {
			if v == nil {
				continue
			}
			if k := (nsName{v.Namespace, v.Name}); !has(x.vmis, k) {
				x.vmis[k] = i
				if vm := OwnerVM(v); vm != "" {
					x.ownedVMIs[nsName{v.Namespace, vm}] = append(x.ownedVMIs[nsName{v.Namespace, vm}], i)
				}
			}
		}
	}
	return x.vmis
}

func has[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

func (x *inputObjects) migrationIndex() map[nsName]*kubevirtv1.VirtualMachineInstanceMigration {
	return index(&x.migrations, x.in.Migrations,
		func(m *kubevirtv1.VirtualMachineInstanceMigration) nsName { return nsName{m.Namespace, m.Name} }, &x.vmiMigs,
		func(m *kubevirtv1.VirtualMachineInstanceMigration) (nsName, bool) {
			return nsName{m.Namespace, m.Spec.VMIName}, true
		})
}

func (x *inputObjects) ipIndex() map[string]*kubeovnv1.IP {
	return index(&x.ips, x.in.IPs, func(ip *kubeovnv1.IP) string { return ip.Name }, &x.setIPs,
		func(ip *kubeovnv1.IP) (nsName, bool) {
			set, _, ok := StatefulSetPod(ip.Spec.PodName)
			return nsName{ip.Spec.Namespace, set}, ok
		})
}

func (x *inputObjects) Pod(ns, name string) *corev1.Pod {
	if p := x.podIndex()[nsName{ns, name}]; p != nil || x.in.StoredPods == nil {
		return p
	}
	return x.in.StoredPods.Pod(ns, name)
}
func (x *inputObjects) VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine {
	if x.vms == nil {
		x.vms = map[nsName]int{}
		for i, v := range x.in.ReadVMs() {
			if v != nil && !has(x.vms, nsName{v.Namespace, v.Name}) {
				x.vms[nsName{v.Namespace, v.Name}] = i
			}
		}
	}
	if i, ok := x.vms[nsName{ns, name}]; ok {
		return x.in.vms().at(i)
	}
	return nil
}
func (x *inputObjects) VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance {
	if i, ok := x.vmiIndex()[nsName{ns, name}]; ok {
		return x.in.vmis().at(i)
	}
	return nil
}
func (x *inputObjects) Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	return x.migrationIndex()[nsName{ns, name}]
}
func (x *inputObjects) OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance {
	x.vmiIndex()
	var out []*kubevirtv1.VirtualMachineInstance
	for _, i := range x.ownedVMIs[nsName{ns, vm}] {
		out = append(out, x.in.vmis().at(i))
	}
	return out
}
func (x *inputObjects) Launchers(ns, vmi string) []*corev1.Pod {
	x.podIndex()
	if s := x.in.StoredPods; s != nil && !x.storedLaunchers {
		x.storedLaunchers = true
		for p := range s.Launchers() {
			if k, ok := launcherKey(p); ok && x.pods[nsName{p.Namespace, p.Name}] == nil {
				x.launchers[k] = append(x.launchers[k], p.DeepCopy())
			}
		}
	}
	return x.launchers[nsName{ns, vmi}]
}
func (x *inputObjects) Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration {
	x.migrationIndex()
	return x.vmiMigs[nsName{ns, vmi}]
}
func (x *inputObjects) IP(name string) *kubeovnv1.IP { return x.ipIndex()[name] }
func (x *inputObjects) StatefulSetIPs(ns, set string) []*kubeovnv1.IP {
	x.ipIndex()
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
