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
	// KindSubnet is a kube-ovn Subnet (kubeovn.io/v1, cluster-scoped): a
	// network of its name.
	KindSubnet = "Subnet"
	// KindNamespace and KindStatefulSet are read for what they say of the
	// owners in them: a Namespace's kube-ovn logical switch, a
	// StatefulSet's replicas (its gone pods keep their ports).
	KindNamespace   = "Namespace"
	KindStatefulSet = "StatefulSet"
)

// ObjectRef names one Kubernetes object: its kind (one of the Kind
// constants), namespace ("" for a cluster-scoped kind) and name.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String is "<Kind>/<namespace>/<name>", the form of an owner key, or
// "<Kind>/<name>" for a cluster-scoped kind.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}
