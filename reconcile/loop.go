package reconcile

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/ovn-sync/ovn-sync/desired"
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
	WatchDrift(want func() (cur, prev *state.State), onDrift func(table string))
	// WatchRows calls f with every change of a row State reads.
	WatchRows(f func(table string))
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
	// wanted is in the NB then, and its addresses may be published. The
	// outcome it sees holds them as Outcome.Publications and Claims, its
	// Result no facts (Options.Publications).
	Publish func(context.Context, Outcome, sources.Snapshot)
	// FullPasses makes every pass rebuild every owner, whatever changed
	// (desired.Build). VerifyIncremental builds in
	// full beside every incremental pass and counts where they differ
	// (ovn_sync_incremental_mismatches_total), for tests.
	FullPasses, VerifyIncremental bool
	// FullPass, when set, is called as a pass lists every object to build
	// every owner through the engine (not with FullPasses or DryRun), and
	// the function it returns when that pass ends: run mode collects more
	// often meanwhile and returns the memory the pass used afterwards
	// (gcBrackets).
	FullPass func() (end func())
	// DryRun makes every pass compute its plan and write nothing: no
	// transaction, and Publish is not called. Every pass builds every
	// owner (the engine's incremental passes rest on the NB showing their
	// results, which a dry run never writes); a change of any row of the
	// NB that State reads (someone else's included) asks for a pass;
	// passes start at most every Coalesce. LastOutcome serves the plan.
	DryRun bool
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

	nbUp atomic.Bool
	// asked holds the triggers asked for (ask) and not yet taken (poll);
	// wake holds a notification that one was.
	asked atomic.Uint32
	wake  chan struct{}
	// want is what the last pass sent to the NB, nil while not leading;
	// prevWant the switches and DHCP_Options rows the one before sent. NB
	// events that leave our rows as either has them are our own:
	// libovsdb's cache tells of a Logical_Switch or DHCP_Options row after
	// Transact returned, so one pass's events may come once the next pass
	// applied its want (observed.NB.WatchDrift).
	wantMu         sync.Mutex
	want, prevWant *state.State
	// lastRead is how many changed objects the last pass read (noteRead).
	lastRead int
	// last is the last pass's outcome (LastOutcome); pending, what the
	// pending changes of the last plan were (notePending).
	last    atomic.Pointer[Outcome]
	pending uint64
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
		wake: make(chan struct{}, 1),
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
		l.ask(trigDrift)
	})
	if opts.DryRun {
		// What the plan is depends on every row, kube-ovn's too.
		nb.WatchRows(func(string) { l.ask(trigNB) })
	}
	return l
}

// setWant records w as what the pass sends to the NB (nil: nobody
// reconciles), and the switches and DHCP_Options rows the last pass sent
// as the ones before. The last pass's ports are not kept: the port view
// showed their events before its Transact returned, and after a full pass
// they are a port map and an index of their own, which would stay alive
// beside this pass's until the next.
func (l *Loop) setWant(w *state.State) {
	l.wantMu.Lock()
	defer l.wantMu.Unlock()
	if w == nil {
		l.want, l.prevWant = nil, nil
		return
	}
	if prev := l.want; prev != nil {
		l.prevWant = &state.State{Switches: prev.Switches, DHCP: prev.DHCP}
	}
	l.want = w
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
			l.ask(trigReconnect)
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go l.tick(ctx, l.opts.Resync)
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
			if t&trigResync != 0 {
				// Kinds not installed at start may be now.
				if err := l.src.Discover(ctx); err != nil {
					l.log.Error(err, "discovery of custom resources failed")
				}
			}
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
			came := l.poll()
			pending |= came
			burst = came != 0 && (l.lastRead >= BurstChanges || l.opts.DryRun)
			if came != 0 && retry == nil {
				continue // the next pass, without waiting for another change
			}
		}
		t, fired := l.next(ctx, stop, retry)
		if ctx.Err() != nil || closed(stop) {
			return
		}
		if fired {
			retry = nil
		}
		pending |= t
	}
}

// reading is what a pass read from Kubernetes, and how it builds.
type reading struct {
	// snap is what Report and Publish see: a pass that looked objects up
	// and listed none (objs set, listed not) holds no Inputs.
	snap       *sources.Snapshot
	unreadable []sources.Unreadable
	objs       desired.Objects
	listed     bool
	// all is set when the source could not say what changed.
	all bool
	// builder builds the pass's desired state (see read).
	builder Builder
	// end, when set, is what LoopOptions.FullPass returned as the pass
	// listed every object: the pass calls it as it ends.
	end func()
}

// fullPass calls LoopOptions.FullPass, when set, as a pass lists every
// object, and returns what it gave.
func (l *Loop) fullPass() func() {
	if l.opts.FullPass == nil {
		return nil
	}
	return l.opts.FullPass()
}

// read takes what changed and says how a pass of trigger t builds. With
// LoopOptions.FullPasses every pass lists every store and rebuilds every
// owner (All). Otherwise a pass for Kubernetes changes alone
// rebuilds the owners they touch (Changes, or Verify with
// LoopOptions.VerifyIncremental); the first pass, one after the NB changed
// under us (drift) and one after a reconnect build in full (Engine), as
// the NB may hold anything, and so does one whose source could not say
// what changed; any other (a resync) builds in full and checks what the
// incremental state would have been (SelfCheck).
//
// A pass that is to rebuild what changed and is not checked looks the
// objects up (sources.Changes) and lists every store only if it builds in
// full after all. Every other pass lists first; a checked one
// (self-check, verification) then gives Update a lookup over that
// listing, so that what it compares with a full Build are the same
// objects, not two reads of stores that may have moved in between.
func (l *Loop) read(t trigger) *reading {
	// Every change told so far is in the take below: a signal of one still
	// queued would only make an empty pass after this one, or, coming while
	// it ran, hold the next for --coalesce as if changes kept coming.
	select {
	case <-l.src.Changes():
	default:
	}
	if l.opts.FullPasses || l.opts.DryRun {
		snap := l.src.Take()
		l.noteRead(snap.Changed, snap.AllChanged)
		// No engine: every pass is a Build of every owner, and no update
		// follows to need the engine's indexes.
		return &reading{snap: &snap, unreadable: snap.Unreadable, listed: true, builder: All(snap.Inputs)}
	}
	changeOnly := t == trigKube
	if changeOnly && !l.opts.VerifyIncremental {
		return l.readChanges()
	}
	end := l.fullPass()
	snap := l.src.Take()
	l.noteRead(snap.Changed, snap.AllChanged)
	r := &reading{snap: &snap, unreadable: snap.Unreadable, listed: true, all: snap.AllChanged, end: end}
	full := Engine{X: &l.inc, List: Listed(snap.Inputs)}
	ch := Changes{Engine: full, Changed: snap.Changed, Objects: desired.ObjectsOf(snap.Inputs)}
	switch {
	case snap.AllChanged || t&(trigStartup|trigDrift|trigReconnect) != 0:
		r.builder = full
	case changeOnly:
		r.builder = Verify{ch}
	default:
		r.builder = SelfCheck{ch}
	}
	return r
}

// readChanges takes what changed with lookups of the objects, listing
// every store only for a build in full.
func (l *Loop) readChanges() *reading {
	ch := l.src.TakeChanges()
	l.noteRead(ch.Changed, ch.AllChanged)
	if ch.AllChanged {
		end := l.fullPass()
		snap := l.src.Inputs() // taken already
		return &reading{snap: &snap, unreadable: snap.Unreadable, listed: true, all: true, end: end,
			builder: Engine{X: &l.inc, List: Listed(snap.Inputs)}}
	}
	r := &reading{snap: &sources.Snapshot{Version: ch.Version, Changed: ch.Changed}, unreadable: ch.Unreadable, objs: ch.Objects}
	// Listed once, on the first build in full: a computation again in
	// the same pass reads the same listing.
	list := func() (desired.Inputs, bool) {
		if !r.listed {
			r.end = l.fullPass()
			all := l.src.Inputs()
			r.snap.Inputs, r.snap.Unreadable, r.listed = all.Inputs, all.Unreadable, true
			l.logUnreadable(all.Unreadable)
		}
		return r.snap.Inputs, len(r.snap.Unreadable) > 0
	}
	r.builder = Changes{Engine: Engine{X: &l.inc, List: list}, Changed: ch.Changed, Objects: ch.Objects}
	return r
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
