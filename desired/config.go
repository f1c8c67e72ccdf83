package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
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
	cfg.DefaultSubnets, err = parseSubnets(subnets)
	if err != nil {
		return Config{}, fmt.Errorf("subnet %w", err)
	}
	if len(cfg.DefaultSubnets) == 0 {
		return Config{}, fmt.Errorf("no subnets")
	}
	for _, s := range excludeIPs {
		r, err := parseIPRange(s)
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
	gw, err := parseGateways(gateways, c.DefaultSubnets)
	if err != nil {
		return Config{}, fmt.Errorf("gateway %w", err)
	}
	c.DefaultGateway = gw
	return c, nil
}

// WithDHCP returns c with native DHCP on the default network, v4 and v6
// being options over the defaults in kube-ovn's syntax
// ("lease_time=600,dns_server={10.96.0.10}"; see ParseDHCPOptions).
func (c Config) WithDHCP(v4, v6 string) (Config, error) {
	d, err := parseDHCP(true, v4, v6, "dhcpV4Options", "dhcpV6Options")
	if err != nil {
		return Config{}, fmt.Errorf("dhcp: %w", err)
	}
	c.DefaultDHCP = d
	return c, nil
}

// parseIPRange parses "a" or "a..b".
func parseIPRange(s string) (IPRange, error) {
	from, to, isRange := strings.Cut(strings.TrimSpace(s), "..")
	a, err := parseIP(from)
	if !isRange {
		return IPRange{From: a, To: a}, err
	}
	if err != nil {
		return IPRange{}, fmt.Errorf("%q: %w", from, err)
	}
	b, err := parseIP(to)
	if err != nil {
		return IPRange{}, fmt.Errorf("%q: %w", to, err)
	}
	if a.Is4() != b.Is4() {
		return IPRange{}, fmt.Errorf("range mixes IPv4 and IPv6")
	}
	if b.Less(a) {
		return IPRange{}, fmt.Errorf("range ends before it starts")
	}
	return IPRange{From: a, To: b}, nil
}

// prefixRange is the inclusive range of addresses in p.
func prefixRange(p netip.Prefix) IPRange {
	return IPRange{From: p.Masked().Addr(), To: lastAddr(p)}
}

// mergeRanges returns the ranges of one family sorted by From, with
// overlapping and adjacent ranges merged, which is the form pool.take walks.
func mergeRanges(rs []IPRange, is4 bool) []IPRange {
	var out []IPRange
	for _, r := range rs {
		if r.From.IsValid() && r.To.IsValid() && r.From.Is4() == is4 && r.To.Is4() == is4 && !r.To.Less(r.From) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b IPRange) int { return a.From.Compare(b.From) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			// Adjacent ranges merge too: last.To.Next() == r.From.
			if next := last.To.Next(); !next.IsValid() || !next.Less(r.From) {
				if last.To.Less(r.To) {
					last.To = r.To
				}
				continue
			}
		}
		merged = append(merged, r)
	}
	return merged
}
