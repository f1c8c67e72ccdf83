package desired

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
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
// values in have; like every State they must not be mutated. Ports and
// switches in Want carry no UUID.
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
// a Build of all) from in, over the last result sc holds for the others.
// Its result is spliced into that one (base.splice).
func buildOwners(in Inputs, cfg Config, have state.State, sc *scope) Result {
	// Room for a port per owner; a Build of every owner also rebuilds
	// every port of ours, about as many as have holds.
	ports := len(in.Pods) + len(in.VirtualMachines) + len(in.VirtualMachineInstances)
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
	b.addPods(in)
	b.addVirtualMachines(in)
	b.addVirtualMachineInstances(in)
	b.keepStatefulSetPorts(in)
	b.reserveClaims()
	b.resolve()
	return b.finish()
}

type builder struct {
	have state.State
	want state.State

	// adopt is Config.Adopt. adopted is set once a port that is not ours
	// is adopted: have is then a copy of the caller's in which that port
	// is ours (adoptPort).
	adopt   string
	adopted bool
	// reserved are the addresses of gone StatefulSet pods that only their
	// IP objects record (keepStatefulSetPorts), in IP object name order.
	reserved []reservation
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

	def      *network
	networks []*network // default first, then Subnets, then managed NADs in ns/name order
	nads     map[nadRef]nadEntry
	// subnetObjs are the kube-ovn Subnets read; kovn indexes them.
	subnetObjs []*kubeovnv1.Subnet
	kovn       kubeOVNIndex
	// switchOwner names, for messages, who uses each switch name.
	switchOwner map[string]string
	switchIDs   map[string]uint32

	kv kubevirtIndex

	owners arena[owner]
	ports  arena[portSpec]
	// portVals holds the ports the specs write: apart from the specs, so
	// that a result kept for the next pass keeps its ports, not the specs
	// and owners (and inputs) they were built from.
	portVals arena[state.Port]
	specs    []*portSpec
	// want.Ports doubles as the registry of names while specs are added: it
	// points at each spec's port, filled in by finish. byName maps names to
	// specs; it is built on the first need only (a clash, a conflict).
	byName map[string]*portSpec
	// atts and vmiAtts are reused for each owner's attachments, names for
	// the names of its ports.
	atts, vmiAtts []attachment
	names         []string
	// pending are specs that need addresses claimed or allocated; moved are
	// specs that keep addresses but change switch; kept are specs that keep
	// an address they hold, which another port may hold too.
	pending []*portSpec
	moved   []*portSpec
	// haveByOwner and haveNets index our have ports by owner and by
	// network; each is built only when needed.
	haveByOwner map[string][]*state.Port
	haveNets    map[string][]*state.Port

	problems []Problem
	// problemOwners[i] is the owner whose port problems[i] is about, "" for
	// a problem of a network (a NAD, a Subnet, the config).
	problemOwners []string
	notices       []Problem
	// scope is which owners this Build rebuilds, and what the last
	// result holds for the others.
	scope *scope
	// again is set when a claim waits for a port this pass removes or
	// readdresses (see Result.Again).
	again bool
	// v4 is the IPv4 family of each network on a switch of ours, by switch.
	v4  map[string]*family
	buf []byte
	// cfg is the Build's config.
	cfg *Config
	// rowName and row are haveRow's last answer.
	rowName string
	row     *state.Port
}

// newBuilder returns a builder for in and have with room for about ports
// ports.
func newBuilder(in Inputs, have state.State, ports int) *builder {
	b := &builder{
		have:        have,
		want:        state.New(ports),
		switchOwner: map[string]string{},
		switchIDs:   map[string]uint32{},
		specs:       make([]*portSpec, 0, ports),
		subnetObjs:  in.Subnets,
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
func (b *builder) switchID(name string) uint32 {
	if id, ok := b.switchIDs[name]; ok {
		return id
	}
	id := uint32(len(b.switchIDs) + 1)
	b.switchIDs[name] = id
	return id
}

// ownerProblem records a Problem on the object o was read from.
func (b *builder) ownerProblem(o *owner, reason, msg string) {
	kind, name := o.kind, o.name
	if o.vmi != "" {
		kind, name = kindVirtualMachineInst, o.vmi
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
func (b *builder) dropProblems(n int) {
	b.problems, b.problemOwners = b.problems[:n], b.problemOwners[:n]
}

// owner is whatever a port belongs to: a Pod, a VirtualMachine or a
// VirtualMachineInstance without one.
type owner struct {
	kind, ns, name string
	id             string // "<Kind>/<ns>/<name>", external_ids:ovn-sync/owner
	created        time.Time
	// vmi is set when the owner is a VM that is gone and this VMI of it
	// stands in: Problems then name the VMI.
	vmi                string
	chassis            string
	activationStrategy string
	// base is "<name>.<ns>", the LSP name on the default network.
	base string
	// objects are where the owner's addresses are published and read back
	// as records: the pod itself, or a VM's launcher pods and the VM.
	objects objects
	// running holds, for a VM whose VMI runs, the attachments the VMI was
	// started with, and runningAnn its annotations: their requests are what
	// the guest runs with.
	running    []attachment
	runningAnn map[string]string
}

// objects are the Kubernetes objects that carry an owner's addresses.
type objects struct {
	pod       *corev1.Pod                // a plain pod owner
	vm        *kubevirtv1.VirtualMachine // a VM owner, when the VM exists
	launchers podList                    // a VM's or VMI's virt-launcher pods
}

func (b *builder) newOwner(kind, ns, name string, created time.Time) *owner {
	o := b.owners.alloc()
	// One allocation for both strings: "<name>.<ns><Kind>/<ns>/<name>".
	both := name + "." + ns + kind + "/" + ns + "/" + name
	n := len(name) + 1 + len(ns)
	*o = owner{
		kind: kind, ns: ns, name: name,
		id:      both[n:],
		created: created,
		base:    both[:n],
	}
	return o
}

func (b *builder) newSpec(o *owner, name string) *portSpec {
	s := b.ports.alloc()
	s.o, s.name, s.req, s.rec = o, name, &noRequest, &noRequest
	s.port = b.portVals.alloc()
	return s
}

// requested holds the addresses an owner asks for, or a record of those it
// had. Most ports have none and share noRequest, which is never written.
type requested struct {
	ip     [2]netip.Addr // indexed by ipv4, ipv6
	mac    mac
	ipSrc  string // where the IP came from, for messages: a key or field
	macSrc string
	// granted is set on a request the kube-ovn "allocated" annotation says
	// was given out before (by kube-ovn, or published by ovn-sync).
	granted bool
	// pool lists the addresses an ip_pool annotation offers, one entry per
	// interface (an IPv4 and/or an IPv6 address), when ip is not set:
	// resolve picks one (pickPools). poolSrc is the annotation's key.
	pool    [][2]netip.Addr
	poolSrc string
}

var noRequest requested

// Components of a port's address: its IPv4 address, its IPv6 address and
// its MAC (addr's; the first two equal ipv4 and ipv6).
const (
	compMAC   = addr.CompMAC
	numComps  = addr.NumComps
	claimBits = 1<<numComps - 1
)

// mac is a MAC as IPAM keeps it, under the short name the builder uses.
type mac = addr.MAC

var compName = [numComps]string{"IPv4 address", "IPv6 address", "MAC"}

// Need flags say what a spec lacks after resolve: claimBit(c) when it must
// take an address it does not hold (requested or recorded), dynBit(c) when
// it needs a fresh one.
func claimBit(c int) uint8 { return 1 << c }
func dynBit(c int) uint8   { return 1 << (numComps + c) }

// specState is where a spec stands.
type specState uint8

const (
	// specBuild: the port is built from its network and addresses.
	specBuild specState = iota
	// specKeep: the network is unknown or a request invalid; the port of
	// this name and owner in have (if any) is kept exactly as it is.
	specKeep
	// specFailed: a request or record could not be honoured (a Problem
	// says why); the port in have is kept as it is.
	specFailed
	// specDeferred: an address it must take is held by a port this pass
	// removes or readdresses; the port in have is kept as it is until the
	// next pass (Result.Again).
	specDeferred
	// specEvicted: failed or deferred, and the port in have holds an
	// address another port keeps: it is removed until the conflict ends.
	specEvicted
	// specDropped: lost its name to another owner or to a port that is not
	// ours: no port.
	specDropped
)

// portSpec is one port an owner wants, before and after IPAM.
type portSpec struct {
	o    *owner
	name string
	net  *network
	// have is our port of the same name and owner in have, if any.
	have *state.Port
	// provider names the port's network in annotations.
	provider string

	// req is what the owner asks for (for a running VM: what its VMI was
	// started with), rec what it was recorded to hold; noRequest when
	// nothing. tmpl is, for a running VM, its template's request, which
	// takes effect at the next start.
	req, rec, tmpl *requested
	ip             [2]netip.Addr
	mac            mac

	// The small fields together, so that they pack into one word.
	state specState
	src   [numComps]Source
	need  uint8
	// lost has claimBit(c) set for each component whose address the spec
	// held in have and another port keeps.
	lost uint8
	// written is set by finish when port is in want.
	written bool

	// claim is the IPAMClaim the port reads, nil when none (claims.go).
	// fail is, for a spec that could not take its addresses, the
	// IPsAllocated reason a claim reports, failWhy the message.
	claim         *claimUse
	fail, failWhy string

	// adopt is the vendor whose port of this name s takes over in place
	// ("" when none): have is then that port, made ours (adoptPort).
	adopt string

	// port is what finish writes; want.Ports points at it from add on.
	port *state.Port
	// row is have's port of this name, whoever's, when add registered
	// the spec.
	row *state.Port
}

// target returns the address s is to hold for component c, if decided.
func (s *portSpec) target(c int) (netip.Addr, mac) {
	if c == compMAC {
		return netip.Addr{}, s.mac
	}
	return s.ip[c], 0
}

// kept reports whether s keeps the port in have as it is.
func (s *portSpec) kept() bool {
	return s.state == specKeep || s.state == specFailed || s.state == specDeferred
}

// comparePriority orders claims: older owners first, then by kind,
// namespace and name, then port name.
func comparePriority(a, b *portSpec) int {
	if c := a.o.created.Compare(b.o.created); c != 0 {
		return c
	}
	return cmp.Or(
		strings.Compare(a.o.kind, b.o.kind),
		strings.Compare(a.o.ns, b.o.ns),
		strings.Compare(a.o.name, b.o.name),
		strings.Compare(a.name, b.name),
	)
}

// specNamed returns the spec that wants the port called name, if any.
func (b *builder) specNamed(name string) *portSpec {
	if b.byName == nil {
		b.byName = make(map[string]*portSpec, len(b.specs))
		for _, x := range b.specs {
			if x.state != specDropped {
				b.byName[x.name] = x
			}
		}
	}
	return b.byName[name]
}

// add registers s, settling a clash of port names between owners: the owner
// of the existing port of that name wins, else the older owner, else kind,
// namespace and name order.
func (b *builder) add(s *portSpec) {
	// One map operation in the common case: insert, and see whether the map
	// grew. If it did not, the name was taken; the clash code puts back
	// whichever spec wins.
	s.row = b.haveRow(s.name)
	if b.scope.outside(s.name, s.row, s.o) {
		return
	}
	n := b.want.Ports.Len()
	b.want.Ports.Set(s.name, s.port)
	if b.want.Ports.Len() > n {
		b.specs = append(b.specs, s)
		if b.byName != nil {
			b.byName[s.name] = s
		}
		return
	}
	other := b.specNamed(s.name)
	winner, loser := other, s
	if other.o != s.o {
		if hp := s.row; hp != nil && hp.Owner == s.o.id && hp.Owner != other.o.id {
			winner, loser = s, other
		} else if hp == nil || hp.Owner != other.o.id {
			if comparePriority(s, other) < 0 {
				winner, loser = s, other
			}
		}
	}
	b.want.Ports.Set(s.name, winner.port)
	if winner == s {
		b.byName[s.name] = s
		b.specs = append(b.specs, s)
	}
	loser.state = specDropped
	b.ownerProblem(loser.o, "PortNameConflict",
		"port \""+s.name+"\" is also wanted by "+winner.o.id)
}

// ownedHave returns our have port called name if o owns it.
func (b *builder) ownedHave(o *owner, name string) *state.Port {
	if hp := b.haveRow(name); hp != nil && hp.Owner == o.id {
		return hp
	}
	return nil
}

// haveRow returns have's port called name, or nil. The last answer is
// kept: an owner's port is looked up by name several times in a row
// (its network, a port kept, the spec added), and have holds as many
// ports as the cluster.
func (b *builder) haveRow(name string) *state.Port {
	if name != b.rowName || b.rowName == "" {
		b.rowName, b.row = name, b.have.Ports.Get(name)
	}
	return b.row
}

// keepPort asks for o's have port called name, on the network of
// provider, to stay exactly as it is.
func (b *builder) keepPort(o *owner, name, provider string) {
	if hp := b.ownedHave(o, name); hp != nil {
		s := b.newSpec(o, name)
		s.state, s.have, s.provider = specKeep, hp, provider
		b.add(s)
	}
}

// keepOwnerPorts keeps every have port of o except those named in except:
// used when o's list of networks cannot be read, so any of them may still
// be wanted.
func (b *builder) keepOwnerPorts(o *owner, except []string) {
	b.indexHaveOwners()
	for _, p := range b.haveByOwner[o.id] {
		if !slices.Contains(except, p.Name) {
			s := b.newSpec(o, p.Name)
			s.state, s.have = specKeep, p
			b.add(s)
		}
	}
}

// indexHaveOwners indexes our have ports by owner, sorted by name, once.
func (b *builder) indexHaveOwners() {
	if b.haveByOwner != nil {
		return
	}
	b.haveByOwner = map[string][]*state.Port{}
	for _, p := range b.have.Ports.All() {
		if p != nil && p.Owned() {
			b.haveByOwner[p.Owner] = append(b.haveByOwner[p.Owner], p)
		}
	}
	for _, ps := range b.haveByOwner {
		slices.SortFunc(ps, func(x, y *state.Port) int { return strings.Compare(x.Name, y.Name) })
	}
}

// resolve decides, for every spec, where each of its addresses comes from
// — request, record, the port in have (sticky) or a fresh allocation — then
// runs IPAM, which settles addresses held twice and hands out the rest.
func (b *builder) resolve() {
	m := b.newTable()
	b.pickPools(m)
	for _, s := range b.specs {
		if s.state != specBuild {
			continue
		}
		hp := s.row
		if hp != nil && !hp.Owned() {
			if !b.adoptable(s, hp) {
				s.state = specDropped
				b.want.Ports.Delete(s.name)
				continue
			}
			hp = b.adoptPort(s, hp)
		}
		// What the port holds is the NB's row.
		var h addr.LSP
		if hp != nil && hp.Owner == s.o.id {
			s.have = hp
			h = addr.ParseLSP(hp.Addresses)
		}
		b.chooseAddresses(s, h)
		// A port whose addresses were held on another switch keeps them
		// here only where nobody else holds them (allocate).
		if s.have != nil && s.have.Switch != s.net.sw {
			b.moved = append(b.moved, s)
		}
		if s.need != 0 {
			b.pending = append(b.pending, s)
		}
	}
	if b.adopted {
		// The rows adopted are ours now, on their switch: who holds
		// what is read again. (ip_pool entries were picked as the NB has
		// them, before.)
		m = b.newTable()
	}
	b.limitPorts()
	b.allocate(m)
}

// chooseAddresses decides, for each component of s, where its address
// comes from — its request, its record, what it holds (h), or a fresh one
// — and sets s.need: claimBit where it must claim an address it does not
// hold, dynBit where IPAM must hand one out.
func (b *builder) chooseAddresses(s *portSpec, h addr.LSP) {
	if s.tmpl != nil {
		s.startRequests(h)
	}
	s.takeClaim(h)
	n := s.net
	noIPAM := n.noIPAM()
	for f := range n.fam {
		if !n.fam[f].prefix.IsValid() && !noIPAM {
			continue
		}
		held := h.IP[f]
		if held.IsValid() && n.unusable(held) != "" {
			if n.fam[f].prefix.Contains(held) {
				b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("port %q held %s, which %s: given a new address",
					s.name, held, n.unusable(held)))
			}
			held = netip.Addr{}
		}
		switch {
		case s.req.ip[f].IsValid():
			s.ip[f], s.src[f] = s.req.ip[f], SourceRequest
		case s.rec.ip[f].IsValid():
			s.ip[f], s.src[f] = s.rec.ip[f], SourceRecord
		case held.IsValid():
			s.ip[f], s.src[f] = held, SourceSticky
		case noIPAM:
			continue // nothing to allocate: a MAC only, or what is asked
		default:
			s.need |= dynBit(f)
			s.src[f] = SourceAllocated
			continue
		}
		if s.ip[f] != held {
			s.need |= claimBit(f)
		}
	}
	switch {
	case s.req.mac.Valid():
		s.mac, s.src[compMAC] = s.req.mac, SourceRequest
	case s.rec.mac.Valid():
		s.mac, s.src[compMAC] = s.rec.mac, SourceRecord
	case h.MAC.Valid():
		s.mac, s.src[compMAC] = h.MAC, SourceSticky
	default:
		s.need |= dynBit(compMAC)
		s.src[compMAC] = SourceAllocated
	}
	if s.mac.Valid() && s.mac != h.MAC {
		s.need |= claimBit(compMAC)
	}
}

// startRequests settles, for a VM whose VMI runs, which request holds: the
// one the VMI was started with (s.req). Where that asks for nothing and the
// port has no address yet (none in have, none recorded), the template's
// request (s.tmpl) is the best there is. What the template asks for beyond
// that waits for the next start: finish reports it (RestartRequired).
func (s *portSpec) startRequests(h addr.LSP) {
	r := *s.req
	use := false
	for f := range r.ip {
		if !r.ip[f].IsValid() && !h.IP[f].IsValid() && !s.rec.ip[f].IsValid() && s.tmpl.ip[f].IsValid() {
			r.ip[f], use = s.tmpl.ip[f], true
			if r.ipSrc == "" {
				r.ipSrc = s.tmpl.ipSrc
			}
		}
	}
	if !r.mac.Valid() && !h.MAC.Valid() && !s.rec.mac.Valid() && s.tmpl.mac.Valid() {
		r.mac, r.macSrc, use = s.tmpl.mac, s.tmpl.macSrc, true
	}
	if use {
		q := r // allocated only here: most running VMs take no template request
		s.req = &q
	}
}

// index sets want.Index, walking the specs in the order they were allocated
// (so memory is read in order) and hashing each port while it is at hand.
func (b *builder) index() {
	idx := make(state.Entries, 0, b.want.Ports.Len())
	for _, s := range b.specs {
		// The specs finish put in want: built, or kept from have.
		if s.state == specBuild || s.kept() && s.have != nil {
			idx = append(idx, state.EntryOf(s.port))
		}
	}
	if len(idx) != b.want.Ports.Len() {
		b.want.Index = state.IndexPorts(b.want.Ports) // a port that no spec holds
		return
	}
	idx.Sort()
	b.want.Index = state.IndexOf(idx)
}

// finish writes want and sorts the problems.
func (b *builder) finish() Result {
	for _, n := range b.networks {
		b.emitSwitch(n)
		b.emitDHCP(n)
	}
	b.checkClaims()
	// The switch of a NAD that cannot be read stays while ports of ours are
	// kept on it (needSwitch, below); with none left, it goes.
	for _, s := range b.specs {
		switch {
		case s.state == specDropped:
			continue
		case s.kept() && s.lost != 0:
			s.state = specEvicted
			fallthrough
		case s.state == specEvicted || s.kept() && s.have == nil:
			b.want.Ports.Delete(s.name)
			continue
		case s.kept():
			// Kept as it is, but as a port of ours: one adopted in this
			// pass says so, and no observed-only column goes into want.
			*s.port = *s.have
			s.port.UUID, s.port.DynamicAddresses = "", ""
			s.port.Vendor, s.port.VendorSwitch, s.port.Adopt = "", "", s.adopt
			b.needSwitch(s.port.Switch)
			b.needDHCP(s.port.DHCPv4)
			b.needDHCP(s.port.DHCPv6)
			s.written = true
			continue
		}
		b.port(s, s.port)
		s.written = true
		if s.tmpl != nil {
			b.restartRequired(s)
		}
	}

	// The ports of the owners rebuilt alone: splice writes the whole
	// result's exclude_ips and counts.
	b.index()

	raw := make([]ownedProblem, len(b.problems))
	for i, p := range b.problems {
		raw[i] = ownedProblem{p, b.problemOwners[i]}
	}
	sortProblems(b.notices)
	return Result{Want: b.want, Problems: compactProblems(raw), Notices: b.notices, Again: b.again, specs: b.specs, raw: raw, v4: b.v4, claimNotes: b.claimNotes, lookups: b.lookups, nads: b.nadRecords(), subnets: b.subnetRecords(*b.cfg)}
}

// ownedProblem is a Problem with the owner whose ports it is about, ""
// for a problem of a network.
type ownedProblem struct {
	Problem
	owner string
}

// compactProblems returns the problems of raw, sorted and each once. raw
// is sorted too.
func compactProblems(raw []ownedProblem) []Problem {
	slices.SortFunc(raw, func(x, y ownedProblem) int {
		return cmp.Or(compareProblems(x.Problem, y.Problem), strings.Compare(x.owner, y.owner))
	})
	out := make([]Problem, 0, len(raw))
	for _, p := range raw {
		if len(out) == 0 || out[len(out)-1] != p.Problem {
			out = append(out, p.Problem)
		}
	}
	return out
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, compareProblems)
}

func compareProblems(x, y Problem) int {
	return cmpStrings(x.Kind, y.Kind, x.Namespace, y.Namespace, x.Name, y.Name, x.Reason, y.Reason, x.Message, y.Message)
}

// restartRequired notes what a running VM's template asks for that its
// port does not hold: it takes effect when the VM starts again.
func (b *builder) restartRequired(s *portSpec) {
	var what []string
	for f, want := range s.tmpl.ip {
		if want.IsValid() && want != s.ip[f] {
			what = append(what, fmt.Sprintf("%s %s (now %s, %s)", compName[f], want, addrOrNone(s.ip[f]), s.tmpl.ipSrc))
		}
	}
	if m := s.tmpl.mac; m.Valid() && m != s.mac {
		what = append(what, fmt.Sprintf("MAC %s (now %s, %s)", m, s.mac, s.tmpl.macSrc))
	}
	if len(what) == 0 {
		return
	}
	o := s.o
	b.notices = append(b.notices, Problem{Kind: o.kind, Namespace: o.ns, Name: o.name, Reason: "RestartRequired",
		Message: fmt.Sprintf("network %q: the template asks for %s; port %q keeps its running addresses until the VM starts again",
			s.net.key, strings.Join(what, " and "), s.name)})
}

func addrOrNone(a netip.Addr) string {
	if !a.IsValid() {
		return "none"
	}
	return a.String()
}

// port renders s into p, sharing the address slices of s.have when they are
// unchanged.
func (b *builder) port(s *portSpec, p *state.Port) {
	buf := s.mac.AppendTo(b.buf[:0])
	for _, a := range s.ip {
		if a.IsValid() {
			buf = a.AppendTo(append(buf, ' '))
		}
	}
	b.buf = buf
	var addrs, ps []string
	if hp := s.have; hp != nil {
		if len(hp.Addresses) == 1 && hp.Addresses[0] == string(buf) {
			addrs = hp.Addresses
		}
		if len(hp.PortSecurity) == 1 && hp.PortSecurity[0] == string(buf) {
			ps = hp.PortSecurity
		}
	}
	if addrs == nil {
		if ps != nil {
			addrs = ps
		} else {
			addrs = []string{string(buf)}
		}
	}
	if ps == nil {
		ps = addrs
	}
	*p = state.Port{
		Name:               s.name,
		Switch:             s.net.sw,
		Addresses:          addrs,
		PortSecurity:       ps,
		Owner:              s.o.id,
		Network:            s.net.key,
		RequestedChassis:   s.o.chassis,
		ActivationStrategy: s.o.activationStrategy,
		Adopt:              s.adopt,
	}
	for f, a := range s.ip {
		if a.IsValid() {
			*dhcpRef(p, f) = s.net.dhcpName(f)
		}
		b.keepForeignDHCP(s, p, f)
	}
}

func (b *builder) emitSwitch(n *network) {
	hs := b.have.Switches[n.sw]
	if hs != nil && !hs.Owned() {
		// A switch someone else made: we add ports to it, nothing more.
		b.want.Switches[n.sw] = cloneSwitch(hs)
		return
	}
	b.want.Switches[n.sw] = n.switchValue(nil)
	if n.fam[ipv4].prefix.IsValid() {
		if b.v4 == nil {
			b.v4 = map[string]*family{}
		}
		b.v4[n.sw] = &n.fam[ipv4]
	}
}

// markNorthdFirst sets, on every IPv4 network whose switch has
// other_config:subnet (ovn-sync writes it on its own switches; another's
// may carry one), the first address of that subnet, which northd marks
// taken (family.first).
func (b *builder) markNorthdFirst() {
	for _, n := range b.networks {
		f := &n.fam[ipv4]
		if !f.prefix.IsValid() {
			continue
		}
		p := f.prefix
		if hs := b.have.Switches[n.sw]; hs != nil && !hs.Owned() {
			q, err := netip.ParsePrefix(hs.Subnet)
			if err != nil || !q.Addr().Is4() {
				continue
			}
			p = q
		}
		if a := p.Masked().Addr().Next(); addr.InRange(f.usable, a) {
			f.first = a
		}
	}
}

// needSwitch makes sure a kept port's switch is kept too: deleting a switch
// deletes its ports.
func (b *builder) needSwitch(name string) {
	if name == "" {
		return
	}
	if _, ok := b.want.Switches[name]; ok {
		return
	}
	if hs := b.have.Switches[name]; hs != nil {
		b.want.Switches[name] = cloneSwitch(hs)
	}
}

func cloneSwitch(s *state.Switch) *state.Switch {
	c := *s
	c.UUID = ""
	return &c
}
