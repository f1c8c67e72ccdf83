// Package observed is ovn-sync's view of the OVN northbound database: a
// libovsdb client whose cache monitors only the columns the diff reads, the
// conversion of cached rows into a state.State (the "have" side), and the
// embedded in-memory NB server used by the demo and by fast tests.
//
// Call Dial to connect (it returns once the initial monitor dump is in the
// cache), then State for a snapshot of what is there now. State is cheap to
// call repeatedly: it reads again only the rows the cache reported changed
// since the previous call, and copies the snapshot's port map and index
// rather than change those of a snapshot already handed out. StateVersion
// numbers the snapshots, and ChangedPorts names the ports that changed
// between two of them, while that is known.
package observed
