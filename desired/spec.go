package desired

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// owner is whatever a port belongs to: a Pod, a VirtualMachine or a
// VirtualMachineInstance without one.
type owner struct {
	ns, name string
	id       string // "<Kind>/<ns>/<name>", external_ids:ovn-sync/owner; kind() reads it
	chassis  string
	// base is "<name>.<ns>", the LSP name on the default network.
	base string
	// pod is where a plain pod owner's addresses are published and read
	// back as records: the pod, kept as a Carrier (what publishing reads
	// of it, a tenth of a Pod's size), not as the API object a pass read.
	// Nil for any other owner.
	pod *[1]Carrier
	// created is when the object was created, in seconds and nanoseconds
	// since the Unix epoch (compareCreated).
	created   int64
	createdNs int32
	// ordinal is a StatefulSet pod's ordinal, -1 for any other owner.
	ordinal int32
	// vmPart is what only a VM or VMI owner has, nil for a pod: apart, so
	// that a pod owner, the most common, is 96 bytes smaller.
	vmPart *vmPart
}

// vmPart is the part of an owner that only a VM or a VMI has.
type vmPart struct {
	// vmi is set when the owner is a VM that is gone and this VMI of it
	// stands in: Problems then name the VMI.
	vmi                string
	activationStrategy string
	// vm and launchers are where the owner's addresses are published and
	// read back as records: the VM, when it exists (as a Carrier), and its
	// or the VMI's virt-launcher pods.
	vm        *Carrier
	launchers launcherList
	// running holds, for a VM whose VMI runs, the attachments the VMI was
	// started with, and runningAnn its annotations: their requests are what
	// the guest runs with.
	running    []attachment
	runningAnn map[string]string
}

// noVMPart is what a pod owner reads as its vmPart.
var noVMPart vmPart

// vmPart returns o's vmPart to fill in, made the first time.
func (b *builder) vmPart(o *owner) *vmPart {
	if o.vmPart == nil {
		o.vmPart = b.vmParts.alloc()
	}
	return o.vmPart
}

// vm returns o's vmPart to read: an empty one for a pod.
func (o *owner) vm() *vmPart {
	if o.vmPart == nil {
		return &noVMPart
	}
	return o.vmPart
}

func (b *builder) newOwner(kind, ns, name string, created time.Time) *owner {
	o := b.owners.alloc()
	id, base := b.ownerNames(kind, ns, name)
	*o = owner{
		ns: ns, name: name,
		id:        id,
		base:      base,
		created:   created.Unix(),
		createdNs: int32(created.Nanosecond()),
		ordinal:   -1,
	}
	return o
}

// ownerNames returns the id ("<Kind>/<ns>/<name>") and base ("<name>.<ns>")
// of an owner. When the NB holds our port called base and this owner's
// (every pod's port, every VM's on the default network, once written),
// they are that row's Owner and Name: strings the NB's snapshot holds
// anyway, which a full Build then does not make again for every owner.
// Else one allocation makes both.
func (b *builder) ownerNames(kind, ns, name string) (id, base string) {
	b.buf = append(append(append(b.buf[:0], name...), '.'), ns...)
	if hp := b.have.Ports.GetBytes(b.buf); hp != nil && isOwnerID(hp.Owner, kind, ns, name) {
		return hp.Owner, hp.Name
	}
	both := name + "." + ns + kind + "/" + ns + "/" + name
	n := len(name) + 1 + len(ns)
	return both[n:], both[:n]
}

// isOwnerID reports whether id is "<kind>/<ns>/<name>".
func isOwnerID(id, kind, ns, name string) bool {
	k, rest, ok := strings.Cut(id, "/")
	return ok && k == kind && len(rest) == len(ns)+1+len(name) &&
		rest[:len(ns)] == ns && rest[len(ns)] == '/' && rest[len(ns)+1:] == name
}

// kind is o's kind: Pod, VirtualMachine or VirtualMachineInstance, the
// first part of its id.
func (o *owner) kind() string { return o.id[:len(o.id)-len(o.ns)-len(o.name)-2] }

// compareCreated orders a and b by when their objects were created, as
// time.Time's Compare does.
func compareCreated(a, b *owner) int {
	return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.createdNs, b.createdNs))
}

func (b *builder) newSpec(o *owner, name string) *portSpec {
	s := b.ports.alloc()
	s.o, s.name, s.req, s.rec = o, name, &noRequest, &noRequest
	return s
}

// allocFailure is the IPsAllocated reason and message a claim reports for
// a port that could not take its addresses.
type allocFailure struct{ reason, msg string }

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
	// pool is what an ip_pool annotation offers when ip is not set (rare,
	// so a pointer): resolve picks one entry (pickPools).
	pool *ipPool
}

// ipPool is the addresses an ip_pool annotation offers, one entry per
// interface (an IPv4 and/or an IPv6 address), and the annotation's key.
type ipPool struct {
	entries [][2]netip.Addr
	src     string
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

func dynBit(c int) uint8 { return 1 << (numComps + c) }

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
	// adopting is set when s takes over in place the port of this name
	// that Config.Adopt's vendor made: have is then that port, made ours
	// (adoptPort).
	adopting bool

	// claim is the IPAMClaim the port reads, nil when none (claims.go).
	// fail is, for a spec that could not take its addresses, why: what
	// the claim reports. Both are rare, so each is a pointer.
	claim *claimUse
	fail  *allocFailure

	// port is what finish writes: the NB's row itself when it is what
	// the spec wants (write), else a port of its own; nil until then.
	// From add to finish, want.Ports holds registered, not the port.
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
	return cmp.Or(
		compareCreated(a.o, b.o),
		strings.Compare(a.o.kind(), b.o.kind()),
		strings.Compare(a.o.ns, b.o.ns),
		strings.Compare(a.o.name, b.o.name),
		strings.Compare(a.name, b.name),
	)
}

// specNamed returns the spec that wants the port called name, if any.
func (b *registry) specNamed(name string) *portSpec {
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
	b.want.Ports.Set(s.name, &registered)
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
func (b *nbRows) haveRow(name string) *state.Port {
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
func (b *nbRows) indexHaveOwners() {
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
