// Package diff computes the Plan that turns the observed NB (have) into the
// desired one (want). It is pure: it reads two state.State values and returns
// a value, doing no I/O, starting no goroutines and reading no clock.
//
// Call Compute(want, have, Policy{...}) once per pass, check the result with
// Plan.CheckDeletes unless the user allowed mass deletes, show it with
// Plan.String or encoding/json, and hand it to apply.Apply. A pass that knows
// which ports may differ (those changed in want or in the NB since a plan,
// and those that plan named: Plan.PortNames) calls ComputePorts with their
// names instead: the same plan, at the cost of those ports.
//
// Only rows and keys ovn-sync owns are ever changed. A port is ours when it
// carries external_ids:ovn-sync/owner; a foreign row is never updated or
// deleted, and a name collision with one is reported as a Notice. On rows we
// own only the columns and keys of state.Fields are written: addresses,
// port_security, options requested-chassis and activation-strategy,
// external_ids ovn-sync/*, dhcpv4_options and dhcpv6_options, and on
// switches we created other_config subnet, ipv6_prefix and exclude_ips.
// Fields has one bit per entry of state.Fields. DHCP_Options rows are ours
// when observed read them (owner and name in external_ids): they are
// created, updated (DiffDHCP: cidr, the network key, options key by key)
// and deleted whole.
//
// Compute is linear in the number of ports. It walks want's and have's
// packed indexes (state.Index, sorted by name hash) in step: an unchanged
// port costs a comparison of two fingerprints — no map lookup, no
// dereference — and allocates nothing; the cost of a pass is that of the
// changes it finds (see bench/bench_test.go). ComputePorts looks up the
// ports it is given by name and walks nothing (BenchmarkComputeOnePort).
package diff
