package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IP is kube-ovn's record of one port's addresses (ips.kubeovn.io,
// cluster-scoped). kube-ovn names it after the port: "<pod>.<ns>" on the
// default network, "<pod>.<ns>.<provider>" on an attachment, where <pod> is
// the VM's name for everything a VirtualMachine owns; and keeps it while a
// VM is stopped.
type IP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec IPSpec `json:"spec"`
}

// IPSpec is the part of an IP ovn-sync reads, with kube-ovn's field names.
type IPSpec struct {
	// PodName and Namespace name the owner: the pod, or the VirtualMachine
	// when PodType is "VirtualMachine".
	PodName   string `json:"podName"`
	Namespace string `json:"namespace"`
	// Subnet is the logical switch (kube-ovn's Subnet) the port is on.
	Subnet        string   `json:"subnet"`
	AttachSubnets []string `json:"attachSubnets,omitempty"`
	NodeName      string   `json:"nodeName,omitempty"`
	// IPAddress is "v4", "v6" or "v4,v6"; V4IPAddress and V6IPAddress are
	// its parts.
	IPAddress   string   `json:"ipAddress,omitempty"`
	V4IPAddress string   `json:"v4IpAddress,omitempty"`
	V6IPAddress string   `json:"v6IpAddress,omitempty"`
	AttachIPs   []string `json:"attachIps,omitempty"`
	MacAddress  string   `json:"macAddress,omitempty"`
	AttachMacs  []string `json:"attachMacs,omitempty"`
	ContainerID string   `json:"containerID,omitempty"`
	// PodType is "VirtualMachine" for a VM's ports, "StatefulSet" or ""
	// for pods.
	PodType string `json:"podType,omitempty"`
}

// PodTypeVirtualMachine is IPSpec.PodType on the ports of a VirtualMachine.
const PodTypeVirtualMachine = "VirtualMachine"

// DeepCopyObject returns a deep copy of ip, as runtime.Object requires.
func (ip *IP) DeepCopyObject() runtime.Object {
	if ip == nil {
		return nil
	}
	c := *ip
	ip.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.AttachSubnets = clone(ip.Spec.AttachSubnets)
	c.Spec.AttachIPs = clone(ip.Spec.AttachIPs)
	c.Spec.AttachMacs = clone(ip.Spec.AttachMacs)
	return &c
}

func clone(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}
