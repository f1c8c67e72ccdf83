package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is kube-ovn's API group and version.
var GroupVersion = schema.GroupVersion{Group: "kubeovn.io", Version: "v1"}

// Subnet is a kube-ovn Subnet (cluster-scoped): one logical switch, named
// after the Subnet, and the addresses it hands out.
type Subnet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SubnetSpec `json:"spec"`
}

// SubnetSpec is the part of a Subnet's spec ovn-sync reads.
type SubnetSpec struct {
	// Default marks the Subnet of pods whose namespace no Subnet lists.
	Default bool `json:"default,omitempty"`
	// Vpc is the VPC the Subnet belongs to; empty is kube-ovn's default
	// VPC. Subnets of one VPC may not overlap.
	Vpc string `json:"vpc,omitempty"`
	// Protocol is IPv4, IPv6 or Dual; kube-ovn derives it from CIDRBlock.
	Protocol string `json:"protocol,omitempty"`
	// Namespaces are the namespaces whose pods are on this Subnet.
	Namespaces []string `json:"namespaces,omitempty"`
	// CIDRBlock is one CIDR, or an IPv4 and an IPv6 one comma-separated.
	CIDRBlock string `json:"cidrBlock,omitempty"`
	// Gateway is the gateway address, one per family comma-separated;
	// kube-ovn fills in the first address of each CIDR when it is empty.
	Gateway string `json:"gateway,omitempty"`
	// ExcludeIps are addresses and "a..b" ranges never handed out.
	ExcludeIps []string `json:"excludeIps,omitempty"`
	// Provider is "ovn" (or empty) for the default network, else the
	// provider of the NetworkAttachmentDefinitions whose network this is,
	// e.g. "attachnet.default.ovn".
	Provider string `json:"provider,omitempty"`
	// Vlan names an underlay Vlan; the switch then has a localnet port.
	Vlan string `json:"vlan,omitempty"`
	// EnableDHCP turns on OVN's native DHCP for the Subnet's ports;
	// DHCPv4Options and DHCPv6Options are DHCP_Options options,
	// "key=value,key=value".
	EnableDHCP    bool   `json:"enableDHCP,omitempty"`
	DHCPv4Options string `json:"dhcpV4Options,omitempty"`
	DHCPv6Options string `json:"dhcpV6Options,omitempty"`
}

// SubnetList is a list of Subnets.
type SubnetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Subnet `json:"items"`
}

// DeepCopyInto copies s into out.
func (s *Subnet) DeepCopyInto(out *Subnet) {
	*out = *s
	out.TypeMeta = s.TypeMeta
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = s.Spec
	if s.Spec.Namespaces != nil {
		out.Spec.Namespaces = append([]string(nil), s.Spec.Namespaces...)
	}
	if s.Spec.ExcludeIps != nil {
		out.Spec.ExcludeIps = append([]string(nil), s.Spec.ExcludeIps...)
	}
}

// DeepCopy returns a copy of s.
func (s *Subnet) DeepCopy() *Subnet {
	if s == nil {
		return nil
	}
	out := new(Subnet)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyObject makes Subnet a runtime.Object.
func (s *Subnet) DeepCopyObject() runtime.Object { return s.DeepCopy() }

// DeepCopyObject makes SubnetList a runtime.Object.
func (l *SubnetList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &SubnetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Subnet, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&out.Items[i])
	}
	return out
}
