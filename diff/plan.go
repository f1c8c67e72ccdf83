package diff

import (
	"encoding/json"
	"iter"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ovn-sync/ovn-sync/state"
)

// Action is what a Change does to its row.
type Action rune

// The actions, printed as in `terraform plan`.
const (
	Create Action = '+'
	Update Action = '~'
	Delete Action = '-'
)

// String returns "create", "update" or "delete".
func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return "Action(" + strconv.QuoteRune(rune(a)) + ")"
}

// MarshalText encodes a as its String.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Kind is the NB table a Change or Notice is about.
type Kind uint8

// The kinds of rows ovn-sync manages.
const (
	KindSwitch Kind = iota + 1 // Logical_Switch
	KindPort                   // Logical_Switch_Port
	KindDHCP                   // DHCP_Options
)

// String returns the table's name in the style of a terraform resource type.
func (k Kind) String() string {
	switch k {
	case KindSwitch:
		return "logical_switch"
	case KindPort:
		return "logical_switch_port"
	case KindDHCP:
		return "dhcp_options"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText encodes k as its String.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Fields is a set of the columns and map keys ovn-sync manages: bit i is
// state.Fields[i]. An Update carries the ones that differ, and apply writes
// exactly those.
type Fields uint16

// Fields has a bit for every entry of state.Fields: this constant does not
// compile when one more entry would not fit.
const _ = Fields(1 << (state.NumFields - 1))

// The fields, each one bit; the map-key fields name the one key they own.
const (
	FieldAddresses          Fields = 1 << state.FieldAddresses          // LSP addresses (a set)
	FieldPortSecurity       Fields = 1 << state.FieldPortSecurity       // LSP port_security (a set)
	FieldRequestedChassis   Fields = 1 << state.FieldRequestedChassis   // LSP options:requested-chassis
	FieldActivationStrategy Fields = 1 << state.FieldActivationStrategy // LSP options:activation-strategy
	FieldOwner              Fields = 1 << state.FieldOwner              // external_ids:ovn-sync/owner (ports and switches)
	FieldNetwork            Fields = 1 << state.FieldNetwork            // external_ids:ovn-sync/network (ports and switches)
	FieldSwitch             Fields = 1 << state.FieldSwitch             // LSP external_ids:ovn-sync/switch; set on create, updated only where unset
	FieldSubnet             Fields = 1 << state.FieldSubnet             // LS other_config:subnet
	FieldIPv6Prefix         Fields = 1 << state.FieldIPv6Prefix         // LS other_config:ipv6_prefix
	FieldExcludeIPs         Fields = 1 << state.FieldExcludeIPs         // LS other_config:exclude_ips
	FieldDHCPv4             Fields = 1 << state.FieldDHCPv4             // LSP dhcpv4_options (a DHCP_Options row, by name)
	FieldDHCPv6             Fields = 1 << state.FieldDHCPv6             // LSP dhcpv6_options (a DHCP_Options row, by name)
)

// PortFields and SwitchFields are the fields of each kind of row, in the
// order they are written and shown: the fields of state.Fields that ports
// (switches) have. They are read, never changed.
var PortFields, SwitchFields = kindFields()

func kindFields() (port, sw Fields) {
	for i := range state.Fields {
		f := &state.Fields[i]
		if f.PortKey != nil || f.PortSet != nil {
			port |= 1 << i
		}
		if f.SwitchKey != nil {
			sw |= 1 << i
		}
	}
	return port, sw
}

// Has reports whether every field of g is in f.
func (f Fields) Has(g Fields) bool { return f&g == g }

// All returns an iterator over the single fields of f, in bit order.
func (f Fields) All() iter.Seq[Fields] {
	return func(yield func(Fields) bool) {
		for f != 0 {
			g := f & -f
			if !yield(g) {
				return
			}
			f &^= g
		}
	}
}

// Field returns the descriptor of a single field; nil when f is not one
// field.
func (f Fields) Field() *state.Field {
	if bits.OnesCount16(uint16(f)) != 1 || bits.TrailingZeros16(uint16(f)) >= state.NumFields {
		return nil
	}
	return &state.Fields[bits.TrailingZeros16(uint16(f))]
}

// Column returns the NB column of a single field, and for a map column the
// one key the field owns ("" for the set columns addresses and port_security).
func (f Fields) Column() (column, key string) {
	if d := f.Field(); d != nil {
		return d.Column, d.Key
	}
	return "", ""
}

// String names the fields in bit order, e.g. "addresses,options:requested-chassis".
func (f Fields) String() string {
	var b strings.Builder
	for g := range f.All() {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.name())
	}
	return b.String()
}

func (f Fields) name() string {
	if d := f.Field(); d != nil {
		return d.Name()
	}
	return "Fields(" + strconv.Itoa(int(f)) + ")"
}

// MarshalJSON encodes f as a list of field names.
func (f Fields) MarshalJSON() ([]byte, error) {
	if f == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal(f.names())
}

// names are the names of the fields in f, in order; nil when none.
func (f Fields) names() []string {
	var names []string
	for g := range f.All() {
		names = append(names, g.name())
	}
	return names
}

// PortKey returns the value of map-key field f on p, "" when unset or when
// f is not a key of ports. The set fields (FieldAddresses,
// FieldPortSecurity) are p's slices.
func PortKey(p *state.Port, f Fields) string {
	if d := f.Field(); d != nil && d.PortKey != nil {
		return d.PortKey(p)
	}
	return ""
}

// SwitchKey returns the value of map-key field f on s, "" when unset or
// when f is not a key of switches.
func SwitchKey(s *state.Switch, f Fields) string {
	if d := f.Field(); d != nil && d.SwitchKey != nil {
		return *d.SwitchKey(s)
	}
	return ""
}

// Change is one row to create, update or delete.
type Change struct {
	Action Action
	Kind   Kind
	Name   string
	// Owner is the row's external_ids:ovn-sync/owner: After's for a create or
	// update, Before's for a delete.
	Owner string
	// Reason says why, for people. It is never read by apply.
	Reason string
	// Fields is, for an Update, exactly the fields that differ; apply writes
	// those and nothing else. It is zero for Create and Delete.
	Fields Fields

	// Before is the observed port (with its UUID), nil for a Create; After is
	// the desired port, nil for a Delete. Both are nil unless Kind is KindPort.
	Before, After *state.Port
	// SwitchBefore and SwitchAfter are the same for a KindSwitch change.
	SwitchBefore, SwitchAfter *state.Switch
	// DHCPBefore and DHCPAfter are the same for a KindDHCP change. An
	// update of a DHCP_Options row writes the columns and option keys on
	// which they differ (DHCPDiff), and Fields is zero.
	DHCPBefore, DHCPAfter *state.DHCPOptions

	// SwitchUUID is, for a port Create, the UUID of the switch the port goes
	// on, or "" when this plan creates that switch; for a port Delete, the
	// UUID of the switch the port was put on, or "" when no switch of that
	// name is observed (apply then finds the switch holding the port); for a
	// port Update that records its switch (FieldSwitch: an adoption, or a
	// port of ours with none recorded), the UUID of that switch, which apply
	// requires to hold the port.
	SwitchUUID string
}

// Notice reports something Compute left alone on purpose, such as a name
// taken by a port that is not ours. It changes nothing.
type Notice struct {
	Kind   Kind   `json:"kind"`
	Name   string `json:"name"`
	Owner  string `json:"owner,omitempty"`
	Reason string `json:"reason"`
}

// Plan is the ordered list of changes that turns have into want.
//
// Changes are in the order apply carries them out, one phase after the
// other: switch creates and updates, then DHCP_Options creates and updates;
// port deletes; port updates; port creates; DHCP_Options deletes; switch
// deletes. Within each group they are sorted by name. Deletes come before creates so
// that a port moving between switches is removed before its name (a unique
// index) is inserted again; DHCP_Options rows exist before the ports that
// refer to them, and go only once no port of ours does; switch deletes come
// last so that our ports are gone from a switch before it is.
type Plan struct {
	Changes []Change
	// Notices are conflicts and skips, sorted by kind and name.
	Notices []Notice
	// Withheld counts the deletes Policy.WithholdDeletes left out (a port
	// move counts once; its create is withheld with it).
	Withheld int
	// DHCPUUIDs holds the UUID of every observed DHCP_Options row of ours,
	// by name, for apply to write a port's reference to a row the plan
	// does not create (and to read the one it replaces).
	DHCPUUIDs map[string]string
}

// Counts sums a plan's changes the way `terraform plan` does.
type Counts struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// Counts returns how many changes of each action p holds. A port move is one
// destroy and one add.
func (p Plan) Counts() Counts {
	var c Counts
	for i := range p.Changes {
		switch p.Changes[i].Action {
		case Create:
			c.Add++
		case Update:
			c.Change++
		case Delete:
			c.Destroy++
		}
	}
	return c
}

// Empty reports whether p changes nothing. Notices and withheld deletes do
// not count: a plan that only reports them sends no transaction.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }
