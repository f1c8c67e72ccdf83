package reconcile

import (
	"hash/fnv"
	"strings"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
)

// LastOutcome returns the outcome of the last pass: its plan, problems and
// notices; in a dry run, what ovn-sync would do. ok is false before the
// first pass.
func (l *Loop) LastOutcome() (out Outcome, ok bool) {
	if p := l.last.Load(); p != nil {
		return *p, true
	}
	return Outcome{}, false
}

// served is out as the loop keeps it for LastOutcome: what /plan serves
// (the plan, problems, notices and switch counts) and Want, which the
// engine holds anyway, without what the result's facts are made from
// (desired.Result.Ports, Claims): every port's spec and owner, which with
// --full-passes or --dry-run no engine holds, would otherwise stay alive
// until the next pass.
func served(out Outcome) *Outcome {
	out.Result = bare(out.Result)
	out.Publications, out.Claims = nil, nil
	return &out
}

// bare is r without its facts: the desired state, problems, notices,
// Again and the switch counts.
func bare(r desired.Result) desired.Result {
	return desired.Result{Want: r.Want, Problems: r.Problems, Notices: r.Notices, Again: r.Again, SwitchPorts: r.SwitchPorts}
}

// notePending sets ovn_sync_pending_changes from the plan of out, which
// failed with err or not: in a dry run every change of it is pending, after
// a pass that applied it none is. It logs the pending changes when they are
// not the last pass's.
func (l *Loop) notePending(out *Outcome, err error) {
	var plan diff.Plan
	if l.opts.DryRun || err != nil {
		plan = out.Plan
	}
	costs := plan.Costs()
	l.m.setPending(costs)
	sum := pendingSum(plan)
	if sum == l.pending {
		return
	}
	l.pending = sum
	c := plan.Counts()
	kv := []any{"add", c.Add, "change", c.Change, "destroy", c.Destroy, "bookkeeping", costs.Bookkeeping}
	var named []string
	for i, d := range costs.Named {
		if i == maxLogged {
			named = append(named, "...")
			break
		}
		named = append(named, d.Owner+" "+d.Cost.String()+": port "+d.Port+" "+d.Detail)
	}
	if len(named) > 0 {
		kv = append(kv, "differences", strings.Join(named, "; "))
	}
	l.log.Info("pending changes", kv...)
}

// maxLogged is how many named differences the log of the pending changes
// names; /plan names them all.
const maxLogged = 10

// pendingSum is a fingerprint of the changes of plan: what they change, not
// why.
func pendingSum(plan diff.Plan) uint64 {
	h := fnv.New64a()
	for i := range plan.Changes {
		c := &plan.Changes[i]
		h.Write([]byte{byte(c.Action), byte(c.Kind), byte(c.Fields), byte(c.Fields >> 8)})
		h.Write([]byte(c.Name))
		if c.After != nil {
			h.Write([]byte(strings.Join(c.After.Addresses, ",") + c.After.RequestedChassis))
		}
		h.Write([]byte{0})
	}
	return h.Sum64()
}
