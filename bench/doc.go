// Package bench measures ovn-sync at the scale its users run: generated,
// realistic clusters of 1k to 1M ports (pods, running and stopped VMs with one
// to three networks, a few live migrations; a fixed seed), through
// desired.Build and diff.Compute (go test -bench), and end to end against a
// real ovsdb-server (the harness in bench/cmd/ovn-sync-bench). Run mode's
// latency from a Kubernetes event to its port committed is package
// bench/eventlat, which the harness and BenchmarkEventToCommit in
// cmd/ovn-sync both run.
//
// Benchmark names are a contract that tooling reads:
// BenchmarkCompute/<noop|churn1pct|cold>/ports=<N> and BenchmarkBuild/ports=<N>,
// each reporting ns/port and B/port.
package bench
