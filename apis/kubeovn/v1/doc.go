// Package v1 holds the part of kube-ovn's kubeovn.io/v1 API that ovn-sync
// reads, as plain Go types: the fields of a Subnet that say which logical
// switch it is and which addresses it hands out. The JSON names are
// kube-ovn's, so objects written for kube-ovn decode as they are; fields
// ovn-sync does not read are left out (and ignored when decoding).
//
// It depends on nothing but Kubernetes' API machinery types, so that the
// pure package desired can take these objects as inputs, and package
// sources can decode them from informers and manifests.
package v1
