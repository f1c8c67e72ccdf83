// Package dataplane runs a real OVN data plane on one machine for tests:
// an NB and an SB ovsdb-server, ovn-northd, and chassis, each chassis an
// ovsdb-server, ovs-vswitchd (userspace datapath) and ovn-controller inside
// a network namespace of its own, joined by a geneve tunnel. Guests are
// network namespaces whose interfaces are plugged into a chassis's br-int
// with the iface-id of a Logical_Switch_Port, the way a node's CNI plugs a
// pod or a VM.
//
// Its test writes ports with ovn-sync (one-shot and run mode) and checks
// that OVN binds them and carries their traffic: pings between pods and a
// VM, port_security against spoofed sources, a VM stopped and started on
// another node, and a live migration with RARP activation.
//
// Start skips the test when it is not root, network namespaces cannot be
// made, or the OVN and Open vSwitch programs are missing (under CI those
// fail it). Every process, namespace and temporary directory is removed
// when the test ends; namespaces carry the test process's pid in their
// names, and those of runs whose process is gone are removed at start.
package dataplane
