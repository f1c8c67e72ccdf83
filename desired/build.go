package desired

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/state"
)

// Build computes the desired switches and ports for the objects in in, given
// the default network in cfg and what the NB holds now (have, which may be
// empty). have is read to keep addresses sticky, to avoid handing out
// addresses that any port already holds, and to keep ports whose network is
// unknown; it is not modified.
//
// The result is complete: a port of ours in have that is missing from want
// is one no owner needs any more. Values in want may share slices with
// values in have; like every State they must not be mutated. Ports and
// switches in want carry no UUID.
//
// Problems are bad or conflicting input, sorted by object then reason. A
// Problem never removes or rewrites a port: the object it names keeps what
// it had in have.
//
// Build is deterministic: it does not depend on the order of the slices in
// in, reads no clock and starts no goroutine.
func Build(in Inputs, cfg Config, have state.State) (state.State, []Problem) {
	b := newBuilder(in, have)
	b.buildNetworks(cfg, in.NetworkAttachmentDefinitions)
	b.indexKubeVirt(in)
	b.addPods(in)
	b.addVirtualMachines(in)
	b.addVirtualMachineInstances(in)
	b.resolve()
	return b.finish()
}

type builder struct {
	have state.State
	want state.State

	def      *network
	networks []*network // default first, then managed NADs in ns/name order
	nads     map[nadRef]nadEntry
	// switchOwner names, for messages, who uses each switch name.
	switchOwner map[string]string
	switchIDs   map[string]uint32

	kv kubevirtIndex

	owners arena[owner]
	ports  arena[portSpec]
	specs  []*portSpec
	// want.Ports doubles as the registry of names while specs are added: it
	// points at each spec's port, filled in by finish. clashes maps names to
	// specs; it is built on the first clash only.
	clashes map[string]*portSpec
	// atts is reused for each owner's attachments.
	atts []attachment
	// pending are specs that need addresses claimed or allocated; moved are
	// specs that keep addresses but change switch.
	pending []*portSpec
	moved   []*portSpec
	// haveByOwner indexes our have ports by owner; built only when needed.
	haveByOwner map[string][]*state.Port

	problems []Problem
	buf      []byte
}

func newBuilder(in Inputs, have state.State) *builder {
	n := len(in.Pods) + len(in.VirtualMachines) + len(in.VirtualMachineInstances)
	if len(have.Ports) > n {
		n = len(have.Ports)
	}
	b := &builder{
		have:        have,
		want:        state.New(n),
		switchOwner: map[string]string{},
		switchIDs:   map[string]uint32{},
		specs:       make([]*portSpec, 0, n),
	}
	return b
}

// arena hands out values of T from chunks, so that many small values cost
// few allocations. Pointers stay valid: a chunk is never reallocated. Chunks
// are small enough to reuse memory the collector freed rather than fault in
// fresh pages on every pass.
type arena[T any] struct {
	chunk []T
}

const arenaChunk = 64

func (a *arena[T]) alloc() *T {
	if len(a.chunk) == cap(a.chunk) {
		a.chunk = make([]T, 0, arenaChunk)
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
	if o.vmi != "" {
		b.problem(kindVirtualMachineInst, o.ns, o.vmi, reason, msg)
		return
	}
	b.problem(o.kind, o.ns, o.name, reason, msg)
}

func (b *builder) problem(kind, ns, name, reason, msg string) {
	b.problems = append(b.problems, Problem{Kind: kind, Namespace: ns, Name: name, Reason: reason, Message: msg})
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
	s.o, s.name, s.req = o, name, &noRequest
	return s
}

// requested holds a port's address requests. Most ports have none and share
// noRequest, which is never written.
type requested struct {
	v4, v6 netip.Addr
	mac    mac
	ipSrc  string // where the IP request came from, for messages
	macSrc string
}

var noRequest requested

// need flags say what a spec lacks after the sticky check.
const (
	claim4 uint8 = 1 << iota
	claim6
	claimMAC
	dyn4
	dyn6
	genMAC

	needClaims  = claim4 | claim6 | claimMAC
	needDynamic = dyn4 | dyn6 | genMAC
)

// portSpec is one port an owner wants, before and after IPAM.
type portSpec struct {
	o    *owner
	name string
	net  *network
	// keepOnly: the network is unknown or the request invalid; the port of
	// this name and owner in have (if any) is kept exactly as it is.
	keepOnly bool
	// have is our port of the same name and owner in have, if any.
	have *state.Port

	// req is what the owner asks for; noRequest when nothing.
	req     *requested
	v4, v6  netip.Addr
	mac     mac
	need    uint8
	failed  bool
	dropped bool

	// port is what finish writes; want.Ports points at it from add on.
	port state.Port
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

// add registers s, settling a clash of port names between owners: the owner
// of the existing port of that name wins, else the older owner, else kind,
// namespace and name order.
func (b *builder) add(s *portSpec) {
	// One map operation in the common case: insert, and see whether the map
	// grew. If it did not, the name was taken; the clash code puts back
	// whichever spec wins.
	n := len(b.want.Ports)
	b.want.Ports[s.name] = &s.port
	if len(b.want.Ports) > n {
		b.specs = append(b.specs, s)
		if b.clashes != nil {
			b.clashes[s.name] = s
		}
		return
	}
	if b.clashes == nil {
		b.clashes = make(map[string]*portSpec, len(b.specs))
		for _, x := range b.specs {
			if !x.dropped {
				b.clashes[x.name] = x
			}
		}
	}
	other := b.clashes[s.name]
	winner, loser := other, s
	if other.o != s.o {
		if hp := b.have.Ports[s.name]; hp != nil && hp.Owner == s.o.id && hp.Owner != other.o.id {
			winner, loser = s, other
		} else if hp == nil || hp.Owner != other.o.id {
			if comparePriority(s, other) < 0 {
				winner, loser = s, other
			}
		}
	}
	b.want.Ports[s.name] = &winner.port
	if winner == s {
		b.clashes[s.name] = s
		b.specs = append(b.specs, s)
	}
	loser.dropped = true
	b.ownerProblem(loser.o, "PortNameConflict",
		"port \""+s.name+"\" is also wanted by "+winner.o.id)
}

// ownedHave returns our have port called name if o owns it.
func (b *builder) ownedHave(o *owner, name string) *state.Port {
	if hp := b.have.Ports[name]; hp != nil && hp.Owner == o.id {
		return hp
	}
	return nil
}

// keepPort asks for o's have port called name to stay exactly as it is.
func (b *builder) keepPort(o *owner, name string) {
	if hp := b.ownedHave(o, name); hp != nil {
		s := b.newSpec(o, name)
		s.keepOnly, s.have = true, hp
		b.add(s)
	}
}

// keepOwnerPorts keeps every have port of o except those named in except:
// used when o's list of networks cannot be read, so any of them may still
// be wanted.
func (b *builder) keepOwnerPorts(o *owner, except []string) {
	if b.haveByOwner == nil {
		b.haveByOwner = map[string][]*state.Port{}
		for _, p := range b.have.Ports {
			if p != nil && p.Owned() {
				b.haveByOwner[p.Owner] = append(b.haveByOwner[p.Owner], p)
			}
		}
		for _, ps := range b.haveByOwner {
			slices.SortFunc(ps, func(x, y *state.Port) int { return strings.Compare(x.Name, y.Name) })
		}
	}
	for _, p := range b.haveByOwner[o.id] {
		if !slices.Contains(except, p.Name) {
			s := b.newSpec(o, p.Name)
			s.keepOnly, s.have = true, p
			b.add(s)
		}
	}
}

// resolve decides, for every spec, what it keeps from have and what it
// needs, then runs IPAM for those that need something.
func (b *builder) resolve() {
	for _, s := range b.specs {
		if s.dropped || s.keepOnly {
			continue
		}
		hp := b.have.Ports[s.name]
		if hp != nil && !hp.Owned() {
			s.dropped = true
			delete(b.want.Ports, s.name)
			b.ownerProblem(s.o, "PortNameConflict",
				"port \""+s.name+"\" exists and is not ovn-sync's")
			continue
		}
		if hp != nil && hp.Owner == s.o.id {
			s.have = hp
		}
		var h lsp
		if s.have != nil {
			h = parseLSPAddresses(s.have.Addresses)
		}
		n := s.net
		if n.v4.IsValid() {
			switch {
			case s.req.v4.IsValid():
				if h.v4 == s.req.v4 {
					s.v4 = h.v4
				} else {
					s.need |= claim4
				}
			case h.v4.IsValid() && inRange(n.r4, h.v4):
				s.v4 = h.v4
			default:
				s.need |= dyn4
			}
		}
		if n.v6.IsValid() {
			switch {
			case s.req.v6.IsValid():
				if h.v6 == s.req.v6 {
					s.v6 = h.v6
				} else {
					s.need |= claim6
				}
			case h.v6.IsValid() && inRange(n.r6, h.v6):
				s.v6 = h.v6
			default:
				s.need |= dyn6
			}
		}
		switch {
		case s.req.mac.valid():
			if h.mac == s.req.mac {
				s.mac = h.mac
			} else {
				s.need |= claimMAC
			}
		case h.mac.valid():
			s.mac = h.mac
		default:
			s.need |= genMAC
		}
		if s.have != nil && s.have.Switch != n.sw {
			b.moved = append(b.moved, s)
		}
		if s.need != 0 {
			b.pending = append(b.pending, s)
		}
	}
	if len(b.pending) > 0 {
		b.allocate()
	}
}

// index sets want.Index, walking the specs in the order they were allocated
// (so memory is read in order) and hashing each port while it is at hand.
func (b *builder) index() {
	idx := make(state.Index, 0, len(b.want.Ports))
	for _, s := range b.specs {
		// The specs finish put in want: not dropped, and either built or
		// kept from have.
		if !s.dropped && (!(s.keepOnly || s.failed) || s.have != nil) {
			idx = append(idx, state.EntryOf(&s.port))
		}
	}
	if len(idx) != len(b.want.Ports) {
		idx = state.IndexPorts(b.want.Ports) // a port that no spec holds
	}
	idx.Sort()
	b.want.Index = idx
}

// finish writes want and sorts the problems.
func (b *builder) finish() (state.State, []Problem) {
	for _, n := range b.networks {
		b.emitSwitch(n)
	}
	// Switches of NADs that cannot be read stay as they are.
	for name, hs := range b.have.Switches {
		if hs == nil || !strings.HasPrefix(hs.Owner, ownerNADPrefix) {
			continue
		}
		if _, ok := b.want.Switches[name]; ok {
			continue
		}
		ns, nm, _ := strings.Cut(strings.TrimPrefix(hs.Owner, ownerNADPrefix), "/")
		if e, ok := b.nads[nadRef{ns, nm}]; ok && e.state == nadInvalid {
			b.want.Switches[name] = cloneSwitch(hs)
		}
	}

	for _, s := range b.specs {
		if s.dropped {
			continue
		}
		if s.keepOnly || s.failed {
			if s.have == nil {
				delete(b.want.Ports, s.name)
				continue
			}
			s.port = *s.have
			s.port.UUID, s.port.DynamicAddresses = "", ""
			b.needSwitch(s.port.Switch)
			continue
		}
		b.port(s, &s.port)
	}

	b.index()

	slices.SortFunc(b.problems, func(x, y Problem) int {
		return cmpStrings(x.Kind, y.Kind, x.Namespace, y.Namespace, x.Name, y.Name, x.Reason, y.Reason, x.Message, y.Message)
	})
	b.problems = slices.Compact(b.problems)
	return b.want, b.problems
}

// port renders s into p, sharing the address slices of s.have when they are
// unchanged.
func (b *builder) port(s *portSpec, p *state.Port) {
	buf := s.mac.appendTo(b.buf[:0])
	if s.v4.IsValid() {
		buf = s.v4.AppendTo(append(buf, ' '))
	}
	if s.v6.IsValid() {
		buf = s.v6.AppendTo(append(buf, ' '))
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
	}
}

func (b *builder) emitSwitch(n *network) {
	hs := b.have.Switches[n.sw]
	if hs != nil && !hs.Owned() {
		// A switch someone else made: we add ports to it, nothing more.
		b.want.Switches[n.sw] = cloneSwitch(hs)
		return
	}
	b.want.Switches[n.sw] = n.switchValue()
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
