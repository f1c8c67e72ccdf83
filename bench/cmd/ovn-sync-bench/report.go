package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// report is one run's results and where they were obtained.
type report struct {
	Command  string
	Machine  machine
	Date     time.Time
	Profiled bool // timings include the CPU profiler's overhead
	// MaxOpsPerTxn and InFlight are the apply.Options of ovn-sync's passes
	// (zero in reports from before they were recorded: 1000 and 1).
	MaxOpsPerTxn, InFlight int
	Results                []sizeResult
	// Latency is measurement (g), each size and kind of pass; RunMemory
	// is run mode's memory, if it ran.
	Latency   []latencyResult `json:",omitempty"`
	RunMemory *runMemResult   `json:",omitempty"`
	// OneShot is measurement (h), if it ran.
	OneShot *oneShotResult `json:",omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg at the start and the end
	// of the run: other work on the host inflates wall times.
	LoadBefore, LoadAfter string
}

// machine describes the host the run measured.
type machine struct {
	CPUs      int
	CPU       string
	Memory    string
	Kernel    string
	Go        string
	OVN       string
	OVSDB     string
	GOMAXPROC int
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	f := strings.Fields(readOr("/proc/loadavg", "? ? ?"))
	return strings.Join(f[:min(3, len(f))], " ")
}

// machineInfo gathers the host's description; what cannot be read is left "?".
func machineInfo(ctx context.Context) machine {
	return machine{
		CPUs:      runtime.NumCPU(),
		CPU:       procField("/proc/cpuinfo", "model name"),
		Memory:    procField("/proc/meminfo", "MemTotal"),
		Kernel:    strings.TrimSpace(readOr("/proc/sys/kernel/osrelease", "?")),
		Go:        runtime.Version(),
		OVN:       firstLine(ctx, "ovn-nbctl", "--version"),
		OVSDB:     firstLine(ctx, "ovsdb-server", "--version"),
		GOMAXPROC: runtime.GOMAXPROCS(0),
	}
}

func readOr(path, def string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	return string(b)
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// firstLine runs a command and returns the first line of its output.
func firstLine(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// rows is the results table: a header row, then one row per figure with
// one column per size.
func (rep report) rows() [][]string {
	header := []string{"measurement"}
	for _, r := range rep.Results {
		header = append(header, fmt.Sprintf("N = %d", r.Size))
	}
	rows := [][]string{header}
	add := func(label string, cell func(r sizeResult) string) {
		row := []string{label}
		for _, r := range rep.Results {
			row = append(row, cell(r))
		}
		rows = append(rows, row)
	}
	add("ports (owners, switches)", func(r sizeResult) string {
		return fmt.Sprintf("%d (%d, %d)", r.Ports, r.Owners, r.Switches)
	})
	add("(a) ovn-sync cold start, wall", func(r sizeResult) string { return seconds(r.Cold.Wall) })
	add("    dial / build / compute / apply", func(r sizeResult) string {
		c := r.Cold
		return fmt.Sprintf("%s / %s / %s / %s", millis(c.Dial), millis(c.Build), millis(c.Compute), seconds(c.Apply))
	})
	add("    transactions (NB file records)", func(r sizeResult) string { return fmt.Sprintf("%d (%d)", r.Cold.Txns, r.Cold.Commits) })
	add("    client CPU", func(r sizeResult) string { return seconds(r.Cold.ClientCPU) })
	add("(e) ovsdb-server CPU over (a)", func(r sizeResult) string { return seconds(r.Cold.ServerCPU) })
	add("    ovn-sync wall / server CPU", func(r sizeResult) string { return ratio(r.Cold.Wall, r.Cold.ServerCPU) })
	add("(b) per-object, 1 txn/port", func(r sizeResult) string { return perObjectCell(r.PerObject) })
	add("    per-object / ovn-sync", func(r sizeResult) string { return ratio(r.PerObject.Estimate, r.Cold.Wall) })
	add("    per port; server CPU per port", func(r sizeResult) string { return perPortCell(r.PerObject) })
	if rep.anyFull() {
		add("(b) per-object, Logical_Switch.ports monitored", func(r sizeResult) string {
			if r.PerObjectFull == nil {
				return "-"
			}
			return perObjectCell(*r.PerObjectFull)
		})
		add("    per-object (ports monitored) / ovn-sync", func(r sizeResult) string {
			if r.PerObjectFull == nil {
				return "-"
			}
			return ratio(r.PerObjectFull.Estimate, r.Cold.Wall)
		})
	}
	add("(c) no-op pass, warm cache (median)", func(r sizeResult) string { return millis(r.Noop.steady().Wall) })
	add("    state / build / compute / apply", func(r sizeResult) string {
		p := r.Noop.steady()
		return fmt.Sprintf("%s / %s / %s / %s", millis(p.State), millis(p.Build), millis(p.Compute), millis(p.Apply))
	})
	add("    first pass after the cold start (builds)", func(r sizeResult) string {
		p := r.Noop.first()
		return fmt.Sprintf("%s (build %s)", millis(p.Wall), millis(p.Build))
	})
	add("    transactions (NB file records)", func(r sizeResult) string {
		txns, changes := 0, 0
		for _, p := range r.Noop.Passes {
			txns += p.Txns
			changes += p.Plan.Add + p.Plan.Change + p.Plan.Destroy
		}
		return fmt.Sprintf("%d (%d) in %d passes, %d changes", txns, r.Noop.Commits, len(r.Noop.Passes), changes)
	})
	add("(d) 1% churn pass", func(r sizeResult) string { return millis(r.Churn.Wall) })
	add("    inputs: deleted / added / moved / static IP", func(r sizeResult) string {
		c := r.Churn.Inputs
		return fmt.Sprintf("%d / %d / %d / %d", c.Deleted, c.Added, c.Moved, c.StaticIP)
	})
	add("    plan; transactions (NB file records)", func(r sizeResult) string {
		p := r.Churn.Plan
		return fmt.Sprintf("+%d ~%d -%d; %d (%d)", p.Add, p.Change, p.Destroy, r.Churn.Txns, r.Churn.Commits)
	})
	add("    state / build / compute / apply", func(r sizeResult) string {
		p := r.Churn.pass
		return fmt.Sprintf("%s / %s / %s / %s", millis(p.State), millis(p.Build), millis(p.Compute), millis(p.Apply))
	})
	add("(f) client peak RSS (VmHWM)", func(r sizeResult) string { return megabytes(r.Mem.PeakRSS) })
	add("    Go heap per port after (a)", func(r sizeResult) string {
		return fmt.Sprintf("%s (inputs %s)", perPortBytes(r.Mem.HeapCold, r.Ports), perPortBytes(r.Mem.HeapInputs, r.Ports))
	})
	return rows
}

func (rep report) anyFull() bool {
	for _, r := range rep.Results {
		if r.PerObjectFull != nil {
			return true
		}
	}
	return false
}

func perObjectCell(p perObjectResult) string {
	if p.Complete {
		return seconds(p.Estimate) + " measured"
	}
	return fmt.Sprintf("%s extrapolated (%s-%s)", seconds(p.Estimate), seconds(p.Low), seconds(p.High))
}

func perPortCell(p perObjectResult) string {
	n := time.Duration(max(p.Measured+p.Sampled, 1))
	return fmt.Sprintf("%s; %s", millis(p.perPort()), millis(p.ServerCPU/n))
}

// text renders the table for a terminal, followed by how each
// per-object figure was obtained.
func (rep report) text() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, row := range rep.rows() {
		if len(rep.Results) == 0 {
			break // (h) alone
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, rows := range [][][]string{rep.latencyRows(), rep.latencyRatioRows()} {
		if len(rep.Latency) == 0 {
			break
		}
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if rep.RunMemory != nil {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range rep.RunMemory.rows() {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if rep.OneShot != nil {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range rep.oneShotRows() {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	b.WriteString(rep.methods())
	if rep.Profiled {
		b.WriteString("Profiled run: timings include the CPU profiler's overhead.\n")
	}
	return b.String()
}

// methods says, per size and client, how the per-object time was obtained.
func (rep report) methods() string {
	var b strings.Builder
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "per-object at N = %d (names monitor): %s\n", r.Size, r.PerObject.method())
		if r.PerObjectFull != nil {
			fmt.Fprintf(&b, "per-object at N = %d (ports monitored): %s\n", r.Size, r.PerObjectFull.method())
		}
	}
	return b.String()
}

// markdown renders the section of RESULTS.md a full run writes, between
// fullMarks: (a)-(f) and run mode's memory. chart and results are the
// paths the chart and the Markdown file are written to, for a relative
// link.
func (rep report) markdown(chart, results string) string {
	var b strings.Builder
	b.WriteString(fullMarks.begin + "\n")
	b.WriteString("## (a)-(f) End to end at each size\n\n")
	b.WriteString("Generated by the harness in `bench/cmd/ovn-sync-bench` from one run; do not edit by hand.\n\n")
	fmt.Fprintf(&b, "```\n%s\n```\n\n", rep.Command)
	rep.writeMachine(&b)
	rep.writeTargets(&b)
	b.WriteString("## Results\n\n")
	for i, row := range rep.rows() {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(escapeCells(row), " | "))
		if i == 0 {
			fmt.Fprintf(&b, "|%s\n", strings.Repeat(" --- |", len(row)))
		}
	}
	b.WriteString("\n")
	for _, line := range strings.Split(strings.TrimSpace(rep.methods()), "\n") {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	if rep.Profiled {
		b.WriteString("- Profiled run: timings include the CPU profiler's overhead.\n")
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![time vs N](%s)\n", relLink(chart, results))
	}
	b.WriteString(strings.Replace(methodNotes, "{apply}", rep.applyOptions(), 1))
	b.WriteString(rep.memorySection())
	b.WriteString(fullMarks.end + "\n")
	return b.String()
}

// resultsTitle starts a RESULTS.md the harness writes from nothing.
const resultsTitle = "# ovn-sync benchmarks\n\n"

// document returns old, the Markdown file as it was (empty when there was
// none), with the sections this run measured put in place of theirs:
// (a)-(f) from a full run, (g) and (h) when it measured them. Everything
// else in old is kept as it is: the text written around the sections by
// hand, and the sections of measurements this run did not make.
func (rep report) document(old, chart, latencyChart, results string) string {
	doc := old
	if strings.TrimSpace(doc) == "" {
		doc = resultsTitle
	}
	if len(rep.Results) > 0 {
		doc = fullMarks.replace(doc, rep.markdown(chart, results))
	}
	if len(rep.Latency) > 0 {
		doc = latencyMarks.replace(doc, rep.latencySection(latencyChart, results))
	}
	if rep.OneShot != nil {
		doc = oneShotMarks.replace(doc, rep.oneShotSection())
	}
	return doc
}

// marks are the lines a section of RESULTS.md lies between, so that a run
// replaces the sections it measured and leaves the rest: (a)-(f) for a
// full run, (g) for -latency-only, (h) for -oneshot-only.
type marks struct{ begin, end string }

var (
	fullMarks    = marks{"<!-- (a)-(f) begin: generated by ovn-sync-bench; a full run replaces this section (and (g), (h) when it measures them); text outside the marked sections is kept -->", "<!-- (a)-(f) end -->"}
	latencyMarks = marks{"<!-- (g) begin: generated by ovn-sync-bench; a run with -latency-only replaces this section alone -->", "<!-- (g) end -->"}
	oneShotMarks = marks{"<!-- (h) begin: generated by ovn-sync-bench; a run with -oneshot-only replaces this section alone -->", "<!-- (h) end -->"}
)

// replace returns doc with its section between m's lines replaced by
// section (which carries them), or section appended when doc has none.
func (m marks) replace(doc, section string) string {
	i := strings.Index(doc, m.begin)
	j := strings.Index(doc, m.end)
	if i < 0 || j < i {
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		return doc + section
	}
	return doc[:i] + section + strings.TrimPrefix(doc[j+len(m.end):], "\n")
}

// oneShotSection renders (h) for RESULTS.md, between its markers, with its
// own command line, date and load: it may come from another run than the
// rest of the file.
func (rep report) oneShotSection() string {
	h := rep.OneShot
	var b strings.Builder
	b.WriteString(oneShotMarks.begin + "\n")
	fmt.Fprintf(&b, "## (h) Whole-process one-shot: `ovn-sync apply -f pods.yaml`, %d pods\n\n", h.Pods)
	fmt.Fprintf(&b, "```\n%s\n```\n\n", rep.Command)
	fmt.Fprintf(&b, "- date: %s; nproc %d (GOMAXPROCS %d); load average at the start: %s; at the end: %s\n\n",
		rep.Date.Format(time.RFC3339), rep.Machine.CPUs, rep.Machine.GOMAXPROC, rep.LoadBefore, rep.LoadAfter)
	cold, noop := median(h.Cold), median(h.Noop)
	speedup := float64(h.PerObject.Estimate) / float64(max(cold.Wall, 1))
	b.WriteString("| target | measured | |\n| --- | --- | --- |\n")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	fmt.Fprintf(&b, "| apply of %d pods into an empty NB ≥ 10× faster than per-object | %.1f× (%s vs %s) | %s |\n",
		h.Pods, speedup, seconds(cold.Wall), seconds(h.PerObject.Estimate), verdict(speedup >= 10))
	fmt.Fprintf(&b, "| no-op re-apply ≤ 1 s | %s | %s |\n\n", seconds(noop.Wall), verdict(noop.Wall <= time.Second))
	for i, row := range rep.oneShotRows() {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(escapeCells(row), " | "))
		if i == 0 {
			fmt.Fprintf(&b, "|%s\n", strings.Repeat(" --- |", len(row)))
		}
	}
	fmt.Fprintf(&b, "\n- per-object: %s\n", h.PerObject.method())
	b.WriteString(oneShotNotes)
	b.WriteString(oneShotMarks.end + "\n")
	return b.String()
}

// oneShotRows is the (h) table: one column for the binary of this tree
// and, if measured, one for the baseline.
func (rep report) oneShotRows() [][]string {
	h := rep.OneShot
	sides := []oneShotSide{{Label: h.Label, Cold: h.Cold, Noop: h.Noop}}
	if h.Baseline != nil {
		sides = append(sides, *h.Baseline)
	}
	header := []string{fmt.Sprintf("(h) whole process, %d pods", h.Pods)}
	for _, s := range sides {
		header = append(header, s.Label)
	}
	rows := [][]string{header}
	add := func(label string, cell func(s oneShotSide) string) {
		row := []string{label}
		for _, s := range sides {
			row = append(row, cell(s))
		}
		rows = append(rows, row)
	}
	add("ports; manifest file", func(oneShotSide) string {
		return fmt.Sprintf("%d; %.1f MB", h.Ports, float64(h.FileBytes)/(1<<20))
	})
	add(fmt.Sprintf("apply into an empty NB, wall (median of %d)", len(h.Cold)), func(s oneShotSide) string { return seconds(median(s.Cold).Wall) })
	add("    client CPU; ovsdb-server CPU; client peak RSS", func(s oneShotSide) string {
		c := median(s.Cold)
		return fmt.Sprintf("%s; %s; %s", seconds(c.CPU), seconds(c.ServerCPU), megabytes(uint64(c.MaxRSS)))
	})
	add("    NB file records", func(s oneShotSide) string { return fmt.Sprint(median(s.Cold).Commits) })
	add("    per-object / apply", func(s oneShotSide) string { return ratio(h.PerObject.Estimate, median(s.Cold).Wall) })
	add(fmt.Sprintf("no-op re-apply, wall (median of %d)", len(h.Noop)), func(s oneShotSide) string { return seconds(median(s.Noop).Wall) })
	add("    client CPU; client peak RSS", func(s oneShotSide) string {
		c := median(s.Noop)
		return fmt.Sprintf("%s; %s", seconds(c.CPU), megabytes(uint64(c.MaxRSS)))
	})
	add("    NB file records", func(s oneShotSide) string {
		n := 0
		for _, r := range s.Noop {
			n += r.Commits
		}
		return fmt.Sprintf("%d in %d runs", n, len(s.Noop))
	})
	add("every run, apply / no-op", func(s oneShotSide) string {
		return walls(s.Cold) + " / " + walls(s.Noop)
	})
	if h.Baseline != nil {
		add("this tree / baseline: apply; no-op", func(s oneShotSide) string {
			return fmt.Sprintf("%s; %s", ratio(median(s.Cold).Wall, median(h.Baseline.Cold).Wall), ratio(median(s.Noop).Wall, median(h.Baseline.Noop).Wall))
		})
	}
	add("per-object, 1 txn/port, same ports", func(oneShotSide) string { return perObjectCell(h.PerObject) })
	return rows
}

// walls lists the wall times of runs, in the order they ran.
func walls(runs []processRun) string {
	var s []string
	for _, r := range runs {
		s = append(s, fmt.Sprintf("%.2f", r.Wall.Seconds()))
	}
	return strings.Join(s, ", ") + " s"
}

// oneShotNotes explains (h).
const oneShotNotes = `
- The file is multi-document YAML written by sigs.k8s.io/yaml, one Deployment's running pod per document as
  ` + "`kubectl get pod -o yaml`" + ` shows it without managed fields (labels, owner, one container with a port
  and requests, a condition), spread over 97 namespaces and 300 nodes.
- Apply: the binary runs as a child process, ` + "`ovn-sync apply -f pods.yaml --nb unix:… -o json`" + `, with its
  defaults, against a fresh standalone ovsdb-server; wall time is from starting the process until it
  exits. No-op re-apply: the same command again over the NB it filled, which must commit nothing (the NB
  file's records are counted). Each run of the apply has a server of its own; the runs of each binary
  alternate, so that load on the host falls on both alike.
- Per-object: the ports Build gives for the same file with the binary's default network, written one
  transaction each, as in (b), in the same run.
`

func escapeCells(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}

func (rep report) writeMachine(b *strings.Builder) {
	m := rep.Machine
	fmt.Fprintf(b, "## Machine\n\n")
	fmt.Fprintf(b, "- date: %s\n", rep.Date.Format(time.RFC3339))
	fmt.Fprintf(b, "- nproc: %d (GOMAXPROCS %d); CPU: %s; memory: %s; kernel %s\n", m.CPUs, m.GOMAXPROC, m.CPU, m.Memory, m.Kernel)
	fmt.Fprintf(b, "- Go: %s\n", m.Go)
	fmt.Fprintf(b, "- OVN: %s; %s\n", m.OVN, m.OVSDB)
	fmt.Fprintf(b, "- load average (1, 5, 15 min) at the start: %s; at the end: %s\n\n", rep.LoadBefore, rep.LoadAfter)
}

// writeTargets quotes each target with its figure at the largest size of
// the run.
func (rep report) writeTargets(b *strings.Builder) {
	if len(rep.Results) == 0 {
		return
	}
	r := rep.Results[len(rep.Results)-1]
	fmt.Fprintf(b, "## Targets (stated at 100k ports; figures at N = %d unless the row says)\n\n", r.Size)
	b.WriteString("| target | measured | |\n| --- | --- | --- |\n")
	target := func(name, got string, ok bool) {
		verdict := "met"
		if !ok {
			verdict = "**missed**"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, got, verdict)
	}
	speedup := float64(r.PerObject.Estimate) / float64(r.Cold.Wall)
	target("cold start ≥ 10× faster than per-object", fmt.Sprintf("%.1f× (%s vs %s)", speedup, seconds(r.Cold.Wall), seconds(r.PerObject.Estimate)), speedup >= 10)
	// A server CPU of 0 (under one clock tick) makes no ratio: not met.
	floorOK := r.Cold.ServerCPU > 0 && float64(r.Cold.Wall)/float64(r.Cold.ServerCPU) <= 1.5
	target("cold start within 1.5× of ovsdb-server CPU", fmt.Sprintf("%s (%s vs %s)", ratio(r.Cold.Wall, r.Cold.ServerCPU), seconds(r.Cold.Wall), seconds(r.Cold.ServerCPU)), floorOK)
	noop := r.Noop.steady()
	txns := 0
	for _, p := range r.Noop.Passes {
		txns += p.Txns
	}
	target("no-op pass: zero transactions", fmt.Sprintf("%d sent, NB file +%d records", txns, r.Noop.Commits), txns == 0 && r.Noop.Commits == 0)
	target("no-op pass ≤ 50 ms", millis(noop.Wall), noop.Wall <= 50*time.Millisecond)
	target("client RSS ≤ 300 MB, (f) cold start", megabytes(r.Mem.PeakRSS), r.Mem.PeakRSS <= 300<<20)
	if m := rep.RunMemory; m != nil {
		target(fmt.Sprintf("client RSS ≤ 300 MB, run mode at %d ports", m.Ports),
			fmt.Sprintf("%s peak (VmHWM, cold start); %s steady (VmRSS), %s once freed pages are returned", megabytes(m.PeakRSS), megabytes(m.SteadyRSS), megabytes(m.FreedRSS)), m.PeakRSS <= 300<<20)
	}
	b.WriteString("\n")
}

// applyOptions describes the apply.Options of ovn-sync's passes.
func (rep report) applyOptions() string {
	ops, inFlight := cmp.Or(rep.MaxOpsPerTxn, 1000), cmp.Or(rep.InFlight, 1)
	return fmt.Sprintf("%d operations per transaction, up to %d in flight", ops, inFlight)
}

// methodNotes explains, once, what each figure is; {apply} stands for
// applyOptions.
const methodNotes = `
## Method

- Every measurement runs against its own fresh standalone ovsdb-server (database created with
  ` + "`ovsdb-tool create`" + ` from /usr/share/ovn/ovn-nb.ovsschema, unix socket). Each size runs in a child
  process of its own, so peak RSS is per size.
- (a) Cold start: ` + "`observed.Dial`" + ` on the empty NB, ` + "`desired.Build`" + `, ` + "`diff.Compute`" + `, ` + "`apply.Apply`" + ` with
  {apply}; wall time from the dial until the last transaction's reply.
- (b) Per-object: the same desired ports (addresses computed in advance, so the per-object side's IPAM
  is free), in name order, one transaction each (insert the Logical_Switch_Port and mutate its switch's
  ports, built with libovsdb's model API), waiting for each reply, through a client monitoring the same
  columns as ovn-sync's (Logical_Switch without ports); the second row monitors Logical_Switch.ports too.
  When the pattern outlasts its budget from an empty NB, ovn-sync preloads all but the last sample of
  ports, the pattern writes those, and the preloaded range is interpolated linearly between the per-port
  cost at its two ends; the range given bounds that part by the cheaper and the dearer end.
- (c) No-op: full passes (` + "`State`" + `, ` + "`Build`" + `, ` + "`Compute`" + `, ` + "`Apply`" + ` of the empty plan) over the warm cache; the
  first pass after the cold start converts every cached row and builds (the NB changed), and is shown
  apart; the median is of the others. Each pass rebuilds every owner (` + "`desired.Build`" + `), as
  run mode's resync does, and diffs against the whole NB. Zero transactions is checked twice: Apply's count, and the records of the NB file (a standalone
  ovsdb-server appends one per committed transaction).
- (d) Churn: 1% of the ports' owners change (a quarter of a percent of pods deleted, as many created, half
  a percent moved to another node or given a static IP) and one pass is timed.
- (e) Server CPU: utime + stime of ovsdb-server from /proc/<pid>/stat over (a).
- (f) Peak RSS is VmHWM after (a), (c) and (d), before (b) runs; it includes the generated Kubernetes
  objects, which a deployment holds in its informer caches. Heap per port is the live heap after a GC.
`

// Formatting helpers.

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms >= 100 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func megabytes(n uint64) string { return fmt.Sprintf("%.0f MB", float64(n)/(1<<20)) }

func perPortBytes(n uint64, ports int) string {
	return fmt.Sprintf("%.2f KB", float64(n)/float64(max(ports, 1))/1024)
}
