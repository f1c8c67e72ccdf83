package desired

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

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
			p := &b.render
			*p = *s.have
			r := p.Rare()
			p.UUID, r.DynamicAddresses = "", ""
			r.Vendor, r.VendorSwitch, r.Adopt = "", "", b.adoptOf(s)
			p.SetRare(b.rares.Of(r))
			b.needSwitch(p.Switch)
			b.needDHCP(r.DHCPv4)
			b.needDHCP(r.DHCPv6)
			b.write(s)
			continue
		}
		b.port(s, &b.render)
		b.write(s)
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
	b.notices = append(b.notices, Problem{Kind: o.kind(), Namespace: o.ns, Name: o.name, Reason: "RestartRequired",
		Message: fmt.Sprintf("network %q: the template asks for %s; port %q keeps its running addresses until the VM starts again",
			s.net.key, strings.Join(what, " and "), s.name)})
}

func addrOrNone(a netip.Addr) string {
	if !a.IsValid() {
		return "none"
	}
	return a.String()
}

// write puts s's port, rendered into b.render, in want: the NB's row
// s.have itself when the two hold the same and the row holds nothing else
// but its UUID (no dynamic_addresses, no vendor keys, not adopted in this
// pass), else a copy of the rendering. The port a result keeps from pass
// to pass is then the row the NB snapshot holds anyway, and a pass makes
// a port only for a spec whose row differs. So a port of Want may carry
// the UUID of the row it is; diff and apply take UUIDs from have alone.
// Neither side changes a port once made.
func (b *builder) write(s *portSpec) {
	p, hp := &b.render, s.have
	if shareRows && rowIs(hp, p) {
		s.port = hp
	} else {
		s.port = b.portVals.alloc()
		*s.port = *p
	}
	// Keyed by the port's own name: a row's is the NB snapshot's string,
	// so that what the result keeps does not keep the spec's (which shares
	// its memory with the owner's id, newOwner) from pass to pass.
	b.want.Ports.Set(s.port.Name, s.port)
	s.written = true
}

// shareRows is unset by a test alone, to measure what sharing saves.
var shareRows = true

// rowIs reports whether want's port p may be hp, the NB's row of its name:
// the two hold the same, and the row holds nothing else but its UUID (no
// dynamic_addresses, no vendor keys, not adopted in this pass).
func rowIs(hp, p *state.Port) bool {
	return hp != nil && p.Adopt() == "" && hp.DynamicAddresses() == "" && hp.Vendor() == "" &&
		hp.VendorSwitch() == "" && hp.Adopt() == "" && hp.Equal(p)
}

// Settle returns want with each port named in names that have, the NB's
// rows once want's plan was applied, holds as want has it replaced by
// that row, as a Build over that NB would write it (write): the ports a
// pass made for the rows it wrote, with their addresses and owners, are
// then not kept beside the rows the NB snapshot holds anyway, and a shard
// of want that then holds what have's does is have's (State.ShareWith).
// want itself is not changed: its holders may read it meanwhile. Its Ports
// and Index are copied as Clone and Patch copy them, in the shards that
// change.
func Settle(want state.State, have state.State, names []string) state.State {
	var ports state.Ports
	var del, ins []state.Entry
	for _, name := range names {
		p, hp := want.Ports.Get(name), have.Ports.Get(name)
		if p == nil || hp == p || !rowIs(hp, p) {
			continue
		}
		if del == nil {
			ports = want.Ports.Clone()
		}
		ports.Set(hp.Name, hp)
		e := state.EntryOf(hp)
		ins = append(ins, e)
		e.Port, e.Dynamic = p, p.DynamicAddresses() != ""
		del = append(del, e)
	}
	if del == nil {
		return want
	}
	want.Ports = ports
	if want.Index.Built() {
		want.Index = want.Index.Patch(del, ins)
		want.ShareWith(have)
	}
	return want
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
		Name:             s.name,
		Switch:           s.net.sw,
		Addresses:        addrs,
		PortSecurity:     ps,
		Owner:            s.o.id,
		Network:          s.net.key,
		RequestedChassis: s.o.chassis,
	}
	r := state.Rare{ActivationStrategy: s.o.vm().activationStrategy, Adopt: b.adoptOf(s)}
	for f, a := range s.ip {
		if a.IsValid() {
			*dhcpRef(&r, f) = s.net.dhcpName(f)
		}
		b.keepForeignDHCP(s, &r, f)
	}
	p.SetRare(b.rares.Of(r))
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
