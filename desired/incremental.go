package desired

import (
	"iter"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/ipam"
	"github.com/ovn-sync/ovn-sync/state"
)

// Engine is the one engine that builds the desired state. It keeps the
// last result, and brings it up to date for the objects that changed,
// rebuilding only the owners those objects touch: a pod its own ports; a
// VM, a VMI, a migration or a virt-launcher pod the VM's (or the VMI's,
// without a VM). Every other owner keeps the ports, problems and notices
// it had. Full is the same engine with every owner to rebuild and nothing
// kept (as Build). The result must be what Build gives for the same inputs
// and NB; full passes check it (see reconcile), and the property test
// drives it through random events against Build.
//
// Which owners a change of each kind of object touches is declared once
// (scopes): a Namespace's the owners in it, a StatefulSet's its pods, an
// IP object's the owners it names and the owner of its port. Update gives
// up, and the caller builds in full, when a change reaches every owner (a
// NAD, a Subnet, the config); when a port name or an address held twice
// involves an owner outside the rebuild; or when the last result waits for
// an address (Result.Again). Why says which (Why.Reason). Owners whose
// last result was not settled (a Problem, a Notice, a port kept or failed)
// are rebuilt by every Update, as a change elsewhere (an address freed)
// may settle them.
//
// The contract with the NB: Update takes the NB (have) to show the last
// result applied — every port of it as it has it, and no port of ours it
// lacks — which run mode's port view makes true of a pass's own writes.
// What holds an address is an NB row or a port the Build gives it, in a
// Build of some owners as in one of all (the address book, ipam.NBBook, is the
// NB's rows of ours). Where the NB does not show the last result, the
// caller builds in full instead: after a pass that failed or whose outcome
// is unknown, that withheld deletes, or after someone else wrote our rows
// (drift) or the NB reconnected.
//
// The zero Engine holds nothing: the first call must be Full. An
// Engine is not safe for concurrent use.
type Engine struct {
	b *base
}

// base is what Update starts from: the last result, indexed.
type base struct {
	cfg  Config
	want state.State
	// indexed is set once the owners of want are indexed (index): byOwner,
	// bySet, readers and held. Until then lookups
	// are what the result recorded (Result.lookups).
	indexed bool
	lookups []lookup
	// byOwner lists each owner's ports in want, by name.
	byOwner ownerPorts
	// switchRefs and dhcpRefs count the ports of want on each switch and
	// referring to each DHCP_Options row.
	switchRefs, dhcpRefs map[string]int
	// foreign counts the others' ports on each switch, as the last full
	// Build found them.
	foreign map[string]int
	raw     []ownedProblem
	notices []Problem
	again   bool
	// unsettled are the owners every Update rebuilds.
	unsettled map[string]bool
	// book is who holds what among the NB's rows of ours, brought up to
	// date with the NB by every Update (ipam.NBBook.Sync); nil until the first.
	book *ipam.NBBook
	// v4 is the IPv4 family of each network on a switch of ours, and
	// northd counts, per such switch, the ports of want holding each
	// address northd marks taken (family.northdHeld): exclude_ips leaves
	// those out.
	v4     map[string]*family
	northd map[string]map[netip.Addr]int
	// note is what the caller noted of want (Note); nil until it does.
	note *Note
	// launchers, vmiVM and migVMI relate KubeVirt objects by name, as the
	// last inputs had them, so that a deleted object still finds its VM:
	// a launcher pod's VMI, a VMI's VM (when named otherwise), a
	// migration's VMI.
	launchers, vmiVM, migVMI links
	// bySet indexes the owners of want's ports that are pods named like a
	// StatefulSet's (<set>-<ordinal>), by set. nsSwitch is each Namespace's
	// ovn.kubernetes.io/logical_switch as the last result read it, and
	// ipNamed the owners ("<ns>/<name>") each IP object named (keyed by
	// its name alone), as the relations above (see scopes).
	bySet    map[nsName]map[string]bool
	nsSwitch map[string]string
	ipNamed  links
	// readers are, by kind (IPAMClaim, NAD), the owners (ids) that looked
	// each object up, as Build records it (Result.lookups), the object
	// there or not: a claim by ipam-claim-reference or by ipam-extensions'
	// name, a NAD by an owner's network selection.
	readers map[string]relations
	// nads is what each NAD was in the last result (nadScope).
	nads map[nadRef]nadRecord
	// subnets is what each Subnet was in the last result (subnetScope).
	subnets map[string]subnetRecord
}

// relations are, for each KubeVirt object, the names of the groups (a VM's
// and its VMI's) Build was given it in since a take last named it:
// usually one. An object a lookup finds under another group than the one
// recorded (deleted, and one of its name created for another VM, before a
// take named it) keeps both: when a take names it, both are rebuilt, the
// group it left as well as the one it joined.
type relations map[nsName][]string

// add records that k was found in group g.
func (r relations) add(k nsName, g string) {
	if !slices.Contains(r[k], g) {
		r[k] = append(r[k], g)
	}
}

// take returns the groups recorded for k and forgets them: a take named k.
func (r relations) take(k nsName) []string {
	gs := r[k]
	delete(r, k)
	return gs
}

// links are relations whose objects are each in one group but for a few
// (a launcher pod, a VMI, a migration, a kube-ovn IP): the first group of
// each is a string in a map, about 30 bytes an object less than a slice
// of one; the others are in more.
type links struct {
	first map[nsName]string
	more  relations
}

func newLinks() links { return links{first: map[nsName]string{}, more: relations{}} }

// add records that k was found in group g.
func (l links) add(k nsName, g string) {
	switch first, ok := l.first[k]; {
	case !ok:
		l.first[k] = g
	case first != g:
		l.more.add(k, g)
	}
}

// take returns the groups recorded for k and forgets them: a take named k.
func (l links) take(k nsName) []string {
	first, ok := l.first[k]
	if !ok {
		return nil
	}
	delete(l.first, k)
	return append([]string{first}, l.more.take(k)...)
}

// Valid reports whether there is a result to update.
func (x *Engine) Valid() bool { return x.b != nil }

// Want returns the desired state of the last result, if there is one.
func (x *Engine) Want() (state.State, bool) {
	if x.b == nil {
		return state.State{}, false
	}
	return x.b.want, true
}

// Reset forgets the last result: the next call must be Full.
func (x *Engine) Reset() { x.b = nil }

// Settle settles the last result's ports named in names on the NB's rows
// in have, once its plan was applied (see Settle), and returns its desired
// state as it now is; ok is false when there is no result.
func (x *Engine) Settle(have state.State, names []string) (want state.State, ok bool) {
	if x.b == nil {
		return state.State{}, false
	}
	x.b.want = Settle(x.b.want, have, names)
	return x.b.want, true
}

// Note is what a caller records of the last result once it has diffed it
// against the NB, and gets back with the next incremental result
// (Spliced), so that it can diff only what may have changed since.
type Note struct {
	// Version is the version of the NB snapshot the result was diffed
	// against.
	Version uint64
	// Ports names the ports the plan changed or reported on.
	Ports []string
}

// Note records n of the last result, for the next Update to hand back.
func (x *Engine) Note(n Note) {
	if x.b != nil {
		x.b.note = &n
	}
}

// Spliced is how an incremental result came from the last one.
type Spliced struct {
	// Ports names the ports of the owners rebuilt: those the last result
	// held and those this one holds. Every other port is the last
	// result's.
	Ports []string
	// Noted is what the caller noted of the last result.
	Noted Note
}

// Spliced returns how r came from the last result, when r is an
// incremental result and the caller noted the last one; ok is false for
// a full Build.
func (r *Result) Spliced() (s Spliced, ok bool) {
	if r.spliced == nil {
		return Spliced{}, false
	}
	return *r.spliced, true
}

// Full builds every owner, as Build, and keeps the result for Update. It
// lets go of the last result first: it reads none of it, and a result
// held through the Build would add its whole index to the pass's peak.
func (x *Engine) Full(in Inputs, cfg Config, have state.State) Result {
	x.b = nil
	b := newBase(cfg)
	b.relate(in)
	r := b.rebuildAll(in, cfg, have)
	b.index()
	x.b = b
	return r
}

// newBase returns a base that holds nothing: no result, an empty address
// book. A Build of every owner starts from one.
func newBase(cfg Config) *base {
	return &base{cfg: cfg, want: state.State{Switches: map[string]*state.Switch{}, Ports: state.NewPorts(0),
		DHCP: map[string]*state.DHCPOptions{}, Index: state.IndexOf(nil)},
		launchers: newLinks(), vmiVM: newLinks(), migVMI: newLinks(), ipNamed: newLinks(),
		readers: map[string]relations{state.KindIPAMClaim: {}, kindNAD: {}},
		bySet:   map[nsName]map[string]bool{}, nsSwitch: map[string]string{},
		byOwner:    newOwnerPorts(),
		switchRefs: map[string]int{}, dhcpRefs: map[string]int{}, northd: map[string]map[netip.Addr]int{}}
}

// rebuildAll is the engine with every owner dirty, over b, which holds
// nothing: the others' ports on each switch are counted from have, every
// row of have is read by IPAM, and the result spliced into b is b's.
func (b *base) rebuildAll(in Inputs, cfg Config, have state.State) Result {
	sc := &scope{all: true, objs: ObjectsOf(in), refs: b.switchRefs}
	sc.haveOurs, sc.foreign = countPorts(have)
	b.foreign = sc.foreign
	r := buildOwners(in, cfg, have, sc)
	// Ports written as the NB's rows hold them are those rows (write):
	// where a shard holds nothing else, it is the NB snapshot's.
	r.Want.ShareWith(have)
	return b.splice(r, nil)
}

// scope returns the scope of a Build of owners over b, looking up objects
// in objs.
func (b *base) scope(owners map[string]bool, objs Objects) *scope {
	if b.book == nil {
		b.book = ipam.NewNBBook()
	}
	return &scope{owners: owners, book: b.book, objs: objs, refs: b.switchRefs, foreign: b.foreign}
}

// countPorts counts the ports of have on each switch, in one walk: ours
// by the switch they name, and others' that kube-ovn placed there
// (external_ids:ls). A port of someone else's without that key cannot be
// placed, and is not counted.
func countPorts(have state.State) (ours, foreign map[string]int) {
	ours, foreign = map[string]int{}, map[string]int{}
	for _, p := range have.Ports.All() {
		switch {
		case p == nil:
		case p.Owned():
			ours[p.Switch]++
		case p.VendorSwitch() != "":
			foreign[p.VendorSwitch()]++
		}
	}
	return ours, foreign
}

// relate records how in's KubeVirt objects, Namespaces and IP objects
// relate (the scopes read them when one changes).
func (b *base) relate(in Inputs) {
	for _, ns := range in.Namespaces {
		if ns == nil {
			continue
		}
		if v := strings.TrimSpace(ns.Annotations[NamespaceSwitchAnnotation]); v != "" {
			b.nsSwitch[ns.Name] = v
		}
	}
	for _, ip := range in.IPs {
		if ip != nil && ip.Spec.PodName != "" {
			b.ipNamed.add(nsName{"", ip.Name}, ip.Spec.Namespace+"/"+ip.Spec.PodName)
		}
	}
	for p := range in.launcherPods() {
		b.launchers.add(nsName{p.Namespace, p.Name}, launcherVMI(p))
	}
	for _, vmi := range in.ReadVMIs() {
		if vmi != nil {
			if r := vmOwnerRef(vmi.OwnerReferences); r != nil && r.Name != vmi.Name {
				b.vmiVM.add(nsName{vmi.Namespace, vmi.Name}, r.Name)
			}
		}
	}
	for _, m := range in.Migrations {
		if m != nil {
			b.migVMI.add(nsName{m.Namespace, m.Name}, m.Spec.VMIName)
		}
	}
}

// set makes r the result b holds (its want, problems and notices already
// complete) and finds the owners that are not settled.
func (b *base) set(r Result) {
	b.want, b.raw, b.notices, b.again = r.Want, r.raw, r.Notices, r.Again
	b.unsettled = map[string]bool{}
	for _, p := range b.raw {
		if p.owner != "" {
			b.unsettled[p.owner] = true
		}
	}
	for _, n := range b.notices {
		b.unsettled[n.Object()] = true
	}
	for _, s := range r.specs {
		// A port adopted is wanted with Adopt set until the NB shows it
		// ours: the next Build of its owner differs.
		if s.state != specBuild || s.adopting {
			b.unsettled[s.o.id] = true
		}
	}
}

// count adds d to what b counts of p: the ports on its switch, those
// referring to its DHCP_Options rows, and those holding an address northd
// marks taken.
func (b *base) count(p *state.Port, d int) {
	b.countWith(p, addr.ParseLSP(p.Addresses).IP[ipv4], d)
}

// countWith is count for a port whose IPv4 address (in Addresses) is a,
// known already.
func (b *base) countWith(p *state.Port, a netip.Addr, d int) {
	if p.Switch != "" {
		b.switchRefs[p.Switch] += d
	}
	if f := b.v4[p.Switch]; f != nil && a.IsValid() && f.northdHeld(a) {
		m := b.northd[p.Switch]
		if m == nil {
			m = map[netip.Addr]int{}
			b.northd[p.Switch] = m
		}
		if m[a] += d; m[a] == 0 {
			delete(m, a)
		}
	}
	if p.DHCPv4() != "" {
		b.dhcpRefs[p.DHCPv4()] += d
	}
	if p.DHCPv6() != "" {
		b.dhcpRefs[p.DHCPv6()] += d
	}
}

// written yields the specs of r whose ports are in r.Want, with the IPv4
// address each holds, in the order the specs were made: the order their
// values lie in memory, which a walk of the map does not follow. ok is
// false when the specs do not account for every port of r.Want (the
// caller then walks the map).
func written(r Result) (seq iter.Seq2[*portSpec, netip.Addr], ok bool) {
	n := 0
	for _, s := range r.specs {
		if s.written {
			n++
		}
	}
	if n != r.Want.Ports.Len() {
		return nil, false
	}
	return func(yield func(*portSpec, netip.Addr) bool) {
		for _, s := range r.specs {
			if !s.written {
				continue
			}
			a := s.ip[ipv4]
			if s.kept() {
				a = addr.ParseLSP(s.port.Addresses).IP[ipv4]
			}
			if !yield(s, a) {
				return
			}
		}
	}, true
}

// drifted names a port of ours that the NB has lost, or holds with other
// addresses than the last result, since the book was last brought up to
// date: the NB shows a pass's own writes, so this is another writer's
// edit, which the drift it raises makes a pass rebuild in full. An Update
// that ran first would hand out the address such a port held while its
// owner's request and records, which a full Build reads, go unread.
func (b *base) drifted(have state.State) (name string) {
	if b.book == nil {
		return ""
	}
	b.book.Changes(have, func(cur, was *state.Entry) {
		switch {
		case name != "":
		case cur == nil:
			if was.Owned && b.want.Ports.Get(was.Port.Name) != nil {
				name = was.Port.Name
			}
		case cur.Owned:
			if w := b.want.Ports.Get(cur.Port.Name); w != nil && !slices.Equal(w.Addresses, cur.Port.Addresses) {
				name = cur.Port.Name
			}
		}
	})
	return name
}

// Update returns Build(in, cfg, have), computed for the owners the objects
// in changed touch (and the unsettled ones), the rest taken from the last
// result: objs looks up the objects of the owners it rebuilds, as Build
// would read them from in. why is non-empty when it could not: the caller
// must then call Full. An Update that gives up leaves nothing to update:
// Full must follow.
//
// Its cost follows the owners rebuilt and the few objects every Build
// reads whole (Objects.Networks), not the number of objects.
//
// The Result's Ports (its facts) cover the owners rebuilt only.
func (x *Engine) Update(objs Objects, changed []state.ObjectRef, cfg Config, have state.State) (r Result, w Why) {
	b := x.b
	switch {
	case b == nil:
		return Result{}, Why{ReasonNoBase, "no earlier result"}
	case !reflect.DeepEqual(cfg, b.cfg):
		x.Reset()
		return Result{}, Why{ReasonConfig, "the config changed"}
	case b.again:
		x.Reset()
		return Result{}, Why{ReasonAgain, "the last result waits for an address"}
	}
	if name := b.drifted(have); name != "" {
		x.Reset()
		return Result{}, Why{ReasonDrift, "port " + name + " was deleted or re-addressed in the NB by another writer"}
	}
	b.index()
	sel, w := b.rebuildOf(objs, changed)
	if w.Gave() {
		x.Reset()
		return Result{}, w
	}
	sc := b.scope(sel.owners, objs)
	r = buildOwners(sel.in, cfg, have, sc)
	if !sc.why.Gave() {
		if w := b.checkNADs(r, sc.owners); w.Gave() {
			sc.abort(w)
		} else if w := b.checkSubnets(r, sc.owners); w.Gave() {
			sc.abort(w)
		} else if w := b.checkClaimReaders(r, sc.owners); w.Gave() {
			sc.abort(w)
		}
	}
	if !sc.why.Gave() {
		for _, p := range r.Want.Ports.All() {
			if !sc.owners[p.Owner] {
				sc.abort(Why{ReasonPortHeld, "a port of " + p.Owner + ", which was not rebuilt"})
				break
			}
		}
	}
	if u := objs.Unreadable(); u != "" && !sc.why.Gave() {
		sc.abort(Why{ReasonUnreadable, "an object could not be read: " + u})
	}
	if sc.why.Gave() {
		x.Reset()
		return Result{}, sc.why
	}
	return b.splice(r, sc.owners), Why{}
}

// index indexes the owners of b's result, and what their ports hold (the
// address book), for Update: once after a Build of every owner, which
// leaves them out (a Build that no Update follows needs none); splice keeps
// them up to date from then on.
func (b *base) index() {
	if b.indexed {
		return
	}
	b.indexed = true
	b.readLookups(b.lookups)
	b.lookups = nil
	for name, p := range b.want.Ports.All() {
		b.indexPort(name, p)
	}
}

// indexPort adds the port called name, p, to the owners' indexes.
func (b *base) indexPort(name string, p *state.Port) {
	b.byOwner.add(p.Owner, name)
	b.indexOwner(p.Owner)
}

// splice puts r, the result of the owners in owners, in place of theirs in
// b, and returns the whole result. Maps of the last result are copied, not
// changed: callers may still hold it. Unless b was indexed (an Update),
// its owners are indexed by the first Update that follows.
func (b *base) splice(r Result, owners map[string]bool) Result {
	if b.indexed {
		b.readLookups(r.lookups)
	} else {
		b.lookups = append(b.lookups, r.lookups...)
	}
	// Nothing kept (a Build of every owner): r's ports are the result's.
	whole := b.want.Ports.Len() == 0
	ports := r.Want.Ports
	if !whole {
		ports = b.want.Ports.Clone()
	}
	names, removed := b.takeOut(ports, owners)
	// A network's family changes only with the owners of every port on
	// it rebuilt (checkNADs): those ports left counted as they were.
	b.v4, b.nads, b.subnets = r.v4, r.nads, r.subnets
	into := &ports
	if whole {
		into = nil
	}
	names = b.putIn(into, r, names)
	// Switches and DHCP_Options rows: r has every network's; a row kept
	// only for the kept ports of owners not rebuilt stays while some port
	// still refers to it.
	switches, dhcp := r.Want.Switches, r.Want.DHCP
	for name, f := range r.v4 {
		if sw := switches[name]; sw != nil && sw.Owned() {
			sw.ExcludeIPs = f.northdExclude(slices.SortedFunc(maps.Keys(b.northd[name]), netip.Addr.Compare))
		}
	}
	for name, s := range b.want.Switches {
		if _, ok := switches[name]; !ok && b.switchRefs[name] > 0 {
			switches[name] = s
		}
	}
	for name, d := range b.want.DHCP {
		if _, ok := dhcp[name]; !ok && b.dhcpRefs[name] > 0 {
			dhcp[name] = d
		}
	}
	// The index: the last one without the ports removed, with r's.
	idx := r.Want.Index
	if !whole {
		idx = b.want.Index.Patch(removed, r.Want.Index.Entries())
	}
	raw, notices := b.spliceProblems(r, owners)
	out := Result{
		Want:       state.State{Switches: switches, Ports: ports, DHCP: dhcp, Index: idx},
		Problems:   compactProblems(raw),
		Notices:    notices,
		Again:      r.Again,
		specs:      r.specs,
		raw:        raw,
		rebuilt:    owners,
		claimNotes: r.claimNotes,
		// The others' ports are as the last full Build counted them.
		SwitchPorts: switchPorts(b.switchRefs, b.foreign),
		foreign:     b.foreign,
	}
	if b.note != nil {
		out.spliced = &Spliced{Ports: names, Noted: *b.note}
		b.note = nil
	}
	b.set(out)
	return out
}

// takeOut removes from ports, from b's counts and from its indexes the
// ports of owners, and returns their names and index entries.
func (b *base) takeOut(ports state.Ports, owners map[string]bool) (names []string, removed []state.Entry) {
	for id := range owners {
		start := len(names)
		names = b.byOwner.appendNames(names, id, b.want.Ports)
		for _, name := range names[start:] {
			p := ports.Get(name)
			removed = append(removed, state.EntryOf(p))
			b.count(p, -1)
			ports.Delete(name)
		}
		b.byOwner.delete(id)
		b.unindexOwner(id)
	}
	return names, removed
}

// putIn adds r's ports to ports (nil when they are r's own), to b's
// counts and, once b is indexed, to its indexes; names gains their names
// when the caller noted the last result (Note).
func (b *base) putIn(ports *state.Ports, r Result, names []string) []string {
	add := func(name string, p *state.Port, a netip.Addr) {
		if b.note != nil {
			names = append(names, name)
		}
		if ports != nil {
			ports.Set(name, p)
		}
		b.countWith(p, a, 1)
		if b.indexed {
			b.indexPort(name, p)
		}
	}
	if seq, ok := written(r); ok {
		for s, a := range seq {
			add(s.name, s.port, a)
		}
	} else {
		for name, p := range r.Want.Ports.All() {
			add(name, p, addr.ParseLSP(p.Addresses).IP[ipv4])
		}
	}
	return names
}

// spliceProblems returns b's problems and notices of owners not rebuilt
// with r's.
func (b *base) spliceProblems(r Result, owners map[string]bool) ([]ownedProblem, []Problem) {
	raw := make([]ownedProblem, 0, len(b.raw)+len(r.raw))
	for _, p := range b.raw {
		if p.owner != "" && !owners[p.owner] {
			raw = append(raw, p)
		}
	}
	raw = append(raw, r.raw...)
	notices := make([]Problem, 0, len(b.notices)+len(r.Notices))
	for _, n := range b.notices {
		if !owners[n.Object()] {
			notices = append(notices, n)
		}
	}
	notices = append(notices, r.Notices...)
	sortProblems(notices)
	return raw, notices
}

// scope is which owners a Build rebuilds. The others keep the ports the
// last result gave them, which the NB holds (see Engine).
type scope struct {
	// all is set for a Build of every owner (owners is nil): the last
	// result holds nothing, and nothing is left to splice around.
	all    bool
	owners map[string]bool
	// book is the engine's address book of the NB's rows of ours, nil in
	// a Build of every owner, which lists every row.
	book *ipam.NBBook
	// objs looks up what the Build reads beyond the owners' own objects:
	// IP objects by port name, and for keepStatefulSetPorts whether a
	// StatefulSet's pod is gone and the set's IP objects (ObjectsOf its
	// inputs, for a Build of every owner).
	objs Objects
	// ownersStarted is set once the networks are built: a problem of no
	// owner after that could not be told apart.
	ownersStarted bool
	why           Why
	// refs counts the last result's ports on each switch, foreign the
	// others' ports the last full Build counted there (limitPorts). In a
	// Build of every owner, haveOurs and foreign count have's ports on
	// each switch (countPorts), walked once as rebuildAll makes the scope.
	refs, foreign, haveOurs map[string]int
}

// rebuilds reports whether the Build rebuilds the owner whose id is id.
func (sc *scope) rebuilds(id string) bool { return sc.all || sc.owners[id] }

// abort gives up a Build of some owners: w says what it could not do
// around the others. A Build of every owner has none around it.
func (sc *scope) abort(w Why) {
	if !sc.why.Gave() && !sc.all {
		sc.why = w
	}
}

// outside reports (and gives up) when the port called name, wanted by o,
// is held by an owner not rebuilt (hp, the NB's row of that name): who
// gets the name is for a full Build to decide.
func (sc *scope) outside(name string, hp *state.Port, o *owner) bool {
	if sc.all || hp == nil || !hp.Owned() || hp.Owner == o.id || sc.rebuilds(hp.Owner) {
		return false
	}
	sc.abort(Why{ReasonPortHeld, "port " + name + " is wanted by " + o.id + " and held by " + hp.Owner})
	return true
}
