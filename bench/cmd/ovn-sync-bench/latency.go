package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ovn-sync/ovn-sync/bench/eventlat"
)

// latencyResult is measurement (g) at one size, for one kind of pass: run
// mode's latency from an event to its port committed, as another NB client
// sees it (package bench/eventlat).
type latencyResult struct {
	Existing int    `json:"existing"` // pods already there, besides two VMs
	Passes   string `json:"passes"`   // "incremental" or "full"
	// Switches is how many switches the existing pods are spread over
	// (eventlat.Options.Switches); 0 is the default switch alone.
	Switches int `json:"switches,omitempty"`
	// Ready is the loop's cold start: from starting it until the existing
	// ports were committed.
	Ready time.Duration `json:"ready_ns"`
	// Samples are the latencies of each event kind, in the order measured.
	Samples map[eventlat.Event][]time.Duration `json:"samples_ns"`
	// LoadBefore and LoadAfter are /proc/loadavg around the events.
	LoadBefore, LoadAfter string
}

// percentile is eventlat.Percentile of the samples of ev.
func (r latencyResult) percentile(ev eventlat.Event, p float64) time.Duration {
	return eventlat.Percentile(r.Samples[ev], p)
}

// measureLatency measures (g) with size existing pods, for every kind of
// pass, in a child process of its own unless opts.inProcess.
func measureLatency(ctx context.Context, opts options, size int) ([]latencyResult, error) {
	var rs []latencyResult
	if opts.inProcess {
		for _, passes := range eventlat.Passes {
			r, err := latencyAt(ctx, size, 0, passes, opts.latencyRounds)
			if err != nil {
				return nil, err
			}
			rs = append(rs, r)
		}
		return rs, nil
	}
	err := inChild(ctx, []string{"-child-latency", strconv.Itoa(size), "-latency-rounds", strconv.Itoa(opts.latencyRounds)}, &rs)
	return rs, err
}

// measureLatencySwitches measures (g) with size existing pods spread over
// switches switches, with incremental passes (run mode's), in a child
// process of its own unless opts.inProcess.
func measureLatencySwitches(ctx context.Context, opts options, size, switches int) (latencyResult, error) {
	if opts.inProcess {
		return latencyAt(ctx, size, switches, "incremental", opts.latencyRounds)
	}
	var rs []latencyResult
	err := inChild(ctx, []string{"-child-latency", strconv.Itoa(size), "-child-switches", strconv.Itoa(switches),
		"-latency-rounds", strconv.Itoa(opts.latencyRounds)}, &rs)
	if err == nil && len(rs) != 1 {
		err = fmt.Errorf("(g) child gave %d results, want 1", len(rs))
	}
	if err != nil {
		return latencyResult{}, err
	}
	return rs[0], nil
}

// latencyAt runs rounds rounds of every event kind, in turn, on one loop
// over size existing pods spread over switches switches, building as
// passes says, on a fresh server.
func latencyAt(ctx context.Context, size, switches int, passes string, rounds int) (latencyResult, error) {
	r := latencyResult{Existing: size, Passes: passes, Switches: switches, Samples: map[eventlat.Event][]time.Duration{}}
	srv, err := startServer(ctx)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	if switches > 1 {
		passes += fmt.Sprintf(", %d switches", switches) // for the log
	}
	logf("(g) %d existing, %s passes: cold start", size, passes)
	c, err := eventlat.Start(ctx, eventlat.Options{Existing: size, Switches: switches, NBAddr: srv.endpoint(), Passes: r.Passes})
	if err != nil {
		return r, fmt.Errorf("(g) %d %s: %w", size, passes, err)
	}
	r.Ready = c.Ready
	logf("(g) %d existing, %s passes: ports committed after %s; %d rounds of %v", size, passes, seconds(c.Ready), rounds, eventlat.Events)
	r.LoadBefore = loadAverage()
	bar := newProgress(fmt.Sprintf("(g) %d %s", size, passes), rounds)
	for i := range rounds {
		for _, ev := range eventlat.Events {
			d, err := c.Do(ctx, ev)
			if err != nil {
				c.Close()
				return r, fmt.Errorf("(g) %d %s, round %d, %s: %w", size, passes, i, ev, err)
			}
			r.Samples[ev] = append(r.Samples[ev], d)
		}
		bar.set(i + 1)
		if (i+1)%10 == 0 {
			logf("(g) %d existing, %s passes: %d rounds; p50 so far: %s %s, %s %s, %s %s, %s %s", size, passes, i+1,
				eventlat.PodAdd, millis(r.percentile(eventlat.PodAdd, 0.5)), eventlat.VMStart, millis(r.percentile(eventlat.VMStart, 0.5)),
				eventlat.VMStop, millis(r.percentile(eventlat.VMStop, 0.5)), eventlat.Migration, millis(r.percentile(eventlat.Migration, 0.5)))
		}
	}
	bar.finish()
	r.LoadAfter = loadAverage()
	return r, c.Close()
}

// runLatencyChild measures (g) at the one size of opts and writes the
// results.
func runLatencyChild(ctx context.Context, opts options) error {
	var rs []latencyResult
	passes := eventlat.Passes
	if opts.childSwitches > 1 {
		passes = []string{"incremental"}
	}
	for _, passes := range passes {
		r, err := latencyAt(ctx, opts.childLatency, opts.childSwitches, passes, opts.latencyRounds)
		if err != nil {
			return err
		}
		rs = append(rs, r)
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
