package netconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// CNI types whose NetworkAttachmentDefinitions ovn-sync manages.
const (
	TypeOVNKubernetes = "ovn-k8s-cni-overlay"
	TypeKubeOVN       = "kube-ovn"
)

// topologyLayer2 is the one ovn-kubernetes topology ovn-sync manages: a
// switch per network. layer3 (a switch per node behind a router) and
// localnet (a switch bridged to a physical network) are not.
const topologyLayer2 = "layer2"

// ovn-kubernetes network roles: a secondary network (the default) is an
// attachment pods ask for; a primary one is not ours (RoleError).
const (
	roleSecondary = "secondary"
	rolePrimary   = "primary"
)

// Providers name a network's ports and annotations: ProviderDefault is the
// default network's, and every other OVN network's ends in ProviderSuffix
// ("<nad>.<nadns>.ovn", a kube-ovn "<name>.ovn").
const (
	ProviderDefault = "ovn"
	ProviderSuffix  = ".ovn"
)

// configError is a problem with a NAD's spec.config; its text names the field.
type configError string

func (e configError) Error() string { return string(e) }

// TopologyError is an ovn-kubernetes config of a topology ovn-sync does not
// manage: a Problem on the NAD, never an overlay by default.
type TopologyError struct{ Where, Topology string }

func (e TopologyError) Error() string {
	return fmt.Sprintf("%s: \"topology\": not managed: topology %s (ovn-sync manages %s networks of topology %s only)",
		e.Where, e.Topology, TypeOVNKubernetes, topologyLayer2)
}

// RoleError is an ovn-kubernetes config of role primary (a user-defined
// network): ovn-kubernetes makes it the primary interface of every pod in
// the NAD's namespace, annotation or not, and refuses it in a network
// selection. ovn-sync manages secondary networks only, so it is a Problem
// on the NAD, never a secondary network by default.
type RoleError struct{ Where, Role string }

func (e RoleError) Error() string {
	return fmt.Sprintf("%s: \"role\": not managed: role %s (ovn-sync manages %s networks of role %s only; "+
		"a primary network is the primary interface of every pod in its namespace)", e.Where, e.Role, TypeOVNKubernetes, roleSecondary)
}

// ManagedConfig is the part of an ovn-kubernetes layer2 (or kube-ovn) CNI
// config ovn-sync reads. An ovn-kubernetes layer2 config without
// "subnets" has no subnets: a network without IPAM, whose ports carry a
// MAC only. A kube-ovn config without "subnets" has only CNIType and
// Provider: its network is the Subnet of its provider.
type ManagedConfig struct {
	CNIType string
	// Provider is a kube-ovn config's "provider", "" when absent.
	Provider string
	Subnets  []netip.Prefix
	Exclude  []IPRange
	// Gateways holds at most one per family: "gateway"'s, and for a
	// kube-ovn config, as kube-ovn fills them in, the first usable address
	// of each subnet of a family "gateway" has none of.
	Gateways []netip.Addr
	// LogicalSwitch is "logical_switch", "" when absent.
	LogicalSwitch string
	DHCP          DHCP
}

// UnmanagedConfig describes a NAD config that is not OVN's: its CNI type
// and where it was read, for the Problem raised when a NAD in use turns
// into one.
type UnmanagedConfig struct {
	CNIType string
	Where   string
}

// ParseNADConfig reads a NAD's spec.config. It returns (nil, u, nil) for a
// config that is not OVN's, including an empty one (Multus then reads a
// file on the node). A conflist ("plugins") is ours when one of its
// plugins is. An OVN config of a topology or role ovn-sync does not manage
// is a TopologyError or a RoleError; any other error is an invalid config.
func ParseNADConfig(raw string) (*ManagedConfig, UnmanagedConfig, error) {
	none := UnmanagedConfig{Where: "spec.config"}
	if strings.TrimSpace(raw) == "" {
		return nil, none, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		return nil, none, configError(fmt.Sprintf("spec.config: invalid JSON: %v", err))
	}
	t := jsonString(top["type"])
	if t == TypeOVNKubernetes || t == TypeKubeOVN {
		mc, err := parseManaged(t, top, "spec.config")
		return mc, none, err
	}
	plugins, ok := top["plugins"]
	if !ok {
		return nil, UnmanagedConfig{CNIType: t, Where: "spec.config"}, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(plugins, &list); err != nil {
		return nil, none, configError(fmt.Sprintf("spec.config: \"plugins\": %v", err))
	}
	var types []string
	for i, p := range list {
		t := jsonString(p["type"])
		if t == TypeOVNKubernetes || t == TypeKubeOVN {
			mc, err := parseManaged(t, p, fmt.Sprintf("spec.config: plugins[%d]", i))
			return mc, none, err
		}
		types = append(types, t)
	}
	return nil, UnmanagedConfig{CNIType: strings.Join(types, ","), Where: "spec.config: plugins[*]"}, nil
}

// jsonString returns raw as a string, or "" if it is absent or not a string.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func stringField(obj map[string]json.RawMessage, key, where string) (string, bool, error) {
	raw, ok := obj[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, configError(fmt.Sprintf("%s: %q must be a string", where, key))
	}
	return strings.TrimSpace(s), true, nil
}

// parseManaged reads an OVN config. For ovn-kubernetes, "topology" decides:
// layer2 is managed, with or without "subnets"; no topology (configs written
// before the field) is read as layer2 with "subnets" required; any other
// topology is a TopologyError.
func parseManaged(cniType string, obj map[string]json.RawMessage, where string) (*ManagedConfig, error) {
	mc := &ManagedConfig{CNIType: cniType}
	noIPAM := false
	if cniType == TypeOVNKubernetes {
		var err error
		if noIPAM, err = parseOVNKubernetesKind(obj, where); err != nil {
			return nil, err
		}
	}
	subnets, _, err := stringField(obj, "subnets", where)
	if err != nil {
		return nil, err
	}
	mc.Subnets, err = ParseSubnets(strings.Split(subnets, ","))
	if err != nil {
		return nil, configError(fmt.Sprintf("%s: \"subnets\" %v", where, err))
	}
	if cniType == TypeKubeOVN {
		if mc.Provider, err = parseKubeOVNProvider(obj, where); err != nil {
			return nil, err
		}
	}
	if len(mc.Subnets) == 0 && cniType == TypeKubeOVN {
		// kube-ovn's own form: the network is the Subnet of the provider.
		return mc, nil
	}
	if len(mc.Subnets) == 0 && !noIPAM {
		return nil, configError(fmt.Sprintf("%s: %q is required for type %q", where, "subnets", cniType))
	}
	if mc.Exclude, err = parseExcludeSubnets(obj, where, len(mc.Subnets) > 0); err != nil {
		return nil, err
	}
	gw, _, err := stringField(obj, "gateway", where)
	if err != nil {
		return nil, err
	}
	mc.Gateways, err = ParseGateways(strings.Split(gw, ","), mc.Subnets)
	if err != nil {
		return nil, configError(fmt.Sprintf("%s: \"gateway\" %v", where, err))
	}
	if cniType == TypeKubeOVN {
		mc.Gateways = kubeOVNGateways(mc.Subnets, mc.Gateways)
	}
	if mc.DHCP, err = nadDHCP(obj, where); err != nil {
		return nil, err
	}
	ls, present, err := stringField(obj, "logical_switch", where)
	if err != nil {
		return nil, err
	}
	if present && ls == "" {
		return nil, configError(fmt.Sprintf("%s: \"logical_switch\" is empty", where))
	}
	mc.LogicalSwitch = ls
	return mc, nil
}

// parseOVNKubernetesKind reads an ovn-kubernetes NAD's topology and role:
// ovn-sync manages secondary layer3 (the default) and layer2 networks, the
// latter without IPAM when they have no subnets (noIPAM); any other is a
// TopologyError or RoleError (not managed), or an invalid config.
func parseOVNKubernetesKind(obj map[string]json.RawMessage, where string) (noIPAM bool, err error) {
	topology, _, err := stringField(obj, "topology", where)
	if err != nil {
		return false, err
	}
	switch topology {
	case "":
	case topologyLayer2:
		noIPAM = true
	default:
		return false, TopologyError{Where: where, Topology: topology}
	}
	role, _, err := stringField(obj, "role", where)
	if err != nil {
		return false, err
	}
	switch role {
	case "", roleSecondary:
	case rolePrimary:
		return false, RoleError{Where: where, Role: role}
	default:
		return false, configError(fmt.Sprintf("%s: \"role\" %q: not %s or %s", where, role, rolePrimary, roleSecondary))
	}
	return noIPAM, nil
}

// parseKubeOVNProvider reads a kube-ovn NAD's provider, "" when it has
// none: "<name>.ovn", kube-ovn's form being "<nad>.<namespace>.ovn".
func parseKubeOVNProvider(obj map[string]json.RawMessage, where string) (string, error) {
	prov, present, err := stringField(obj, "provider", where)
	if err != nil {
		return "", err
	}
	if present && (!IsDNSSubdomain(prov) || !strings.HasSuffix(prov, ProviderSuffix) || strings.Count(prov, ".") < 1) {
		return "", configError(fmt.Sprintf("%s: \"provider\" %q: not \"<name>.ovn\" (kube-ovn's form is \"<nad>.<namespace>.ovn\")", where, prov))
	}
	return prov, nil
}

// parseExcludeSubnets reads "excludeSubnets", a comma-separated list of
// CIDRs, addresses and ranges; hasSubnets says the network has subnets to
// exclude them from.
func parseExcludeSubnets(obj map[string]json.RawMessage, where string, hasSubnets bool) ([]IPRange, error) {
	excl, _, err := stringField(obj, "excludeSubnets", where)
	if err != nil {
		return nil, err
	}
	if !hasSubnets && strings.TrimSpace(excl) != "" {
		return nil, configError(fmt.Sprintf("%s: \"excludeSubnets\" without \"subnets\": a network without IPAM has nothing to exclude", where))
	}
	var out []IPRange
	for _, s := range strings.Split(excl, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		r, err := parseExclude(s)
		if err != nil {
			return nil, configError(fmt.Sprintf("%s: \"excludeSubnets\" %q: not a CIDR or IP address", where, s))
		}
		out = append(out, r)
	}
	return out, nil
}

// kubeOVNGateways adds to gateways, kube-ovn's convention, the first
// usable address of each subnet of a family no gateway was given for, IPv6
// as IPv4 (a /31, /32, /127 or /128 has none to add). A kube-ovn NAD
// config and a Subnet are read so.
func kubeOVNGateways(subnets []netip.Prefix, gateways []netip.Addr) []netip.Addr {
	for _, p := range subnets {
		if !slices.ContainsFunc(gateways, func(g netip.Addr) bool { return g.Is4() == p.Addr().Is4() }) {
			if first, _ := Usable(p); first != p.Addr() {
				gateways = append(gateways, first)
			}
		}
	}
	return gateways
}
