package addr

import (
	"cmp"
	"encoding/binary"
	"net/netip"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// Components of a port's address: its IPv4 address, its IPv6 address and
// its MAC. The first two are netconf's family indexes.
const (
	CompIPv4 = netconf.IPv4
	CompIPv6 = netconf.IPv6
	CompMAC  = 2
	NumComps = 3
)

// Key is an address as a comparable value: its component and its bits in
// two words (an IPv4 address or a MAC in Lo alone).
type Key struct {
	Comp   uint8
	Hi, Lo uint64
}

// IPKey returns the key of a.
func IPKey(a netip.Addr) Key {
	hi, lo := Words(a)
	return Key{uint8(netconf.FamilyOf(a)), hi, lo}
}

// MACKey returns the key of m.
func MACKey(m MAC) Key { return Key{CompMAC, 0, uint64(m)} }

// WordKey is the key of one word of an LSP addresses entry: a MAC or an
// IP; false for anything else ("dynamic", "router", "unknown").
func WordKey(word string) (Key, bool) {
	switch m, a, ok := readWord(word); {
	case !ok:
		return Key{}, false
	case m.Valid():
		return MACKey(m), true
	default:
		return IPKey(a), true
	}
}

// Addr returns the address k is the key of: an IP, or a MAC.
func (k Key) Addr() (netip.Addr, MAC) {
	if k.Comp == CompMAC {
		return netip.Addr{}, MAC(k.Lo)
	}
	return FromWords(k.Comp == CompIPv4, k.Hi, k.Lo), 0
}

// Words returns an address as two words: IPv4 in lo only.
func Words(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		b := a.As4()
		return 0, uint64(binary.BigEndian.Uint32(b[:]))
	}
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// FromWords is the inverse of Words.
func FromWords(is4 bool, hi, lo uint64) netip.Addr {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b)
}

// Compare orders keys by component, then address.
func (k Key) Compare(o Key) int {
	return cmp.Or(cmp.Compare(k.Comp, o.Comp), cmp.Compare(k.Hi, o.Hi), cmp.Compare(k.Lo, o.Lo))
}
