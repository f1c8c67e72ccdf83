package desired

import (
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/state"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const (
	kindPod                = state.KindPod
	kindVirtualMachine     = state.KindVirtualMachine
	kindVirtualMachineInst = state.KindVirtualMachineInstance

	launcherLabelValue = "virt-launcher"
	vmNameLabel        = "vm.kubevirt.io/name"
	activationRARP     = "rarp"
)

type nsName struct{ ns, name string }

// launcher is what a Build reads of a virt-launcher pod, kept from the
// read: a pod a PodStore makes is good until the next (PodStore.Read), and
// is about 1.3 KB where this is a tenth of that. Its Carrier is what
// publishing reads, with the annotations Build reads (PodAnnotationRead).
type launcher struct {
	Carrier
	created metav1.Time
	// vmiUID is the UID the pod's VMI owner reference names, "" when none.
	vmiUID string
	// running is liveLauncher's answer for the pod.
	running bool
}

// launcherOf is what a Build keeps of the launcher pod p, whose
// annotations are ann.
func launcherOf(p *corev1.Pod, ann Annotations) launcher {
	l := launcher{Carrier: podCarrier(p, ann), created: p.CreationTimestamp, running: liveLauncher(p)}
	if r := vmiOwnerRef(p.OwnerReferences); r != nil {
		l.vmiUID = string(r.UID)
	}
	return l
}

// launcherList holds one launcher without allocating, more in a slice.
type launcherList struct {
	one  *launcher
	more []*launcher
}

func (l launcherList) add(p *launcher) launcherList {
	switch {
	case l.one == nil:
		l.one = p
	case l.more == nil:
		l.more = []*launcher{l.one, p}
	default:
		l.more = append(l.more, p)
	}
	return l
}

func (l launcherList) all() []*launcher {
	if l.more != nil {
		return l.more
	}
	if l.one != nil {
		return []*launcher{l.one}
	}
	return nil
}

// kubevirtIndex relates KubeVirt objects to each other: one entry per
// namespace and name, shared by a VM and its VMI (which KubeVirt names
// alike), so a VM finds everything about it with one lookup.
type kubevirtIndex struct {
	byName  map[nsName]*kvEntry
	entries arena[kvEntry]
	// launchers holds what the index keeps of each virt-launcher pod.
	launchers arena[launcher]
	// vmiHasVM[i] reports whether the i-th VMI (Inputs.AllVMIs) belongs
	// to an existing VM, whose ports it then is.
	vmiHasVM []bool
}

type kvEntry struct {
	// vm is the position in Inputs (AllVMs), plus one, of the VM of this
	// name, and vmi that (AllVMIs) of the VMI it runs as; 0 when none.
	// The index holds positions, not objects: a Build makes a stored VM or
	// VMI again where it reads it (vmiOf), and holds none of them at once.
	vm, vmi int
	// launchers and migrations are those of the VMI of this name.
	launchers  launcherList
	migrations []*kubevirtv1.VirtualMachineInstanceMigration
}

func (kv *kubevirtIndex) get(k nsName) *kvEntry { return kv.byName[k] }

func (kv *kubevirtIndex) entry(k nsName) *kvEntry {
	e := kv.byName[k]
	if e == nil {
		e = kv.entries.alloc()
		kv.byName[k] = e
	}
	return e
}

// isLauncher reports whether p is a virt-launcher pod: such pods never have
// a port of their own.
func isLauncher(p *corev1.Pod) bool {
	return IsLauncher(p.Labels[kubevirtv1.AppLabel], p.OwnerReferences)
}

// IsLauncher reports whether a pod whose kubevirt.io label is app and whose
// owner references are owners is a virt-launcher pod: what a PodStore's
// Launchers selects by.
func IsLauncher(app string, owners []metav1.OwnerReference) bool {
	return app == launcherLabelValue || vmiOwnerRef(owners) != nil
}

// PodLabelRead reports whether Build reads a pod's label key: KubeVirt's,
// which mark a virt-launcher pod and name its VM. It reads no other label
// of a pod, and the informers keep no other.
func PodLabelRead(key string) bool { return key == kubevirtv1.AppLabel || key == vmNameLabel }

// PodOwnerRead reports whether Build reads a pod's owner reference r: a
// VMI's (a virt-launcher pod) or a StatefulSet's (kube-ovn's ordinal
// pools, statefulSetOrdinal). It reads no other owner of a pod, and the
// informers keep no other.
func PodOwnerRead(r metav1.OwnerReference) bool {
	return (r.Kind == kindVirtualMachineInst && strings.HasPrefix(r.APIVersion, "kubevirt.io/")) ||
		(r.Kind == state.KindStatefulSet && strings.HasPrefix(r.APIVersion, "apps/"))
}

func vmiOwnerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Kind == kindVirtualMachineInst && strings.HasPrefix(refs[i].APIVersion, "kubevirt.io/") {
			return &refs[i]
		}
	}
	return nil
}

func vmOwnerRef(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Kind == kindVirtualMachine && strings.HasPrefix(refs[i].APIVersion, "kubevirt.io/") {
			return &refs[i]
		}
	}
	return nil
}

// launcherVMI names the VMI a launcher pod runs: its owner reference, else
// the kubevirt.io/domain annotation, else the vm.kubevirt.io/name label.
func launcherVMI(p *corev1.Pod) string {
	if r := vmiOwnerRef(p.OwnerReferences); r != nil && r.Name != "" {
		return r.Name
	}
	if d := p.Annotations[kubevirtv1.DomainAnnotation]; d != "" {
		return d
	}
	return p.Labels[vmNameLabel]
}

// indexKubeVirt indexes VMs, VMIs and migrations. Launcher pods are added
// by addPods, which reads every pod once.
func (b *builder) indexKubeVirt(in Inputs) {
	kv := &b.kv
	kv.byName = make(map[nsName]*kvEntry, in.VMCount()+in.VMICount())
	for i, vm := range in.ReadVMs() {
		if vm == nil {
			continue
		}
		// Duplicates cannot come from an API server; keep a stable one.
		if e := kv.entry(nsName{vm.Namespace, vm.Name}); e.vm == 0 || vm.UID < in.vms().at(e.vm-1).UID {
			e.vm = i + 1
		}
	}
	kv.vmiHasVM = make([]bool, in.VMICount())
	for i, vmi := range in.ReadVMIs() {
		if vmi == nil {
			continue
		}
		// Every VMI gets an entry of its own name, for its launcher pods.
		own := kv.entry(nsName{vmi.Namespace, vmi.Name})
		e, vm := b.vmOf(vmi, own)
		if e == nil {
			continue
		}
		kv.vmiHasVM[i] = true
		if e.vmi == 0 || betterVMI(vmi, in.vmis().at(e.vmi-1), vm) {
			e.vmi = i + 1
		}
	}
	for _, m := range in.Migrations {
		if m == nil || m.Spec.VMIName == "" {
			continue
		}
		e := kv.entry(nsName{m.Namespace, m.Spec.VMIName})
		e.migrations = append(e.migrations, m)
	}
}

// vmiOf returns the VMI e's VM runs as, made by at (of Inputs' VMIs), nil
// when none.
func vmiOf(at func(int) *kubevirtv1.VirtualMachineInstance, e *kvEntry) *kubevirtv1.VirtualMachineInstance {
	if e.vmi == 0 {
		return nil
	}
	return at(e.vmi - 1)
}

// addLauncher records a virt-launcher pod, whose annotations are ann,
// under its VMI's name. A launcher whose VMI is not in the inputs says
// nothing: a VM without a VMI is stopped.
func (b *builder) addLauncher(p *corev1.Pod, ann Annotations) {
	if name := launcherVMI(p); name != "" {
		if e := b.kv.get(nsName{p.Namespace, name}); e != nil {
			l := b.kv.launchers.alloc()
			*l = launcherOf(p, ann)
			e.launchers = e.launchers.add(l)
		}
	}
}

// vmOf returns the entry of the VM a VMI belongs to, and that VM's name,
// if that VM exists: the one its owner reference names, else the one of
// the same name (own).
func (b *builder) vmOf(vmi *kubevirtv1.VirtualMachineInstance, own *kvEntry) (*kvEntry, string) {
	if r := vmOwnerRef(vmi.OwnerReferences); r != nil && r.Name != vmi.Name {
		if e := b.kv.get(nsName{vmi.Namespace, r.Name}); e != nil && e.vm != 0 {
			return e, r.Name
		}
	}
	if own.vm != 0 {
		return own, vmi.Name
	}
	return nil, ""
}

// vmiEntry returns the index entry of vmi's own name; e is the entry of
// name, already looked up.
func (b *builder) vmiEntry(vmi *kubevirtv1.VirtualMachineInstance, e *kvEntry, name string) *kvEntry {
	if vmi == nil {
		return nil
	}
	if e != nil && vmi.Name == name {
		return e
	}
	return b.kv.get(nsName{vmi.Namespace, vmi.Name})
}

// betterVMI picks, of two VMIs claiming one VM, the live one, then the one
// named like the VM, then the first by name.
func betterVMI(a, b *kubevirtv1.VirtualMachineInstance, vm string) bool {
	if a.IsFinal() != b.IsFinal() {
		return !a.IsFinal()
	}
	if (a.Name == vm) != (b.Name == vm) {
		return a.Name == vm
	}
	return a.Name < b.Name
}

// liveLauncher reports whether a launcher pod is where its VM runs or is
// about to run: scheduled, not finished and not being deleted. A pod being
// deleted is the source of a finished migration or a VM shutting down;
// either way it no longer needs the port.
func liveLauncher(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// chassis computes requested-chassis and activation-strategy for the ports
// of a VMI: its current node first, then any migration target. A target is
// known from status.migrationState while the migration is neither completed
// nor failed, from a running VirtualMachineInstanceMigration, or from a
// second live launcher pod. A VMI that is absent or final has no chassis.
func (b *builder) chassis(vmi *kubevirtv1.VirtualMachineInstance, e *kvEntry) (chassis, strategy string) {
	if vmi == nil || vmi.IsFinal() {
		return "", ""
	}
	if e == nil {
		e = &kvEntry{}
	}
	cur := vmi.Status.NodeName
	ms := vmi.Status.MigrationState
	done := ms != nil && (ms.Completed || ms.Failed)
	var others []string
	add := func(n string) {
		if n != "" && n != cur && !slices.Contains(others, n) {
			others = append(others, n)
		}
	}
	if ms != nil && !done {
		if cur == "" {
			cur = ms.SourceNode
		}
		add(ms.TargetNode)
	}
	for _, m := range e.migrations {
		if !m.IsRunning() || m.Status.MigrationState == nil {
			continue
		}
		if done && ms.MigrationUID != "" && ms.MigrationUID == m.UID {
			continue // the VMI already records this migration's end
		}
		add(m.Status.MigrationState.TargetNode)
	}
	l := e.launchers
	if l.one != nil && l.more == nil && l.one.running && l.one.Node == cur && len(others) == 0 {
		return cur, "" // the common case: one launcher pod, where the VMI runs
	}
	for _, p := range sortedLaunchers(l) {
		if !p.running {
			continue
		}
		if p.vmiUID != "" && vmi.UID != "" && p.vmiUID != string(vmi.UID) {
			continue // a launcher of an earlier incarnation of this VMI
		}
		n := p.Node
		if cur == "" {
			cur = n
			continue
		}
		if n == cur {
			continue
		}
		if done && leftover(ms, p) {
			continue
		}
		add(n)
	}
	if cur == "" {
		if len(others) == 0 {
			return "", ""
		}
		cur, others = others[0], others[1:]
	}
	if len(others) == 0 {
		return cur, ""
	}
	return cur + "," + strings.Join(others, ","), activationRARP
}

// sortedLaunchers returns the launchers of l oldest first, then by name.
func sortedLaunchers(l launcherList) []*launcher {
	pods := l.all()
	if len(pods) > 1 {
		pods = slices.Clone(pods)
		slices.SortFunc(pods, func(x, y *launcher) int {
			if c := x.created.Compare(y.created.Time); c != 0 {
				return c
			}
			return strings.Compare(x.Name, y.Name)
		})
	}
	return pods
}

// leftover reports whether p is the source or target pod of a migration that
// has already completed or failed, still winding down. Pods are matched by
// name where the VMI records it, else by node.
func leftover(ms *kubevirtv1.VirtualMachineInstanceMigrationState, p *launcher) bool {
	is := func(pod, node string) bool {
		if pod != "" {
			return p.Name == pod
		}
		return node != "" && p.Node == node
	}
	return is(ms.SourcePod, ms.SourceNode) || is(ms.TargetPod, ms.TargetNode)
}
