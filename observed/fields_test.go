package observed

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestFieldsRoundTrip changes each field of state.Fields alone, one after
// the other, and follows the change through every place that handles
// fields: Equal and Sum see it, diff.Compute reports exactly that field (a
// port's switch: a move), Plan.ApplyTo carries it, the plan's text and JSON
// show it, apply writes that column or key and nothing else, the NB row
// holds it there, and the port view or SwitchFromRow reads it back. A field
// left out of any of them fails here; state's TestFieldsCoverPortAndSwitch
// fails for a field of Port or Switch left out of state.Fields.
func TestFieldsRoundTrip(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		e, err := StartEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		testFieldsRoundTrip(t, dial(t, e.Endpoint, false))
	})
	t.Run("ovsdb-server", func(t *testing.T) {
		testFieldsRoundTrip(t, dial(t, nbtest.Start(t).Addr(), true))
	})
}

// recorder passes operations on to the NB and keeps them.
type recorder struct {
	nb  apply.Transactor
	mu  sync.Mutex
	ops []ovsdb.Operation
}

func (r *recorder) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	r.mu.Lock()
	r.ops = append(r.ops, ops...)
	r.mu.Unlock()
	return r.nb.Transact(ctx, ops...)
}

// fieldValue is the value of field i in generation gen ("a" or "b"): a
// switch name for the placement field, and otherwise a value no other field
// has.
// A reference names a DHCP_Options row of ours, which want() holds.
func fieldValue(i int, gen string) string {
	if state.Fields[i].Placement {
		return "sw-" + gen
	}
	if state.Fields[i].Ref != "" {
		return "sw-a/" + gen + strconv.Itoa(i)
	}
	return gen + strconv.Itoa(i)
}

func setField(f *state.Field, p *state.Port, s *state.Switch, v string) {
	switch {
	case p != nil && f.PortKey != nil:
		f.SetPortKey(p, v)
	case p != nil && f.PortSet != nil:
		*f.PortSet(p) = []string{v}
	case s != nil && f.SwitchKey != nil:
		*f.SwitchKey(s) = v
	}
}

// column returns the value of column col in an NB row model, by its ovsdb
// tag: what the NB holds, read without observed.
func column(row any, col string) any {
	v := reflect.ValueOf(row).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("ovsdb") == col {
			return v.Field(i).Interface()
		}
	}
	return nil
}

// holds reports whether NB row row holds v in field f: as the one element
// of a set column, as the value of f's key, or, for a reference, as the
// UUID of the row of ours named v in got.
func holds(row any, f *state.Field, v string, got state.State) bool {
	switch c := column(row, f.Column).(type) {
	case *string:
		return f.Ref != "" && c != nil && got.DHCP[v] != nil && *c == got.DHCP[v].UUID
	case []string:
		return f.Key == "" && slices.Equal(c, []string{v})
	case map[string]string:
		return f.Key != "" && c[f.Key] == v
	}
	return false
}

// jsonShows reports whether the "after" of one of the JSON plan's changes
// has v as a value, or as the element of a list.
func jsonShows(t *testing.T, p diff.Plan, v string) bool {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json.Marshal(plan): %v", err)
	}
	var j struct {
		Changes []struct {
			After map[string]any `json:"after"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	for _, c := range j.Changes {
		for _, x := range c.After {
			if x == v || reflect.DeepEqual(x, []any{v}) {
				return true
			}
		}
	}
	return false
}

func testFieldsRoundTrip(t *testing.T, nb *NB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "p.default"
	ref := referenceClient(t, nb.client.CurrentEndpoint())
	port := &state.Port{Name: name}
	switches := map[string]*state.Switch{"sw-a": {Name: "sw-a"}, "sw-b": {Name: "sw-b"}}
	for i := range state.Fields {
		f := &state.Fields[i]
		setField(f, port, nil, fieldValue(i, "a"))
		for _, s := range switches {
			setField(f, nil, s, fieldValue(i, "a"))
		}
	}
	dhcp := map[string]*state.DHCPOptions{}
	for i := range state.Fields {
		if state.Fields[i].Ref != "" {
			for _, gen := range []string{"a", "b"} {
				v := fieldValue(i, gen)
				dhcp[v] = &state.DHCPOptions{Name: v, Owner: "ovn-sync", CIDR: "10.0.0.0/24", Options: map[string]string{"server_id": "10.0.0.1"}}
			}
		}
	}
	want := func() state.State {
		return state.State{Switches: map[string]*state.Switch{"sw-a": switches["sw-a"], "sw-b": switches["sw-b"]},
			Ports: state.PortsOf(map[string]*state.Port{name: port}), DHCP: dhcp}
	}
	// converge applies the plan from the NB to want() through rec, waits
	// until the NB reads back as want(), and returns the plan and what the
	// NB holds.
	converge := func(t *testing.T, rec *recorder) (diff.Plan, state.State) {
		t.Helper()
		have := nb.State()
		plan := diff.Compute(want(), have, diff.Policy{})
		if _, err := apply.Apply(ctx, rec, plan, apply.Options{}); err != nil {
			t.Fatalf("Apply(%s): %v", plan, err)
		}
		var got state.State
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			got = nb.State()
			p, a, b := got.Ports.Get(name), got.Switches["sw-a"], got.Switches["sw-b"]
			if p != nil && p.Equal(port) && a != nil && a.Equal(switches["sw-a"]) && b != nil && b.Equal(switches["sw-b"]) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after Apply(%s) the NB reads back\nport %+v\nsw-a %+v\nsw-b %+v\nwant\nport %+v\nsw-a %+v\nsw-b %+v",
					plan, p, a, b, port, switches["sw-a"], switches["sw-b"])
			}
		}
		if again := diff.Compute(want(), got, diff.Policy{}); !again.Empty() {
			t.Fatalf("Compute(want, NB after Apply) = %s, want no changes", again)
		}
		return plan, got
	}
	// The creates show every field: the owner on the header line, the
	// others beneath it.
	created, _ := converge(t, &recorder{nb: nb.Client()})
	text := created.String()
	for i := range state.Fields {
		f := &state.Fields[i]
		shown := fmt.Sprintf("+ %s: %q\n", f.Name(), fieldValue(i, "a"))
		if i == state.FieldOwner {
			shown = fmt.Sprintf(" (%s): ", fieldValue(i, "a"))
		}
		if !strings.Contains(text, shown) {
			t.Errorf("%s: the plan of creates reads\n%s\nwithout %q", f.Name(), text, shown)
		}
	}

	for i := range state.Fields {
		f := &state.Fields[i]
		var kinds []diff.Kind
		if f.PortKey != nil || f.PortSet != nil {
			kinds = append(kinds, diff.KindPort)
		}
		if f.SwitchKey != nil {
			kinds = append(kinds, diff.KindSwitch)
		}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/%s", f.Name(), kind), func(t *testing.T) {
				bit := diff.Fields(1) << i
				before, after := fieldValue(i, "a"), fieldValue(i, "b")
				have := nb.State()
				if kind == diff.KindPort {
					prev, next := port, *port
					// next shares prev's slices: setField replaces a set, never writes into it.
					setField(f, &next, nil, after)
					if next.Equal(prev) {
						t.Errorf("Port.Equal does not see %q -> %q", before, after)
					}
					if next.Sum() == prev.Sum() {
						t.Errorf("Port.Sum does not change with %q -> %q", before, after)
					}
					port = &next
				} else {
					prev, next := switches["sw-a"], *switches["sw-a"]
					setField(f, nil, &next, after)
					if next.Equal(prev) {
						t.Errorf("Switch.Equal does not see %q -> %q", before, after)
					}
					switches["sw-a"] = &next
				}

				plan := diff.Compute(want(), have, diff.Policy{})
				if f.Placement {
					if len(plan.Changes) != 2 || plan.Changes[0].Action != diff.Delete || plan.Changes[1].Action != diff.Create {
						t.Errorf("Compute = %s, want the port moved (a delete and a create)", plan)
					}
				} else if len(plan.Changes) != 1 || plan.Changes[0].Action != diff.Update || plan.Changes[0].Kind != kind || plan.Changes[0].Fields != bit {
					t.Errorf("Compute = %s (fields %v), want one update of a %s with fields %v", plan, changeFields(plan), kind, bit)
				}
				res := plan.ApplyTo(have)
				if p := res.Ports.Get(name); p == nil || !p.Equal(port) {
					t.Errorf("ApplyTo(have).Ports[%s] = %+v, want %+v", name, p, port)
				}
				if s := res.Switches["sw-a"]; s == nil || !s.Equal(switches["sw-a"]) {
					t.Errorf("ApplyTo(have).Switches[sw-a] = %+v, want %+v", s, switches["sw-a"])
				}
				shown := fmt.Sprintf("~ %s: %q -> %q\n", f.Name(), before, after)
				if f.Placement {
					shown = fmt.Sprintf("+ %s: %q\n", f.Name(), after)
				}
				if text := plan.String(); !strings.Contains(text, shown) {
					t.Errorf("the plan reads\n%s\nwithout %q", text, shown)
				}
				if !jsonShows(t, plan, after) {
					t.Errorf("the plan's JSON has no change whose after holds %q", after)
				}

				rec := &recorder{nb: nb.Client()}
				_, got := converge(t, rec)
				table := nbdb.LogicalSwitchPortTable
				if kind == diff.KindSwitch {
					table = nbdb.LogicalSwitchTable
				}
				if !f.Placement {
					if err := writesOnly(rec.ops, table, f, after, got); err != nil {
						t.Errorf("apply: %v", err)
					}
				}
				// The row holds the value in f's column, read without
				// observed's conversion: by a client of libovsdb's generic
				// cache, which follows the server on its own.
				uuid := got.Ports.Get(name).UUID
				if kind == diff.KindSwitch {
					uuid = got.Switches["sw-a"].UUID
				}
				var row any
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					row = ref.Cache().Table(table).Row(uuid)
					if row != nil && holds(row, f, after, got) || time.Now().After(deadline) {
						break
					}
				}
				if row == nil || !holds(row, f, after, got) {
					t.Errorf("the NB row %+v does not hold %q in %s", row, after, f.Name())
				}
			})
		}
	}
}

func changeFields(p diff.Plan) []diff.Fields {
	var fs []diff.Fields
	for _, c := range p.Changes {
		fs = append(fs, c.Fields)
	}
	return fs
}

// writesOnly returns an error unless ops are one mutate of table that
// writes field f, to v, and no other column or key; a reference is
// written as the UUID got has for the row named v.
func writesOnly(ops []ovsdb.Operation, table string, f *state.Field, v string, got state.State) error {
	if f.Ref != "" {
		// A reference is written whole, by one update of that column.
		if len(ops) != 1 || ops[0].Op != ovsdb.OperationUpdate || ops[0].Table != table {
			return fmt.Errorf("sent %d operations %+v, want one update of %s", len(ops), ops, table)
		}
		want := ovsdb.Row{f.Column: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: got.DHCP[v].UUID}}}}
		if !reflect.DeepEqual(ops[0].Row, want) {
			return fmt.Errorf("update writes %v, want %v", ops[0].Row, want)
		}
		return nil
	}
	if len(ops) != 1 || ops[0].Op != ovsdb.OperationMutate || ops[0].Table != table {
		return fmt.Errorf("sent %d operations %+v, want one mutate of %s", len(ops), ops, table)
	}
	inserted := false
	for _, m := range ops[0].Mutations {
		if m.Column != f.Column {
			return fmt.Errorf("mutates column %s, want only %s", m.Column, f.Column)
		}
		switch val := m.Value.(type) {
		case ovsdb.OvsSet:
			if f.Key != "" && !reflect.DeepEqual(val.GoSet, []any{f.Key}) {
				return fmt.Errorf("%s %s %v, want only the key %q", m.Column, m.Mutator, val.GoSet, f.Key)
			}
			if f.Key == "" && m.Mutator == ovsdb.MutateOperationInsert {
				inserted = reflect.DeepEqual(val.GoSet, []any{v})
			}
		case ovsdb.OvsMap:
			inserted = reflect.DeepEqual(val.GoMap, map[any]any{f.Key: v})
		}
	}
	if !inserted {
		return fmt.Errorf("mutations %+v do not insert %q", ops[0].Mutations, v)
	}
	return nil
}
