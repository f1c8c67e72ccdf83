// Package nbtest starts a real OVN northbound ovsdb-server for tests: a
// standalone database created from the OVN NB schema in a temporary
// directory, served on a unix socket, stopped when the test ends.
//
// It needs ovsdb-server, ovsdb-tool and ovn-nbctl on PATH (Debian's
// ovn-central package). Without them the test is skipped, except under CI
// (CI set in the environment), where it fails: CI installs them.
package nbtest
