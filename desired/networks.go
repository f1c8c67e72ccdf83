package desired

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// CNI types whose NetworkAttachmentDefinitions ovn-sync manages.
const (
	typeOVNKubernetes = "ovn-k8s-cni-overlay"
	typeKubeOVN       = "kube-ovn"
)

// Switch owners (external_ids:ovn-sync/owner on Logical_Switch).
const (
	ownerDefaultSwitch = "ovn-sync"
	ownerNADPrefix     = "NetworkAttachmentDefinition/"
	kindNAD            = "NetworkAttachmentDefinition"
	providerDefault    = "ovn"
	providerSuffix     = ".ovn"
)

// network is one logical network ovn-sync allocates on: the default network
// or a managed NetworkAttachmentDefinition.
type network struct {
	key      string // state.DefaultNetwork or "<nadns>/<nad>"
	provider string // "ovn" or "<nad>.<nadns>.ovn"
	sw       string // logical switch name
	swID     uint32
	owner    string // the switch's external_ids:ovn-sync/owner when we create it

	v4, v6 netip.Prefix // invalid when the family is absent
	// r4 and r6 are the usable addresses of v4 and v6 (see usable).
	r4, r6 IPRange
	// excl4 and excl6 are never handed out dynamically: merged, sorted.
	excl4, excl6 []IPRange
	// pool4 and pool6 are created on first dynamic allocation.
	pool4, pool6 *pool
}

func newNetwork(key, provider, sw, owner string, subnets []netip.Prefix, exclude []IPRange) *network {
	n := &network{key: key, provider: provider, sw: sw, owner: owner}
	for _, p := range subnets {
		if p.Addr().Is4() {
			n.v4 = p
			n.r4.From, n.r4.To = usable(p)
		} else {
			n.v6 = p
			n.r6.From, n.r6.To = usable(p)
		}
	}
	n.excl4 = mergeRanges(exclude, true)
	n.excl6 = mergeRanges(exclude, false)
	return n
}

func inRange(r IPRange, a netip.Addr) bool {
	return r.From.IsValid() && !a.Less(r.From) && !r.To.Less(a)
}

// switchValue is the Logical_Switch ovn-sync wants for n when it owns it.
func (n *network) switchValue() *state.Switch {
	s := &state.Switch{Name: n.sw, Owner: n.owner, Network: n.key}
	if n.v4.IsValid() {
		s.Subnet = n.v4.String()
	}
	if n.v6.IsValid() {
		// OVN's other_config:ipv6_prefix is the prefix address without its length.
		s.IPv6Prefix = n.v6.Addr().String()
	}
	return s
}

// nadRef names a NetworkAttachmentDefinition.
type nadRef struct{ ns, name string }

func (r nadRef) String() string { return r.ns + "/" + r.name }

type nadState uint8

const (
	nadUnmanaged nadState = iota // not OVN's: no port, no problem
	nadManaged
	nadInvalid // unknown: ports on it are kept as they are
)

type nadEntry struct {
	state nadState
	net   *network
}

// nadConfigError is a problem with a NAD's spec.config; its text names the field.
type nadConfigError string

func (e nadConfigError) Error() string { return string(e) }

// managedConfig is the part of an ovn-kubernetes layer2 (or kube-ovn) CNI
// config ovn-sync reads.
type managedConfig struct {
	cniType       string
	subnets       []netip.Prefix
	exclude       []IPRange
	logicalSwitch string
}

// parseNADConfig reads a NAD's spec.config. It returns (nil, nil) for a
// config that is not OVN's, including an empty one (Multus then reads a file
// on the node). A conflist ("plugins") is ours when one of its plugins is.
func parseNADConfig(raw string) (*managedConfig, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &top); err != nil {
		return nil, nadConfigError(fmt.Sprintf("spec.config: invalid JSON: %v", err))
	}
	if t := jsonString(top["type"]); t == typeOVNKubernetes || t == typeKubeOVN {
		return parseManaged(t, top, "spec.config")
	}
	plugins, ok := top["plugins"]
	if !ok {
		return nil, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(plugins, &list); err != nil {
		return nil, nadConfigError(fmt.Sprintf("spec.config: \"plugins\": %v", err))
	}
	for i, p := range list {
		if t := jsonString(p["type"]); t == typeOVNKubernetes || t == typeKubeOVN {
			return parseManaged(t, p, fmt.Sprintf("spec.config: plugins[%d]", i))
		}
	}
	return nil, nil
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
		return "", true, nadConfigError(fmt.Sprintf("%s: %q must be a string", where, key))
	}
	return strings.TrimSpace(s), true, nil
}

func parseManaged(cniType string, obj map[string]json.RawMessage, where string) (*managedConfig, error) {
	mc := &managedConfig{cniType: cniType}
	subnets, _, err := stringField(obj, "subnets", where)
	if err != nil {
		return nil, err
	}
	if subnets == "" {
		return nil, nadConfigError(fmt.Sprintf("%s: %q is required for type %q", where, "subnets", cniType))
	}
	var have4, have6 bool
	for _, s := range strings.Split(subnets, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" {
			return nil, nadConfigError(fmt.Sprintf("%s: \"subnets\" %q: not a CIDR", where, s))
		}
		p = p.Masked()
		if p.Addr().Is4() {
			if have4 {
				return nil, nadConfigError(fmt.Sprintf("%s: \"subnets\" %q: more than one IPv4 subnet", where, s))
			}
			have4 = true
		} else {
			if have6 {
				return nil, nadConfigError(fmt.Sprintf("%s: \"subnets\" %q: more than one IPv6 subnet", where, s))
			}
			have6 = true
		}
		mc.subnets = append(mc.subnets, p)
	}
	if len(mc.subnets) == 0 {
		return nil, nadConfigError(fmt.Sprintf("%s: %q is required for type %q", where, "subnets", cniType))
	}
	excl, _, err := stringField(obj, "excludeSubnets", where)
	if err != nil {
		return nil, err
	}
	for _, s := range strings.Split(excl, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		r, err := parseExclude(s)
		if err != nil {
			return nil, nadConfigError(fmt.Sprintf("%s: \"excludeSubnets\" %q: not a CIDR or IP address", where, s))
		}
		mc.exclude = append(mc.exclude, r)
	}
	ls, present, err := stringField(obj, "logical_switch", where)
	if err != nil {
		return nil, err
	}
	if present && ls == "" {
		return nil, nadConfigError(fmt.Sprintf("%s: \"logical_switch\" is empty", where))
	}
	mc.logicalSwitch = ls
	return mc, nil
}

// parseExclude reads a CIDR, a single address or a range "a..b".
func parseExclude(s string) (IPRange, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return IPRange{}, err
		}
		return prefixRange(p), nil
	}
	return parseIPRange(s)
}

// buildNetworks sets up the default network from cfg and one network per
// managed NAD, in ns/name order so that switch-name clashes have a stable
// winner. The default network is nil when cfg is unusable.
func (b *builder) buildNetworks(cfg Config, nads []*nadv1.NetworkAttachmentDefinition) {
	b.def = b.defaultNetwork(cfg)
	if b.def != nil {
		b.switchOwner[b.def.sw] = "the default network"
	}

	sorted := make([]*nadv1.NetworkAttachmentDefinition, 0, len(nads))
	for _, n := range nads {
		if n != nil {
			sorted = append(sorted, n)
		}
	}
	slices.SortFunc(sorted, func(a, b *nadv1.NetworkAttachmentDefinition) int {
		return cmpStrings(a.Namespace, b.Namespace, a.Name, b.Name, a.Spec.Config, b.Spec.Config)
	})
	b.nads = make(map[nadRef]nadEntry, len(sorted))
	for _, nad := range sorted {
		ref := nadRef{nad.Namespace, nad.Name}
		if _, dup := b.nads[ref]; dup {
			continue
		}
		mc, err := parseNADConfig(nad.Spec.Config)
		switch {
		case err != nil:
			b.problem(kindNAD, nad.Namespace, nad.Name, "InvalidNetworkAttachmentDefinition", err.Error())
			b.nads[ref] = nadEntry{state: nadInvalid}
			continue
		case mc == nil:
			b.nads[ref] = nadEntry{state: nadUnmanaged}
			continue
		}
		key := ref.String()
		sw := mc.logicalSwitch
		if sw == "" {
			sw = nad.Name + "." + nad.Namespace
		}
		if other, taken := b.switchOwner[sw]; taken {
			b.problem(kindNAD, nad.Namespace, nad.Name, "SwitchConflict",
				fmt.Sprintf("logical switch %q is already used by %s", sw, other))
			b.nads[ref] = nadEntry{state: nadInvalid}
			continue
		}
		b.switchOwner[sw] = "NetworkAttachmentDefinition " + key
		n := newNetwork(key, nad.Name+"."+nad.Namespace+providerSuffix, sw, ownerNADPrefix+key, mc.subnets, mc.exclude)
		n.swID = b.switchID(sw)
		b.nads[ref] = nadEntry{state: nadManaged, net: n}
		b.networks = append(b.networks, n)
	}
}

const kindConfig = "Config"

// defaultNetwork validates cfg. Build takes a Config by value, so one not
// made by NewConfig may be unusable; that is a Problem, and the default
// network is then unknown (its ports are kept as they are).
func (b *builder) defaultNetwork(cfg Config) *network {
	bad := func(msg string) {
		b.problem(kindConfig, "", "defaultNetwork", "InvalidConfig", msg)
	}
	if cfg.DefaultSwitch == "" {
		bad("logical switch name is empty")
		return nil
	}
	var subnets []netip.Prefix
	var have4, have6 bool
	for _, p := range cfg.DefaultSubnets {
		if !p.IsValid() {
			bad("invalid subnet")
			return nil
		}
		p = p.Masked()
		if p.Addr().Is4() && have4 || p.Addr().Is6() && have6 {
			bad(fmt.Sprintf("subnet %s: more than one subnet of its family", p))
			return nil
		}
		have4 = have4 || p.Addr().Is4()
		have6 = have6 || p.Addr().Is6()
		subnets = append(subnets, p)
	}
	if len(subnets) == 0 {
		bad("no subnets")
		return nil
	}
	n := newNetwork(state.DefaultNetwork, providerDefault, cfg.DefaultSwitch, ownerDefaultSwitch, subnets, cfg.DefaultExclude)
	n.swID = b.switchID(n.sw)
	b.networks = append(b.networks, n)
	return n
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}
