// Package observed is ovn-sync's view of the OVN northbound database: the
// "have" side of a pass.
//
// Dial connects a libovsdb client — to the RAFT leader with
// Options.LeaderOnly, reconnecting by itself — whose cache monitors the
// columns of Logical_Switch and DHCP_Options the diff reads, and beside it
// the port view (package portview), which follows the Logical_Switch_Port
// table on a connection of its own to the same endpoint; Dial returns once
// both are loaded. Connect dials from ovn-sync's --nb flags, or starts an
// embedded NB. Transact sends a transaction through the client and, once
// it committed, waits for the port view's barrier, so that the next
// snapshot shows it.
//
// Snapshots: State returns a state.State of what the NB holds now,
// StateVersion numbers the snapshots, and ChangedPorts names the ports
// that changed between two of them, while that is known. A call reads
// again only the rows that changed since the previous one (the cache's
// event handler, the port view's change callback and our own transactions
// record them), and copies the snapshot's port map and Index rather than
// change those of a snapshot already handed out. It reads every row when
// which rows changed is not known: at the first call, after a reconnect or
// a reload of the port view, when libovsdb dropped a cache event, and when
// many rows changed.
//
// Watching: WatchDrift reports changes that leave a row of ours other
// than the last pass wanted, WatchPorts every port row an update changes,
// and WatchConnection the connection lost and restored.
//
// StartEmbedded runs libovsdb's in-memory server with the OVN NB schema,
// for the demo and for fast tests.
package observed
