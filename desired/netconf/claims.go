package netconf

import "encoding/json"

// ClaimConfig is what a NAD's CNI config says about IPAMClaims: the
// network's name (what a claim's spec.network names) and whether its
// owners keep their addresses in claims.
type ClaimConfig struct {
	Name       string
	Persistent bool
}

// ParseClaimConfig reads "name" and "allowPersistentIPs" from a NAD's
// config, as kubevirt/ipam-extensions does (top level only); a config that
// does not parse has neither.
func ParseClaimConfig(raw string) ClaimConfig {
	var c struct {
		Name               string `json:"name"`
		AllowPersistentIPs bool   `json:"allowPersistentIPs"`
	}
	if json.Unmarshal([]byte(raw), &c) != nil {
		return ClaimConfig{}
	}
	return ClaimConfig{Name: c.Name, Persistent: c.AllowPersistentIPs}
}
