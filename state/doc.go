// Package state is ovn-sync's shared vocabulary: the logical switches and
// ports of an OVN northbound database, as plain values keyed by name.
//
// The same types describe both sides of a reconciliation: the desired state
// that package desired builds from Kubernetes objects ("want"), and the
// observed state that package observed reads from the NB cache ("have").
// Only observed values carry UUIDs.
//
// Values reachable from a State are treated as immutable once the State is
// handed on: to change a port, build a new Port and replace the map entry.
// That is what lets a State be copied by copying its maps.
package state
