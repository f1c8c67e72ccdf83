package eventlat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/nbdb"
)

// DefaultSwitch is the switch the pods PodAdd creates go on.
const DefaultSwitch = "ovn-default"

// Floor is the NB's own part of an event's latency: the replies to the
// writes events make, sent alone.
type Floor struct {
	// Insert are pod-add's: a Logical_Switch_Port inserted and added to
	// the switch's ports, in one transaction.
	Insert []time.Duration `json:"insert_ns"`
	// Update are a VM event's: one port's options:requested-chassis set
	// or cleared.
	Update []time.Duration `json:"update_ns"`
}

// NBFloor times n writes of each kind events make ovn-sync write, sent
// alone by a plain NB client at addr that caches nothing, a random pause of
// 0.5 to 1.5 times gap before each: inserts of ports on switch sw, then
// updates of vm0's port, which the cluster's VMStart and VMStop make.
// Measured over the same NB after a loop's events, with the loop stopped,
// it is the part of an event's latency that is the NB's: no loop, no
// informer, no cache. The ports stay (the caller's server is thrown away
// after).
func NBFloor(ctx context.Context, addr, sw string, n int, gap time.Duration) (Floor, error) {
	var f Floor
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return f, err
	}
	cl, err := client.NewOVSDBClient(m, client.WithEndpoint(addr))
	if err != nil {
		return f, err
	}
	if err := cl.Connect(ctx); err != nil {
		return f, err
	}
	defer cl.Close()
	uuid, err := uuidOf(ctx, cl, "Logical_Switch", sw)
	if err != nil {
		return f, err
	}
	timed := func(ops ...ovsdb.Operation) (time.Duration, error) {
		time.Sleep(gap/2 + rand.N(gap+1))
		t0 := time.Now()
		r, err := cl.Transact(ctx, ops...)
		d := time.Since(t0)
		if err == nil {
			_, err = ovsdb.CheckOperationResults(r, ops)
		}
		return d, err
	}
	for i := range n {
		// An address of 10.31.0.0/16, past what the loop gave out.
		e := fmt.Sprintf("0a:58:0a:1f:%02x:%02x 10.31.%d.%d", i>>8&0xff, i&0xff, i>>8&0xff, i&0xff)
		d, err := timed(
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: "Logical_Switch_Port", UUIDName: "p",
				Row: ovsdb.Row{"name": fmt.Sprintf("nb-floor-%d", i), "addresses": ovsdb.OvsSet{GoSet: []any{e}}, "port_security": ovsdb.OvsSet{GoSet: []any{e}}}},
			ovsdb.Operation{Op: ovsdb.OperationMutate, Table: "Logical_Switch", Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: uuid}},
				Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "p"}}}}}})
		if err != nil {
			return f, fmt.Errorf("insert %d: %w", i, err)
		}
		f.Insert = append(f.Insert, d)
	}
	// The port by its UUID, as ovn-sync writes one: a condition on its
	// name, which no index covers, would scan every row.
	vm0, err := uuidOf(ctx, cl, "Logical_Switch_Port", "vm0.ns")
	if err != nil {
		return f, err
	}
	for i := range n {
		opts := ovsdb.OvsMap{GoMap: map[any]any{}}
		if i%2 == 0 {
			opts.GoMap["requested-chassis"] = "n1"
		}
		d, err := timed(ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: "Logical_Switch_Port", Row: ovsdb.Row{"options": opts},
			Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: vm0}}})
		if err != nil {
			return f, fmt.Errorf("update %d: %w", i, err)
		}
		f.Update = append(f.Update, d)
	}
	return f, nil
}

// uuidOf returns the UUID of the one row of table named name.
func uuidOf(ctx context.Context, cl client.Client, table, name string) (ovsdb.UUID, error) {
	res, err := cl.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Columns: []string{"_uuid"},
		Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: name}}})
	if err != nil {
		return ovsdb.UUID{}, err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return ovsdb.UUID{}, fmt.Errorf("%s %q: not one row (%+v)", table, name, res)
	}
	uuid, ok := res[0].Rows[0]["_uuid"].(ovsdb.UUID)
	if !ok {
		return ovsdb.UUID{}, fmt.Errorf("%s %q: _uuid %v", table, name, res[0].Rows[0]["_uuid"])
	}
	return uuid, nil
}
