package state

// The kinds of the Kubernetes objects ovn-sync reads, as Kubernetes spells
// them: in owner keys (external_ids:ovn-sync/owner, "<Kind>/<ns>/<name>"),
// in Problems, Events and explain.
const (
	KindPod                             = "Pod"
	KindVirtualMachine                  = "VirtualMachine"
	KindVirtualMachineInstance          = "VirtualMachineInstance"
	KindVirtualMachineInstanceMigration = "VirtualMachineInstanceMigration"
	KindNetworkAttachmentDefinition     = "NetworkAttachmentDefinition"
	// KindIP is kube-ovn's IP object (kubeovn.io/v1, cluster-scoped): a
	// record of the addresses of the port it is named after.
	KindIP = "IP"
	// KindIPAMClaim is an IPAMClaim (k8s.cni.cncf.io/v1alpha1, namespaced):
	// the record of a VM's addresses on one network.
	KindIPAMClaim = "IPAMClaim"
)
