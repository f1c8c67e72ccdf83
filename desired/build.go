package desired

import (
	appsv1 "k8s.io/api/apps/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/state"
)

// Build computes the desired switches and ports for the objects in in, given
// the default network in cfg and what the NB holds now (have, which may be
// empty). have is read to keep addresses sticky, to avoid handing out
// addresses that any port already holds, to find addresses held twice, and
// to keep ports whose network is unknown; it is not modified.
//
// Result.Want is complete: a port of ours in have that is missing from it
// is one no owner needs any more. Values in Want may share slices with
// values in have, and a port of Want that is the same as its row of have
// is that row itself; like every State they must not be mutated. Switches
// in Want carry no UUID, nor do ports but those (which carry their row's).
//
// Problems are bad or conflicting input, sorted by object then reason. A
// Problem never removes or rewrites a port, with one exception: a port
// holding an address that another port keeps loses that address (see
// DESIGN.md, "Addresses").
//
// Build is deterministic: it does not depend on the order of the slices in
// in, reads no clock and starts no goroutine.
func Build(in Inputs, cfg Config, have state.State) Result {
	return newBase(cfg).rebuildAll(in, cfg, have)
}

// buildOwners is the engine: it builds the owners sc rebuilds (every owner, for
// a Build of all) from in and have, the NB, whose rows hold the addresses
// of the others. Its result is spliced into the last one (base.splice).
func buildOwners(in Inputs, cfg Config, have state.State, sc *scope) Result {
	// Room for a port per owner; a Build of every owner also rebuilds
	// every port of ours, about as many as have holds.
	ports := in.PodCount() + in.VMCount() + in.VMICount()
	if sc.all {
		ports = max(ports, have.Ports.Len())
	}
	b := newBuilder(in, have, ports)
	b.scope, b.cfg = sc, &cfg
	b.indexNamespaces(in.Namespaces)
	b.indexClaims(in)
	b.adopt = cfg.Adopt
	b.buildNetworks(cfg, in.NetworkAttachmentDefinitions)
	b.markNorthdFirst()
	sc.ownersStarted = true
	b.indexKubeVirt(in)
	b.indexStatefulSets(in)
	b.addPods(in)
	b.addVirtualMachines(in)
	b.addVirtualMachineInstances(in)
	b.keepStatefulSetPorts()
	b.reserveClaims()
	b.resolve()
	return b.finish()
}

// builder is one Build's working state, by concern: what the NB holds
// (nbRows), the networks (netIndex), the owners and their ports as they are
// added (registry), the IPAMClaims (claimIndex), the KubeVirt objects by
// VM (kubevirtIndex), what IPAM has left to settle (pendingIPAM), and the
// problems and notices found (report).
type builder struct {
	nbRows
	netIndex
	registry
	claimIndex
	kv kubevirtIndex
	pendingIPAM
	report
	// scope is which owners this Build rebuilds.
	scope *scope
	// keys shares the lists of annotation keys of the result's carriers.
	keys KeyLists
	// cfg is the Build's config.
	cfg *Config
	// buf is scratch for one call at a time: a port's addresses (port),
	// an owner's port name to look up (ownerNames).
	buf []byte
	// podIfaces holds kubevirtPodIface's answers (podIface).
	podIfaces map[string]string
	// annKeys holds keysOf's answers.
	annKeys map[string]*annKeys
	// sets are the StatefulSets not being deleted (indexStatefulSets);
	// setPods is, in a Build of every owner, whether each pod read that
	// is named like a pod of one of them may have a port (notePresent).
	sets    map[nsName]*appsv1.StatefulSet
	setPods map[nsName]bool
}

// nbRows is what the NB holds (have), as the Build reads it.
type nbRows struct {
	have state.State
	// adopt is Config.Adopt. adopted is set once a port that is not ours
	// is adopted: have is then a copy of the caller's in which that port
	// is ours (adoptPort).
	adopt   string
	adopted bool
	// haveByOwner and haveNets index our have ports by owner and by
	// network; each is built only when needed.
	haveByOwner map[string][]*state.Port
	haveNets    map[string][]*state.Port
	// rowName and row are haveRow's last answer.
	rowName string
	row     *state.Port
}

// netIndex is the Build's networks and their switches.
type netIndex struct {
	def      *network
	networks []*network // default first, then Subnets, then managed NADs in ns/name order
	nads     map[nadRef]nadEntry
	// subnetObjs are the kube-ovn Subnets read; kovn indexes them.
	subnetObjs []*kubeovnv1.Subnet
	kovn       kubeOVNIndex
	// switchOwner names, for messages, who uses each switch name.
	switchOwner map[string]string
	switchIDs   map[string]uint32
	// v4 is the IPv4 family of each network on a switch of ours, by switch.
	v4 map[string]*family
}

// registry is the owners and the ports they want, as they are added.
type registry struct {
	want    state.State
	owners  arena[owner]
	vmParts arena[vmPart]
	ports   arena[portSpec]
	// portVals holds the ports the specs write: apart from the specs, so
	// that a result kept for the next pass keeps its ports, not the specs
	// and owners (and inputs) they were built from.
	portVals arena[state.Port]
	carriers arena[[1]Carrier]
	specs    []*portSpec
	// want.Ports doubles as the registry of names while specs are added:
	// each name points at registered until finish puts the spec's port
	// there. byName maps names to specs; it is built on the first need
	// only (a clash, a conflict).
	byName map[string]*portSpec
	// render is the port finish renders a spec into, copied to a port of
	// its own only when the NB's row is not already that port (write).
	render state.Port
	// rares hands out the rare fields of the ports rendered: a network's
	// ports refer to the same DHCP_Options rows, and share one Rare.
	rares state.Rares
	// atts and vmiAtts are reused for each owner's attachments, names for
	// the names of its ports.
	atts, vmiAtts []attachment
	names         []string
}

// registered is what want.Ports holds for a name from add to finish: a
// Build reads only the names until then, and so makes a port only for a
// spec the NB's row does not already hold.
var registered state.Port

// claimIndex is the IPAMClaims the Build reads, and who reads which.
type claimIndex struct {
	// claims are the IPAMClaims by namespace and name; claimedBy names the
	// port that read each as its record; claimNets are the managed
	// networks by their config's name, where a claim's addresses are
	// reserved; claimNotes are claims on networks ovn-sync does not
	// manage.
	claims     map[nsName]*ipamclaimsv1alpha1.IPAMClaim
	claimedBy  map[nsName]string
	claimNets  map[string][]*network
	claimNotes []*ClaimFacts
	// lookups are the claims and NADs each owner looked up
	// (Result.lookups).
	lookups []lookup
}

// pendingIPAM is what IPAM has left to do once the specs are resolved.
type pendingIPAM struct {
	// pending are specs that need addresses claimed or allocated; moved
	// are specs that keep addresses but change switch.
	pending []*portSpec
	moved   []*portSpec
	// reserved are the addresses of gone StatefulSet pods that only their
	// IP objects record (keepStatefulSetPorts), in IP object name order.
	reserved []reservation
	// again is set when a claim waits for a port this pass removes or
	// readdresses (see Result.Again).
	again bool
}

// report is the problems and notices the Build finds.
type report struct {
	problems []Problem
	// problemOwners[i] is the owner whose port problems[i] is about, "" for
	// a problem of a network (a NAD, a Subnet, the config).
	problemOwners []string
	notices       []Problem
}

// newBuilder returns a builder for in and have with room for about ports
// ports.
func newBuilder(in Inputs, have state.State, ports int) *builder {
	b := &builder{
		nbRows:   nbRows{have: have},
		registry: registry{want: state.New(ports), specs: make([]*portSpec, 0, ports)},
		netIndex: netIndex{switchOwner: map[string]string{}, switchIDs: map[string]uint32{}, subnetObjs: in.Subnets},
	}
	return b
}

// ipObject is kube-ovn's IP object called name, nil if there is none.
func (b *builder) ipObject(name string) *kubeovnv1.IP { return b.scope.objs.IP(name) }

// arena hands out values of T from chunks, so that many small values cost
// few allocations. Pointers stay valid: a chunk is never reallocated. Chunks
// are small enough to reuse memory the collector freed rather than fault in
// fresh pages on every pass. They start at one value and double: a pass
// that builds a few ports keeps, through the ports its result holds until
// they are rebuilt, chunks of about their size (a first chunk of 64 port
// specs was 27 KB kept for every pod an incremental pass created).
type arena[T any] struct {
	chunk []T
}

const arenaChunk = 64

func (a *arena[T]) alloc() *T {
	if len(a.chunk) == cap(a.chunk) {
		a.chunk = make([]T, 0, min(max(2*cap(a.chunk), 1), arenaChunk))
	}
	a.chunk = a.chunk[:len(a.chunk)+1]
	return &a.chunk[len(a.chunk)-1]
}

// switchID interns a switch name; 0 is reserved for "any switch".
func (b *netIndex) switchID(name string) uint32 {
	if id, ok := b.switchIDs[name]; ok {
		return id
	}
	id := uint32(len(b.switchIDs) + 1)
	b.switchIDs[name] = id
	return id
}

// ownerProblem records a Problem on the object o was read from.
func (b *builder) ownerProblem(o *owner, reason, msg string) {
	kind, name := o.kind(), o.name
	if vmi := o.vm().vmi; vmi != "" {
		kind, name = kindVirtualMachineInst, vmi
	}
	b.problemFor(o, kind, o.ns, name, reason, msg)
}

// problem records a Problem of a network: a NAD, a Subnet, the config.
func (b *builder) problem(kind, ns, name, reason, msg string) {
	b.problemFor(nil, kind, ns, name, reason, msg)
}

// problemFor records a Problem on an object read for o's ports (o's own,
// or one of its records). An incremental Build replaces the problems of
// the owners it rebuilds and keeps the others'.
func (b *builder) problemFor(o *owner, kind, ns, name, reason, msg string) {
	id := ""
	if o != nil {
		id = o.id
	} else if b.scope.ownersStarted {
		b.scope.abort(Why{ReasonUnowned, "a problem of no owner while reading owners: " + reason})
	}
	b.problems = append(b.problems, Problem{Kind: kind, Namespace: ns, Name: name, Reason: reason, Message: msg})
	b.problemOwners = append(b.problemOwners, id)
}

// dropProblems forgets the problems recorded after the first n.
func (b *report) dropProblems(n int) {
	b.problems, b.problemOwners = b.problems[:n], b.problemOwners[:n]
}
