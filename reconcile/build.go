package reconcile

import (
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// Builder makes a pass's desired state from what the NB holds now. A pass
// asks it for Build once, for its first computation; a computation again
// within the pass (the NB moved under a transaction, or Build said an
// address frees up once the plan is applied) asks for Full.
//
// All builds every owner from a set of objects (one-shot, --full-passes);
// Engine builds every owner through a desired.Engine and keeps the result;
// Changes rebuilds only the owners changed objects touch; SelfCheck and
// Verify wrap Changes and compare what it gives with a full Build.
type Builder interface {
	Build(have state.State, cfg desired.Config) Built
	Full(have state.State, cfg desired.Config) Built
	// Note records what the pass's plan changed or reported on, for the
	// next incremental build (desired.Engine.Note). Builders that keep
	// nothing between passes ignore it.
	Note(n desired.Note)
	// Settle settles want, the desired state of the last Build or Full,
	// on the NB's rows in have once its plan was applied: the ports named
	// become the rows that hold them as want does (desired.Settle). A
	// builder that keeps the result settles the one it keeps.
	Settle(want state.State, have state.State, names []string) state.State
}

// Built is a desired state and how a Builder made it.
type Built struct {
	Result desired.Result
	// Incremental is set when only the owners a change touched were
	// rebuilt; Full says, when that was meant and did not happen, why.
	Incremental bool
	Full        desired.Why
	// Checked is set when the result was compared with a full Build,
	// Mismatch to how they differ; Behind when only by deletions the
	// incremental state was not told of yet (desired.Behind): not a fault.
	Checked  bool
	Mismatch string
	Behind   bool
	// Withhold is set when an object could not be read: the pass
	// withholds deletes.
	Withhold bool
	// VerifyDiff asks the pass to diff every port beside a diff of some
	// (Verify), and to count a difference as a mismatch.
	VerifyDiff bool
}

// All builds every owner from in, with desired.Build: nothing is kept
// between passes.
func All(in desired.Inputs) Builder { return all{in} }

type all struct{ in desired.Inputs }

func (a all) Build(have state.State, cfg desired.Config) Built { return a.Full(have, cfg) }
func (a all) Full(have state.State, cfg desired.Config) Built {
	return Built{Result: desired.Build(a.in, cfg, have)}
}
func (all) Note(desired.Note) {}
func (all) Settle(want state.State, have state.State, names []string) state.State {
	return desired.Settle(want, have, names)
}

// Engine builds every owner through X, which keeps the result for the
// Changes of the next pass. List lists every object; withhold says one
// could not be read.
type Engine struct {
	X    *desired.Engine
	List func() (in desired.Inputs, withhold bool)
}

// Build is Full.
func (e Engine) Build(have state.State, cfg desired.Config) Built { return e.Full(have, cfg) }

// Full lists every object and builds every owner.
func (e Engine) Full(have state.State, cfg desired.Config) Built {
	in, withhold := e.List()
	return Built{Result: e.X.Full(in, cfg, have), Withhold: withhold}
}

// Note notes n on the engine.
func (e Engine) Note(n desired.Note) { e.X.Note(n) }

// Settle settles the engine's result, which want is.
func (e Engine) Settle(want state.State, have state.State, names []string) state.State {
	if w, ok := e.X.Settle(have, names); ok {
		return w
	}
	return desired.Settle(want, have, names)
}

// Listed is a List of objects already listed, all of them readable as
// far as a build goes (the caller withholds deletes for those that were
// not).
func Listed(in desired.Inputs) func() (desired.Inputs, bool) {
	return func() (desired.Inputs, bool) { return in, false }
}

// Changes rebuilds, through the engine, the owners the objects in Changed
// touch, looking their objects up in Objects (desired.Engine.Update); it
// builds every owner when Update cannot, and says why.
type Changes struct {
	Engine
	Changed []state.ObjectRef
	Objects desired.Objects
}

// Build updates the engine's last result for the changes, or builds in
// full when it cannot.
func (c Changes) Build(have state.State, cfg desired.Config) Built {
	r, why := c.X.Update(c.Objects, c.Changed, cfg, have)
	if why.Gave() {
		b := c.Full(have, cfg)
		b.Full = why
		return b
	}
	return Built{Result: r, Incremental: true}
}

// SelfCheck is a full pass that first computes what Changes would have
// given, and reports how it differs from the full Build, which it uses
// (run mode's periodic resync). The engine's result must be what the NB
// shows for the comparison to hold: it is skipped otherwise.
type SelfCheck struct{ Changes }

// Build builds in full and compares with the update.
func (s SelfCheck) Build(have state.State, cfg desired.Config) Built {
	if !shows(s.X, have) {
		return s.Full(have, cfg)
	}
	inc, why := s.X.Update(s.Objects, s.Changed, cfg, have)
	b := s.Full(have, cfg)
	if !why.Gave() {
		b.Checked = true
		b.Mismatch = desired.Mismatch(inc, b.Result)
		b.Behind = b.Mismatch != "" && desired.Behind(inc, b.Result)
	}
	return b
}

// Verify is Changes with a full Build beside every update, whose result
// it uses when the two differ, and a diff of every port beside a diff of
// some (tests run this way: --verify-incremental).
type Verify struct{ Changes }

// Build updates and compares with a full Build of the same objects.
func (v Verify) Build(have state.State, cfg desired.Config) Built {
	check := shows(v.X, have)
	b := v.Changes.Build(have, cfg)
	b.VerifyDiff = true
	if !b.Incremental || !check {
		return b
	}
	in, _ := v.List()
	ref := desired.Build(in, cfg, have)
	b.Checked = true
	if b.Mismatch = desired.Mismatch(b.Result, ref); b.Mismatch != "" {
		b.Behind = desired.Behind(b.Result, ref)
		full := v.Full(have, cfg)
		b.Result, b.Incremental = full.Result, false
	}
	return b
}

// shows reports whether the NB shows the result x holds as applied.
func shows(x *desired.Engine, have state.State) bool {
	last, ok := x.Want()
	return ok && diff.Compute(last, have, diff.Policy{}).Empty()
}
