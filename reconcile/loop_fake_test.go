package reconcile_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// fakeSources is reconcile.Sources over objects held in memory: the loop
// alone, without informers.
type fakeSources struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	version uint64
	// changed and allChanged are what set and setSynced changed since the
	// last take, as Informers records them.
	changed    map[state.ObjectRef]bool
	allChanged bool
	synced     map[sources.Kind]bool
	changes    chan struct{}
}

func newFakeSources() *fakeSources {
	f := &fakeSources{pods: map[string]*corev1.Pod{}, synced: map[sources.Kind]bool{}, changes: make(chan struct{}, 1),
		changed: map[state.ObjectRef]bool{}, allChanged: true}
	for _, k := range sources.Kinds {
		f.synced[k] = true
	}
	return f
}

func (f *fakeSources) Take() sources.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	snap := sources.Snapshot{Inputs: f.inputsLocked(), Version: f.version, AllChanged: f.allChanged}
	if !f.allChanged {
		snap.Changed = slices.SortedFunc(maps.Keys(f.changed), func(a, b state.ObjectRef) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
	}
	clear(f.changed)
	f.allChanged = false
	return snap
}

// TakeChanges is Take with the objects looked up in what they are now.
func (f *fakeSources) TakeChanges() sources.Changes {
	snap := f.Take()
	return sources.Changes{Version: snap.Version, Changed: snap.Changed, AllChanged: snap.AllChanged, Objects: desired.ObjectsOf(snap.Inputs)}
}

func (f *fakeSources) Inputs() sources.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sources.Snapshot{Inputs: f.inputsLocked(), Version: f.version, AllChanged: true}
}

func (f *fakeSources) inputsLocked() desired.Inputs {
	var in desired.Inputs
	for _, p := range f.pods {
		in.Pods = append(in.Pods, p)
	}
	return in
}

func (f *fakeSources) Synced() map[sources.Kind]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[sources.Kind]bool{}
	for k, v := range f.synced {
		out[k] = v
	}
	return out
}

func (f *fakeSources) WaitForCacheSync(ctx context.Context) bool {
	for {
		all := true
		for _, ok := range f.Synced() {
			all = all && ok
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *fakeSources) Changes() <-chan struct{}       { return f.changes }
func (f *fakeSources) Discover(context.Context) error { return nil }

// set changes the objects and notifies, as an informer event does. The
// pods it adds, replaces or removes are the next snapshot's Changed.
func (f *fakeSources) set(change func(pods map[string]*corev1.Pod)) {
	f.mu.Lock()
	before := maps.Clone(f.pods)
	change(f.pods)
	for name, p := range f.pods {
		if before[name] != p {
			f.changed[state.ObjectRef{Kind: string(sources.KindPod), Namespace: p.Namespace, Name: p.Name}] = true
		}
	}
	for name, p := range before {
		if _, ok := f.pods[name]; !ok {
			f.changed[state.ObjectRef{Kind: string(sources.KindPod), Namespace: p.Namespace, Name: p.Name}] = true
		}
	}
	f.version++
	f.mu.Unlock()
	select {
	case f.changes <- struct{}{}:
	default:
	}
}

func (f *fakeSources) setSynced(k sources.Kind, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced[k] = ok
	// An informer that (re)starts names no object.
	f.allChanged = true
	f.version++
}

func addPods(pods map[string]*corev1.Pod, from, to int) {
	for i := from; i < to; i++ {
		p := looptest.Pod(fmt.Sprintf("p%d", i))
		pods[p.Name] = p
	}
}

// fakeLoop is a Loop over fakeSources and the embedded NB, leading.
type fakeLoop struct {
	loop *reconcile.Loop
	src  *fakeSources
	nb   *observed.NB
	m    *reconcile.Metrics
}

func startFakeLoop(t *testing.T, coalesce time.Duration, fill func(map[string]*corev1.Pod)) *fakeLoop {
	t.Helper()
	return startFakeLoopReport(t, coalesce, nil, fill)
}

// startFakeLoopReport is startFakeLoop with the loop's Report hook set.
func startFakeLoopReport(t *testing.T, coalesce time.Duration, report func(reconcile.Outcome, sources.Snapshot), fill func(map[string]*corev1.Pod)) *fakeLoop {
	t.Helper()
	return startFakeLoopWith(t, func(o *reconcile.LoopOptions) { o.Coalesce, o.Report = coalesce, report }, fill)
}

// startFakeLoopWith is startFakeLoop with the loop's options as set sets
// them.
func startFakeLoopWith(t *testing.T, set func(*reconcile.LoopOptions), fill func(map[string]*corev1.Pod)) *fakeLoop {
	t.Helper()
	e, err := observed.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{e.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	src := newFakeSources()
	if fill != nil {
		// What is there before the loop starts makes no change
		// notification: the startup pass reads it, and nothing else runs
		// until a test changes something.
		fill(src.pods)
	}
	cfg, _ := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	m := reconcile.NewMetrics()
	opts := reconcile.LoopOptions{
		Pass:   reconcile.Options{Config: cfg, MaxDeleteFraction: 0.5, Apply: apply.Options{}},
		Resync: time.Hour, Log: logr.Discard(), Metrics: m,
	}
	set(&opts)
	loop := reconcile.NewLoop(src, nb, opts)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); loop.Watch(ctx) }()
	go func() { defer wg.Done(); loop.Lead(ctx, ctx.Done()) }()
	t.Cleanup(func() { cancel(); wg.Wait(); nb.Close(); e.Close() })
	return &fakeLoop{loop: loop, src: src, nb: nb, m: m}
}

func (f *fakeLoop) metric(name string, labels ...string) float64 {
	return (&looptest.Runner{Metrics: f.m}).Metric(name, labels...)
}

func (f *fakeLoop) waitPorts(t *testing.T, want int) {
	t.Helper()
	looptest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d ports", want), func() error {
		if n := f.nb.State().OwnedPorts(); n != want {
			return fmt.Errorf("%d ports", n)
		}
		return nil
	})
}

// TestLoopCoalesces: the changes that come while a pass runs make one
// pass after it, not one each. The pass that sees the first change is held
// in its report until 50 more changes have come.
func TestLoopCoalesces(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	var holdOnce, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(hold) }) }
	report := func(reconcile.Outcome, sources.Snapshot) {
		if armed.Load() {
			holdOnce.Do(func() { close(held); <-hold })
		}
	}
	f := startFakeLoopReport(t, 100*time.Millisecond, report, nil)
	t.Cleanup(release) // before the loop's own cleanup waits for it
	f.waitPorts(t, 0)
	looptest.WaitFor(t, 30*time.Second, "the startup pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "success") < 1 {
			return fmt.Errorf("no pass")
		}
		return nil
	})
	before := f.metric("ovn_sync_passes_total")
	armed.Store(true)
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 0, 1) })
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no pass after a change")
	}
	for i := 1; i <= 50; i++ {
		f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, i, i+1) })
	}
	release()
	f.waitPorts(t, 51)
	// The held pass and one more; a third only if our own writes were
	// taken for drift.
	if n := f.metric("ovn_sync_passes_total") - before; n > 3 {
		t.Errorf("50 changes during a pass took %v passes after it, want one", n-1)
	}
}

// TestLoopNextPassAtOnce: the pass after one during which a change came
// starts at once, however long the coalescing bound (a VM start is a VMI
// and a launcher pod, often told in two passes); only after a pass that
// read a burst (BurstChanges objects or more), with changes coming while
// it ran, does the next wait for the bound.
func TestLoopNextPassAtOnce(t *testing.T) {
	var mu sync.Mutex
	var hold chan struct{} // when set, the next pass's report waits on it
	held := make(chan struct{}, 4)
	report := func(reconcile.Outcome, sources.Snapshot) {
		mu.Lock()
		h := hold
		hold = nil
		mu.Unlock()
		if h != nil {
			held <- struct{}{}
			<-h
		}
	}
	holdNext := func() chan struct{} {
		h := make(chan struct{})
		mu.Lock()
		hold = h
		mu.Unlock()
		return h
	}
	f := startFakeLoopReport(t, time.Hour, report, nil)
	looptest.WaitFor(t, 30*time.Second, "the startup pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "success") < 1 {
			return fmt.Errorf("no pass")
		}
		return nil
	})
	wait := func(what string) {
		t.Helper()
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatalf("no pass %s", what)
		}
	}
	// Passes of one change each, and a change while each runs: every next
	// pass starts at once.
	h := holdNext()
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 0, 1) })
	for i := 1; i <= 3; i++ {
		wait(fmt.Sprintf("%d right after a pass during which a change came (the bound is an hour)", i))
		next := holdNext()
		f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, i, i+1) })
		close(h)
		h = next
	}
	wait("after the last change")
	// That pass reads a burst; a change comes while it runs: the bound
	// holds the next.
	next := holdNext()
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 4, 4+reconcile.BurstChanges) })
	close(h)
	wait("for the burst")
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 4+reconcile.BurstChanges, 5+reconcile.BurstChanges) })
	close(next)
	f.waitPorts(t, 4+reconcile.BurstChanges)
	time.Sleep(300 * time.Millisecond)
	if n := f.nb.State().OwnedPorts(); n != 4+reconcile.BurstChanges {
		t.Errorf("%d ports 300ms after a burst with an hour's bound, want %d: the pass after it did not wait", n, 4+reconcile.BurstChanges)
	}
}

// TestLoopStartsAtOnceWhenQuiet: a change while no pass runs starts one at
// once, however long the coalescing bound.
func TestLoopStartsAtOnceWhenQuiet(t *testing.T) {
	f := startFakeLoop(t, time.Hour, nil)
	looptest.WaitFor(t, 30*time.Second, "the startup pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "success") < 1 {
			return fmt.Errorf("no pass")
		}
		return nil
	})
	for i := range 3 {
		f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, i, i+1) })
		f.waitPorts(t, i+1)
	}
}

// TestLoopFullPass: FullPass is called as a pass that builds in full
// (the startup pass) lists every object, what it returns as that pass
// ends, and neither for a pass that rebuilt what changed.
func TestLoopFullPass(t *testing.T) {
	var calls, ends atomic.Int32
	f := startFakeLoopWith(t, func(o *reconcile.LoopOptions) {
		o.FullPass = func() func() {
			if calls.Add(1) != ends.Load()+1 {
				t.Error("FullPass called again before the last full pass ended")
			}
			return func() { ends.Add(1) }
		}
	}, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 1) })
	var full float64
	looptest.WaitFor(t, 30*time.Second, "FullPass for the startup pass, and its end", func() error {
		full = f.metric("ovn_sync_builds_total", "kind", "full")
		if n, e := calls.Load(), ends.Load(); full < 1 || float64(n) != full || e != n {
			return fmt.Errorf("%d calls and %d ends after %v full builds", n, e, full)
		}
		return nil
	})
	// The first pod's pass has ended once the second pod's port is there:
	// passes run one at a time.
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 1, 2) })
	f.waitPorts(t, 2)
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 2, 3) })
	f.waitPorts(t, 3)
	if inc := f.metric("ovn_sync_builds_total", "kind", "incremental"); inc < 1 {
		t.Fatalf("%v incremental builds, want the pods' passes incremental", inc)
	}
	if n, e, now := calls.Load(), ends.Load(), f.metric("ovn_sync_builds_total", "kind", "full"); now != full || float64(n) != full || e != n {
		t.Errorf("FullPass called %d times and ended %d, after %v full builds (%v before the pods' passes)", n, e, now, full)
	}
}

// TestLoopSettlesOnTheRows: once a pass applied a plan that wrote many
// ports (a start's, here), the result it keeps (LastOutcome's, the
// engine's, the drift watch's) and its plan hold the NB's rows, not the
// ports the pass made for them: a row carries its UUID, a port a Build
// makes none. The incremental pass of one pod that follows keeps them,
// is not settled itself (its own port is the Build's), and raises no
// drift.
func TestLoopSettlesOnTheRows(t *testing.T) {
	const n = 100 // more than a plan of a few ports: maxScope
	f := startFakeLoop(t, time.Millisecond, func(pods map[string]*corev1.Pod) { addPods(pods, 0, n) })
	settled := func(ports int, built string) {
		t.Helper()
		looptest.WaitFor(t, 30*time.Second, fmt.Sprintf("a pass's outcome that holds %d rows", ports), func() error {
			out, ok := f.loop.LastOutcome()
			if !ok {
				return fmt.Errorf("no pass yet")
			}
			want := out.Result.Want
			if n := want.Ports.Len(); n != ports {
				return fmt.Errorf("%d ports", n)
			}
			for name, p := range want.Ports.All() {
				if row := p.UUID != ""; row == (name == built) {
					return fmt.Errorf("port %s: the NB's row %v", name, row)
				}
			}
			for _, c := range out.Plan.Changes {
				if c.After != nil && c.Name != built && (c.After.UUID == "" || want.Ports.Get(c.Name) != c.After) {
					return fmt.Errorf("the plan's %s of %s is not the NB's row", c.Action, c.Name)
				}
			}
			if !want.Index.Equal(state.IndexPorts(want.Ports)) {
				return fmt.Errorf("the index is not the ports'")
			}
			return nil
		})
	}
	settled(n, "")
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, n, n+1) })
	f.waitPorts(t, n+1)
	settled(n+1, fmt.Sprintf("p%d.ns", n))
	if inc := f.metric("ovn_sync_builds_total", "kind", "incremental"); inc < 1 {
		t.Errorf("%v incremental builds, want the fourth pod's pass incremental", inc)
	}
	if d := f.metric("ovn_sync_drift_events_total", "table", nbdb.LogicalSwitchPortTable); d != 0 {
		t.Errorf("%v drift events on ports, want none", d)
	}
}

// TestLoopWithholdsDeletes: while a source has not synced, a pass deletes
// nothing; once it has, the withheld delete goes through.
func TestLoopWithholdsDeletes(t *testing.T) {
	f := startFakeLoop(t, time.Millisecond, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 3) })
	f.waitPorts(t, 3)
	f.src.setSynced(sources.KindVirtualMachine, false)
	f.src.set(func(pods map[string]*corev1.Pod) { delete(pods, "p0"); addPods(pods, 3, 4) })
	f.waitPorts(t, 4)
	looptest.WaitFor(t, 30*time.Second, "the delete withheld", func() error {
		if n := f.metric("ovn_sync_withheld_deletes"); n != 1 {
			return fmt.Errorf("withheld %v", n)
		}
		return nil
	})
	// The NB keeps a row the result deletes: the engine's result is not
	// what the NB shows, so the next pass for a change builds in full.
	full := f.metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonNoBase)
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 4, 5) })
	f.waitPorts(t, 5)
	if n := f.metric("ovn_sync_builds_total", "kind", "full", "reason", desired.ReasonNoBase); n != full+1 {
		t.Errorf("full builds for no earlier result: %v after a pass withheld a delete, %v before; want one more", n, full)
	}
	f.src.setSynced(sources.KindVirtualMachine, true)
	f.src.set(func(map[string]*corev1.Pod) {})
	f.waitPorts(t, 4)
	// The pass sets the gauge after it counted its repairs.
	looptest.WaitFor(t, 30*time.Second, "the delete's pass ended", func() error {
		if n := f.metric("ovn_sync_owned_ports"); n != 4 {
			return fmt.Errorf("owned ports %v", n)
		}
		return nil
	})
	if n := f.metric("ovn_sync_drift_repairs_total"); n != 0 {
		t.Errorf("drift repairs %v, want 0: the withheld delete repairs nothing", n)
	}
}

// TestLoopGuardBacksOff: a pass the mass-delete guard refuses is retried
// with growing pauses, not in a tight loop, and /readyz names the refusal.
func TestLoopGuardBacksOff(t *testing.T) {
	f := startFakeLoop(t, time.Millisecond, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 40) })
	f.waitPorts(t, 40)
	f.src.set(func(pods map[string]*corev1.Pod) { clear(pods) })
	looptest.WaitFor(t, 30*time.Second, "a refused pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "refused") < 1 {
			return fmt.Errorf("none refused")
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond)
	// Pauses of 200ms, 400ms, 800ms...: at most 4 more in 1.5s.
	if n := f.metric("ovn_sync_passes_total", "result", "refused"); n > 5 {
		t.Errorf("%v refused passes in 1.5s, want a few: no backoff", n)
	}
	if n := f.nb.State().OwnedPorts(); n != 40 {
		t.Errorf("%d ports after refused passes, want 40", n)
	}
	if ok, why := f.loop.Ready(); ok || !strings.Contains(why, "refusing mass delete") {
		t.Errorf("Ready() = %v, %q; want not ready, naming the refusal", ok, why)
	}
}

// TestLoopRepairsDrift: someone else edits one of our ports; the loop
// notices (no Kubernetes change) and puts it back.
func TestLoopRepairsDrift(t *testing.T) {
	f := startFakeLoop(t, time.Millisecond, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 2) })
	f.waitPorts(t, 2)
	// The edit must come after the startup pass has ended, or that pass
	// may repair it without a drift event.
	looptest.WaitFor(t, 30*time.Second, "the startup pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "success") < 1 {
			return fmt.Errorf("no pass")
		}
		return nil
	})
	p0 := f.nb.State().Ports.Get("p0.ns")
	set := &nbdb.LogicalSwitchPort{UUID: p0.UUID, Options: map[string]string{"requested-chassis": "n9", "foreign": "x"}}
	upd, err := f.nb.Client().Where(set).Update(set, &set.Options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.nb.Client().Transact(context.Background(), upd...); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "the edit repaired", func() error {
		p := f.nb.State().Ports.Get("p0.ns")
		if p == nil || p.RequestedChassis != "n1" {
			return fmt.Errorf("p0.ns = %+v", p)
		}
		return nil
	})
	if n := f.metric("ovn_sync_drift_events_total", "table", nbdb.LogicalSwitchPortTable); n < 1 {
		t.Errorf("drift events %v, want at least 1", n)
	}
	// The pass counts its repair after its transaction, which the NB
	// shows first.
	looptest.WaitFor(t, 30*time.Second, "the repair counted", func() error {
		if n := f.metric("ovn_sync_drift_repairs_total"); n < 1 {
			return fmt.Errorf("drift repairs %v, want at least 1", n)
		}
		return nil
	})
}

// TestLoopCountsRepairsAmongChanges: someone edits one of our ports while a
// pass runs, and Kubernetes changes come meanwhile (a pod deleted, one
// created). The next pass, which both triggered, does all three: the
// repair is counted, the changes Kubernetes asked for are not.
func TestLoopCountsRepairsAmongChanges(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	var holdOnce, releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(hold) }) }
	report := func(reconcile.Outcome, sources.Snapshot) {
		if armed.Load() {
			holdOnce.Do(func() { close(held); <-hold })
		}
	}
	f := startFakeLoopReport(t, time.Millisecond, report, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 3) })
	t.Cleanup(release) // before the loop's own cleanup waits for it
	f.waitPorts(t, 3)
	looptest.WaitFor(t, 30*time.Second, "the startup pass", func() error {
		if f.metric("ovn_sync_passes_total", "result", "success") < 1 {
			return fmt.Errorf("no pass")
		}
		return nil
	})
	// A pass for a pod created, held in its report once it has applied.
	armed.Store(true)
	f.src.set(func(pods map[string]*corev1.Pod) { addPods(pods, 3, 4) })
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no pass after a change")
	}
	p0 := f.nb.State().Ports.Get("p0.ns")
	set := &nbdb.LogicalSwitchPort{UUID: p0.UUID, Options: map[string]string{"requested-chassis": "n9"}}
	upd, err := f.nb.Client().Where(set).Update(set, &set.Options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.nb.Client().Transact(context.Background(), upd...); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "the edit seen as drift", func() error {
		if n := f.metric("ovn_sync_drift_events_total", "table", nbdb.LogicalSwitchPortTable); n < 1 {
			return fmt.Errorf("drift events %v", n)
		}
		return nil
	})
	f.src.set(func(pods map[string]*corev1.Pod) { delete(pods, "p1"); addPods(pods, 4, 5) })
	release()
	looptest.WaitFor(t, 30*time.Second, "the edit repaired and the pods' ports changed", func() error {
		s := f.nb.State()
		if p := s.Ports.Get("p0.ns"); p == nil || p.RequestedChassis != "n1" {
			return fmt.Errorf("p0.ns = %+v", p)
		}
		if s.Ports.Get("p1.ns") != nil || s.Ports.Get("p4.ns") == nil {
			return fmt.Errorf("p1.ns still there or p4.ns not yet")
		}
		return nil
	})
	// The pass counts after its transaction, which the NB shows first.
	looptest.WaitFor(t, 30*time.Second, "the repair counted", func() error {
		if n := f.metric("ovn_sync_drift_repairs_total"); n < 1 {
			return fmt.Errorf("drift repairs %v, want 1", n)
		}
		return nil
	})
	if n := f.metric("ovn_sync_drift_repairs_total"); n != 1 {
		t.Errorf("drift repairs %v, want 1: the pod deleted and the pod created are not repairs", n)
	}
}

// TestLoopDryRun: a dry run writes nothing; its last outcome is the plan
// a pass would apply, counted by action and cost in
// ovn_sync_pending_changes; a change someone else makes in the NB makes
// another pass, whose plan says so.
func TestLoopDryRun(t *testing.T) {
	f := startFakeLoopWith(t, func(o *reconcile.LoopOptions) { o.DryRun, o.Coalesce = true, time.Millisecond },
		func(pods map[string]*corev1.Pod) { addPods(pods, 0, 3) })
	plan := func(want string) reconcile.Outcome {
		t.Helper()
		var out reconcile.Outcome
		looptest.WaitFor(t, 30*time.Second, want, func() error {
			var ok bool
			if out, ok = f.loop.LastOutcome(); !ok || !strings.Contains(out.Plan.String(), want) {
				return fmt.Errorf("last plan %v:\n%s", ok, out.Plan)
			}
			return nil
		})
		return out
	}
	out := plan("Plan: 4 to add")
	// The outcome kept serves /plan; it does not keep the pass's facts,
	// which name every pod it read, alive until the next pass.
	if n := len(out.Result.Ports()); n != 0 {
		t.Errorf("the last outcome keeps the facts of %d ports", n)
	}
	if n := f.nb.State().Ports.Len(); n != 0 {
		t.Errorf("a dry run wrote %d ports", n)
	}
	if n := f.metric("ovn_sync_pending_changes", "action", "create", "difference", "port"); n != 3 {
		t.Errorf("pending port creates %v, want 3", n)
	}
	if n := f.metric("ovn_sync_transactions_total"); n != 0 {
		t.Errorf("%v transactions in a dry run", n)
	}
	if len(out.Plan.Costs().Named) != 3 {
		t.Errorf("costs %+v, want the three ports named", out.Plan.Costs())
	}
	// kube-ovn creates its switch and p1's port: the next pass uses the
	// switch, and leaves the port to kube-ovn (not adopted).
	lsp := &nbdb.LogicalSwitchPort{UUID: "lsp", Name: "p1.ns", Addresses: []string{"00:00:00:11:22:33 10.16.0.9"},
		ExternalIDs: map[string]string{"vendor": "kube-ovn", "ls": "ovn-default"}}
	sw := &nbdb.LogicalSwitch{UUID: "sw", Name: "ovn-default", Ports: []string{"lsp"}, ExternalIDs: map[string]string{"vendor": "kube-ovn"}}
	ops, err := f.nb.Client().Create(lsp, sw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.nb.Client().Transact(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	out = plan("Plan: 2 to add")
	if !slices.ContainsFunc(out.Result.Problems, func(p desired.Problem) bool { return p.Reason == desired.ReasonNotAdopted }) {
		t.Errorf("problems %v, want p1's port not adopted", out.Result.Problems)
	}
}
