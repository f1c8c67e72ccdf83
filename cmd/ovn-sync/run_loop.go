package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// trigger is why a pass runs; several coalesce into one pass.
type trigger uint8

const (
	trigStartup   trigger = 1 << iota // first pass after the caches synced (or the lease was won)
	trigKube                          // an informer event
	trigDrift                         // someone else changed one of our NB rows
	trigReconnect                     // the NB connection came back
	trigResync                        // --resync elapsed
)

// full reports whether the pass is a full one (nothing in particular changed).
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
	}{{trigStartup, "startup"}, {trigKube, "kubernetes"}, {trigDrift, "nb-drift"}, {trigReconnect, "reconnect"}, {trigResync, "resync"}} {
		if t&x.t != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, "+")
}

// runner is run mode's reconcile loop. Only the leader runs lead; every
// replica keeps its informers and NB cache warm so that a takeover starts
// with synced caches.
type runner struct {
	log    logr.Logger
	cfg    desired.Config
	flags  *runFlags
	src    *sources.Informers
	m      *metrics
	pub    *publisher
	events *problemEvents

	nb          *observed.NB
	nbUp        atomic.Bool // as watchNB last saw it
	drift       chan struct{}
	reconnected chan struct{}

	// want is what the last pass sent to the NB, nil while not leading: NB
	// events that leave our rows as want has them are our own.
	want atomic.Pointer[state.State]
	// memo keeps the last pass's want; only the goroutine running passes
	// uses it. It is keyed by versions of r.src and r.nb, which are never
	// replaced.
	memo desired.Memo

	mu      sync.Mutex
	leading bool
	passed  bool // a pass succeeded since the lease was won
	lastErr error
}

func newRunner(log logr.Logger, cfg desired.Config, rf *runFlags, src *sources.Informers, m *metrics) *runner {
	return &runner{
		log: log, cfg: cfg, flags: rf, src: src, m: m,
		drift:       make(chan struct{}, 1),
		reconnected: make(chan struct{}, 1),
	}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// attach watches nb's cache for changes to our rows that we did not make.
func (r *runner) attach(nb *observed.NB) {
	r.nb = nb
	r.nbUp.Store(nb.Connected())
	nb.Client().Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(table string, row model.Model) { r.nbEvent(table, nil, row) },
		UpdateFunc: func(table string, old, row model.Model) { r.nbEvent(table, old, row) },
		DeleteFunc: func(table string, row model.Model) { r.nbEvent(table, row, nil) },
	})
}

// nbEvent runs in libovsdb's cache event loop: it must be quick.
func (r *runner) nbEvent(table string, old, cur model.Model) {
	w := r.want.Load()
	if w == nil {
		return
	}
	var drift bool
	switch table {
	case nbdb.LogicalSwitchPortTable:
		o, _ := old.(*nbdb.LogicalSwitchPort)
		c, _ := cur.(*nbdb.LogicalSwitchPort)
		drift = portDrift(*w, o, c)
	case nbdb.LogicalSwitchTable:
		o, _ := old.(*nbdb.LogicalSwitch)
		c, _ := cur.(*nbdb.LogicalSwitch)
		drift = switchDrift(*w, o, c)
	}
	if drift {
		r.m.driftEvents.WithLabelValues(table).Inc()
		notify(r.drift)
	}
}

// portDrift reports whether a change of one LSP row (old and cur nil for an
// insert and a delete) leaves one of our ports other than want has it.
// Rows that are not ours before or after are someone else's business.
func portDrift(want state.State, old, cur *nbdb.LogicalSwitchPort) bool {
	owned := func(r *nbdb.LogicalSwitchPort) bool { return r != nil && r.ExternalIDs[state.KeyOwner] != "" }
	if !owned(old) && !owned(cur) {
		return false
	}
	if cur == nil {
		return want.Ports[old.Name] != nil
	}
	w := want.Ports[cur.Name]
	return w == nil || !w.Equal(observed.PortFromRow(cur))
}

func switchDrift(want state.State, old, cur *nbdb.LogicalSwitch) bool {
	owned := func(r *nbdb.LogicalSwitch) bool { return r != nil && r.ExternalIDs[state.KeyOwner] != "" }
	if !owned(old) && !owned(cur) {
		return false
	}
	if cur == nil {
		return want.Switches[old.Name] != nil
	}
	w := want.Switches[cur.Name]
	return w != nil && !w.Equal(observed.SwitchFromRow(cur))
}

// watchNB follows the NB connection and the sync state of every source until
// ctx is done. After a reconnect the cache was rebuilt (or caught up) from a
// fresh monitor: a full pass follows.
//
// libovsdb v0.7.0 does not say when it reconnected (Connected stays true
// while it reconnects after the server dropped the connection), so this
// watches what a reconnect changes: the client has no current endpoint
// while it is down, the endpoint changes when it moves to another RAFT
// member, and the cache's port table is replaced when the cache is purged.
func (r *runner) watchNB(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	c := r.nb.Client()
	lastEP, lastTable := c.CurrentEndpoint(), c.Cache().Table(nbdb.LogicalSwitchPortTable)
	down := false
	for i := 0; ; i++ {
		ep, table := c.CurrentEndpoint(), c.Cache().Table(nbdb.LogicalSwitchPortTable)
		up := ep != "" && c.Connected()
		switch {
		case !up && !down:
			r.log.Info("NB connection lost; reconnecting")
			down = true
		case up && (down || ep != lastEP || table != lastTable):
			r.log.Info("NB reconnected: full pass", "endpoint", ep)
			r.m.nbReconnects.Inc()
			notify(r.reconnected)
			down = false
		}
		if up {
			lastEP, lastTable = ep, table
		}
		r.nbUp.Store(up)
		r.m.nbConnected.Set(b2f(up))
		if i%4 == 0 {
			r.m.synced.WithLabelValues("nb").Set(b2f(up))
			for k, ok := range r.src.Synced() {
				r.m.synced.WithLabelValues(string(k)).Set(b2f(ok))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// synced reports whether every informer and the NB cache are ready, naming
// what is not.
func (r *runner) synced() (bool, string) {
	var not []string
	for _, k := range sources.Kinds {
		if ok := r.src.Synced()[k]; !ok {
			not = append(not, string(k))
		}
	}
	if r.nb == nil || !r.nbUp.Load() {
		not = append(not, "NB")
	}
	if len(not) > 0 {
		return false, "not synced: " + strings.Join(not, ", ")
	}
	return true, ""
}

// ready is /readyz: synced and, when leading, the last pass succeeded.
func (r *runner) ready() (bool, string) {
	if ok, why := r.synced(); !ok {
		return false, why
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leading && !r.passed {
		if r.lastErr != nil {
			return false, "last pass failed: " + r.lastErr.Error()
		}
		return false, "leading: no pass yet"
	}
	return true, ""
}

// lead is the writer: wait for every cache, a full pass, then a pass per
// coalesced batch of changes and a full pass every --resync. Passes stop at
// once when ctx is done (the lease is lost); stop ends the loop between
// passes (shutdown), letting the pass in flight finish.
func (r *runner) lead(ctx context.Context, stop <-chan struct{}) {
	r.mu.Lock()
	r.leading, r.passed, r.lastErr = true, false, nil
	r.mu.Unlock()
	defer func() {
		r.want.Store(nil)
		r.mu.Lock()
		r.leading = false
		r.mu.Unlock()
	}()
	if !r.waitSynced(ctx, stop) {
		return
	}
	resync := time.NewTicker(r.flags.resync)
	defer resync.Stop()
	pending := trigStartup
	var retry <-chan time.Time
	failures := 0
	for {
		if pending != 0 && retry == nil && r.nbUp.Load() {
			pending |= r.coalesceTriggers(ctx, stop)
			if ctx.Err() != nil || closed(stop) {
				return
			}
			t := pending
			pending = 0
			if err := r.pass(ctx, t); err != nil {
				if ctx.Err() != nil {
					return
				}
				pending |= t
				failures++
				retry = time.After(retryDelay(failures, r.flags.resync))
			} else {
				failures = 0
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-r.src.Changes():
			pending |= trigKube
		case <-r.drift:
			pending |= trigDrift
		case <-r.reconnected:
			pending |= trigReconnect
		case <-resync.C:
			pending |= trigResync
			if err := r.src.Discover(ctx); err != nil {
				r.log.Error(err, "discovery of custom resources failed")
			}
		case <-retry:
			retry = nil
		}
	}
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

// coalesceTriggers waits --coalesce for more changes so that a burst of
// events makes one pass; it returns the triggers that came meanwhile.
func (r *runner) coalesceTriggers(ctx context.Context, stop <-chan struct{}) trigger {
	if r.flags.coalesce <= 0 {
		return 0
	}
	var t trigger
	timer := time.NewTimer(r.flags.coalesce)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return t
		case <-stop:
			return t
		case <-timer.C:
			return t
		case <-r.src.Changes():
			t |= trigKube
		case <-r.drift:
			t |= trigDrift
		case <-r.reconnected:
			t |= trigReconnect
		}
	}
}

// waitSynced blocks until every informer and the NB cache are synced,
// logging what it waits for every 10s.
func (r *runner) waitSynced(ctx context.Context, stop <-chan struct{}) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	lastLog := start
	for {
		ok, why := r.synced()
		if ok {
			r.log.Info("caches synced", "after", time.Since(start).Round(time.Millisecond).String())
			return true
		}
		if time.Since(lastLog) >= 10*time.Second {
			r.log.Info("waiting for caches", "state", why)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		case <-t.C:
		}
	}
}

// pass is one reconciliation: read every informer and the NB cache, build,
// diff, apply (recomputing on ErrStale), then publish addresses and report
// problems. Deletes are withheld unless every source has synced and every
// object could be read.
func (r *runner) pass(ctx context.Context, t trigger) error {
	start := time.Now()
	kind := t.kind()
	snap := r.src.Inputs()
	synced := r.src.HasSynced() && len(snap.Unreadable) == 0
	for _, u := range snap.Unreadable {
		r.log.Info("object unreadable: deletes withheld", "object", u.String())
	}
	opts := r.flags.nb.options(r.cfg)
	opts.Policy = diff.Policy{WithholdDeletes: !synced}
	opts.BeforeApply = func(w state.State) { r.want.Store(&w) }
	opts.Memo, opts.InputsVersion = &r.memo, snap.Version
	out, err := reconcile.Pass(ctx, r.nb, snap.Inputs, opts)
	res, problems := out.Applied, out.Result.Problems
	applied := out.Plan
	for _, p := range out.Earlier {
		applied.Changes = append(slices.Clone(p.Changes), applied.Changes...)
	}
	r.m.observeApply(applied, res)
	r.m.planSize.Observe(float64(len(out.Plan.Changes)))
	r.m.withheld.Set(float64(out.Plan.Withheld))
	r.observeProblems(problems)
	if r.events != nil {
		r.events.report(problems, snap.Inputs)
	}
	for _, n := range out.Result.Notices {
		r.log.V(1).Info("pending change", "object", n.Kind+"/"+n.Namespace+"/"+n.Name, "reason", n.Reason, "message", n.Message)
	}
	if err != nil && errors.Is(err, apply.ErrSwitchInUse) {
		// Everything else was done; the switch waits for its foreign ports.
		r.log.Info("switch not deleted", "reason", err.Error())
		err = nil
	}
	dur := time.Since(start)
	r.m.passDuration.WithLabelValues(kind).Observe(dur.Seconds())
	if err != nil {
		result := "error"
		switch {
		case errors.Is(err, diff.ErrMassDelete):
			result = "refused"
		case errors.Is(err, apply.ErrStale):
			result = "stale"
		}
		r.m.passes.WithLabelValues(kind, result).Inc()
		r.mu.Lock()
		r.lastErr = err
		r.passed = false
		r.mu.Unlock()
		if ctx.Err() == nil {
			r.log.Error(err, "pass failed", "trigger", t.String(), "duration", dur.String())
		}
		return err
	}
	if t&(trigKube|trigStartup) == 0 {
		r.m.driftRepairs.Add(float64(res.Created + res.Updated + res.Deleted))
	}
	r.m.passes.WithLabelValues(kind, "success").Inc()
	r.m.ownedPorts.Set(float64(out.Result.Want.OwnedPorts()))
	r.m.lastSuccess.SetToCurrentTime()
	r.mu.Lock()
	r.passed, r.lastErr = true, nil
	r.mu.Unlock()
	counts := out.Plan.Counts()
	kv := []any{"trigger", t.String(), "add", counts.Add, "change", counts.Change, "destroy", counts.Destroy,
		"withheld", out.Plan.Withheld, "transactions", len(res.Txns), "problems", len(problems), "duration", dur.String()}
	if out.Plan.Empty() && len(out.Earlier) == 0 {
		r.log.V(1).Info("pass: no changes", kv...)
	} else {
		r.log.Info("pass", kv...)
	}
	// Publishing follows the commit: every port in want is in the NB now.
	if r.pub != nil {
		live := make(map[types.UID]bool, len(snap.Inputs.Pods)+len(snap.Inputs.VirtualMachines))
		for _, p := range snap.Inputs.Pods {
			live[p.UID] = true
		}
		for _, vm := range snap.Inputs.VirtualMachines {
			live[vm.UID] = true
		}
		r.pub.publish(ctx, reconcile.Publications(out.Result), live)
	}
	return nil
}

func (r *runner) observeProblems(problems []desired.Problem) {
	r.m.problems.Reset()
	for _, p := range problems {
		r.m.problems.WithLabelValues(p.Reason).Inc()
	}
}
