// Package reconcile is ovn-sync's pass as a library: observe the NB, build
// the desired state (desired.Build, or desired.Engine when given one), diff it
// (diff.Compute), guard it (diff.Plan.CheckDeletes), apply it
// (apply.Apply), and compute again when the NB moved underneath — never
// replaying a plan. Every caller runs the same pass: one-shot plan and
// apply, run mode's loop, the demo and the benchmark harness.
//
//	out, err := reconcile.Pass(ctx, nb, inputs, reconcile.Options{Config: cfg})
//
// The Outcome says everything the caller may want to act on, the way raft
// hands its caller a Ready value: the desired state and Build's facts (for
// publishing and explain), the plan, the problems and notices, what was
// applied, and how long each phase took. Metrics, events, publishing and
// the command line read it; nothing here logs, counts or prints.
package reconcile
