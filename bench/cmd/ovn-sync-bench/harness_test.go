package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// TestHarness runs the whole harness at 200 ports, in process, with the
// per-object pattern measured fully (names monitor) and extrapolated (the
// full-monitor client, given no budget), the event latency (g) at 20 and
// 200 pods (100 on a switch: two and two switches), quiet, under 20
// background writes a second and under 20 pods created or deleted a
// second, and run mode's memory at 200 ports, so that it cannot rot.
func TestHarness(t *testing.T) {
	nbtest.Require(t)
	dir := t.TempDir()
	opts := options{
		sizes:   []int{200},
		results: filepath.Join(dir, "RESULTS.md"), chart: filepath.Join(dir, "results.svg"),
		latencyChart:    filepath.Join(dir, "latency.svg"),
		perObjectBudget: time.Minute, sample: 50,
		fullMonitor: true, fullMonitorBudget: time.Nanosecond, fullMonitorSample: 50,
		noopPasses: 3, inProcess: true,
		latencySizes: []int{20, 200}, latencyRounds: 3, latencyFullRounds: 3, latencyChurn: []int{0, 20}, latencyPodChurn: 20, latencySwitchPorts: 100, latencyGap: time.Millisecond, memorySize: 200,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := measureOne(ctx, opts, 200)
	if err != nil {
		t.Fatalf("measureOne(200): %v", err)
	}

	if r.Ports < 200 || r.Cold.Plan.Add != r.Ports+r.Switches {
		t.Errorf("cold start: %d ports, plan %+v; want ≥200 ports all created", r.Ports, r.Cold.Plan)
	}
	if r.Cold.Txns == 0 || r.Cold.Commits != r.Cold.Txns {
		t.Errorf("cold start: %d transactions, NB file +%d records; want equal and > 0", r.Cold.Txns, r.Cold.Commits)
	}
	for i, p := range r.Noop.Passes {
		if p.Txns != 0 || p.Plan.Add+p.Plan.Change+p.Plan.Destroy != 0 {
			t.Errorf("no-op pass %d: %d transactions, plan %+v; want none", i, p.Txns, p.Plan)
		}
	}
	if r.Noop.Commits != 0 {
		t.Errorf("no-op passes: NB file +%d records, want 0", r.Noop.Commits)
	}
	if c := r.Churn.Plan; c.Add == 0 || c.Change == 0 || c.Destroy == 0 || r.Churn.Commits != r.Churn.Txns {
		t.Errorf("churn: plan %+v, %d transactions, NB file +%d records", c, r.Churn.Txns, r.Churn.Commits)
	}
	if p := r.PerObject; !p.Complete || p.Measured != r.Ports || p.Estimate <= 0 {
		t.Errorf("per-object (names): %+v; want all %d ports measured", p, r.Ports)
	}
	if p := r.PerObjectFull; p == nil || p.Complete || p.Sampled != 50 || p.Measured+p.Preloaded+p.Sampled != r.Ports ||
		!(p.Low <= p.Estimate && p.Estimate <= p.High) {
		t.Errorf("per-object (full monitor): %+v; want an extrapolation over %d ports", p, r.Ports)
	}
	if r.Mem.PeakRSS == 0 || r.Mem.HeapCold <= r.Mem.HeapInputs {
		t.Errorf("memory: %+v", r.Mem)
	}

	rep := report{Command: "test", Machine: machineInfo(ctx), Date: time.Now(), Results: []sizeResult{r}}
	for _, n := range opts.latencySizes {
		rs, err := measureLatency(ctx, opts, n)
		if err != nil {
			t.Fatalf("measureLatency(%d): %v", n, err)
		}
		if len(rs) != 4 {
			t.Fatalf("measureLatency(%d): %d results, want incremental quiet, under writes and under pod churn, and full", n, len(rs))
		}
		for _, l := range rs {
			for _, ev := range eventlat.Events {
				if got := l.Samples[ev]; len(got) != opts.latencyRounds || slices.Min(got) <= 0 {
					t.Errorf("(g) %s: %s latencies %v; want %d, each above 0", l.label(), ev, got, opts.latencyRounds)
				}
			}
			if l.Switches != 2 {
				t.Errorf("(g) %s: %d switches, want 2", l.label(), l.Switches)
			}
			// The NB alone is measured after the first run, quiet, and
			// after the run under pod churn, under the NB writes it makes.
			floor := l.Passes == "incremental" && l.Churn == 0
			switch f := l.NBFloor; {
			case floor != (f != nil):
				t.Errorf("(g) %s: NB floor %+v; want one after the quiet incremental run and the one under pod churn alone", l.label(), f)
			case floor && f.Churn != l.PodChurn:
				t.Errorf("(g) %s: NB floor under %d writes a second, want %d", l.label(), f.Churn, l.PodChurn)
			case l.PodChurn > 0 && (l.PodWrites < int64(l.PodChurn) || l.PodFailed != 0 || f.ChurnWrites < int64(l.PodChurn) || f.ChurnFailed != 0):
				t.Errorf("(g) %s: %d pod writes (%d failed), the NB alone %d (%d failed); want %d or more, none failed",
					l.label(), l.PodWrites, l.PodFailed, f.ChurnWrites, f.ChurnFailed, l.PodChurn)
			case floor && (len(f.Insert) != opts.latencyRounds || len(f.Update) != opts.latencyRounds || slices.Min(f.Insert) <= 0 || slices.Min(f.Update) <= 0):
				t.Errorf("(g) %s: NB floor %+v; want %d inserts and %d updates, each above 0", l.label(), f, opts.latencyRounds, opts.latencyRounds)
			}
			// Under writes, every write made is dropped unread.
			if l.Churn > 0 && (l.Writes < 4 || l.Failed != 0 || l.Dropped != float64(l.Writes)) {
				t.Errorf("(g) %s: %d writes made, %d failed (%s), %v dropped; want 4 or more made, none failed, every one dropped",
					l.label(), l.Writes, l.Failed, l.FailedErr, l.Dropped)
			}
		}
		rep.Latency = append(rep.Latency, rs...)
	}
	if rep.RunMemory, err = measureRunMemory(ctx, opts, opts.memorySize); err != nil {
		t.Fatalf("measureRunMemory: %v", err)
	}
	if m := rep.RunMemory; m.Ports < opts.memorySize || m.PeakRSS == 0 || m.SteadyRSS == 0 || m.Heap == 0 || len(m.Parts) != 4 {
		t.Errorf("run mode's memory: %+v", m)
	}

	if err := rep.write(opts); err != nil {
		t.Fatalf("write: %v", err)
	}
	md, _ := os.ReadFile(opts.results)
	for _, want := range []string{"| (a) ovn-sync cold start, wall |", "extrapolated", "## Targets", "(results.svg)",
		"## (g) Run mode's event latency", "| migration |", "200, incremental, 20 writes/s", "(g) p99 at 200 ≤ 1.5× p99 at 20, 20 background writes/s", "(latency.svg)",
		"200, incremental, 20 pods created or deleted/s", "(g) p99 at 200 under 20 pods created or deleted a second ≤ 1.2× the NB alone's", "| the NB alone, loop stopped: pod-add's write", "| the NB alone, loop stopped: a VM event's write",
		"client RSS ≤ 300 MB, run mode", "informer inputs (stores", "sum of the parts |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	for _, chart := range []string{opts.chart, opts.latencyChart} {
		if fi, err := os.Stat(chart); err != nil || fi.Size() == 0 {
			t.Errorf("chart %s: %v", chart, err)
		}
	}
}

func TestExtrapolate(t *testing.T) {
	r := perObjectResult{Measured: 100, MeasuredTime: time.Second, LastWindow: 20 * time.Millisecond,
		Preloaded: 800, Sampled: 100, SampleTime: 3 * time.Second}
	r.extrapolate()
	// 1s + 3s known; 800 ports between 20ms and 30ms per port.
	if want := 4*time.Second + 800*25*time.Millisecond; r.Estimate != want {
		t.Errorf("extrapolate: Estimate = %s, want %s", r.Estimate, want)
	}
	if r.Low != 4*time.Second+800*20*time.Millisecond || r.High != 4*time.Second+800*30*time.Millisecond {
		t.Errorf("extrapolate: range %s-%s", r.Low, r.High)
	}
}

// TestChartZero: a reading of zero (ovsdb-server's CPU under one clock tick
// for a small cold start) is drawn around, not a failure of the log scale.
func TestChartZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.svg")
	results := []sizeResult{
		{Ports: 200, Cold: coldResult{pass: pass{Wall: 30 * time.Millisecond}}, PerObject: perObjectResult{Estimate: time.Second}},
		{Ports: 2000, Cold: coldResult{pass: pass{Wall: 300 * time.Millisecond}, ServerCPU: 20 * time.Millisecond}, PerObject: perObjectResult{Estimate: 10 * time.Second}},
	}
	if err := writeChart(path, results); err != nil {
		t.Fatalf("writeChart with a zero server CPU: %v", err)
	}
	results[1].Cold.ServerCPU = 0
	if err := writeChart(path, results); err != nil {
		t.Fatalf("writeChart with every server CPU zero: %v", err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "not drawn, at 200, 2000") {
		t.Errorf("chart legend does not name the sizes left out")
	}
}

// TestOneShot runs (h) at 200 pods, the binary built from this tree
// against itself as the baseline, and checks the figures and the section
// of RESULTS.md it writes.
func TestOneShot(t *testing.T) {
	nbtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := buildBinary(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := options{oneShotPods: 200, oneShotRuns: 2, binary: bin, baseline: bin, perObjectBudget: time.Minute, sample: 50}
	r, err := measureOneShot(ctx, opts)
	if err != nil {
		t.Fatalf("measureOneShot: %v", err)
	}
	if r.Ports != 200 || r.FileBytes == 0 || len(r.Cold) != 2 || len(r.Noop) != 2 || r.Baseline == nil || len(r.Baseline.Cold) != 2 {
		t.Fatalf("one-shot: %+v", r)
	}
	for _, runs := range [][]processRun{r.Cold, r.Baseline.Cold} {
		for _, c := range runs {
			if c.Commits == 0 || c.Wall <= 0 || c.MaxRSS == 0 {
				t.Errorf("cold apply: %+v; want transactions committed, a wall time and an RSS", c)
			}
		}
	}
	for _, n := range append(r.Noop, r.Baseline.Noop...) {
		if n.Commits != 0 {
			t.Errorf("no-op re-apply: %+v; want nothing committed", n)
		}
	}
	if p := r.PerObject; !p.Complete || p.Measured != 200 {
		t.Errorf("per-object: %+v; want all 200 ports measured", p)
	}

	rep := report{Command: "test", Date: time.Now(), OneShot: r}
	section := rep.oneShotSection()
	for _, want := range []string{oneShotMarks.begin, "## (h) Whole-process one-shot", "no-op re-apply ≤ 1 s", "| per-object, 1 txn/port, same ports |", oneShotMarks.end} {
		if !strings.Contains(section, want) {
			t.Errorf("(h) section lacks %q:\n%s", want, section)
		}
	}
	doc := "# results\n\nbefore\n\n" + oneShotMarks.begin + "\nold\n" + oneShotMarks.end + "\nafter\n"
	if got, want := oneShotMarks.replace(doc, section), "# results\n\nbefore\n\n"+section+"after\n"; got != want {
		t.Errorf("marks.replace over an old section:\n%s\nwant\n%s", got, want)
	}
	if got, want := oneShotMarks.replace("# results\n", section), "# results\n\n"+section; got != want {
		t.Errorf("marks.replace without one:\n%s\nwant\n%s", got, want)
	}
}
