package diff

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Cost is what a change of a plan costs a guest, most first.
type Cost uint8

// The costs.
const (
	// CostAddress: the addresses a port holds change (or are given it), or
	// what a guest may send from (a port_security that held something).
	CostAddress Cost = iota + 1
	// CostPort: a port is created (its addresses handed out) or deleted
	// (its addresses freed).
	CostPort
	// CostBinding: the chassis a port is bound to differs
	// (options:requested-chassis or activation-strategy that held a value).
	CostBinding
	// CostBookkeeping: only what ovn-sync records and OVN does not bind by:
	// its external_ids, a port_security or requested-chassis set where
	// there was none (an adoption), a DHCP_Options reference, a switch's or
	// a DHCP_Options row's settings.
	CostBookkeeping
)

// String returns "address", "port", "binding" or "bookkeeping".
func (c Cost) String() string {
	switch c {
	case CostAddress:
		return "address"
	case CostPort:
		return "port"
	case CostBinding:
		return "binding"
	case CostBookkeeping:
		return "bookkeeping"
	}
	return fmt.Sprintf("Cost(%d)", uint8(c))
}

// MarshalText encodes c as its String.
func (c Cost) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Costs are the changes of a plan by what they cost a guest: those that
// touch one (address, port, binding), each named, and how many are
// bookkeeping only.
type Costs struct {
	// Named are the changes of ports that cost more than bookkeeping,
	// sorted by owner, cost and port.
	Named []Difference `json:"named"`
	// Bookkeeping counts the changes that are bookkeeping only.
	Bookkeeping int `json:"bookkeeping"`
	// ByAction counts every change by action and cost.
	ByAction map[Action]map[Cost]int `json:"-"`
}

// Difference is one change of a port and what it costs a guest.
type Difference struct {
	Cost   Cost   `json:"cost"`
	Owner  string `json:"owner"`
	Port   string `json:"port"`
	Detail string `json:"detail"`
}

// CostOf returns what c costs a guest, and says how for a port.
func CostOf(c *Change) (Cost, string) {
	if c.Kind != KindPort {
		return CostBookkeeping, ""
	}
	switch c.Action {
	case Create:
		return CostPort, "created with addresses " + quoteList(c.After.Addresses)
	case Delete:
		return CostPort, "deleted, freeing " + quoteList(c.Before.Addresses)
	}
	var what []string
	cost := CostBookkeeping
	note := func(k Cost, f Fields, before, after string) {
		if c.Fields.Has(f) {
			cost = min(cost, k)
			what = append(what, fmt.Sprintf("%s %q -> %q", f.name(), before, after))
		}
	}
	b, a := c.Before, c.After
	note(CostAddress, FieldAddresses, strings.Join(b.Addresses, ","), strings.Join(a.Addresses, ","))
	if len(b.PortSecurity) > 0 {
		note(CostAddress, FieldPortSecurity, strings.Join(b.PortSecurity, ","), strings.Join(a.PortSecurity, ","))
	}
	if b.RequestedChassis != "" {
		note(CostBinding, FieldRequestedChassis, b.RequestedChassis, a.RequestedChassis)
	}
	if b.ActivationStrategy() != "" {
		note(CostBinding, FieldActivationStrategy, b.ActivationStrategy(), a.ActivationStrategy())
	}
	return cost, strings.Join(what, ", ")
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q", strings.Join(l, ","))
}

// Costs returns p's changes by what they cost a guest.
func (p Plan) Costs() Costs {
	cs := Costs{Named: []Difference{}, ByAction: map[Action]map[Cost]int{}}
	for i := range p.Changes {
		c := &p.Changes[i]
		cost, detail := CostOf(c)
		if cs.ByAction[c.Action] == nil {
			cs.ByAction[c.Action] = map[Cost]int{}
		}
		cs.ByAction[c.Action][cost]++
		if cost == CostBookkeeping {
			cs.Bookkeeping++
			continue
		}
		cs.Named = append(cs.Named, Difference{Cost: cost, Owner: c.Owner, Port: c.Name, Detail: detail})
	}
	slices.SortFunc(cs.Named, func(x, y Difference) int {
		return cmp.Or(strings.Compare(x.Owner, y.Owner), cmp.Compare(x.Cost, y.Cost), strings.Compare(x.Port, y.Port))
	})
	return cs
}

// JSONMembers are the members of cs's JSON in their order, for a writer
// of a larger document (Plan.JSONMembers says why).
func (cs Costs) JSONMembers() []JSONMember {
	return []JSONMember{JSONList("named", cs.Named), {Key: "bookkeeping", Value: cs.Bookkeeping}}
}

// String renders cs for the text of a plan: each named difference on a line
// of its own, then the count of bookkeeping only; "" when there is
// nothing to say.
func (cs Costs) String() string {
	if len(cs.Named) == 0 && cs.Bookkeeping == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("What it costs guests:\n")
	for _, d := range cs.Named {
		fmt.Fprintf(&b, "  [%s] %s: port %q %s\n", d.Cost, d.Owner, d.Port, d.Detail)
	}
	fmt.Fprintf(&b, "  bookkeeping only: %d changes (ovn-sync's external_ids, a port_security or requested-chassis set where there was none, DHCP_Options references, switches' and DHCP_Options rows' settings)", cs.Bookkeeping)
	return b.String()
}
