package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/ipam"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
	corev1 "k8s.io/api/core/v1"
)

// kube-ovn's ip_pool annotation: <provider>.kubernetes.io/ip_pool lists
// addresses for the pods of a workload, one entry each. Entries are
// separated by "," ("10.16.0.20,10.16.0.21"), or by ";" when an entry is
// dual-stack ("10.16.0.20,fd00::20;10.16.0.21,fd00::21"); two addresses of
// different families with "," are one dual-stack entry, as kube-ovn reads
// them. A StatefulSet's pod takes the entry at its ordinal; any other owner
// takes the first entry no other port holds or asks for (see pickPools).
// A single name that is not an address names a kube-ovn IPPool object,
// which ovn-sync does not read: a Problem.

// pool reads an ip_pool annotation into the request.
func (r *reqReader) pool(src, raw string) bool {
	var parts []string
	if strings.Contains(raw, ";") {
		parts = strings.Split(raw, ";")
	} else {
		parts = strings.Split(raw, ",")
		if len(parts) == 2 {
			a, errA := netconf.ParseIP(parts[0])
			b, errB := netconf.ParseIP(parts[1])
			if errA == nil && errB == nil && a.Is4() != b.Is4() {
				parts = []string{raw}
			}
		}
	}
	if len(parts) == 1 && !strings.Contains(parts[0], ",") {
		if _, err := netconf.ParseIP(parts[0]); err != nil {
			return r.bad(src, raw, "names an IPPool object, which ovn-sync does not read: list the addresses instead")
		}
	}
	var pool [][2]netip.Addr
	for _, part := range parts {
		var e [2]netip.Addr
		for _, v := range strings.Split(part, ",") {
			v = strings.TrimSpace(v)
			a, err := netconf.ParseIP(v)
			if err != nil {
				return r.bad(src, strings.TrimSpace(part), err.Error())
			}
			f := familyOf(a)
			switch why := r.refused(a); {
			case why != "":
				return r.bad(src, v, why)
			case e[f].IsValid():
				return r.bad(src, strings.TrimSpace(part), "more than one "+familyName[f]+" address in one entry")
			}
			e[f] = a
		}
		pool = append(pool, e)
	}
	if ord := int(r.s.o.ordinal); ord >= 0 {
		// kube-ovn: a StatefulSet's pod takes the entry at its ordinal.
		if ord >= len(pool) {
			return r.bad(src, raw, fmt.Sprintf("has %d entries; StatefulSet pod ordinal %d has none", len(pool), ord))
		}
		q := r.out()
		q.ip, q.ipSrc, r.ipFrom = pool[ord], src+"["+strconv.Itoa(ord)+"]", raw
		return true
	}
	q := r.out()
	q.pool = &ipPool{pool, src}
	return true
}

// statefulSetOrdinal returns the ordinal of a StatefulSet's pod: the number
// after the last "-" of a pod a StatefulSet owns.
func statefulSetOrdinal(p *corev1.Pod) (int, bool) {
	if p == nil {
		return 0, false
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind != state.KindStatefulSet || !strings.HasPrefix(ref.APIVersion, "apps/") || !strings.HasPrefix(p.Name, ref.Name+"-") {
			continue
		}
		return parseOrdinal(p.Name[len(ref.Name)+1:])
	}
	return 0, false
}

// parseOrdinal reads a StatefulSet ordinal: decimal digits only.
func parseOrdinal(s string) (int, bool) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// pickPools gives every port whose request is an ip_pool one entry of it,
// oldest owner first: the entry the port holds, else the one recorded, else
// the first entry none of whose addresses another row holds (m: ours on
// its switch, or one not ours) or another port asks for by request or
// record. With none left, the port fails with a Problem and keeps what it
// has.
func (b *builder) pickPools(m *table) {
	var ps []*portSpec
	for _, s := range b.specs {
		if s.state == specBuild && s.req.pool != nil {
			ps = append(ps, s)
		}
	}
	if len(ps) == 0 {
		return
	}
	slices.SortFunc(ps, comparePriority)
	keys := map[addr.Key]bool{}
	for _, s := range ps {
		for _, e := range s.req.pool.entries {
			for _, a := range e {
				if a.IsValid() {
					keys[addr.IPKey(a)] = true
				}
			}
		}
	}
	taken := m.HeldAmong(keys)
	// What the Build's ports ask for is taken on their switches too.
	for _, s := range b.specs {
		if s.state != specBuild {
			continue
		}
		for _, r := range []*requested{s.req, s.rec} {
			for _, a := range r.ip {
				if a.IsValid() {
					taken[ipam.Held{Key: addr.IPKey(a), Sw: s.net.swID}] = true
				}
			}
		}
	}
	free := func(s *portSpec, e [2]netip.Addr, mine addr.LSP) bool {
		for f, a := range e {
			if !a.IsValid() || mine.IP[f] == a {
				continue
			}
			k := addr.IPKey(a)
			if taken[ipam.Held{Key: k, Sw: s.net.swID}] || taken[ipam.Held{Key: k}] {
				return false
			}
		}
		return true
	}
	for _, s := range ps {
		var mine addr.LSP
		if hp := b.ownedHave(s.o, s.name); hp != nil {
			mine = addr.ParseLSP(hp.Addresses)
		}
		pick := -1
		for i, e := range s.req.pool.entries {
			if matches(e, mine.IP) || matches(e, s.rec.ip) {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = slices.IndexFunc(s.req.pool.entries, func(e [2]netip.Addr) bool { return free(s, e, mine) })
		}
		if pick < 0 {
			b.ownerProblem(s.o, "AddressConflict", fmt.Sprintf("%s: every entry is held or asked for by another port", s.req.pool.src))
			s.state = specFailed
			continue
		}
		e := s.req.pool.entries[pick]
		q := *s.req
		q.pool = nil
		q.ip, q.ipSrc = e, s.req.pool.src+"["+strconv.Itoa(pick)+"]"
		s.req = &q
		for _, a := range e {
			if a.IsValid() {
				taken[ipam.Held{Key: addr.IPKey(a), Sw: s.net.swID}] = true
			}
		}
	}
}

// matches reports whether an ip_pool entry is the addresses held: every
// address it names, and at least one.
func matches(e, held [2]netip.Addr) bool {
	some := false
	for f, a := range e {
		if a.IsValid() {
			if held[f] != a {
				return false
			}
			some = true
		}
	}
	return some
}
