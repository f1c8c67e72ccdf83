// Package desired computes the state the OVN northbound database should be
// in: which logical switches exist and which logical switch ports, with what
// addresses and options, for a given set of Kubernetes objects.
//
// It is pure. It reads values and returns values: no I/O, no clock, no
// goroutines, no Kubernetes or OVSDB clients. Call it as
//
//	cfg, err := desired.NewConfig("ovn-default",
//		[]string{"10.16.0.0/16", "fd00:10:16::/64"}, // subnets
//		[]string{"10.16.0.2..10.16.0.9"})            // excluded addresses
//	...
//	r := desired.Build(inputs, cfg, have)
//
// where inputs are every Pod, VirtualMachine, VirtualMachineInstance,
// VirtualMachineInstanceMigration, NetworkAttachmentDefinition, Namespace,
// StatefulSet, kube-ovn Subnet and IP, and IPAMClaim the caller knows of
// (package sources reads them from informers or manifest files) and have is
// what the NB holds now (package observed). r.Want then goes to
// diff.Compute(r.Want, have, ...). Building again over the applied result
// gives the same result, which is what makes passes level-triggered. (One
// exception, by design: an address held by a port this pass deletes is only
// handed out once that port has left the NB, so such a pass is followed by
// one more that changes something.)
//
// What Build decides, in the order it decides it:
//
//   - Networks: the default network from Config (or from the kube-ovn
//     Subnet of its switch's name), one per kube-ovn Subnet, and one per
//     NetworkAttachmentDefinition whose CNI type is ovn-k8s-cni-overlay or
//     kube-ovn with "subnets"; a kube-ovn NAD without them is the network
//     of the Subnet of its provider. Others (macvlan, bridge...) are not
//     ours and get no port. Which Subnet an owner's interface is on is
//     decided per owner (subnets.go). Each NAD config, Subnet spec and
//     DHCP setting is read by package netconf, pure parsers with no
//     builder; an error it returns is a Problem on the object, its text
//     in the message.
//   - Owners and their ports: a Pod (not host-network, not a virt-launcher,
//     not finished) on the default network and its Multus networks; a
//     VirtualMachine, running or stopped, on each of its networks; a
//     VirtualMachineInstance that no VM owns, until it finishes. A
//     virt-launcher pod never has a port: it says where its VM runs
//     (requested-chassis, "src,dst" with activation-strategy rarp during a
//     live migration).
//   - Addresses (IPAM): a port of ours keeps what it has while its owner
//     exists and its request is unchanged (sticky); then static requests are
//     claimed, oldest owner first; then new ports get the lowest free address
//     of each subnet. Nothing already held by any port in have is handed out.
//
// There is one engine (Engine, incremental.go). It keeps the last result
// and rebuilds the owners a change touches (Update); Build is that engine
// with every owner to rebuild and nothing kept, and Engine.Full is Build
// that keeps its result for the next Update. The engine's result must
// equal Build's for the same inputs and NB, which it takes to show its
// last result applied (see Engine, and DESIGN.md, "One engine").
//
// Bad or conflicting input is returned as Problems, never a panic. Unknown is
// not absent: a port whose network or request cannot be read is kept exactly
// as it is in have. See DESIGN.md for the naming and annotation contracts.
package desired
