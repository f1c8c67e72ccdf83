package diff

import (
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
)

// String returns the table's name in the style of a terraform resource type.
func (k Kind) String() string {
	switch k {
	case KindSwitch:
		return "logical_switch"
	case KindPort:
		return "logical_switch_port"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText encodes k as its String.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Fields is a set of the columns and map keys ovn-sync manages. An Update
// carries the ones that differ, and apply writes exactly those.
type Fields uint16

// The fields. Each is one bit; the map-key fields name the one key they own.
const (
	FieldAddresses          Fields = 1 << iota // LSP addresses (a set)
	FieldPortSecurity                          // LSP port_security (a set)
	FieldRequestedChassis                      // LSP options:requested-chassis
	FieldActivationStrategy                    // LSP options:activation-strategy
	FieldOwner                                 // external_ids:ovn-sync/owner (ports and switches)
	FieldNetwork                               // external_ids:ovn-sync/network (ports and switches)
	FieldSwitch                                // LSP external_ids:ovn-sync/switch; set on create, never updated
	FieldSubnet                                // LS other_config:subnet
	FieldIPv6Prefix                            // LS other_config:ipv6_prefix

	numFields = iota
)

// PortFields and SwitchFields are the fields of each kind of row, in the
// order they are written and shown.
const (
	PortFields = FieldAddresses | FieldPortSecurity | FieldRequestedChassis | FieldActivationStrategy |
		FieldOwner | FieldNetwork | FieldSwitch
	SwitchFields = FieldOwner | FieldNetwork | FieldSubnet | FieldIPv6Prefix
)

var fieldColumns = [numFields]struct{ column, key string }{
	{"addresses", ""},
	{"port_security", ""},
	{"options", state.OptRequestedChassis},
	{"options", state.OptActivationStrategy},
	{"external_ids", state.KeyOwner},
	{"external_ids", state.KeyNetwork},
	{"external_ids", state.KeySwitch},
	{"other_config", state.SwitchSubnet},
	{"other_config", state.SwitchIPv6Prefix},
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

// Column returns the NB column of a single field, and for a map column the
// one key the field owns ("" for the set columns addresses and port_security).
func (f Fields) Column() (column, key string) {
	if bits.OnesCount16(uint16(f)) != 1 || bits.TrailingZeros16(uint16(f)) >= numFields {
		return "", ""
	}
	c := fieldColumns[bits.TrailingZeros16(uint16(f))]
	return c.column, c.key
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
	col, key := f.Column()
	switch {
	case col == "":
		return "Fields(" + strconv.Itoa(int(f)) + ")"
	case key == "":
		return col
	}
	return col + ":" + key
}

// MarshalJSON encodes f as a list of field names.
func (f Fields) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for g := range f.All() {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, g.name())
	}
	return append(b, ']'), nil
}

// PortKey returns the value of map-key field f on p, "" when unset.
// The set fields (FieldAddresses, FieldPortSecurity) are p's slices.
func PortKey(p *state.Port, f Fields) string {
	switch f {
	case FieldRequestedChassis:
		return p.RequestedChassis
	case FieldActivationStrategy:
		return p.ActivationStrategy
	case FieldOwner:
		return p.Owner
	case FieldNetwork:
		return p.Network
	case FieldSwitch:
		return p.Switch
	}
	return ""
}

// SwitchKey returns the value of map-key field f on s, "" when unset.
func SwitchKey(s *state.Switch, f Fields) string {
	switch f {
	case FieldOwner:
		return s.Owner
	case FieldNetwork:
		return s.Network
	case FieldSubnet:
		return s.Subnet
	case FieldIPv6Prefix:
		return s.IPv6Prefix
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

	// SwitchUUID is, for a port Create, the UUID of the switch the port goes
	// on, or "" when this plan creates that switch; for a port Delete, the
	// UUID of the switch the port was put on, or "" when no switch of that
	// name is observed (apply then finds the switch holding the port).
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
// other: switch creates and updates; port deletes; port updates; port
// creates; switch deletes. Within each group they are sorted by name. Deletes come before creates so
// that a port moving between switches is removed before its name (a unique
// index) is inserted again, and switch deletes come last so that our ports
// are gone from a switch before it is.
type Plan struct {
	Changes []Change
	// Notices are conflicts and skips, sorted by kind and name.
	Notices []Notice
	// Withheld counts the deletes Policy.WithholdDeletes left out (a port
	// move counts once; its create is withheld with it).
	Withheld int
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
