package diff

import (
	"encoding/json"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ovn-sync/ovn-sync/internal/statetext"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestData runs the scripts under testdata/compute. Commands:
//
//	want | have                  a state in statetext's format, replacing that state
//	compute [withhold-deletes]   prints Plan.String()
//	json                         prints the last plan as indented JSON
func TestData(t *testing.T) {
	datadriven.Walk(t, "testdata/compute", func(t *testing.T, path string) {
		var want, have state.State
		var plan Plan
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "want", "have":
				s, err := statetext.Parse(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if d.Cmd == "want" {
					want = s
				} else {
					have = s
				}
				return ""
			case "compute":
				plan = Compute(want, have, Policy{WithholdDeletes: d.HasArg("withhold-deletes")})
				checkPlan(t, want, have, plan)
				return plan.String()
			case "json":
				b, err := json.MarshalIndent(plan, "", "  ")
				if err != nil {
					d.Fatalf(t, "json.Marshal: %v", err)
				}
				return string(b)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// checkPlan asserts what every script's plan must satisfy: idempotence
// (nothing left to do after applying it, but withheld deletes) and that
// foreign rows are untouched.
func checkPlan(t *testing.T, want, have state.State, p Plan) {
	t.Helper()
	if msg := checkApplied(want, have, p); msg != "" {
		t.Errorf("plan.ApplyTo(have): %s\nplan:\n%s", msg, p)
	}
}
