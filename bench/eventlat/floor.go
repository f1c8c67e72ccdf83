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

// NBFloor times n writes of what PodAdd makes ovn-sync write, sent alone
// by a plain NB client at addr that caches nothing: a Logical_Switch_Port
// inserted and added to switch sw's ports, in one transaction, a random
// pause of 0.5 to 1.5 times gap between two. Measured over the same NB
// after a loop's events, it is the part of an event's latency that is the
// NB's: no loop runs, no informer, no cache. The ports stay (the caller's
// server is thrown away after).
func NBFloor(ctx context.Context, addr, sw string, n int, gap time.Duration) ([]time.Duration, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	cl, err := client.NewOVSDBClient(m, client.WithEndpoint(addr))
	if err != nil {
		return nil, err
	}
	if err := cl.Connect(ctx); err != nil {
		return nil, err
	}
	defer cl.Close()
	res, err := cl.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: "Logical_Switch", Columns: []string{"_uuid"},
		Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: sw}}})
	if err != nil {
		return nil, err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return nil, fmt.Errorf("switch %q: not one row (%+v)", sw, res)
	}
	uuid, ok := res[0].Rows[0]["_uuid"].(ovsdb.UUID)
	if !ok {
		return nil, fmt.Errorf("switch %q: _uuid %v", sw, res[0].Rows[0]["_uuid"])
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		time.Sleep(gap/2 + rand.N(gap+1))
		// An address of 10.31.0.0/16, past what the loop gave out.
		e := fmt.Sprintf("0a:58:0a:1f:%02x:%02x 10.31.%d.%d", i>>8&0xff, i&0xff, i>>8&0xff, i&0xff)
		ops := []ovsdb.Operation{
			{Op: ovsdb.OperationInsert, Table: "Logical_Switch_Port", UUIDName: "p",
				Row: ovsdb.Row{"name": fmt.Sprintf("nb-floor-%d", i), "addresses": ovsdb.OvsSet{GoSet: []any{e}}, "port_security": ovsdb.OvsSet{GoSet: []any{e}}}},
			{Op: ovsdb.OperationMutate, Table: "Logical_Switch", Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: uuid}},
				Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "p"}}}}}},
		}
		t0 := time.Now()
		r, err := cl.Transact(ctx, ops...)
		d := time.Since(t0)
		if err == nil {
			_, err = ovsdb.CheckOperationResults(r, ops)
		}
		if err != nil {
			return lat, fmt.Errorf("write %d: %w", i, err)
		}
		lat = append(lat, d)
	}
	return lat, nil
}
