package diff

import (
	"maps"
	"slices"

	"github.com/ovn-sync/ovn-sync/state"
)

// The reasons of DHCP_Options changes, for display only.
const (
	reasonNewDHCP = "DHCP of a desired network, not in the NB"
)

// dhcp plans the DHCP_Options rows: a desired row missing from have is
// created, one that differs is updated (the columns and option keys that
// differ), and a row of ours want lacks is deleted, after the ports that
// referred to it have been updated or deleted. have holds only rows of
// ours, so no other row is ever touched.
func (c *computer) dhcp() {
	for name, w := range c.want.DHCP {
		h, ok := c.have.DHCP[name]
		switch {
		case !w.Owned():
		case !ok:
			c.dhcpUpserts = append(c.dhcpUpserts, Change{
				Action: Create, Kind: KindDHCP, Name: name, Owner: w.Owner, Reason: reasonNewDHCP, DHCPAfter: w,
			})
		case !w.Equal(h):
			c.dhcpUpserts = append(c.dhcpUpserts, Change{
				Action: Update, Kind: KindDHCP, Name: name, Owner: w.Owner, Reason: reasonDrift, DHCPBefore: h, DHCPAfter: w,
			})
		}
	}
	for name, h := range c.have.DHCP {
		if _, ok := c.want.DHCP[name]; ok || !h.Owned() {
			continue
		}
		c.dhcpDeletes = append(c.dhcpDeletes, Change{
			Action: Delete, Kind: KindDHCP, Name: name, Owner: h.Owner, Reason: reasonGone, DHCPBefore: h,
		})
	}
}

// dhcpUUIDs returns Plan.DHCPUUIDs: the observed rows of ours by name; nil
// when there are none.
func (c *computer) dhcpUUIDs() map[string]string {
	var m map[string]string
	for name, h := range c.have.DHCP {
		if h.Owned() && h.UUID != "" {
			if m == nil {
				m = make(map[string]string, len(c.have.DHCP))
			}
			m[name] = h.UUID
		}
	}
	return m
}

// DHCPDiff is what an update of a DHCP_Options row writes: the cidr when
// it differs, external_ids:ovn-sync/network when it differs, the option
// keys to set (new or changed) and those to remove, each sorted.
type DHCPDiff struct {
	CIDR, Network bool
	Set, Remove   []string
}

// DiffDHCP returns what turns row before into after.
func DiffDHCP(before, after *state.DHCPOptions) DHCPDiff {
	d := DHCPDiff{CIDR: before.CIDR != after.CIDR, Network: before.Network != after.Network}
	for _, k := range slices.Sorted(maps.Keys(after.Options)) {
		if v, ok := before.Options[k]; !ok || v != after.Options[k] {
			d.Set = append(d.Set, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before.Options)) {
		if _, ok := after.Options[k]; !ok {
			d.Remove = append(d.Remove, k)
		}
	}
	return d
}
