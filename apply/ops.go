package apply

import (
	"cmp"
	"iter"
	"strconv"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// Column names, from nbdb/ovn-nb.ovsschema. The columns of the managed
// fields are state.Fields'.
const (
	colUUID  = "_uuid"
	colName  = "name"
	colPorts = "ports"
)

// expect is what a successful operation's result must show beyond the
// absence of an error.
type expect uint8

const (
	// anyCount: inserts, waits, and mutations found by content.
	anyCount expect = iota
	// oneRow: an operation addressed by _uuid (and, for set columns, by
	// their old value) must match exactly one row; none means the row
	// changed or vanished since it was observed.
	oneRow
	// switchDeleted: a switch delete matches one row, or none when the
	// switch still has ports (or has vanished); it is then refused.
	switchDeleted
)

// txn is one transaction: its operations, what their results must show,
// and the plan changes it carries out (for Result).
type txn struct {
	ops    []ovsdb.Operation
	expect []expect
	// created, updated and deleted count the changes of the plan the txn
	// carries out.
	created, updated, deleted int
	// inserted names, by operation index, the switches the txn creates, so
	// that their UUIDs can be read from its results; insertedDHCP the same
	// for DHCP_Options rows.
	inserted, insertedDHCP map[int]string
	// sw is the switch a switch-delete txn deletes.
	sw string
}

func (t *txn) add(op ovsdb.Operation, e expect) int {
	t.ops = append(t.ops, op)
	t.expect = append(t.expect, e)
	return len(t.ops) - 1
}

func uuidCond(uuid string) ovsdb.Condition {
	return ovsdb.NewCondition(colUUID, ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: uuid})
}

func stringSet(s []string) ovsdb.OvsSet {
	set := make([]any, len(s))
	for i, e := range s {
		set[i] = e
	}
	return ovsdb.OvsSet{GoSet: set}
}

func uuidSet(uuids []string) ovsdb.OvsSet {
	set := make([]any, len(uuids))
	for i, u := range uuids {
		set[i] = ovsdb.UUID{GoUUID: u}
	}
	return ovsdb.OvsSet{GoSet: set}
}

// setKey sets the key of field f to v in a new row, adding f's map column
// to the row when it is not there yet. An empty v is unset: the row is left
// as it is, so a map column none of whose keys is set is left out.
func setKey(row ovsdb.Row, f *state.Field, v string) {
	if v == "" {
		return
	}
	m, ok := row[f.Column].(ovsdb.OvsMap)
	if !ok {
		m = ovsdb.OvsMap{GoMap: map[any]any{}}
		row[f.Column] = m
	}
	m.GoMap[f.Key] = v
}

// appendKeyMutations appends to muts the mutations that set and remove the
// map keys the fields of f own, and touch no other key; the set columns of
// f are the caller's. value gives a field's new value ("" removes the key).
// One map column after another, in the order of its first field in f, the
// column's keys are deleted and then those to set inserted again in the
// same operation, because a mutate insert leaves a key that exists
// unchanged; mutations apply in order.
func appendKeyMutations(muts []ovsdb.Mutation, f diff.Fields, value func(*state.Field) string) []ovsdb.Mutation {
	for rest := f; rest != 0; {
		d := (rest & -rest).Field()
		if d == nil || d.Key == "" {
			rest &= rest - 1
			continue
		}
		var keys []any
		set := map[any]any{}
		for g := range rest.All() {
			if e := g.Field(); e != nil && e.Key != "" && e.Column == d.Column {
				rest &^= g
				keys = append(keys, e.Key)
				if v := value(e); v != "" {
					set[e.Key] = v
				}
			}
		}
		muts = append(muts, ovsdb.Mutation{Column: d.Column, Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: keys}})
		if len(set) > 0 {
			muts = append(muts, ovsdb.Mutation{Column: d.Column, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: set}})
		}
	}
	return muts
}

// switchCreate appends the operations creating switch s: a wait that no
// switch of that name exists (Logical_Switch has no index on name, so this
// is what keeps a retried or concurrent create from making a second one),
// then the insert.
func (t *txn) switchCreate(s *state.Switch) {
	t.add(ovsdb.Operation{
		Op: ovsdb.OperationWait, Table: nbdb.LogicalSwitchTable, Timeout: new(0),
		Where:   []ovsdb.Condition{ovsdb.NewCondition(colName, ovsdb.ConditionEqual, s.Name)},
		Columns: []string{colName}, Until: string(ovsdb.WaitConditionNotEqual),
		Rows: []ovsdb.Row{{colName: s.Name}},
	}, anyCount)
	// ports is written empty rather than left out, and so are the set
	// columns of ports: libovsdb's in-memory server keeps a column left out
	// as nil and then never matches it against an empty set in a where
	// clause, which the guards of updates and switch deletes rely on.
	row := ovsdb.Row{colName: s.Name, colPorts: ovsdb.OvsSet{GoSet: []any{}}}
	for i := range state.Fields {
		if f := &state.Fields[i]; f.SwitchKey != nil {
			setKey(row, f, *f.SwitchKey(s))
		}
	}
	i := t.add(ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: row}, anyCount)
	if t.inserted == nil {
		t.inserted = map[int]string{}
	}
	t.inserted[i] = s.Name
	t.created++
}

// switchUpdate appends the mutate writing c's changed keys to its switch.
func (t *txn) switchUpdate(c *diff.Change) {
	muts := appendKeyMutations(nil, c.Fields, func(f *state.Field) string {
		if f.SwitchKey == nil {
			return ""
		}
		return *f.SwitchKey(c.SwitchAfter)
	})
	t.add(ovsdb.Operation{
		Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
		Where: []ovsdb.Condition{uuidCond(c.SwitchBefore.UUID)}, Mutations: muts,
	}, oneRow)
	t.updated++
}

// portInsert returns the insert of port p under the named UUID name: its
// name and every field of state.Fields that ports have, the set columns
// written even when empty (see switchCreate), the keys when set, and the
// references as the UUIDs refs gives for the rows they name.
func portInsert(p *state.Port, name string, refs refs) ovsdb.Operation {
	row := ovsdb.Row{colName: p.Name}
	for i := range state.Fields {
		switch f := &state.Fields[i]; {
		case f.Ref != "":
			row[f.Column] = refs.set(f.PortKey(p))
		case f.PortSet != nil:
			row[f.Column] = stringSet(*f.PortSet(p))
		case f.PortKey != nil:
			setKey(row, f, f.PortKey(p))
		}
	}
	return ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, Row: row, UUIDName: name}
}

// portUpdate returns the operations that write c's changed fields to its
// port: one mutate of the set columns first, then the map keys, and, when
// a reference changed, one update of the reference columns before it. A
// set column is replaced by deleting its old elements and inserting the
// new ones, so the where clause also requires the old value: if someone
// changed it since it was observed, nothing matches and the transaction is
// reported stale rather than leaving a mix. A reference column (zero or
// one UUID, refs giving the UUIDs of the rows named) is written whole by
// the update, whose where clause requires its old value in the same way.
func portUpdate(c *diff.Change, refs refs) []ovsdb.Operation {
	where := []ovsdb.Condition{uuidCond(c.Before.UUID)}
	var ops []ovsdb.Operation
	var muts []ovsdb.Mutation
	for g := range c.Fields.All() {
		f := g.Field()
		if f != nil && f.Ref != "" {
			if len(ops) == 0 {
				ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable,
					Where: []ovsdb.Condition{uuidCond(c.Before.UUID)}, Row: ovsdb.Row{}})
			}
			ops[0].Where = append(ops[0].Where, ovsdb.NewCondition(f.Column, ovsdb.ConditionEqual, refs.set(f.PortKey(c.Before))))
			ops[0].Row[f.Column] = refs.set(f.PortKey(c.After))
			continue
		}
		if f == nil || f.PortSet == nil {
			continue
		}
		before, after := *f.PortSet(c.Before), *f.PortSet(c.After)
		where = append(where, ovsdb.NewCondition(f.Column, ovsdb.ConditionEqual, stringSet(before)))
		if len(before) > 0 {
			muts = append(muts, ovsdb.Mutation{Column: f.Column, Mutator: ovsdb.MutateOperationDelete, Value: stringSet(before)})
		}
		if len(after) > 0 {
			muts = append(muts, ovsdb.Mutation{Column: f.Column, Mutator: ovsdb.MutateOperationInsert, Value: stringSet(after)})
		}
	}
	muts = appendKeyMutations(muts, c.Fields, func(f *state.Field) string {
		if f.PortKey == nil || f.Ref != "" {
			return ""
		}
		return f.PortKey(c.After)
	})
	if len(muts) > 0 {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchPortTable, Where: where, Mutations: muts})
	}
	return ops
}

// onSwitch returns the wait that lets an update recording a port's switch
// (c.Fields has diff.FieldSwitch) commit only if that switch holds the
// port: the cache does not monitor Logical_Switch.ports, so the switch the
// port is recorded on was inferred (kube-ovn's external_ids:ls, or the
// port's network), and a port that is elsewhere must not be labelled so.
// If it fails, the transaction fails as stale and nothing is written.
func onSwitch(c *diff.Change) ovsdb.Operation {
	port := ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: c.Before.UUID}}}
	return ovsdb.Operation{
		Op: ovsdb.OperationWait, Table: nbdb.LogicalSwitchTable, Timeout: new(0),
		Where:   []ovsdb.Condition{uuidCond(c.SwitchUUID), ovsdb.NewCondition(colPorts, ovsdb.ConditionIncludes, port)},
		Columns: []string{colName}, Until: string(ovsdb.WaitConditionEqual),
		Rows: []ovsdb.Row{{colName: c.After.Switch}},
	}
}

// switchTxns returns the first phase: switch creates and updates, and
// DHCP_Options creates and updates.
func switchTxns(plan diff.Plan, max int) []txn {
	var txns []txn
	var t txn
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Kind == diff.KindPort || c.Action == diff.Delete {
			continue
		}
		need := 1
		if c.Action == diff.Create || c.Kind == diff.KindDHCP {
			need = 2
		}
		if len(t.ops)+need > max {
			txns = append(txns, t)
			t = txn{}
		}
		switch {
		case c.Kind == diff.KindDHCP && c.Action == diff.Create:
			t.dhcpCreate(c.DHCPAfter)
		case c.Kind == diff.KindDHCP:
			t.dhcpUpdate(c)
		case c.Action == diff.Create:
			t.switchCreate(c.SwitchAfter)
		default:
			t.switchUpdate(c)
		}
	}
	if len(t.ops) > 0 {
		txns = append(txns, t)
	}
	return txns
}

// batcher packs port changes into transactions of at most max rows, with
// one mutate of each switch's ports per transaction.
type batcher struct {
	max int
	// mutator is what this phase's switch mutates do to ports. An insert
	// mutate counts as a row of its own (its ports were counted by their
	// inserts); a delete mutate counts as one row per port it removes.
	mutator ovsdb.Mutator

	// yield receives each transaction as it is closed; once it returns
	// false, stopped is set and no more are passed to it.
	yield   func(txn) bool
	stopped bool
	t       txn
	size    int // rows of t so far; never less than its operations
	// ports holds the port UUIDs (or named UUIDs) to add to or remove from
	// each switch t mutates, in order; order lists those switches as first
	// used; named counts t's named UUIDs.
	ports map[string][]string
	order []string
	named int
}

func newBatcher(max int, m ovsdb.Mutator, yield func(txn) bool) *batcher {
	return &batcher{max: max, mutator: m, yield: yield, ports: map[string][]string{}}
}

// reserve makes room in the current transaction for rows more rows, plus,
// where mutates count, the mutate of switch sw if the transaction does not
// mutate it yet (sw "" is none). It starts a new transaction when they do
// not fit. A port's addPort must follow its reserve.
func (b *batcher) reserve(rows int, sw string) {
	need := func() int {
		if _, ok := b.ports[sw]; sw != "" && !ok && b.mutator == ovsdb.MutateOperationInsert {
			return rows + 1
		}
		return rows
	}
	if b.size+need() > b.max {
		b.flush()
	}
	b.size += need()
}

// addPort adds a port (a UUID or named UUID) to switch sw's mutate.
func (b *batcher) addPort(sw, port string) {
	if _, ok := b.ports[sw]; !ok {
		b.order = append(b.order, sw)
	}
	b.ports[sw] = append(b.ports[sw], port)
}

// flush closes the current transaction. The switch mutates go last, after
// the inserts whose named UUIDs they reference.
func (b *batcher) flush() {
	for _, sw := range b.order {
		b.t.add(ovsdb.Operation{
			Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{uuidCond(sw)},
			Mutations: []ovsdb.Mutation{{Column: colPorts, Mutator: b.mutator, Value: uuidSet(b.ports[sw])}},
		}, oneRow)
	}
	if len(b.t.ops) > 0 && !b.stopped && !b.yield(b.t) {
		b.stopped = true
	}
	b.t, b.size, b.order, b.named = txn{}, 0, b.order[:0], 0
	clear(b.ports)
}

// portTxns returns the second and third phases, each built one transaction
// at a time as it is iterated, so that only the transactions in flight are
// held. First the deletes, as one ports delete per switch per transaction;
// then the updates and creates: one mutate per updated port, one insert
// per new port and one ports insert per switch per transaction. A delete
// and a create never share a transaction, nor a phase: they may touch the
// same switch, and a moved port's name must be gone before it is inserted
// again. Each port a delete removes counts as one toward max, as it
// deletes a row.
//
// switches gives the UUIDs of the switches the first phase created, by
// name; a port to create on a switch with no UUID is an error, returned
// before anything is built.
//
// refs gives the UUIDs of the DHCP_Options rows ports refer to; a port to
// create or update whose reference it cannot resolve is an error, returned
// before anything is built too.
func portTxns(plan diff.Plan, switches map[string]string, refs refs, max int) (deletes, upserts iter.Seq[txn], err error) {
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Kind == diff.KindPort && c.Action == diff.Create && c.SwitchUUID == "" && switches[c.After.Switch] == "" {
			return nil, nil, errNoSwitch(c)
		}
		if c.Kind == diff.KindPort && c.Action != diff.Delete {
			if err := refs.check(c); err != nil {
				return nil, nil, err
			}
		}
	}
	return portDeletes(plan, max), portUpserts(plan, switches, refs, max), nil
}

// portDeletes is portTxns' second phase: the deletes.
func portDeletes(plan diff.Plan, max int) iter.Seq[txn] {
	return func(yield func(txn) bool) {
		del := newBatcher(max, ovsdb.MutateOperationDelete, yield)
		for i := range plan.Changes {
			c := &plan.Changes[i]
			if c.Kind != diff.KindPort || c.Action != diff.Delete {
				continue
			}
			if del.stopped {
				return
			}
			if c.SwitchUUID != "" {
				del.reserve(1, c.SwitchUUID)
				del.addPort(c.SwitchUUID, c.Before.UUID)
			} else {
				// No switch of the recorded name is observed: remove the
				// port from whichever switch holds it. This is the one
				// operation found by content rather than by UUID, so it may
				// reach a switch another operation of the transaction
				// mutates too, which OVSDB applies in order.
				del.reserve(1, "")
				uuid := ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: c.Before.UUID}}}
				del.t.add(ovsdb.Operation{
					Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
					Where:     []ovsdb.Condition{ovsdb.NewCondition(colPorts, ovsdb.ConditionIncludes, uuid)},
					Mutations: []ovsdb.Mutation{{Column: colPorts, Mutator: ovsdb.MutateOperationDelete, Value: uuid}},
				}, anyCount)
			}
			del.t.deleted++
		}
		del.flush()
	}
}

// portUpserts is portTxns' third phase: the updates, then the creates.
func portUpserts(plan diff.Plan, switches map[string]string, refs refs, max int) iter.Seq[txn] {
	return func(yield func(txn) bool) {
		up := newBatcher(max, ovsdb.MutateOperationInsert, yield)
		for i := range plan.Changes {
			c := &plan.Changes[i]
			if c.Kind != diff.KindPort || c.Action != diff.Update {
				continue
			}
			if up.stopped {
				return
			}
			ops := portUpdate(c, refs)
			if c.Fields.Has(diff.FieldSwitch) && c.SwitchUUID != "" {
				up.reserve(1+len(ops), "")
				up.t.add(onSwitch(c), anyCount)
			} else {
				up.reserve(len(ops), "")
			}
			for _, op := range ops {
				up.t.add(op, oneRow)
			}
			up.t.updated++
		}
		for i := range plan.Changes {
			c := &plan.Changes[i]
			if c.Kind != diff.KindPort || c.Action != diff.Create {
				continue
			}
			if up.stopped {
				return
			}
			sw := cmp.Or(c.SwitchUUID, switches[c.After.Switch])
			up.reserve(1, sw)
			name := "lsp" + strconv.Itoa(up.named)
			up.named++
			up.t.add(portInsert(c.After, name, refs), anyCount)
			up.addPort(sw, name)
			up.t.created++
		}
		up.flush()
	}
}

// switchDeleteTxns returns the last phase: one transaction per switch
// delete, so that a switch that cannot be deleted does not hold up the
// others. Each waits until the switch's ports are empty (timeout 0: it
// fails at once if not) and deletes it only if they are, so that a port
// someone else put on our switch makes the delete fail rather than being
// garbage collected with it. The where clause repeats the condition for
// servers, like libovsdb's in-memory one, whose wait ignores an empty set.
func switchDeleteTxns(plan diff.Plan) []txn {
	var txns []txn
	empty := ovsdb.OvsSet{GoSet: []any{}}
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Kind != diff.KindSwitch || c.Action != diff.Delete {
			continue
		}
		t := txn{sw: c.Name, deleted: 1}
		t.add(ovsdb.Operation{
			Op: ovsdb.OperationWait, Table: nbdb.LogicalSwitchTable, Timeout: new(0),
			Where:   []ovsdb.Condition{uuidCond(c.SwitchBefore.UUID)},
			Columns: []string{colPorts}, Until: string(ovsdb.WaitConditionEqual),
			Rows: []ovsdb.Row{{colPorts: empty}},
		}, anyCount)
		t.add(ovsdb.Operation{
			Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable,
			Where: []ovsdb.Condition{uuidCond(c.SwitchBefore.UUID), ovsdb.NewCondition(colPorts, ovsdb.ConditionEqual, empty)},
		}, switchDeleted)
		txns = append(txns, t)
	}
	return txns
}
