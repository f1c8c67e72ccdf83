// Package looptest runs run mode's reconcile loop in-process for tests: on
// client-go's fake Kubernetes clients, read through the real informers, and
// an NB (libovsdb's embedded one, or a real ovsdb-server at an address).
package looptest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/publish"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// Options configures Start.
type Options struct {
	// KubeObjs are pods; DynObjs are custom objects, as the fake dynamic
	// client holds them (Objects converts desired.Inputs into both).
	KubeObjs, DynObjs []runtime.Object
	// NADs are created under their resource once the clients exist: the
	// fake dynamic client files objects given up front under the resource
	// it guesses from the kind, which for NADs is not theirs.
	NADs []*unstructured.Unstructured
	// NBAddr is a real NB; empty means the embedded one.
	NBAddr string
	// Dial, when set, connects to the NB instead (run mode's own path).
	Dial func(ctx context.Context) (*observed.NB, func(), error)
	// Config is the default network; nil means 10.16.0.0/12 excluding
	// 10.16.0.1.
	Config *desired.Config
	// Publish annotates pods and VMs, as run mode does by default.
	Publish bool
	// Coalesce is the loop's window; 0 means 5ms.
	Coalesce time.Duration
	// Resources, when set, is what discovery serves instead of every
	// KubeVirt kind.
	Resources []*metav1.APIResourceList
	// BeforeStart, when set, is called before the informers start (to add
	// reactors to the fake clients, say).
	BeforeStart func(*kubefake.Clientset, *dynamicfake.FakeDynamicClient)
	// Passes is how passes build: "" for tests (incremental, each checked
	// against a full Build; full with OVN_SYNC_FULL_PASSES=1), or, for
	// benchmarks, "incremental" (unchecked) or "full".
	Passes string
	// Resync is how often the loop runs a full pass; 0 means 5 minutes.
	Resync time.Duration
}

// Runner is a running loop and what it runs on.
type Runner struct {
	Loop    *reconcile.Loop
	Src     *sources.Informers
	Kube    *kubefake.Clientset
	Dyn     *dynamicfake.FakeDynamicClient
	NB      *observed.NB
	Metrics *reconcile.Metrics
	// Config is the default network the loop builds with.
	Config desired.Config

	ctx      context.Context
	stopLead func()       // ends the running Lead and waits for it
	close    func() error // ends everything Start began
}

// KubeVirtResources is what discovery serves by default: KubeVirt's kinds.
var KubeVirtResources = []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{
	{Name: "virtualmachines", Kind: "VirtualMachine", Namespaced: true},
	{Name: "virtualmachineinstances", Kind: "VirtualMachineInstance", Namespaced: true},
	{Name: "virtualmachineinstancemigrations", Kind: "VirtualMachineInstanceMigration", Namespaced: true},
}}}

// MultusResources is Multus' kind, as discovery serves it.
var MultusResources = &metav1.APIResourceList{GroupVersion: "k8s.cni.cncf.io/v1", APIResources: []metav1.APIResource{
	{Name: "network-attachment-definitions", Kind: "NetworkAttachmentDefinition", Namespaced: true},
}}

// Start runs the loop, leading, until the test ends, and fails the test
// if an incremental pass differed from a full Build.
func Start(t testing.TB, o Options) *Runner {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// New runs the loop, leading, until Close: Start for a caller that is not
// a test, such as a benchmark harness.
func New(o Options) (*Runner, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := start(ctx, cancel, o)
	if err != nil {
		cancel()
		return nil, err
	}
	return r, nil
}

func start(ctx context.Context, cancel context.CancelFunc, o Options) (*Runner, error) {
	kube, dyn, err := fakeClients(ctx, o)
	if err != nil {
		return nil, err
	}
	dial := o.Dial
	if dial == nil {
		dial = dialer(o.NBAddr)
	}
	nb, closeNB, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	cfg := o.Config
	if cfg == nil {
		c, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/12"}, []string{"10.16.0.1"})
		if err != nil {
			closeNB()
			return nil, err
		}
		cfg = &c
	}
	m := reconcile.NewMetrics()
	mismatches := new(logged)
	src := sources.NewInformers(sources.InformerOptions{Kube: kube, Dynamic: dyn, Logger: logr.Discard(),
		OnDrop: func(k sources.Kind) { m.ChangeDropped(string(k)) }})
	if err := src.Start(ctx); err != nil {
		closeNB()
		return nil, err
	}
	loop := reconcile.NewLoop(src, nb, loopOptions(o, *cfg, m, mismatches, kube, dyn))
	watched := make(chan struct{})
	go func() { defer close(watched); loop.Watch(ctx) }()
	r := &Runner{Loop: loop, Src: src, Kube: kube, Dyn: dyn, NB: nb, Metrics: m, Config: *cfg, ctx: ctx}
	r.Lead()
	r.close = func() error {
		cancel()
		<-watched
		r.StepDown()
		closeNB()
		if n := m.Mismatches(); n > 0 {
			return fmt.Errorf("%d incremental passes differed from a full Build (see ovn_sync_incremental_mismatches_total):\n%s",
				n, strings.Join(mismatches.get(), "\n"))
		}
		return nil
	}
	return r, nil
}

// fakeClients makes the fake API servers holding o's objects.
func fakeClients(ctx context.Context, o Options) (*kubefake.Clientset, *dynamicfake.FakeDynamicClient, error) {
	// The simple tracker: the field-managed one (NewClientset) builds a
	// REST mapper of the whole scheme on every create, milliseconds of CPU
	// and garbage that event latencies would count as the loop's. Nothing
	// here applies (server-side apply), which is what it is for.
	kube := kubefake.NewSimpleClientset(o.KubeObjs...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), sources.ListKinds, o.DynObjs...)
	kube.Resources = KubeVirtResources
	if o.Resources != nil {
		kube.Resources = o.Resources
	}
	for _, u := range o.NADs {
		if _, err := dyn.Resource(sources.GVRNetworkAttachmentDefinition).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	if o.BeforeStart != nil {
		o.BeforeStart(kube, dyn)
	}
	return kube, dyn, nil
}

// dialer connects to the NB at addr, or to an embedded one when addr is
// empty.
func dialer(addr string) func(context.Context) (*observed.NB, func(), error) {
	return func(ctx context.Context) (*observed.NB, func(), error) {
		addr, closeNB := addr, func() {}
		if addr == "" {
			emb, err := observed.StartEmbedded()
			if err != nil {
				return nil, nil, err
			}
			addr, closeNB = emb.Endpoint, emb.Close
		}
		nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{addr}})
		if err != nil {
			closeNB()
			return nil, nil, err
		}
		return nb, func() { nb.Close(); closeNB() }, nil
	}
}

// loopOptions are the loop's options for o: incremental passes each
// checked against a full Build unless o.Passes says otherwise.
func loopOptions(o Options, cfg desired.Config, m *reconcile.Metrics, mismatches *logged,
	kube *kubefake.Clientset, dyn *dynamicfake.FakeDynamicClient) reconcile.LoopOptions {
	opts := reconcile.LoopOptions{
		Pass: reconcile.Options{Config: cfg, MaxDeleteFraction: 0.5,
			Apply: apply.Options{MaxOpsPerTxn: apply.DefaultMaxOpsPerTxn, InFlight: apply.DefaultInFlight}},
		Resync: 5 * time.Minute, Coalesce: 5 * time.Millisecond, Log: mismatchLog(mismatches), Metrics: m,
		FullPasses: FullPasses(), VerifyIncremental: true,
	}
	switch o.Passes {
	case "incremental":
		opts.FullPasses, opts.VerifyIncremental = false, false
	case "full":
		opts.FullPasses, opts.VerifyIncremental = true, false
	}
	if o.Coalesce != 0 {
		opts.Coalesce = o.Coalesce
	}
	if o.Resync != 0 {
		opts.Resync = o.Resync
	}
	if o.Publish {
		pub := publish.NewPublisher(kube, dyn, logr.Discard(), m)
		opts.Publish = pub.Pass
	}
	return opts
}

// Close ends the loop and the informers and disconnects from the NB. It
// reports an error if an incremental pass differed from a full Build.
func (r *Runner) Close() error { return r.close() }

// FullPasses reports whether loops run by tests build in full on every
// pass: set OVN_SYNC_FULL_PASSES=1 to run a package's loop tests that way.
// Otherwise their passes are incremental, and each is checked against a
// full Build (LoopOptions.VerifyIncremental); a test that saw one differ
// fails.
func FullPasses() bool { return os.Getenv("OVN_SYNC_FULL_PASSES") != "" }

// Lead runs the reconcile loop, as winning the lease does.
func (r *Runner) Lead() {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Loop.Lead(ctx, ctx.Done()) }()
	r.stopLead = func() { cancel(); <-done }
}

// StepDown ends the reconcile loop, as losing the lease does, and returns
// once it has ended.
func (r *Runner) StepDown() { r.stopLead() }

// Pod is a running pod in namespace ns on node n1, with UID "uid-<name>".
func Pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1"}}
}

// Pods creates pods p<from>..p<to-1> in namespace ns.
func (r *Runner) Pods(t testing.TB, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := r.Kube.CoreV1().Pods("ns").Create(context.Background(), Pod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// WaitPorts waits until the NB holds want ports of ours.
func (r *Runner) WaitPorts(t testing.TB, what string, want int) {
	t.Helper()
	WaitFor(t, 30*time.Second, what, func() error {
		if n := r.NB.State().OwnedPorts(); n != want {
			return fmt.Errorf("%d ports, want %d", n, want)
		}
		return nil
	})
}

// WaitConverged waits until the informers hold every pod the fake API
// server lists and a pass over what they hold would plan nothing against
// the NB: the loop has caught up with every change made before the call.
func (r *Runner) WaitConverged(t testing.TB) {
	t.Helper()
	WaitFor(t, 15*time.Second, "converged", func() error {
		pods, err := r.Kube.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		in := r.Src.Inputs().Inputs
		if in.PodCount() != len(pods.Items) {
			return fmt.Errorf("informer holds %d pods of %d", in.PodCount(), len(pods.Items))
		}
		out := reconcile.Compute(r.NB, reconcile.All(in), reconcile.Options{Config: r.Config})
		if !out.Plan.Empty() {
			return fmt.Errorf("plan not empty:\n%s", out.Plan)
		}
		return nil
	})
}

// Metric sums the samples of the named metric whose labels include every
// pair of labels ("name", "value", ...).
func (r *Runner) Metric(name string, labels ...string) float64 {
	mfs, err := r.Metrics.Registry().Gather()
	if err != nil {
		return -1
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// WaitFor polls f until it returns nil, failing the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Objects turns inputs into the objects the fake clients hold: pods, the
// custom objects as unstructured, and the NADs to create under their
// resource.
func Objects(t testing.TB, in desired.Inputs) (kube, dyn []runtime.Object, nads []*unstructured.Unstructured) {
	t.Helper()
	toDyn := func(o any) *unstructured.Unstructured {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	for _, p := range in.Pods {
		kube = append(kube, p)
	}
	for _, o := range in.VirtualMachines {
		dyn = append(dyn, toDyn(o))
	}
	for _, o := range in.VirtualMachineInstances {
		dyn = append(dyn, toDyn(o))
	}
	for _, o := range in.Migrations {
		dyn = append(dyn, toDyn(o))
	}
	for _, o := range in.NetworkAttachmentDefinitions {
		nads = append(nads, toDyn(o))
	}
	return kube, dyn, nads
}

// logged keeps log lines, safe for concurrent use.
type logged struct {
	mu    sync.Mutex
	lines []string
}

func (l *logged) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// mismatchLog is a logger that keeps the loop's reports of incremental
// states that differed from a full Build, and discards the rest.
func mismatchLog(l *logged) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if strings.Contains(args, "differs from a full Build") {
			l.mu.Lock()
			l.lines = append(l.lines, args)
			l.mu.Unlock()
		}
	}, funcr.Options{})
}
