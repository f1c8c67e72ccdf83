package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// latencyResult is measurement (g) at one size, for one kind of pass and
// rate of background writes: run mode's latency from an event to its port
// committed, as another NB client sees it (package bench/eventlat).
type latencyResult struct {
	Existing int    `json:"existing"` // pods already there, besides two VMs
	Passes   string `json:"passes"`   // "incremental" or "full"
	// Switches is how many switches the existing pods are spread over
	// (eventlat.Options.Switches); 0 is the default switch alone.
	Switches int `json:"switches,omitempty"`
	// Churn is the rate of background writes while events ran
	// (eventlat.Options.Churn); Writes how many were made, Failed how many
	// failed (FailedErr the last error), and Dropped how many changes the
	// loop dropped unread (ovn_sync_changes_dropped_total) in that time.
	// PassesRun counts the loop's passes while events ran, FullBuilds
	// those of them that built every owner.
	Churn  int   `json:"churn,omitempty"`
	Writes int64 `json:"writes,omitempty"`
	// PodChurn is the rate of pod creations and deletions while events
	// ran (eventlat.Options.PodChurn), PodWrites how many were made and
	// PodFailed how many failed; NBFloor is then measured under the NB
	// writes they make.
	PodChurn   int     `json:"pod_churn,omitempty"`
	PodWrites  int64   `json:"pod_writes,omitempty"`
	PodFailed  int64   `json:"pod_failed,omitempty"`
	Failed     int64   `json:"failed,omitempty"`
	FailedErr  string  `json:"failed_err,omitempty"`
	PassesRun  float64 `json:"passes_run"`
	FullBuilds float64 `json:"full_builds"`
	Dropped    float64 `json:"dropped"`
	// Ready is the loop's cold start: from starting it until the existing
	// ports were committed.
	Ready time.Duration `json:"ready_ns"`
	// Samples are the latencies of each event kind, in the order measured.
	Samples map[eventlat.Event][]time.Duration `json:"samples_ns"`
	// LoadBefore and LoadAfter are /proc/loadavg around the events.
	LoadBefore, LoadAfter string
	// NBFloor, for the first run at a size and the run under pod churn,
	// are the latencies of the writes events make sent alone by a plain
	// NB client to the same NB after the loop has stopped
	// (eventlat.NBFloor): the NB's own part of an event's latency.
	NBFloor *eventlat.Floor `json:"nb_floor,omitempty"`
}

// percentile is eventlat.Percentile of the samples of ev.
func (r latencyResult) percentile(ev eventlat.Event, p float64) time.Duration {
	return eventlat.Percentile(r.Samples[ev], p)
}

// latencySwitches is how many switches (g) spreads size existing pods
// over: at most perSwitch on one, and two at least, so that a kube-ovn
// Subnet is there for the background writes.
func latencySwitches(size, perSwitch int) int {
	return max(2, (size+perSwitch-1)/perSwitch)
}

// latencyRuns are the measurements of (g) at one size, in the order made:
// incremental passes under each rate of background writes, then under pod
// churn, then full passes under the first rate (quiet, by default).
func latencyRuns(opts options) []latencyRun {
	var runs []latencyRun
	for i, churn := range opts.latencyChurn {
		runs = append(runs, latencyRun{passes: "incremental", churn: churn, floor: i == 0})
	}
	if opts.latencyPodChurn > 0 {
		runs = append(runs, latencyRun{passes: "incremental", podChurn: opts.latencyPodChurn, floor: true})
	}
	return append(runs, latencyRun{passes: "full", churn: opts.latencyChurn[0]})
}

// latencyRun is one measurement of (g) at a size: the kind of pass, the
// rate of background writes and of pod creations and deletions; floor is
// set on the runs after which the NB floor is measured (the first, and
// the one under pod churn, whose NB writes the floor's NB is given).
type latencyRun struct {
	passes          string
	churn, podChurn int
	floor           bool
}

// measureLatency measures (g) with size existing pods, every run of
// latencyRuns, in a child process of its own unless opts.inProcess.
func measureLatency(ctx context.Context, opts options, size int) ([]latencyResult, error) {
	if opts.inProcess {
		return latencyAtSize(ctx, opts, size)
	}
	var rs []latencyResult
	churn := make([]string, len(opts.latencyChurn))
	for i, c := range opts.latencyChurn {
		churn[i] = strconv.Itoa(c)
	}
	err := inChild(ctx, []string{"-child-latency", strconv.Itoa(size), "-latency-rounds", strconv.Itoa(opts.latencyRounds),
		"-latency-full-rounds", strconv.Itoa(opts.latencyFullRounds),
		"-latency-churn", strings.Join(churn, ","), "-latency-pod-churn", strconv.Itoa(opts.latencyPodChurn),
		"-latency-switch-ports", strconv.Itoa(opts.latencySwitchPorts),
		"-latency-gap", opts.latencyGap.String()}, &rs)
	return rs, err
}

// latencyAtSize runs every run of latencyRuns at size, in turn.
func latencyAtSize(ctx context.Context, opts options, size int) ([]latencyResult, error) {
	var rs []latencyResult
	for _, run := range latencyRuns(opts) {
		rounds := opts.latencyRounds
		if run.passes == "full" {
			rounds = opts.latencyFullRounds
		}
		r, err := latencyAt(ctx, size, latencySwitches(size, opts.latencySwitchPorts), run, rounds, opts.latencyGap)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// latencyAt runs rounds rounds of every event kind, in turn, about gap
// apart, on one loop over size existing pods spread over switches
// switches, building and written to as run says, on a fresh server.
func latencyAt(ctx context.Context, size, switches int, run latencyRun, rounds int, gap time.Duration) (latencyResult, error) {
	r := latencyResult{Existing: size, Passes: run.passes, Switches: switches, Churn: run.churn, PodChurn: run.podChurn,
		Samples: map[eventlat.Event][]time.Duration{}}
	srv, err := nbtest.Serve()
	if err != nil {
		return r, err
	}
	defer srv.Close()
	what := fmt.Sprintf("(g) %d existing over %d switches, %s passes, %d writes/s, %d pod writes/s", size, switches, run.passes, run.churn, run.podChurn)
	logf("%s: cold start", what)
	c, err := eventlat.Start(ctx, eventlat.Options{Existing: size, Switches: switches, NBAddr: srv.Addr(), Passes: run.passes,
		Churn: run.churn, PodChurn: run.podChurn})
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	r.Ready = c.Ready
	logf("%s: ports committed after %s; %d rounds of %v", what, seconds(c.Ready), rounds, eventlat.Events)
	r.LoadBefore = loadAverage()
	passes0, full0 := c.Metric("ovn_sync_passes_total"), c.Metric("ovn_sync_builds_total", "kind", "full")
	bar := newProgress(fmt.Sprintf("(g) %d %s %d/s %d pods/s", size, run.passes, run.churn, run.podChurn), rounds)
	for i := range rounds {
		for _, ev := range eventlat.Events {
			// A pause drawn at random, so that background writes fall
			// at every phase of an event, not in step with them.
			time.Sleep(gap/2 + rand.N(gap+1))
			d, err := c.Do(ctx, ev)
			if err != nil {
				c.Close()
				return r, fmt.Errorf("%s, round %d, %s: %w", what, i, ev, err)
			}
			r.Samples[ev] = append(r.Samples[ev], d)
		}
		bar.set(i + 1)
		if (i+1)%10 == 0 {
			logf("%s: %d rounds; p50 so far: %s %s, %s %s, %s %s, %s %s", what, i+1,
				eventlat.PodAdd, millis(r.percentile(eventlat.PodAdd, 0.5)), eventlat.VMStart, millis(r.percentile(eventlat.VMStart, 0.5)),
				eventlat.VMStop, millis(r.percentile(eventlat.VMStop, 0.5)), eventlat.Migration, millis(r.percentile(eventlat.Migration, 0.5)))
		}
	}
	bar.finish()
	r.PassesRun, r.FullBuilds = c.Metric("ovn_sync_passes_total")-passes0, c.Metric("ovn_sync_builds_total", "kind", "full")-full0
	r.LoadAfter = loadAverage()
	// The writer stops; its last writes reach the loop's handlers within
	// moments.
	c.StopChurn()
	r.PodWrites, r.PodFailed, _ = c.PodChurned()
	for deadline := time.Now().Add(2 * time.Second); ; {
		r.Writes, r.Failed, r.FailedErr, r.Dropped = c.Churned()
		if r.Dropped >= float64(r.Writes) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil || !run.floor {
		return r, err
	}
	logf("%s: the NB alone, %d writes of each kind", what, rounds)
	f, err := eventlat.NBFloor(ctx, srv.Addr(), eventlat.DefaultSwitch, rounds, gap, run.podChurn)
	r.NBFloor = &f
	return r, err
}

// runLatencyChild measures (g) at the one size of opts and writes the
// results.
func runLatencyChild(ctx context.Context, opts options) error {
	rs, err := latencyAtSize(ctx, opts, opts.childLatency)
	if err != nil {
		return err
	}
	return writeJSON(opts.childOut, rs)
}

// inChild runs this program again with args and -child-out, and decodes
// the JSON the child writes there into v.
func inChild(ctx context.Context, args []string, v any) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	out, err := os.CreateTemp("", "ovn-sync-bench-*.json")
	if err != nil {
		return err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.CommandContext(ctx, self, append(args, "-child-out", out.Name())...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // stdout is for the table
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("child: %w", err)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
