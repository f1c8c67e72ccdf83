// Package reconcile is ovn-sync's pass as a library: observe the NB, build
// the desired state through a Builder, diff it (diff.Compute), guard it
// (diff.Plan.CheckDeletes), apply it (apply.Apply), and compute again when
// the NB moved underneath — never replaying a plan. Every caller runs the
// same pass: one-shot plan and apply, run mode's loop, the demo and the
// benchmark harness.
//
//	out, err := reconcile.Pass(ctx, nb, reconcile.All(inputs), reconcile.Options{Config: cfg})
//
// A Builder says how the pass builds: All builds every owner from a set of
// objects; Engine, Changes, SelfCheck and Verify build through a
// desired.Engine that keeps its result between passes (run mode's Loop
// picks one per pass, see Loop.read).
//
// The Outcome says everything the caller may want to act on, the way raft
// hands its caller a Ready value: the desired state and Build's facts (for
// publishing and explain), the plan, the problems and notices, what was
// applied, and how long each phase took. Metrics, events, publishing and
// the command line read it; nothing here logs, counts or prints.
package reconcile
