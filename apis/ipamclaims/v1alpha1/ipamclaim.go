package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of IPAMClaims: the group of
// Multus' NetworkAttachmentDefinitions.
var GroupVersion = schema.GroupVersion{Group: "k8s.cni.cncf.io", Version: "v1alpha1"}

// Kind is the kind of an IPAMClaim.
const Kind = "IPAMClaim"

// IPAMClaim is a persistent allocation of a pod interface's addresses on
// one network (namespaced).
type IPAMClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPAMClaimSpec   `json:"spec,omitempty"`
	Status IPAMClaimStatus `json:"status,omitempty"`
}

// IPAMClaimSpec names the network the allocation is on.
type IPAMClaimSpec struct {
	// Network is the network's name: the "name" of the NAD's CNI config
	// (not the NAD's object name).
	Network string `json:"network"`
	// Interface is the pod interface the allocation was made for; often
	// empty (ipam-extensions leaves it so).
	Interface string `json:"interface"`
}

// IPAMClaimStatus is what the network plugin allocated.
type IPAMClaimStatus struct {
	// IPs are the addresses, one per family, as CIDRs with the subnet's
	// prefix length ("192.168.10.2/24"), as ovn-kubernetes writes them.
	// Once set they are never changed: the claim is their record.
	IPs []string `json:"ips"`
	// OwnerPod names the pod that holds the claim: the VM's virt-launcher
	// pod.
	OwnerPod *OwnerPod `json:"ownerPod,omitempty"`
	// Conditions has type ConditionIPsAllocated.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// OwnerPod names a pod.
type OwnerPod struct {
	Name string `json:"name,omitempty"`
}

// ConditionIPsAllocated is the condition ovn-kubernetes reports on a
// claim: True with ReasonSuccessfulAllocation, False with why.
const ConditionIPsAllocated = "IPsAllocated"

// The reasons of ConditionIPsAllocated ovn-kubernetes writes.
const (
	ReasonSuccessfulAllocation = "SuccessfulAllocation"
	ReasonSubnetExhausted      = "SubnetExhausted"
	ReasonIPAddressConflict    = "IPAddressConflict"
	ReasonMACAddressConflict   = "MACAddressConflict"
)

// DeepCopyObject returns a deep copy of c, as runtime.Object requires.
func (c *IPAMClaim) DeepCopyObject() runtime.Object {
	if c == nil {
		return nil
	}
	return c.DeepCopy()
}

// DeepCopy returns a deep copy of c.
func (c *IPAMClaim) DeepCopy() *IPAMClaim {
	if c == nil {
		return nil
	}
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status = *c.Status.DeepCopy()
	return &out
}

// DeepCopy returns a deep copy of s.
func (s *IPAMClaimStatus) DeepCopy() *IPAMClaimStatus {
	out := *s
	if s.IPs != nil {
		out.IPs = append([]string(nil), s.IPs...)
	}
	if s.OwnerPod != nil {
		p := *s.OwnerPod
		out.OwnerPod = &p
	}
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	return &out
}
