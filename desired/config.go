package desired

import (
	"fmt"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
)

// NewConfig validates the default network's settings and returns them as a
// Config. subnets are CIDRs, at most one IPv4 and one IPv6 and at least one
// of either; host bits are cleared ("10.16.0.5/16" means 10.16.0.0/16).
// excludeIPs entries are single addresses ("10.16.0.1") or kube-ovn style
// inclusive ranges ("10.16.0.1..10.16.0.10"). Errors name the offending value.
func NewConfig(defaultSwitch string, subnets, excludeIPs []string) (Config, error) {
	var cfg Config
	cfg.DefaultSwitch = strings.TrimSpace(defaultSwitch)
	if cfg.DefaultSwitch == "" {
		return Config{}, fmt.Errorf("logical switch name is empty")
	}
	var err error
	cfg.DefaultSubnets, err = netconf.ParseSubnets(subnets)
	if err != nil {
		return Config{}, fmt.Errorf("subnet %w", err)
	}
	if len(cfg.DefaultSubnets) == 0 {
		return Config{}, fmt.Errorf("no subnets")
	}
	for _, s := range excludeIPs {
		r, err := netconf.ParseIPRange(s)
		if err != nil {
			return Config{}, fmt.Errorf("exclude %q: %w", s, err)
		}
		cfg.DefaultExclude = append(cfg.DefaultExclude, r)
	}
	return cfg, nil
}

// WithGateway returns c with the default network's gateways: at most one
// per family, each a usable address of the subnet of its family. Gateways
// are never given to a port, nor granted to a request.
func (c Config) WithGateway(gateways []string) (Config, error) {
	gw, err := netconf.ParseGateways(gateways, c.DefaultSubnets)
	if err != nil {
		return Config{}, fmt.Errorf("gateway %w", err)
	}
	c.DefaultGateway = gw
	return c, nil
}

// WithDHCP returns c with native DHCP on the default network, v4 and v6
// being options over the defaults in kube-ovn's syntax
// ("lease_time=600,dns_server={10.96.0.10}"; see [netconf.ParseDHCPOptions]).
func (c Config) WithDHCP(v4, v6 string) (Config, error) {
	d, err := netconf.ParseDHCP(v4, v6, "dhcpV4Options", "dhcpV6Options")
	if err != nil {
		return Config{}, fmt.Errorf("dhcp: %w", err)
	}
	d.Enabled = true
	c.DefaultDHCP = d
	return c, nil
}
