package addr

import (
	"github.com/ovn-sync/ovn-sync/state"

	"slices"

	"net/netip"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// LSP is the parsed form of an LSP's addresses: the first MAC and the first
// address of each family found.
type LSP struct {
	MAC MAC
	IP  [2]netip.Addr // indexed by family: netconf.IPv4, netconf.IPv6
}

// ParseLSP reads the first entry of an LSP's addresses column
// ("<mac> <ip> <ip>..."), which is the only one ovn-sync writes. Words that
// are not addresses (router, unknown, dynamic) are skipped; it never fails.
func ParseLSP(entries []string) LSP {
	var r LSP
	if len(entries) == 0 {
		return r
	}
	var words [8]string
	for _, w := range appendWords(words[:0], entries[0]) {
		r.add(w)
	}
	return r
}

func (r *LSP) add(w string) {
	m, a, ok := readWord(w)
	switch {
	case !ok:
	case m.Valid():
		if !r.MAC.Valid() {
			r.MAC = m
		}
	case !r.IP[netconf.FamilyOf(a)].IsValid():
		r.IP[netconf.FamilyOf(a)] = a
	}
}

// readWord reads one word of an addresses entry: a MAC (m) or an IP
// address (a, an IPv4-mapped one as IPv4); false for anything else
// ("dynamic", "router", "unknown").
func readWord(w string) (m MAC, a netip.Addr, ok bool) {
	if m, ok := ColonMAC(w); ok {
		return m, netip.Addr{}, true
	}
	a, err := netip.ParseAddr(w)
	return 0, a.Unmap(), err == nil
}

// appendWords appends the space-separated words of s.
func appendWords(ws []string, s string) []string {
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(ws, s)
		}
		if i > 0 {
			ws = append(ws, s[:i])
		}
		s = s[i+1:]
	}
	return ws
}

// EachHeld calls fn with the key of each address p holds: those its
// addresses column and its dynamic_addresses list, each once.
func EachHeld(p *state.Port, fn func(Key)) {
	var words [8]string
	list := words[:0]
	for _, e := range p.Addresses {
		list = appendWords(list, e)
	}
	list = appendWords(list, p.DynamicAddresses())
	for i, word := range list {
		if slices.Contains(list[:i], word) {
			continue // a port listing an address twice holds it once
		}
		if k, ok := WordKey(word); ok {
			fn(k)
		}
	}
}
