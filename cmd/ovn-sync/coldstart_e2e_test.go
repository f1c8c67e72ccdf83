package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// coldStartSwitchPods is the most pods TestRunColdStart puts on one
// switch: OVN binds at most 32,767 ports to one.
const coldStartSwitchPods = 25000

// TestRunColdStart starts run mode on a cluster that already exists: a
// real kube-apiserver holding OVN_SYNC_COLDSTART_PODS pods (400 unless
// set) written as the kubelet leaves a Deployment's running pods, spread
// over namespaces bound to kube-ovn Subnets, at most coldStartSwitchPods
// to a switch, and a stopped VM for every hundred pods; ovn-sync starts
// after them, under the background writes of a busy cluster (10 a second).
// It asserts that the NB comes to hold every pod's and VM's port and that
// the process is not killed on the way; with OVN_SYNC_COLDSTART_CGROUP=1 it
// runs inside a memory cgroup whose limit is the chart's default (1 GiB,
// or OVN_SYNC_COLDSTART_LIMIT_MB), with the chart's GOMEMLIMIT (90% of
// it), and asserts the cgroup never hit its limit.
//
// It prints the memory the process took: its peak RSS (VmHWM), its RSS
// once idle for OVN_SYNC_COLDSTART_IDLE (5s unless set) and how it went
// meanwhile (idleRSS), and how long the NB took to hold every port. With OVN_SYNC_COLDSTART_BASELINE set to
// another ovn-sync binary (built from an older commit, say), the same
// start is measured with it beside, on a fresh NB, for a ratio. It asserts
// nothing about the figures: targets live in the benchmarks, and machines
// are noisy. The binary under test is collected once idle, and its live
// heap and the heap's spans in use are printed: their difference is the
// memory that objects kept among freed ones hold. With
// OVN_SYNC_COLDSTART_PROFILE set to a directory, the process's heap
// profile near its peak and once idle, its collections (GODEBUG=gctrace)
// and its RSS and heap read four times a second until idle are written there
// (coldstart-peak.heap, coldstart.heap, coldstart.gctrace,
// coldstart-peak-timeline.tsv; the idle time's the same way, in
// coldstart-idle.heap and coldstart-idle-timeline.tsv; the baseline's,
// which is then measured the same way, coldstart-baseline.heap), taken
// right after a full pass ends (at most 70 s later), when nothing a pass
// builds is in flight. With
// OVN_SYNC_COLDSTART_GOGC set to a list of GOGC values ("100,50"), the
// binary is measured once with each, the first on the NB the cluster was
// made with. With OVN_SYNC_COLDSTART_DRAIN set, each run waits until
// every annotation patch its start queued is sent before its idle time,
// which then reads the steady state of a cluster whose pods are annotated,
// as a restart or a cluster from kube-ovn has it.
// With OVN_SYNC_COLDSTART_NB=kept, every run after the first starts on
// the NB the one before left, holding every port, as a restart of
// ovn-sync beside an NB that kept its database finds it (not on a fresh
// NB, as a first install does); its start is over when its first full
// pass has ended.
// OVN_SYNC_COLDSTART_FLAGS adds flags to every run's (say
// "--resync=1m", with an idle time past it, to see the first full pass
// after the start).
// Run it at scale as
//
//	OVN_SYNC_COLDSTART_PODS=100000 OVN_SYNC_COLDSTART_CGROUP=1 OVN_SYNC_COLDSTART_IDLE=30s \
//	  go test -run TestRunColdStart -v -timeout 2h ./cmd/ovn-sync
//
// With OVN_SYNC_COLDSTART_RUNNING_VMS set, the cluster has that many
// running VMs besides (coldStartRunningVMs), each a port.
func TestRunColdStart(t *testing.T) {
	pods := envInt(t, "OVN_SYNC_COLDSTART_PODS", 400)
	running := envInt(t, "OVN_SYNC_COLDSTART_RUNNING_VMS", 0)
	idle := envDuration(t, "OVN_SYNC_COLDSTART_IDLE", 5*time.Second)
	e := startEnv(t, envOptions{RBAC: deployRBAC})
	vms := coldStartCluster(t, e.k, pods, running)
	churn := newBackgroundChurn(t, e.k, "cs-0")
	want := pods + vms + running + 3 // and the churn's StatefulSet pods
	stop := churn.start(t, 10)
	defer stop()

	type run struct{ bin, gogc string }
	var runs []run
	for _, g := range strings.Split(os.Getenv("OVN_SYNC_COLDSTART_GOGC"), ",") { // "" once when unset
		runs = append(runs, run{binary, g})
	}
	if b := os.Getenv("OVN_SYNC_COLDSTART_BASELINE"); b != "" {
		runs = append(runs, run{bin: b})
	}
	kept := os.Getenv("OVN_SYNC_COLDSTART_NB") == "kept"
	for i, r := range runs {
		env, restart := e, i > 0 && kept
		if i > 0 && !kept {
			env = e.withFreshNB(t)
		}
		m := measureColdStart(t, env, r.bin, r.gogc, want, idle, os.Getenv("OVN_SYNC_COLDSTART_CGROUP") != "", restart)
		var live string
		if m.spans > 0 {
			live = fmt.Sprintf("; after a collection, a live heap of %d MB in %d MB of spans, %.0f pod patches still queued", m.live>>20, m.spans>>20, m.queued)
		}
		if m.peakHeap > 0 {
			live += fmt.Sprintf("; until idle, heap in use at most %d MB, the largest heap a collection marked live %s", m.peakHeap>>20, m.peakLive)
		}
		if m.drained > 0 {
			live += fmt.Sprintf("; every patch sent %s after that, before the idle time", m.drained.Round(time.Second))
		}
		held := "in the NB"
		if restart {
			held = "held by the NB before, its first full pass ended"
		}
		t.Logf("cold start, %s (GOGC %s): %d ports %s %s after start; peak RSS %d MB, RSS idle %d MB%s (peak / idle %.2f), heap in use %d MB, released %d MB, CPU %s, %.0f full passes of %s on average%s%s",
			r.bin, cmp.Or(r.gogc, "default"), want, held, m.took.Round(time.Millisecond), m.peak>>20, m.idle>>20, m.idleRange, float64(m.peak)/float64(m.idle), m.heap>>20, m.released>>20,
			m.cpu.Round(10*time.Millisecond), m.fullPasses, m.fullMean.Round(time.Millisecond), live, m.cgroup)
	}
}

// TestRunAnnotatesNewPodsFirst: a first start on pods that carry no
// annotations queues a patch a pod, which --kube-api-qps spreads over time
// (here 400 pods and 4 VMs at 5 a second: 80 s). Passes do not wait for
// them: a pod created meanwhile gets its port in the NB and its
// annotations before them, while most are still queued.
func TestRunAnnotatesNewPodsFirst(t *testing.T) {
	const pods = 400
	e := startEnv(t, envOptions{RBAC: deployRBAC})
	vms := coldStartCluster(t, e.k, pods, 0)
	p := e.runWith(runOptions{OwnPasses: true, Flags: []string{"--leader-elect=false", "--kube-api-qps", "5", "--kube-api-burst", "5"}})
	looptest.WaitFor(t, 60*time.Second, "every pod's and VM's port in the NB", func() error {
		if n := e.nb.State().OwnedPorts(); n < pods+vms {
			return fmt.Errorf("%d ports of %d", n, pods+vms)
		}
		return nil
	})
	late := deploymentPod("cs-0", pods)
	if _, err := e2eCreatePod(e.k, late); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "the pod created after the start annotated", func() error {
		if e.nb.State().Ports.Get(late.Name+".cs-0") == nil {
			return fmt.Errorf("no port %s.cs-0 in the NB", late.Name)
		}
		got, err := e.k.Kube.CoreV1().Pods("cs-0").Get(context.Background(), late.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Annotations["ovn.kubernetes.io/allocated"] != "true" {
			return fmt.Errorf("annotations %v", got.Annotations)
		}
		return nil
	})
	queued := p.metric("ovn_sync_publications_queued")
	t.Logf("the new pod was annotated with %.0f of the first start's %d patches still queued", queued, pods+vms)
	if queued < pods/2 {
		t.Errorf("ovn_sync_publications_queued = %.0f once the new pod was annotated; want most of the first start's %d still queued (at 5 a second they take 80 s)", queued, pods+vms)
	}
}

// drainPatches waits until p has sent every annotation patch its start
// queued (once a full pass has ended, ovn_sync_publications_queued is 0 at
// two reads 5 s apart: the pass that committed the ports queues its
// patches after, and the NB can hold every port before that pass ends),
// so that the idle time that follows is the steady state of a cluster
// whose pods are annotated, and the next run starts on one. It returns how
// long that took.
func drainPatches(t *testing.T, p *runProc) time.Duration {
	t.Helper()
	start := time.Now()
	for zeros := 0; zeros < 2; {
		zeros++
		if p.metric("ovn_sync_pass_duration_seconds_count", `kind="full"`) < 1 || p.metric("ovn_sync_publications_queued") > 0 {
			zeros = 0
		}
		if p.exited() {
			t.Fatalf("ovn-sync exited (code %d) sending its patches: %s", p.exit, p.logTail(3000))
		}
		if time.Since(start) > 30*time.Minute {
			t.Fatalf("%.0f patches still queued after %s", p.metric("ovn_sync_publications_queued"), time.Since(start).Round(time.Second))
		}
		time.Sleep(5 * time.Second)
	}
	return time.Since(start)
}

// afterFullPass waits, at most d, until p has ended a full pass (one
// comes every --resync), so that what is read next is what p keeps
// between passes: until a full build is counted (when it is built), then
// until a pass is counted (when it has applied).
func afterFullPass(p *runProc, d time.Duration) {
	end := time.Now().Add(d)
	for _, m := range []string{"ovn_sync_builds_total", "ovn_sync_passes_total"} {
		n := p.metric(m, `kind="full"`)
		for time.Now().Before(end) && p.metric(m, `kind="full"`) == n {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// peakWatch reads a process's heap in use four times a second until stopped,
// and takes its heap profile whenever that is a tenth above the most seen:
// the profile kept says what the heap held near its peak. It keeps each
// reading too, with the process's RSS and the heap's idle and released
// memory: the timeline says when RSS peaked, and how much of it the heap
// was not using then.
type peakWatch struct {
	done     chan struct{}
	stopped  chan struct{}
	most     uint64
	profile  string
	timeline strings.Builder
}

func watchPeak(p *runProc) *peakWatch {
	w := &peakWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	w.timeline.WriteString("seconds\trss_mb\theap_inuse_mb\theap_idle_mb\theap_released_mb\tstack_mb\n")
	start := time.Now()
	go func() {
		defer close(w.stopped)
		for taken := uint64(0); ; {
			select {
			case <-w.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			body, err := p.get("/metrics") // not p.metric: no t.Fatal off the test's goroutine
			if err != nil {
				continue
			}
			inuse := uint64(sample(body, "go_memstats_heap_inuse_bytes"))
			mb := func(name string) float64 { return sample(body, name) / (1 << 20) }
			fmt.Fprintf(&w.timeline, "%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", time.Since(start).Seconds(), mb("process_resident_memory_bytes"),
				mb("go_memstats_heap_inuse_bytes"), mb("go_memstats_heap_idle_bytes"), mb("go_memstats_heap_released_bytes"), mb("go_memstats_stack_inuse_bytes"))
			w.most = max(w.most, inuse)
			if inuse > taken+taken/10 {
				if prof, err := p.get("/debug/pprof/heap"); err == nil {
					w.profile, taken = prof, inuse
				}
			}
		}
	}()
	return w
}

// stop ends the watch, writes the profile kept to path and the timeline
// beside it (path's name with -timeline.tsv), and returns the most heap in
// use read.
func (w *peakWatch) stop(t *testing.T, path string) uint64 {
	t.Helper()
	close(w.done)
	<-w.stopped
	if err := os.WriteFile(path, []byte(w.profile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".heap")+"-timeline.tsv", []byte(w.timeline.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return w.most
}

// gcTraceLine matches a collection's line of GODEBUG=gctrace=1: when it
// started, and the heap at its start, at its end, and marked live.
var gcTraceLine = regexp.MustCompile(`gc \d+ @([\d.]+)s .* (\d+)->(\d+)->(\d+) MB`)

// gcTracePeak reads a gctrace log and says the largest heap a collection
// marked live, and when.
func gcTracePeak(log string) string {
	var most int
	var at string
	for _, m := range gcTraceLine.FindAllStringSubmatch(log, -1) {
		if n, _ := strconv.Atoi(m[4]); n > most {
			most, at = n, m[1]
		}
	}
	return fmt.Sprintf("%d MB (%s s after start)", most, at)
}

// idleRSS reads the RSS of process pid every second for d, and says how
// it went: least, median and most. A full pass now and then (--resync)
// moves it; one reading says where the last one left it.
func idleRSS(t *testing.T, pid int, d time.Duration) string {
	t.Helper()
	var rss []uint64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		rss = append(rss, procStatus(t, pid, "VmRSS"))
	}
	if len(rss) == 0 {
		return ""
	}
	slices.Sort(rss)
	return fmt.Sprintf(" (over the idle time: least %d, median %d, most %d MB)", rss[0]>>20, rss[len(rss)/2]>>20, rss[len(rss)-1]>>20)
}

// coldStart is what one cold start took.
type coldStart struct {
	took       time.Duration
	peak, idle uint64 // bytes of RSS
	idleRange  string // how RSS went while idle (idleRSS)
	// heap is the heap's spans in use, released what it has given back
	// to the system, once idle (go_memstats_*).
	heap, released uint64
	// live and spans are, right after a collection, the live heap and the
	// heap's spans in use (the binary under test only).
	live, spans uint64
	// queued is ovn_sync_publications_queued then: the first start's
	// patches that wait, which the live heap holds. drained is how long
	// the process took to send them all before the idle time, with
	// OVN_SYNC_COLDSTART_DRAIN set.
	queued  float64
	drained time.Duration
	cgroup  string // the cgroup's own account, when in one
	// With a profile asked for, until the idle time: the most heap in use
	// read (once a second), and the largest heap a collection marked
	// live (its gctrace, with when).
	peakHeap uint64
	peakLive string
	// cpu is the process's CPU time until then (user and system);
	// fullPasses the full passes it made (the start's, a resync's), and
	// fullMean how long one took on average.
	cpu        time.Duration
	fullPasses float64
	fullMean   time.Duration
}

// measureColdStart starts binary bin in run mode against e, waits until
// the NB holds want ports of ours (with restart set, which says the NB
// holds them already, until its first full pass has ended) and then idle,
// and stops it.
func measureColdStart(t *testing.T, e *runEnv, bin, gogc string, want int, idle time.Duration, inCgroup, restart bool) coldStart {
	t.Helper()
	o := runOptions{Binary: bin, OwnPasses: true, Flags: []string{"--leader-elect=false"}}
	if f := os.Getenv("OVN_SYNC_COLDSTART_FLAGS"); f != "" {
		o.Flags = append(o.Flags, strings.Fields(f)...)
	}
	if gogc != "" {
		o.Env = append(o.Env, "GOGC="+gogc)
	}
	// The profiles and the live heap: the binary under test's, and with a
	// profile directory the baseline's too (a build with --pprof).
	profile, name := os.Getenv("OVN_SYNC_COLDSTART_PROFILE"), "coldstart"
	if bin != binary {
		name += "-baseline"
	}
	measured := bin == binary || profile != ""
	if measured {
		o.Flags = append(o.Flags, "--pprof")
	}
	var cg *memCgroup
	if inCgroup {
		limit := uint64(envInt(t, "OVN_SYNC_COLDSTART_LIMIT_MB", 1024)) << 20
		cg = newMemCgroup(t, limit)
		o.Cgroup = cg.dir
		o.Env = append(o.Env, fmt.Sprintf("GOMEMLIMIT=%d", limit*90/100))
	}
	if profile != "" {
		o.Env = append(o.Env, "GODEBUG=gctrace=1")
	}
	start := time.Now()
	p := e.runWith(o)
	var peak *peakWatch
	if profile != "" {
		peak = watchPeak(p)
	}
	// Polled four times a second: a State of 100,000 ports is not free,
	// and this process shares the CPU with the one measured.
	started := func() bool { return e.nb.State().OwnedPorts() >= want }
	if restart {
		started = func() bool {
			body, err := p.get("/metrics") // not up yet: not started
			return err == nil && sample(body, "ovn_sync_passes_total", `kind="full"`) > 0
		}
	}
	for !started() {
		if p.exited() {
			t.Fatalf("ovn-sync exited (code %d) during its cold start: %s", p.exit, p.logTail(3000))
		}
		if time.Since(start) > 30*time.Minute {
			t.Fatalf("cold start: %d ports of %d after %s", e.nb.State().OwnedPorts(), want, time.Since(start).Round(time.Second))
		}
		time.Sleep(250 * time.Millisecond)
	}
	r := coldStart{took: time.Since(start)}
	if os.Getenv("OVN_SYNC_COLDSTART_DRAIN") != "" {
		r.drained = drainPatches(t, p)
	}
	if peak != nil {
		r.peakHeap = peak.stop(t, filepath.Join(profile, name+"-peak.heap"))
		log := p.logTail(1 << 30)
		r.peakLive = gcTracePeak(log)
		// The idle time too, read the same way: a full pass in it (with
		// --resync shorter than it) holds what the start's did.
		peak = watchPeak(p)
	}
	r.idleRange = idleRSS(t, p.cmd.Process.Pid, idle)
	if peak != nil {
		peak.stop(t, filepath.Join(profile, name+"-idle.heap"))
		var trace []string
		for line := range strings.Lines(p.logTail(1 << 30)) {
			if gcTraceLine.MatchString(line) {
				trace = append(trace, line)
			}
		}
		if err := os.WriteFile(filepath.Join(profile, name+".gctrace"), []byte(strings.Join(trace, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.peak, r.idle = procStatus(t, p.cmd.Process.Pid, "VmHWM"), procStatus(t, p.cmd.Process.Pid, "VmRSS")
	r.cpu = time.Duration(p.metric("process_cpu_seconds_total") * float64(time.Second))
	r.fullPasses = p.metric("ovn_sync_pass_duration_seconds_count", `kind="full"`)
	if r.fullPasses > 0 {
		r.fullMean = time.Duration(p.metric("ovn_sync_pass_duration_seconds_sum", `kind="full"`) / r.fullPasses * float64(time.Second))
	}
	r.heap = uint64(p.metric("go_memstats_heap_inuse_bytes"))
	r.released = uint64(p.metric("go_memstats_heap_released_bytes"))
	if measured {
		if profile != "" {
			// Between passes: a full pass in flight holds what it builds.
			afterFullPass(p, time.Minute+10*time.Second)
		}
		heap, err := p.get("/debug/pprof/heap?gc=1") // what is live, not what the last collection saw
		if err != nil {
			t.Fatal(err)
		}
		// Right after that collection: the live heap, and the spans it
		// takes (a span holding one live object is in use).
		r.live, r.spans = uint64(p.metric("go_memstats_heap_alloc_bytes")), uint64(p.metric("go_memstats_heap_inuse_bytes"))
		r.queued = p.metric("ovn_sync_publications_queued")
		if profile != "" {
			if err := os.WriteFile(filepath.Join(profile, name+".heap"), []byte(heap), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cg != nil {
		peak, fails := cg.read(t, "memory.max_usage_in_bytes"), cg.read(t, "memory.failcnt")
		if fails > 0 {
			t.Errorf("the cgroup hit its limit of %d MB %d times (its peak: %d MB)", cg.limit>>20, fails, peak>>20)
		}
		r.cgroup = fmt.Sprintf("; in a cgroup of %d MB with GOMEMLIMIT at 90%%: its peak %d MB, limit hit %d times", cg.limit>>20, peak>>20, fails)
	}
	if p.exited() {
		t.Fatalf("ovn-sync exited (code %d) once idle: %s", p.exit, p.logTail(3000))
	}
	// Stopped once measured: left running, it would share the CPU and the
	// API server with the next run (its publisher still patching, say).
	if n := p.metric("ovn_sync_incremental_mismatches_total"); n > 0 {
		t.Errorf("incremental passes differed from a full Build %.0f times", n)
	}
	p.stop(syscall.SIGTERM)
	return r
}

// coldStartCluster creates the cluster TestRunColdStart starts on: pods
// pods over namespaces cs-0, cs-1, ... bound to Subnets, and a stopped VM
// (pod network only) for every hundred pods, in cs-0; then running VMs
// (coldStartRunningVMs) in the namespaces after the pods'. It returns the
// stopped VMs made.
func coldStartCluster(t *testing.T, k *kubetest.Server, pods, running int) (vms int) {
	t.Helper()
	switches := (pods + running + coldStartSwitchPods - 1) / coldStartSwitchPods
	for j := range max(switches, 1) {
		ns := fmt.Sprintf("cs-%d", j)
		k.Namespace(ns)
		k.Create(sources.GVRSubnet, fmt.Sprintf(`
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: %[1]s}
spec: {cidrBlock: 10.%[2]d.0.0/16, gateway: 10.%[2]d.0.1, protocol: IPv4, namespaces: [%[1]s]}
`, ns, 100+j))
	}
	begin := time.Now()
	parallel(t, pods, func(i int) error {
		ns := fmt.Sprintf("cs-%d", i/coldStartSwitchPods)
		p, err := e2eCreatePod(k, deploymentPod(ns, i))
		if err != nil {
			return err
		}
		p.Status = runningStatus(p, i)
		_, err = k.Kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	vms = max(pods/100, 1)
	parallel(t, vms, func(i int) error {
		_, err := k.TryCreate(sources.GVRVirtualMachine, fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm-%d, namespace: cs-0}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}]}, memory: {guest: 1Gi}}
      networks: [{name: default, pod: {}}]`, i))
		return err
	})
	coldStartRunningVMs(t, k, pods, running)
	t.Logf("%d pods over %d namespaces, %d stopped VMs and %d running VMs created in %s", pods, max(switches, 1), vms, running,
		time.Since(begin).Round(time.Second))
	return vms
}

// coldStartRunningVMs creates running VMs as KubeVirt leaves them: the VM
// (pod network only, runStrategy Always), its VMI running on a node (its
// status written through the status subresource), and its virt-launcher
// pod, Running. Both carry the labels, annotations and finalizers
// virt-api and virt-controller set (virtControllerMeta). The i-th is owner pods+i of the cluster: in the namespace
// that owner falls in, coldStartSwitchPods a namespace.
func coldStartRunningVMs(t *testing.T, k *kubetest.Server, pods, running int) {
	t.Helper()
	parallel(t, running, func(i int) error {
		j := pods + i
		ns, name, node := fmt.Sprintf("cs-%d", j/coldStartSwitchPods), fmt.Sprintf("running-%d", i), fmt.Sprintf("node-%d", i%50)
		vm, err := k.TryCreate(sources.GVRVirtualMachine, fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
  namespace: %s
  annotations: {kubevirt.io/latest-observed-api-version: v1, kubevirt.io/storage-observed-api-version: v1}
  finalizers: [kubevirt.io/virtualMachineControllerFinalize]
spec:
  runStrategy: Always
  template:
    metadata: {labels: {kubevirt.io/domain: %[1]s, kubevirt.io/size: small}}
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}]}, memory: {guest: 2Gi}}
      networks: [{name: default, pod: {}}]`, name, ns))
		if err != nil {
			return err
		}
		vmi, err := k.TryCreate(sources.GVRVirtualMachineInstance, virtControllerMeta(vmiManifest(vm), node))
		if err != nil {
			return err
		}
		if err := setStatus(k, sources.GVRVirtualMachineInstance, ns, name, fmt.Sprintf(`{"status":{"phase":"Running","nodeName":%q}}`, node)); err != nil {
			return err
		}
		p, err := e2eCreatePod(k, looptest.LauncherOf(vmi, "virt-launcher-"+name+"-x7k2p", node))
		if err != nil {
			return err
		}
		qos := p.Status.QOSClass // the API server's, from the pod's resources
		p.Status = runningStatus(p, j)
		p.Status.QOSClass = qos
		_, err = k.Kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
}

// virtControllerMeta is the VMI manifest vmi with the metadata
// virt-controller gives a VMI it starts on node: its template's labels
// and kubevirt.io/nodeName, the API version and generation annotations,
// and its finalizers.
func virtControllerMeta(vmi, node string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(vmi), &m); err != nil {
		panic(err) // vmiManifest's own JSON
	}
	meta := m["metadata"].(map[string]any)
	meta["labels"] = map[string]any{"kubevirt.io/domain": meta["name"], "kubevirt.io/size": "small", "kubevirt.io/nodeName": node}
	meta["annotations"] = map[string]any{"kubevirt.io/latest-observed-api-version": "v1",
		"kubevirt.io/storage-observed-api-version": "v1", "kubevirt.io/vm-generation": "1"}
	meta["finalizers"] = []any{"kubevirt.io/virtualMachineControllerFinalize"}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// parallel calls f for 0..n-1 on 8 goroutines, failing t with the first
// error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// e2eCreatePod creates p in k.
func e2eCreatePod(k *kubetest.Server, p *corev1.Pod) (*corev1.Pod, error) {
	return k.Kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
}

// deploymentPod is the i-th pod of a Deployment's ReplicaSet in namespace
// ns, as the ReplicaSet controller and the scheduler write it: labels, an
// owner, a container with ports, probes, resources and the service
// account's projected token, on one of 250 nodes.
func deploymentPod(ns string, i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i/10)
	rs := app + "-7d9f8b6c5d"
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	expiry := int64(3607)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%05x", rs, i), GenerateName: rs + "-",
			Labels: map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: "6f1c0000-1b2e-4c3d-9e8f-000000000000", Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%250+1), RestartPolicy: corev1.RestartPolicyAlways, ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name: "app", Image: fmt.Sprintf("registry.example.com/%s:1.4.2", app), ImagePullPolicy: corev1.PullIfNotPresent,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				LivenessProbe: probe, ReadinessProbe: probe,
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}}},
		},
	}
}

// runningStatus is the status the kubelet writes for p, the i-th pod,
// once its container runs.
func runningStatus(p *corev1.Pod, i int) corev1.PodStatus {
	now := metav1.Now()
	cond := func(c corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 100+i/coldStartSwitchPods, i%coldStartSwitchPods/250, i%250+2)
	return corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
		HostIP:     fmt.Sprintf("192.168.%d.%d", i%250/200, i%250+1), PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &now, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Started: new(true), Image: p.Spec.Containers[0].Image,
			ImageID:     "registry.example.com/app@sha256:" + strings.Repeat("ab", 32),
			ContainerID: "containerd://" + containerID(i),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
}

// memCgroup is a cgroup (v1) of the memory controller, removed when the
// test ends.
type memCgroup struct {
	dir   string
	limit uint64
}

// newMemCgroup makes a memory cgroup limited to limit bytes, skipping the
// test where none can be made (not root, no memory controller).
func newMemCgroup(t *testing.T, limit uint64) *memCgroup {
	t.Helper()
	dir, err := os.MkdirTemp("/sys/fs/cgroup/memory", "ovn-sync-test-")
	if err != nil {
		t.Skipf("no memory cgroup: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatUint(limit, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &memCgroup{dir: dir, limit: limit}
}

// read reads a counter of the cgroup.
func (c *memCgroup) read(t *testing.T, file string) uint64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// procStatus reads field (VmRSS, VmHWM) of /proc/pid/status, in bytes.
func procStatus(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// envInt reads a positive number from variable name, or gives def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: not a positive number", name, v)
	}
	return n
}

// envDuration reads a duration from variable name, or gives def.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}
