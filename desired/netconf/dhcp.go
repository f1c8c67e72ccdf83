package netconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// DHCP is a network's native DHCP: off unless Enabled. V4 and V6 are
// options that replace or add to the defaults of each family; a key with
// an empty value removes the default.
type DHCP struct {
	Enabled bool
	V4, V6  map[string]string
}

// The option keys OVN requires of each family (ovn-nb(5), DHCP_Options).
var requiredDHCP = [2][]string{{"server_id", "server_mac", "lease_time"}, {"server_id"}}

// ParseDHCPOptions reads kube-ovn's dhcpV4Options/dhcpV6Options syntax:
// "key=value" pairs separated by commas, a value in braces ("{a,b}")
// keeping its commas. Errors name the pair.
func ParseDHCPOptions(s string) (map[string]string, error) {
	var out map[string]string
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '{':
				depth++
				continue
			case '}':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		pair := strings.TrimSpace(s[start:i])
		start = i + 1
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || strings.ContainsAny(k, " {}") {
			return nil, fmt.Errorf("%q: want key=value", pair)
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%q: %s given twice", pair, k)
		}
		out[k] = v
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: unbalanced braces", s)
	}
	return out, nil
}

// ParseDHCP reads a network's DHCP options of each family, v4 and v6 (see
// ParseDHCPOptions); where4 and where6 name them in errors. An option OVN
// requires cannot be removed. The DHCP returned is not Enabled: whether
// the network asks for DHCP is the caller's to say.
func ParseDHCP(v4, v6, where4, where6 string) (DHCP, error) {
	var d DHCP
	var err error
	if d.V4, err = ParseDHCPOptions(v4); err != nil {
		return DHCP{}, fmt.Errorf("%s %w", where4, err)
	}
	if d.V6, err = ParseDHCPOptions(v6); err != nil {
		return DHCP{}, fmt.Errorf("%s %w", where6, err)
	}
	for f, opts := range [2]map[string]string{d.V4, d.V6} {
		for _, k := range requiredDHCP[f] {
			if v, ok := opts[k]; ok && v == "" {
				where := where4
				if f == IPv6 {
					where = where6
				}
				return DHCP{}, fmt.Errorf("%s: %s cannot be removed: OVN requires it", where, k)
			}
		}
	}
	return d, nil
}

// nadDHCP reads a NAD config's "dhcp" (a boolean), "dhcpV4Options" and
// "dhcpV6Options" (strings in kube-ovn's syntax).
func nadDHCP(obj map[string]json.RawMessage, where string) (DHCP, error) {
	var enabled bool
	if raw, ok := obj["dhcp"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &enabled); err != nil {
			return DHCP{}, configError(fmt.Sprintf("%s: \"dhcp\" must be true or false", where))
		}
	}
	v4, _, err := stringField(obj, "dhcpV4Options", where)
	if err != nil {
		return DHCP{}, err
	}
	v6, _, err := stringField(obj, "dhcpV6Options", where)
	if err != nil {
		return DHCP{}, err
	}
	d, err := ParseDHCP(v4, v6, where+": \"dhcpV4Options\"", where+": \"dhcpV6Options\"")
	if err != nil {
		return DHCP{}, configError(err.Error())
	}
	d.Enabled = enabled
	return d, nil
}
