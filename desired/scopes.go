package desired

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// Why says why Engine.Update gave up and the caller must build in full;
// the zero Why, that it did not.
type Why struct {
	// Reason is one of the Reasons below: a metric's label.
	Reason string
	// Detail says what it was, for the log.
	Detail string
}

// Reasons a Why gives, a small fixed set (a metric's label). The caller of
// Update adds its own: a first pass, a resync, ...
const (
	ReasonNoBase     = "no-base"         // no result to update: the first call, or after one gave up or a pass failed
	ReasonConfig     = "config"          // the config changed: every owner
	ReasonAgain      = "again"           // the last result waits for an address
	ReasonNAD        = "nad"             // a NetworkAttachmentDefinition's change reaches owners not rebuilt
	ReasonSubnet     = "subnet"          // a kube-ovn Subnet came, went, or changed under owners not rebuilt
	ReasonTooMany    = "too-many"        // a quarter of the owners to rebuild
	ReasonPortHeld   = "port-held"       // a port name, or an address held twice, involves an owner not rebuilt
	ReasonUnreadable = "unreadable"      // an object looked up could not be read
	ReasonUnowned    = "unowned-problem" // a problem of no owner while owners were read
	ReasonUnscoped   = "unscoped"        // a kind no scope is declared for
	ReasonSwitchFull = "switch-full"     // a switch would hold more ports than OVN binds
	ReasonClaimRead  = "claim-read"      // an IPAMClaim an owner rebuilt reads is read by an owner not rebuilt
	ReasonDrift      = "drift"           // another writer deleted or re-addressed a port of ours since the last result
)

// Gave reports whether w says Update gave up.
func (w Why) Gave() bool { return w.Reason != "" }

// String is "<reason>: <detail>", "" for the zero Why.
func (w Why) String() string {
	if w.Reason == "" {
		return ""
	}
	return w.Reason + ": " + w.Detail
}

// Kinds of the objects every Build reads whole, as ObjectRef names them.
const (
	kindNamespace   = state.KindNamespace
	kindStatefulSet = state.KindStatefulSet
)

// scopes is, for every kind of object Inputs holds, which owners a change
// of one can affect: a scope adds them to those touched, or says why it
// cannot tell (the caller then builds in full). The config, which is not
// an object, affects every owner (Update builds in full when it changed).
//
//	Pod                  itself; a virt-launcher pod its VM's group, the one it ran and the one it runs
//	VirtualMachine       its group (the VM and the VMIs its owner references join)
//	VMI                  its group, and the VMs it was and is of
//	migration            the groups of the VMI it was and is of
//	Namespace            the owners in it, when its ovn.kubernetes.io/logical_switch changed
//	StatefulSet          its pods (by name, <set>-<ordinal>): gone ones keep their ports by it
//	IP object            the owner of the port it is named after, the owner it names and the one it named
//	IPAMClaim            the owners that looked it up (by ipam-claim-reference or by ipam-extensions' name),
//	                     whether it was there or not
//	NAD                  the owners that looked it up (by name, there or not) and those with ports on the
//	                     switch it had; after the Build, checkNADs gives up unless every owner of a NAD
//	                     whose record changed (a switch taken from another) was rebuilt
//	Subnet               the owners with ports on its switch (named after it), none when its
//	                     spec (but namespaces and default) and provider read as recorded; after the Build,
//	                     checkSubnets gives up unless every owner on a Subnet whose spec changed
//	                     was rebuilt, and when one came, went, turned valid or invalid, or changed
//	                     provider
//
// A claim no owner looks up only reserves its addresses, which every Build
// reads again from all claims, whichever owners it rebuilds, as it does a StatefulSet's.
// An IP object's reservation (a gone StatefulSet pod's, keepStatefulSetPorts)
// is read again by every Build, whichever owners it rebuilds, from the sets and their IP
// objects: it only bounds what the owners rebuilt are given.
var scopes = map[string]func(b *base, objs Objects, c state.ObjectRef, sel *touched) Why{
	kindPod:                (*base).podScope,
	kindVirtualMachine:     (*base).vmScope,
	kindVirtualMachineInst: (*base).vmiScope,
	state.KindVirtualMachineInstanceMigration: (*base).migrationScope,
	kindNamespace:       (*base).namespaceScope,
	kindStatefulSet:     (*base).statefulSetScope,
	state.KindIP:        (*base).ipScope,
	state.KindIPAMClaim: (*base).claimScope,
	kindNAD:             (*base).nadScope,
	kindSubnet:          (*base).subnetScope,
}

// Scoped reports whether scopes declares which owners a change of an
// object of kind touches: every kind Inputs holds must be (sources checks
// its table of kinds against it).
func Scoped(kind string) bool {
	_, ok := scopes[kind]
	return ok
}

// touched is the owners an Update rebuilds, as the scopes find them.
type touched struct {
	pods   map[nsName]bool // plain pod owners
	groups map[nsName]bool // KubeVirt names: a VM's, a VMI's
	// changedPods are the pods named as changed: each is looked up once,
	// and joins the group of the VMI it ran.
	changedPods []nsName
}

// owner selects the owner whose id is id ("<Kind>/<ns>/<name>").
func (sel *touched) owner(id string) {
	kind, ns, name := splitOwnerID(id)
	switch kind {
	case kindPod:
		sel.pods[nsName{ns, name}] = true
	case kindVirtualMachine, kindVirtualMachineInst:
		sel.groups[nsName{ns, name}] = true
	}
}

// ownersOn selects the owners of the ports of want on switch sw. They are
// asked for only when a NAD's or a Subnet's spec changes, seldom: they are
// found among all ports, not kept in an index of an entry a port.
func (b *base) ownersOn(sw string, sel *touched) {
	for _, p := range b.want.Ports.All() {
		if sw != "" && p.Switch == sw {
			sel.owner(p.Owner)
		}
	}
}

func (b *base) podScope(_ Objects, c state.ObjectRef, sel *touched) Why {
	k := nsName{c.Namespace, c.Name}
	sel.pods[k] = true
	sel.changedPods = append(sel.changedPods, k)
	return Why{}
}

func (b *base) vmScope(_ Objects, c state.ObjectRef, sel *touched) Why {
	sel.groups[nsName{c.Namespace, c.Name}] = true
	return Why{}
}

func (b *base) vmiScope(objs Objects, c state.ObjectRef, sel *touched) Why {
	k := nsName{c.Namespace, c.Name}
	sel.groups[k] = true
	// The VMs it was of, and the one it is of now.
	for _, v := range b.vmiVM.take(k) {
		sel.groups[nsName{k.ns, v}] = true
	}
	if vmi := objs.VirtualMachineInstance(k.ns, k.name); vmi != nil {
		if vm := OwnerVM(vmi); vm != "" && vm != vmi.Name {
			b.vmiVM.add(k, vm)
			sel.groups[nsName{k.ns, vm}] = true
		}
	}
	return Why{}
}

func (b *base) migrationScope(objs Objects, c state.ObjectRef, sel *touched) Why {
	k := nsName{c.Namespace, c.Name}
	for _, v := range b.migVMI.take(k) {
		sel.groups[nsName{k.ns, v}] = true
	}
	if m := objs.Migration(k.ns, k.name); m != nil {
		b.migVMI.add(k, m.Spec.VMIName)
		sel.groups[nsName{k.ns, m.Spec.VMIName}] = true
	}
	return Why{}
}

// namespaceScope: of a Namespace, Build reads its
// ovn.kubernetes.io/logical_switch, which places the primary interface of
// an owner in it that has no port yet (step 4 of chooseNetwork). A change
// of anything else rebuilds nothing. With no Subnet, the first Namespace
// to name a switch (or the last to stop) also changes how the network of
// an owner elsewhere is chosen (kubeOVNIndex.any), but only for one whose
// port is on a Subnet that is gone: it has an UnknownSubnet problem, and
// every Update rebuilds it.
func (b *base) namespaceScope(objs Objects, c state.ObjectRef, sel *touched) Why {
	cur := ""
	for _, ns := range objs.Networks().Namespaces {
		if ns != nil && ns.Name == c.Name {
			cur = strings.TrimSpace(ns.Annotations[NamespaceSwitchAnnotation])
		}
	}
	if cur == b.nsSwitch[c.Name] {
		return Why{}
	}
	if cur == "" {
		delete(b.nsSwitch, c.Name)
	} else {
		b.nsSwitch[c.Name] = cur
	}
	// A Namespace's switch changes seldom: its owners are found among the
	// owners of every port, not kept in an index of an entry an owner.
	for _, p := range b.want.Ports.All() {
		if p.Owner != "" && ownerNamespace(p.Owner) == c.Name {
			sel.owner(p.Owner)
		}
	}
	return Why{}
}

// ownerNamespace is the namespace of the owner whose id is id
// ("<Kind>/<ns>/<name>").
func ownerNamespace(id string) string {
	_, ns, _ := splitOwnerID(id)
	return ns
}

// splitOwnerID splits the id of an owner, "<Kind>/<ns>/<name>".
func splitOwnerID(id string) (kind, ns, name string) {
	kind, rest, _ := strings.Cut(id, "/")
	ns, name, _ = strings.Cut(rest, "/")
	return kind, ns, name
}

// statefulSetScope: a StatefulSet's replicas, ordinals and deletion decide
// whether its gone pods keep their ports (keepStatefulSetPorts). Its pods
// that have ports are the owners of the last result named like its pods
// (a gone pod whose ports are kept is also unsettled, so rebuilt by every
// Update); a gone pod with no port in it keeps none. Its live pods read
// nothing of it (an ip_pool's ordinal is the pod's owner reference's).
func (b *base) statefulSetScope(_ Objects, c state.ObjectRef, sel *touched) Why {
	for id := range b.bySet[nsName{c.Namespace, c.Name}] {
		sel.owner(id)
	}
	return Why{}
}

// ipScope: an IP object is read by the Build of the port it is named
// after (readIPRecord), and names an owner, which it is a record of or a
// problem on. Its owner kind is not kept (nothing else reads it): both a
// pod and a VM of that name are rebuilt.
func (b *base) ipScope(objs Objects, c state.ObjectRef, sel *touched) Why {
	for _, k := range b.ipNamed.take(nsName{"", c.Name}) {
		ns, name, _ := strings.Cut(k, "/")
		sel.pods[nsName{ns, name}], sel.groups[nsName{ns, name}] = true, true
	}
	if ip := objs.IP(c.Name); ip != nil && ip.Spec.PodName != "" {
		b.ipNamed.add(nsName{"", c.Name}, ip.Spec.Namespace+"/"+ip.Spec.PodName)
		k := nsName{ip.Spec.Namespace, ip.Spec.PodName}
		sel.pods[k], sel.groups[k] = true, true
	}
	if p := b.want.Ports.Get(c.Name); p != nil && p.Owner != "" {
		sel.owner(p.Owner)
	}
	return Why{}
}

// ownerPorts lists each owner's ports by name. Most owners have one port,
// called as the owner is ("<name>.<ns>", its base): that port is found in
// want by its name, its Owner the owner's id, and is not listed. The
// others, an owner's ports on other networks, are listed in other.
type ownerPorts struct {
	other map[string][]string
}

func newOwnerPorts() ownerPorts { return ownerPorts{other: map[string][]string{}} }

// add lists name among the ports of owner id.
func (o ownerPorts) add(id, name string) {
	if id != "" && !isBase(name, id) {
		o.other[id] = append(o.other[id], name)
	}
}

// appendNames appends to names those of the ports of owner id in want,
// the ports o lists the others of.
func (o ownerPorts) appendNames(names []string, id string, want state.Ports) []string {
	if p := basePort(id, want); p != nil {
		names = append(names, p.Name)
	}
	return append(names, o.other[id]...)
}

// has reports whether owner id has a port in want, the ports o lists the
// others of.
func (o ownerPorts) has(id string, want state.Ports) bool {
	return basePort(id, want) != nil || len(o.other[id]) > 0
}

// delete forgets the ports of owner id.
func (o ownerPorts) delete(id string) { delete(o.other, id) }

// basePort is owner id's port in want called as the owner is, or nil.
func basePort(id string, want state.Ports) *state.Port {
	if p := want.Get(baseOf(id)); p != nil && p.Owner == id {
		return p
	}
	return nil
}

// baseOf is the base of the owner whose id is id: "<name>.<ns>" of
// "<Kind>/<ns>/<name>" (ownerNames).
func baseOf(id string) string {
	_, ns, name := splitOwnerID(id)
	return name + "." + ns
}

// isBase reports whether name is baseOf(id), without making it.
func isBase(name, id string) bool {
	_, ns, owner := splitOwnerID(id)
	return len(name) == len(owner)+1+len(ns) && name[:len(owner)] == owner && name[len(owner)] == '.' && name[len(owner)+1:] == ns
}

// indexOwner adds id, an owner of a port of want, to the owners by
// StatefulSet; unindexOwner takes it out.
func (b *base) indexOwner(id string) {
	kind, ns, name := splitOwnerID(id)
	if set, _, ok := StatefulSetPod(name); ok && kind == kindPod {
		k := nsName{ns, set}
		if b.bySet[k] == nil {
			b.bySet[k] = map[string]bool{}
		}
		b.bySet[k][id] = true
	}
}

func (b *base) unindexOwner(id string) {
	kind, ns, name := splitOwnerID(id)
	if set, _, ok := StatefulSetPod(name); ok && kind == kindPod {
		k := nsName{ns, set}
		if m := b.bySet[k]; m != nil {
			if delete(m, id); len(m) == 0 {
				delete(b.bySet, k)
			}
		}
	}
}

// rebuild is what an Update rebuilds: the owners, and the inputs that
// hold their objects (and every network's).
type rebuild struct {
	owners map[string]bool
	in     Inputs
}

// rebuildOf finds the owners changed touches (scopes) and looks up the
// objects they read. It also brings b's relations up to date with the
// changed objects.
func (b *base) rebuildOf(objs Objects, changed []state.ObjectRef) (rebuild, Why) {
	sel := &touched{pods: map[nsName]bool{}, groups: map[nsName]bool{}}
	for _, c := range changed {
		scope, ok := scopes[c.Kind]
		if !ok {
			return rebuild{}, Why{ReasonUnscoped, "a " + c.Kind + " changed (" + c.String() + ")"}
		}
		if w := scope(b, objs, c, sel); w.Gave() {
			return rebuild{}, w
		}
	}
	for id := range b.unsettled {
		sel.owner(id)
	}
	looked := b.joinChangedPods(objs, sel)
	join(objs, sel.groups)
	r := rebuild{owners: make(map[string]bool, len(sel.pods)+2*len(sel.groups))}
	for k := range sel.pods {
		r.owners[kindPod+"/"+k.ns+"/"+k.name] = true
	}
	for k := range sel.groups {
		r.owners[kindVirtualMachine+"/"+k.ns+"/"+k.name] = true
		r.owners[kindVirtualMachineInst+"/"+k.ns+"/"+k.name] = true
	}
	// Owners have a port each, most of them: a quarter of the ports is
	// about a quarter of the owners.
	if len(r.owners) > max(64, b.want.Ports.Len()/4) {
		return rebuild{}, Why{ReasonTooMany, "a quarter of the owners changed"}
	}
	r.in = b.lookUp(objs, sel, looked)
	return r, Why{}
}

// joinChangedPods adds to sel's groups, for each changed pod, the group of
// the VMI it ran (a deleted launcher pod is known by that alone) and of
// the one it runs now. Each pod is looked up once, and returned by key: a
// store may take it between two lookups, and the pod Build is given must
// be the one the groups were chosen by.
func (b *base) joinChangedPods(objs Objects, sel *touched) map[nsName]*corev1.Pod {
	looked := make(map[nsName]*corev1.Pod, len(sel.changedPods))
	for _, k := range sel.changedPods {
		for _, v := range b.launchers.take(k) {
			sel.groups[nsName{k.ns, v}] = true
		}
		p := objs.Pod(k.ns, k.name)
		looked[k] = p
		if p != nil {
			if v, ok := LauncherOf(p); ok {
				b.launchers.add(k, v)
				sel.groups[nsName{k.ns, v}] = true
			}
		}
	}
	return looked
}

// lookUp returns the inputs of the owners sel selected: the pods of pod
// owners (those in looked as they were found); of each group its VM, VMI,
// launcher pods and migrations; and every network's objects. Build reads
// them in any order. What the lookups find is remembered as the changed
// objects are: an object may be found here before a take names it, and be
// gone when one does (created and deleted since), its group then known by
// this.
func (b *base) lookUp(objs Objects, sel *touched, looked map[nsName]*corev1.Pod) Inputs {
	selected := map[nsName]*corev1.Pod{}
	for k := range sel.pods {
		p, ok := looked[k]
		if !ok {
			p = objs.Pod(k.ns, k.name)
		}
		if p == nil {
			continue
		}
		selected[k] = p
		if v, ok := LauncherOf(p); ok {
			b.launchers.add(k, v) // Build sees it: its deletion must find the group
		}
	}
	in := objs.Networks()
	vmis := map[nsName]*kubevirtv1.VirtualMachineInstance{}
	for g := range sel.groups {
		for _, p := range objs.Launchers(g.ns, g.name) {
			k := nsName{p.Namespace, p.Name}
			selected[k] = p
			b.launchers.add(k, g.name)
		}
		if vm := objs.VirtualMachine(g.ns, g.name); vm != nil {
			in.VirtualMachines = append(in.VirtualMachines, vm)
		}
		if vmi := objs.VirtualMachineInstance(g.ns, g.name); vmi != nil {
			vmis[g] = vmi
		}
		for _, vmi := range objs.OwnedVMIs(g.ns, g.name) {
			k := nsName{vmi.Namespace, vmi.Name}
			vmis[k] = vmi
			if vmi.Name != g.name {
				b.vmiVM.add(k, g.name)
			}
		}
		for _, m := range objs.Migrations(g.ns, g.name) {
			b.migVMI.add(nsName{m.Namespace, m.Name}, g.name)
			in.Migrations = append(in.Migrations, m)
		}
	}
	in.Pods = slices.Collect(maps.Values(selected))
	in.VirtualMachineInstances = slices.Collect(maps.Values(vmis))
	return in
}

// join adds to groups the names a VMI and the VM its owner reference names
// share: one group.
func join(objs Objects, groups map[nsName]bool) {
	walk := slices.Collect(maps.Keys(groups))
	add := func(k nsName) {
		if !groups[k] {
			groups[k] = true
			walk = append(walk, k)
		}
	}
	for len(walk) > 0 {
		g := walk[len(walk)-1]
		walk = walk[:len(walk)-1]
		if vmi := objs.VirtualMachineInstance(g.ns, g.name); vmi != nil {
			if vm := OwnerVM(vmi); vm != "" {
				add(nsName{g.ns, vm})
			}
		}
		for _, vmi := range objs.OwnedVMIs(g.ns, g.name) {
			add(nsName{vmi.Namespace, vmi.Name})
		}
	}
}

// lookup is one owner's look-up of an object (an IPAMClaim, a NAD),
// found or not: a change of that object rebuilds the owner (scopes).
type lookup struct {
	kind  string
	obj   nsName
	owner string
}

// claimScope selects the owners that looked up claim c when they were
// last built; once rebuilt, they look it up again (readLookups).
func (b *base) claimScope(_ Objects, c state.ObjectRef, sel *touched) Why {
	for _, id := range b.readers[state.KindIPAMClaim].take(nsName{c.Namespace, c.Name}) {
		sel.owner(id)
	}
	return Why{}
}

// nadScope selects the owners that looked up NAD c and those with ports
// on the switch it had: its config (subnets, gateway, DHCP, switch) makes
// their ports. A kube-ovn NAD whose network is a Subnet of its provider,
// chosen per port, is not scoped. A NAD's change can change another's
// (the first, by name, to claim a switch has it): checkNADs tells once
// the Build has read them all.
func (b *base) nadScope(_ Objects, c state.ObjectRef, sel *touched) Why {
	ref := nadRef{c.Namespace, c.Name}
	old := b.nads[ref]
	if old.bySubnet {
		return Why{ReasonNAD, "a kube-ovn NAD whose network is a Subnet of its provider changed (" + c.String() + ")"}
	}
	for _, id := range b.readers[kindNAD].take(nsName(ref)) {
		sel.owner(id)
	}
	b.ownersOn(old.sw, sel)
	return Why{}
}

// checkNADs returns why r, built for owners, cannot be spliced: a NAD is
// other than the last result had it, and an owner that looked it up or
// has ports on its switch (then or now) was not rebuilt; or its claims
// config changed (ipam-extensions' names follow it).
func (b *base) checkNADs(r Result, owners map[string]bool) Why {
	refs := maps.Clone(b.nads)
	maps.Copy(refs, r.nads)
	for ref := range refs {
		old, cur := b.nads[ref], r.nads[ref] // absent: the zero record
		if old == cur {
			continue
		}
		what := "NetworkAttachmentDefinition " + ref.String()
		switch {
		case old.bySubnet || cur.bySubnet:
			return Why{ReasonNAD, what + " is a kube-ovn NAD whose network is a Subnet of its provider"}
		case old.cc != cur.cc:
			return Why{ReasonNAD, what + ": its IPAMClaims config changed"}
		}
		for _, id := range b.readers[kindNAD][nsName(ref)] {
			if !owners[id] {
				return Why{ReasonNAD, what + " changed, and " + id + ", which uses it, was not rebuilt"}
			}
		}
		for _, sw := range []string{old.sw, cur.sw} {
			if id := b.notRebuiltOn(sw, owners); id != "" {
				return Why{ReasonNAD, what + " changed, and " + id + ", with a port on switch " + sw + ", was not rebuilt"}
			}
		}
	}
	return Why{}
}

// notRebuiltOn returns an owner with a port on switch sw that is not in
// owners, "" when there is none.
func (b *base) notRebuiltOn(sw string, owners map[string]bool) string {
	for _, p := range b.want.Ports.All() {
		if sw != "" && p.Switch == sw && !owners[p.Owner] {
			return p.Owner
		}
	}
	return ""
}

// subnetScope selects the owners with ports on Subnet c's switch, named
// after it: its spec makes their ports. Its spec.namespaces and
// spec.default place only ports that are new (their owners are rebuilt
// anyway), after where an owner's port is now; so a Subnet whose spec
// but for those, and provider, read as the last result's record rebuilds
// nobody. That is the common case: kube-ovn writes a Subnet's status at
// every allocation, and a write still in flight when the changes are
// taken is named (sources), whatever it changed. checkSubnets tells what
// else changed once the Build has read every Subnet.
func (b *base) subnetScope(objs Objects, c state.ObjectRef, sel *touched) Why {
	if old, had := b.subnets[c.Name]; had {
		for _, s := range objs.Networks().Subnets {
			if s != nil && s.Name == c.Name && netconf.SubnetProvider(s) == old.provider && recordedSpec(s) == old.spec {
				return Why{}
			}
		}
	}
	b.ownersOn(c.Name, sel)
	return Why{}
}

// checkSubnets returns why r, built for owners, cannot be spliced: a Subnet
// came, went, turned valid or invalid, changed provider or is the default
// network's (what qualifies for every owner's choice), or its spec changed
// while an owner with a port on it was not rebuilt.
func (b *base) checkSubnets(r Result, owners map[string]bool) Why {
	names := maps.Clone(b.subnets)
	maps.Copy(names, r.subnets)
	for name := range names {
		old, had := b.subnets[name]
		cur, has := r.subnets[name]
		switch {
		case old == cur:
			continue
		case !had || !has || old.state != cur.state || old.provider != cur.provider || old.isDef || cur.isDef:
			return Why{ReasonSubnet, "Subnet " + name + " came, went, turned valid or invalid, changed provider or is the default network"}
		case old.spec == cur.spec:
			continue // spec.namespaces or spec.default: new ports only
		}
		if id := b.notRebuiltOn(name, owners); id != "" {
			return Why{ReasonSubnet, "Subnet " + name + " changed, and " + id + ", with a port on it, was not rebuilt"}
		}
	}
	return Why{}
}

// checkClaimReaders gives up when an owner rebuilt looked up an IPAMClaim
// that an owner not rebuilt, with ports, read when it was last built: which
// of two ports a claim is the record of is for a full Build to decide.
func (b *base) checkClaimReaders(r Result, owners map[string]bool) Why {
	for _, l := range r.lookups {
		if l.kind != state.KindIPAMClaim {
			continue
		}
		for _, id := range b.readers[state.KindIPAMClaim][l.obj] {
			if id != l.owner && !owners[id] && b.byOwner.has(id, b.want.Ports) {
				return Why{ReasonClaimRead, "IPAMClaim " + l.obj.ns + "/" + l.obj.name + " is read by " + l.owner + " and by " + id + ", which was not rebuilt"}
			}
		}
	}
	return Why{}
}

// readLookups records which owners looked up which objects (a Result's
// lookups), each owner once an object, as relations.add does, in time
// that grows with ls alone: a full Build's lookups name one object for
// every owner that reads it (the NAD of every VM on a network), and add's
// search of the owners recorded would make them quadratic (35% of a full
// pass at 100k ports, 30% of them VMs). What an object had before is
// searched; what this call added is in a set.
func (b *base) readLookups(ls []lookup) {
	type object struct {
		kind string
		obj  nsName
	}
	added := make(map[lookup]bool, len(ls))
	before := map[object]int{}
	for _, l := range ls {
		if added[l] {
			continue
		}
		added[l] = true
		r, o := b.readers[l.kind], object{l.kind, l.obj}
		n, ok := before[o]
		if !ok {
			n = len(r[l.obj])
			before[o] = n
		}
		if !slices.Contains(r[l.obj][:n], l.owner) {
			r[l.obj] = append(r[l.obj], l.owner)
		}
	}
}
