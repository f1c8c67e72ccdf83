package sources

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Names of the indexes the informers keep for lookups.
const (
	// indexVMI indexes migrations by their VMI, "<namespace>/<vmi>"
	// (spec.vmiName), and virt-launcher pods by a bucket of their VMI's
	// (desired.LauncherOf, launcherBucket).
	indexVMI = "vmi"
	// indexVM indexes VMIs by the VM their owner reference names,
	// "<namespace>/<vm>" (desired.OwnerVM), when it is not the VMI's own
	// name: KubeVirt names every VMI it starts after its VM, and such a
	// VMI is found by its key (lookup.OwnedVMIs). An index entry is a set
	// of its own, some 200 bytes a VMI.
	indexVM = "vm"
	// indexStatefulSet indexes IP objects by the StatefulSet their pod's
	// name is of, "<namespace>/<set>" (desired.StatefulSetPod).
	indexStatefulSet = "statefulset"
)

// indexers are the indexes each kind's informer keeps, added before it
// starts. They index the typed objects the transforms put in the stores
// (of a stored form, the API object it holds: apiObject).
var indexers = map[Kind]cache.Indexers{
	KindPod: {indexVMI: func(obj any) ([]string, error) {
		if p, ok := apiObject(obj).(*corev1.Pod); ok {
			if vmi, ok := desired.LauncherOf(p); ok {
				return []string{launcherBucket(p.Namespace, vmi)}, nil
			}
		}
		return nil, nil
	}},
	KindVirtualMachineInstance: {indexVM: func(obj any) ([]string, error) {
		if vmi, ok := apiObject(obj).(*kubevirtv1.VirtualMachineInstance); ok {
			if vm := desired.OwnerVM(vmi); vm != "" && vm != vmi.Name {
				return []string{vmi.Namespace + "/" + vm}, nil
			}
		}
		return nil, nil
	}},
	KindVirtualMachineInstanceMigration: {indexVMI: func(obj any) ([]string, error) {
		if m, ok := obj.(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
		}
		return nil, nil
	}},
	KindIP: {indexStatefulSet: func(obj any) ([]string, error) {
		if ip, ok := obj.(*kubeovnv1.IP); ok {
			if set, _, ok := desired.StatefulSetPod(ip.Spec.PodName); ok {
				return []string{ip.Spec.Namespace + "/" + set}, nil
			}
		}
		return nil, nil
	}},
}

// lookup is desired.Objects over the informers' stores: each lookup reads
// a store (GetByKey) or one of its indexes as it is at the call.
type lookup struct {
	inf  map[Kind]cache.SharedIndexInformer
	nets desired.Inputs
	// bad is the first object looked up that could not be read.
	bad *Unreadable
}

// get looks up the object of kind k at key ("<namespace>/<name>", or the
// name of a cluster-scoped object).
func get[T any](l *lookup, k Kind, key string) T {
	var zero T
	i, ok := l.inf[k]
	if !ok {
		return zero // not installed: no object
	}
	obj, exists, err := i.GetStore().GetByKey(key)
	if err != nil || !exists {
		return zero
	}
	return typed[T](l, k, obj)
}

// byIndex looks up the objects of kind k whose index value is key.
func byIndex[T any](l *lookup, k Kind, index, key string) []T {
	i, ok := l.inf[k]
	if !ok {
		return nil
	}
	objs, err := i.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		var zero T
		if v := typed[T](l, k, o); any(v) != any(zero) {
			out = append(out, v)
		}
	}
	return out
}

// typed is obj in its typed form, as collect converts it: an object that
// could not be read is noted, and looked up as none.
func typed[T any](l *lookup, k Kind, obj any) T {
	var zero T
	switch v := apiObject(obj).(type) {
	case T:
		return v
	case *unconvertible:
		l.unread(v.unreadable(k))
	default:
		l.unread(Unreadable{Kind: k, Err: fmt.Sprintf("unexpected %T in the store", obj)})
	}
	return zero
}

func (l *lookup) unread(u Unreadable) {
	if l.bad == nil {
		l.bad = &u
	}
}

func key(ns, name string) string { return ns + "/" + name }

func (l *lookup) Pod(ns, name string) *corev1.Pod { return get[*corev1.Pod](l, KindPod, key(ns, name)) }

func (l *lookup) VirtualMachine(ns, name string) *kubevirtv1.VirtualMachine {
	return get[*kubevirtv1.VirtualMachine](l, KindVirtualMachine, key(ns, name))
}

func (l *lookup) VirtualMachineInstance(ns, name string) *kubevirtv1.VirtualMachineInstance {
	return get[*kubevirtv1.VirtualMachineInstance](l, KindVirtualMachineInstance, key(ns, name))
}

func (l *lookup) Migration(ns, name string) *kubevirtv1.VirtualMachineInstanceMigration {
	return get[*kubevirtv1.VirtualMachineInstanceMigration](l, KindVirtualMachineInstanceMigration, key(ns, name))
}

// OwnedVMIs finds the VMI named as vm by its key and the others in the
// index (indexVM).
func (l *lookup) OwnedVMIs(ns, vm string) []*kubevirtv1.VirtualMachineInstance {
	vmis := byIndex[*kubevirtv1.VirtualMachineInstance](l, KindVirtualMachineInstance, indexVM, key(ns, vm))
	if vmi := l.VirtualMachineInstance(ns, vm); vmi != nil && desired.OwnerVM(vmi) == vm {
		vmis = append(vmis, vmi)
	}
	return vmis
}

// Launchers looks up the launcher pods in vmi's bucket and keeps those of
// vmi.
func (l *lookup) Launchers(ns, vmi string) []*corev1.Pod {
	pods := byIndex[*corev1.Pod](l, KindPod, indexVMI, launcherBucket(ns, vmi))
	return slices.DeleteFunc(pods, func(p *corev1.Pod) bool {
		v, ok := desired.LauncherOf(p)
		return !ok || v != vmi || p.Namespace != ns
	})
}

// launcherBuckets is how many buckets indexVMI puts virt-launcher pods in,
// by their VMI: client-go keeps a set of its own for each value of an
// index, about 300 bytes for a set of one, and a value a VMI (one launcher
// pod, two while it migrates) took 10 MB at 30,000 running VMs. A bucket
// holds the launcher pods of some VMIs (7 at 30,000), which Launchers
// makes and then keeps those of the VMI looked up.
const launcherBuckets = 4096

// launcherBucket is the value indexVMI gives the launcher pods of VMI vmi
// in namespace ns: a bucket, by the hash of its key "<namespace>/<vmi>"
// (state.NameHash, fixed for the life of the process as the index is).
func launcherBucket(ns, vmi string) string {
	return strconv.Itoa(int(state.NameHash(key(ns, vmi)) % launcherBuckets))
}

func (l *lookup) Migrations(ns, vmi string) []*kubevirtv1.VirtualMachineInstanceMigration {
	return byIndex[*kubevirtv1.VirtualMachineInstanceMigration](l, KindVirtualMachineInstanceMigration, indexVMI, key(ns, vmi))
}

func (l *lookup) IP(name string) *kubeovnv1.IP { return get[*kubeovnv1.IP](l, KindIP, name) }

func (l *lookup) StatefulSetIPs(ns, set string) []*kubeovnv1.IP {
	return byIndex[*kubeovnv1.IP](l, KindIP, indexStatefulSet, key(ns, set))
}

func (l *lookup) Networks() desired.Inputs { return l.nets }

func (l *lookup) Unreadable() string {
	if l.bad == nil {
		return ""
	}
	return l.bad.String()
}
