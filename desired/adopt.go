package desired

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// ReasonNotAdopted is the Problem reason of an owner whose port is held,
// under the name ovn-sync would give it, by a port kube-ovn made that this
// pass does not adopt: without Config.Adopt, or because the port is not as
// ovn-sync would have it (another switch, addresses outside the network).
// The owner has no port of ours there until it is adopted or gone: a plan
// that reports one is not converged.
const ReasonNotAdopted = "NotAdopted"

// adoptable reports whether s takes over hp, the port of its name that is
// not ours. When it does not, it records why as a Problem on s's owner.
// Adoption changes no address, so a port is adopted only as it is: on the
// switch ovn-sync would put it on, with one entry of addresses that are
// usable on the network, one per family the network has, and no
// port_security beyond them (kube-ovn's virtual IPs).
func (b *builder) adoptable(s *portSpec, hp *state.Port) bool {
	notAdopted := func(format string, args ...any) bool {
		b.ownerProblem(s.o, ReasonNotAdopted, fmt.Sprintf("port %q is %s's: ", s.name, hp.Vendor())+fmt.Sprintf(format, args...))
		return false
	}
	n := s.net
	switch {
	case hp.Vendor() != state.VendorKubeOVN:
		b.ownerProblem(s.o, "PortNameConflict", "port \""+s.name+"\" exists and is not ovn-sync's")
		return false
	case b.adopt != hp.Vendor():
		return notAdopted("not adopted without --adopt %s; the owner has no port of ovn-sync's until it is", hp.Vendor())
	case hp.VendorSwitch() != n.sw:
		return notAdopted("it is on switch %q (external_ids:%s), ovn-sync would place it on %q; left alone",
			hp.VendorSwitch(), state.KeyVendorSwitch, n.sw)
	case b.have.Switches[n.sw] == nil:
		return notAdopted("its switch %q is not in the NB; left alone", n.sw)
	case len(hp.Addresses) != 1:
		return notAdopted("addresses %q is not one entry \"<mac> <ip>...\"; left alone", hp.Addresses)
	case len(hp.PortSecurity) > 0 && !slices.Equal(hp.PortSecurity, hp.Addresses):
		return notAdopted("port_security %q is not its addresses (virtual IPs?); left alone", hp.PortSecurity)
	}
	h := addr.ParseLSP(hp.Addresses)
	if !h.MAC.Valid() {
		return notAdopted("addresses %q hold no MAC; left alone", hp.Addresses[0])
	}
	words := 1
	for f := range n.fam {
		a := h.IP[f]
		switch {
		case a.IsValid() && n.unusable(a) != "":
			return notAdopted("it holds %s: %s; left alone", a, n.unusable(a))
		case !a.IsValid() && n.fam[f].prefix.IsValid():
			return notAdopted("it holds no %s address, and network %s has an %s subnet; left alone", familyName[f], n.key, familyName[f])
		case a.IsValid():
			words++
		}
	}
	if len(strings.Fields(hp.Addresses[0])) != words {
		return notAdopted("addresses %q hold more than a MAC and one address per family; left alone", hp.Addresses[0])
	}
	return true
}

// adoptOf is the vendor whose port s takes over in place, "" when none.
func (b *builder) adoptOf(s *portSpec) string {
	if s.adopting {
		return b.adopt
	}
	return ""
}

// adoptPort takes hp over for s: from here on the pass sees it as s's own
// port on s's switch, so its addresses are held (sticky) and count on that
// switch, and the port in Want says it adopts from hp's vendor. The
// caller's have is not changed: the first adoption of a pass copies it.
func (b *builder) adoptPort(s *portSpec, hp *state.Port) *state.Port {
	if !b.adopted {
		b.have = b.have.Clone()
		b.adopted = true
	}
	p := *hp
	p.Owner, p.Network, p.Switch = s.o.id, s.net.key, s.net.sw
	b.have.Ports.Set(s.name, &p)
	b.rowName, b.row = "", nil
	s.adopting = true
	return &p
}
