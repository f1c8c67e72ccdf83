package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
)

// latencySizes returns the sizes of (g) in the order measured, each once.
func (rep report) latencySizes() []int {
	var sizes []int
	for _, r := range rep.Latency {
		if !slices.Contains(sizes, r.Existing) {
			sizes = append(sizes, r.Existing)
		}
	}
	return sizes
}

// latencyChurns returns the rates of background writes incremental passes
// were measured under, in the order measured, each once.
func (rep report) latencyChurns() []int {
	var rates []int
	for _, r := range rep.Latency {
		if r.Passes == "incremental" && r.PodChurn == 0 && !slices.Contains(rates, r.Churn) {
			rates = append(rates, r.Churn)
		}
	}
	return rates
}

// latencyOf returns (g) at size for passes under churn writes a second
// and no pod churn, nil if not measured.
func (rep report) latencyOf(size int, passes string, churn int) *latencyResult {
	for i, r := range rep.Latency {
		if r.Existing == size && r.Passes == passes && r.Churn == churn && r.PodChurn == 0 {
			return &rep.Latency[i]
		}
	}
	return nil
}

// quietest is the rate full passes were measured under at size: the
// first rate of the run.
func (rep report) quietest(size int) int {
	for _, r := range rep.Latency {
		if r.Existing == size && r.Passes == "full" {
			return r.Churn
		}
	}
	return 0
}

// label names a column of (g).
func (r latencyResult) label() string {
	l := fmt.Sprintf("%d, %s", r.Existing, r.Passes)
	if r.Churn > 0 {
		l += fmt.Sprintf(", %d writes/s", r.Churn)
	}
	if r.PodChurn > 0 {
		l += fmt.Sprintf(", %d pods created or deleted/s", r.PodChurn)
	}
	return l
}

// latencyRows is the table of (g): p50 / p99 of each event kind, a column
// per size, kind of pass and rate of background writes.
func (rep report) latencyRows() [][]string {
	header := []string{"(g) event to commit, p50 / p99"}
	for _, r := range rep.Latency {
		header = append(header, r.label())
	}
	rows := [][]string{header}
	add := func(label string, cell func(r latencyResult) string) {
		row := []string{label}
		for _, r := range rep.Latency {
			row = append(row, cell(r))
		}
		rows = append(rows, row)
	}
	for _, ev := range eventlat.Events {
		add(string(ev), func(r latencyResult) string {
			return fmt.Sprintf("%s / %s", millis(r.percentile(ev, 0.5)), millis(r.percentile(ev, 0.99)))
		})
	}
	floor := func(label string, of func(f *eventlat.Floor) []time.Duration) {
		add(label, func(r latencyResult) string {
			if r.NBFloor == nil {
				return "-"
			}
			d := of(r.NBFloor)
			return fmt.Sprintf("%s / %s", millis(eventlat.Percentile(d, 0.5)), millis(eventlat.Percentile(d, 0.99)))
		})
	}
	floor("the NB alone, loop stopped: pod-add's write (a port inserted)", func(f *eventlat.Floor) []time.Duration { return f.Insert })
	floor("the NB alone, loop stopped: a VM event's write (requested-chassis)", func(f *eventlat.Floor) []time.Duration { return f.Update })
	add("events of each kind", func(r latencyResult) string { return fmt.Sprint(len(r.Samples[eventlat.PodAdd])) })
	add("switches (existing pods on each, at most)", func(r latencyResult) string {
		sw := max(r.Switches, 1)
		return fmt.Sprintf("%d (%d)", sw, (r.Existing+sw-1)/sw)
	})
	add("background writes made (failed)", func(r latencyResult) string {
		if r.PodChurn > 0 {
			return fmt.Sprintf("%d pods created or deleted (%d); the NB alone: %d (%d)", r.PodWrites, r.PodFailed, r.NBFloor.ChurnWrites, r.NBFloor.ChurnFailed)
		}
		return fmt.Sprintf("%d (%d)", r.Writes, r.Failed)
	})
	add("changes dropped unread; passes (full builds), while events ran", func(r latencyResult) string {
		return fmt.Sprintf("%.0f; %.0f (%.0f)", r.Dropped, r.PassesRun, r.FullBuilds)
	})
	add("loop's cold start (existing ports committed)", func(r latencyResult) string { return seconds(r.Ready) })
	add("load average (1 min) before / after", func(r latencyResult) string {
		return strings.Fields(r.LoadBefore + " -")[0] + " / " + strings.Fields(r.LoadAfter + " -")[0]
	})
	return rows
}

// latencyRatioRows are ratios of (g) figures measured in the same run:
// full over incremental passes at each size, and how incremental passes
// grow from the smallest size under each rate of background writes.
func (rep report) latencyRatioRows() [][]string {
	sizes := rep.latencySizes()
	if len(sizes) == 0 {
		return nil
	}
	header := []string{"(g) ratios, same run"}
	for _, n := range sizes {
		header = append(header, fmt.Sprintf("full ÷ incremental at %d, p50; p99", n))
	}
	churns := rep.latencyChurns()
	for _, c := range churns {
		for _, n := range sizes[1:] {
			header = append(header, fmt.Sprintf("incremental at %d ÷ at %d, %d writes/s, p50; p99", n, sizes[0], c))
		}
	}
	rows := [][]string{header}
	for _, ev := range eventlat.Events {
		row := []string{string(ev)}
		pair := func(a, b *latencyResult) string {
			if a == nil || b == nil {
				return "-"
			}
			return ratio(a.percentile(ev, 0.5), b.percentile(ev, 0.5)) + "; " + ratio(a.percentile(ev, 0.99), b.percentile(ev, 0.99))
		}
		for _, n := range sizes {
			q := rep.quietest(n)
			row = append(row, pair(rep.latencyOf(n, "full", q), rep.latencyOf(n, "incremental", q)))
		}
		for _, c := range churns {
			for _, n := range sizes[1:] {
				row = append(row, pair(rep.latencyOf(n, "incremental", c), rep.latencyOf(sizes[0], "incremental", c)))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// latencyTargets are the targets of (g), judged on incremental passes (run
// mode's) under each rate of background writes, at the largest size
// against the smallest (when there are two sizes or more), and under pod
// churn at the largest size against the NB alone under the same writes.
func (rep report) latencyTargets(target func(name, got string, ok bool)) {
	sizes := rep.latencySizes()
	if len(sizes) == 0 {
		return
	}
	for _, c := range rep.latencyChurns() {
		if len(sizes) < 2 {
			break
		}
		small, large := rep.latencyOf(sizes[0], "incremental", c), rep.latencyOf(sizes[len(sizes)-1], "incremental", c)
		if small == nil || large == nil {
			continue
		}
		var abs, growth []string
		absOK, growthOK := true, true
		for _, ev := range eventlat.Events {
			p99, base := large.percentile(ev, 0.99), small.percentile(ev, 0.99)
			abs = append(abs, fmt.Sprintf("%s %s", ev, millis(p99)))
			absOK = absOK && p99 <= 10*time.Millisecond
			growth = append(growth, fmt.Sprintf("%s %s (%s vs %s)", ev, ratio(p99, base), millis(p99), millis(base)))
			growthOK = growthOK && base > 0 && float64(p99) <= 1.5*float64(base)
		}
		under := "quiet"
		if c > 0 {
			under = fmt.Sprintf("%d background writes/s", c)
		}
		target(fmt.Sprintf("(g) event to commit, p99 ≤ 10 ms at %d existing, %s", large.Existing, under), strings.Join(abs, "; "), absOK)
		target(fmt.Sprintf("(g) p99 at %d ≤ 1.5× p99 at %d, %s", large.Existing, small.Existing, under), strings.Join(growth, "; "), growthOK)
	}
	for _, r := range rep.Latency {
		if r.PodChurn > 0 && r.NBFloor != nil && r.Existing == sizes[len(sizes)-1] {
			got, ok := r.overFloor()
			target(fmt.Sprintf("(g) p99 at %d under %d pods created or deleted a second ≤ 1.2× the NB alone's under the writes they make", r.Existing, r.PodChurn), got, ok)
		}
	}
}

// overFloor says how each event's p99 compares with the NB floor's p99 of
// the write it makes (pod-add's an insert, the VM events' an update), and
// whether each is within 1.2× of it.
func (r latencyResult) overFloor() (string, bool) {
	var got []string
	ok := true
	for _, ev := range eventlat.Events {
		floor := r.NBFloor.Update
		if ev == eventlat.PodAdd {
			floor = r.NBFloor.Insert
		}
		p99, base := r.percentile(ev, 0.99), eventlat.Percentile(floor, 0.99)
		got = append(got, fmt.Sprintf("%s %s (%s vs %s)", ev, ratio(p99, base), millis(p99), millis(base)))
		ok = ok && base > 0 && float64(p99) <= 1.2*float64(base)
	}
	return strings.Join(got, "; "), ok
}

// latencySection is the (g) part of RESULTS.md, between its marks, with
// its own command line, date, load and targets: it may come from another
// run than the rest of the file (-latency-only).
func (rep report) latencySection(chart, results string) string {
	if len(rep.Latency) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(latencyMarks.begin + "\n")
	b.WriteString("## (g) Run mode's event latency\n\n")
	fmt.Fprintf(&b, "```\n%s\n```\n\n", rep.Command)
	fmt.Fprintf(&b, "- date: %s; nproc %d (GOMAXPROCS %d); load average at the start: %s; at the end: %s\n\n",
		rep.Date.Format(time.RFC3339), rep.Machine.CPUs, rep.Machine.GOMAXPROC, rep.LoadBefore, rep.LoadAfter)
	b.WriteString("p50 / p99 from a Kubernetes change to its port committed in the NB, as another NB client sees it, with N pods\n")
	b.WriteString("already there (and two VMs), spread over switches OVN can bind; columns are N, the kind of pass (`incremental`\n")
	b.WriteString("is run mode, `full` is `--full-passes`) and the rate of background writes that change nothing ovn-sync reads,\n")
	b.WriteString("or of pods created and deleted, which change what it writes.\n\n")
	b.WriteString("| target | measured | |\n| --- | --- | --- |\n")
	rep.latencyTargets(func(name, got string, ok bool) {
		verdict := "met"
		if !ok {
			verdict = "**missed**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, got, verdict)
	})
	b.WriteString("\n")
	writeTable(&b, rep.latencyRows())
	b.WriteString("\n")
	writeTable(&b, rep.latencyRatioRows())
	if chart != "" {
		fmt.Fprintf(&b, "\n![event latency vs N](%s)\n", relLink(chart, results))
	}
	b.WriteString(latencyNotes)
	b.WriteString(latencyMarks.end + "\n")
	return b.String()
}

const latencyNotes = `
- The loop runs in-process (package ` + "`bench/eventlat`" + `, which ` + "`BenchmarkEventToCommit`" + ` in cmd/ovn-sync runs too):
  ` + "`reconcile.Loop`" + ` with a coalescing window of 20 ms, on client-go fake clientsets (the simple object
  tracker: the field-managed one builds a REST mapper of the whole scheme at every create, some
  milliseconds that are not the loop's) read through the real informers of ` + "`sources`" + `, against a fresh standalone ovsdb-server per column; publishing
  is off. A real API server adds its own watch latency.
- The existing pods are spread evenly over the default network's switch and kube-ovn Subnets bound to
  namespaces of their own, at most ` + "`-latency-switch-ports`" + ` on one (OVN binds at most 32,767 ports on a
  switch), two switches at least, as kube-ovn clusters divide theirs; the events' pods and VMs are on the
  default switch, whose ` + "`ports`" + ` set a pod creation mutates in ovsdb-server. The cluster also has four
  StatefulSets and a Namespace per switch.
- Background writes, in turn, at the column's rate from before the first event to after the last: a
  StatefulSet's status (a replica ready), a Namespace's labels, a kube-ovn IP object's node and container
  (64 of the pods have one, holding their port's addresses, as kube-ovn's controller writes them), a
  Subnet's status (` + "`v4usingIPs`" + `). None changes anything ovn-sync reads: each is dropped unread
  (` + "`ovn_sync_changes_dropped_total`" + `); the passes counted while events ran are the events' own.
- Pod churn, in its own column (` + "`-latency-pod-churn`" + `, 50 a second by default): pods created and deleted
  in the events' namespace, on the default switch, as Jobs and rollouts make them, from before the first
  event to after the last: new pods until 50 live (about two seconds' worth), then a deletion of the oldest
  and a creation in turn. Each is a change ovn-sync writes to the NB, a port inserted into or deleted from
  the switch the events' pods go on; the events queue behind those passes. That column's "NB alone" is
  measured under the NB writes the churn makes: another plain client inserts ports into that switch
  until 50 are there, then deletes the oldest and inserts one in turn, at the same rate, while the floor
  is timed. Its target: each event's p99 within 1.2× of the NB alone's p99 for the write it makes.
- Events start once the loop has ended no pass for 2 s after the cold start (the cold start's last full
  pass at 100k ports, most of a second after its ports are committed, is not the first event's).
- Events, in turn, one at a time, with a pause drawn evenly from 0.5 to 1.5 times ` + "`-latency-gap`" + ` (50 ms)
  before each, so that background writes fall at every phase of an event: ` + "`pod-add`" + ` creates a pod (done when its port is inserted); ` + "`vm-start`" + ` creates a
  stopped VM's VMI and launcher pod (done when its port's requested-chassis names the node); ` + "`vm-stop`" + `
  deletes them (done when requested-chassis is cleared); ` + "`migration`" + ` creates a migration and the target's
  launcher pod (done when requested-chassis names both nodes), then undoes it, untimed.
- Latency is from the fake client's create or delete call until a second NB client's cache reports the
  port's insert or update. p99 is the sample at rank ⌊0.99·n⌋ of n: with fewer than 100 events of a kind,
  the largest. Incremental columns time ` + "`-latency-rounds`" + ` events of each kind (200: p99 is the third
  slowest), full ones ` + "`-latency-full-rounds`" + ` (20: p99 is the slowest), as a full pass takes a second or
  more at 100k.
- "The NB alone": after the first column's events (and the pod churn column's), with the loop stopped, a plain NB client that caches
  nothing sends the write a ` + "`pod-add`" + ` makes (a Logical_Switch_Port inserted and added to the default
  switch's ` + "`ports`" + `, one transaction), then the one a VM event makes (the VM's port's
  ` + "`options:requested-chassis`" + ` set or cleared), as many times as events, the same pauses apart, and times
  each reply (` + "`eventlat.NBFloor`" + `): the part of an event's latency that is ovsdb-server's, which no loop
  can go below.
- Each size runs in a child process of its own: incremental passes under each rate, then under pod churn,
  then full ones. The
  machine is shared: the load average is given per column; compare the ratios, measured minutes apart in
  one run.
`

// memorySection is run mode's memory in RESULTS.md.
func (rep report) memorySection() string {
	m := rep.RunMemory
	if m == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## (f) Run mode's memory at %d ports\n\n", m.Ports)
	writeTable(&b, m.rows())
	b.WriteString(memoryNotes)
	return b.String()
}

func (m *runMemResult) rows() [][]string {
	per := func(n int64) string { return perPortBytes(uint64(max(n, 0)), m.Ports) }
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
	rows := [][]string{
		{"run mode, " + fmt.Sprint(m.Ports) + " ports", "total", "per port", "dropped again"},
		{"client peak RSS (VmHWM, through the cold start)", megabytes(m.PeakRSS), per(int64(m.PeakRSS)), ""},
		{fmt.Sprintf("client steady RSS (VmRSS after the cold start, 5 passes and %s idle)", m.Idle), megabytes(m.SteadyRSS), per(int64(m.SteadyRSS)), ""},
		{"    then after debug.FreeOSMemory", megabytes(m.FreedRSS), per(int64(m.FreedRSS)), ""},
		{"Go live heap of the running loop", megabytes(m.Heap), per(int64(m.Heap)), ""},
		{"    left once the loop ended (the parts start from it)", mb(m.HeapLeft), "", ""},
	}
	var sum int64
	for _, p := range m.Parts {
		dropped := mb(p.Dropped)
		if p.DroppedWith != "" {
			dropped = "with the " + strings.SplitN(p.DroppedWith, " (", 2)[0]
		} else if i := slices.IndexFunc(m.Parts, func(q memPart) bool { return q.DroppedWith == p.Name }); i >= 0 {
			dropped += " (with the " + strings.SplitN(m.Parts[i].Name, " (", 2)[0] + ")"
		}
		rows = append(rows, []string{"    " + p.Name, mb(p.Added), per(p.Added), dropped})
		sum += p.Added
	}
	rows = append(rows, []string{"    sum of the parts", mb(sum), per(sum), ""})
	return rows
}

const memoryNotes = `
- The reconcile loop runs in-process as in (g), with incremental passes, over the cluster of (a) (informers
  fed by fake clients that serve each kind's list once from a copy made for it, so that only the
  informers hold the objects, as in a deployment), writing every port into an empty NB; then 5 pods are
  created, one pass each. Peak RSS is VmHWM then; steady RSS is VmRSS after the process idled (the Go
  runtime returns freed pages to the system in the background), and again once
  ` + "`debug.FreeOSMemory`" + ` returned them all; both from /proc/self/status.
- The parts are measured apart once the loop has ended and its goroutines let go of what they held (the
  live heap no longer falling), over the NB it filled: the live heap after a GC
  (` + "`runtime.ReadMemStats`" + `, HeapAlloc) as each is added — informers started and synced, ` + "`observed.Dial`" + `
  (the monitor's initial rows), ` + "`NB.State`" + `, ` + "`desired.Engine.Full`" + ` — and as each is dropped in reverse.
  Closing the NB client drops its cache and the observed state together. The running loop also holds
  what a pass keeps between passes (the last plan and outcome), so its heap need not equal the sum.
- Default GOGC, no GOMEMLIMIT (deploy/ sets one from the container's limit). The runtime then keeps
  freed pages up to about its heap goal, twice the live heap, so the steady RSS stays near the peak;
  the figure after ` + "`debug.FreeOSMemory`" + ` is what the pages in use take. The peak includes the objects the
  fake clients hand the informers' first lists, as an API server's list responses are.
`

// writeTable writes rows as a Markdown table, the first row the header.
func writeTable(b *strings.Builder, rows [][]string) {
	for i, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(escapeCells(row), " | "))
		if i == 0 {
			fmt.Fprintf(b, "|%s\n", strings.Repeat(" --- |", len(row)))
		}
	}
}

// relLink is path relative to the directory of results, for a link in it.
func relLink(path, results string) string {
	rel, err := filepath.Rel(filepath.Dir(results), path)
	if err != nil {
		rel = path
	}
	return filepath.ToSlash(rel)
}

// Colors of the latency chart's event kinds.
var eventColors = map[eventlat.Event]color.Color{
	eventlat.PodAdd:    colorOvnSync,
	eventlat.VMStart:   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	eventlat.VMStop:    colorFull,
	eventlat.Migration: color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// writeLatencyChart plots (g) against N, log-log, in two panels, p50 and
// p99: a line per event kind, solid for incremental passes and dashed for
// full ones. The file's extension picks the format.
func writeLatencyChart(path string, rs []latencyResult) error {
	const w, h = 11 * vg.Inch, 5 * vg.Inch
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	var panels []*plot.Plot
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		p := plot.New()
		p.Title.Text = "Event to port committed, " + q.name
		p.X.Label.Text = "pods already there (N)"
		p.Y.Label.Text = "milliseconds"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
		for _, passes := range eventlat.Passes {
			for _, ev := range eventlat.Events {
				var xys plotter.XYs
				for _, r := range rs {
					if r.Passes == passes && r.Churn == 0 && r.PodChurn == 0 && len(r.Samples[ev]) > 0 {
						xys = append(xys, plotter.XY{X: float64(r.Existing), Y: r.percentile(ev, q.p).Seconds() * 1000})
					}
				}
				if len(xys) == 0 {
					continue
				}
				l, s, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				col := eventColors[ev]
				l.Color, l.Width = col, vg.Points(1.5)
				s.Color, s.Shape, s.Radius = col, draw.CircleGlyph{}, vg.Points(3)
				if passes == "full" {
					l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
					s.Shape = draw.TriangleGlyph{}
				}
				p.Add(l, s)
				p.Legend.Add(fmt.Sprintf("%s, %s", ev, passes), l, s)
			}
		}
		if q.name == "p99" && len(rs) > 0 {
			// The target: 10 ms at any N.
			xs := []float64{p.X.Min, p.X.Max}
			t, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: 10}, {X: xs[1], Y: 10}})
			if err != nil {
				return err
			}
			t.Color, t.Width, t.Dashes = colorServer, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(t)
			p.Legend.Add("target, 10 ms", t)
		}
		// Head room for the legend above the series.
		p.Y.Max *= 30
		panels = append(panels, p)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
