// Package nbtest starts a real OVN northbound ovsdb-server for tests: a
// standalone database created from the OVN NB schema in a temporary
// directory, served on a unix socket, stopped when the test ends. StartSSL
// adds an SSL listener, StartCluster a RAFT cluster of three.
//
// It needs ovsdb-server, ovsdb-tool, ovsdb-client and ovn-nbctl on PATH
// (Debian's ovn-central package). Without them the test is skipped, except
// under CI (CI set in the environment), where it fails: CI installs them.
//
// A program that is not a test, such as the benchmark harness, serves one
// with Serve and ends it with Close; Available says whether it can.
package nbtest
