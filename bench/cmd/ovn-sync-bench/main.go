// Command ovn-sync-bench measures ovn-sync end to end against real
// standalone ovsdb-servers, side by side with the per-object pattern of
// the usual controllers, at several cluster sizes.
//
// For each size (-sizes, default 10k and 100k ports) it generates the
// cluster of bench.Cluster and, each on a fresh server, measures:
//
//	(a) ovn-sync's cold start: dial, build, diff against the empty NB and
//	    apply in transactions of -max-ops-per-txn operations, -in-flight at
//	    a time, until the last is committed;
//	(b) the per-object pattern on the same ports: one libovsdb transaction
//	    per port, through a client monitoring the same columns (and, with
//	    -full-monitor, one monitoring Logical_Switch.ports too; -skip-per-object
//	    skips both). When it
//	    outlasts -per-object-budget it is sampled and extrapolated, and the
//	    output says so;
//	(c) no-op passes over the warm cache, checking in the NB file that no
//	    transaction was committed;
//	(d) one pass after 1% churn of the ports' owners;
//	(e) ovsdb-server's CPU time over (a), the floor for any client;
//	(f) the client's peak RSS and live heap per port after (a).
//
// Then:
//
//	(g) run mode's latency from a Kubernetes event to its port committed,
//	    as another NB client sees it (package bench/eventlat), with each of
//	    -latency-sizes pods already there (default 1k, 10k and 100k; empty
//	    skips it), spread over switches of at most -latency-switch-ports
//	    pods: a pod created, a VM started and stopped, a migration started,
//	    -latency-rounds times each (-latency-full-rounds with full passes),
//	    -latency-gap apart on average, with incremental passes under each
//	    -latency-churn rate of background writes (default quiet, 10 and
//	    100 a second), and with full passes, quiet; each size in a child
//	    process of its own. -latency-only measures (g) alone and replaces
//	    its section of -results;
//	(f) run mode's memory at -memory-size ports (default 100k, 0 skips
//	    it): peak and steady RSS of the loop after its cold start, and the
//	    live heap of each part of its state.
//
// Then, once (-oneshot pods, default 30000; 0 skips it):
//
//	(h) the ovn-sync binary as a whole process: `ovn-sync apply -f
//	    pods.yaml` into an empty NB, and again as a no-op over the NB it
//	    filled, -oneshot-runs times each; beside the per-object pattern
//	    writing the same ports. -oneshot-only measures (h) alone and
//	    replaces its section of -results, leaving the rest as it is;
//	    -oneshot-baseline measures a second binary, run by run in turn.
//
// Each size runs in a child process of its own, so that peaks are per
// size. The results are printed as a table and written to -results
// (Markdown), -chart and -latency-chart (SVG or PNG, by extension). In
// -results each measurement's section lies between marks of its own: a
// run replaces the sections it measured and keeps the rest of the file,
// the text written around them included.
//
// Usage:
//
//	go run ./bench/cmd/ovn-sync-bench [-sizes 10000,100000] [flags]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// options are the command's flags.
type options struct {
	sizes             []int
	results, chart    string
	perObjectBudget   time.Duration
	sample            int
	fullMonitor       bool
	fullMonitorBudget time.Duration
	fullMonitorSample int
	noopPasses        int
	skipPerObject     bool
	// maxOps and inFlight are ovn-sync's apply.Options in every pass.
	maxOps, inFlight int
	profileDir       string
	inProcess        bool
	// jsonOut, if set, receives the whole report as JSON; render, if set,
	// names such a file to render again instead of measuring.
	jsonOut, render string
	// oneShotPods is the size of (h), 0 for none; oneShotOnly measures
	// (h) alone. binary is the ovn-sync binary (h) runs, built from
	// ./cmd/ovn-sync when empty; baseline, if set, is measured beside it.
	oneShotPods, oneShotRuns int
	oneShotOnly              bool
	binary, baseline         string
	// latencySizes are the sizes of (g), none to skip it;
	// latencyRounds the events of each kind per size with incremental
	// passes, latencyFullRounds with full ones;
	// latencyChurn the rates of background writes incremental passes are
	// measured under (0: quiet), latencyPodChurn the rate of pod
	// creations and deletions they are also measured under (0: not);
	// latencySwitchPorts the most existing pods
	// on one switch. latencyOnly measures (g) alone.
	latencySizes       []int
	latencyRounds      int
	latencyFullRounds  int
	latencyGap         time.Duration
	latencyChurn       []int
	latencyPodChurn    int
	latencySwitchPorts int
	latencyOnly        bool
	latencyChart       string
	// memorySize is the size of run mode's memory measurement, 0 for none;
	// memoryIdle how long the loop idles before its steady RSS is read.
	memorySize int
	memoryIdle time.Duration
	// childOut, set only by the parent, makes this process a child that
	// measures its one size and writes the sizeResult there as JSON; with
	// childLatency or childMemory, (g) or run mode's memory at that size.
	childOut                  string
	childLatency, childMemory int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("ovn-sync-bench", flag.ContinueOnError)
	sizes := fs.String("sizes", "10000,100000", "comma-separated cluster sizes, in ports")
	fs.StringVar(&o.results, "results", filepath.Join("bench", "RESULTS.md"), "Markdown `file` to write the results to; empty: none")
	fs.StringVar(&o.chart, "chart", filepath.Join("bench", "results.svg"), "chart `file` (.svg or .png); empty: none")
	fs.DurationVar(&o.perObjectBudget, "per-object-budget", 10*time.Minute, "time the per-object pattern may run from an empty NB, per size, before it is sampled")
	fs.IntVar(&o.sample, "sample", 10000, "`ports` the per-object pattern writes at the top when sampled")
	fs.BoolVar(&o.fullMonitor, "full-monitor", true, "also run the per-object pattern with a client monitoring Logical_Switch.ports")
	fs.DurationVar(&o.fullMonitorBudget, "full-monitor-budget", 2*time.Minute, "-per-object-budget for the full-monitor client")
	fs.IntVar(&o.fullMonitorSample, "full-monitor-sample", 1000, "-sample for the full-monitor client")
	fs.BoolVar(&o.skipPerObject, "skip-per-object", false, "measure ovn-sync alone, not the per-object pattern, to iterate quickly")
	fs.IntVar(&o.maxOps, "max-ops-per-txn", maxOpsPerTxn, "ovn-sync's apply.Options.MaxOpsPerTxn")
	fs.IntVar(&o.inFlight, "in-flight", apply.DefaultInFlight, "ovn-sync's apply.Options.InFlight")
	fs.IntVar(&o.noopPasses, "noop-passes", 5, "no-op passes to run (at least 2: the first converts every row)")
	fs.StringVar(&o.profileDir, "profile", "", "write CPU profiles of the cold, no-op and churn phases and a heap profile to this `directory`")
	fs.BoolVar(&o.inProcess, "in-process", false, "measure every size in this process (peak RSS is then not per size)")
	fs.StringVar(&o.jsonOut, "json", "", "also write the raw results to this JSON `file`")
	fs.StringVar(&o.render, "render", "", "measure nothing: print and write the report of a JSON `file` written by -json")
	fs.IntVar(&o.oneShotPods, "oneshot", 30000, "`pods` of the whole-process one-shot measurement (h); 0 skips it")
	fs.IntVar(&o.oneShotRuns, "oneshot-runs", 3, "runs of (h)'s apply and no-op re-apply; the median is reported")
	fs.BoolVar(&o.oneShotOnly, "oneshot-only", false, "measure (h) alone and replace its section of -results")
	fs.StringVar(&o.binary, "ovn-sync", "", "ovn-sync `binary` (h) runs; empty: go build ./cmd/ovn-sync")
	fs.StringVar(&o.baseline, "oneshot-baseline", "", "another ovn-sync `binary` to measure in (h) beside the first, e.g. built from an older commit")
	latencySizes := fs.String("latency-sizes", "1000,10000,100000", "comma-separated existing pods of the event latency measurement (g); empty skips it")
	fs.IntVar(&o.latencyRounds, "latency-rounds", 200, "events of each kind (g) times per size with incremental passes")
	fs.IntVar(&o.latencyFullRounds, "latency-full-rounds", 20, "events of each kind (g) times per size with full passes (each a second or more at 100k)")
	fs.DurationVar(&o.latencyGap, "latency-gap", 50*time.Millisecond, "mean pause between two events of (g), drawn evenly from 0.5 to 1.5 times it, so that background writes fall between and during events")
	latencyChurn := fs.String("latency-churn", "0,10,100", "comma-separated rates (writes a second) of background writes that change nothing read, under which (g) measures incremental passes; 0 is quiet")
	fs.IntVar(&o.latencyPodChurn, "latency-pod-churn", 50, "pod creations and deletions a second under which (g) also measures incremental passes, and the NB alone under the writes they make; 0 skips it")
	fs.IntVar(&o.latencySwitchPorts, "latency-switch-ports", 25000, "the most existing pods (g) puts on one switch: they spread over the default switch and kube-ovn Subnets, two switches at least")
	fs.BoolVar(&o.latencyOnly, "latency-only", false, "measure (g) alone and replace its section of -results")
	fs.StringVar(&o.latencyChart, "latency-chart", filepath.Join("bench", "latency.svg"), "chart `file` of (g) (.svg or .png); empty: none")
	fs.IntVar(&o.memorySize, "memory-size", 100000, "`ports` of run mode's memory measurement; 0 skips it")
	fs.DurationVar(&o.memoryIdle, "memory-idle", 30*time.Second, "how long run mode idles before its steady RSS is read")
	fs.StringVar(&o.childOut, "child-out", "", "internal: measure the one size and write JSON to this file")
	fs.IntVar(&o.childLatency, "child-latency", 0, "internal: with -child-out, measure (g) at this size")
	fs.IntVar(&o.childMemory, "child-memory", 0, "internal: with -child-out, measure run mode's memory at this size")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if o.sizes, err = intList("-sizes", *sizes, 10, "a size of at least 10 ports"); err != nil {
		return o, err
	}
	if strings.TrimSpace(*latencySizes) != "" {
		if o.latencySizes, err = intList("-latency-sizes", *latencySizes, 1, "a positive number of pods"); err != nil {
			return o, err
		}
	}
	if o.latencyChurn, err = intList("-latency-churn", *latencyChurn, 0, "a rate of writes a second"); err != nil {
		return o, err
	}
	return o, o.check()
}

// intList parses the comma-separated numbers of flag name, each at least
// least; what says what one is.
func intList(name, list string, least int, what string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < least {
			return nil, fmt.Errorf("%s: %q is not %s", name, s, what)
		}
		out = append(out, n)
	}
	return out, nil
}

// check reports flags that do not go together.
func (o options) check() error {
	if o.latencySwitchPorts < 1 {
		return errors.New("-latency-switch-ports must be at least 1")
	}
	if o.latencyOnly && len(o.latencySizes) == 0 {
		return errors.New("-latency-only needs -latency-sizes")
	}
	if o.latencyOnly && o.oneShotOnly {
		return errors.New("-latency-only and -oneshot-only each measure one section: give one")
	}
	if o.latencyRounds < 1 || o.latencyFullRounds < 1 {
		return errors.New("-latency-rounds and -latency-full-rounds must be at least 1")
	}
	if o.oneShotOnly && o.oneShotPods <= 0 {
		return errors.New("-oneshot-only needs -oneshot above 0")
	}
	if o.childOut != "" && o.childLatency == 0 && o.childMemory == 0 && len(o.sizes) != 1 {
		return errors.New("-child-out takes exactly one size")
	}
	return nil
}

// childArgs are the flags a child measuring size gets.
func (o options) childArgs(size int) []string {
	return []string{
		"-sizes", strconv.Itoa(size),
		"-per-object-budget", o.perObjectBudget.String(), "-sample", strconv.Itoa(o.sample),
		"-full-monitor=" + strconv.FormatBool(o.fullMonitor),
		"-full-monitor-budget", o.fullMonitorBudget.String(), "-full-monitor-sample", strconv.Itoa(o.fullMonitorSample),
		"-noop-passes", strconv.Itoa(o.noopPasses), "-profile", o.profileDir,
		"-skip-per-object=" + strconv.FormatBool(o.skipPerObject),
		"-max-ops-per-txn", strconv.Itoa(o.maxOps), "-in-flight", strconv.Itoa(o.inFlight),
	}
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ovn-sync-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case opts.childOut != "" && opts.childLatency > 0:
		err = runLatencyChild(ctx, opts)
	case opts.childOut != "" && opts.childMemory > 0:
		err = runMemoryChild(ctx, opts)
	case opts.childOut != "":
		err = runChild(ctx, opts)
	case opts.render != "":
		err = render(opts)
	default:
		err = run(ctx, opts, "go run ./bench/cmd/ovn-sync-bench "+strings.Join(os.Args[1:], " "))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ovn-sync-bench:", err)
		os.Exit(1)
	}
}

// run measures every size, prints the table and writes the report files.
// command is the command line recorded in the report.
func run(ctx context.Context, opts options, command string) error {
	if err := nbtest.Available(); err != nil {
		return err
	}
	if opts.profileDir != "" {
		if err := os.MkdirAll(opts.profileDir, 0o755); err != nil {
			return err
		}
	}
	rep := report{Command: strings.TrimSpace(command), Machine: machineInfo(ctx), Date: time.Now().UTC(), Profiled: opts.profileDir != "", LoadBefore: loadAverage(),
		MaxOpsPerTxn: opts.maxOps, InFlight: opts.inFlight}
	alone := opts.oneShotOnly || opts.latencyOnly // one section measured
	for _, size := range opts.sizes {
		if alone {
			break
		}
		r, err := measureOne(ctx, opts, size)
		if err != nil {
			return fmt.Errorf("size %d: %w", size, err)
		}
		rep.Results = append(rep.Results, r)
		logf("%d: done: cold %s, per-object %s, no-op %s", size, seconds(r.Cold.Wall), seconds(r.PerObject.Estimate), millis(r.Noop.steady().Wall))
	}
	for _, size := range opts.latencySizes {
		if opts.oneShotOnly {
			break
		}
		rs, err := measureLatency(ctx, opts, size)
		if err != nil {
			return fmt.Errorf("(g) at %d: %w", size, err)
		}
		rep.Latency = append(rep.Latency, rs...)
	}
	if opts.memorySize > 0 && !alone {
		r, err := measureRunMemory(ctx, opts, opts.memorySize)
		if err != nil {
			return fmt.Errorf("run mode's memory at %d: %w", opts.memorySize, err)
		}
		rep.RunMemory = r
	}
	if opts.oneShotPods > 0 && !opts.latencyOnly {
		r, err := measureOneShot(ctx, opts)
		if err != nil {
			return fmt.Errorf("one-shot (h): %w", err)
		}
		rep.OneShot = r
		logf("(h): done: apply %s, no-op re-apply %s, per-object %s", seconds(median(r.Cold).Wall), seconds(median(r.Noop).Wall), seconds(r.PerObject.Estimate))
	}
	rep.LoadAfter = loadAverage()
	if opts.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(opts.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	return rep.write(opts)
}

// render prints and writes the report of a run saved with -json.
func render(opts options) error {
	b, err := os.ReadFile(opts.render)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", opts.render, err)
	}
	return rep.write(opts)
}

// write prints the table, writes the sections it measured into the
// Markdown file (keeping the rest of it) and writes the charts.
func (rep report) write(opts options) error {
	fmt.Print(rep.text())
	if opts.results != "" {
		old, err := os.ReadFile(opts.results)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		doc := rep.document(string(old), opts.chart, opts.latencyChart, opts.results)
		if err := os.WriteFile(opts.results, []byte(doc), 0o644); err != nil {
			return err
		}
	}
	if opts.chart != "" && len(rep.Results) > 0 {
		if err := writeChart(opts.chart, rep.Results); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	if opts.latencyChart != "" && len(rep.Latency) > 0 {
		if err := writeLatencyChart(opts.latencyChart, rep.Latency); err != nil {
			return fmt.Errorf("latency chart: %w", err)
		}
	}
	return nil
}

// measureOne measures one size, in a child process unless opts.inProcess.
func measureOne(ctx context.Context, opts options, size int) (sizeResult, error) {
	if opts.inProcess {
		return measureSize(ctx, opts, size)
	}
	var r sizeResult
	err := inChild(ctx, opts.childArgs(size), &r)
	return r, err
}

// runChild measures the one size of opts and writes its result.
func runChild(ctx context.Context, opts options) error {
	r, err := measureSize(ctx, opts, opts.sizes[0])
	if err != nil {
		return err
	}
	return writeJSON(opts.childOut, r)
}

// logf reports progress on stderr, one line per step.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
