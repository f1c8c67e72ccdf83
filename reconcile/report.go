package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
)

// WriteProblems prints Build's problems, one per line, then its notices
// (changes that wait, such as a running VM's new address request).
func (out Outcome) WriteProblems(w io.Writer) {
	for _, pr := range out.Result.Problems {
		fmt.Fprintln(w, pr.String())
	}
	for _, n := range out.Result.Notices {
		fmt.Fprintf(w, "notice: %s %s/%s: %s: %s\n", n.Kind, n.Namespace, n.Name, n.Reason, n.Message)
	}
}

// WritePlans prints every plan the pass computed, in order, as terraform
// prints a plan.
func (out Outcome) WritePlans(w io.Writer) {
	for _, p := range out.Earlier {
		fmt.Fprintln(w, p.String())
	}
	fmt.Fprintln(w, out.Plan.String())
	if s := out.Plan.Costs().String(); s != "" {
		fmt.Fprintln(w, s)
	}
	out.writeFullSwitches(w)
}

// WriteApplied is WritePlans after an apply: it also says what was sent.
func (out Outcome) WriteApplied(w io.Writer) {
	out.WritePlans(w)
	if out.Applied.Ops > 0 || !out.Plan.Empty() {
		fmt.Fprintf(w, "Applied %d operations in %d transactions.\n", out.Applied.Ops, len(out.Applied.Txns))
	}
}

// NearlyFull is the share of desired.MaxSwitchPorts past which the text
// of a plan names a switch.
const NearlyFull = 0.9

// writeFullSwitches names the switches that hold nearly as many ports as
// OVN binds on one switch, or as many.
func (out Outcome) writeFullSwitches(w io.Writer) {
	for _, sw := range slices.Sorted(maps.Keys(out.Result.SwitchPorts)) {
		if n := out.Result.SwitchPorts[sw]; float64(n) >= NearlyFull*desired.MaxSwitchPorts {
			fmt.Fprintf(w, "Switch %s holds %d ports of the %d OVN binds on one switch.\n", sw, n, desired.MaxSwitchPorts)
		}
	}
}

// report is the -o json document of plan and apply: lists are never null,
// and every entry that names a Kubernetes object — a change, a notice of
// the plan, a problem, a notice of Build — names it under "owner" as
// "Kind/namespace/name", with snake_case keys throughout.
type report struct {
	Plan any `json:"plan"` // diff.Plan's JSONValue
	// Costs are the plan's changes by what they cost a guest.
	Costs    diff.Costs        `json:"costs"`
	Problems []desired.Problem `json:"problems"`
	Notices  []desired.Problem `json:"notices"`
	Applied  *apply.Result     `json:"applied,omitempty"`
	// Switches counts the ports on each switch that holds ports once the
	// plan is applied (desired.Result.SwitchPorts), beside the most OVN
	// binds on one.
	Switches        map[string]int `json:"switch_ports"`
	SwitchPortLimit int            `json:"switch_port_limit"`
}

// WriteJSON writes the outcome of a plan as one JSON document: the plan,
// the problems and notices.
func (out Outcome) WriteJSON(w io.Writer) error { return out.writeJSON(w, nil) }

// WriteAppliedJSON is WriteJSON for an apply: the document also says what
// was sent.
func (out Outcome) WriteAppliedJSON(w io.Writer) error {
	res := out.Applied
	if res.Txns == nil {
		res.Txns = []apply.Txn{}
	}
	return out.writeJSON(w, &res)
}

func (out Outcome) writeJSON(w io.Writer, applied *apply.Result) error {
	r := report{Plan: out.Plan.JSONValue(), Costs: out.Plan.Costs(), Problems: out.Result.Problems, Notices: out.Result.Notices,
		Switches: out.Result.SwitchPorts, SwitchPortLimit: desired.MaxSwitchPorts, Applied: applied}
	if r.Switches == nil {
		r.Switches = map[string]int{}
	}
	if r.Problems == nil {
		r.Problems = []desired.Problem{}
	}
	if r.Notices == nil {
		r.Notices = []desired.Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
