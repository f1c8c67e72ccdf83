package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/state"
)

// NB is what a pass needs of the northbound database: its cached state and
// a way to send transactions. *observed.NB is one.
type NB interface {
	apply.Transactor
	// StateVersion returns the NB as observed now, and a version that
	// changes whenever the state may have.
	StateVersion() (state.State, uint64)
}

// PortLog is an NB that tells which ports changed between two of its
// versions (see observed.NB.ChangedPorts). *observed.NB is one. An
// incremental pass over such an NB diffs only the ports that may have
// changed since the last plan.
type PortLog interface {
	ChangedPorts(from, to uint64) (names []string, ok bool)
}

// Options configures a pass. The zero value plans with an empty Config,
// which Build reports as a Problem; set Config.
type Options struct {
	// Config is the default network.
	Config desired.Config
	// Policy is what diff.Compute is told: run mode withholds deletes while
	// a source has not synced or an object could not be read.
	Policy diff.Policy
	// MaxDeleteFraction is the mass-delete guard's limit (see
	// diff.Plan.CheckDeletes); AllowMassDelete turns the guard off.
	MaxDeleteFraction float64
	AllowMassDelete   bool
	// Apply tunes the transactions.
	Apply apply.Options
	// BeforeApply, when set, sees every desired state right before its plan
	// is sent (run mode records it to tell its own NB changes from someone
	// else's).
	BeforeApply func(want state.State)
	// Publications, when set, turns each computation's facts into what
	// publishing writes (Outcome.Publications and Outcome.Claims) before its
	// plan is computed, and lets the facts go: the plan's memory, and a long
	// apply, as a start's on an empty NB is, then do not come on top of every
	// port's spec and owner.
	// Outcome.Result then holds no facts (Explain finds no port).
	Publications bool
	// Retries bounds how many times a pass computes again after the NB
	// moved under a transaction (apply.ErrStale), or after Build said that
	// an address frees up once the plan is applied (Result.Again). 0 means
	// DefaultRetries.
	Retries int
}

// DefaultRetries is the default of Options.Retries.
const DefaultRetries = 4

// Timings are how long each phase of the last computation took, and apply
// over every attempt.
type Timings struct {
	Observe, Build, Diff, Apply time.Duration
}

// Outcome is everything a pass decided and did: the last computation, and
// what every attempt applied.
type Outcome struct {
	// Result is Build's: the desired state, the problems and notices, and
	// each port's facts.
	Result desired.Result
	// Plan is the last plan computed; Owned is how many ports of ours the
	// NB held when it was. Earlier are the plans applied before it, when
	// the pass computed again after Result.Again.
	Plan    diff.Plan
	Owned   int
	Earlier []diff.Plan
	// Incremental is set when the first computation rebuilt only the
	// owners a change touched; Full says, when it was meant to and did
	// not, why. Scoped is set when its plan was computed over the ports
	// that may have changed alone (see Outcome.diff).
	Incremental bool
	Full        desired.Why
	Scoped      bool
	// Checked is set when a self-check or verification compared an
	// incremental result with a full Build, or a plan over some ports with
	// one over all, Mismatch to how they differ.
	// Behind is set when they differ only by deletions the incremental
	// state was not told of yet (desired.Behind): not a fault.
	Checked  bool
	Mismatch string
	Behind   bool
	// Applied sums what every attempt sent; Attempts counts the
	// computations.
	Applied  apply.Result
	Attempts int
	Timings  Timings
	// Publications and Claims are what publishing writes after the pass
	// (see the functions of the same names), from Result's facts, when
	// Options.Publications was set.
	Publications []Publication
	Claims       []ClaimStatus
}

// Pending reports whether the NB is not yet what the cluster declares: the
// plan changes something, or an owner has no port because a port kube-ovn
// made holds its name and was not adopted (a desired.ReasonNotAdopted
// Problem), which --adopt kube-ovn, or putting the port right, would change.
func (o *Outcome) Pending() bool {
	if !o.Plan.Empty() {
		return true
	}
	for _, p := range o.Result.Problems {
		if p.Reason == desired.ReasonNotAdopted {
			return true
		}
	}
	return false
}

// Compute observes the NB and builds and diffs once: the plan a pass would
// apply. Nothing is written.
func Compute(nb NB, b Builder, opts Options) Outcome {
	var out Outcome
	out.compute(nb, b, &opts)
	return out
}

// compute observes the NB, builds through b (Build the first time, Full
// when computing again) and diffs.
func (out *Outcome) compute(nb NB, b Builder, opts *Options) state.State {
	t0 := time.Now()
	have, haveVersion := nb.StateVersion()
	t1 := time.Now()
	var built Built
	if out.Attempts == 0 {
		built = b.Build(have, opts.Config)
	} else {
		built = b.Full(have, opts.Config)
	}
	out.set(built)
	opts.Policy.WithholdDeletes = opts.Policy.WithholdDeletes || built.Withhold
	t2 := time.Now()
	ports, scoped := out.scope(nb, haveVersion)
	if opts.Publications {
		// Before the diff: the facts are let go before the plan is made.
		out.Publications, out.Claims = Publications(out.Result), ClaimStatuses(out.Result)
		out.Result = bare(out.Result)
	}
	t3 := time.Now()
	out.diff(b, have, haveVersion, ports, scoped, opts.Policy, built.VerifyDiff)
	out.Owned = have.OwnedPorts()
	t4 := time.Now()
	out.Timings.Observe, out.Timings.Build, out.Timings.Diff = t1.Sub(t0), t2.Sub(t1), t4.Sub(t3)
	out.Attempts++
	return have
}

// set records what built says in out.
func (out *Outcome) set(built Built) {
	out.Result, out.Incremental, out.Full = built.Result, built.Incremental, built.Full
	out.Checked, out.Mismatch, out.Behind = built.Checked, built.Mismatch, built.Behind
}

// diff computes out.Plan for out.Result: over ports when scoped (the
// ports that may have changed, see scope), else over every port. The plan
// is noted for the next.
func (out *Outcome) diff(b Builder, have state.State, version uint64, ports []string, scoped bool, policy diff.Policy, verify bool) {
	want := out.Result.Want
	if scoped {
		out.Plan, out.Scoped = diff.ComputePorts(want, have, policy, ports), true
		if verify {
			full := diff.Compute(want, have, policy)
			out.Checked = true
			if d := planMismatch(out.Plan, full); d != "" {
				out.Mismatch = strings.TrimPrefix(out.Mismatch+"; "+d, "; ")
				out.Plan, out.Scoped = full, false
			}
		}
	} else {
		out.Plan = diff.Compute(want, have, policy)
	}
	// A delete withheld is not named in the plan: after such a plan,
	// nothing is noted, and the next diffs every port; so it does after a
	// plan that names more ports than it would look up.
	p := &out.Plan
	if p.Withheld == 0 && len(p.Changes)+len(p.Notices) <= maxScope(want) {
		b.Note(desired.Note{Version: version, Ports: p.PortNames()})
	}
}

// maxScope is the most ports a pass diffs by name in want; more, and it
// walks every port, which then costs less: a port looked up by name costs
// some hundred times one walked in step (BenchmarkComputeOnePort).
func maxScope(want state.State) int { return max(64, want.Ports.Len()/512) }

// scope returns the ports that may differ between out.Result.Want and the
// NB's snapshot of version, when they are known: the result is
// incremental, the last one was noted and the NB tells what changed since
// (see diff.ComputePorts for why these are all). More than maxScope
// count as not known.
func (out *Outcome) scope(nb NB, version uint64) ([]string, bool) {
	log, ok := nb.(PortLog)
	if !ok || !out.Incremental {
		return nil, false
	}
	sp, ok := out.Result.Spliced()
	if !ok {
		return nil, false
	}
	changed, ok := log.ChangedPorts(sp.Noted.Version, version)
	if !ok {
		return nil, false
	}
	ports := slices.Concat(sp.Ports, sp.Noted.Ports, changed)
	if len(ports) > maxScope(out.Result.Want) {
		return nil, false
	}
	return ports, true
}

// planMismatch returns how a plan over some ports differs from full, the
// plan over all: "" when not at all.
func planMismatch(scoped, full diff.Plan) string {
	if reflect.DeepEqual(scoped, full) {
		return ""
	}
	for i := range max(len(scoped.Changes), len(full.Changes)) {
		if i >= len(scoped.Changes) || i >= len(full.Changes) || !reflect.DeepEqual(scoped.Changes[i], full.Changes[i]) {
			name := func(p diff.Plan) string {
				if i >= len(p.Changes) {
					return "none"
				}
				c := &p.Changes[i]
				return string(c.Action) + " " + c.Kind.String() + " " + c.Name
			}
			return fmt.Sprintf("plan over some ports: change %d is %s, over all %s", i, name(scoped), name(full))
		}
	}
	return fmt.Sprintf("plan over some ports: notices %v, withheld %d; over all: notices %v, withheld %d",
		scoped.Notices, scoped.Withheld, full.Notices, full.Withheld)
}

// written names the ports out's plan creates or updates.
func (out *Outcome) written() []string {
	var names []string
	for i := range out.Plan.Changes {
		if c := &out.Plan.Changes[i]; c.After != nil {
			names = append(names, c.Name)
		}
	}
	return names
}

// settle settles out's result through b on the NB's rows in have, once
// its plan, which wrote the ports named, was applied (Builder.Settle),
// and points the plan's changes at those rows: neither then keeps the
// ports the pass made for the rows it wrote.
func (out *Outcome) settle(b Builder, have state.State, names []string) {
	out.Result.Want = b.Settle(out.Result.Want, have, names)
	for i := range out.Plan.Changes {
		c := &out.Plan.Changes[i]
		if hp := have.Ports.Get(c.Name); c.After != nil && hp != nil && out.Result.Want.Ports.Get(c.Name) == hp {
			c.After, c.Name, c.Owner = hp, hp.Name, hp.Owner
		}
	}
}

// Pass computes and applies. A transaction that fails because the NB
// changed under it is not replayed: the pass is computed again from the
// refreshed cache, with a pause for the cache to catch up, up to
// opts.Retries times. So is a pass after which Build said an address frees
// up (Result.Again). The mass-delete guard refuses a plan with an error
// wrapping diff.ErrMassDelete before anything is sent.
func Pass(ctx context.Context, nb NB, b Builder, opts Options) (Outcome, error) {
	retries := opts.Retries
	if retries <= 0 {
		retries = DefaultRetries
	}
	var out Outcome
	for attempt := 0; ; attempt++ {
		have := out.compute(nb, b, &opts)
		if !opts.AllowMassDelete {
			if err := out.Plan.CheckDeletes(have, opts.MaxDeleteFraction); err != nil {
				return out, err
			}
		}
		if opts.BeforeApply != nil {
			opts.BeforeApply(out.Result.Want)
		}
		t := time.Now()
		res, err := apply.Apply(ctx, nb, out.Plan, opts.Apply)
		out.Timings.Apply += time.Since(t)
		out.Applied.Add(res)
		// Again is worth a retry only if this plan removed or rewrote a port.
		c := out.Plan.Counts()
		again := err == nil && out.Result.Again && c.Destroy+c.Change > 0
		if !again && (err == nil || !errors.Is(err, apply.ErrStale)) || attempt >= retries {
			return out, err
		}
		if again {
			out.Earlier = append(out.Earlier, out.Plan)
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
}
