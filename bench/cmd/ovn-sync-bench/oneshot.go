package main

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// oneShotResult is measurement (h): the ovn-sync binary run as a whole
// process, `ovn-sync apply -f pods.yaml`, into an empty NB and again over
// the NB it filled, beside the per-object pattern writing the same ports.
type oneShotResult struct {
	Pods      int   `json:"pods"`
	Ports     int   `json:"ports"`
	FileBytes int64 `json:"file_bytes"`
	// Runs are the cold applies, each on a fresh server, and the no-op
	// re-applies, all on the server of the last cold apply.
	Cold  []processRun `json:"cold"`
	Noop  []processRun `json:"noop"`
	Label string       `json:"label"` // the binary measured
	// Baseline, if measured, is the same for another binary, interleaved
	// run by run with this one.
	Baseline  *oneShotSide    `json:"baseline,omitempty"`
	PerObject perObjectResult `json:"per_object"`
}

// oneShotSide is the cold and no-op runs of one binary.
type oneShotSide struct {
	Label string       `json:"label"`
	Cold  []processRun `json:"cold"`
	Noop  []processRun `json:"noop"`
}

// processRun is one run of the binary.
type processRun struct {
	Wall      time.Duration `json:"wall_ns"`
	CPU       time.Duration `json:"cpu_ns"` // the child's user + system time
	ServerCPU time.Duration `json:"server_cpu_ns"`
	Commits   int           `json:"commits"` // records the NB file gained
	MaxRSS    int64         `json:"max_rss"` // the child's peak RSS, bytes
}

// median is the run of median wall time.
func median(runs []processRun) processRun {
	if len(runs) == 0 {
		return processRun{}
	}
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b processRun) int { return int(a.Wall - b.Wall) })
	return s[len(s)/2]
}

// oneShotConfig is the binary's default network (its flags' defaults):
// Build over the manifests with it gives the ports apply writes.
func oneShotConfig() desired.Config {
	return desired.Config{
		DefaultSwitch:  "ovn-default",
		DefaultSubnets: []netip.Prefix{netip.MustParsePrefix("10.16.0.0/16")},
		DefaultExclude: []netconf.IPRange{{From: netip.MustParseAddr("10.16.0.1"), To: netip.MustParseAddr("10.16.0.1")}},
	}
}

// buildBinary builds ./cmd/ovn-sync into dir and returns its path.
func buildBinary(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "ovn-sync")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ovn-sync/ovn-sync/cmd/ovn-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/ovn-sync (run the harness inside the module, or give -ovn-sync): %w: %s", err, out)
	}
	return bin, nil
}

// measureOneShot runs (h) with opts.oneShotPods pods.
func measureOneShot(ctx context.Context, opts options) (*oneShotResult, error) {
	dir, err := os.MkdirTemp("", "ovn-sync-oneshot")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := opts.binary
	if bin == "" {
		logf("(h): building ./cmd/ovn-sync")
		if bin, err = buildBinary(ctx, dir); err != nil {
			return nil, err
		}
	}
	file := filepath.Join(dir, "pods.yaml")
	logf("(h): writing %d pods to %s", opts.oneShotPods, file)
	size, err := writePods(file, opts.oneShotPods)
	if err != nil {
		return nil, err
	}
	in, _, err := sources.ReadManifests([]string{file})
	if err != nil {
		return nil, err
	}
	res := desired.Build(in, oneShotConfig(), state.New(0))
	if len(res.Problems) > 0 {
		return nil, fmt.Errorf("generated pods have %d problems, first: %s", len(res.Problems), res.Problems[0])
	}
	r := &oneShotResult{Pods: opts.oneShotPods, Ports: res.Want.Ports.Len(), FileBytes: size, Label: label(opts.binary, "this tree")}
	if opts.baseline != "" {
		r.Baseline = &oneShotSide{Label: label(opts.baseline, "")}
	}
	runs := max(opts.oneShotRuns, 1)
	for i := range runs {
		for _, side := range r.sides(bin, opts.baseline) {
			logf("(h): %s: apply %d of %d into an empty NB, then a no-op re-apply", side.label, i+1, runs)
			cold, noop, err := coldAndNoop(ctx, side.bin, file, r.Ports)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", side.label, err)
			}
			*side.cold = append(*side.cold, cold)
			*side.noop = append(*side.noop, noop)
		}
	}
	if opts.skipPerObject {
		return r, nil
	}
	logf("(h): per-object pattern, %d ports", r.Ports)
	r.PerObject, err = runPerObject(ctx, res.Want, perObjectOptions{monitor: monitorNames, budget: opts.perObjectBudget, sample: opts.sample})
	if err != nil {
		return nil, fmt.Errorf("per-object: %w", err)
	}
	return r, nil
}

// label names a binary in the report.
func label(path, def string) string {
	if path == "" {
		return def
	}
	return path
}

type oneShotRunTarget struct {
	label      string
	bin        string
	cold, noop *[]processRun
}

// sides are the binaries to run, this tree's first.
func (r *oneShotResult) sides(bin, baseline string) []oneShotRunTarget {
	t := []oneShotRunTarget{{label: r.Label, bin: bin, cold: &r.Cold, noop: &r.Noop}}
	if r.Baseline != nil {
		t = append(t, oneShotRunTarget{label: r.Baseline.Label, bin: baseline, cold: &r.Baseline.Cold, noop: &r.Baseline.Noop})
	}
	return t
}

// coldAndNoop runs `apply -f file` on a fresh server, then again over what
// it wrote, checking that the first committed every port and the second
// nothing.
func coldAndNoop(ctx context.Context, bin, file string, ports int) (cold, noop processRun, err error) {
	srv, err := nbtest.Serve()
	if err != nil {
		return cold, noop, err
	}
	defer srv.Close()
	if cold, err = runApply(ctx, srv, bin, file); err != nil {
		return cold, noop, err
	}
	if cold.Commits == 0 {
		return cold, noop, fmt.Errorf("apply into an empty NB committed nothing")
	}
	if noop, err = runApply(ctx, srv, bin, file); err != nil {
		return cold, noop, err
	}
	if noop.Commits != 0 {
		return cold, noop, fmt.Errorf("no-op re-apply of %d ports committed %d transactions", ports, noop.Commits)
	}
	return cold, noop, nil
}

// runApply runs `bin apply -f file --nb srv` as a child process and times
// it from the start of the process to its exit.
func runApply(ctx context.Context, srv *nbtest.Server, bin, file string) (processRun, error) {
	var r processRun
	commits0, err := srv.TryCommits()
	if err != nil {
		return r, err
	}
	server0, _ := processCPU(srv.Pid())
	cmd := exec.CommandContext(ctx, bin, "apply", "-f", file, "--nb", srv.Addr(), "-o", "json")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	err = cmd.Run()
	r.Wall = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("%s apply: %w: %s", bin, err, stderr.String())
	}
	server1, _ := processCPU(srv.Pid())
	r.ServerCPU = server1 - server0
	if st := cmd.ProcessState; st != nil {
		r.CPU = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSS = ru.Maxrss << 10
		}
	}
	commits1, err := srv.TryCommits()
	r.Commits = commits1 - commits0
	return r, err
}

// writePods writes n pods as one multi-document YAML file, each the way
// `kubectl get pod -o yaml` shows a Deployment's running pod (without
// managed fields), and returns the file's size.
func writePods(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		b, err := yaml.Marshal(benchPod(i))
		if err != nil {
			f.Close()
			return 0, err
		}
		if i > 0 {
			w.WriteString("---\n")
		}
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// benchPod is the i-th pod of the one-shot file: a Deployment's replica in
// one of 97 namespaces, scheduled on one of 300 nodes, running.
func benchPod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i/10)
	hash := fmt.Sprintf("%08x", uint32(i/10)*2654435761)
	rs := app + "-" + hash
	name := fmt.Sprintf("%s-%05x", rs, uint32(i)*40503%(1<<20))
	ns := fmt.Sprintf("ns-%d", i%97)
	t := true
	created := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("6f1c%04x-1b2e-4c3d-9e8f-%012x", i%65536, i)),
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: created, GenerateName: rs + "-",
			Labels:          map[string]string{"app": app, "pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: types.UID("rs-" + rs), Controller: &t, BlockOwnerDeletion: &t}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%300), ServiceAccountName: "default", RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/" + app + ":1.4.2", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: fmt.Sprintf("192.168.%d.%d", i%300/250, i%300%250+1), StartTime: &created,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created}},
		},
	}
}
