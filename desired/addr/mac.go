package addr

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// MAC is a 48-bit Ethernet address in the low bits of a uint64, so it can be
// a cheap map key. The zero value means "none".
type MAC uint64

// Valid reports whether m is a MAC, not the zero value.
func (m MAC) Valid() bool { return m != 0 }

// AppendTo appends m in OVN's canonical form, lower-case and colon-separated.
func (m MAC) AppendTo(b []byte) []byte {
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

// String returns m as AppendTo writes it.
func (m MAC) String() string { return string(m.AppendTo(make([]byte, 0, 17))) }

// ParseMAC's errors.
var (
	ErrNotMAC     = errors.New("not a MAC address")
	ErrNotUnicast = errors.New("not a unicast MAC address")
	ErrZeroMAC    = errors.New("the all-zero MAC address is not usable")
)

// ParseMAC accepts the forms net.ParseMAC does (de:ad:00:00:be:af,
// DE-AD-00-00-BE-AF, dead.0000.beaf) for 48-bit addresses only, and refuses
// multicast addresses, which can never be a port's own.
func ParseMAC(s string) (MAC, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return 0, ErrNotMAC
	}
	if hw[0]&1 != 0 {
		return 0, ErrNotUnicast
	}
	var b [8]byte
	copy(b[2:], hw)
	m := MAC(binary.BigEndian.Uint64(b[:]))
	if m == 0 {
		return 0, ErrZeroMAC
	}
	return m, nil
}

// FromIPv4 is the MAC ovn-kubernetes and kube-ovn derive from an IPv4
// address: 0a:58 followed by its four bytes. 0a has the locally administered
// bit set and the multicast bit clear.
func FromIPv4(a netip.Addr) MAC {
	b := a.As4()
	return MAC(0x0a58)<<32 | MAC(binary.BigEndian.Uint32(b[:]))
}

// FromName hashes an LSP name (FNV-1a) into 0a:58:xx:xx:xx:xx. attempt > 0
// picks another address when the first is taken; the sequence is the same on
// every pass, so the result is stable.
func FromName(name string, attempt int) MAC {
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
	return MAC(0x0a58)<<32 | MAC(v)
}

// ColonMAC parses the 17-character colon form OVN writes, in either case.
func ColonMAC(w string) (MAC, bool) {
	if len(w) != 17 {
		return 0, false
	}
	var m MAC
	for i := 0; i < 17; i += 3 {
		if i > 0 && w[i-1] != ':' {
			return 0, false
		}
		hi, ok1 := unhex(w[i])
		lo, ok2 := unhex(w[i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		m = m<<8 | MAC(hi<<4|lo)
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
