package desired

// ObjectRef names one Kubernetes object that was created, updated or
// deleted: what an informer event says, without its payload. Kind is one
// of the kinds Inputs holds, as state names them ("Pod", "VirtualMachine",
// "VirtualMachineInstance", "VirtualMachineInstanceMigration",
// "NetworkAttachmentDefinition", "IP", "Subnet", "Namespace",
// "StatefulSet"). Namespace is empty for cluster-scoped kinds.
type ObjectRef struct {
	Kind, Namespace, Name string
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}
