package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/state"
)

// maxOpsPerTxn is the default of -max-ops-per-txn, and the batch size of
// the preloads of the per-object measurement.
const maxOpsPerTxn = 1000

// sizeResult is everything measured for one cluster size.
type sizeResult struct {
	Size     int `json:"size"`  // the size asked for
	Ports    int `json:"ports"` // desired ports of the generated cluster
	Owners   int `json:"owners"`
	Switches int `json:"switches"`

	Cold  coldResult  `json:"cold"`
	Noop  noopResult  `json:"noop"`
	Churn churnResult `json:"churn"`
	Mem   memResult   `json:"memory"`

	PerObject     perObjectResult  `json:"per_object"`
	PerObjectFull *perObjectResult `json:"per_object_full_monitor,omitempty"`
}

// pass is one ovn-sync reconcile pass: read the cache, build, diff, apply.
type pass struct {
	Wall    time.Duration `json:"wall_ns"`
	State   time.Duration `json:"state_ns"`
	Build   time.Duration `json:"build_ns"`
	Compute time.Duration `json:"compute_ns"`
	Apply   time.Duration `json:"apply_ns"`
	Plan    diff.Counts   `json:"plan"`
	Txns    int           `json:"txns"` // transactions Apply sent
	Ops     int           `json:"ops"`
}

// coldResult is measurement (a), with (e): ovn-sync writing every port
// into an empty NB, and the server's CPU time for the same work.
type coldResult struct {
	pass
	Dial      time.Duration `json:"dial_ns"` // connect and initial (empty) dump, part of Wall
	Commits   int           `json:"commits"` // records the NB file gained
	ServerCPU time.Duration `json:"server_cpu_ns"`
	ClientCPU time.Duration `json:"client_cpu_ns"`
}

// noopResult is measurement (c): full passes over a warm cache that must
// change nothing.
type noopResult struct {
	Passes    []pass        `json:"passes"`
	Commits   int           `json:"commits"` // records the NB file gained over all passes: must be 0
	ServerCPU time.Duration `json:"server_cpu_ns"`
}

// first is the first no-op pass: the one that converts every cached row
// into the observed state for the first time.
func (n noopResult) first() pass { return n.Passes[0] }

// steady is the median of the later passes, the cost of every resync after
// the first.
func (n noopResult) steady() pass {
	rest := slices.Clone(n.Passes[min(1, len(n.Passes)-1):])
	slices.SortFunc(rest, func(a, b pass) int { return int(a.Wall - b.Wall) })
	return rest[len(rest)/2]
}

// churnResult is measurement (d): one pass after about 1% of the ports'
// owners changed.
type churnResult struct {
	pass
	Inputs    churnCounts   `json:"inputs"`
	Commits   int           `json:"commits"`
	ServerCPU time.Duration `json:"server_cpu_ns"`
}

// memResult is measurement (f).
type memResult struct {
	// PeakRSS is VmHWM after the ovn-sync measurements (cold, no-op,
	// churn), before the per-object pattern runs. It includes the
	// generated Kubernetes objects, which a deployment keeps in its
	// informer caches.
	PeakRSS uint64 `json:"peak_rss"`
	// HeapInputs is the live heap holding the generated objects alone;
	// HeapCold the live heap after the cold start, with the objects, the
	// NB client and its cache.
	HeapInputs uint64 `json:"heap_inputs"`
	HeapCold   uint64 `json:"heap_cold"`
}

// measureSize runs every measurement at one cluster size.
func measureSize(ctx context.Context, opts options, size int) (sizeResult, error) {
	in := bench.Cluster(size)
	cfg := bench.Config()
	r := sizeResult{Size: size, Owners: len(in.Pods) + len(in.VirtualMachines)}
	r.Mem.HeapInputs = uint64(liveheap.Bytes())

	want, err := measureOvnSync(ctx, opts, &r, in, cfg)
	if err != nil {
		return r, err
	}
	if opts.skipPerObject {
		return r, nil
	}
	logf("%d: per-object pattern, monitoring Logical_Switch names only", size)
	if r.PerObject, err = runPerObject(ctx, want, perObjectOptions{monitor: monitorNames, budget: opts.perObjectBudget, sample: opts.sample}); err != nil {
		return r, fmt.Errorf("per-object: %w", err)
	}
	if opts.fullMonitor {
		logf("%d: per-object pattern, monitoring Logical_Switch.ports too", size)
		full, err := runPerObject(ctx, want, perObjectOptions{monitor: monitorPorts, budget: opts.fullMonitorBudget, sample: opts.fullMonitorSample})
		if err != nil {
			return r, fmt.Errorf("per-object (full monitor): %w", err)
		}
		r.PerObjectFull = &full
	}
	return r, nil
}

// measureOvnSync runs (a) and (e) cold start, (f) memory, (c) no-op and
// (d) churn on one server, and returns the cold start's desired state for
// the per-object pattern to write.
func measureOvnSync(ctx context.Context, opts options, r *sizeResult, in desired.Inputs, cfg desired.Config) (want state.State, err error) {
	srv, err := nbtest.Serve()
	if err != nil {
		return want, err
	}
	defer srv.Close()

	// Each pass rebuilds every owner (desired.Build), as a resync does.
	src := source{in: in}
	logf("%d: ovn-sync cold start", r.Size)
	nb, want, err := coldStart(ctx, opts, srv, r, src, cfg)
	if err != nil {
		return want, err
	}
	defer nb.Close()
	r.Ports, r.Switches = want.Ports.Len(), len(want.Switches)
	if err := waitCache(ctx, nb, want.Ports.Len()); err != nil {
		return want, err
	}
	r.Mem.HeapCold = uint64(liveheap.Bytes())
	if err := writeHeapProfile(opts.profileDir, r.Size); err != nil {
		return want, err
	}

	logf("%d: ovn-sync no-op passes", r.Size)
	if r.Noop, err = noopPasses(ctx, opts, srv, nb, r.Size, src, cfg); err != nil {
		return want, err
	}
	logf("%d: ovn-sync 1%% churn", r.Size)
	if r.Churn, err = churnPass(ctx, opts, srv, nb, r.Size, src, cfg); err != nil {
		return want, err
	}
	if r.Mem.PeakRSS, err = peakRSS(); err != nil {
		return want, err
	}
	return want, nil
}

// coldStart dials the empty NB and writes the whole cluster, timing from
// the dial until the last transaction is committed.
func coldStart(ctx context.Context, opts options, srv *nbtest.Server, r *sizeResult, src source, cfg desired.Config) (*observed.NB, state.State, error) {
	commits0, err := srv.TryCommits()
	if err != nil {
		return nil, state.State{}, err
	}
	stop, err := startCPUProfile(opts.profileDir, "cold", r.Size)
	if err != nil {
		return nil, state.State{}, err
	}
	server0, _ := processCPU(srv.Pid())
	client0 := selfCPU()
	start := time.Now()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{srv.Addr()}, LeaderOnly: true})
	if err != nil {
		stop()
		return nil, state.State{}, err
	}
	r.Cold.Dial = time.Since(start)
	p, want, err := runPass(ctx, opts, nb, src, cfg, newProgress(fmt.Sprintf("%d: cold start, ops", r.Size), 0))
	wall := time.Since(start)
	r.Cold.ClientCPU = selfCPU() - client0
	server1, _ := processCPU(srv.Pid())
	stop()
	r.Cold.pass, r.Cold.Wall = p, wall
	r.Cold.ServerCPU = server1 - server0
	if err != nil {
		nb.Close()
		return nil, want, err
	}
	commits1, err := srv.TryCommits()
	r.Cold.Commits = commits1 - commits0
	return nb, want, err
}

// noopPasses runs opts.noopPasses full passes over the warm cache and
// checks that none of them committed anything.
func noopPasses(ctx context.Context, opts options, srv *nbtest.Server, nb *observed.NB, size int, src source, cfg desired.Config) (noopResult, error) {
	var res noopResult
	commits0, err := srv.TryCommits()
	if err != nil {
		return res, err
	}
	stop, err := startCPUProfile(opts.profileDir, "noop", size)
	if err != nil {
		return res, err
	}
	server0, _ := processCPU(srv.Pid())
	for range max(opts.noopPasses, 2) {
		p, _, err := runPass(ctx, opts, nb, src, cfg, nil)
		if err != nil {
			stop()
			return res, err
		}
		res.Passes = append(res.Passes, p)
	}
	server1, _ := processCPU(srv.Pid())
	stop()
	res.ServerCPU = server1 - server0
	commits1, err := srv.TryCommits()
	res.Commits = commits1 - commits0
	return res, err
}

// churnPass changes about 1% of the ports through their owners and times
// the one pass that follows.
func churnPass(ctx context.Context, opts options, srv *nbtest.Server, nb *observed.NB, size int, src source, cfg desired.Config) (churnResult, error) {
	var res churnResult
	changed, counts := churnInputs(src.in, size)
	res.Inputs = counts
	commits0, err := srv.TryCommits()
	if err != nil {
		return res, err
	}
	stop, err := startCPUProfile(opts.profileDir, "churn", size)
	if err != nil {
		return res, err
	}
	server0, _ := processCPU(srv.Pid())
	p, want, err := runPass(ctx, opts, nb, source{in: changed}, cfg, nil)
	server1, _ := processCPU(srv.Pid())
	stop()
	res.pass, res.ServerCPU = p, server1-server0
	if err != nil {
		return res, err
	}
	commits1, err := srv.TryCommits()
	res.Commits = commits1 - commits0
	if err != nil {
		return res, err
	}
	return res, waitCache(ctx, nb, want.Ports.Len())
}

// source is what a pass builds from: the inputs.
type source struct {
	in desired.Inputs
}

// runPass runs one ovn-sync pass through reconcile.Pass, as the run loop
// does a full one: snapshot the cache, build the desired state of every
// owner, diff, and apply in batches as opts say. bar, if not nil, follows
// the operations committed.
func runPass(ctx context.Context, opts options, nb *observed.NB, src source, cfg desired.Config, bar *progress) (pass, state.State, error) {
	var target reconcile.NB = nb
	before := func(state.State) {}
	if bar != nil {
		target = &watchedNB{NB: nb, bar: bar}
		// Into an empty NB a port create is an insert and a switch mutate.
		before = func(want state.State) { bar.total = 2 * want.Ports.Len() }
		defer bar.finish()
	}
	start := time.Now()
	out, err := reconcile.Pass(ctx, target, reconcile.All(src.in), reconcile.Options{
		Config: cfg, MaxDeleteFraction: 1,
		Apply:       apply.Options{MaxOpsPerTxn: opts.maxOps, InFlight: opts.inFlight},
		BeforeApply: before,
		Retries:     1,
	})
	p := pass{
		Wall: time.Since(start), State: out.Timings.Observe, Build: out.Timings.Build, Compute: out.Timings.Diff, Apply: out.Timings.Apply,
		Plan: out.Plan.Counts(), Txns: len(out.Applied.Txns), Ops: out.Applied.Ops,
	}
	want := out.Result.Want
	if pr := out.Result.Problems; len(pr) > 0 {
		return p, want, fmt.Errorf("generated cluster has %d problems, first: %s", len(pr), pr[0])
	}
	if err != nil {
		return p, want, fmt.Errorf("apply %+v: %w", out.Plan.Counts(), err)
	}
	return p, want, nil
}

// watchedNB moves a progress bar on as transactions return, of which
// several may be in flight.
type watchedNB struct {
	*observed.NB
	bar  *progress
	mu   sync.Mutex
	done int
}

func (w *watchedNB) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := w.NB.Transact(ctx, ops...)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done += len(ops)
	w.bar.set(w.done)
	return res, err
}

// waitCache waits until the NB client's cache holds ports ports: update
// notifications precede a transaction's reply, but the client applies
// them to its cache asynchronously.
func waitCache(ctx context.Context, nb *observed.NB, ports int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		n := nb.State().Ports.Len()
		if n == ports {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("NB cache holds %d ports, want %d", n, ports)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startCPUProfile starts a CPU profile <dir>/<phase>-<size>.pprof when dir is
// set, and returns the function that stops it.
func startCPUProfile(dir, phase string, size int) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", phase, size)))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes <dir>/heap-<size>.pprof when dir is set.
func writeHeapProfile(dir string, size int) error {
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", size)))
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}
