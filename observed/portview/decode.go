package portview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// message is one JSON-RPC message as the view reads it.
type message struct {
	id     json.RawMessage
	method string
	// rows are the Logical_Switch_Port changes of an update, or of the
	// monitor's reply (load).
	rows []rowChange
	load bool
	// failed holds a reply's error, when not null.
	failed json.RawMessage
}

// rowChange is one row of an update: the row whole for an initial or
// inserted row, the columns changed for a modified one, neither for a
// deleted one.
type rowChange struct {
	uuid string
	full *state.Port
	diff *rowDiff
}

// rowDiff is a "modify" of update2: each column changed, as the set of
// elements (or map pairs) to toggle; keys ovn-sync does not read are not
// kept.
type rowDiff struct {
	name                  *string
	sets                  [numPortSets][]string
	setChanged            uint8
	dynamic, dhcp4, dhcp6 *[]string
	pairs                 [][2]string // of options and external_ids, by kept key
}

const numPortSets = 2 // addresses, port_security

// readMessage reads one message. The params of an update and the result of
// the monitor's reply are decoded as they are read, never held whole.
func (v *View) readMessage(r *jsonReader) (message, error) {
	var m message
	err := r.object(func(key []byte) error {
		switch string(key) {
		case "id":
			raw, err := r.raw()
			m.id = raw
			return err
		case "method":
			s, err := r.readString()
			m.method = string(s)
			return err
		case "params":
			if c, err := r.peek(); err != nil || c != '[' {
				return r.skip()
			}
			return r.array(func(i int) error {
				if c, err := r.peek(); err == nil && c == '{' && i >= 1 {
					rows, err := v.readUpdates(r)
					m.rows = append(m.rows, rows...)
					return err
				}
				return r.skip()
			})
		case "result":
			if c, err := r.peek(); err == nil && c == '{' {
				rows, err := v.readUpdates(r)
				m.rows, m.load = rows, true
				return err
			}
			return r.skip()
		case "error":
			if null, err := r.null(); null || err != nil {
				return err
			}
			raw, err := r.raw()
			m.failed = raw
			return err
		}
		return r.skip()
	})
	return m, err
}

// readUpdates reads a <table-updates2> object, keeping the
// Logical_Switch_Port rows.
func (v *View) readUpdates(r *jsonReader) ([]rowChange, error) {
	var rows []rowChange
	err := r.object(func(table []byte) error {
		if string(table) != nbdb.LogicalSwitchPortTable {
			return r.skip()
		}
		return r.object(func(uuid []byte) error {
			c := rowChange{uuid: string(uuid)}
			err := r.object(func(op []byte) error {
				switch string(op) {
				case "initial", "insert":
					p, err := v.readRow(r, c.uuid)
					c.uuid, c.full = p.UUID, p
					return err
				case "modify":
					d, err := v.readDiff(r)
					c.diff = d
					return err
				}
				return r.skip() // "delete": null
			})
			rows = append(rows, c)
			return err
		})
	})
	return rows, err
}

// readRow reads a whole row, uuid, (the columns monitored, default values
// left out) into a port.
func (v *View) readRow(r *jsonReader, uuid string) (*state.Port, error) {
	p, rare := &state.Port{UUID: uuid}, state.Rare{}
	err := r.object(func(col []byte) error {
		switch column := string(col); column {
		case "name":
			s, err := r.readString()
			p.Name = string(s)
			return err
		case "dynamic_addresses", "dhcpv4_options", "dhcpv6_options":
			atoms, err := v.readAtoms(r)
			if len(atoms) > 0 {
				*refField(&rare, column) = v.shareRef(column, atoms[0])
			}
			return err
		case "addresses", "port_security":
			atoms, err := v.readAtoms(r)
			slices.Sort(atoms)
			*portSetField(p, setIndex(column)) = atoms
			return err
		case "options", "external_ids":
			return v.readPairs(r, column, func(ck, val string) { setKey(p, &rare, ck, v.share(ck, val)) })
		}
		return r.skip()
	})
	p.SetRare(v.rares.Of(rare))
	pack(p)
	return p, err
}

// pack puts the strings of p that are its own — its UUID, name, owner and
// addresses — end to end in one string, and makes them parts of it: read,
// they were one allocation each, about 30 bytes a port more in all. The
// strings ports share (the switch, the network, a node) are not its own.
// ovn-sync writes one entry to both address sets: an entry of
// port_security that is an address is that address's string, and the set
// is the addresses' when both are the same.
func pack(p *state.Port) {
	own := [...]*string{&p.UUID, &p.Name, &p.Owner}
	n := 0
	for _, s := range own {
		n += len(*s)
	}
	for _, a := range p.Addresses {
		n += len(a)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range own {
		b.WriteString(*s)
	}
	for _, a := range p.Addresses {
		b.WriteString(a)
	}
	all := b.String()
	cut := func(s string) string {
		part := all[:len(s)]
		all = all[len(s):]
		return part
	}
	for _, s := range own {
		*s = cut(*s)
	}
	for i := range p.Addresses {
		p.Addresses[i] = cut(p.Addresses[i])
	}
	if slices.Equal(p.PortSecurity, p.Addresses) {
		p.PortSecurity = p.Addresses
		return
	}
	for i, e := range p.PortSecurity {
		if j, found := slices.BinarySearch(p.Addresses, e); found {
			p.PortSecurity[i] = p.Addresses[j]
		}
	}
}

// readDiff reads the columns of a "modify".
func (v *View) readDiff(r *jsonReader) (*rowDiff, error) {
	d := &rowDiff{}
	err := r.object(func(col []byte) error {
		switch column := string(col); column {
		case "name":
			s, err := r.readString()
			name := string(s)
			d.name = &name
			return err
		case "dynamic_addresses", "dhcpv4_options", "dhcpv6_options":
			atoms, err := v.readAtoms(r)
			switch column {
			case "dynamic_addresses":
				d.dynamic = &atoms
			case "dhcpv4_options":
				d.dhcp4 = &atoms
			default:
				d.dhcp6 = &atoms
			}
			return err
		case "addresses", "port_security":
			i := setIndex(column)
			atoms, err := v.readAtoms(r)
			d.sets[i], d.setChanged = atoms, d.setChanged|1<<i
			return err
		case "options", "external_ids":
			return v.readPairs(r, column, func(ck, val string) { d.pairs = append(d.pairs, [2]string{ck, val}) })
		}
		return r.skip()
	})
	return d, err
}

func setIndex(column string) int {
	if column == "addresses" {
		return 0
	}
	return 1
}

// refField is where a port's Rare keeps the 0..1 column
// dynamic_addresses, dhcpv4_options or dhcpv6_options.
func refField(r *state.Rare, column string) *string {
	switch column {
	case "dynamic_addresses":
		return &r.DynamicAddresses
	case "dhcpv4_options":
		return &r.DHCPv4
	}
	return &r.DHCPv6
}

// readAtoms reads a set of strings or UUIDs: an atom, or ["set", [atoms]].
func (v *View) readAtoms(r *jsonReader) ([]string, error) {
	c, err := r.peek()
	if err != nil {
		return nil, err
	}
	if c == '"' {
		s, err := r.readString()
		return []string{string(s)}, err
	}
	var out []string
	err = r.tagged(func(tag string) error {
		switch tag {
		case "uuid":
			s, err := r.readString()
			out = append(out, string(s))
			return err
		case "set":
			return r.array(func(int) error {
				a, err := v.readAtoms(r)
				out = append(out, a...)
				return err
			})
		}
		return r.fail(fmt.Errorf("%w: a %q value where a set was expected", errSyntax, tag))
	})
	return out, err
}

// readPairs reads a map, ["map", [[key, value]...]], calling f with each
// pair whose key is kept (see keptKeys).
func (v *View) readPairs(r *jsonReader, column string, f func(ck, val string)) error {
	keys := keptKeys[column]
	return r.tagged(func(tag string) error {
		if tag != "map" {
			return r.fail(fmt.Errorf("%w: a %q value where a map was expected", errSyntax, tag))
		}
		return r.array(func(int) error {
			var ck string
			return r.array(func(j int) error {
				s, err := r.readString()
				if err != nil {
					return err
				}
				switch {
				case j == 0:
					ck = keys[string(s)]
				case j == 1 && ck != "":
					f(ck, string(s))
				}
				return nil
			})
		})
	})
}

// modify returns old with d applied, as update2's "modify" says: a
// column's new value for a scalar, the elements (pairs) to add or take
// away for a set (map), a pair of a key present with another value
// replacing that value.
func (v *View) modify(old *state.Port, d *rowDiff) *state.Port {
	p, rare := *old, old.Rare()
	if d.name != nil {
		p.Name = *d.name
	}
	for i := range numPortSets {
		if d.setChanged&(1<<i) == 0 {
			continue
		}
		f := portSetField(&p, i)
		s := slices.Clone(*f)
		for _, e := range d.sets[i] {
			if j, found := slices.BinarySearch(s, e); found {
				s = slices.Delete(s, j, j+1)
			} else {
				s = slices.Insert(s, j, e)
			}
		}
		if len(s) == 0 {
			s = nil // as a row read whole holds an empty set
		}
		*f = s
	}
	toggle1 := func(cur *string, diff *[]string) {
		if diff == nil {
			return
		}
		var left []string
		for _, e := range *diff {
			if e != *cur || *cur == "" {
				left = append(left, e)
			}
		}
		if len(left) > 1 {
			// The old value was an empty string, present.
			left = slices.DeleteFunc(left, func(e string) bool { return e == "" })
		}
		*cur = ""
		if len(left) > 0 {
			*cur = left[0]
		}
	}
	toggle1(&rare.DynamicAddresses, d.dynamic)
	toggle1(&rare.DHCPv4, d.dhcp4)
	toggle1(&rare.DHCPv6, d.dhcp6)
	for _, kv := range d.pairs {
		if getKey(&p, &rare, kv[0]) == kv[1] {
			setKey(&p, &rare, kv[0], "") // present with the same value: taken away
		} else {
			setKey(&p, &rare, kv[0], v.share(kv[0], kv[1]))
		}
	}
	p.SetRare(v.rares.Of(rare))
	return &p
}

// portSetField is where a port keeps set column i: addresses, port_security.
func portSetField(p *state.Port, i int) *[]string {
	if i == 0 {
		return &p.Addresses
	}
	return &p.PortSecurity
}

// keptKeys are the keys of options and external_ids a port keeps, by
// column: those of state.Fields and kube-ovn's two, which adoption reads.
// Each maps to "column\x00key", how a rowDiff and portKeyField name it.
var keptKeys = func() map[string]map[string]string {
	m := map[string]map[string]string{"options": {}, "external_ids": {}}
	keep := func(column, key string) { m[column][key] = column + "\x00" + key }
	keep("external_ids", state.KeyVendor)
	keep("external_ids", state.KeyVendorSwitch)
	for i := range state.Fields {
		if f := &state.Fields[i]; f.PortKey != nil && f.Key != "" {
			keep(f.Column, f.Key)
		}
	}
	return m
}()

// keyField returns the field of state.Fields that is the key
// "column\x00key" (see keptKeys), or where r keeps it when it is
// kube-ovn's (vendor, ls), which no field is.
func keyField(r *state.Rare, ck string) (*state.Field, *string) {
	column, key, _ := strings.Cut(ck, "\x00")
	switch {
	case column == "external_ids" && key == state.KeyVendor:
		return nil, &r.Vendor
	case column == "external_ids" && key == state.KeyVendorSwitch:
		return nil, &r.VendorSwitch
	}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.PortKey != nil && f.Column == column && f.Key == key {
			if f.RareKey != nil {
				return nil, f.RareKey(r)
			}
			return f, nil
		}
	}
	panic("portview: key not kept: " + ck)
}

// setKey sets the key ck of a port being read, p with its rare fields r
// apart, to val.
func setKey(p *state.Port, r *state.Rare, ck, val string) {
	if f, at := keyField(r, ck); f != nil {
		f.SetPortKey(p, val)
	} else {
		*at = val
	}
}

// getKey returns the key ck of a port being read, as setKey.
func getKey(p *state.Port, r *state.Rare, ck string) string {
	f, at := keyField(r, ck)
	if f != nil {
		return f.PortKey(p)
	}
	return *at
}

// sharedKeys are the keys whose values repeat across rows: they are
// interned.
var sharedKeys = map[string]bool{
	"external_ids\x00" + state.KeySwitch: true, "external_ids\x00" + state.KeyNetwork: true,
	"external_ids\x00" + state.KeyVendor: true, "external_ids\x00" + state.KeyVendorSwitch: true,
	"options\x00" + state.OptRequestedChassis: true, "options\x00" + state.OptActivationStrategy: true,
	sharedRef: true,
}

// shareRef returns the UUID a dhcpv4_options or dhcpv6_options column
// refers to, interned: every port of a subnet refers to one row.
func (v *View) shareRef(column, uuid string) string {
	if column == "dynamic_addresses" {
		return uuid
	}
	return v.share(sharedRef, uuid)
}

// sharedRef is share's key for the DHCP_Options references.
const sharedRef = "\x00dhcp"

// share returns val, interned when key's values repeat across rows.
func (v *View) share(ck, val string) string {
	if !sharedKeys[ck] {
		return val
	}
	return v.shared.Get(val)
}
