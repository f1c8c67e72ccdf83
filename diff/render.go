package diff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ovn-sync/ovn-sync/state"
)

// String renders p like `terraform plan`: one line per change, the changed
// fields of updates and the fields of creates beneath it, the notices, and
// a closing summary. A plan without changes ends "No changes.".
func (p Plan) String() string {
	var b strings.Builder
	for i := range p.Changes {
		p.Changes[i].write(&b)
	}
	if len(p.Changes) > 0 && (len(p.Notices) > 0 || p.Withheld > 0) {
		b.WriteByte('\n')
	}
	for _, n := range p.Notices {
		fmt.Fprintf(&b, "  ! %s %q%s: %s\n", n.Kind, n.Name, owner(n.Owner), n.Reason)
	}
	switch {
	case p.Withheld == 1:
		b.WriteString("  1 delete withheld until every source has synced.\n")
	case p.Withheld > 1:
		fmt.Fprintf(&b, "  %d deletes withheld until every source has synced.\n", p.Withheld)
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	if p.Empty() {
		b.WriteString("No changes.")
	} else {
		c := p.Counts()
		fmt.Fprintf(&b, "Plan: %d to add, %d to change, %d to destroy.", c.Add, c.Change, c.Destroy)
	}
	return b.String()
}

func owner(o string) string {
	if o == "" {
		return ""
	}
	return " (" + o + ")"
}

func (c *Change) write(b *strings.Builder) {
	fmt.Fprintf(b, "  %c %s %q%s: %s\n", c.Action, c.Kind, c.Name, owner(c.Owner), c.Reason)
	if c.Kind == KindDHCP {
		c.writeDHCP(b)
		return
	}
	switch c.Action {
	case Create:
		// The owner is on the header line already.
		if c.Kind == KindPort {
			for f := range (PortFields &^ FieldOwner).All() {
				if v := portValue(c.After, f); v != "" {
					fmt.Fprintf(b, "      + %s: %s\n", f.name(), v)
				}
			}
		} else {
			for f := range (SwitchFields &^ FieldOwner).All() {
				if v := SwitchKey(c.SwitchAfter, f); v != "" {
					fmt.Fprintf(b, "      + %s: %q\n", f.name(), v)
				}
			}
		}
	case Update:
		for f := range c.Fields.All() {
			var before, after string
			if c.Kind == KindPort {
				before, after = portValue(c.Before, f), portValue(c.After, f)
			} else {
				before, after = quote(SwitchKey(c.SwitchBefore, f)), quote(SwitchKey(c.SwitchAfter, f))
			}
			switch {
			case before == "":
				fmt.Fprintf(b, "      + %s: %s\n", f.name(), after)
			case after == "":
				fmt.Fprintf(b, "      - %s: %s\n", f.name(), before)
			default:
				fmt.Fprintf(b, "      ~ %s: %s -> %s\n", f.name(), before, after)
			}
		}
	}
}

// writeDHCP writes the columns of a DHCP_Options create, or what an update
// changes: cidr, external_ids:ovn-sync/network, and options key by key.
func (c *Change) writeDHCP(b *strings.Builder) {
	switch c.Action {
	case Create:
		a := c.DHCPAfter
		fmt.Fprintf(b, "      + cidr: %q\n", a.CIDR)
		if a.Network != "" {
			fmt.Fprintf(b, "      + external_ids:%s: %q\n", state.KeyNetwork, a.Network)
		}
		for _, k := range slices.Sorted(maps.Keys(a.Options)) {
			fmt.Fprintf(b, "      + options:%s: %q\n", k, a.Options[k])
		}
	case Update:
		before, after := c.DHCPBefore, c.DHCPAfter
		d := DiffDHCP(before, after)
		if d.CIDR {
			fmt.Fprintf(b, "      ~ cidr: %q -> %q\n", before.CIDR, after.CIDR)
		}
		if d.Network {
			fmt.Fprintf(b, "      ~ external_ids:%s: %q -> %q\n", state.KeyNetwork, before.Network, after.Network)
		}
		for _, k := range d.Set {
			if v, ok := before.Options[k]; ok {
				fmt.Fprintf(b, "      ~ options:%s: %q -> %q\n", k, v, after.Options[k])
			} else {
				fmt.Fprintf(b, "      + options:%s: %q\n", k, after.Options[k])
			}
		}
		for _, k := range d.Remove {
			fmt.Fprintf(b, "      - options:%s: %q\n", k, before.Options[k])
		}
	}
}

// portValue renders field f of p for display, "" when unset: a key quoted,
// a set of one element as that element quoted, other sets as a bracketed
// list.
func portValue(p *state.Port, f Fields) string {
	if d := f.Field(); d != nil && d.PortSet != nil {
		return quoteSet(*d.PortSet(p))
	}
	return quote(PortKey(p, f))
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

func quoteSet(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return strconv.Quote(s[0])
	}
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = strconv.Quote(e)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// The JSON forms. Their field names are part of `ovn-sync plan -o json` and
// stay stable; state's types carry no tags, so they are spelled out here.
type (
	planJSON struct {
		Changes  []changeJSON `json:"changes"`
		Notices  []Notice     `json:"notices"`
		Withheld int          `json:"withheld"`
		Summary  Counts       `json:"summary"`
	}
	changeJSON struct {
		Action     Action   `json:"action"`
		Kind       Kind     `json:"kind"`
		Name       string   `json:"name"`
		Owner      string   `json:"owner,omitempty"`
		Reason     string   `json:"reason"`
		Fields     []string `json:"fields,omitempty"`
		SwitchUUID string   `json:"switch_uuid,omitempty"`
		Before     any      `json:"before,omitempty"`
		After      any      `json:"after,omitempty"`
	}
	portJSON struct {
		Name               string   `json:"name"`
		UUID               string   `json:"uuid,omitempty"`
		Switch             string   `json:"switch,omitempty"`
		Addresses          []string `json:"addresses,omitempty"`
		PortSecurity       []string `json:"port_security,omitempty"`
		Owner              string   `json:"owner,omitempty"`
		Network            string   `json:"network,omitempty"`
		RequestedChassis   string   `json:"requested_chassis,omitempty"`
		ActivationStrategy string   `json:"activation_strategy,omitempty"`
		DHCPv4Options      string   `json:"dhcpv4_options,omitempty"`
		DHCPv6Options      string   `json:"dhcpv6_options,omitempty"`
	}
	dhcpJSON struct {
		Name    string            `json:"name"`
		UUID    string            `json:"uuid,omitempty"`
		Owner   string            `json:"owner,omitempty"`
		Network string            `json:"network,omitempty"`
		CIDR    string            `json:"cidr"`
		Options map[string]string `json:"options"`
	}
	switchJSON struct {
		Name       string `json:"name"`
		UUID       string `json:"uuid,omitempty"`
		Owner      string `json:"owner,omitempty"`
		Network    string `json:"network,omitempty"`
		Subnet     string `json:"subnet,omitempty"`
		IPv6Prefix string `json:"ipv6_prefix,omitempty"`
		ExcludeIPs string `json:"exclude_ips,omitempty"`
	}
)

// MarshalJSON encodes p as {"changes": [...], "notices": [...], "withheld": N,
// "summary": {"add": N, "change": N, "destroy": N}}.
func (p Plan) MarshalJSON() ([]byte, error) { return json.Marshal(p.jsonValue()) }

// jsonValue is what MarshalJSON encodes, of types without MarshalJSON
// methods: encoding/json scans again everything a MarshalJSON method
// returns.
func (p Plan) jsonValue() planJSON {
	j := planJSON{Changes: make([]changeJSON, len(p.Changes)), Notices: p.Notices, Withheld: p.Withheld, Summary: p.Counts()}
	for i := range p.Changes {
		j.Changes[i] = p.Changes[i].jsonValue()
	}
	if j.Notices == nil {
		j.Notices = []Notice{}
	}
	return j
}

// JSONMember is one member of a JSON object: its key and a value, or a
// list made an element at a time (Elem, Len), or an object of its own
// (Object).
type JSONMember struct {
	Key   string
	Value any
	Len   int
	Elem  func(i int) any
	// Object, when not nil, is the members of the value, an object.
	Object []JSONMember
}

// JSONList is the member key of list l, written an element at a time.
func JSONList[T any](key string, l []T) JSONMember {
	return JSONMember{Key: key, Len: len(l), Elem: func(i int) any { return l[i] }}
}

// JSONMembers are the members of MarshalJSON's object in their order, each
// change made only as it is written: a writer of a larger document
// (reconcile's report) then holds one change's JSON at a time, not the
// whole plan's twice (encoding/json marshals a value whole, then indents
// a copy), which for 30,000 changes took most of the time `apply -o json`
// spent writing.
func (p Plan) JSONMembers() []JSONMember {
	return []JSONMember{
		{Key: "changes", Len: len(p.Changes), Elem: func(i int) any { return p.Changes[i].jsonValue() }},
		JSONList("notices", p.Notices), // [] when there are none
		{Key: "withheld", Value: p.Withheld},
		{Key: "summary", Value: p.Counts()},
	}
}

// MarshalJSON encodes c with snake_case field names; "before" and "after"
// are the rows' managed columns.
func (c Change) MarshalJSON() ([]byte, error) { return json.Marshal(c.jsonValue()) }

func (c Change) jsonValue() changeJSON {
	j := changeJSON{
		Action: c.Action, Kind: c.Kind, Name: c.Name, Owner: c.Owner,
		Reason: c.Reason, Fields: c.Fields.names(), SwitchUUID: c.SwitchUUID,
	}
	if p := c.Before; p != nil {
		j.Before = portToJSON(p)
	}
	if p := c.After; p != nil {
		j.After = portToJSON(p)
	}
	if s := c.SwitchBefore; s != nil {
		j.Before = switchToJSON(s)
	}
	if s := c.SwitchAfter; s != nil {
		j.After = switchToJSON(s)
	}
	if d := c.DHCPBefore; d != nil {
		j.Before = dhcpToJSON(d)
	}
	if d := c.DHCPAfter; d != nil {
		j.After = dhcpToJSON(d)
	}
	return j
}

func portToJSON(p *state.Port) portJSON {
	return portJSON{
		Name: p.Name, UUID: p.UUID, Switch: p.Switch, Addresses: p.Addresses, PortSecurity: p.PortSecurity,
		Owner: p.Owner, Network: p.Network, RequestedChassis: p.RequestedChassis, ActivationStrategy: p.ActivationStrategy(),
		DHCPv4Options: p.DHCPv4(), DHCPv6Options: p.DHCPv6(),
	}
}

func dhcpToJSON(d *state.DHCPOptions) dhcpJSON {
	opts := d.Options
	if opts == nil {
		opts = map[string]string{}
	}
	return dhcpJSON{Name: d.Name, UUID: d.UUID, Owner: d.Owner, Network: d.Network, CIDR: d.CIDR, Options: opts}
}

func switchToJSON(s *state.Switch) switchJSON {
	return switchJSON{Name: s.Name, UUID: s.UUID, Owner: s.Owner, Network: s.Network, Subnet: s.Subnet, IPv6Prefix: s.IPv6Prefix, ExcludeIPs: s.ExcludeIPs}
}
