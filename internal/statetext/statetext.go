package statetext

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ovn-sync/ovn-sync/state"
)

// column is one single-valued key of a row and the field it fills.
type column[T any] struct {
	key string
	get func(*T) string
	set func(*T, string)
}

// at is the column key of a field held where field says.
func at[T any](key string, field func(*T) *string) column[T] {
	return column[T]{key, func(r *T) string { return *field(r) }, func(r *T, v string) { *field(r) = v }}
}

// rare is the column key of a port's rare field (state.Rare) held where
// field says.
func rare(key string, field func(*state.Rare) *string) column[state.Port] {
	return column[state.Port]{key,
		func(p *state.Port) string { r := p.Rare(); return *field(&r) },
		func(p *state.Port, v string) { r := p.Rare(); *field(&r) = v; p.SetRare(&r) }}
}

// switchColumns are a switch's keys in the order Print writes them.
var switchColumns = []column[state.Switch]{
	at("uuid", func(s *state.Switch) *string { return &s.UUID }),
	at("owner", func(s *state.Switch) *string { return &s.Owner }),
	at("network", func(s *state.Switch) *string { return &s.Network }),
	at("subnet", func(s *state.Switch) *string { return &s.Subnet }),
	at("ipv6_prefix", func(s *state.Switch) *string { return &s.IPv6Prefix }),
	at("exclude_ips", func(s *state.Switch) *string { return &s.ExcludeIPs }),
}

// portBeforeLists and portAfterLists are a port's single-valued keys in the
// order Print writes them, addresses and port_security between the two;
// portColumns is both.
var (
	portBeforeLists = []column[state.Port]{
		at("uuid", func(p *state.Port) *string { return &p.UUID }),
		at("switch", func(p *state.Port) *string { return &p.Switch }),
		at("owner", func(p *state.Port) *string { return &p.Owner }),
		at("network", func(p *state.Port) *string { return &p.Network }),
	}
	portAfterLists = []column[state.Port]{
		rare("dynamic", func(r *state.Rare) *string { return &r.DynamicAddresses }),
		at("requested-chassis", func(p *state.Port) *string { return &p.RequestedChassis }),
		rare("activation-strategy", func(r *state.Rare) *string { return &r.ActivationStrategy }),
		rare("dhcpv4", func(r *state.Rare) *string { return &r.DHCPv4 }),
		rare("dhcpv6", func(r *state.Rare) *string { return &r.DHCPv6 }),
		rare("vendor", func(r *state.Rare) *string { return &r.Vendor }),
		rare("vendor-switch", func(r *state.Rare) *string { return &r.VendorSwitch }),
		rare("adopt", func(r *state.Rare) *string { return &r.Adopt }),
	}
	portColumns = slices.Concat(portBeforeLists, portAfterLists)
)

// dhcpColumns are a DHCP_Options row's single-valued keys in the order
// Print writes them; its options follow, one "option:KEY=VALUE" each,
// sorted by key.
var dhcpColumns = []column[state.DHCPOptions]{
	at("uuid", func(d *state.DHCPOptions) *string { return &d.UUID }),
	at("owner", func(d *state.DHCPOptions) *string { return &d.Owner }),
	at("network", func(d *state.DHCPOptions) *string { return &d.Network }),
	at("cidr", func(d *state.DHCPOptions) *string { return &d.CIDR }),
}

// optionPrefix starts the key of a DHCP_Options row's option.
const optionPrefix = "option:"

const (
	keyAddresses    = "addresses"
	keyPortSecurity = "port_security"
	// emptyPortSecurity, unquoted, is a port_security of no entries.
	emptyPortSecurity = "none"
)

// Print returns s as text: switches, then DHCP_Options rows, then ports,
// each sorted by name, one line each.
func Print(s state.State) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(s.Switches)) {
		sw := s.Switches[name]
		b.WriteString("switch " + quoteIfNeeded(sw.Name))
		for _, c := range switchColumns {
			writeValue(&b, c.key, c.get(sw))
		}
		b.WriteString("\n")
	}
	for _, name := range slices.Sorted(maps.Keys(s.DHCP)) {
		d := s.DHCP[name]
		b.WriteString("dhcp " + quoteIfNeeded(d.Name))
		for _, c := range dhcpColumns {
			writeValue(&b, c.key, c.get(d))
		}
		for _, k := range slices.Sorted(maps.Keys(d.Options)) {
			b.WriteString(" " + optionPrefix + k + "=" + quoteIfNeeded(d.Options[k]))
		}
		b.WriteString("\n")
	}
	for _, name := range slices.Sorted(s.Ports.Names()) {
		p := s.Ports.Get(name)
		b.WriteString("port " + quoteIfNeeded(p.Name))
		for _, c := range portBeforeLists {
			writeValue(&b, c.key, c.get(p))
		}
		writeLists(&b, p)
		for _, c := range portAfterLists {
			writeValue(&b, c.key, c.get(p))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeLists writes addresses, and port_security where it is not the same.
func writeLists(b *strings.Builder, p *state.Port) {
	for _, a := range p.Addresses {
		b.WriteString(" " + keyAddresses + "=" + strconv.Quote(a))
	}
	if slices.Equal(p.Addresses, p.PortSecurity) {
		return
	}
	if len(p.PortSecurity) == 0 {
		b.WriteString(" " + keyPortSecurity + "=" + emptyPortSecurity)
	}
	for _, a := range p.PortSecurity {
		b.WriteString(" " + keyPortSecurity + "=" + strconv.Quote(a))
	}
}

func writeValue(b *strings.Builder, key, v string) {
	if v != "" {
		b.WriteString(" " + key + "=" + quoteIfNeeded(v))
	}
}

// quoteIfNeeded quotes v when it would not read back as one bare word.
func quoteIfNeeded(v string) string {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool {
		return r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(v)
	}
	return v
}

// Parse reads the text Print writes. Errors name the line.
func Parse(text string) (state.State, error) {
	s := state.New(0)
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := parseRow(s, line); err != nil {
			return state.State{}, fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
	}
	return s, nil
}

func parseRow(s state.State, line string) error {
	kind, rest := cutSpace(line)
	if kind != "switch" && kind != "port" && kind != "dhcp" {
		return errors.New(`want "switch NAME ...", "dhcp NAME ..." or "port NAME ..."`)
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return fmt.Errorf("%s without a name", kind)
	}
	name, _, rest, err := value(rest)
	if err != nil {
		return err
	}
	fields, err := keyValues(rest)
	if err != nil {
		return err
	}
	if kind == "switch" {
		if _, ok := s.Switches[name]; ok {
			return fmt.Errorf("switch %q twice", name)
		}
		sw := &state.Switch{Name: name}
		s.Switches[name] = sw
		return setColumns(sw, switchColumns, fields)
	}
	if kind == "dhcp" {
		if _, ok := s.DHCP[name]; ok {
			return fmt.Errorf("dhcp %q twice", name)
		}
		d := &state.DHCPOptions{Name: name}
		s.DHCP[name] = d
		var opts []keyValue
		fields = slices.DeleteFunc(fields, func(f keyValue) bool {
			if strings.HasPrefix(f.key, optionPrefix) {
				opts = append(opts, f)
				return true
			}
			return false
		})
		for _, f := range opts {
			k := strings.TrimPrefix(f.key, optionPrefix)
			if _, dup := d.Options[k]; dup || k == "" {
				return fmt.Errorf("%s twice or empty", f.key)
			}
			if d.Options == nil {
				d.Options = map[string]string{}
			}
			d.Options[k] = f.value
		}
		return setColumns(d, dhcpColumns, fields)
	}
	if _, ok := s.Ports.Lookup(name); ok {
		return fmt.Errorf("port %q twice", name)
	}
	p := &state.Port{Name: name}
	s.Ports.Set(name, p)
	var lists []keyValue
	fields = slices.DeleteFunc(fields, func(f keyValue) bool {
		if f.key == keyAddresses || f.key == keyPortSecurity {
			lists = append(lists, f)
			return true
		}
		return false
	})
	if err := setColumns(p, portColumns, fields); err != nil {
		return err
	}
	return setLists(p, lists)
}

// setColumns sets each field's column on row, and fails on a key that is
// not one of columns or that comes twice.
func setColumns[T any](row *T, columns []column[T], fields []keyValue) error {
	seen := map[string]bool{}
	for _, f := range fields {
		i := slices.IndexFunc(columns, func(c column[T]) bool { return c.key == f.key })
		if i < 0 {
			return fmt.Errorf("unknown key %q", f.key)
		}
		if seen[f.key] {
			return fmt.Errorf("%s twice", f.key)
		}
		seen[f.key] = true
		columns[i].set(row, f.value)
	}
	return nil
}

// setLists sets addresses and port_security, one entry a key; port_security
// defaults to the addresses, and a bare none empties it.
func setLists(p *state.Port, fields []keyValue) error {
	psSet, psNone := false, false
	for _, f := range fields {
		switch {
		case f.key == keyAddresses:
			p.Addresses = append(p.Addresses, f.value)
		case f.value == emptyPortSecurity && !f.quoted:
			psNone = true
		default:
			p.PortSecurity = append(p.PortSecurity, f.value)
		}
		psSet = psSet || f.key == keyPortSecurity
	}
	if psNone && len(p.PortSecurity) > 0 {
		return fmt.Errorf("%s=%s beside other entries", keyPortSecurity, emptyPortSecurity)
	}
	if !psSet {
		p.PortSecurity = slices.Clone(p.Addresses)
	}
	return nil
}

type keyValue struct {
	key, value string
	// quoted tells port_security="none", an entry, from none.
	quoted bool
}

// keyValues splits "k=v k2="v 2"..." into its pairs.
func keyValues(s string) ([]keyValue, error) {
	var out []keyValue
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		i := strings.IndexAny(s, "= \t\"")
		if i <= 0 || s[i] != '=' {
			word, _ := cutSpace(s)
			return nil, fmt.Errorf("%q: want key=value", word)
		}
		f := keyValue{key: s[:i]}
		var err error
		f.value, f.quoted, s, err = value(s[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// value reads one value from the start of s: a Go double-quoted string, or
// a bare word up to the next space. It returns the rest of s after it.
func value(s string) (v string, quoted bool, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		v, rest = cutSpace(s)
		if strings.Contains(v, `"`) {
			return "", false, "", fmt.Errorf("%s: a double quote inside a bare value", v)
		}
		return v, false, rest, nil
	}
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", false, "", fmt.Errorf("%s: %w", s, err)
	}
	rest = s[len(q):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false, "", fmt.Errorf("%s: text right after a quoted value", s)
	}
	v, _ = strconv.Unquote(q)
	return v, true, rest, nil
}

// cutSpace returns s before and after its first space or tab.
func cutSpace(s string) (before, after string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}
