package netconf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// The indexes of the two families in every per-family array.
const (
	IPv4 = 0
	IPv6 = 1
)

// FamilyName names each family in messages.
var FamilyName = [2]string{"IPv4", "IPv6"}

// FamilyOf returns the index of a's family.
func FamilyOf(a netip.Addr) int {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// IPRange is an inclusive range of addresses of one family. A single address
// has From == To.
type IPRange struct {
	From, To netip.Addr
}

var errNotIPAddress = errors.New("not an IP address")

// ParseIP parses one address, unmapping IPv4-mapped IPv6 and refusing
// zones. Its error says "not an IP address", whatever s is: callers name
// the value.
func ParseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errNotIPAddress
	}
	return a.Unmap(), nil
}

// ParseIPRange parses "a" or "a..b", kube-ovn's inclusive range.
func ParseIPRange(s string) (IPRange, error) {
	from, to, isRange := strings.Cut(strings.TrimSpace(s), "..")
	a, err := ParseIP(from)
	if !isRange {
		return IPRange{From: a, To: a}, err
	}
	if err != nil {
		return IPRange{}, fmt.Errorf("%q: %w", from, err)
	}
	b, err := ParseIP(to)
	if err != nil {
		return IPRange{}, fmt.Errorf("%q: %w", to, err)
	}
	if a.Is4() != b.Is4() {
		return IPRange{}, fmt.Errorf("range mixes IPv4 and IPv6")
	}
	if b.Less(a) {
		return IPRange{}, fmt.Errorf("range ends before it starts")
	}
	return IPRange{From: a, To: b}, nil
}

// prefixRange is the inclusive range of addresses in p.
func prefixRange(p netip.Prefix) IPRange {
	return IPRange{From: p.Masked().Addr(), To: lastAddr(p)}
}

// parseExclude reads a CIDR, a single address or a range "a..b".
func parseExclude(s string) (IPRange, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return IPRange{}, err
		}
		return prefixRange(p), nil
	}
	return ParseIPRange(s)
}

// ParseSubnets reads a list of CIDRs, at most one IPv4 and one IPv6, with
// host bits cleared ("10.16.0.5/16" is 10.16.0.0/16). Empty entries are
// skipped; an empty list is not an error here. Errors name the entry.
func ParseSubnets(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var have [2]bool
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return nil, fmt.Errorf("%q: not a CIDR", s)
		}
		p = p.Masked()
		f := FamilyOf(p.Addr())
		if have[f] {
			return nil, fmt.Errorf("%q: more than one %s subnet", s, FamilyName[f])
		}
		have[f] = true
		out = append(out, p)
	}
	return out, nil
}

// ParseGateways reads gateway addresses, at most one per family, each a
// usable address of the subnet of its family. Errors name the entry.
func ParseGateways(list []string, subnets []netip.Prefix) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		a, err := ParseIP(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		i := slices.IndexFunc(subnets, func(p netip.Prefix) bool { return p.Contains(a) })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%q: not in a subnet of the network", s)
		case Reserved(subnets[i], a) != "":
			return nil, fmt.Errorf("%q: %s", s, Reserved(subnets[i], a))
		case slices.ContainsFunc(out, func(b netip.Addr) bool { return b.Is4() == a.Is4() }):
			return nil, fmt.Errorf("%q: more than one %s gateway", s, FamilyName[FamilyOf(a)])
		}
		out = append(out, a)
	}
	return out, nil
}

// Usable returns the first and last address IPAM may hand out in p: IPv4
// skips the network and broadcast addresses (except in /31 and /32), IPv6
// skips the subnet-router anycast address (except in /127 and /128).
func Usable(p netip.Prefix) (first, last netip.Addr) {
	first = p.Masked().Addr()
	last = lastAddr(p)
	hostBits := first.BitLen() - p.Bits()
	if first.Is4() && hostBits >= 2 {
		return first.Next(), last.Prev()
	}
	if first.Is6() && hostBits >= 2 {
		return first.Next(), last
	}
	return first, last
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if a.Is4() {
		b := a.As4()
		v := binary.BigEndian.Uint32(b[:]) | (^uint32(0) >> uint(p.Bits()))
		if p.Bits() == 0 {
			v = ^uint32(0)
		}
		binary.BigEndian.PutUint32(b[:], v)
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	switch bits := p.Bits(); {
	case bits == 0:
		hi, lo = ^uint64(0), ^uint64(0)
	case bits < 64:
		hi |= ^uint64(0) >> uint(bits)
		lo = ^uint64(0)
	case bits < 128:
		lo |= ^uint64(0) >> uint(bits-64)
	}
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b)
}

// Reserved explains why a in p can never be a port's address, or returns
// "": it is before or after the range Usable returns.
func Reserved(p netip.Prefix, a netip.Addr) string {
	first, last := Usable(p)
	switch {
	case a.Less(first):
		return "is the network address of " + p.String()
	case last.Less(a):
		return "is the broadcast address of " + p.String()
	}
	return ""
}
