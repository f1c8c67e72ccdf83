package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/state"
)

// latencyMode is one way of running "ovn-sync run" whose latency
// TestRunEventLatency measures.
type latencyMode struct {
	name  string
	flags []string
}

// latencyModes are incremental passes, unchecked; full passes; and
// incremental passes each checked against a full Build beside it, which
// costs what a full pass does and so is timed apart. The figures do not
// depend on OVN_SYNC_FULL_PASSES: each mode sets its own flags.
var latencyModes = []latencyMode{
	{"incremental", nil},
	{"full", []string{"--full-passes"}},
	{"verified", []string{"--verify-incremental"}},
}

// TestRunEventLatency prints run mode's latency from a pod's creation in a
// real kube-apiserver to its port in a real ovsdb-server, as another NB
// client sees it, with 50 and 1500 pods already there (or the sizes
// OVN_SYNC_LATENCY_SIZES lists), for each of latencyModes: quiet, and
// then while a backgroundChurn writes, at 10 writes a second (or
// OVN_SYNC_LATENCY_CHURN), what a busy cluster writes and ovn-sync does not
// read. It asserts that every pod gets a port with an address, that each
// process built the way it was told to, that no incremental pass differed
// from a full Build, and that the background writes caused no full build
// beyond those of the quiet phase (counted, not timed); it asserts nothing
// about time: targets live in the benchmarks, and machines are noisy.
//
// The modes run one after the other, not side by side: run mode has no
// namespace filter, so two processes on one API server would both handle
// every pod, and the full one's builds would take the CPU from the
// incremental one. Each (size, mode) gets a fresh NB and process on the
// same API server and the same background pods; the pods it times are
// deleted once it has stopped, so the next one starts from the same
// background.
func TestRunEventLatency(t *testing.T) {
	sizes, rate := latencySizes(t), latencyChurnRate(t)
	begin := time.Now()
	e := startEnv(t, envOptions{Namespaces: []string{"lat"}})
	t.Logf("API server and NB up in %s", time.Since(begin).Round(time.Millisecond))
	pods := e.k.Kube.CoreV1().Pods("lat")
	churn := newBackgroundChurn(t, e.k, "lat")
	const timed = 40
	type row struct {
		size int
		mode string
		latencyResult
	}
	var rows []row
	have := 0
	for _, size := range sizes {
		start := time.Now()
		concurrently(t, have, size, func(i int) error {
			_, err := pods.Create(context.Background(), latencyPod(backgroundPod(i), i), metav1.CreateOptions{})
			return err
		})
		t.Logf("%d background pods created in %s", size-have, time.Since(start).Round(time.Millisecond))
		have = size
		for _, m := range latencyModes {
			t.Run(fmt.Sprintf("existing=%d/%s", size, m.name), func(t *testing.T) {
				rows = append(rows, row{size, m.name, measureLatency(e.withFreshNB(t), pods, size, timed, m, churn, rate)})
			})
		}
	}

	// Percentiles by nearest rank: with 40 samples p99 is the slowest.
	pct := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	var b strings.Builder
	fmt.Fprintf(&b, "event latency, pod create to port in the NB (%d pods each), quiet and with %g writes/s of nothing read in the background:\n", timed, rate)
	fmt.Fprintf(&b, "%-19s %-23s | %-23s | %-11s | %-16s\n", "", "quiet", "churn", "full builds", "churn")
	fmt.Fprintf(&b, "%6s  %-11s %7s %7s %7s | %7s %7s %7s | %5s %5s | %7s %8s  %s\n", "size", "mode",
		"p50 ms", "p90 ms", "p99 ms", "p50 ms", "p90 ms", "p99 ms", "quiet", "churn", "dropped", "writes/s", "full/incremental p50, p99 (quiet)")
	for _, r := range rows {
		fmt.Fprintf(&b, "%6d  %-11s %7.1f %7.1f %7.1f | %7.1f %7.1f %7.1f | %5g %5g | %7g %8.1f", r.size, r.mode,
			pct(r.quiet, 0.5), pct(r.quiet, 0.9), pct(r.quiet, 0.99), pct(r.churn, 0.5), pct(r.churn, 0.9), pct(r.churn, 0.99),
			r.full[0], r.full[1], r.dropped[1], r.rate)
		i := slices.IndexFunc(rows, func(o row) bool { return o.size == r.size && o.mode == "incremental" })
		if r.mode == "full" && i >= 0 {
			inc := rows[i].quiet
			fmt.Fprintf(&b, "  %.1fx, %.1fx", pct(r.quiet, 0.5)/pct(inc, 0.5), pct(r.quiet, 0.99)/pct(inc, 0.99))
		}
		b.WriteString("\n")
	}
	b.WriteString("full builds: with --full-passes, every pass; dropped: updates dropped as changing nothing read\n")
	t.Logf("%swhole test: %s", b.String(), time.Since(begin).Round(time.Millisecond))
}

// latencySizes are the numbers of pods there before any is timed, in
// increasing order: 50 and 1500, or those OVN_SYNC_LATENCY_SIZES lists
// (comma-separated, e.g. 1000,20000).
func latencySizes(t *testing.T) []int {
	v := os.Getenv("OVN_SYNC_LATENCY_SIZES")
	if v == "" {
		return []int{50, 1500}
	}
	var sizes []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 60000 {
			t.Fatalf("OVN_SYNC_LATENCY_SIZES=%q: %q is not a number of pods from 1 to 60000", v, f)
		}
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// latencyChurnRate is how many background writes a second the churn phase
// makes: 10, or OVN_SYNC_LATENCY_CHURN.
func latencyChurnRate(t *testing.T) float64 {
	v := os.Getenv("OVN_SYNC_LATENCY_CHURN")
	if v == "" {
		return 10
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r <= 0 || r > 1000 {
		t.Fatalf("OVN_SYNC_LATENCY_CHURN=%q: want writes a second, above 0 and at most 1000", v)
	}
	return r
}

// latencyResult is what measureLatency measured of one process: the
// latencies of the quiet phase and of the churn phase, and in each phase
// (index 0 quiet, 1 churn) the full builds and the updates dropped as
// irrelevant; rate is the background writes a second the churn phase made.
type latencyResult struct {
	quiet, churn  []time.Duration
	full, dropped [2]float64
	rate          float64
}

// measureLatency starts "ovn-sync run" in mode m on e, whose NB is fresh,
// with size pods already in the API, then creates n pods one at a time, and
// n more while churn writes at rate writes a second, and returns, for each, the
// time from just before its Create call to its port's insert as another
// NB client sees it. It checks that every pod has a port with an address
// of its own, and that the background writes caused no full build the
// quiet phase had not; it stops the process and deletes the pods it
// created.
func measureLatency(e *runEnv, pods typedcorev1.PodInterface, size, n int, m latencyMode, churn *backgroundChurn, rate float64) latencyResult {
	t, nb := e.t, e.nb
	// The watcher tells of every port inserted, as it applies the update
	// the NB sent; the send never blocks libovsdb, and what piles
	// up before a measurement is drained.
	inserted := make(chan string, 4096)
	nb.WatchPorts(func(old, cur *state.Port) {
		if old == nil {
			select {
			case inserted <- cur.Name:
			default:
			}
		}
	})
	start := time.Now()
	// No resync during the run: a full pass on a timer would be counted
	// against the phase it fell in.
	run := e.runWith(runOptions{Flags: append([]string{"--leader-elect=false", "--publish=false", "--resync=1h"}, m.flags...), OwnPasses: true})
	owned := func() int {
		c := 0
		for _, p := range nb.State().Ports.All() {
			if strings.HasSuffix(p.Name, ".lat") && p.Owned() {
				c++
			}
		}
		return c
	}
	looptest.WaitFor(t, max(30*time.Second, time.Duration(size)*3*time.Millisecond), "ports for the background pods", func() error {
		if c := owned(); c != size {
			return fmt.Errorf("%d ports, want %d", c, size)
		}
		return nil
	})
	t.Logf("%d ports in the NB %s after start", size, time.Since(start).Round(time.Millisecond))

	waitInsert := func(port string) {
		timeout := time.After(15 * time.Second)
		for {
			select {
			case got := <-inserted:
				if got == port {
					return
				}
			case <-timeout:
				t.Fatalf("port %s not in the NB within 15s", port)
			}
		}
	}
	// Each event comes a random gap below one background write's
	// interval after the last one's port, the same gaps in both phases,
	// so that the events fall anywhere between the writes and the phase
	// spans some of them.
	var names []string
	events := func(phase string) []time.Duration {
		gaps := rand.New(rand.NewPCG(uint64(size), 1))
		lat := make([]time.Duration, n)
		for i := range n {
			time.Sleep(time.Duration(gaps.Int64N(int64(float64(time.Second) / rate))))
			name := fmt.Sprintf("t-%s-%d-%s-%02d", m.name, size, phase, i)
			names = append(names, name)
			for len(inserted) > 0 {
				<-inserted
			}
			t0 := time.Now()
			if _, err := pods.Create(context.Background(), latencyPod(name, i), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInsert(name + ".lat")
			lat[i] = time.Since(t0)
		}
		return lat
	}
	var res latencyResult
	before := run.settle(t, m, 1)
	res.quiet = events("quiet")
	quiet := run.settle(t, m, before.passes+float64(n))
	stop := churn.start(t, rate)
	res.churn = events("churn")
	wrote := stop()
	res.rate = float64(wrote.total()) / wrote.took.Seconds()
	run.waitHandled(t, quiet, wrote)
	after := run.settle(t, m, quiet.passes+float64(n))
	res.full = [2]float64{quiet.full - before.full, after.full - quiet.full}
	res.dropped = [2]float64{quiet.dropped - before.dropped, after.dropped - quiet.dropped}
	t.Logf("churn phase: %d writes in %s (%v), %v dropped as irrelevant", wrote.total(), wrote.took.Round(time.Millisecond), wrote.writes, res.dropped[1])
	// With --full-passes every pass counts, and a busy machine may split
	// or join the passes of the n events differently in the two phases;
	// a background write that made a pass would add about one each.
	slack := 0.0
	if slices.Contains(m.flags, "--full-passes") {
		slack = float64(wrote.total()) / 4
	}
	if res.full[1] > res.full[0]+slack {
		why := "every pass builds in full"
		if !slices.Contains(m.flags, "--full-passes") {
			why = "full builds by reason: " + fullReasons(quiet.body, after.body)
		}
		t.Errorf("%v full builds in the churn phase (%d background writes of nothing read), %v in the quiet phase: a write that changes nothing read should be dropped (%s)",
			res.full[1], wrote.total(), res.full[0], why)
	}

	// Every pod, in the background or timed, has a port with an address
	// no other port holds.
	st := nb.State()
	held := map[string]string{}
	check := func(pod string) {
		p := st.Ports.Get(pod + ".lat")
		if p == nil || len(p.Addresses) == 0 {
			t.Errorf("pod %s: no port with an address", pod)
			return
		}
		f := strings.Fields(p.Addresses[0])
		if len(f) < 2 {
			t.Errorf("port %s: addresses %q: no IP", p.Name, p.Addresses)
			return
		}
		if other, ok := held[f[1]]; ok {
			t.Errorf("IP %s held by %s and %s", f[1], other, p.Name)
		}
		held[f[1]] = p.Name
	}
	for i := range size {
		check(backgroundPod(i))
	}
	for _, name := range names {
		check(name)
	}
	if c := owned(); c != size+len(names) {
		t.Errorf("%d ports, want %d", c, size+len(names))
	}
	// Each process built the way it was told to: incremental passes for
	// the pods created while it ran (every pass for changes but the first
	// after start-up, which the informers cannot tell what changed yet;
	// a pass may take several pods), or none; none differed from a full
	// Build where one was made beside it.
	builds := run.metric("ovn_sync_builds_total", `kind="incremental"`)
	passes := run.metric("ovn_sync_pass_duration_seconds_count", `kind="change"`)
	if m.name == "full" {
		if builds != 0 {
			t.Errorf("%v incremental builds with --full-passes, want 0", builds)
		}
	} else if builds < 1 || builds < passes-1 {
		t.Errorf("%v incremental builds in %v passes for %d pods created, want every pass but the first after start-up", builds, passes, len(names))
	}
	if bad := run.metric("ovn_sync_incremental_mismatches_total"); bad != 0 {
		t.Errorf("ovn_sync_incremental_mismatches_total = %v, want 0", bad)
	}
	t.Logf("%v passes for changes, %.1f ms each on average, %v incremental builds", passes,
		1000*run.metric("ovn_sync_pass_duration_seconds_sum", `kind="change"`)/passes, builds)

	run.stop(syscall.SIGTERM)
	concurrently(t, 0, len(names), func(i int) error {
		return pods.Delete(context.Background(), names[i], now)
	})
	return res
}

// latencyCounters are the counters of one scrape that measureLatency
// compares across its phases.
type latencyCounters struct {
	body string
	// full is the full builds so far: ovn_sync_builds_total{kind="full"},
	// or with --full-passes (which counts no builds by kind) every pass.
	full float64
	// dropped is ovn_sync_changes_dropped_total, every kind.
	dropped float64
	// passes is ovn_sync_passes_total, every kind and result.
	passes float64
}

// settle waits until the process has counted at least want passes and
// then none for 200ms, and scrapes its metrics: a phase's counters are
// read once the passes of its events are counted (one each: an event
// waits for the last one's port) and what followed them has run.
func (p *runProc) settle(t *testing.T, m latencyMode, want float64) latencyCounters {
	t.Helper()
	var c latencyCounters
	looptest.WaitFor(t, 30*time.Second, fmt.Sprintf("%v passes, then none for 200ms", want), func() error {
		if c = p.counters(m); c.passes < want {
			return fmt.Errorf("%v passes", c.passes)
		}
		time.Sleep(200 * time.Millisecond)
		if again := p.counters(m); again.passes != c.passes {
			return fmt.Errorf("%v passes, then %v", c.passes, again.passes)
		}
		return nil
	})
	return c
}

// counters scrapes the process's metrics.
func (p *runProc) counters(m latencyMode) latencyCounters {
	p.t.Helper()
	body, err := p.get("/metrics")
	if err != nil {
		p.t.Fatal(err)
	}
	c := latencyCounters{body: body, full: sample(body, "ovn_sync_builds_total", `kind="full"`),
		dropped: sample(body, "ovn_sync_changes_dropped_total"), passes: sample(body, "ovn_sync_passes_total")}
	if slices.Contains(m.flags, "--full-passes") {
		c.full = sample(body, "ovn_sync_pass_duration_seconds_count")
	}
	return c
}

// waitHandled waits until each of the writes reached the process's
// handlers since from, dropped or told as a change: only then do the
// counters say what they caused.
func (p *runProc) waitHandled(t *testing.T, from latencyCounters, wrote churnCount) {
	t.Helper()
	for _, kind := range churnKinds {
		l := fmt.Sprintf("kind=%q", kind)
		was := sample(from.body, "ovn_sync_changes_dropped_total", l) + sample(from.body, "ovn_sync_informer_events_total", l)
		looptest.WaitFor(t, 30*time.Second, string(kind)+" writes handled", func() error {
			if n := p.metric("ovn_sync_changes_dropped_total", l) + p.metric("ovn_sync_informer_events_total", l) - was; n < float64(wrote.writes[kind]) {
				return fmt.Errorf("%v of %d", n, wrote.writes[kind])
			}
			return nil
		})
	}
}

// fullReasons lists the full builds between two scrapes by reason, e.g.
// "subnet=12".
func fullReasons(before, after string) string {
	const prefix = `ovn_sync_builds_total{kind="full",reason="`
	var out []string
	for line := range strings.Lines(after) {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		reason, _, _ := strings.Cut(rest, `"`)
		l := fmt.Sprintf("reason=%q", reason)
		if d := sample(after, "ovn_sync_builds_total", `kind="full"`, l) - sample(before, "ovn_sync_builds_total", `kind="full"`, l); d > 0 {
			out = append(out, fmt.Sprintf("%s=%g", reason, d))
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, " ")
}

// backgroundPod is the name of the i-th pod there before any is timed.
func backgroundPod(i int) string { return fmt.Sprintf("bg-%04d", i) }

// latencyPod is a plain pod on one of three nodes.
func latencyPod(name string, i int) *corev1.Pod {
	return pausePod("lat", name, fmt.Sprintf("node-%d", i%3))
}
