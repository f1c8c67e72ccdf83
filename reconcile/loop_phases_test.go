package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
)

// histogram is the count and sum of one series of a histogram.
type histogram struct {
	count uint64
	sum   float64
}

// histograms returns the series of the histogram name by the value of
// its label label.
func (f *fakeLoop) histograms(t *testing.T, name, label string) map[string]histogram {
	t.Helper()
	mfs, err := f.m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]histogram{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					h := out[l.GetValue()]
					h.count += m.GetHistogram().GetSampleCount()
					h.sum += m.GetHistogram().GetSampleSum()
					out[l.GetValue()] = h
				}
			}
		}
	}
	return out
}

// TestLoopObservesPhases: every pass observes each of its phases once in
// ovn_sync_pass_phase_seconds, within the time of the pass; the startup
// pass, which creates ports, spends time building and applying.
func TestLoopObservesPhases(t *testing.T) {
	f := startFakeLoop(t, time.Millisecond, func(pods map[string]*corev1.Pod) { addPods(pods, 0, 3) })
	f.waitPorts(t, 3)
	looptest.WaitFor(t, 30*time.Second, "every pass's phases observed", func() error {
		passes := f.metric("ovn_sync_passes_total")
		if passes < 1 {
			return fmt.Errorf("no pass")
		}
		var total float64
		for kind, h := range f.histograms(t, "ovn_sync_pass_duration_seconds", "kind") {
			if kind == "" {
				return fmt.Errorf("ovn_sync_pass_duration_seconds without a kind")
			}
			total += h.sum
		}
		got := f.histograms(t, "ovn_sync_pass_phase_seconds", "phase")
		if len(got) != 4 {
			return fmt.Errorf("ovn_sync_pass_phase_seconds has phases %v, want observe, build, diff, apply", got)
		}
		var phases float64
		for _, phase := range []string{"observe", "build", "diff", "apply"} {
			h, ok := got[phase]
			switch {
			case !ok:
				return fmt.Errorf("no phase %q in %v", phase, got)
			case float64(h.count) != passes:
				return fmt.Errorf("phase %s observed %d times in %v passes", phase, h.count, passes)
			}
			phases += h.sum
		}
		if got["build"].sum <= 0 || got["apply"].sum <= 0 {
			return fmt.Errorf("build took %vs and apply %vs in all, want both more than 0", got["build"].sum, got["apply"].sum)
		}
		if phases > total {
			return fmt.Errorf("phases took %vs, passes %vs: the phases are part of a pass", phases, total)
		}
		return nil
	})
}
