package apply

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/state"
)

// newNB starts the embedded NB (observed.StartEmbedded: libovsdb's
// in-memory server with the NB schema) and returns a client connected to
// it. Tests read the NB back with select (see dump), not through a cache, so
// that what they see is what the server holds when Apply returns.
func newNB(t *testing.T) client.Client {
	t.Helper()
	nb, err := observed.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	return connect(t, nb.Endpoint)
}

// connect returns a client connected to the NB at addr until the test ends.
func connect(t *testing.T, addr string) client.Client {
	t.Helper()
	clientModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.NewOVSDBClient(clientModel, client.WithEndpoint(addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Disconnect)
	return c
}

// forEachNB runs f against libovsdb's in-memory server and against a real
// ovsdb-server (skipped where the OVN tools are not installed): the two
// differ in corners Apply depends on, such as wait on an empty set.
func forEachNB(t *testing.T, f func(t *testing.T, c client.Client)) {
	t.Run("inmemory", func(t *testing.T) { f(t, newNB(t)) })
	t.Run("ovsdb-server", func(t *testing.T) {
		s := nbtest.Start(t)
		f(t, connect(t, s.Addr()))
	})
}

// nbRows is the NB's switches and ports, by name.
type nbRows struct {
	switches map[string]*nbdb.LogicalSwitch
	ports    map[string]*nbdb.LogicalSwitchPort
	// on maps a port's UUID to the name of the switch whose ports hold it.
	on map[string]string
}

// dump reads every switch and port from the server.
func dump(t *testing.T, c client.Client) nbRows {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ops := []ovsdb.Operation{
		{Op: ovsdb.OperationSelect, Table: nbdb.LogicalSwitchTable},
		{Op: ovsdb.OperationSelect, Table: nbdb.LogicalSwitchPortTable},
	}
	res, err := c.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		t.Fatalf("select: %v", err)
	}
	clientModel, _ := nbdb.FullDatabaseModel()
	dbModel, _ := model.NewDatabaseModel(nbdb.Schema(), clientModel)
	r := nbRows{switches: map[string]*nbdb.LogicalSwitch{}, ports: map[string]*nbdb.LogicalSwitchPort{}, on: map[string]string{}}
	for i, table := range []string{nbdb.LogicalSwitchTable, nbdb.LogicalSwitchPortTable} {
		for _, row := range res[i].Rows {
			m, err := model.CreateModel(dbModel, table, &row, row["_uuid"].(ovsdb.UUID).GoUUID)
			if err != nil {
				t.Fatalf("CreateModel(%s): %v", table, err)
			}
			switch m := m.(type) {
			case *nbdb.LogicalSwitch:
				r.switches[m.Name] = m
				for _, p := range m.Ports {
					r.on[p] = m.Name
				}
			case *nbdb.LogicalSwitchPort:
				r.ports[m.Name] = m
			}
		}
	}
	return r
}

// state converts the rows as observed/ does: a row is ours when it has
// external_ids:ovn-sync/owner, and only then carries our other keys.
func (r nbRows) state() state.State {
	s := state.New(len(r.ports))
	for name, ls := range r.switches {
		sw := &state.Switch{Name: name, UUID: ls.UUID}
		if owner := ls.ExternalIDs[state.KeyOwner]; owner != "" {
			sw.Owner, sw.Network = owner, ls.ExternalIDs[state.KeyNetwork]
			sw.Subnet, sw.IPv6Prefix = ls.OtherConfig[state.SwitchSubnet], ls.OtherConfig[state.SwitchIPv6Prefix]
		}
		s.Switches[name] = sw
	}
	for name, lsp := range r.ports {
		p := &state.Port{Name: name, UUID: lsp.UUID, Addresses: lsp.Addresses, PortSecurity: lsp.PortSecurity}
		if owner := lsp.ExternalIDs[state.KeyOwner]; owner != "" {
			p.Owner, p.Network, p.Switch = owner, lsp.ExternalIDs[state.KeyNetwork], lsp.ExternalIDs[state.KeySwitch]
			p.RequestedChassis = lsp.Options[state.OptRequestedChassis]
			p.SetRare(&state.Rare{ActivationStrategy: lsp.Options[state.OptActivationStrategy]})
		}
		s.Ports.Set(name, p)
	}
	return s
}
