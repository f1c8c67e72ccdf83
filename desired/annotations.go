package desired

import (
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

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

// PodAnnotationRead reports whether Build reads a pod's annotation key:
// kube-ovn's (<provider> then one of the suffixes above, with an
// interface's ".<iface>" or not), Multus' requests
// (k8s.v1.cni.cncf.io/networks and v1.multus-cni.io/default-network) and
// KubeVirt's domain name. Other annotations a pod carries — Multus'
// network-status, a JSON document on every pod where Multus is the
// cluster's CNI, kubectl's last-applied copy and the like — are not read.
func PodAnnotationRead(key string) bool {
	return key == annNetworks || key == annDefaultNetwork || key == kubevirtv1.DomainAnnotation || KubeOVNSuffix(key) != ""
}

// KubeOVNSuffix returns the suffix of a kube-ovn annotation key, of any
// provider and interface, as the Ann*Suffix constants name it
// (".kubernetes.io/ip_address" for "ovn.kubernetes.io/ip_address" and
// "blue.tenant.ovn.kubernetes.io/ip_address.eth1"); "" for any other key.
func KubeOVNSuffix(key string) string {
	i := strings.LastIndex(key, kubernetesIO)
	if i <= 0 {
		return ""
	}
	name, _, _ := strings.Cut(key[i+len(kubernetesIO):], ".")
	if !kubeOVNKeys[name] {
		return ""
	}
	return key[i : i+len(kubernetesIO)+len(name)]
}

// kubernetesIO is what every kube-ovn annotation suffix starts with, and
// kubeOVNKeys what follows it.
const kubernetesIO = ".kubernetes.io/"

var kubeOVNKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []string{AnnIPSuffix, AnnMACSuffix, AnnLogicalSwitchSuffix, AnnAllocatedSuffix, AnnIPPoolSuffix,
		AnnCIDRSuffix, AnnGatewaySuffix, AnnRoutedSuffix} {
		m[strings.TrimPrefix(s, kubernetesIO)] = true
	}
	return m
}()
