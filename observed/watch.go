package observed

import (
	"context"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// WatchDrift calls onDrift with the table's name whenever a row of ours —
// one carrying external_ids:ovn-sync/owner before or after the change — is
// left other than want says: someone else edited, deleted or added one of
// our rows. Changes that leave a row as want has it (our own transactions)
// and changes to rows that are not ours are not drift.
//
// want returns what the last pass applied and, when set, the switches and
// DHCP_Options rows the one before it applied: the cache's events of a
// transaction (Logical_Switch, DHCP_Options) reach this handler after
// Transact returned, so those of one pass may come once the next pass has
// applied a new want; a row left as either has it is not drift. Ports are
// judged by the last want alone: Transact returns once the port view
// shows the transaction (its barrier), and the view calls this handler as
// it applies a change, so a pass's port events all come before the next
// pass applies its want. want returns nil while nobody reconciles; then
// nothing is drift. The callbacks run in libovsdb's cache event loop and
// the port view's reading goroutine: they must be quick (notify a
// channel).
func (nb *NB) WatchDrift(want func() (cur, prev *state.State), onDrift func(table string)) {
	judge := func(table string, withPrev bool, drift func(state.State) bool) {
		w, prev := want()
		if w == nil {
			return
		}
		if drift(*w) && (!withPrev || prev == nil || drift(*prev)) {
			// Left other than the wants that may have it.
			onDrift(table)
		}
	}
	nb.WatchPorts(func(old, cur *state.Port) {
		o, c := namePort(old, nb.dhcpName, nil), namePort(cur, nb.dhcpName, nil)
		judge(nbdb.LogicalSwitchPortTable, false, func(s state.State) bool { return portDrift(s, o, c) })
	})
	event := func(table string, old, cur model.Model) {
		switch table {
		case nbdb.DHCPOptionsTable:
			o, _ := old.(*nbdb.DHCPOptions)
			c, _ := cur.(*nbdb.DHCPOptions)
			judge(table, true, func(s state.State) bool { return DHCPDrift(s, o, c) })
		case nbdb.LogicalSwitchTable:
			o, _ := old.(*nbdb.LogicalSwitch)
			c, _ := cur.(*nbdb.LogicalSwitch)
			judge(table, true, func(s state.State) bool { return SwitchDrift(s, o, c) })
		}
	}
	nb.client.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(table string, row model.Model) { event(table, nil, row) },
		UpdateFunc: func(table string, old, row model.Model) { event(table, old, row) },
		DeleteFunc: func(table string, row model.Model) { event(table, row, nil) },
	})
}

// WatchRows calls f, with the table's name, for every change of a row of
// the tables State reads: Logical_Switch_Port (once the snapshot's source
// holds it), Logical_Switch and DHCP_Options. The port view and the cache
// take one transaction's rows apart, each in its own time: a caller that
// reads State at the first call may miss the rest, and is called again. f
// must be quick and must not call nb.
func (nb *NB) WatchRows(f func(table string)) {
	nb.WatchPorts(func(_, _ *state.Port) { f(nbdb.LogicalSwitchPortTable) })
	event := func(table string) {
		if table == nbdb.LogicalSwitchTable || table == nbdb.DHCPOptionsTable {
			f(table)
		}
	}
	nb.client.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(table string, _ model.Model) { event(table) },
		UpdateFunc: func(table string, _, _ model.Model) { event(table) },
		DeleteFunc: func(table string, _ model.Model) { event(table) },
	})
}

// dhcpName returns the name of our DHCP_Options row uuid as the cache
// holds it now, "" when it is not ours or not there.
func (nb *NB) dhcpName(uuid string) string {
	t := nb.client.Cache().Table(nbdb.DHCPOptionsTable)
	if t == nil {
		return ""
	}
	if r, ok := t.Row(uuid).(*nbdb.DHCPOptions); ok {
		if d := DHCPFromRow(r); d != nil {
			return d.Name
		}
	}
	return ""
}

// portDrift reports whether a change of one port (old and cur nil for an
// insert and a delete) leaves one of our ports other than want has it.
// Ports that are not ours before or after are someone else's business.
// References to DHCP_Options rows compare as the ports hold them: named
// (see namePort) or as UUIDs.
func portDrift(want state.State, old, cur *state.Port) bool {
	if (old == nil || !old.Owned()) && (cur == nil || !cur.Owned()) {
		return false
	}
	if cur == nil {
		return want.Ports.Get(old.Name) != nil
	}
	w := want.Ports.Get(cur.Name)
	return w == nil || !w.Equal(cur)
}

// DHCPDrift is portDrift for a DHCP_Options row of ours.
func DHCPDrift(want state.State, old, cur *nbdb.DHCPOptions) bool {
	var o, c *state.DHCPOptions
	if old != nil {
		o = DHCPFromRow(old)
	}
	if cur != nil {
		c = DHCPFromRow(cur)
	}
	switch {
	case o == nil && c == nil:
		return false
	case c == nil:
		return want.DHCP[o.Name] != nil
	}
	w := want.DHCP[c.Name]
	return w == nil || !w.Equal(c)
}

// SwitchDrift is portDrift for a Logical_Switch row.
func SwitchDrift(want state.State, old, cur *nbdb.LogicalSwitch) bool {
	owned := func(r *nbdb.LogicalSwitch) bool { return r != nil && r.ExternalIDs[state.KeyOwner] != "" }
	if !owned(old) && !owned(cur) {
		return false
	}
	if cur == nil {
		return want.Switches[old.Name] != nil
	}
	w := want.Switches[cur.Name]
	return w != nil && !w.Equal(SwitchFromRow(cur))
}

// ConnEvent is a change of the NB connection.
type ConnEvent uint8

// The connection events WatchConnection reports.
const (
	// ConnLost: the client has no connection; it reconnects by itself.
	ConnLost ConnEvent = iota + 1
	// ConnRestored: the client reconnected (to the same or another RAFT
	// member) and its cache was reloaded or caught up from a fresh
	// monitor: what the NB holds may have changed in any way meanwhile.
	ConnRestored
)

// Up reports whether the client is connected to an endpoint now.
func (nb *NB) Up() bool {
	return nb.client.CurrentEndpoint() != "" && nb.client.Connected()
}

// WatchConnection follows the connection until ctx is done, calling on
// (from its own goroutine) at every loss and every restoration, with the
// endpoint restored to.
//
// libovsdb v0.7.0 does not say when it reconnected (Connected stays true
// while it reconnects after the server dropped the connection), so this
// watches what a reconnect changes, every 50ms: the client has no current
// endpoint while it is down, the endpoint changes when it moves to another
// RAFT member, and the port view is not Synced while it is down and holds
// a new Table once it loaded the table again.
func (nb *NB) WatchConnection(ctx context.Context, on func(ev ConnEvent, endpoint string)) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	c := nb.client
	lastEP, lastTable := c.CurrentEndpoint(), nb.view.Table()
	down := false
	for {
		ep, table := c.CurrentEndpoint(), nb.view.Table()
		up := ep != "" && c.Connected() && nb.view.Synced()
		switch {
		case !up && !down:
			down = true
			on(ConnLost, "")
		case up && (down || ep != lastEP || table != lastTable):
			down = false
			on(ConnRestored, ep)
		}
		if up {
			lastEP, lastTable = ep, table
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
