package diff

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/ovn-sync/ovn-sync/state"
)

// Policy tunes what Compute may put in a plan.
type Policy struct {
	// WithholdDeletes leaves every delete out of the plan (ports, switches,
	// and port moves, which are a delete and a create) and counts them in
	// Plan.Withheld. Set it until every source has synced and the NB cache is
	// loaded: an owner not yet seen is unknown, not absent.
	WithholdDeletes bool
}

// The reasons Compute gives. They are for display only.
const (
	reasonNewSwitch   = "needed by a desired port or network"
	reasonNewPort     = "desired, not in the NB"
	reasonDrift       = "differs from desired"
	reasonGone        = "no longer desired"
	reasonCollision   = "the name is taken by a port ovn-sync does not own; left alone"
	reasonNoOwner     = "desired port has no owner; skipped"
	reasonNoSwitch    = "its switch is neither in the NB nor ours to create; skipped"
	reasonSwitchUsed  = "not desired, but ports of ours stay on it; kept"
	reasonForeignMiss = "desired switch is not in the NB and not ours to create; its ports are skipped"
	reasonStamp       = "recording its switch (none recorded); updated in place"
)

// reasonAdopt is the reason of the update that takes over a row vendor made.
func reasonAdopt(vendor string) string { return "adopt from " + vendor }

// Compute returns the plan that makes have agree with want on every row and
// key ovn-sync owns, and touches nothing else.
//
// want holds the desired switches and ports, all of them ours (Owner set),
// except switches ovn-sync uses but did not create, which appear with an
// empty Owner. have is the observed NB with UUIDs. Both are only read.
//
// Ports: a desired port missing from have is created; one in have but not
// ours is a name collision and is left alone (a Notice), unless the desired
// port adopts it (Adopt names the row's vendor): that row is updated in
// place, our fields written and every other column and key kept; one that
// is ours and differs is updated column by column, or moved (deleted and
// created again) when its switch differs, or updated in place when it has
// no switch recorded and its desired switch is in the NB (a port adopted
// must be too); an owned port in have that want lacks is deleted. Switches: a desired switch of ours that is missing is created;
// one that exists and is ours gets our keys updated; an owned switch want
// lacks is deleted, last, unless ports of ours remain on it. Foreign
// switches are never changed.
func Compute(want, have state.State, p Policy) Plan {
	var c computer
	c.policy = p
	c.want, c.have = want, have
	c.switches()
	c.dhcp()
	c.ports()
	c.keepUsedSwitches()
	if p.WithholdDeletes {
		c.withheld += len(c.switchDeletes) + len(c.dhcpDeletes)
		c.switchDeletes, c.dhcpDeletes = nil, nil
	}
	return c.plan()
}

type computer struct {
	policy     Policy
	want, have state.State

	switchCreates, switchUpdates, switchDeletes []Change
	dhcpUpserts, dhcpDeletes                    []Change
	portDeletes, portUpdates, portCreates       []Change
	notices                                     []Notice
	withheld                                    int
}

func (c *computer) switches() {
	for name, w := range c.want.Switches {
		h, ok := c.have.Switches[name]
		switch {
		case !ok && w.Owned():
			c.switchCreates = append(c.switchCreates, Change{
				Action: Create, Kind: KindSwitch, Name: name, Owner: w.Owner,
				Reason: reasonNewSwitch, SwitchAfter: w,
			})
		case !ok:
			c.notices = append(c.notices, Notice{Kind: KindSwitch, Name: name, Reason: reasonForeignMiss})
		case h.Owned() && w.Owned():
			if f := switchFields(w, h); f != 0 {
				c.switchUpdates = append(c.switchUpdates, Change{
					Action: Update, Kind: KindSwitch, Name: name, Owner: w.Owner,
					Reason: reasonDrift, Fields: f, SwitchBefore: h, SwitchAfter: w,
				})
			}
		}
		// A switch that exists but is not ours is used as it is: ports are
		// added to it, and it is never taken over.
	}
	for name, h := range c.have.Switches {
		if !h.Owned() {
			continue
		}
		if _, ok := c.want.Switches[name]; ok {
			continue
		}
		c.switchDeletes = append(c.switchDeletes, Change{
			Action: Delete, Kind: KindSwitch, Name: name, Owner: h.Owner,
			Reason: reasonGone, SwitchBefore: h,
		})
	}
}

// switchFields returns the owned switch fields on which w and h differ.
func switchFields(w, h *state.Switch) Fields {
	var f Fields
	for i := range state.Fields {
		if d := &state.Fields[i]; d.SwitchKey != nil && *d.SwitchKey(w) != *d.SwitchKey(h) {
			f |= 1 << i
		}
	}
	return f
}

// portFields returns the fields on which w and h, two ports on the same
// switch, differ; the placement field, which a move changes, is not
// compared. It allocates nothing: it is the per-port cost of a pass.
func portFields(w, h *state.Port) Fields {
	var f Fields
	for i := range state.Fields {
		switch d := &state.Fields[i]; {
		case d.Placement:
		case d.PortKey != nil:
			if d.PortKey(w) != d.PortKey(h) {
				f |= 1 << i
			}
		case d.PortSet != nil:
			if !slices.Equal(*d.PortSet(w), *d.PortSet(h)) {
				f |= 1 << i
			}
		}
	}
	return f
}

// ports walks the two port indexes in step. Entries whose name hash and
// fingerprint agree are the same port, unchanged, and cost nothing more: no
// map lookup, no dereference, no allocation. Everything else is looked up by
// name and decided by fromHave and fromWant.
func (c *computer) ports() {
	want, have := c.want.PortIndex(), c.have.PortIndex()
	for sh := range state.NumShards {
		if same, plain := want.SameShard(have, sh); same && plain {
			continue // the same ports, every one ours: nothing to do
		}
		c.walk(want.Shard(sh), have.Shard(sh))
	}
}

// walk walks one shard of each index in step (see ports).
func (c *computer) walk(wi, hi state.Entries) {
	i, j := 0, 0
	for i < len(wi) || j < len(hi) {
		switch {
		case j == len(hi) || (i < len(wi) && wi[i].NameHash < hi[j].NameHash):
			c.fromWant(wi[i].Port)
			i++
		case i == len(wi) || hi[j].NameHash < wi[i].NameHash:
			if hi[j].Owned {
				c.fromHave(hi[j].Port)
			}
			j++
		default:
			if w, h := &wi[i], &hi[j]; w.Sum != h.Sum || !w.Owned {
				if h.Owned {
					c.fromHave(h.Port)
				}
				c.fromWant(w.Port)
			}
			i++
			j++
		}
	}
}

// fromHave decides an owned observed port h that the index walk could not
// match: it is updated, moved or deleted.
func (c *computer) fromHave(h *state.Port) {
	w, ok := c.want.Ports.Lookup(h.Name)
	switch {
	case !ok && c.policy.WithholdDeletes:
		c.withheld++
	case !ok:
		c.portDeletes = append(c.portDeletes, c.deletePort(h, reasonGone))
	case w == h:
		// desired may hand back the observed value of an unchanged port.
	case !w.Owned():
		// fromWant reports it.
	case h.Switch == "" && c.have.Switches[w.Switch] != nil:
		// Stamped by hand or by an older version: the row stays, its keys
		// that are not ours with it, and the switch is recorded. A switch
		// not in the NB cannot hold it: that is a move (below).
		c.portUpdates = append(c.portUpdates, Change{
			Action: Update, Kind: KindPort, Name: h.Name, Owner: w.Owner,
			Reason: reasonStamp, Fields: portFields(w, h) | FieldSwitch, Before: h, After: w,
			SwitchUUID: c.have.Switches[w.Switch].UUID,
		})
	case w.Switch != h.Switch:
		c.move(w, h)
	default:
		if f := portFields(w, h); f != 0 {
			c.portUpdates = append(c.portUpdates, Change{
				Action: Update, Kind: KindPort, Name: h.Name, Owner: w.Owner,
				Reason: reasonDrift, Fields: f, Before: h, After: w,
			})
		}
	}
}

// fromWant decides a desired port w that the index walk could not match:
// it is created; or it adopts the port of its name that is not ours, when
// w.Adopt names that port's vendor; or it is reported when it has no owner
// or a foreign port holds its name. A w whose name an owned port holds is
// fromHave's.
func (c *computer) fromWant(w *state.Port) {
	if !w.Owned() {
		c.notices = append(c.notices, Notice{Kind: KindPort, Name: w.Name, Reason: reasonNoOwner})
		return
	}
	h, ok := c.have.Ports.Lookup(w.Name)
	switch {
	case !ok:
		c.create(w, reasonNewPort)
	case !h.Owned() && w.Adopt() != "" && w.Adopt() == h.Vendor() && c.have.Switches[w.Switch] != nil:
		c.portUpdates = append(c.portUpdates, Change{
			Action: Update, Kind: KindPort, Name: w.Name, Owner: w.Owner,
			Reason: reasonAdopt(w.Adopt()), Fields: portFields(w, h) | FieldSwitch, Before: h, After: w,
			SwitchUUID: c.have.Switches[w.Switch].UUID,
		})
	case !h.Owned():
		c.notices = append(c.notices, Notice{Kind: KindPort, Name: w.Name, Owner: w.Owner, Reason: reasonCollision})
	}
}

// switchUUID returns the UUID of switch name ("" when this plan creates it)
// and whether a port can go on it: it is observed, or desired and ours to
// create.
func (c *computer) switchUUID(name string) (uuid string, ok bool) {
	if h, ok := c.have.Switches[name]; ok {
		return h.UUID, true
	}
	w, ok := c.want.Switches[name]
	return "", ok && w.Owned()
}

// keepUsedSwitches drops the delete of any switch that one of our ports
// will still be on after the plan: a desired port names it (which desired
// should not produce), or an observed port the plan does not delete is on
// it (its move was skipped). apply would refuse such a delete anyway, as the
// switch is not empty. It costs a pass over want and have only when
// switches are to be deleted.
func (c *computer) keepUsedSwitches() {
	if len(c.switchDeletes) == 0 {
		return
	}
	used := make(map[string]bool, len(c.switchDeletes))
	for i := range c.switchDeletes {
		used[c.switchDeletes[i].Name] = false
	}
	for _, w := range c.want.Ports.All() {
		if _, ok := used[w.Switch]; ok && w.Owned() {
			used[w.Switch] = true
		}
	}
	deleted := make(map[string]bool, len(c.portDeletes))
	for i := range c.portDeletes {
		deleted[c.portDeletes[i].Name] = true
	}
	for name, h := range c.have.Ports.All() {
		if _, ok := used[h.Switch]; ok && h.Owned() && !deleted[name] {
			used[h.Switch] = true
		}
	}
	c.switchDeletes = slices.DeleteFunc(c.switchDeletes, func(d Change) bool {
		if used[d.Name] {
			c.notices = append(c.notices, Notice{Kind: KindSwitch, Name: d.Name, Owner: d.Owner, Reason: reasonSwitchUsed})
		}
		return used[d.Name]
	})
}

func (c *computer) create(w *state.Port, reason string) bool {
	uuid, ok := c.switchUUID(w.Switch)
	if !ok {
		c.notices = append(c.notices, Notice{Kind: KindPort, Name: w.Name, Owner: w.Owner, Reason: reasonNoSwitch})
		return false
	}
	c.portCreates = append(c.portCreates, Change{
		Action: Create, Kind: KindPort, Name: w.Name, Owner: w.Owner,
		Reason: reason, After: w, SwitchUUID: uuid,
	})
	return true
}

func (c *computer) deletePort(h *state.Port, reason string) Change {
	var uuid string
	if s, ok := c.have.Switches[h.Switch]; ok {
		uuid = s.UUID
	}
	return Change{
		Action: Delete, Kind: KindPort, Name: h.Name, Owner: h.Owner,
		Reason: reason, Before: h, SwitchUUID: uuid,
	}
}

// move deletes h and creates w on its new switch. Both halves or neither go
// into the plan: the create alone would collide with the old row's name.
func (c *computer) move(w, h *state.Port) {
	if c.policy.WithholdDeletes {
		c.withheld++
		return
	}
	reason := "moving from switch " + strconv.Quote(h.Switch) + " to " + strconv.Quote(w.Switch)
	if h.Switch == "" {
		reason = "moving to switch " + strconv.Quote(w.Switch) + ", not in the NB yet (no switch recorded)"
	}
	if c.create(w, reason) {
		c.portDeletes = append(c.portDeletes, c.deletePort(h, reason))
	}
}

func byName(a, b Change) int { return cmp.Compare(a.Name, b.Name) }

func (c *computer) plan() Plan {
	switchUpserts := append(c.switchCreates, c.switchUpdates...)
	groups := [...][]Change{switchUpserts, c.dhcpUpserts, c.portDeletes, c.portUpdates, c.portCreates, c.dhcpDeletes, c.switchDeletes}
	n := 0
	for _, g := range groups {
		slices.SortFunc(g, byName)
		n += len(g)
	}
	p := Plan{Withheld: c.withheld, DHCPUUIDs: c.dhcpUUIDs()}
	if n > 0 {
		p.Changes = make([]Change, 0, n)
		for _, g := range groups {
			p.Changes = append(p.Changes, g...)
		}
	}
	slices.SortFunc(c.notices, func(a, b Notice) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	p.Notices = c.notices
	return p
}
