package desired

// kube-ovn's annotation keys, read by Build and published by
// reconcile.Publications. A key is a provider ("ovn" for the default
// network, "<nad>.<nadns>.ovn" for an attachment) followed by one of these
// suffixes; kube-ovn's per-interface keys add ".<iface>".
const (
	AnnIPSuffix            = ".kubernetes.io/ip_address"
	AnnMACSuffix           = ".kubernetes.io/mac_address"
	AnnLogicalSwitchSuffix = ".kubernetes.io/logical_switch"
	// AnnAllocatedSuffix ("true") makes the other keys a record of what
	// was granted rather than a request.
	AnnAllocatedSuffix = ".kubernetes.io/allocated"
	AnnIPPoolSuffix    = ".kubernetes.io/ip_pool"
	AnnCIDRSuffix      = ".kubernetes.io/cidr"
	AnnGatewaySuffix   = ".kubernetes.io/gateway"
	// AnnRoutedSuffix ("true") tells kube-ovn-cni, which waits for it
	// before it plumbs an interface, that the port is in the NB.
	AnnRoutedSuffix = ".kubernetes.io/routed"
)

// Keys of the default network.
const (
	// DefaultIPAnnotation asks for a pod's addresses on the default network.
	DefaultIPAnnotation  = providerDefault + AnnIPSuffix
	DefaultMACAnnotation = providerDefault + AnnMACSuffix
	// NamespaceSwitchAnnotation on a Namespace names the Subnet of its
	// owners: of a Namespace, Build reads its name and this alone.
	NamespaceSwitchAnnotation = providerDefault + AnnLogicalSwitchSuffix
)
