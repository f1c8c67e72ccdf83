package diff

import (
	"errors"
	"fmt"
)

// ErrMassDelete is wrapped by the error CheckDeletes returns.
var ErrMassDelete = errors.New("refusing mass delete")

// MassDeleteFloor is the number of port deletes a plan may always hold,
// whatever fraction of our ports they are.
const MassDeleteFloor = 20

// PortDeletes returns how many ports p deletes, moves included.
func (p Plan) PortDeletes() int {
	n := 0
	for i := range p.Changes {
		if c := &p.Changes[i]; c.Kind == KindPort && c.Action == Delete {
			n++
		}
	}
	return n
}

// CheckDeletes refuses a plan that deletes more than maxFraction of the
// owned ports observed (have.OwnedPorts()) and more than MassDeleteFloor of
// them. A port move is a delete too: its row goes away and the port is
// unbound until the new row is. Callers skip the check when the user passed
// --allow-mass-delete. The error wraps ErrMassDelete and names the count.
func (p Plan) CheckDeletes(owned int, maxFraction float64) error {
	n := p.PortDeletes()
	if n <= MassDeleteFloor || float64(n) <= maxFraction*float64(owned) {
		return nil
	}
	pct := 100.0
	if owned > 0 {
		pct = 100 * float64(n) / float64(owned)
	}
	return fmt.Errorf("%w: would delete %d of %d ports (%.0f%%), more than --max-delete-fraction %g; pass --allow-mass-delete to proceed",
		ErrMassDelete, n, owned, pct, maxFraction)
}
