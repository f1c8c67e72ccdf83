package eventlat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
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
	// Churn is the rate of the NB writes made meanwhile (NBFloor's churn);
	// ChurnWrites how many were made, ChurnFailed how many failed.
	Churn       int   `json:"churn,omitempty"`
	ChurnWrites int64 `json:"churn_writes,omitempty"`
	ChurnFailed int64 `json:"churn_failed,omitempty"`
}

// NBFloor times n writes of each kind events make ovn-sync write, sent
// alone by a plain NB client at addr that caches nothing, a random pause of
// 0.5 to 1.5 times gap before each: inserts of ports on switch sw, then
// updates of vm0's port, which the cluster's VMStart and VMStop make.
// Measured over the same NB after a loop's events, with the loop stopped,
// it is the part of an event's latency that is the NB's: no loop, no
// informer, no cache. The ports stay (the caller's server is thrown away
// after). With churn, another client meanwhile makes the NB writes
// Options.PodChurn's pods make ovn-sync make, churn a second: ports
// inserted on sw until churn of them are there, then deletions of the
// oldest and insertions in turn.
func NBFloor(ctx context.Context, addr, sw string, n int, gap time.Duration, churn int) (f Floor, err error) {
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
	if churn > 0 {
		stop, err := nbChurn(ctx, m, addr, uuid, churn)
		if err != nil {
			return f, err
		}
		f.Churn = churn
		defer func() { f.ChurnWrites, f.ChurnFailed = stop() }()
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

// nbChurn starts rate NB writes a second on switch sw by a client of its
// own (see NBFloor), once rate ports are there, and returns a function
// that stops them and says how many were made and how many failed.
func nbChurn(ctx context.Context, m model.ClientDBModel, addr string, sw ovsdb.UUID, rate int) (stop func() (writes, failed int64), err error) {
	cl, err := client.NewOVSDBClient(m, client.WithEndpoint(addr))
	if err != nil {
		return nil, err
	}
	if err := cl.Connect(ctx); err != nil {
		return nil, err
	}
	ports := func(mutator ovsdb.Mutator, port ovsdb.UUID) ovsdb.Operation {
		return ovsdb.Operation{Op: ovsdb.OperationMutate, Table: "Logical_Switch", Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: sw}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: mutator, Value: ovsdb.OvsSet{GoSet: []any{port}}}}}
	}
	var live []ovsdb.UUID
	write := func(i int) error {
		if len(live) >= rate && i%2 == 1 {
			// Taken out of the switch's ports, the row goes too.
			port := live[0]
			live = live[1:]
			_, err := cl.Transact(ctx, ports(ovsdb.MutateOperationDelete, port))
			return err
		}
		// An address of 10.30.0.0/16, apart from the loop's and the floor's.
		e := fmt.Sprintf("0a:58:0a:1e:%02x:%02x 10.30.%d.%d", i>>8&0xff, i&0xff, i>>8&0xff, i&0xff)
		r, err := cl.Transact(ctx,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: "Logical_Switch_Port", UUIDName: "p",
				Row: ovsdb.Row{"name": fmt.Sprintf("nb-churn-%d", i), "addresses": ovsdb.OvsSet{GoSet: []any{e}}, "port_security": ovsdb.OvsSet{GoSet: []any{e}}}},
			ports(ovsdb.MutateOperationInsert, ovsdb.UUID{GoUUID: "p"}))
		if err == nil && len(r) > 0 {
			live = append(live, r[0].UUID)
		}
		return err
	}
	for i := range rate { // the ports that are there, as Options.PodChurn's pods
		if err := write(2 * i); err != nil {
			cl.Close()
			return nil, err
		}
	}
	var w writer
	w.writes.Add(int64(rate)) // the ports already there count
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		w.run(ctx, done, rate, func(i int) error { return write(2*rate + i) })
	}()
	return func() (int64, int64) {
		close(done)
		<-stopped
		cl.Close()
		writes, failed, _ := w.counts()
		return writes, failed
	}, nil
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
