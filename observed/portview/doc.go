// Package portview follows the OVN NB's Logical_Switch_Port table outside
// libovsdb's generic cache: a monitor_cond of that one table on a
// connection of its own, whose update2 messages are decoded straight from
// the wire into state.Port values — only the columns and keys ovn-sync
// reads (the name, dynamic_addresses, the port columns of state.Fields,
// kube-ovn's vendor and ls), sets sorted, the strings that repeat across
// rows (switch, network, chassis, activation strategy, vendor) shared.
// libovsdb's cache would hold each row as a full nbdb.LogicalSwitchPort
// with two Go maps and index it by name: at 100k ports that was 241 MB of
// a 436 MB live heap. The monitor's first reply (some 40 MB at 100k ports)
// is read by a streaming JSON reader, never held whole nor turned into
// generic values.
//
// Call Start with the endpoint to follow (the one the caller's libovsdb
// client is connected to now) and the callbacks; it returns once the
// table is loaded. Read the rows with Each, Row and Len; call Barrier
// after a transaction to see it; Close when done. The view's contract:
//
// Rows. The view holds each row once, as a *state.Port keyed by the row's
// UUID, and never changes a row it holds: an update replaces it with a new
// one. A caller may keep the pointers it read (snapshots share them) and
// tell an unchanged row by its pointer. A port's DHCPv4 and DHCPv6 hold
// the UUIDs of the DHCP_Options rows it refers to; naming them is the
// caller's business.
//
// Reload. After any drop of the connection, a monitor_canceled (the
// database restored from a backup or converted), or Options.Endpoint
// naming another endpoint, the view connects again and loads the table
// anew. From the drop until that load it is not Synced. A load replaces
// the Table: rows read from an older Table may have changed in any way
// meanwhile, and no OnChange tells of it, so a caller that finds Table
// returning another value than the one it read from reads every row
// again. Row answers for the current Table only.
//
// Barrier. After Barrier returns nil, the view shows every transaction the
// server committed before Barrier was called. It sends an echo on the
// view's connection and waits for the reply: a server answers a
// connection's requests in order and sends a monitor's pending updates
// before it reads the next request (ovsdb-server flushes a session's
// monitors before it receives; libovsdb's server sends them within the
// transaction), and the view applies each message before it reads the
// next. So a caller whose own transaction returned (on another connection
// to the same server) sees it once Barrier returns. While the view is down
// Barrier waits for the reload, which shows every change committed
// before.
//
// Callbacks. Options.OnChange is called with each row an update changes —
// old nil for an insert, cur nil for a delete, both rows as the view holds
// them — once the whole update is applied, in the update's order.
// Options.OnReload is called once a load replaced the table; a load
// reports no rows to OnChange. Both run on the goroutine that reads the
// connection, which reads nothing more until they return: they must be
// quick, and must not call Barrier, which waits on that goroutine.
package portview
