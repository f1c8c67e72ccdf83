package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/publish"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// runFlags are the flags of "ovn-sync run".
type runFlags struct {
	fs  *flag.FlagSet
	net networkFlags
	nb  nbFlags

	kubeconfig string
	kubeQPS    float64
	kubeBurst  int

	resync   time.Duration
	coalesce time.Duration

	leaderElect   bool
	leaseNS       string
	leaseName     string
	identity      string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration

	metricsAddr string
	pprof       bool
	publish     bool
	events      bool
	logFormat   string
	verbosity   int
	grace       time.Duration
	fullPasses  bool
	verifyInc   bool
	dryRun      bool
}

// inCluster reports whether the process runs in a pod with a service account.
func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

const saNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the namespace to hold the lease in by default: POD_NAMESPACE
// (downward API), else the service account's, else "default".
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(saNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

func newRunFlags(stderr io.Writer) *runFlags {
	r := &runFlags{fs: flag.NewFlagSet("run", flag.ContinueOnError)}
	fs := r.fs
	fs.SetOutput(stderr)
	r.net.register(fs)
	r.nb.register(fs)
	fs.StringVar(&r.kubeconfig, "kubeconfig", "", "kubeconfig `file` (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	fs.Float64Var(&r.kubeQPS, "kube-api-qps", 50, "queries per second to the Kubernetes API (pod patches and events)")
	fs.IntVar(&r.kubeBurst, "kube-api-burst", 100, "burst of queries to the Kubernetes API")
	fs.DurationVar(&r.resync, "resync", 5*time.Minute, "full pass at least this often")
	fs.DurationVar(&r.coalesce, "coalesce", 20*time.Millisecond, "in a burst of changes (a pass read 64 changed objects or more, and more came while it ran), start passes at most this often; otherwise the next pass starts at once")
	fs.BoolVar(&r.leaderElect, "leader-elect", inCluster(), "take a Lease before writing, so one of several replicas writes (default true in a cluster)")
	fs.StringVar(&r.leaseNS, "lease-namespace", ownNamespace(), "namespace of the Lease (default: $POD_NAMESPACE or the service account's)")
	fs.StringVar(&r.leaseName, "lease-name", "ovn-sync", "name of the Lease")
	fs.StringVar(&r.identity, "identity", "", "holder identity in the Lease (default: hostname and a random suffix)")
	fs.DurationVar(&r.leaseDuration, "lease-duration", 15*time.Second, "how long a Lease is valid without renewal; a standby waits this long")
	fs.DurationVar(&r.renewDeadline, "renew-deadline", 10*time.Second, "the leader stops writing when it could not renew for this long")
	fs.DurationVar(&r.retryPeriod, "retry-period", 2*time.Second, "how often to try to take or renew the Lease")
	fs.StringVar(&r.metricsAddr, "metrics-addr", ":9476", "listen `address` for /metrics, /healthz, /readyz (empty: none)")
	fs.BoolVar(&r.pprof, "pprof", false, "also serve Go's profiles (heap, CPU, goroutines) under /debug/pprof/ on --metrics-addr")
	fs.BoolVar(&r.publish, "publish", true, "annotate pods with their addresses (kube-ovn compatible)")
	fs.BoolVar(&r.events, "events", true, "emit Kubernetes Events for problems")
	fs.StringVar(&r.logFormat, "log-format", "auto", "json, console, or auto (console on a terminal, else json)")
	fs.IntVar(&r.verbosity, "v", 0, "log verbosity (1: every pass and patch)")
	fs.BoolVar(&r.fullPasses, "full-passes", false, "rebuild every owner on every pass, not only the owners a change touches")
	fs.BoolVar(&r.verifyInc, "verify-incremental", false, "also build in full beside every incremental pass and count differences (ovn_sync_incremental_mismatches_total); for testing")
	fs.DurationVar(&r.grace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long the pass in flight may take to finish")
	fs.BoolVar(&r.dryRun, "dry-run", false, "compute every pass and write nothing: no transaction, annotation, IPAMClaim status, Lease or (without --events) Event; /plan on --metrics-addr serves what a pass would do")
	return r
}

// dryRunRefused are the flags of run that do nothing in a dry run.
var dryRunRefused = func() refused {
	r := refused{
		"publish":            "a dry run writes no annotation or IPAMClaim status",
		"leader-elect":       "a dry run writes nothing and takes no Lease: several may run",
		"lease-namespace":    "a dry run takes no Lease",
		"lease-name":         "a dry run takes no Lease",
		"identity":           "a dry run takes no Lease",
		"lease-duration":     "a dry run takes no Lease",
		"renew-deadline":     "a dry run takes no Lease",
		"retry-period":       "a dry run takes no Lease",
		"full-passes":        "every pass of a dry run builds every owner",
		"verify-incremental": "every pass of a dry run builds every owner",
	}
	for name, why := range writeFlags {
		r[name] = why
	}
	return r
}()

func (r *runFlags) parse(args []string) error {
	if err := parseFlags(r.fs, args, nil); err != nil {
		return err
	}
	if r.dryRun {
		if err := r.dryRunDefaults(); err != nil {
			return err
		}
	}
	if err := r.nb.checkTLS(); err != nil {
		return err
	}
	if r.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", r.fs.Args())
	}
	if r.nb.addr == "" {
		return errors.New("--nb is required (unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT, comma-separated for a RAFT cluster)")
	}
	if r.resync <= 0 {
		return fmt.Errorf("--resync %s: must be positive", r.resync)
	}
	if r.leaderElect && !(r.leaseDuration > r.renewDeadline && r.renewDeadline > r.retryPeriod && r.retryPeriod > 0) {
		return fmt.Errorf("want --lease-duration > --renew-deadline > --retry-period > 0")
	}
	return nil
}

// dryRunDefaults refuses the flags a dry run does not take, and turns off
// what it does not do: the Lease, publishing, and Events unless --events
// is given.
func (r *runFlags) dryRunDefaults() error {
	var given []string
	events := false
	r.fs.Visit(func(f *flag.Flag) {
		if _, ok := dryRunRefused[f.Name]; ok {
			given = append(given, f.Name)
		}
		events = events || f.Name == "events"
	})
	slices.Sort(given)
	if len(given) > 0 {
		return fmt.Errorf("--%s does nothing with --dry-run: %s", given[0], dryRunRefused[given[0]])
	}
	r.leaderElect, r.publish = false, false
	r.events = r.events && events
	return nil
}

// newLogger returns a zap logger as a logr.Logger: JSON unless format is
// console or (auto) stderr is a terminal.
func newLogger(w *os.File, format string, verbosity int) (logr.Logger, func(), error) {
	var enc zapcore.Encoder
	switch format {
	case "json":
	case "console":
	case "auto":
		if fi, err := w.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			format = "console"
		} else {
			format = "json"
		}
	default:
		return logr.Logger{}, nil, fmt.Errorf("--log-format %q: want json, console or auto", format)
	}
	if format == "json" {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	} else {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	}
	// logr's V(n) is zap level -n.
	core := zapcore.NewCore(enc, zapcore.Lock(w), zap.NewAtomicLevelAt(zapcore.Level(-verbosity)))
	z := zap.New(core)
	return zapr.NewLogger(z), func() { _ = z.Sync() }, nil
}

func (r *runFlags) restConfig() (*rest.Config, error) {
	cfg, err := restConfig(r.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(r.kubeQPS), r.kubeBurst
	return cfg, nil
}

// restConfig loads a kubeconfig as kubectl does: the file given, else
// $KUBECONFIG, ~/.kube/config or the in-cluster service account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.UserAgent = "ovn-sync/" + version
	return cfg, nil
}

func cmdRun(args []string, _, stderr io.Writer) error {
	rf := newRunFlags(stderr)
	if err := rf.parse(args); err != nil {
		return err
	}
	errFile, _ := stderr.(*os.File)
	if errFile == nil {
		errFile = os.Stderr
	}
	log, flush, err := newLogger(errFile, rf.logFormat, rf.verbosity)
	if err != nil {
		return err
	}
	defer flush()
	klog.SetLogger(log.WithName("client-go"))
	ctx, cancel := signalContext()
	defer cancel()
	return runMain(ctx, rf, log)
}

// runMain wires run mode together and blocks until ctx is done.
func runMain(ctx context.Context, rf *runFlags, log logr.Logger) error {
	w, err := wireRun(rf, log)
	if err != nil {
		return err
	}
	defer w.close()
	// Health first, so that a probe sees the process while it connects.
	var started atomic.Pointer[reconcile.Loop]
	if rf.metricsAddr != "" {
		stop, err := serveHTTP(log, httpOptions{addr: rf.metricsAddr, pprof: rf.pprof}, w.m, &started)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", rf.metricsAddr, err)
		}
		defer stop()
	}
	// Informers first: they take the longest to sync. Their first lists
	// run at GOGC/listsGC: they decode every object and keep a tenth of
	// it, and at the collector's usual pace the heap would grow to twice
	// the stores before they are done, pages the runtime keeps through the
	// first pass.
	listed := func() {}
	if w.gc != nil {
		listed = w.gc(listsGC)
	}
	if err := retry(ctx, log, "discover Kubernetes resources", func() error { return w.src.Start(ctx) }); err != nil {
		listed()
		return err
	}
	go func() { w.src.WaitForCacheSync(ctx); listed() }()
	var nb *observed.NB
	var closeNB func()
	if err := retry(ctx, log, "connect to NB", func() error {
		var err error
		nb, closeNB, err = rf.nb.connect(ctx)
		return err
	}); err != nil {
		return err
	}
	defer closeNB()
	loop := reconcile.NewLoop(w.src, nb, w.opts)
	started.Store(loop)
	var wg sync.WaitGroup
	defer wg.Wait()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch() // before wg.Wait: deferred calls run last first
	wg.Add(1)
	go func() { defer wg.Done(); loop.Watch(watchCtx) }()
	if rf.leaderElect {
		return elect(ctx, rf, log, w.kube, loop, w.m)
	}
	switch {
	case rf.dryRun:
		log.Info("dry run: computing every pass and writing nothing; /plan serves what a pass would do")
	default:
		log.Info("leader election off: this process writes")
	}
	// The pass in flight at shutdown may finish within the grace.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(rf.grace, cancel) })
	defer stop()
	w.m.SetLeader(!rf.dryRun)
	loop.Lead(wctx, ctx.Done())
	return nil
}

// runWiring is what run mode is made of before it connects: the clients,
// the metrics, the informers and the loop's options.
type runWiring struct {
	kube kubernetes.Interface
	m    *reconcile.Metrics
	src  *sources.Informers
	opts reconcile.LoopOptions
	// gc paces the collector for a full pass (opts.FullPass) and the
	// informers' first lists (gcBrackets); nil when nothing is paced.
	gc    func(div int) func()
	close func()
}

// wireRun makes the clients, the metrics, the informers and the loop's
// options of rf: what publishes addresses and reports problems as Events,
// where rf asks for them.
func wireRun(rf *runFlags, log logr.Logger) (*runWiring, error) {
	cfg, err := rf.net.load(rf.fs, os.ReadFile)
	if err != nil {
		return nil, err
	}
	rc, err := rf.restConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	w := &runWiring{kube: kube, m: reconcile.NewMetrics(), close: func() {}}
	kinds := make([]string, len(sources.Kinds))
	for i, k := range sources.Kinds {
		kinds[i] = string(k)
	}
	w.m.Kinds(kinds)
	w.src = sources.NewInformers(sources.InformerOptions{
		Kube: kube, Dynamic: dyn, Logger: log.WithName("sources"),
		OnEvent: func(k sources.Kind) { w.m.InformerEvent(string(k)) },
		OnDrop:  func(k sources.Kind) { w.m.ChangeDropped(string(k)) },
	})
	w.opts = reconcile.LoopOptions{
		Pass: rf.nb.options(cfg), Resync: rf.resync, Coalesce: rf.coalesce,
		Log: log, Metrics: w.m, FullPasses: rf.fullPasses, VerifyIncremental: rf.verifyInc, DryRun: rf.dryRun,
	}
	if !rf.dryRun && !rf.fullPasses {
		// Every pass of these builds in full: the runtime paces them.
		w.gc = gcBrackets(returnMemory())
		w.opts.FullPass = func() func() { return w.gc(fullPassGC) }
	}
	if rf.publish {
		pub := publish.NewPublisher(kube, dyn, log.WithName("publish"), w.m)
		pub.MaxQueued = maxQueued(rf.kubeQPS, rf.resync)
		w.opts.Publish = pub.Pass
	}
	if rf.events {
		ev, stop := publish.NewEvents(kube, log.WithName("events"), w.m.ProblemEvent)
		w.close = stop
		w.opts.Report = func(out reconcile.Outcome, snap sources.Snapshot) { ev.Report(out.Result.Problems, snap.Inputs) }
	}
	return w, nil
}

// returnMemory returns a function that gives the memory the heap holds
// free back to the OS, in the background, unless it is doing so already.
// A full pass holds for a moment what a pass that rebuilds what changed
// never does (at 100k ports, every owner's new result beside the last);
// the runtime would keep those pages until a collection lowers its heap
// goal, which a quiet process reaches only at the next forced one, and a
// full pass every --resync raises again: RSS would stay at the full pass's
// peak. Returned after each, RSS between full passes is the live heap and
// what passes that rebuild what changed allocate. The price is one
// collection a full pass.
func returnMemory() func() {
	var busy atomic.Bool
	return func() {
		if !busy.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer busy.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// fullPassGC and listsGC divide GOGC for the length of a full pass and
// of the informers' first lists (gcBrackets). A full pass's peak is the
// process's; the lists' heap, at GOGC/listsGC, stays below it. At 100k
// ports a full pass at GOGC/8 peaked 0.94x the RSS it did at GOGC/4, for
// 1.18x its time and 1.16x the CPU of a start (bench/RESULTS.md).
const (
	fullPassGC = 8
	listsGC    = 2
)

// gcBrackets returns what paces the collector through a full pass and the
// informers' first lists: begin(div) opens a bracket in which it runs at
// GOGC/div, and returns its end. A full pass holds for a moment what no
// other pass does (at 100k ports, every owner's new result being built and
// what it is built from), above a live heap that is most of the process's
// memory; at the runtime's usual pace (GOGC, 100 unless set) the heap
// grows to twice what the last collection found live before the next, so
// such a pass would double the peak of what it holds. At GOGC/fullPassGC
// the heap grows by an eighth of what is live. Once every bracket has
// ended GOGC is back, and the memory used given back to the OS (free). The
// price is the extra collections of one pass every --resync.
//
// Brackets may overlap (the informers' first lists and the first pass,
// see runMain): the largest divisor of those open holds, GOGC (read once
// here) is back once the last ends, and each end counts once.
func gcBrackets(free func()) func(div int) func() {
	gogc := gcPercent()
	var mu sync.Mutex
	open := map[int]int{} // brackets open, by divisor
	pace := func() {
		div := 1
		for d := range open {
			div = max(div, d)
		}
		debug.SetGCPercent(max(gogc/div, 1))
	}
	return func(div int) func() {
		if gogc < 0 { // GOGC=off: the memory limit alone paces
			return free
		}
		mu.Lock()
		open[div]++
		pace()
		mu.Unlock()
		var once sync.Once
		return func() {
			once.Do(func() {
				mu.Lock()
				if open[div]--; open[div] == 0 {
					delete(open, div)
				}
				last := len(open) == 0
				pace()
				mu.Unlock()
				if last {
					free()
				}
			})
		}
	}
}

// gcPercent is GOGC as the runtime has it now: negative when off.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// maxQueued is the publisher's bound: the writes --kube-api-qps sends in
// two --resync intervals (30,000 at the defaults), at least 1,000. A full
// pass comes at least every --resync and decides again what was let go.
func maxQueued(qps float64, resync time.Duration) int {
	return max(1000, int(2*qps*resync.Seconds()))
}

// retry calls f with backoff until it succeeds or ctx is done.
func retry(ctx context.Context, log logr.Logger, what string, f func() error) error {
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(200*time.Millisecond),
		backoff.WithMaxInterval(10*time.Second), backoff.WithMaxElapsedTime(0))
	return backoff.RetryNotify(f, backoff.WithContext(b, ctx), func(err error, next time.Duration) {
		log.Error(err, what+" failed; retrying", "in", next.String())
	})
}

// elect campaigns for the Lease for as long as ctx lasts, writing while it
// holds it. Losing the Lease cancels the writer at once. On shutdown (ctx
// done) the writer starts no new pass and the one in flight may finish
// within --shutdown-grace; only then is the Lease released, so a standby
// takes over without waiting for it to expire and never writes alongside.
func elect(ctx context.Context, rf *runFlags, log logr.Logger, kube kubernetes.Interface, loop *reconcile.Loop, m *reconcile.Metrics) error {
	id := rf.identity
	if id == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		id = host + "_" + hex.EncodeToString(b)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, rf.leaseNS, rf.leaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	// electCtx outlives ctx until the writer is idle.
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	var w writerState
	go func() {
		<-ctx.Done()
		select {
		case <-w.idle():
		case <-time.After(rf.grace):
			log.Info("the pass in flight did not finish within the grace period; abandoning it", "grace", rf.grace.String())
		}
		stopElect()
	}()
	log = log.WithValues("lease", rf.leaseNS+"/"+rf.leaseName, "identity", id)
	for electCtx.Err() == nil && ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   rf.leaseDuration,
			RenewDeadline:   rf.renewDeadline,
			RetryPeriod:     rf.retryPeriod,
			ReleaseOnCancel: true,
			Name:            rf.leaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					w.begin()
					defer w.end()
					log.Info("leading: writing to the NB")
					m.SetLeader(true)
					defer m.SetLeader(false)
					loop.Lead(lctx, ctx.Done())
				},
				OnStoppedLeading: func() { m.SetLeader(false) },
				OnNewLeader: func(holder string) {
					if holder != id {
						log.Info("standing by", "leader", holder)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(electCtx)
		// The writer's context is cancelled by now; wait for it to return
		// before campaigning again.
		<-w.idle()
		if ctx.Err() == nil {
			log.Info("lost the lease: stopped writing; campaigning again")
		}
	}
	return nil
}

// writerState tells when no writer runs.
type writerState struct {
	mu      sync.Mutex
	running bool
	done    chan struct{}
}

func (w *writerState) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running, w.done = true, make(chan struct{})
}

func (w *writerState) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running = false
	close(w.done)
}

// idle returns a channel closed once no writer runs.
func (w *writerState) idle() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running {
		c := make(chan struct{})
		close(c)
		return c
	}
	return w.done
}
