package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
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
// client sees it, with 50 and 1500 pods already there, for each of
// latencyModes. It asserts that every pod gets a port with an address, that
// each process built the way it was told to and that no incremental pass
// differed from a full Build; it asserts nothing about time: targets live
// in the benchmarks, and machines are noisy.
//
// The modes run one after the other, not side by side: run mode has no
// namespace filter, so two processes on one API server would both handle
// every pod, and the full one's builds would take the CPU from the
// incremental one. Each (size, mode) gets a fresh NB and process on the
// same API server and the same background pods; the pods it times are
// deleted once it has stopped, so the next one starts from the same
// background.
func TestRunEventLatency(t *testing.T) {
	nbtest.Require(t)
	begin := time.Now()
	k := kubetest.Start(t)
	t.Logf("API server up in %s", time.Since(begin).Round(time.Millisecond))
	k.Namespace("lat")
	pods := k.Kube.CoreV1().Pods("lat")
	const timed = 40
	type row struct {
		size int
		mode string
		lat  []time.Duration
	}
	var rows []row
	have := 0
	for _, size := range []int{50, 1500} {
		start := time.Now()
		concurrently(t, have, size, func(i int) error {
			_, err := pods.Create(context.Background(), latencyPod(backgroundPod(i), i), metav1.CreateOptions{})
			return err
		})
		t.Logf("%d background pods created in %s", size-have, time.Since(start).Round(time.Millisecond))
		have = size
		for _, m := range latencyModes {
			t.Run(fmt.Sprintf("existing=%d/%s", size, m.name), func(t *testing.T) {
				rows = append(rows, row{size, m.name, measureLatency(t, k.Kubeconfig, pods, size, timed, m)})
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
	fmt.Fprintf(&b, "event latency, pod create to port in the NB (%d pods each):\n", timed)
	fmt.Fprintf(&b, "%6s  %-12s %8s %8s %8s  %s\n", "size", "mode", "p50 ms", "p90 ms", "p99 ms", "full/incremental p50, p99")
	for _, r := range rows {
		fmt.Fprintf(&b, "%6d  %-12s %8.1f %8.1f %8.1f", r.size, r.mode, pct(r.lat, 0.5), pct(r.lat, 0.9), pct(r.lat, 0.99))
		i := slices.IndexFunc(rows, func(o row) bool { return o.size == r.size && o.mode == "incremental" })
		if r.mode == "full" && i >= 0 {
			inc := rows[i].lat
			fmt.Fprintf(&b, "  %.1fx, %.1fx", pct(r.lat, 0.5)/pct(inc, 0.5), pct(r.lat, 0.99)/pct(inc, 0.99))
		}
		b.WriteString("\n")
	}
	t.Logf("%swhole test: %s", b.String(), time.Since(begin).Round(time.Millisecond))
}

// measureLatency starts "ovn-sync run" in mode m on a fresh NB, with size
// pods already in the API, then creates n pods one at a time and returns,
// for each, the time from just before its Create call to its port's insert
// as another NB client sees it. It checks that every pod has a port with
// an address of its own, stops the process and deletes the pods it created.
func measureLatency(t *testing.T, kubeconfig string, pods typedcorev1.PodInterface, size, n int, m latencyMode) []time.Duration {
	nbs := nbtest.Start(t)
	nb := nbWatch(t, nbs.Addr())
	// The watcher's cache tells of every port inserted, as it applies the
	// update the NB sent; the send never blocks libovsdb, and what piles
	// up before a measurement is drained.
	inserted := make(chan string, 4096)
	nb.Client().Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(table string, row model.Model) {
			if table == nbdb.LogicalSwitchPortTable {
				select {
				case inserted <- row.(*nbdb.LogicalSwitchPort).Name:
				default:
				}
			}
		},
	})
	start := time.Now()
	run := startRunBare(t, kubeconfig, nbs.Addr(), append([]string{"--leader-elect=false", "--publish=false"}, m.flags...)...)
	owned := func() int {
		c := 0
		for _, p := range nb.State().Ports.All() {
			if strings.HasSuffix(p.Name, ".lat") && p.Owned() {
				c++
			}
		}
		return c
	}
	looptest.WaitFor(t, 30*time.Second, "ports for the background pods", func() error {
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
	names := make([]string, n)
	lat := make([]time.Duration, n)
	for i := range n {
		names[i] = fmt.Sprintf("t-%s-%d-%02d", m.name, size, i)
		for len(inserted) > 0 {
			<-inserted
		}
		t0 := time.Now()
		if _, err := pods.Create(context.Background(), latencyPod(names[i], i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInsert(names[i] + ".lat")
		lat[i] = time.Since(t0)
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
	if c := owned(); c != size+n {
		t.Errorf("%d ports, want %d", c, size+n)
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
		t.Errorf("%v incremental builds in %v passes for %d pods created, want every pass but the first after start-up", builds, passes, n)
	}
	if bad := run.metric("ovn_sync_incremental_mismatches_total"); bad != 0 {
		t.Errorf("ovn_sync_incremental_mismatches_total = %v, want 0", bad)
	}
	t.Logf("%v passes for changes, %.1f ms each on average, %v incremental builds", passes,
		1000*run.metric("ovn_sync_pass_duration_seconds_sum", `kind="change"`)/passes, builds)

	run.stop(syscall.SIGTERM)
	concurrently(t, 0, n, func(i int) error {
		return pods.Delete(context.Background(), names[i], now)
	})
	return lat
}

// backgroundPod is the name of the i-th pod there before any is timed.
func backgroundPod(i int) string { return fmt.Sprintf("bg-%04d", i) }

// latencyPod is a plain pod on one of three nodes.
func latencyPod(name string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lat"},
		Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%3), Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
}
