package diff

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ovn-sync/ovn-sync/state"
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
// ports of ours in have, or of one network's ports of ours in have
// (external_ids:ovn-sync/network), and more than MassDeleteFloor of them.
// A port move is a delete too: its row goes away and the port is unbound
// until the new row is. Callers skip the check when the user passed
// --allow-mass-delete. The error wraps ErrMassDelete and names the count
// (and the network).
func (p Plan) CheckDeletes(have state.State, maxFraction float64) error {
	if err := checkFraction(p.PortDeletes(), have.OwnedPorts(), maxFraction, ""); err != nil {
		return err
	}
	deletes := map[string]int{}
	for i := range p.Changes {
		if c := &p.Changes[i]; c.Kind == KindPort && c.Action == Delete && c.Before != nil {
			deletes[c.Before.Network]++
		}
	}
	var over []string
	for n, d := range deletes {
		if d > MassDeleteFloor {
			over = append(over, n)
		}
	}
	if len(over) == 0 {
		return nil
	}
	owned := map[string]int{}
	for _, hp := range have.Ports.All() {
		if hp.Owned() {
			owned[hp.Network]++
		}
	}
	slices.Sort(over)
	for _, n := range over {
		if err := checkFraction(deletes[n], owned[n], maxFraction, n); err != nil {
			return err
		}
	}
	return nil
}

func checkFraction(n, owned int, maxFraction float64, network string) error {
	if n <= MassDeleteFloor || float64(n) <= maxFraction*float64(owned) {
		return nil
	}
	pct := 100.0
	if owned > 0 {
		pct = 100 * float64(n) / float64(owned)
	}
	of := ""
	if network != "" {
		of = fmt.Sprintf(" of network %q", network)
	}
	return fmt.Errorf("%w: would delete %d of %d ports%s (%.0f%%), more than --max-delete-fraction %g; pass --allow-mass-delete to proceed",
		ErrMassDelete, n, owned, of, pct, maxFraction)
}
