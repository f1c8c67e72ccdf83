package netconf

import (
	"fmt"
	"net/netip"
	"strings"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
)

// SubnetProvider is a kube-ovn Subnet's provider, ProviderDefault when empty.
func SubnetProvider(s *kubeovnv1.Subnet) string {
	if p := strings.TrimSpace(s.Spec.Provider); p != "" {
		return p
	}
	return ProviderDefault
}

// SubnetSpec is a kube-ovn Subnet's spec.cidrBlock, gateway, excludeIps
// and DHCP settings, read.
type SubnetSpec struct {
	Subnets []netip.Prefix
	Exclude []IPRange
	// Gateways holds at most one per family: spec.gateway's, and, as
	// kube-ovn fills them in, the first usable address of each subnet of a
	// family spec.gateway has none of.
	Gateways []netip.Addr
	DHCP     DHCP
}

// ParseSubnet reads a Subnet's addresses and DHCP settings. Errors name
// the field.
func ParseSubnet(s *kubeovnv1.Subnet) (SubnetSpec, error) {
	var sp SubnetSpec
	if strings.TrimSpace(s.Spec.CIDRBlock) == "" {
		return sp, fmt.Errorf("spec.cidrBlock is empty (a Subnet without addresses is not managed)")
	}
	var err error
	sp.Subnets, err = ParseSubnets(strings.Split(s.Spec.CIDRBlock, ","))
	if err != nil {
		return sp, fmt.Errorf("spec.cidrBlock %v", err)
	}
	if len(sp.Subnets) == 0 {
		return sp, fmt.Errorf("spec.cidrBlock %q: no CIDR", s.Spec.CIDRBlock)
	}
	for _, e := range s.Spec.ExcludeIps {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		r, err := parseExclude(e)
		if err != nil || r.From.Is4() != r.To.Is4() || r.To.Less(r.From) {
			return sp, fmt.Errorf("spec.excludeIps %q: not an address, a range a..b or a CIDR", e)
		}
		sp.Exclude = append(sp.Exclude, r)
	}
	sp.Gateways, err = ParseGateways(strings.Split(s.Spec.Gateway, ","), sp.Subnets)
	if err != nil {
		return sp, fmt.Errorf("spec.gateway %v", err)
	}
	sp.DHCP, err = ParseDHCP(s.Spec.DHCPv4Options, s.Spec.DHCPv6Options, "spec.dhcpV4Options", "spec.dhcpV6Options")
	if err != nil {
		return sp, err
	}
	sp.DHCP.Enabled = s.Spec.EnableDHCP
	sp.Gateways = kubeOVNGateways(sp.Subnets, sp.Gateways)
	return sp, nil
}

// SameVPC reports whether two Subnets' spec.vpc name one VPC: empty is
// kube-ovn's default VPC, ovn-cluster.
func SameVPC(a, b string) bool {
	norm := func(v string) string {
		if v == "" {
			return "ovn-cluster"
		}
		return v
	}
	return norm(a) == norm(b)
}
