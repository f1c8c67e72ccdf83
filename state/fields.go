package state

// Field describes one column, or one key of a map column, that ovn-sync
// manages on Logical_Switch_Port or Logical_Switch rows: where the NB keeps
// it and where a Port or a Switch holds it. Fields lists each of them once.
//
// Everything that compares, fingerprints, diffs, shows, writes or reads a
// managed field walks Fields: Port.Equal, Port.Sum and Switch.Equal here;
// diff's Fields (one bit per index), Compute, Plan.ApplyTo and Plan.String;
// apply's inserts and updates; observed's monitor and its conversion of
// rows. So a new managed key or column is a field of Port (or of its Rare,
// for one most ports leave empty) or of Switch and its entry here, plus its name in diff's JSON form (portJSON, switchJSON, whose
// names and order are stable output) and, for a column no entry names yet,
// where it is read: the port view's decoder for a port's column
// (observed/portview's portSetField and the like), observed's switchMap for a
// switch's.
// state's TestFieldsCoverPortAndSwitch fails for a field of Port, Rare or
// Switch without an entry, and observed's TestFieldsRoundTrip for an entry that
// any of these places leaves out.
//
// DHCP_Options rows are not described here: ovn-sync creates them whole
// and owns their options column whole, so DHCPOptions.Equal compares them
// and diff.DiffDHCP lists what an update writes.
//
// How a field compares and renders follows from its kind: a set column
// compares element by element and renders as its one element quoted, or as
// a bracketed list of quoted elements; a key compares as a string and
// renders quoted. An empty set or an empty string is unset and renders as
// nothing.
type Field struct {
	// Column is the NB column. Key is the one key of that map column the
	// field owns; "" for a set column, which the field owns whole.
	Column, Key string

	// Ref, for a column holding a reference to a row of another table
	// (Key is then ""), is that table. A Port holds such a field through
	// PortKey, as the referenced row's name when ovn-sync created it (see
	// Port.DHCPv4): apply turns the name into the row's UUID and observed
	// the UUID into the name.
	Ref string

	// PortKey returns a Port's value of the field when it is a key (or a
	// reference), and SetPortKey sets it; RareKey is where the port's Rare
	// holds it, when it is one of those. PortSet returns where a Port
	// holds it when it is a set column ("" and nil are unset). They are nil
	// when ports do not have the field.
	PortKey    func(*Port) string
	SetPortKey func(*Port, string)
	RareKey    func(*Rare) *string
	PortSet    func(*Port) *[]string
	// SwitchKey returns where a Switch holds the field, a key; nil when
	// switches do not have it. No managed column of a switch is a set.
	SwitchKey func(*Switch) *string

	// Placement marks the field that says where a row is rather than what
	// it holds: it is written when the row is created, and otherwise only
	// on a row that has none (one ovn-sync adopts, or one of ours with no
	// switch recorded), which is updated in place. A port whose recorded
	// switch differs is moved, deleted and created again.
	Placement bool
}

// Name returns "column" for a set column and "column:key" for a key, e.g.
// "options:requested-chassis": the field's name in plans.
func (f *Field) Name() string {
	if f.Key == "" {
		return f.Column
	}
	return f.Column + ":" + f.Key
}

// The indexes of the managed fields in Fields. Plans list fields, and apply
// writes columns, in this order.
const (
	FieldAddresses          = iota // LSP addresses
	FieldPortSecurity              // LSP port_security
	FieldRequestedChassis          // LSP options:requested-chassis
	FieldActivationStrategy        // LSP options:activation-strategy
	FieldOwner                     // external_ids:ovn-sync/owner, on ports and switches
	FieldNetwork                   // external_ids:ovn-sync/network, on ports and switches
	FieldSwitch                    // LSP external_ids:ovn-sync/switch
	FieldSubnet                    // LS other_config:subnet
	FieldIPv6Prefix                // LS other_config:ipv6_prefix
	FieldExcludeIPs                // LS other_config:exclude_ips
	FieldDHCPv4                    // LSP dhcpv4_options (a reference to DHCP_Options)
	FieldDHCPv6                    // LSP dhcpv6_options (a reference to DHCP_Options)

	// NumFields is the number of managed fields.
	NumFields = iota
)

// Fields is every column and key ovn-sync manages, by index. Its entries are
// read, never changed.
var Fields = [NumFields]Field{
	FieldAddresses: {Column: "addresses",
		PortSet: func(p *Port) *[]string { return &p.Addresses }},
	FieldPortSecurity: {Column: "port_security",
		PortSet: func(p *Port) *[]string { return &p.PortSecurity }},
	FieldRequestedChassis: portKey(Field{Column: "options", Key: OptRequestedChassis},
		func(p *Port) *string { return &p.RequestedChassis }),
	FieldActivationStrategy: rareKey(Field{Column: "options", Key: OptActivationStrategy},
		func(r *Rare) *string { return &r.ActivationStrategy }),
	FieldOwner: portKey(Field{Column: "external_ids", Key: KeyOwner,
		SwitchKey: func(s *Switch) *string { return &s.Owner }},
		func(p *Port) *string { return &p.Owner }),
	FieldNetwork: portKey(Field{Column: "external_ids", Key: KeyNetwork,
		SwitchKey: func(s *Switch) *string { return &s.Network }},
		func(p *Port) *string { return &p.Network }),
	FieldSwitch: portKey(Field{Column: "external_ids", Key: KeySwitch, Placement: true},
		func(p *Port) *string { return &p.Switch }),
	FieldSubnet: {Column: "other_config", Key: SwitchSubnet,
		SwitchKey: func(s *Switch) *string { return &s.Subnet }},
	FieldIPv6Prefix: {Column: "other_config", Key: SwitchIPv6Prefix,
		SwitchKey: func(s *Switch) *string { return &s.IPv6Prefix }},
	FieldExcludeIPs: {Column: "other_config", Key: SwitchExcludeIPs,
		SwitchKey: func(s *Switch) *string { return &s.ExcludeIPs }},
	FieldDHCPv4: rareKey(Field{Column: "dhcpv4_options", Ref: TableDHCPOptions},
		func(r *Rare) *string { return &r.DHCPv4 }),
	FieldDHCPv6: rareKey(Field{Column: "dhcpv6_options", Ref: TableDHCPOptions},
		func(r *Rare) *string { return &r.DHCPv6 }),
}

// portKey is f, a key (or reference) a Port holds where at says.
func portKey(f Field, at func(*Port) *string) Field {
	f.PortKey = func(p *Port) string { return *at(p) }
	f.SetPortKey = func(p *Port, v string) { *at(p) = v }
	return f
}

// rareKey is f, a key (or reference) a Port's Rare holds where at says.
func rareKey(f Field, at func(*Rare) *string) Field {
	f.RareKey = at
	f.PortKey = func(p *Port) string { return *at(p.rareOrNone()) }
	f.SetPortKey = func(p *Port, v string) { p.setRare(at, v) }
	return f
}

// TableDHCPOptions is the table the dhcpv4_options and dhcpv6_options
// columns of a port refer to.
const TableDHCPOptions = "DHCP_Options"
