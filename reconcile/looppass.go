package reconcile

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// fullReason says, from a small fixed set, why a pass of trigger t built
// in full: what Update gave up on (desired.Reasons), else what the pass
// was for (startup, reconnect, drift, resync), that the source could not
// say what changed (all-changed), or that a verification found the
// incremental result wrong (mismatch).
func fullReason(t trigger, rd *reading, out *Outcome) string {
	switch {
	case out.Checked && out.Mismatch != "" && !out.Behind && t&trigResync == 0:
		return "mismatch"
	case out.Full.Gave():
		return out.Full.Reason
	case t&trigStartup != 0:
		return "startup"
	case t&trigReconnect != 0:
		return "reconnect"
	case t&trigDrift != 0:
		return "drift"
	case rd.all:
		return "all-changed"
	case t&trigResync != 0:
		return "resync"
	}
	return "other"
}

func (l *Loop) logUnreadable(us []sources.Unreadable) {
	for _, u := range us {
		l.log.Info("object unreadable: deletes withheld", "object", u.String())
	}
}

// named holds the objects problems name, looked up in objs: what Report
// needs of a pass that listed nothing.
func named(problems []desired.Problem, objs desired.Objects) desired.Inputs {
	// The kinds every Build reads whole are listed already; the others are
	// looked up.
	in := objs.Networks()
	seen := map[desired.Problem]bool{}
	for _, p := range problems {
		k := desired.Problem{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		switch p.Kind {
		case state.KindPod:
			if o := objs.Pod(p.Namespace, p.Name); o != nil {
				in.Pods = append(in.Pods, o)
			}
		case state.KindVirtualMachine:
			if o := objs.VirtualMachine(p.Namespace, p.Name); o != nil {
				in.VirtualMachines = append(in.VirtualMachines, o)
			}
		case state.KindVirtualMachineInstance:
			if o := objs.VirtualMachineInstance(p.Namespace, p.Name); o != nil {
				in.VirtualMachineInstances = append(in.VirtualMachineInstances, o)
			}
		case state.KindVirtualMachineInstanceMigration:
			if o := objs.Migration(p.Namespace, p.Name); o != nil {
				in.Migrations = append(in.Migrations, o)
			}
		case state.KindIP:
			if o := objs.IP(p.Name); o != nil {
				in.IPs = append(in.IPs, o)
			}
		}
	}
	return in
}

// pass is one reconciliation: read the informers (every object, or the
// changed ones looked up: see read) and the NB cache, build, diff, apply
// (recomputing on ErrStale), then report problems and, once it succeeded,
// publish addresses. Deletes are withheld unless every source has synced
// and every object could be read.
func (l *Loop) pass(ctx context.Context, t trigger) error {
	start := time.Now()
	rd, out, err := l.run(ctx, t)
	if rd.end != nil {
		defer rd.end() // after Publish: it too allocates
	}
	build := l.countBuild(t, rd, &out)
	l.notePending(&out, err)
	var applied diff.Plan
	if !l.opts.DryRun {
		applied = out.Plan
		for _, p := range out.Earlier {
			applied.Changes = append(slices.Clone(p.Changes), applied.Changes...)
		}
	}
	l.m.observeApply(applied, out.Applied)
	l.m.planSize.Observe(float64(len(out.Plan.Changes)))
	l.m.withheld.Set(float64(out.Plan.Withheld))
	l.m.problems.Reset()
	for _, p := range out.Result.Problems {
		l.m.problems.WithLabelValues(p.Reason).Inc()
	}
	if l.opts.Report != nil {
		l.opts.Report(out, *rd.snap)
	}
	for _, n := range out.Result.Notices {
		l.log.V(1).Info("pending change", "object", n.Kind+"/"+n.Namespace+"/"+n.Name, "reason", n.Reason, "message", n.Message)
	}
	inUse := false
	if err != nil && errors.Is(err, apply.ErrSwitchInUse) {
		// Everything else was done; the switch waits for its foreign ports.
		l.log.Info("switch not deleted", "reason", err.Error())
		err, inUse = nil, true
	}
	dur := time.Since(start)
	l.m.passDuration.WithLabelValues(t.kind()).Observe(dur.Seconds())
	if out.Attempts > 0 {
		l.m.observePhases(out.Timings)
	}
	if err != nil {
		return l.failed(ctx, t, err, dur)
	}
	l.succeeded(t, &out, applied, inUse)
	counts := out.Plan.Counts()
	kv := []any{"trigger", t.String(), "build", build, "add", counts.Add, "change", counts.Change, "destroy", counts.Destroy,
		"withheld", out.Plan.Withheld, "transactions", len(out.Applied.Txns), "problems", len(out.Result.Problems), "duration", dur.String()}
	switch {
	case l.opts.DryRun:
		l.log.V(1).Info("pass (dry run: nothing written)", kv...)
	case out.Plan.Empty() && len(out.Earlier) == 0:
		l.log.V(1).Info("pass: no changes", kv...)
	default:
		l.log.Info("pass", kv...)
	}
	if l.opts.Publish != nil && !l.opts.DryRun {
		l.opts.Publish(ctx, out, *rd.snap)
	}
	return nil
}

// run reads what the pass of trigger t builds from and runs it: build,
// diff, apply. A pass that looked objects up and listed none holds, for
// Report, the objects its problems name.
func (l *Loop) run(ctx context.Context, t trigger) (*reading, Outcome, error) {
	opts := l.opts.Pass
	rd := l.read(t)
	synced, _ := l.Synced()
	synced = synced && len(rd.unreadable) == 0
	l.logUnreadable(rd.unreadable)
	opts.Policy = diff.Policy{WithholdDeletes: !synced}
	opts.Publications = l.opts.Publish != nil && !l.opts.DryRun
	opts.BeforeApply = func(w state.State) { l.setWant(&w) }
	var out Outcome
	var err error
	if l.opts.DryRun {
		out = Compute(l.nb, rd.builder, opts)
	} else {
		out, err = Pass(ctx, l.nb, rd.builder, opts)
		if err == nil {
			l.settle(rd.builder, &out)
		}
	}
	l.last.Store(served(out))
	if !rd.listed && l.opts.Report != nil {
		rd.snap.Inputs = named(out.Result.Problems, rd.objs)
	}
	switch {
	case !out.Checked || out.Mismatch == "":
	case out.Behind:
		l.log.V(1).Info("incremental desired state behind a deletion it was not told of yet: the full one is used", "difference", out.Mismatch)
	default:
		l.m.mismatches.Inc()
		l.log.Error(errors.New(out.Mismatch), "incremental desired state differs from a full Build: the full one is used", "trigger", t.String())
	}
	return rd, out, err
}

// settle settles out, whose plan was applied, on the NB's rows
// (Outcome.settle): the NB's next snapshot shows the pass's writes
// (observed.NB.Transact). What the drift watch compares with is then the
// result as settled. A plan that wrote fewer ports than a pass diffs by
// name (maxScope), as an event's does, is not settled: copying the ports'
// and the index's shards would cost more than the few ports it frees,
// which their owner's next rebuild or the next full pass lets go anyway.
func (l *Loop) settle(b Builder, out *Outcome) {
	names := out.written()
	if len(names) < maxScope(out.Result.Want) {
		return
	}
	have, _ := l.nb.StateVersion()
	out.settle(b, have, names)
	want := out.Result.Want
	l.wantMu.Lock()
	l.want = &want
	l.wantMu.Unlock()
}

// countBuild counts how out was built (ovn_sync_builds_total) and returns
// it as the pass log says it: "incremental", or "full: <reason>".
func (l *Loop) countBuild(t trigger, rd *reading, out *Outcome) string {
	if out.Incremental {
		l.m.builds.WithLabelValues("incremental", "change").Inc()
		return "incremental"
	}
	reason := fullReason(t, rd, out)
	switch {
	case l.opts.DryRun:
		reason = "dry-run"
	case l.opts.FullPasses:
		reason = "full-passes"
	}
	if out.Full.Gave() {
		l.log.V(1).Info("full build", "reason", reason, "why", out.Full.Detail)
	}
	l.m.builds.WithLabelValues("full", reason).Inc()
	return "full: " + reason
}

// failed records a pass of trigger t that failed with err after dur: what
// the NB holds is not known, so the next pass builds in full.
func (l *Loop) failed(ctx context.Context, t trigger, err error, dur time.Duration) error {
	l.inc.Reset()
	result := "error"
	switch {
	case errors.Is(err, diff.ErrMassDelete):
		result = "refused"
	case errors.Is(err, apply.ErrStale):
		result = "stale"
	}
	l.m.passes.WithLabelValues(t.kind(), result).Inc()
	l.mu.Lock()
	l.lastErr, l.passed = err, false
	l.mu.Unlock()
	if ctx.Err() == nil {
		l.log.Error(err, "pass failed", "trigger", t.String(), "duration", dur.String())
	}
	return err
}

// succeeded records a pass of trigger t that succeeded: out, having
// applied applied (every attempt's changes); inUse says a switch of ours
// was left for the foreign ports still on it.
func (l *Loop) succeeded(t trigger, out *Outcome, applied diff.Plan, inUse bool) {
	res := out.Applied
	l.m.driftRepairs.Add(float64(min(repairs(l.lastWant, l.left, out.Result.Want, applied), res.Created+res.Updated+res.Deleted)))
	// A copy: a pointer into out would keep the whole outcome, with its
	// result's facts (after a full pass, every port's spec and owner).
	want := out.Result.Want
	l.lastWant = &want
	switch {
	case out.Plan.Withheld > 0 || inUse:
		l.left = true
	case !out.Scoped:
		l.left = false
	}
	if out.Plan.Withheld > 0 {
		// The NB keeps rows of ours the result deletes: the engine's
		// result is not what the NB shows (see desired.Engine), so the
		// next pass builds in full.
		l.inc.Reset()
	}
	l.m.passes.WithLabelValues(t.kind(), "success").Inc()
	l.m.ownedPorts.Set(float64(out.Result.Want.OwnedPorts()))
	l.m.setSwitchPorts(out.Result.SwitchPorts)
	l.m.lastSuccess.SetToCurrentTime()
	l.mu.Lock()
	l.passed, l.lastErr = true, nil
	l.mu.Unlock()
}

// repairs counts the changes of plan, carried out by a pass that
// succeeded and wanted want, that put back what someone else changed in
// the NB: each writes a row as the last pass that succeeded wanted it too
// (last), so no Kubernetes change asked for it and the NB held it
// otherwise, or deletes a row of ours that pass neither wanted nor, left
// unset, may have left. It goes by the rows, not by what triggered the
// pass: drift seen while a pass runs is repaired by the next along with
// the Kubernetes changes that came meanwhile, or by a pass for a
// Kubernetes change that read the NB after it. With no last pass (the
// first since the lease was won) nothing is known to have drifted.
func repairs(last *state.State, left bool, want state.State, plan diff.Plan) int {
	if last == nil {
		return 0
	}
	n := 0
	for i := range plan.Changes {
		c := &plan.Changes[i]
		var before, now bool // in last, in want
		var same bool        // as last and want have it
		switch c.Kind {
		case diff.KindPort:
			a, w := last.Ports.Get(c.Name), want.Ports.Get(c.Name)
			before, now = a != nil, w != nil
			same = before && now && a.Equal(w)
		case diff.KindSwitch:
			a, w := last.Switches[c.Name], want.Switches[c.Name]
			before, now = a != nil, w != nil
			same = before && now && a.Equal(w)
		case diff.KindDHCP:
			a, w := last.DHCP[c.Name], want.DHCP[c.Name]
			before, now = a != nil, w != nil
			same = before && now && a.Equal(w)
		}
		switch {
		case c.Action == diff.Delete && !before && !now && !left:
			n++
		case c.Action != diff.Delete && same:
			n++
		}
	}
	return n
}
