package desired

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// mac is a 48-bit Ethernet address in the low bits of a uint64, so it can be
// a cheap map key. The zero value means "none".
type mac uint64

func (m mac) valid() bool { return m != 0 }

// appendTo appends m in OVN's canonical form, lower-case and colon-separated.
func (m mac) appendTo(b []byte) []byte {
	const hex = "0123456789abcdef"
	for i := 5; i >= 0; i-- {
		v := byte(m >> (uint(i) * 8))
		b = append(b, hex[v>>4], hex[v&0xf])
		if i > 0 {
			b = append(b, ':')
		}
	}
	return b
}

func (m mac) String() string { return string(m.appendTo(make([]byte, 0, 17))) }

var (
	errNotMAC     = errors.New("not a MAC address")
	errNotUnicast = errors.New("not a unicast MAC address")
	errZeroMAC    = errors.New("the all-zero MAC address is not usable")
)

// parseMAC accepts the forms net.ParseMAC does (de:ad:00:00:be:af,
// DE-AD-00-00-BE-AF, dead.0000.beaf) for 48-bit addresses only, and refuses
// multicast addresses, which can never be a port's own.
func parseMAC(s string) (mac, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return 0, errNotMAC
	}
	if hw[0]&1 != 0 {
		return 0, errNotUnicast
	}
	var b [8]byte
	copy(b[2:], hw)
	m := mac(binary.BigEndian.Uint64(b[:]))
	if m == 0 {
		return 0, errZeroMAC
	}
	return m, nil
}

// macFromIPv4 is the MAC ovn-kubernetes and kube-ovn derive from an IPv4
// address: 0a:58 followed by its four bytes. 0a has the locally administered
// bit set and the multicast bit clear.
func macFromIPv4(a netip.Addr) mac {
	b := a.As4()
	return mac(0x0a58)<<32 | mac(binary.BigEndian.Uint32(b[:]))
}

// macFromName hashes an LSP name (FNV-1a) into 0a:58:xx:xx:xx:xx. attempt > 0
// picks another address when the first is taken; the sequence is the same on
// every pass, so the result is stable.
func macFromName(name string, attempt int) mac {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime
	}
	for ; attempt > 0; attempt-- {
		h ^= '#'
		h *= prime
	}
	// Fold the high bits in so every input byte reaches the four kept bytes.
	v := uint32(h) ^ uint32(h>>32)
	return mac(0x0a58)<<32 | mac(v)
}

// lsp is the parsed form of an LSP's addresses: the first MAC and the first
// address of each family found.
type lsp struct {
	mac mac
	ip  [2]netip.Addr // indexed by ipv4, ipv6
}

// parseLSPAddresses reads the first entry of an LSP's addresses column
// ("<mac> <ip> <ip>..."), which is the only one ovn-sync writes. Words that
// are not addresses (router, unknown, dynamic) are skipped; it never fails.
func parseLSPAddresses(entries []string) lsp {
	var r lsp
	if len(entries) == 0 {
		return r
	}
	eachWord(entries[0], func(w string) {
		r.add(w)
	})
	return r
}

// colonMAC parses the 17-character colon form OVN writes, in either case.
func colonMAC(w string) (mac, bool) {
	if len(w) != 17 {
		return 0, false
	}
	var m mac
	for i := 0; i < 17; i += 3 {
		if i > 0 && w[i-1] != ':' {
			return 0, false
		}
		hi, ok1 := unhex(w[i])
		lo, ok2 := unhex(w[i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		m = m<<8 | mac(hi<<4|lo)
	}
	return m, m != 0
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (r *lsp) add(w string) {
	if m, ok := colonMAC(w); ok {
		if !r.mac.valid() {
			r.mac = m
		}
		return
	}
	a, err := netip.ParseAddr(w)
	if err != nil {
		return
	}
	a = a.Unmap()
	if f := familyOf(a); !r.ip[f].IsValid() {
		r.ip[f] = a
	}
}

// eachWord calls f for each space-separated word of s without allocating.
func eachWord(s string, f func(string)) {
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			f(s)
			return
		}
		if i > 0 {
			f(s[:i])
		}
		s = s[i+1:]
	}
}
