package state

import (
	"maps"
	"reflect"
	"slices"
)

// Keys in external_ids and options that ovn-sync owns. Every other key on a
// row belongs to someone else and is never written or removed.
const (
	// KeyOwner marks a row as ovn-sync's. Its value is "<Kind>/<namespace>/<name>"
	// on ports and "NetworkAttachmentDefinition/<ns>/<name>" or "ovn-sync" on
	// switches. Rows without it are never modified or deleted.
	KeyOwner = "ovn-sync/owner"
	// KeyNetwork names the network a port or switch serves: "default" or "<nadns>/<nad>".
	KeyNetwork = "ovn-sync/network"
	// KeySwitch records on a port the switch ovn-sync placed it on, so that a port can
	// be moved when its network's switch changes without monitoring Logical_Switch.ports.
	KeySwitch = "ovn-sync/switch"

	// OptRequestedChassis is the LSP option naming the chassis the port may bind on
	// ("node" or, during live migration, "src,dst").
	OptRequestedChassis = "requested-chassis"
	// OptActivationStrategy is the LSP option set to "rarp" while a port is bound to
	// two chassis, so the destination activates on the first RARP the VM sends.
	OptActivationStrategy = "activation-strategy"

	// SwitchSubnet, SwitchIPv6Prefix and SwitchExcludeIPs are the
	// Logical_Switch other_config keys ovn-sync sets on the switches it
	// creates: northd's IPAM reads them for other tools' "dynamic" ports.
	SwitchSubnet     = "subnet"
	SwitchIPv6Prefix = "ipv6_prefix"
	SwitchExcludeIPs = "exclude_ips"

	// KeyDHCP names a DHCP_Options row ovn-sync created:
	// "<switch>/ipv4" or "<switch>/ipv6", one row per subnet and family.
	// A port's dhcpv4_options and dhcpv6_options name such a row by it.
	KeyDHCP = "ovn-sync/dhcp"

	// DefaultNetwork is the KeyNetwork value of the cluster's default network.
	DefaultNetwork = "default"

	// KeyVendor and KeyVendorSwitch are the external_ids keys kube-ovn writes
	// on the ports it creates: "vendor" = "kube-ovn", and "ls" = the switch
	// it put the port on. ovn-sync reads them, to adopt such a port, and
	// never writes them.
	KeyVendor       = "vendor"
	KeyVendorSwitch = "ls"
	// VendorKubeOVN is KeyVendor's value on kube-ovn's ports.
	VendorKubeOVN = "kube-ovn"
)

// Switch is a Logical_Switch, reduced to the columns ovn-sync reads.
type Switch struct {
	Name string
	// UUID is set on observed switches only.
	UUID string
	// Owner is external_ids:ovn-sync/owner; empty when the switch is not ours.
	Owner string
	// Network is external_ids:ovn-sync/network.
	Network string
	// Subnet and IPv6Prefix are other_config:subnet and other_config:ipv6_prefix.
	Subnet     string
	IPv6Prefix string
	// ExcludeIPs is other_config:exclude_ips: the IPv4 addresses of Subnet
	// northd must not hand out, in its syntax ("10.16.0.1 10.16.0.8..10.16.0.15").
	ExcludeIPs string
}

// Owned reports whether ovn-sync created the switch.
func (s *Switch) Owned() bool { return s.Owner != "" }

// Equal reports whether s and o have the same name and agree on every field
// of Fields that switches have. UUIDs are not compared.
func (s *Switch) Equal(o *Switch) bool {
	if s.Name != o.Name {
		return false
	}
	for i := range Fields {
		if f := &Fields[i]; f.SwitchKey != nil && *f.SwitchKey(s) != *f.SwitchKey(o) {
			return false
		}
	}
	return true
}

// Port is a Logical_Switch_Port, reduced to the columns ovn-sync reads. The
// keys of options and external_ids that ovn-sync owns are fields of their own;
// other keys are not represented and so can never be touched.
type Port struct {
	Name string
	// UUID is set on observed ports, and on a desired port that is its
	// observed row itself (desired shares a row that is what it wants);
	// diff and apply read it from observed ports alone.
	UUID string
	// Switch is the logical switch the port lives on. Desired ports always carry
	// it; observed ports carry it from external_ids:ovn-sync/switch, so it is
	// empty for ports that are not ours.
	Switch string

	// Addresses and PortSecurity are the LSP columns of the same name. ovn-sync
	// writes one entry, "<mac> <ipv4> <ipv6>", to both.
	Addresses    []string
	PortSecurity []string

	// Owner is external_ids:ovn-sync/owner ("<Kind>/<namespace>/<name>");
	// empty when the port is not ours.
	Owner string
	// Network is external_ids:ovn-sync/network.
	Network string

	// RequestedChassis is options:requested-chassis; empty means unset.
	RequestedChassis string

	// rare holds the fields most ports leave empty (see Rare), nil when
	// every one of them is. A port never changes the Rare it holds:
	// SetRare gives it another. So ports may share one, and a copy of a
	// Port is a port of its own.
	rare *Rare
}

// Rare is the part of a Port that most ports leave empty. It is held apart,
// behind one pointer, so that a port without any of it takes 160 bytes,
// not 256.
type Rare struct {
	// DynamicAddresses is the column OVN fills for ports with "dynamic"
	// addresses; observed only, read so IPAM never hands out such an address.
	DynamicAddresses string

	// ActivationStrategy is options:activation-strategy; empty means unset.
	ActivationStrategy string

	// DHCPv4 and DHCPv6 are the dhcpv4_options and dhcpv6_options
	// columns, references to a DHCP_Options row, held as the row's name
	// (its external_ids:ovn-sync/dhcp) when the row is ours, and as the
	// row's UUID when it is not; empty means unset.
	DHCPv4, DHCPv6 string

	// Vendor and VendorSwitch are external_ids:vendor and external_ids:ls,
	// which kube-ovn writes on its ports; observed only, and never compared:
	// they are someone else's keys, read to adopt a port kube-ovn made.
	Vendor, VendorSwitch string
	// Adopt is set on a desired port that takes over, in place, the row of
	// its name that Vendor Adopt made (a port that is not ovn-sync's, whose
	// external_ids:vendor is Adopt): diff updates that row, keeping its UUID
	// and every key that is not ours, rather than report a name collision.
	// Desired only, and never compared.
	Adopt string
}

// noRare is what a port without a Rare of its own reads.
var noRare Rare

func (p *Port) rareOrNone() *Rare {
	if p.rare == nil {
		return &noRare
	}
	return p.rare
}

// Rare returns a copy of p's rare fields, to read or to change and give
// back with SetRare.
func (p *Port) Rare() Rare { return *p.rareOrNone() }

// SetRare makes r p's rare fields. p holds r itself, which must not change
// afterwards: ports may share one Rare. A Rare of nothing but empty fields
// is held as none.
func (p *Port) SetRare(r *Rare) *Port {
	if r != nil && *r == noRare {
		r = nil
	}
	p.rare = r
	return p
}

// Rares hands out one Rare for equal values, so that the ports holding the
// same rare fields (a subnet's DHCP_Options rows, kube-ovn's vendor keys)
// share it. It forgets what it holds once it holds max. The zero Rares
// holds up to 4,096; a nil one shares nothing. It is not safe for
// concurrent use.
type Rares struct {
	m   map[Rare]*Rare
	max int
}

// Of returns the Rare equal to r that rs hands out, nil for a Rare of
// empty fields alone.
func (rs *Rares) Of(r Rare) *Rare {
	if r == noRare {
		return nil
	}
	if rs != nil {
		if p := rs.m[r]; p != nil {
			return p
		}
	}
	// A new Rare, so that r does not escape: most calls return above.
	p := new(Rare)
	*p = r
	if rs == nil {
		return p
	}
	if rs.max == 0 {
		rs.max = 4096
	}
	if rs.m == nil || len(rs.m) >= rs.max {
		rs.m = map[Rare]*Rare{}
	}
	rs.m[r] = p
	return p
}

// DynamicAddresses returns Rare's field of that name.
func (p *Port) DynamicAddresses() string { return p.rareOrNone().DynamicAddresses }

// ActivationStrategy returns Rare's field of that name.
func (p *Port) ActivationStrategy() string { return p.rareOrNone().ActivationStrategy }

// DHCPv4 returns Rare's field of that name.
func (p *Port) DHCPv4() string { return p.rareOrNone().DHCPv4 }

// DHCPv6 returns Rare's field of that name.
func (p *Port) DHCPv6() string { return p.rareOrNone().DHCPv6 }

// Vendor returns Rare's field of that name.
func (p *Port) Vendor() string { return p.rareOrNone().Vendor }

// VendorSwitch returns Rare's field of that name.
func (p *Port) VendorSwitch() string { return p.rareOrNone().VendorSwitch }

// Adopt returns Rare's field of that name.
func (p *Port) Adopt() string { return p.rareOrNone().Adopt }

// EditRare changes p's rare fields by edit, on a copy that p then holds.
func (p *Port) EditRare(edit func(*Rare)) *Port {
	r := p.Rare()
	edit(&r)
	return p.SetRare(&r)
}

// setRare sets one rare field of p, at choosing it, to v.
func (p *Port) setRare(at func(*Rare) *string, v string) {
	if *at(p.rareOrNone()) != v {
		p.EditRare(func(r *Rare) { *at(r) = v })
	}
}

// Owned reports whether the port is ovn-sync's.
func (p *Port) Owned() bool { return p.Owner != "" }

// Equal reports whether p and o have the same name and agree on every field
// of Fields that ports have. UUIDs, DynamicAddresses and the vendor fields
// (Vendor, VendorSwitch, Adopt) are not compared.
func (p *Port) Equal(o *Port) bool {
	if p.Name != o.Name {
		return false
	}
	for i := range Fields {
		switch f := &Fields[i]; {
		case f.PortKey != nil:
			if f.PortKey(p) != f.PortKey(o) {
				return false
			}
		case f.PortSet != nil:
			if !slices.Equal(*f.PortSet(p), *f.PortSet(o)) {
				return false
			}
		}
	}
	return true
}

// DHCPOptions is a DHCP_Options row ovn-sync created, reduced to what it
// reads. The row has no name column: its name is external_ids:ovn-sync/dhcp.
// The whole options column is ovn-sync's on such a row; of external_ids,
// only its keys are.
type DHCPOptions struct {
	// Name is external_ids:ovn-sync/dhcp, "<switch>/ipv4" or "<switch>/ipv6".
	Name string
	// UUID is set on observed rows only.
	UUID string
	// Owner and Network are external_ids:ovn-sync/owner and
	// ovn-sync/network: those of the switch the row serves.
	Owner, Network string
	// CIDR is the cidr column: the subnet the row serves.
	CIDR string
	// Options is the options column: what ovn-controller answers with
	// (server_id, server_mac, lease_time, router...).
	Options map[string]string
}

// Owned reports whether ovn-sync created the row.
func (d *DHCPOptions) Owned() bool { return d.Owner != "" }

// Equal reports whether d and o agree on every column ovn-sync manages.
// UUIDs are not compared.
func (d *DHCPOptions) Equal(o *DHCPOptions) bool {
	return d.Name == o.Name && d.Owner == o.Owner && d.Network == o.Network && d.CIDR == o.CIDR &&
		maps.Equal(d.Options, o.Options)
}

// State is a set of switches and ports, each keyed by its name, and the
// DHCP_Options rows of ours, keyed by theirs.
type State struct {
	Switches map[string]*Switch
	Ports    Ports
	// DHCP holds DHCP_Options rows. Observed states hold ovn-sync's rows
	// only: a row it did not create is never read, changed or deleted.
	DHCP map[string]*DHCPOptions
	// Index, when set, is IndexPorts(Ports): producers build it once so
	// that every diff over the state reuses it. Nil means "build on demand".
	Index Index
}

// New returns an empty State with capacity for the given number of ports.
func New(ports int) State {
	return State{Switches: map[string]*Switch{}, Ports: NewPorts(ports), DHCP: map[string]*DHCPOptions{}}
}

// Clone returns a State with its own maps holding the same (immutable)
// values, and no Index: a clone is made to be changed. Its Ports share
// their entries with s's until either changes them (Ports.Clone).
func (s State) Clone() State {
	c := State{Switches: make(map[string]*Switch, len(s.Switches)), Ports: s.Ports.Clone(),
		DHCP: make(map[string]*DHCPOptions, len(s.DHCP))}
	for k, v := range s.DHCP {
		c.DHCP[k] = v
	}
	for k, v := range s.Switches {
		c.Switches[k] = v
	}
	return c
}

// OwnedPorts returns how many ports in s are ovn-sync's: the sum of the
// counts s's Index keeps per shard, else a count over the map.
func (s State) OwnedPorts() int {
	if s.Index.Built() && s.Index.Len() == s.Ports.Len() {
		return s.Index.Owned()
	}
	n := 0
	for _, p := range s.Ports.All() {
		if p.Owned() {
			n++
		}
	}
	return n
}

// DeepEqual reports whether a and b are deeply equal, as reflect.DeepEqual
// compares States whose ports are in maps: Ports are compared by their
// entries, not by how they are shared.
func DeepEqual(a, b State) bool {
	if a.Ports.Len() != b.Ports.Len() {
		return false
	}
	for k, v := range a.Ports.All() {
		if w, ok := b.Ports.Lookup(k); !ok || !reflect.DeepEqual(v, w) {
			return false
		}
	}
	if !a.Index.Equal(b.Index) && !reflect.DeepEqual(a.Index.Entries(), b.Index.Entries()) {
		return false
	}
	a.Ports, b.Ports, a.Index, b.Index = Ports{}, Ports{}, Index{}, Index{}
	return reflect.DeepEqual(a, b)
}

// ShareWith makes s hold o's shards of ports and of index in place of
// each of its own that holds the same entries (Ports included) as o's: a
// desired state whose ports are the NB's rows then keeps no map or index
// of them beside the NB's snapshot. Each Index must list its State's
// Ports, as Build and the NB's snapshots make them, and s must be the
// caller's alone (just built): its Ports change in place, its Index is
// replaced. Either side copies a shard they share before changing it, as
// after a Clone. It returns how many shards s shares.
func (s *State) ShareWith(o State) int {
	if !s.Index.Built() || !o.Index.Built() || s.Ports.m == nil || o.Ports.m == nil {
		return 0
	}
	var idx *[nShards]indexShard
	n := 0
	for i := range nShards {
		a, b := &s.Index.shards[i], &o.Index.shards[i]
		sp, op := s.Ports.m.shards[i].ports, o.Ports.m.shards[i].ports
		if len(a.es) == 0 || len(a.es) != len(b.es) || a.sum != b.sum || len(sp) != len(a.es) || len(op) != len(b.es) ||
			!slices.Equal(a.es, b.es) {
			continue
		}
		if idx == nil {
			idx = new([nShards]indexShard)
			*idx = *s.Index.shards
		}
		idx[i] = *b
		s.Ports.m.shards[i] = o.Ports.m.shards[i]
		n++
	}
	if n > 0 {
		s.Index.shards = idx
		// o's shards are shared now: o copies one before changing it.
		o.Ports.m.gen.Store(gens.Add(1))
	}
	return n
}
