package reconcile

import (
	"runtime"
	"testing"
	"weak"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// A pass that succeeded leaves the loop its desired state, not its
// outcome: an outcome holds its result's facts (after a full pass, every
// port's spec and owner), which would otherwise stay until the next pass
// that succeeds, a --resync away when nothing changes.
func TestSucceededKeepsOnlyWant(t *testing.T) {
	l := &Loop{m: NewMetrics()}
	out := &Outcome{Result: desired.Result{Want: state.New(0)}}
	kept := weak.Make(out)
	l.succeeded(trigStartup, out, diff.Plan{}, false)
	out = nil
	runtime.GC()
	if kept.Value() != nil {
		t.Error("the loop keeps the outcome of the last pass that succeeded")
	}
	if l.lastWant == nil {
		t.Error("the loop keeps no desired state of the last pass that succeeded")
	}
}
