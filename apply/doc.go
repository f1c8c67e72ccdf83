// Package apply carries out a diff.Plan on the OVN northbound database.
//
// Call Apply(ctx, nb, plan, Options{}) with a connected libovsdb client. It
// turns the plan into raw OVSDB operations (no model reflection) and sends
// them in a few large transactions, in the order the plan requires:
//
//  1. switch creates and updates, and DHCP_Options creates and updates (the
//     UUIDs of new switches and DHCP_Options rows are read from the
//     results);
//  2. port deletes: one mutate deleting from each switch's ports per
//     transaction, as Logical_Switch_Port is not a root table and a port no
//     switch references is garbage collected;
//  3. port updates and creates: one mutate per updated port writing only
//     its changed columns and keys, and per new port an insert with a named
//     UUID, plus one mutate inserting into each switch's ports per
//     transaction; a port's references to DHCP_Options rows are written as
//     those rows' UUIDs, by one update beside that mutate;
//  4. DHCP_Options deletes, once no port of ours refers to them;
//  5. switch deletes, each in its own transaction, guarded so that a switch
//     still holding ports (someone else's) is not deleted.
//
// Rows are addressed by UUID, and no transaction addresses one row twice
// (but for the two halves of one update, see portUpdate and dhcpUpdate) or
// holds more than Options.MaxOpsPerTxn operations. Map columns are written
// key by key, so keys ovn-sync does not own are never touched.
//
// Within a phase, up to Options.InFlight transactions are in flight at
// once, so that the server works on one while the client encodes the next
// and decodes the updates of the last; libovsdb orders nothing among
// concurrent transactions, and none is needed, as the transactions of a
// phase are independent of each other. Between phases Apply waits for every
// answer: that is what puts a moved port's delete before the create that
// reuses its name, a new switch before the ports put on it, and the moves
// off a switch before its delete.
//
// The op builders are pure and are tested without a server; Apply is the
// one place that transacts, and it always checks every operation's result
// (libovsdb's Transact returns no error when one of them fails). A lost
// connection is retried with backoff; a failed operation means the plan is
// stale, and Apply returns ErrStale for the caller to recompute.
package apply
