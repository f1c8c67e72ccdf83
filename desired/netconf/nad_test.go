package netconf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
)

func TestParseNADConfig(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // the error's text; "" for none
		// for a managed config:
		subnets, gateways string
		sw                string
	}{
		{raw: `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"10.5.0.7/24,fd00:5::/64"}`, subnets: "10.5.0.0/24 fd00:5::/64"},
		{raw: `{"type":"ovn-k8s-cni-overlay","topology":"layer2"}`},
		{raw: `{"type":"kube-ovn","subnets":"10.6.0.0/24,fd00:6::/120","logical_switch":"ls6"}`,
			subnets: "10.6.0.0/24 fd00:6::/120", gateways: "10.6.0.1 fd00:6::1", sw: "ls6"},
		{raw: `{"plugins":[{"type":"bridge"},{"type":"kube-ovn","subnets":"10.7.0.0/24","gateway":"10.7.0.9"}]}`,
			subnets: "10.7.0.0/24", gateways: "10.7.0.9"},
		{raw: `{"type":"ovn-k8s-cni-overlay"}`, want: `spec.config: "subnets" is required for type "ovn-k8s-cni-overlay"`},
		{raw: `{"type":"ovn-k8s-cni-overlay","topology":"layer3","subnets":"10.5.0.0/24"}`,
			want: `spec.config: "topology": not managed: topology layer3 (ovn-sync manages ovn-k8s-cni-overlay networks of topology layer2 only)`},
		{raw: `{"type":"ovn-k8s-cni-overlay","role":"Secondary","subnets":"10.5.0.0/24"}`,
			want: `spec.config: "role" "Secondary": not primary or secondary`},
		{raw: `{"type":"ovn-k8s-cni-overlay","subnets":"10.5.0.0/24,10.6.0.0/24"}`,
			want: `spec.config: "subnets" "10.6.0.0/24": more than one IPv4 subnet`},
		{raw: `{"type":"ovn-k8s-cni-overlay","topology":"layer2","excludeSubnets":"10.5.0.1"}`,
			want: `spec.config: "excludeSubnets" without "subnets": a network without IPAM has nothing to exclude`},
		{raw: `{"plugins":[{"type":"kube-ovn","subnets":"10.7.0.0/24","gateway":"10.7.0.0"}]}`,
			want: `spec.config: plugins[0]: "gateway" "10.7.0.0": is the network address of 10.7.0.0/24`},
		{raw: `{"type":"kube-ovn","provider":"typo.default"}`,
			want: `spec.config: "provider" "typo.default": not "<name>.ovn" (kube-ovn's form is "<nad>.<namespace>.ovn")`},
		{raw: `{"type":"kube-ovn","subnets":"10.6.0.0/24","dhcp":"yes"}`, want: `spec.config: "dhcp" must be true or false`},
		{raw: `{"type":"kube-ovn","subnets":"10.6.0.0/24","dhcpV4Options":"lease_time="}`,
			want: `spec.config: "dhcpV4Options": lease_time cannot be removed: OVN requires it`},
		{raw: `{"type":`, want: `spec.config: invalid JSON: unexpected end of JSON input`},
	} {
		mc, _, err := ParseNADConfig(tc.raw)
		switch {
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("ParseNADConfig(%s) error = %v, want %q", tc.raw, err, tc.want)
		case tc.want == "" && (err != nil || mc == nil):
			t.Errorf("ParseNADConfig(%s) = %v, %v, want a managed config", tc.raw, mc, err)
		case tc.want == "":
			if got := join(mc.Subnets); got != tc.subnets {
				t.Errorf("ParseNADConfig(%s) subnets = %q, want %q", tc.raw, got, tc.subnets)
			}
			if got := join(mc.Gateways); got != tc.gateways {
				t.Errorf("ParseNADConfig(%s) gateways = %q, want %q", tc.raw, got, tc.gateways)
			}
			if mc.LogicalSwitch != tc.sw {
				t.Errorf("ParseNADConfig(%s) logical switch = %q, want %q", tc.raw, mc.LogicalSwitch, tc.sw)
			}
		}
	}
}

// A config that is not OVN's, or has no config at all, is no error: the
// NAD is another CNI's.
func TestParseNADConfigUnmanaged(t *testing.T) {
	for raw, want := range map[string]UnmanagedConfig{
		"":                   {Where: "spec.config"},
		`{"type":"macvlan"}`: {CNIType: "macvlan", Where: "spec.config"},
		`{"plugins":[{"type":"a"},{"type":"b"}]}`: {CNIType: "a,b", Where: "spec.config: plugins[*]"},
	} {
		mc, u, err := ParseNADConfig(raw)
		if mc != nil || err != nil || u != want {
			t.Errorf("ParseNADConfig(%q) = %v, %+v, %v, want nil, %+v, nil", raw, mc, u, err, want)
		}
	}
	var te TopologyError
	if _, _, err := ParseNADConfig(`{"type":"ovn-k8s-cni-overlay","topology":"localnet"}`); !errors.As(err, &te) || te.Topology != "localnet" {
		t.Errorf("ParseNADConfig(localnet) error = %v, want a TopologyError of localnet", err)
	}
	var re RoleError
	if _, _, err := ParseNADConfig(`{"type":"ovn-k8s-cni-overlay","role":"primary"}`); !errors.As(err, &re) || re.Role != "primary" {
		t.Errorf("ParseNADConfig(primary) error = %v, want a RoleError of primary", err)
	}
}

func TestParseSubnet(t *testing.T) {
	subnet := func(cidr, gw string, excl ...string) *kubeovnv1.Subnet {
		return &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec: kubeovnv1.SubnetSpec{CIDRBlock: cidr, Gateway: gw, ExcludeIps: excl}}
	}
	sp, err := ParseSubnet(subnet("10.70.0.0/24,fd00:70::/120", "", "10.70.0.2..10.70.0.9", "10.70.0.128/30"))
	if err != nil {
		t.Fatalf("ParseSubnet: %v", err)
	}
	if got, want := join(sp.Gateways), "10.70.0.1 fd00:70::1"; got != want {
		t.Errorf("ParseSubnet gateways = %q, want %q (kube-ovn's first addresses)", got, want)
	}
	if got := sp.Exclude; len(got) != 2 || got[1].To != netip.MustParseAddr("10.70.0.131") {
		t.Errorf("ParseSubnet exclude = %v, want 10.70.0.2..10.70.0.9 and 10.70.0.128..10.70.0.131", got)
	}
	for _, tc := range []struct {
		s    *kubeovnv1.Subnet
		want string
	}{
		{subnet(" ", ""), "spec.cidrBlock is empty (a Subnet without addresses is not managed)"},
		{subnet(",", ""), `spec.cidrBlock ",": no CIDR`},
		{subnet("10.70.0.0/33", ""), `spec.cidrBlock "10.70.0.0/33": not a CIDR`},
		{subnet("10.70.0.0/24", "", "10.70.0.9..10.70.0.2x"), `spec.excludeIps "10.70.0.9..10.70.0.2x": not an address, a range a..b or a CIDR`},
		{subnet("10.70.0.0/24", "10.71.0.1"), `spec.gateway "10.71.0.1": not in a subnet of the network`},
	} {
		if _, err := ParseSubnet(tc.s); err == nil || err.Error() != tc.want {
			t.Errorf("ParseSubnet(%q, %q, %q) error = %v, want %q", tc.s.Spec.CIDRBlock, tc.s.Spec.Gateway, tc.s.Spec.ExcludeIps, err, tc.want)
		}
	}
}

func TestParseDHCPOptions(t *testing.T) {
	got, err := ParseDHCPOptions(" lease_time=600 , dns_server={10.96.0.10,10.96.0.11},router=")
	want := map[string]string{"lease_time": "600", "dns_server": "{10.96.0.10,10.96.0.11}", "router": ""}
	if err != nil || len(got) != len(want) || got["dns_server"] != want["dns_server"] || got["router"] != "" || got["lease_time"] != "600" {
		t.Errorf("ParseDHCPOptions = %v, %v, want %v", got, err, want)
	}
	for s, want := range map[string]string{
		"router":              `"router": want key=value`,
		"a=1,a=2":             `"a=2": a given twice`,
		"dns_server={1,2":     `"dns_server={1,2": unbalanced braces`,
		"lease_time=1,{x}=2":  `"{x}=2": want key=value`,
		"server id=10.0.0.1,": `"server id=10.0.0.1": want key=value`,
	} {
		if _, err := ParseDHCPOptions(s); err == nil || err.Error() != want {
			t.Errorf("ParseDHCPOptions(%q) error = %v, want %q", s, err, want)
		}
	}
}

func TestParseIPRange(t *testing.T) {
	for s, want := range map[string]string{
		"10.16.0.1":              "10.16.0.1..10.16.0.1",
		" 10.16.0.1..10.16.0.10": "10.16.0.1..10.16.0.10",
		"::ffff:10.16.0.1":       "10.16.0.1..10.16.0.1",
		"10.16.0.1..fd00::1":     "range mixes IPv4 and IPv6",
		"10.16.0.9..10.16.0.1":   "range ends before it starts",
		"10.16.0.1..x":           `"x": not an IP address`,
		"fe80::1%eth0":           "not an IP address",
	} {
		r, err := ParseIPRange(s)
		got := r.From.String() + ".." + r.To.String()
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("ParseIPRange(%q) = %s, want %s", s, got, want)
		}
	}
}

// join renders addresses or prefixes separated by spaces.
func join[T interface{ String() string }](vs []T) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.String())
	}
	return strings.Join(s, " ")
}
