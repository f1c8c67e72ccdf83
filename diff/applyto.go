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
				s.Ports[c.Name] = c.After
			case Delete:
				delete(s.Ports, c.Name)
			case Update:
				u := *s.Ports[c.Name]
				for f := range c.Fields.All() {
					setPortField(&u, c.After, f)
				}
				s.Ports[c.Name] = &u
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

func setPortField(p, from *state.Port, f Fields) {
	switch f {
	case FieldAddresses:
		p.Addresses = from.Addresses
	case FieldPortSecurity:
		p.PortSecurity = from.PortSecurity
	case FieldRequestedChassis:
		p.RequestedChassis = from.RequestedChassis
	case FieldActivationStrategy:
		p.ActivationStrategy = from.ActivationStrategy
	case FieldOwner:
		p.Owner = from.Owner
	case FieldNetwork:
		p.Network = from.Network
	case FieldSwitch:
		p.Switch = from.Switch
	}
}

func setSwitchField(s, from *state.Switch, f Fields) {
	switch f {
	case FieldOwner:
		s.Owner = from.Owner
	case FieldNetwork:
		s.Network = from.Network
	case FieldSubnet:
		s.Subnet = from.Subnet
	case FieldIPv6Prefix:
		s.IPv6Prefix = from.IPv6Prefix
	}
}
