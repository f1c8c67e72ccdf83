// Package v1alpha1 holds the IPAMClaim of k8snetworkplumbingwg/ipamclaims
// (k8s.cni.cncf.io/v1alpha1, CRD ipamclaims.k8s.cni.cncf.io, v0.5.1-alpha)
// as plain Go types with the upstream JSON names: the record the KubeVirt
// world keeps of a VM's addresses on one network. kubevirt/ipam-extensions
// creates one per VM network whose NAD allows persistent IPs; the network
// plugin fills its status.
//
// Like apis/kubeovn/v1 it depends on nothing but Kubernetes' API machinery
// types, so that the pure package desired can take claims as inputs.
package v1alpha1
