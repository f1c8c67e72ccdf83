package addr

import (
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
	if m, ok := ColonMAC(w); ok {
		if !r.MAC.Valid() {
			r.MAC = m
		}
		return
	}
	a, err := netip.ParseAddr(w)
	if err != nil {
		return
	}
	a = a.Unmap()
	if f := netconf.FamilyOf(a); !r.IP[f].IsValid() {
		r.IP[f] = a
	}
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
