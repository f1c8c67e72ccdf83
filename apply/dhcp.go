package apply

import (
	"fmt"
	"strings"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// Column names of DHCP_Options, from nbdb/ovn-nb.ovsschema.
const (
	colDHCPCIDR     = "cidr"
	colDHCPOptions  = "options"
	colDHCPExternal = "external_ids"
)

// refs resolves what a port's reference fields hold, the name of a
// DHCP_Options row of ours or the UUID of a row that is not ours, to a
// UUID: a row the plan created (read from the first phase's results), else
// an observed row of ours (diff.Plan.DHCPUUIDs).
type refs struct {
	created, observed map[string]string
}

// uuid returns the UUID v stands for, "" for "", and false when v names a
// row of ours that neither exists nor is created.
func (r refs) uuid(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	if u := r.created[v]; u != "" {
		return u, true
	}
	if u := r.observed[v]; u != "" {
		return u, true
	}
	// Our rows' names hold a slash ("<switch>/ipv4"); a UUID does not: it
	// is a reference, observed, to a row that is not ours.
	return v, !strings.Contains(v, "/")
}

// set returns v's reference as an OVSDB set of zero or one UUID. check has
// made sure every value resolves.
func (r refs) set(v string) ovsdb.OvsSet {
	if u, ok := r.uuid(v); ok && u != "" {
		return uuidSet([]string{u})
	}
	return ovsdb.OvsSet{GoSet: []any{}}
}

// check returns an error naming the port and row when a reference c
// writes, or the one it replaces, does not resolve.
func (r refs) check(c *diff.Change) error {
	for i := range state.Fields {
		f := &state.Fields[i]
		if f.Ref == "" {
			continue
		}
		for _, p := range []*state.Port{c.Before, c.After} {
			if p == nil {
				continue
			}
			if v := f.PortKey(p); v != "" {
				if _, ok := r.uuid(v); !ok {
					return fmt.Errorf("port %q: %s %q: no such row observed or created", c.Name, f.Column, v)
				}
			}
		}
	}
	return nil
}

// dhcpCreate appends the insert of DHCP_Options row d. The table has no
// index, and OVSDB's wait cannot ask for no rows (libovsdb leaves an empty
// "rows" out), so a retried insert whose first attempt committed makes a
// second row of the name: observed reads it under a name of its own, which
// no pass desires, and the next plan deletes it.
func (t *txn) dhcpCreate(d *state.DHCPOptions) {
	ids := map[any]any{state.KeyDHCP: d.Name, state.KeyOwner: d.Owner}
	if d.Network != "" {
		ids[state.KeyNetwork] = d.Network
	}
	opts := make(map[any]any, len(d.Options))
	for k, v := range d.Options {
		opts[k] = v
	}
	i := t.add(ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, Row: ovsdb.Row{
		colDHCPCIDR: d.CIDR, colDHCPOptions: ovsdb.OvsMap{GoMap: opts}, colDHCPExternal: ovsdb.OvsMap{GoMap: ids},
	}}, anyCount)
	if t.insertedDHCP == nil {
		t.insertedDHCP = map[int]string{}
	}
	t.insertedDHCP[i] = d.Name
	t.created++
}

// dhcpUpdate appends what c's update of a DHCP_Options row writes (see
// diff.DiffDHCP): an update of cidr when it changed, and one mutate of the
// option keys and external_ids:ovn-sync/network that changed, each key
// deleted and then inserted again when it has a new value. Both operations
// are addressed by UUID and must match the row. It is two operations at
// most; switchTxns reserves two.
func (t *txn) dhcpUpdate(c *diff.Change) {
	d := diff.DiffDHCP(c.DHCPBefore, c.DHCPAfter)
	where := []ovsdb.Condition{uuidCond(c.DHCPBefore.UUID)}
	if d.CIDR {
		t.add(ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.DHCPOptionsTable, Where: where,
			Row: ovsdb.Row{colDHCPCIDR: c.DHCPAfter.CIDR}}, oneRow)
	}
	var muts []ovsdb.Mutation
	if len(d.Set)+len(d.Remove) > 0 {
		del := make([]any, 0, len(d.Set)+len(d.Remove))
		set := make(map[any]any, len(d.Set))
		for _, k := range d.Set {
			del = append(del, k)
			set[k] = c.DHCPAfter.Options[k]
		}
		for _, k := range d.Remove {
			del = append(del, k)
		}
		muts = append(muts, ovsdb.Mutation{Column: colDHCPOptions, Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: del}})
		if len(set) > 0 {
			muts = append(muts, ovsdb.Mutation{Column: colDHCPOptions, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: set}})
		}
	}
	if d.Network {
		muts = append(muts, ovsdb.Mutation{Column: colDHCPExternal, Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{state.KeyNetwork}}})
		if c.DHCPAfter.Network != "" {
			muts = append(muts, ovsdb.Mutation{Column: colDHCPExternal, Mutator: ovsdb.MutateOperationInsert,
				Value: ovsdb.OvsMap{GoMap: map[any]any{state.KeyNetwork: c.DHCPAfter.Network}}})
		}
	}
	if len(muts) > 0 {
		t.add(ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.DHCPOptionsTable, Where: where, Mutations: muts}, oneRow)
	}
	t.updated++
}

// dhcpDeleteTxns returns the phase after the ports': the deletes of our
// DHCP_Options rows that are no longer desired, at most max a transaction,
// each addressed by UUID. The plan has updated or deleted the ports of
// ours that referred to them; a port of someone else's that still does
// loses the reference (the column is a weak reference).
func dhcpDeleteTxns(plan diff.Plan, max int) []txn {
	var txns []txn
	var t txn
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Kind != diff.KindDHCP || c.Action != diff.Delete {
			continue
		}
		if len(t.ops)+1 > max {
			txns = append(txns, t)
			t = txn{}
		}
		t.add(ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.DHCPOptionsTable,
			Where: []ovsdb.Condition{uuidCond(c.DHCPBefore.UUID)}}, oneRow)
		t.deleted++
	}
	if len(t.ops) > 0 {
		txns = append(txns, t)
	}
	return txns
}
