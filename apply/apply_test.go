package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// Columns the tests write as someone other than ovn-sync would; ovn-sync's
// own are named by state.Fields.
const (
	colAddresses   = "addresses"
	colOptions     = "options"
	colExternalIDs = "external_ids"
	colOtherConfig = "other_config"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// transact sends ops as someone other than ovn-sync would.
func transact(t *testing.T, c client.Client, ops ...ovsdb.Operation) []ovsdb.OperationResult {
	t.Helper()
	res, err := c.Transact(testCtx(t), ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		t.Fatalf("transact: %v", err)
	}
	return res
}

// addForeignPort puts a port ovn-sync does not own on switch sw.
func addForeignPort(t *testing.T, c client.Client, sw, name string) {
	t.Helper()
	transact(t, c,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "p",
			Row: ovsdb.Row{colName: name, colAddresses: stringSet([]string{"router"}),
				colExternalIDs: ovsdb.OvsMap{GoMap: map[any]any{"owner": "someone-else"}}}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{ovsdb.NewCondition(colName, ovsdb.ConditionEqual, sw)},
			Mutations: []ovsdb.Mutation{{Column: colPorts, Mutator: ovsdb.MutateOperationInsert, Value: uuidSet([]string{"p"})}}},
	)
}

// converge computes the plan from the NB, applies it, and checks that the
// NB then agrees with want: nothing left to do, and every port of ours on
// the switch it says.
func converge(t *testing.T, c client.Client, want state.State, opts Options) (diff.Plan, Result, error) {
	t.Helper()
	plan := diff.Compute(want, dump(t, c).state(), diff.Policy{})
	res, err := Apply(testCtx(t), c, plan, opts)
	after := dump(t, c)
	if again := diff.Compute(want, after.state(), diff.Policy{}); !again.Empty() && err == nil {
		t.Errorf("after Apply(%s), Compute finds more to do:\n%s", plan, again)
	}
	for name, lsp := range after.ports {
		if sw := lsp.ExternalIDs[state.KeySwitch]; sw != "" && after.on[lsp.UUID] != sw {
			t.Errorf("port %q records switch %q but is on %q", name, sw, after.on[lsp.UUID])
		}
	}
	return plan, res, err
}

func TestApply(t *testing.T) { forEachNB(t, testApply) }

func testApply(t *testing.T, c client.Client) {

	// Someone else's switch and port, which must never change.
	transact(t, c, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable,
		Row: ovsdb.Row{colName: "admin", colExternalIDs: ovsdb.OvsMap{GoMap: map[any]any{"team": "net"}}}})
	addForeignPort(t, c, "admin", "router")
	foreign := dump(t, c)

	defaultSw := &state.Switch{Name: "ovn-default", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16"}
	net1 := &state.Switch{Name: "net1.ns", Owner: "NetworkAttachmentDefinition/ns/net1", Network: "ns/net1", Subnet: "10.1.0.0/24"}
	admin := &state.Switch{Name: "admin"}
	a := port("a.default", "ovn-default", "Pod/default/a", "0a:58:0a:10:00:02 10.16.0.2", "n1")
	b := port("b.default", "ovn-default", "Pod/default/b", "0a:58:0a:10:00:03 10.16.0.3", "n1")
	cp := port("c.ns.net1.ns.ovn", "net1.ns", "Pod/ns/c", "0a:58:0a:01:00:02 10.1.0.2", "n2")
	d := port("d.default", "admin", "Pod/default/d", "0a:58:0a:10:00:04 10.16.0.4", "n2")

	checkForeign := func(t *testing.T) {
		t.Helper()
		now := dump(t, c)
		if !reflect.DeepEqual(now.ports["router"], foreign.ports["router"]) {
			t.Errorf("foreign port changed: %+v, was %+v", now.ports["router"], foreign.ports["router"])
		}
		if ext := now.switches["admin"].ExternalIDs; !maps.Equal(ext, map[string]string{"team": "net"}) {
			t.Errorf("foreign switch's external_ids = %v", ext)
		}
	}

	t.Run("create switches and ports", func(t *testing.T) {
		want := st([]*state.Switch{defaultSw, net1, admin}, a, b, cp, d)
		plan, res, err := converge(t, c, want, Options{})
		if err != nil {
			t.Fatalf("Apply(%s) = %v", plan, err)
		}
		// Phase 1 creates both switches; one more transaction creates the ports.
		if res.Created != 6 || len(res.Txns) != 2 {
			t.Errorf("Apply(%s) = %+v, want 6 created in 2 transactions", plan, res)
		}
		checkForeign(t)
	})

	// Someone else writes keys of their own on our rows.
	nb := dump(t, c)
	transact(t, c,
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchPortTable, Where: []ovsdb.Condition{uuidCond(nb.ports["a.default"].UUID)},
			Mutations: []ovsdb.Mutation{
				{Column: colOptions, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: map[any]any{"mcast_flood": "true"}}},
				{Column: colExternalIDs, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: map[any]any{"kubevirt.io/x": "y"}}},
			}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable, Where: []ovsdb.Condition{uuidCond(nb.switches["ovn-default"].UUID)},
			Mutations: []ovsdb.Mutation{{Column: colOtherConfig, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: map[any]any{"mcast_snoop": "true"}}}}},
	)

	t.Run("update columns and keys, keeping others' keys", func(t *testing.T) {
		a2 := port("a.default", "ovn-default", "VirtualMachine/default/a", "0a:58:0a:10:00:09 10.16.0.9", "n1,n2")
		a2.EditRare(func(r *state.Rare) { r.ActivationStrategy = "rarp" })
		sw2 := *defaultSw
		sw2.IPv6Prefix = "fd00:10:16::/64"
		want := st([]*state.Switch{&sw2, net1, admin}, a2, b, cp, d)
		plan, res, err := converge(t, c, want, Options{})
		if err != nil {
			t.Fatalf("Apply(%s) = %v", plan, err)
		}
		if res.Updated != 2 || res.Ops != 2 {
			t.Errorf("Apply(%s) = %+v, want 2 updates in 2 ops", plan, res)
		}
		nb := dump(t, c)
		lsp := nb.ports["a.default"]
		if lsp.Options["mcast_flood"] != "true" || lsp.ExternalIDs["kubevirt.io/x"] != "y" {
			t.Errorf("foreign keys of our port lost: options %v, external_ids %v", lsp.Options, lsp.ExternalIDs)
		}
		if oc := nb.switches["ovn-default"].OtherConfig; oc["mcast_snoop"] != "true" || oc[state.SwitchIPv6Prefix] != "fd00:10:16::/64" {
			t.Errorf("other_config of our switch = %v", oc)
		}
		if lsp.UUID != dump(t, c).ports["a.default"].UUID {
			t.Errorf("update replaced the row")
		}
		checkForeign(t)

		// The migration ends: activation-strategy goes, our keys only.
		a3 := *a2
		a3.RequestedChassis = "n2"
		a3.SetRare(nil)
		want.Ports.Set(a3.Name, &a3)
		if _, _, err := converge(t, c, want, Options{}); err != nil {
			t.Fatal(err)
		}
		opts := dump(t, c).ports["a.default"].Options
		if !maps.Equal(opts, map[string]string{"mcast_flood": "true", state.OptRequestedChassis: "n2"}) {
			t.Errorf("options after migration = %v", opts)
		}
	})

	t.Run("delete, move, and delete the emptied switch", func(t *testing.T) {
		before := dump(t, c)
		moved := port("c.ns.net1.ns.ovn", "ovn-default", "Pod/ns/c", "0a:58:0a:01:00:02 10.1.0.2", "n2")
		a3 := before.state().Ports.Get("a.default")
		sw := *defaultSw
		sw.IPv6Prefix = "fd00:10:16::/64"
		want := st([]*state.Switch{&sw, admin}, a3, moved, d)
		plan, res, err := converge(t, c, want, Options{})
		if err != nil {
			t.Fatalf("Apply(%s) = %v", plan, err)
		}
		// b deleted, c moved (delete + create), net1.ns deleted; in a delete
		// transaction, a create transaction and a switch-delete one.
		if res.Deleted != 3 || res.Created != 1 || len(res.Txns) != 3 {
			t.Errorf("Apply(%s) = %+v, want 3 deletes, 1 create in 3 transactions", plan, res)
		}
		after := dump(t, c)
		if _, ok := after.switches["net1.ns"]; ok {
			t.Errorf("switch net1.ns not deleted")
		}
		if _, ok := after.ports["b.default"]; ok {
			t.Errorf("port b.default not deleted")
		}
		if after.ports["c.ns.net1.ns.ovn"].UUID == before.ports["c.ns.net1.ns.ovn"].UUID {
			t.Errorf("moved port kept its row")
		}
		checkForeign(t)
	})

	t.Run("a port of ours on a switch not of the recorded name", func(t *testing.T) {
		transact(t, c,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "p",
				Row: ovsdb.Row{colName: "stray", colExternalIDs: ovsdb.OvsMap{GoMap: map[any]any{state.KeyOwner: "Pod/x/stray", state.KeySwitch: "renamed"}}}},
			ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
				Where:     []ovsdb.Condition{ovsdb.NewCondition(colName, ovsdb.ConditionEqual, "ovn-default")},
				Mutations: []ovsdb.Mutation{{Column: colPorts, Mutator: ovsdb.MutateOperationInsert, Value: uuidSet([]string{"p"})}}},
		)
		want := dump(t, c).state()
		want.Ports.Delete("stray")
		plan, res, err := converge(t, c, want, Options{})
		if err != nil || res.Deleted != 1 {
			t.Fatalf("Apply(%s) = %+v, %v; want the stray port deleted", plan, res, err)
		}
		if _, ok := dump(t, c).ports["stray"]; ok {
			t.Errorf("stray port still there")
		}
		checkForeign(t)
	})

	t.Run("a switch with someone else's port on it is not deleted", func(t *testing.T) {
		extra := &state.Switch{Name: "extra", Owner: "ovn-sync", Network: "x"}
		base := dump(t, c).state()
		want := base.Clone()
		want.Switches[extra.Name] = extra
		if _, _, err := converge(t, c, want, Options{}); err != nil {
			t.Fatal(err)
		}
		addForeignPort(t, c, "extra", "intruder")

		want = base.Clone()
		e := port("e.default", "ovn-default", "Pod/default/e", "0a:58:0a:10:00:05 10.16.0.5", "n1")
		want.Ports.Set(e.Name, e)
		for _, s := range base.Switches {
			if !s.Owned() {
				want.Switches[s.Name] = s
			}
		}
		plan, res, err := converge(t, c, want, Options{})
		if !errors.Is(err, ErrSwitchInUse) || !strings.Contains(err.Error(), `not deleted: extra`) {
			t.Errorf("Apply(%s) = %v, want ErrSwitchInUse naming the switch", plan, err)
		}
		if len(res.Refused) != 1 || res.Refused[0] != "extra" || res.Created != 1 || res.Deleted != 0 {
			t.Errorf("Apply(%s) = %+v, want e.default created and switch extra refused", plan, res)
		}
		after := dump(t, c)
		if _, ok := after.switches["extra"]; !ok {
			t.Errorf("switch extra deleted")
		}
		if lsp, ok := after.ports["intruder"]; !ok || after.on[lsp.UUID] != "extra" {
			t.Errorf("foreign port on switch extra lost")
		}
		if _, ok := after.ports["e.default"]; !ok {
			t.Errorf("the rest of the plan was not carried out")
		}
	})
}

func TestApplyBatchLimit(t *testing.T) { forEachNB(t, testApplyBatchLimit) }

func testApplyBatchLimit(t *testing.T, c client.Client) {
	sw := &state.Switch{Name: "big", Owner: "ovn-sync", Network: "default"}
	want := st([]*state.Switch{sw})
	for i := range 95 {
		p := port(fmt.Sprintf("p%02d", i), "big", "Pod/ns/p", fmt.Sprintf("addr %d", i), "n1")
		want.Ports.Set(p.Name, p)
	}
	opts := Options{MaxOpsPerTxn: 10}
	plan, res, err := converge(t, c, want, opts)
	if err != nil {
		t.Fatalf("Apply(%d changes) = %v", len(plan.Changes), err)
	}
	// The switch, then 95 ports at 9 inserts and one mutate per transaction.
	if len(res.Txns) != 1+11 || res.Created != 96 || res.Ops != 2+95+11 {
		t.Errorf("Apply(96 creates, max 10) = %d txns, %d created, %d ops; want 12, 96, 108", len(res.Txns), res.Created, res.Ops)
	}
	for i, tx := range res.Txns {
		if tx.Ops > 10 || tx.Attempts != 1 || tx.Latency <= 0 {
			t.Errorf("transaction %d = %+v, want at most 10 ops in one attempt", i, tx)
		}
	}
	if n := len(dump(t, c).switches["big"].Ports); n != 95 {
		t.Errorf("switch big has %d ports, want 95", n)
	}

	// Deleting them all: 10 ports a transaction.
	empty := st([]*state.Switch{sw})
	plan, res, err = converge(t, c, empty, opts)
	if err != nil {
		t.Fatalf("Apply(%d deletes) = %v", len(plan.Changes), err)
	}
	if len(res.Txns) != 10 || res.Deleted != 95 || res.Ops != 10 {
		t.Errorf("Apply(95 deletes, max 10) = %d txns, %d deleted, %d ops; want 10, 95, 10", len(res.Txns), res.Deleted, res.Ops)
	}
	if n := len(dump(t, c).ports); n != 0 {
		t.Errorf("%d ports left; unreferenced ports must be garbage collected", n)
	}
}

func TestApplyStale(t *testing.T) { forEachNB(t, testApplyStale) }

func testApplyStale(t *testing.T, c client.Client) {
	sw := &state.Switch{Name: "ovn-default", Owner: "ovn-sync"}
	a := port("a.default", "ovn-default", "Pod/default/a", "addr-a", "n1")
	b := port("b.default", "ovn-default", "Pod/default/b", "addr-b", "n1")
	if _, _, err := converge(t, c, st([]*state.Switch{sw}, a, b), Options{}); err != nil {
		t.Fatal(err)
	}
	have := dump(t, c)

	for _, tt := range []struct {
		name   string
		want   state.State
		meddle func(t *testing.T)
		errs   string
	}{{
		name: "addresses changed under an update",
		want: st([]*state.Switch{sw}, port("a.default", "ovn-default", "Pod/default/a", "addr-a2", "n1"), b),
		meddle: func(t *testing.T) {
			transact(t, c, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable,
				Where: []ovsdb.Condition{uuidCond(have.ports["a.default"].UUID)}, Row: ovsdb.Row{colAddresses: stringSet([]string{"someone"})}})
		},
		errs: "op 0 (mutate Logical_Switch_Port) matched 0 rows, want 1",
	}, {
		name: "a new port's name taken",
		want: st([]*state.Switch{sw}, a, b, port("c.default", "ovn-default", "Pod/default/c", "addr-c", "n1")),
		meddle: func(t *testing.T) {
			addForeignPort(t, c, "ovn-default", "c.default")
		},
		errs: "constraint violation",
	}, {
		name: "a switch of the same name created meanwhile",
		want: st([]*state.Switch{sw, {Name: "net1", Owner: "ovn-sync"}}, a, b),
		meddle: func(t *testing.T) {
			transact(t, c, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: ovsdb.Row{colName: "net1"}})
		},
		errs: "op 0 (wait Logical_Switch): timed out",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			plan := diff.Compute(tt.want, dump(t, c).state(), diff.Policy{})
			tt.meddle(t)
			_, err := Apply(testCtx(t), c, plan, Options{})
			if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), tt.errs) || !strings.Contains(err.Error(), "ops)") {
				t.Errorf("Apply(%s) after %s = %v, want ErrStale with %q and the op count", plan, tt.name, err, tt.errs)
			}
		})
	}
}

// flaky fails its first fails calls with client.ErrNotConnected.
type flaky struct {
	Transactor
	mu           sync.Mutex
	fails, calls int
}

func (f *flaky) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.fails
	f.mu.Unlock()
	if fail {
		return nil, client.ErrNotConnected
	}
	return f.Transactor.Transact(ctx, ops...)
}

func TestApplyRetries(t *testing.T) { forEachNB(t, testApplyRetries) }

func testApplyRetries(t *testing.T, c client.Client) {
	want := st([]*state.Switch{{Name: "sw", Owner: "ovn-sync"}})
	plan := diff.Compute(want, dump(t, c).state(), diff.Policy{})
	quick := func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }

	f := &flaky{Transactor: c, fails: 2}
	res, err := Apply(testCtx(t), f, plan, Options{NewBackOff: quick})
	if err != nil || len(res.Txns) != 1 || res.Txns[0].Attempts != 3 || res.Created != 1 {
		t.Errorf("Apply after 2 disconnects = %+v, %v; want 1 transaction in 3 attempts", res, err)
	}

	f = &flaky{Transactor: c, fails: 100}
	res, err = Apply(testCtx(t), f, plan, Options{NewBackOff: quick})
	if !errors.Is(err, client.ErrNotConnected) || f.calls != 4 || res.Created != 0 {
		t.Errorf("Apply never connected = %+v, %v after %d calls; want ErrNotConnected after 4", res, err, f.calls)
	}

	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	f = &flaky{Transactor: c, fails: 100}
	if _, err := Apply(ctx, f, plan, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a canceled context = %v, want context.Canceled", err)
	}
}

type never struct{ t *testing.T }

func (n never) Transact(context.Context, ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	n.t.Fatal("Transact called for an empty plan")
	return nil, nil
}

func TestApplyEmpty(t *testing.T) {
	res, err := Apply(testCtx(t), never{t}, diff.Plan{Withheld: 3}, Options{})
	if err != nil || len(res.Txns) != 0 || res.Ops != 0 {
		t.Errorf("Apply(empty plan) = %+v, %v; want no transaction", res, err)
	}
	if _, err := Apply(testCtx(t), never{t}, diff.Plan{}, Options{MaxOpsPerTxn: 1}); err == nil {
		t.Errorf("Apply(MaxOpsPerTxn 1) = nil error, want one")
	}
}

func TestResultAdd(t *testing.T) {
	r := Result{Created: 1, Ops: 2, Txns: []Txn{{Ops: 2, Attempts: 1}}}
	r.Add(Result{Updated: 3, Deleted: 4, Ops: 5, Txns: []Txn{{Ops: 5, Attempts: 2}}, Refused: []string{"sw"}})
	want := Result{Created: 1, Updated: 3, Deleted: 4, Ops: 7, Txns: []Txn{{Ops: 2, Attempts: 1}, {Ops: 5, Attempts: 2}}, Refused: []string{"sw"}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Result.Add = %+v, want %+v", r, want)
	}
}

func TestApplyChecksSwitchesFirst(t *testing.T) {
	plan := diff.Plan{Changes: []diff.Change{
		{Action: diff.Create, Kind: diff.KindSwitch, Name: "sw", SwitchAfter: &state.Switch{Name: "sw", Owner: "ovn-sync"}},
		{Action: diff.Create, Kind: diff.KindPort, Name: "p", After: &state.Port{Name: "p", Switch: "nowhere", Owner: "Pod/ns/p"}},
	}}
	if _, err := Apply(testCtx(t), never{t}, plan, Options{}); err == nil || !strings.Contains(err.Error(), `switch "nowhere"`) {
		t.Errorf("Apply(port on an unknown switch) = %v, want an error naming the switch, before any transaction", err)
	}
}
