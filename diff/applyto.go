package diff

import "github.com/ovn-sync/ovn-sync/state"

// ApplyTo returns the state that results from carrying out p on have, as
// apply would, without touching have: the model of a Plan's meaning that
// tests compare the NB against. Rows p does not change keep their pointers;
// created rows have no UUID; updated rows keep Before's UUID and every
// column the plan does not own.
func (p Plan) ApplyTo(have state.State) state.State {
	s := have.Clone()
	for i := range p.Changes {
		c := &p.Changes[i]
		switch c.Kind {
		case KindPort:
			switch c.Action {
			case Create:
				s.Ports.Set(c.Name, c.After)
			case Delete:
				s.Ports.Delete(c.Name)
			case Update:
				u := *s.Ports.Get(c.Name)
				for f := range c.Fields.All() {
					setPortField(&u, c.After, f)
				}
				s.Ports.Set(c.Name, &u)
			}
		case KindDHCP:
			switch c.Action {
			case Create, Update:
				u := *c.DHCPAfter
				if c.Action == Update {
					u.UUID = c.DHCPBefore.UUID
				}
				s.DHCP[c.Name] = &u
			case Delete:
				delete(s.DHCP, c.Name)
			}
		case KindSwitch:
			switch c.Action {
			case Create:
				s.Switches[c.Name] = c.SwitchAfter
			case Delete:
				delete(s.Switches, c.Name)
			case Update:
				u := *s.Switches[c.Name]
				for f := range c.Fields.All() {
					setSwitchField(&u, c.SwitchAfter, f)
				}
				s.Switches[c.Name] = &u
			}
		}
	}
	return s
}

// setPortField sets single field f of p to its value on from.
func setPortField(p, from *state.Port, f Fields) {
	switch d := f.Field(); {
	case d == nil:
	case d.PortKey != nil:
		d.SetPortKey(p, d.PortKey(from))
	case d.PortSet != nil:
		*d.PortSet(p) = *d.PortSet(from)
	}
}

// setSwitchField sets single field f of s to its value on from.
func setSwitchField(s, from *state.Switch, f Fields) {
	if d := f.Field(); d != nil && d.SwitchKey != nil {
		*d.SwitchKey(s) = *d.SwitchKey(from)
	}
}
