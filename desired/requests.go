package desired

import (
	"fmt"
	"net/netip"
	"strings"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// readRunning sets, for a VM whose VMI runs, s.req to the requests of the
// VMI's attachment that matches at (none if the VMI has no such network)
// and s.tmpl to the template's.
func (b *builder) readRunning(s *portSpec, at *attachment) {
	s.tmpl = s.req
	s.req = &noRequest
	kv := s.o.vm()
	for i := range kv.running {
		r := &kv.running[i]
		if r.isDefault == at.isDefault && r.ref == at.ref && r.iface == at.iface {
			n := len(b.problems)
			if !b.readRequests(s, r, kv.runningAnn, s.provider, &s.req) {
				s.req = &noRequest
			}
			b.dropProblems(n)
			return
		}
	}
}

// readRequests fills *dst with the addresses requested for s from the
// kube-ovn annotations for provider and from at. It reports false, after
// recording a Problem, when a request is invalid.
func (b *builder) readRequests(s *portSpec, at *attachment, ann map[string]string, provider string, dst **requested) bool {
	var ipKey, macKey string
	granted := false
	if len(ann) > 0 {
		keys := b.keysOf(provider)
		ipKey, macKey = keys.ip, keys.mac
		granted = ann[keys.allocated] == "true"
	}
	r := reqReader{b: b, s: s, dst: dst, granted: granted}
	var buf [2]string
	if v := strings.TrimSpace(ann[ipKey]); ipKey != "" && v != "" {
		if !r.ip(ipKey, v, splitList(buf[:0], v)) {
			return false
		}
	}
	if at.reqIface != "" && len(ann) > 0 {
		k := at.ref.name + "." + at.ref.ns + AnnIPSuffix + "." + at.reqIface
		if v := strings.TrimSpace(ann[k]); v != "" && !r.ip(k, v, splitList(buf[:0], v)) {
			return false
		}
	}
	for _, q := range at.ips {
		vals := make([]string, len(q.values))
		for i, x := range q.values {
			// Multus "ips" are usually CIDRs; only the address matters here.
			x, _, _ = strings.Cut(x, "/")
			vals[i] = x
		}
		if !r.ip(q.src, strings.Join(q.values, ","), vals) {
			return false
		}
	}
	if v := strings.TrimSpace(ann[macKey]); macKey != "" && v != "" {
		if !r.mac(macKey, v) {
			return false
		}
	}
	if at.reqIface != "" && len(ann) > 0 {
		k := at.ref.name + "." + at.ref.ns + AnnMACSuffix + "." + at.reqIface
		if v := strings.TrimSpace(ann[k]); v != "" && !r.mac(k, v) {
			return false
		}
	}
	for _, q := range at.macs {
		if !r.mac(q.src, q.values[0]) {
			return false
		}
	}
	if len(ann) > 0 && r.ipFrom == "" {
		if v := strings.TrimSpace(providerAnnotation(ann, provider, AnnIPPoolSuffix)); v != "" {
			return r.pool(provider+AnnIPPoolSuffix, v)
		}
	}
	return true
}

// reqReader validates the requests of one port and merges them: requests
// from several places must agree.
type reqReader struct {
	b   *builder
	s   *portSpec
	dst **requested
	// granted is set when the kube-ovn "allocated" annotation says the
	// addresses were given out before (by kube-ovn or by ovn-sync).
	granted         bool
	ipFrom, macFrom string // the value of the first request, for messages
}

func (r *reqReader) bad(src, value, why string) bool {
	r.b.ownerProblem(r.s.o, "InvalidAddressRequest", fmt.Sprintf("%s %q: %s", src, value, why))
	return false
}

func (r *reqReader) out() *requested {
	if *r.dst == &noRequest {
		*r.dst = &requested{granted: r.granted}
	}
	return *r.dst
}

// ip validates one IP request against the port's network. An excluded
// address is refused unless it was granted before (the port holds it, or
// the allocated annotation says so): a guest keeps what it has.
func (r *reqReader) ip(src, raw string, vals []string) bool {
	var got [2]netip.Addr
	for _, v := range vals {
		v = strings.TrimSpace(v)
		a, err := netconf.ParseIP(v)
		if err != nil {
			if v == "" {
				v = raw
			}
			return r.bad(src, v, err.Error())
		}
		f := familyOf(a)
		switch why := r.refused(a); {
		case why != "":
			return r.bad(src, v, why)
		case got[f].IsValid():
			return r.bad(src, raw, "more than one "+familyName[f]+" address")
		}
		got[f] = a
	}
	if !got[ipv4].IsValid() && !got[ipv6].IsValid() {
		return true
	}
	if r.ipFrom != "" {
		if got != (*r.dst).ip {
			return r.bad(src, raw, fmt.Sprintf("conflicts with %s %q", (*r.dst).ipSrc, r.ipFrom))
		}
		return true
	}
	q := r.out()
	q.ip, q.ipSrc, r.ipFrom = got, src, raw
	return true
}

// refused says why a cannot be granted to this port, or "": it can never
// be a port's address on the network, or it is excluded and was not
// granted before (the port holds it, or the allocated annotation says so).
func (r *reqReader) refused(a netip.Addr) string {
	n := r.s.net
	if why := n.unusable(a); why != "" {
		return why
	}
	if why := n.fam[familyOf(a)].reservedByOVN(a, n.key); why != "" && !r.granted && !r.b.holds(r.s, a) {
		return why
	}
	return ""
}

func (r *reqReader) mac(src, v string) bool {
	m, err := addr.ParseMAC(v)
	if err != nil {
		return r.bad(src, v, err.Error())
	}
	if r.macFrom != "" {
		if m != (*r.dst).mac {
			return r.bad(src, v, fmt.Sprintf("conflicts with %s %q", (*r.dst).macSrc, r.macFrom))
		}
		return true
	}
	q := r.out()
	q.mac, q.macSrc, r.macFrom = m, src, v
	return true
}

// holds reports whether s's port in have holds a.
func (b *builder) holds(s *portSpec, a netip.Addr) bool {
	hp := b.ownedHave(s.o, s.name)
	return hp != nil && addr.ParseLSP(hp.Addresses).IP[familyOf(a)] == a
}

// readRecords reads what s's owner was recorded to hold on s's network:
// the kube-ovn annotations (ip_address, mac_address) for s's provider on
// the owner's live virt-launcher pods, oldest first, then on the VM itself,
// then kube-ovn's IP object named after the port (for any owner, plain
// pods too). The first object with a value wins, per kind of value. A record that
// cannot be an address on the network is a Problem on its object, and
// ignored.
func (b *builder) readRecords(s *portSpec) {
	obj := s.o.vm()
	var r requested
	launcher := func(p *launcher) {
		b.readRecord(s, &r, kindPod, p.Namespace, p.Name, func(suffix string) string {
			return providerAnnotationOf(p.Annotations, s.provider, suffix)
		})
	}
	if obj.vm == nil && obj.launchers.one == nil {
		// A plain pod: its annotations are requests.
	} else if obj.launchers.more == nil {
		if p := obj.launchers.one; p != nil && p.running {
			launcher(p)
		}
	} else {
		for _, p := range sortedLaunchers(obj.launchers) {
			if p.running {
				launcher(p)
			}
		}
	}
	if vm := obj.vm; vm != nil {
		b.readRecord(s, &r, kindVirtualMachine, vm.Namespace, vm.Name, func(suffix string) string {
			v, _ := vm.Annotations.Get(s.provider + suffix)
			return v
		})
	}
	if ip := b.ipObject(s.name); ip != nil {
		b.readIPRecord(s, &r, ip)
	}
	if r.ipSrc != "" || r.macSrc != "" {
		q := r
		s.rec = &q
	}
}

// readRecord reads one object's record of s's addresses into r, where r
// has none yet; ann is the object's annotation of s's provider and a
// suffix.
func (b *builder) readRecord(s *portSpec, r *requested, kind, ns, name string, ann func(suffix string) string) {
	keys := b.keysOf(s.provider)
	if v := strings.TrimSpace(ann(AnnIPSuffix)); v != "" && r.ipSrc == "" {
		key := keys.ip
		var buf [2]string
		got, why := recordIPs(s.net, splitList(buf[:0], v))
		if why != "" {
			b.problemFor(s.o, kind, ns, name, "InvalidRecord", fmt.Sprintf("%s %q: %s; ignored", key, v, why))
		} else if got[ipv4].IsValid() || got[ipv6].IsValid() {
			r.ip, r.ipSrc = got, recordSource(kind, ns, name, key)
		}
	}
	if v := strings.TrimSpace(ann(AnnMACSuffix)); v != "" && r.macSrc == "" {
		key := keys.mac
		m, err := addr.ParseMAC(v)
		if err != nil {
			b.problemFor(s.o, kind, ns, name, "InvalidRecord", fmt.Sprintf("%s %q: %v; ignored", key, v, err))
			return
		}
		r.mac, r.macSrc = m, recordSource(kind, ns, name, key)
	}
}

// recordIPs reads the addresses a record lists for network n, at most one
// per family; why says what is wrong with them, if anything.
func recordIPs(n *network, vals []string) (got [2]netip.Addr, why string) {
	for _, w := range vals {
		a, err := netconf.ParseIP(w)
		switch {
		case err != nil:
			why = err.Error()
		case n.unusable(a) != "":
			why = n.unusable(a)
		case got[familyOf(a)].IsValid():
			why = "more than one " + familyName[familyOf(a)] + " address"
		}
		if why != "" {
			return [2]netip.Addr{}, why
		}
		got[familyOf(a)] = a
	}
	return got, ""
}

// readIPRecord reads kube-ovn's IP object of s's port into r, where r has
// no value yet: v4IpAddress and v6IpAddress (else ipAddress) and
// macAddress. An IP object that names another owner, or another switch,
// is not s's record: a Problem on the IP, and ignored.
func (b *builder) readIPRecord(s *portSpec, r *requested, ip *kubeovnv1.IP) {
	o, sp := s.o, &ip.Spec
	b.kubeOVNStaleIPObject(s, ip)
	bad := func(format string, args ...any) {
		b.problemFor(o, state.KindIP, "", ip.Name, "InvalidRecord", fmt.Sprintf(format, args...)+"; ignored")
	}
	if sp.PodName != o.name || sp.Namespace != o.ns {
		bad("spec.podName %q and spec.namespace %q do not name %s, the owner of port %q", sp.PodName, sp.Namespace, o.id, s.name)
		return
	}
	if sp.Subnet != "" && sp.Subnet != s.net.sw {
		bad("spec.subnet %q: port %q is on switch %q", sp.Subnet, s.name, s.net.sw)
		return
	}
	if r.ipSrc == "" {
		var fields []string
		if strings.TrimSpace(sp.V4IPAddress) != "" {
			fields = append(fields, "spec.v4IpAddress")
		}
		if strings.TrimSpace(sp.V6IPAddress) != "" {
			fields = append(fields, "spec.v6IpAddress")
		}
		field, vals := strings.Join(fields, ","), nonEmpty(sp.V4IPAddress, sp.V6IPAddress)
		if len(vals) == 0 && strings.TrimSpace(sp.IPAddress) != "" {
			field, vals = "spec.ipAddress", strings.Split(sp.IPAddress, ",")
		}
		got, why := recordIPs(s.net, vals)
		switch {
		case why != "":
			bad("%s %q: %s", field, strings.Join(vals, ","), why)
		case got[ipv4].IsValid() || got[ipv6].IsValid():
			r.ip, r.ipSrc = got, state.KindIP+" "+ip.Name+" "+field
		}
	}
	if v := strings.TrimSpace(sp.MacAddress); v != "" && r.macSrc == "" {
		m, err := addr.ParseMAC(v)
		if err != nil {
			bad("spec.macAddress %q: %v", v, err)
			return
		}
		r.mac, r.macSrc = m, state.KindIP+" "+ip.Name+" spec.macAddress"
	}
}

// annKeys are the kube-ovn annotation keys of one provider that a Build
// reads for every port, made once a Build (keysOf).
type annKeys struct{ ip, mac, allocated string }

// keysOf returns provider's annKeys.
func (b *builder) keysOf(provider string) *annKeys {
	k := b.annKeys[provider]
	if k == nil {
		if b.annKeys == nil {
			b.annKeys = map[string]*annKeys{}
		}
		k = &annKeys{provider + AnnIPSuffix, provider + AnnMACSuffix, provider + AnnAllocatedSuffix}
		b.annKeys[provider] = k
	}
	return k
}

// splitList appends to dst the comma-separated parts of v, as
// strings.Split would return them.
func splitList(dst []string, v string) []string {
	for part := range strings.SplitSeq(v, ",") {
		dst = append(dst, part)
	}
	return dst
}

func nonEmpty(vals ...string) []string {
	var out []string
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// providerAnnotation returns ann[provider+suffix] without building the
// key: objects carry few annotations, and most have none for provider.
func providerAnnotation(ann map[string]string, provider, suffix string) string {
	if len(ann) > 16 {
		return ann[provider+suffix]
	}
	for k, v := range ann {
		if isProviderKey(k, provider, suffix) {
			return v
		}
	}
	return ""
}

// providerAnnotationOf is providerAnnotation over Annotations.
func providerAnnotationOf(a Annotations, provider, suffix string) string {
	if a.keys == nil {
		return ""
	}
	for i, k := range *a.keys {
		if isProviderKey(k, provider, suffix) {
			return a.value(i)
		}
	}
	return ""
}

// isProviderKey reports whether k is provider+suffix, without building it.
func isProviderKey(k, provider, suffix string) bool {
	return len(k) == len(provider)+len(suffix) && strings.HasPrefix(k, provider) && strings.HasSuffix(k, suffix)
}

func recordSource(kind, ns, name, key string) string {
	return kind + " " + ns + "/" + name + " " + key
}
