package main

import (
	"flag"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// fileConfig is the --config file (DESIGN, "Config file").
type fileConfig struct {
	DefaultNetwork struct {
		LogicalSwitch string   `json:"logicalSwitch"`
		Subnets       []string `json:"subnets"`
		ExcludeIPs    []string `json:"excludeIPs"`
		// Gateway is reserved (never a port's) and published by run mode
		// (ovn.kubernetes.io/gateway).
		Gateway string `json:"gateway"`
		// DHCP turns on native DHCP on the default network, with
		// DHCPv4Options and DHCPv6Options over the defaults (docs/addresses.md, "Native DHCP").
		DHCP          *bool  `json:"dhcp"`
		DHCPv4Options string `json:"dhcpV4Options"`
		DHCPv6Options string `json:"dhcpV6Options"`
	} `json:"defaultNetwork"`
}

// Defaults match kube-ovn's default subnet, so a cluster moving from it keeps its addressing.
const (
	defaultSwitch  = "ovn-default"
	defaultSubnets = "10.16.0.0/16"
	defaultExclude = "10.16.0.1"
)

// networkFlags are the flags that mirror the config file's keys. Set flags win
// over the file; the file wins over the defaults.
type networkFlags struct {
	configFile string
	sw         string
	subnets    string
	exclude    string
	gateway    string
	dhcp       bool
	dhcpV4     string
	dhcpV6     string
	adopt      string
}

func (n *networkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.configFile, "config", "", "config `file` (YAML; see docs/cli.md)")
	fs.StringVar(&n.sw, "default-switch", defaultSwitch, "logical switch of the default network")
	fs.StringVar(&n.subnets, "default-subnets", defaultSubnets, "comma-separated CIDRs of the default network (one IPv4, one IPv6)")
	fs.StringVar(&n.exclude, "default-exclude-ips", defaultExclude, "comma-separated addresses or ranges (a..b) never allocated on the default network")
	fs.StringVar(&n.adopt, "adopt", "", "adopt in place the ports this `vendor` made under the names ovn-sync would give them: kube-ovn (see docs/kube-ovn.md, Coming from kube-ovn)")
	fs.BoolVar(&n.dhcp, "default-dhcp", false, "native DHCP on the default network: one DHCP_Options row per subnet family, which its ports refer to")
	fs.StringVar(&n.dhcpV4, "default-dhcp-v4-options", "", "DHCPv4 options of the default network over the defaults, kube-ovn's syntax (\"lease_time=600,dns_server={10.96.0.10}\"); turn DHCP on unless --default-dhcp=false")
	fs.StringVar(&n.dhcpV6, "default-dhcp-v6-options", "", "DHCPv6 options of the default network over the defaults (\"dns_server={fd00:96::10}\"); turn DHCP on unless --default-dhcp=false")
	fs.StringVar(&n.gateway, "default-gateway", "", "comma-separated gateway addresses of the default network: never given to a port, and published on pods by run mode (ovn.kubernetes.io/gateway)")
}

// load merges defaults, the config file and the flags set on fs into a desired.Config.
// readFile reads the config file; the demo passes one that reads its embedded copy.
func (n *networkFlags) load(fs *flag.FlagSet, readFile func(string) ([]byte, error)) (desired.Config, error) {
	sw, subnets, exclude, gateway := n.sw, splitList(n.subnets), splitList(n.exclude), splitList(n.gateway)
	dhcpV4, dhcpV6 := n.dhcpV4, n.dhcpV6
	// dhcp is on when set so (the flag, else the file), or when options
	// are given and nothing says it is off.
	var dhcp *bool
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["default-dhcp"] {
		dhcp = &n.dhcp
	}
	if n.configFile != "" {
		data, err := readFile(n.configFile)
		if err != nil {
			return desired.Config{}, err
		}
		var fc fileConfig
		if err := yaml.UnmarshalStrict(data, &fc); err != nil {
			return desired.Config{}, fmt.Errorf("config %s: %w", n.configFile, err)
		}
		if d := fc.DefaultNetwork; !set["default-switch"] && d.LogicalSwitch != "" {
			sw = d.LogicalSwitch
		}
		if d := fc.DefaultNetwork; !set["default-subnets"] && d.Subnets != nil {
			subnets = d.Subnets
		}
		if d := fc.DefaultNetwork; !set["default-exclude-ips"] && d.ExcludeIPs != nil {
			exclude = d.ExcludeIPs
		}
		if d := fc.DefaultNetwork; !set["default-gateway"] && d.Gateway != "" {
			gateway = splitList(d.Gateway)
		}
		if d := fc.DefaultNetwork; !set["default-dhcp"] && d.DHCP != nil {
			dhcp = d.DHCP
		}
		if d := fc.DefaultNetwork; !set["default-dhcp-v4-options"] && d.DHCPv4Options != "" {
			dhcpV4 = d.DHCPv4Options
		}
		if d := fc.DefaultNetwork; !set["default-dhcp-v6-options"] && d.DHCPv6Options != "" {
			dhcpV6 = d.DHCPv6Options
		}
	}
	cfg, err := desired.NewConfig(sw, subnets, exclude)
	if err == nil {
		cfg, err = cfg.WithGateway(gateway)
	}
	if err == nil && (dhcp != nil && *dhcp || dhcp == nil && (dhcpV4 != "" || dhcpV6 != "")) {
		cfg, err = cfg.WithDHCP(dhcpV4, dhcpV6)
	}
	if err != nil {
		return desired.Config{}, fmt.Errorf("default network: %w", err)
	}
	if n.adopt != "" && n.adopt != state.VendorKubeOVN {
		return desired.Config{}, fmt.Errorf("--adopt %q: the only vendor ovn-sync adopts from is %s", n.adopt, state.VendorKubeOVN)
	}
	cfg.Adopt = n.adopt
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// stringList is a repeatable string flag (-f a -f b, or -f a,b).
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, splitList(v)...)
	return nil
}
