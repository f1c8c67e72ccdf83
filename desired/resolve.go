package desired

import (
	"fmt"
	"net/netip"

	"github.com/ovn-sync/ovn-sync/desired/addr"
)

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
	b.kubeOVNRisks()
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
