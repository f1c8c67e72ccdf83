package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// Sources is what the loop reads from Kubernetes. *sources.Informers is one.
type Sources interface {
	// Take snapshots every object, with a version read before the stores,
	// and takes what changed since the previous take.
	Take() sources.Snapshot
	// TakeChanges takes what changed since the previous take, with
	// lookups of the objects instead of a listing of every store.
	TakeChanges() sources.Changes
	// Inputs snapshots every object, leaving what changed.
	Inputs() sources.Snapshot
	// Synced reports, per kind, whether its informer has listed it once.
	Synced() map[sources.Kind]bool
	// WaitForCacheSync blocks until every informer has synced, or ctx ends.
	WaitForCacheSync(ctx context.Context) bool
	// Changes holds at most one pending notification that objects changed.
	Changes() <-chan struct{}
	// Discover looks again for kinds not installed at start.
	Discover(ctx context.Context) error
}

// WatchedNB is what the loop needs of the NB: a pass's NB, its connection
// and the drift of our rows. *observed.NB is one.
type WatchedNB interface {
	NB
	Up() bool
	WatchDrift(want func() (cur, prev *state.State), onDrift func(table string), onOwn func())
	WatchConnection(ctx context.Context, on func(ev observed.ConnEvent, endpoint string))
}

// LoopOptions configures a Loop.
type LoopOptions struct {
	// Pass is every pass's options; the loop sets Policy, BeforeApply and
	// what says how the pass builds (see read).
	Pass Options
	// Resync is how often a full pass runs at least. Coalesce bounds how
	// often passes start in a burst: a change while no pass runs starts
	// one at once; changes that came while a pass ran make the next pass,
	// which starts at once too (a VM start is two or three objects told
	// apart), unless the pass read a burst (BurstChanges objects or
	// more): then Coalesce after it started (0: at once).
	Resync, Coalesce time.Duration
	Log              logr.Logger
	// Metrics, when set, are kept up to date.
	Metrics *Metrics
	// Report, when set, sees every pass's outcome (problems become Events).
	Report func(Outcome, sources.Snapshot)
	// Publish, when set, runs after every pass that succeeded: every port
	// wanted is in the NB then, and its addresses may be published.
	Publish func(context.Context, Outcome, sources.Snapshot)
	// FullPasses makes every pass rebuild every owner, whatever changed
	// (desired.Build). VerifyIncremental builds in
	// full beside every incremental pass and counts where they differ
	// (ovn_sync_incremental_mismatches_total), for tests.
	FullPasses, VerifyIncremental bool
}

// trigger is why a pass runs; several coalesce into one pass.
type trigger uint8

const (
	trigStartup   trigger = 1 << iota // first pass after the caches synced (or the lease was won)
	trigKube                          // an informer event
	trigDrift                         // someone else changed one of our NB rows
	trigReconnect                     // the NB connection came back
	trigResync                        // Resync elapsed
	trigRecheck                       // our own NB change came while a pass computed
)

// kind is "full" for a pass that nothing in particular triggered (startup,
// reconnect, resync), else "change".
func (t trigger) kind() string {
	if t&(trigStartup|trigReconnect|trigResync) != 0 {
		return "full"
	}
	return "change"
}

func (t trigger) String() string {
	var parts []string
	for _, x := range []struct {
		t trigger
		s string
	}{{trigStartup, "startup"}, {trigKube, "kubernetes"}, {trigDrift, "nb-drift"}, {trigReconnect, "reconnect"}, {trigResync, "resync"}, {trigRecheck, "recheck"}} {
		if t&x.t != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, "+")
}

// Loop is run mode: a full pass once everything has synced, then a pass per
// coalesced batch of changes (Kubernetes objects, or our NB rows changed by
// someone else), a full pass every Resync and after every NB reconnect. A
// pass that fails is retried with backoff. Only the leader calls Lead;
// every replica calls Watch, which keeps its view of the NB current, so a
// takeover starts with synced caches.
type Loop struct {
	src  Sources
	nb   WatchedNB
	opts LoopOptions
	m    *Metrics
	log  logr.Logger

	nbUp        atomic.Bool
	drift       chan struct{}
	reconnected chan struct{}
	// own counts NB events that left a row of ours as want had it when
	// they came. One that comes while a pass computes was judged against
	// the want before it: the pass may have read the NB before that event
	// (the cache's events trail it), so another pass follows (recheck).
	own     atomic.Uint64
	recheck chan struct{}

	// want is what the last pass sent to the NB, nil while not leading;
	// prevWant what the one before sent. NB events that leave our rows as
	// either has them are our own (a pass's events may trail the next
	// pass's apply).
	wantMu         sync.Mutex
	want, prevWant *state.State
	// lastRead is how many changed objects the last pass read (noteRead).
	lastRead int
	// inc keeps the desired state between passes; only the goroutine
	// running passes uses it.
	inc desired.Engine
	// lastWant is the desired state of the last pass that succeeded since
	// the lease was won (nil before the first); left is set when a pass
	// that succeeded may have left rows of ours it did not want (a delete
	// withheld, a switch still in use) and no pass has diffed every row
	// since. Only the goroutine running passes uses them (see repairs).
	lastWant *state.State
	left     bool

	mu      sync.Mutex
	leading bool
	passed  bool // a pass succeeded since the lease was won
	lastErr error
}

// NewLoop returns a loop over src and nb that is not running yet: start
// Watch, then Lead.
func NewLoop(src Sources, nb WatchedNB, opts LoopOptions) *Loop {
	l := &Loop{
		src: src, nb: nb, opts: opts, m: opts.Metrics, log: opts.Log,
		drift:       make(chan struct{}, 1),
		reconnected: make(chan struct{}, 1),
		recheck:     make(chan struct{}, 1),
	}
	if l.m == nil {
		l.m = NewMetrics()
	}
	l.nbUp.Store(nb.Up())
	nb.WatchDrift(func() (*state.State, *state.State) {
		l.wantMu.Lock()
		defer l.wantMu.Unlock()
		return l.want, l.prevWant
	}, func(table string) {
		l.m.driftEvents.WithLabelValues(table).Inc()
		notify(l.drift)
	}, func() { l.own.Add(1) })
	return l
}

// setWant records w as what the pass sends to the NB (nil: nobody
// reconciles), and what the last pass sent as the one before.
func (l *Loop) setWant(w *state.State) {
	l.wantMu.Lock()
	defer l.wantMu.Unlock()
	if w == nil {
		l.want, l.prevWant = nil, nil
		return
	}
	l.want, l.prevWant = w, l.want
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Watch follows the NB connection and keeps the sync metrics until ctx is
// done. After a reconnect the NB may hold anything: a full pass follows.
func (l *Loop) Watch(ctx context.Context) {
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			up := l.nb.Up()
			l.nbUp.Store(up)
			l.m.nbConnected.Set(b2f(up))
			l.m.synced.WithLabelValues("nb").Set(b2f(up))
			for k, ok := range l.src.Synced() {
				l.m.synced.WithLabelValues(string(k)).Set(b2f(ok))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	l.nb.WatchConnection(ctx, func(ev observed.ConnEvent, endpoint string) {
		switch ev {
		case observed.ConnLost:
			l.log.Info("NB connection lost; reconnecting")
			l.nbUp.Store(false)
		case observed.ConnRestored:
			l.log.Info("NB reconnected: full pass", "endpoint", endpoint)
			l.nbUp.Store(true)
			l.m.nbReconnects.Inc()
			notify(l.reconnected)
		}
	})
}

// Synced reports whether every informer and the NB cache are ready, naming
// what is not.
func (l *Loop) Synced() (bool, string) {
	var not []string
	synced := l.src.Synced()
	for _, k := range sources.Kinds {
		if !synced[k] {
			not = append(not, string(k))
		}
	}
	if !l.nbUp.Load() {
		not = append(not, "NB")
	}
	if len(not) > 0 {
		return false, "not synced: " + strings.Join(not, ", ")
	}
	return true, ""
}

// Ready is /readyz: synced and, when leading, the last pass succeeded.
func (l *Loop) Ready() (bool, string) {
	if ok, why := l.Synced(); !ok {
		return false, why
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leading && !l.passed {
		if l.lastErr != nil {
			return false, "last pass failed: " + l.lastErr.Error()
		}
		return false, "leading: no pass yet"
	}
	return true, ""
}

// Lead is the writer: wait for every cache, a full pass, then a pass per
// batch of changes and a full pass every Resync. A pass never starts while
// another runs; what changes meanwhile is kept for the next one. Passes stop at
// once when ctx is done (the lease is lost); stop ends the loop between
// passes (shutdown), letting the pass in flight finish.
func (l *Loop) Lead(ctx context.Context, stop <-chan struct{}) {
	l.mu.Lock()
	l.leading, l.passed, l.lastErr = true, false, nil
	l.mu.Unlock()
	// Another replica may have written the NB since this one last led.
	l.lastWant, l.left = nil, false
	defer func() {
		l.setWant(nil)
		l.mu.Lock()
		l.leading = false
		l.mu.Unlock()
	}()
	if !l.waitSynced(ctx, stop) {
		return
	}
	resync := time.NewTicker(l.opts.Resync)
	defer resync.Stop()
	pending := trigStartup
	var retry <-chan time.Time
	var started time.Time
	burst := false // the last pass read a burst, and more came while it ran
	failures := 0
	for {
		if pending != 0 && retry == nil && l.nbUp.Load() {
			if burst {
				pending |= l.coalesce(ctx, stop, l.opts.Coalesce-time.Since(started))
			}
			if ctx.Err() != nil || closed(stop) {
				return
			}
			t := pending
			pending = 0
			started = time.Now()
			if err := l.pass(ctx, t); err != nil {
				if ctx.Err() != nil {
					return
				}
				pending |= t
				failures++
				retry = time.After(retryDelay(failures, l.opts.Resync))
			} else {
				failures = 0
			}
			came := l.coalesce(ctx, stop, 0)
			pending |= came
			burst = came != 0 && l.lastRead >= BurstChanges
			if came != 0 && retry == nil {
				continue // the next pass, without waiting for another change
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-l.src.Changes():
			pending |= trigKube
		case <-l.drift:
			pending |= trigDrift
		case <-l.recheck:
			pending |= trigRecheck
		case <-l.reconnected:
			pending |= trigReconnect
		case <-resync.C:
			pending |= trigResync
			if err := l.src.Discover(ctx); err != nil {
				l.log.Error(err, "discovery of custom resources failed")
			}
		case <-retry:
			retry = nil
		}
	}
}

// reading is what a pass read from Kubernetes.
type reading struct {
	// snap is what Report and Publish see: a pass that looked objects up
	// and listed none (objs set, listed not) holds no Inputs.
	snap       *sources.Snapshot
	unreadable []sources.Unreadable
	objs       desired.Objects
	listed     bool
	// all is set when the source could not say what changed.
	all bool
}

// read takes what changed and sets how a pass of trigger t builds. With
// LoopOptions.FullPasses every pass lists every store and rebuilds every
// owner. Otherwise a pass for Kubernetes
// changes or a recheck alone rebuilds the owners they touch; the first
// pass, one after the NB changed under us (drift) and one after a
// reconnect build in full, as the NB may hold anything, and so does one
// whose source could not say what changed; any other (a resync) builds in
// full and checks what the incremental state would have been (SelfCheck).
//
// A pass that is to rebuild what changed and is not checked looks the
// objects up (sources.Changes) and lists every store only if it builds in
// full after all (Options.List). Every other pass lists first; a checked
// one (self-check, verification) then gives Update a lookup over that
// listing, so that what it compares with a full Build are the same
// objects, not two reads of stores that may have moved in between.
func (l *Loop) read(opts *Options, t trigger) *reading {
	// Every change told so far is in the take below: a signal of one still
	// queued would only make an empty pass after this one, or, coming while
	// it ran, hold the next for --coalesce as if changes kept coming.
	select {
	case <-l.src.Changes():
	default:
	}
	if l.opts.FullPasses {
		snap := l.src.Take()
		l.noteRead(snap.Changed, snap.AllChanged)
		// No engine: every pass is a Build of every owner, and no update
		// follows to need the engine's indexes.
		return &reading{snap: &snap, unreadable: snap.Unreadable, listed: true}
	}
	opts.Engine = &l.inc
	opts.Verify = l.opts.VerifyIncremental
	changeOnly := t&^trigRecheck == trigKube || t == trigRecheck
	if changeOnly && !opts.Verify {
		ch := l.src.TakeChanges()
		l.noteRead(ch.Changed, ch.AllChanged)
		if ch.AllChanged {
			snap := l.src.Inputs() // taken already
			return &reading{snap: &snap, unreadable: snap.Unreadable, listed: true, all: true}
		}
		r := &reading{snap: &sources.Snapshot{Version: ch.Version, Changed: ch.Changed}, unreadable: ch.Unreadable, objs: ch.Objects}
		opts.Changed, opts.Objects = &ch.Changed, ch.Objects
		opts.List = func() (desired.Inputs, bool) {
			all := l.src.Inputs()
			r.snap.Inputs, r.snap.Unreadable, r.listed = all.Inputs, all.Unreadable, true
			l.logUnreadable(all.Unreadable)
			return all.Inputs, len(all.Unreadable) > 0
		}
		return r
	}
	snap := l.src.Take()
	l.noteRead(snap.Changed, snap.AllChanged)
	r := &reading{snap: &snap, unreadable: snap.Unreadable, listed: true, all: snap.AllChanged}
	if snap.AllChanged {
		return r
	}
	changed := snap.Changed
	switch {
	case changeOnly:
		opts.Changed = &changed
	case t&(trigStartup|trigDrift|trigReconnect) == 0:
		opts.Changed, opts.SelfCheck = &changed, true
	}
	return r
}

// fullReason says, from a small fixed set, why a pass of trigger t built
// in full: what Update gave up on (desired.Reasons), else what the pass
// was for (startup, reconnect, drift, resync), that the source could not
// say what changed (all-changed), or that a verification found the
// incremental result wrong (mismatch).
func fullReason(t trigger, rd *reading, out *Outcome) string {
	switch {
	case out.Checked && out.Mismatch != "" && !out.Behind && t&trigResync == 0:
		return "mismatch"
	case out.Full != "":
		return out.Full.Reason()
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

// BurstChanges is how many changed objects make a pass's reading a burst:
// if more come while it runs, the next pass starts LoopOptions.Coalesce
// after it started, not at once.
const BurstChanges = 64

// noteRead records how many changed objects the pass read (every one when
// the source could not tell which).
func (l *Loop) noteRead(changed []state.ObjectRef, all bool) {
	l.lastRead = len(changed)
	if all {
		l.lastRead = BurstChanges
	}
}

func (l *Loop) logUnreadable(us []sources.Unreadable) {
	for _, u := range us {
		l.log.Info("object unreadable: deletes withheld", "object", u.String())
	}
}

// named holds the objects problems name, looked up in objs: what Report
// needs of a pass that listed nothing.
func named(problems []desired.Problem, objs desired.Objects) desired.Inputs {
	var in desired.Inputs
	nets := objs.Networks()
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
	in.NetworkAttachmentDefinitions, in.Subnets, in.IPAMClaims = nets.NetworkAttachmentDefinitions, nets.Subnets, nets.IPAMClaims
	return in
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// retryDelay is the pause after the n-th failed pass in a row: 200ms
// doubling, at most 30s and at most the resync period.
func retryDelay(n int, resync time.Duration) time.Duration {
	d := 200 * time.Millisecond << min(n-1, 8)
	return min(d, 30*time.Second, resync)
}

// coalesce returns the triggers that came: those already waiting, and when
// d is positive those that come within d, so that a burst of events makes
// one pass.
func (l *Loop) coalesce(ctx context.Context, stop <-chan struct{}, d time.Duration) trigger {
	var t trigger
	var timeout <-chan time.Time // nil, and never ready, when not waiting
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case <-l.src.Changes():
			t |= trigKube
			continue
		case <-l.drift:
			t |= trigDrift
			continue
		case <-l.recheck:
			t |= trigRecheck
			continue
		case <-l.reconnected:
			t |= trigReconnect
			continue
		default:
		}
		if timeout == nil {
			return t
		}
		select {
		case <-ctx.Done():
			return t
		case <-stop:
			return t
		case <-timeout:
			return t
		case <-l.src.Changes():
			t |= trigKube
		case <-l.drift:
			t |= trigDrift
		case <-l.recheck:
			t |= trigRecheck
		case <-l.reconnected:
			t |= trigReconnect
		}
	}
}

// waitSynced blocks until every informer and the NB cache are synced,
// logging what it waits for every 10s.
func (l *Loop) waitSynced(ctx context.Context, stop <-chan struct{}) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				cancel()
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_, why := l.Synced()
				l.log.Info("waiting for caches", "state", why)
			}
		}
	}()
	if !l.src.WaitForCacheSync(ctx) {
		return false
	}
	for !l.nbUp.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	l.log.Info("caches synced", "after", time.Since(start).Round(time.Millisecond).String())
	return true
}

// pass is one reconciliation: read the informers (every object, or the
// changed ones looked up: see read) and the NB cache, build, diff, apply
// (recomputing on ErrStale), then report problems and, once it succeeded,
// publish addresses. Deletes are withheld unless every source has synced
// and every object could be read.
func (l *Loop) pass(ctx context.Context, t trigger) error {
	start := time.Now()
	rd, out, err := l.run(ctx, t)
	build := l.countBuild(t, rd, &out)
	applied := out.Plan
	for _, p := range out.Earlier {
		applied.Changes = append(slices.Clone(p.Changes), applied.Changes...)
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
	if out.Plan.Empty() && len(out.Earlier) == 0 {
		l.log.V(1).Info("pass: no changes", kv...)
	} else {
		l.log.Info("pass", kv...)
	}
	if l.opts.Publish != nil {
		l.opts.Publish(ctx, out, *rd.snap)
	}
	return nil
}

// run reads what the pass of trigger t builds from and runs it: build,
// diff, apply. A pass that looked objects up and listed none holds, for
// Report, the objects its problems name.
func (l *Loop) run(ctx context.Context, t trigger) (*reading, Outcome, error) {
	opts := l.opts.Pass
	rd := l.read(&opts, t)
	synced, _ := l.Synced()
	synced = synced && len(rd.unreadable) == 0
	l.logUnreadable(rd.unreadable)
	opts.Policy = diff.Policy{WithholdDeletes: !synced}
	own := l.own.Load()
	ownAtApply := own
	opts.BeforeApply = func(w state.State) {
		l.setWant(&w)
		ownAtApply = l.own.Load()
	}
	out, err := Pass(ctx, l.nb, rd.snap.Inputs, opts)
	if !rd.listed && l.opts.Report != nil {
		rd.snap.Inputs = named(out.Result.Problems, rd.objs)
	}
	if ownAtApply != own {
		notify(l.recheck)
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

// countBuild counts how out was built (ovn_sync_builds_total) and returns
// it as the pass log says it: "incremental", or "full: <reason>".
func (l *Loop) countBuild(t trigger, rd *reading, out *Outcome) string {
	if out.Incremental {
		l.m.builds.WithLabelValues("incremental", "change").Inc()
		return "incremental"
	}
	reason := fullReason(t, rd, out)
	if l.opts.FullPasses {
		reason = "full-passes"
	}
	if out.Full != "" {
		l.log.V(1).Info("full build", "reason", reason, "why", string(out.Full))
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
	l.lastWant = &out.Result.Want
	switch {
	case out.Plan.Withheld > 0 || inUse:
		l.left = true
	case !out.Scoped:
		l.left = false
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
