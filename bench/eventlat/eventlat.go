// Package eventlat measures run mode's latency from a Kubernetes event to
// its port committed in the NB, as another NB client sees the commit, with
// N ports already there. The reconcile loop runs in-process on client-go
// fakes read through the real informers (internal/looptest) against a real
// ovsdb-server the caller starts; a real API server would add its own watch
// latency. Publishing is off.
//
// Real clusters are never quiet: with Options.Churn, a background writer
// makes the writes that change nothing ovn-sync reads and happen all the
// time — a StatefulSet's status, a Namespace's labels, kube-ovn's IP
// objects (node and container, rewritten when a pod is created again) and
// a Subnet's status (usingIPs, at every allocation) — while events are
// timed.
//
// BenchmarkEventToCommit in cmd/ovn-sync and the harness in
// bench/cmd/ovn-sync-bench both run it: Start sets a cluster up and waits
// for its ports to be committed, Do times one event, Close ends it.
package eventlat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/state"
)

// Event is a kind of change timed from the call that makes it until the
// NB shows its port as the change wants it.
type Event string

const (
	// PodAdd creates a pod; done when its port is inserted.
	PodAdd Event = "pod-add"
	// VMStart creates a stopped VM's VMI and launcher pod; done when its
	// port's requested-chassis names the node.
	VMStart Event = "vm-start"
	// VMStop deletes them again; done when requested-chassis is cleared.
	VMStop Event = "vm-stop"
	// Migration starts a migration of a running VM (the migration object
	// and the target's launcher pod); done when requested-chassis names
	// both nodes. The migration is then undone, untimed.
	Migration Event = "migration"
)

// Events are every Event, in the order a round of the harness runs them:
// VMStart and VMStop alternate, so neither needs an untimed step first.
var Events = []Event{PodAdd, VMStart, VMStop, Migration}

// Passes are the ways a loop can build: "incremental" is run mode (a pass
// rebuilds the owners an event touches), "full" builds the whole desired
// state every pass (--full-passes).
var Passes = []string{"incremental", "full"}

// Options configures Start.
type Options struct {
	// Existing is the number of pods already there; the cluster also has
	// two VMs, one stopped (vm0, for VMStart and VMStop) and one running
	// on n1 (vm1, for Migration).
	Existing int
	// Switches spreads the existing pods evenly over this many switches:
	// the default network and Switches-1 kube-ovn Subnets, each bound to
	// a namespace of its own, as kube-ovn clusters divide their pods. 0
	// or 1 is the default switch alone. The VMs, and the pods PodAdd
	// creates, are on the default switch.
	Switches int
	// NBAddr is an empty ovsdb-server.
	NBAddr string
	// Passes is "incremental" or "full".
	Passes string
	// Coalesce is the loop's window; 0 means 20ms.
	Coalesce time.Duration
	// ReadyTimeout bounds the wait for the existing ports; 0 means 10
	// minutes. CommitTimeout bounds one event; 0 means 30 seconds.
	ReadyTimeout, CommitTimeout time.Duration
	// Churn is the rate, in writes a second, of the background writes
	// that change nothing ovn-sync reads (see the package doc), from the
	// end of Start to Close; 0 is none. It needs a Subnet: Switches 2 or
	// more.
	Churn int
	// PodChurn is the rate, in writes a second, of pods created and
	// deleted on the default switch while events are timed, as Jobs and
	// rollouts make them: each a new pod until PodChurn of them live
	// (about two seconds' worth), then creations and deletions of the
	// oldest in turn. Each changes the NB: ovn-sync inserts or deletes a
	// port, on the switch the events' pods go on. 0 is none.
	PodChurn int
}

// Sets is how many StatefulSets the cluster has (in namespace ns, three
// replicas each, with no pods: their status is what the churn writes),
// and IPObjects how many of the existing pods of namespace ns get
// kube-ovn's IP object, holding their port's addresses, before the churn
// starts.
const (
	Sets      = 4
	IPObjects = 64
)

// Cluster is a running loop over a cluster, and the NB client watching
// what it commits. It is not safe for concurrent use.
type Cluster struct {
	// Ready is the time from Start until the existing ports were
	// committed: the loop's cold start.
	Ready time.Duration

	r       *looptest.Runner
	obs     *observed.NB
	seen    chan portSeen
	timeout time.Duration
	// pods counts the pods PodAdd created; vm0 is whether vm0 runs, under
	// the launcher pod named by launcher; migrations counts Migration.
	pods, launcher, migrations int
	vm0                        bool

	// The background writer (Options.Churn): its IP objects, and what it
	// did.
	ips           []string
	stopChurn     chan struct{}
	churnDone     sync.WaitGroup
	churned       writer
	droppedBefore float64
	// The pod writer (Options.PodChurn), and what it did.
	stopPods    chan struct{}
	podsDone    sync.WaitGroup
	podsChurned writer
}

// portSeen is a port's name and requested-chassis as an NB client saw
// them in an insert or an update.
type portSeen struct{ name, chassis string }

var (
	gvrVMI       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrMigration = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}
	gvrSubnet    = kubeovnv1.GroupVersion.WithResource("subnets")
	gvrIP        = kubeovnv1.GroupVersion.WithResource("ips")
)

// Start runs a loop over o.Existing pods and two VMs against the NB at
// o.NBAddr and returns once the NB holds their ports.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Passes != "incremental" && o.Passes != "full" {
		return nil, fmt.Errorf("passes %q: want incremental or full", o.Passes)
	}
	if o.Switches > 64 {
		return nil, fmt.Errorf("switches %d: at most 64", o.Switches)
	}
	if o.Churn > 0 && o.Switches < 2 {
		return nil, fmt.Errorf("churn %d a second: a Subnet's status is written, so at least 2 switches, not %d", o.Churn, o.Switches)
	}
	kube, dyn, resources, err := clusterObjects(o)
	if err != nil {
		return nil, err
	}
	coalesce := o.Coalesce
	if coalesce == 0 {
		coalesce = 20 * time.Millisecond
	}
	c = &Cluster{seen: make(chan portSeen, 1024), timeout: o.CommitTimeout}
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	start := time.Now()
	if c.r, err = looptest.New(looptest.Options{KubeObjs: kube, DynObjs: dyn, NBAddr: o.NBAddr, Coalesce: coalesce, Passes: o.Passes, Resources: resources}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()

	// The observer: another client, told of every port insert and update.
	if c.obs, err = observed.Dial(ctx, observed.Options{Endpoints: []string{o.NBAddr}}); err != nil {
		return c, err
	}
	c.obs.WatchPorts(func(_, p *state.Port) {
		if p != nil {
			select {
			case c.seen <- portSeen{p.Name, p.RequestedChassis}:
			default:
			}
		}
	})
	readyTimeout := o.ReadyTimeout
	if readyTimeout == 0 {
		readyTimeout = 10 * time.Minute
	}
	if err := c.waitPorts(ctx, o.Existing+2, readyTimeout, start); err != nil {
		return c, err
	}
	c.Ready = time.Since(start)
	// Events start once the loop is idle: a cold start's last passes (at
	// 100k ports, a full pass of most of a second after the ports are
	// committed) are the cold start's, not the first event's.
	if err := c.idle(ctx, readyTimeout); err != nil {
		return c, fmt.Errorf("after the cold start: %w", err)
	}
	if o.Churn > 0 {
		if err := c.startChurn(ctx, o, readyTimeout); err != nil {
			return c, err
		}
	}
	if o.PodChurn > 0 {
		c.stopPods = make(chan struct{})
		started := make(chan struct{})
		c.podsDone.Add(1)
		go c.podChurn(ctx, o.PodChurn, started)
		// Events start once the pods live are as many as they stay.
		select {
		case <-started:
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
	return c, nil
}

// podChurn creates and deletes pods in namespace ns, rate writes a second
// until StopChurn (see Options.PodChurn). It closes started once rate
// pods live.
func (c *Cluster) podChurn(ctx context.Context, rate int, started chan struct{}) {
	defer c.podsDone.Done()
	pods := c.r.Kube.CoreV1().Pods("ns")
	var live []string
	c.podsChurned.run(ctx, c.stopPods, rate, func(i int) error {
		if len(live) >= rate && i%2 == 1 {
			name := live[0]
			live = live[1:]
			return pods.Delete(ctx, name, metav1.DeleteOptions{})
		}
		name := fmt.Sprintf("churn%d", i)
		if _, err := pods.Create(ctx, looptest.Pod(name), metav1.CreateOptions{}); err != nil {
			return err
		}
		if live = append(live, name); len(live) == rate && started != nil {
			close(started)
			started = nil
		}
		return nil
	})
}

// PodChurned returns how many pods the pod writer created or deleted and
// how many of those writes failed, with the last failure's error.
func (c *Cluster) PodChurned() (writes, failed int64, lastErr string) {
	return c.podsChurned.counts()
}

// writer makes writes at a steady rate, and counts those made and those
// that failed.
type writer struct {
	writes, failed atomic.Int64
	lastErr        atomic.Value
}

// run calls write(i), i from 0, rate times a second until stop is closed
// or ctx done.
func (w *writer) run(ctx context.Context, stop <-chan struct{}, rate int, write func(i int) error) {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := write(i); err != nil {
			w.failed.Add(1)
			w.lastErr.Store(err.Error())
			continue
		}
		w.writes.Add(1)
	}
}

// counts returns the writes made and failed, with the last failure's
// error.
func (w *writer) counts() (writes, failed int64, lastErr string) {
	s, _ := w.lastErr.Load().(string)
	return w.writes.Load(), w.failed.Load(), s
}

// clusterObjects are the objects the fake API servers start with: o.Existing
// pods spread over o.Switches namespaces, two VMs (one running), Sets
// StatefulSets, and a kube-ovn Subnet for every switch but the default
// network's.
func clusterObjects(o Options) (kube, dyn []runtime.Object, resources []*metav1.APIResourceList, err error) {
	kube = make([]runtime.Object, 0, o.Existing+Sets+o.Switches+1)
	for i := range o.Existing {
		p := looptest.Pod(fmt.Sprintf("p%d", i))
		if j := i % max(o.Switches, 1); j > 0 {
			p.Namespace = fmt.Sprintf("ns-%d", j)
		}
		kube = append(kube, p)
	}
	kube = append(kube, looptest.Launcher("vm1", "0", "n1"))
	for j := range max(o.Switches, 1) {
		kube = append(kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(j), Labels: map[string]string{"team": "a"}}})
	}
	for k := range Sets {
		replicas := int32(3)
		kube = append(kube, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("db%d", k), Generation: 1},
			Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "db"},
		})
	}
	objs := []any{looptest.VM("vm0"), looptest.VM("vm1"), looptest.VMI("vm1", "n1")}
	resources = looptest.KubeVirtResources
	for j := 1; j < o.Switches; j++ {
		objs = append(objs, &kubeovnv1.Subnet{
			TypeMeta:   metav1.TypeMeta{APIVersion: kubeovnv1.GroupVersion.String(), Kind: "Subnet"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sub-%d", j)},
			Spec: kubeovnv1.SubnetSpec{Protocol: "IPv4", CIDRBlock: fmt.Sprintf("10.%d.0.0/16", 64+j),
				Namespaces: []string{fmt.Sprintf("ns-%d", j)}},
		})
		if j == 1 {
			resources = append(slices.Clone(resources), &metav1.APIResourceList{GroupVersion: kubeovnv1.GroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: "subnets", Kind: "Subnet"}, {Name: "ips", Kind: "IP"}}})
		}
	}
	for _, obj := range objs {
		u, err := looptest.ToUnstructured(obj)
		if err != nil {
			return nil, nil, nil, err
		}
		dyn = append(dyn, u)
	}
	return kube, dyn, resources, nil
}

// waitPorts waits until the NB holds want ports of ours, started at start.
func (c *Cluster) waitPorts(ctx context.Context, want int, timeout time.Duration, start time.Time) error {
	for deadline := time.Now().Add(timeout); c.r.NB.State().OwnedPorts() < want; {
		if time.Now().After(deadline) {
			return fmt.Errorf("cold start: %d of %d ports after %s", c.r.NB.State().OwnedPorts(), want, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(500*time.Millisecond, time.Since(start)/4+10*time.Millisecond)): // State() at 100k is not free
		}
	}
	return nil
}

// startChurn creates the IP objects kube-ovn would hold and starts o.Churn
// writes a second in the background; it returns once a write of each kind
// was made.
func (c *Cluster) startChurn(ctx context.Context, o Options, timeout time.Duration) error {
	if err := c.createIPObjects(ctx, o.Existing, max(o.Switches, 1)); err != nil {
		return err
	}
	if err := c.idle(ctx, timeout); err != nil {
		return fmt.Errorf("after the IP objects: %w", err)
	}
	c.stopChurn = make(chan struct{})
	c.droppedBefore = c.r.Metric("ovn_sync_changes_dropped_total")
	c.churnDone.Add(1)
	started := make(chan struct{})
	go c.churn(ctx, o.Churn, o.Switches, started)
	// Events start under churn: once a write of each kind was made.
	select {
	case <-started:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// namespaceOf names the namespace of the pods on switch j: ns on the
// default network's, ns-<j> on Subnet sub-<j>'s.
func namespaceOf(j int) string {
	if j == 0 {
		return "ns"
	}
	return fmt.Sprintf("ns-%d", j)
}

// idle waits until the loop has ended no pass for idleBeforeEvents.
func (c *Cluster) idle(ctx context.Context, timeout time.Duration) error {
	passes, still := c.r.Metric("ovn_sync_passes_total"), time.Now()
	for deadline := time.Now().Add(timeout); time.Since(still) < idleBeforeEvents; {
		if time.Now().After(deadline) {
			return fmt.Errorf("the loop was not idle for %s within %s", idleBeforeEvents, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if n := c.r.Metric("ovn_sync_passes_total"); n != passes {
			passes, still = n, time.Now()
		}
	}
	return nil
}

// createIPObjects gives up to IPObjects of the existing pods of namespace
// ns kube-ovn's IP object, as kube-ovn's controller writes one: named
// after the pod's port, holding the port's addresses as the NB has them.
func (c *Cluster) createIPObjects(ctx context.Context, existing, switches int) error {
	have := c.r.NB.State()
	for i := 0; i < existing && len(c.ips) < IPObjects; i += switches {
		name := fmt.Sprintf("p%d.ns", i)
		p := have.Ports.Get(name)
		if p == nil || len(p.Addresses) != 1 {
			return fmt.Errorf("IP object %s: the NB has no port of that name with one entry of addresses", name)
		}
		f := strings.Fields(p.Addresses[0])
		if len(f) != 2 {
			return fmt.Errorf("IP object %s: port addresses %q are not a MAC and an IPv4 address", name, p.Addresses[0])
		}
		ip := &kubeovnv1.IP{
			TypeMeta:   metav1.TypeMeta{APIVersion: kubeovnv1.GroupVersion.String(), Kind: "IP"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"ovn.kubernetes.io/subnet": "ovn-default"}},
			Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("p%d", i), Namespace: "ns", Subnet: "ovn-default", NodeName: "n1",
				IPAddress: f[1], V4IPAddress: f[1], MacAddress: f[0], ContainerID: "c0"},
		}
		u, err := looptest.ToUnstructured(ip)
		if err != nil {
			return err
		}
		if _, err := c.r.Dyn.Resource(gvrIP).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("IP object %s: %w", name, err)
		}
		c.ips = append(c.ips, name)
	}
	return nil
}

// churn writes, rate times a second until Close, in turn: a StatefulSet's
// status (a replica ready), a Namespace's labels, an IP object's node and
// container (the pod created again elsewhere), a Subnet's status (an
// allocation counted). None changes anything ovn-sync reads.
// Once it has made one write of each kind, it closes started.
func (c *Cluster) churn(ctx context.Context, rate, switches int, started chan struct{}) {
	defer c.churnDone.Done()
	c.churned.run(ctx, c.stopChurn, rate, func(i int) error {
		if i == 4 {
			close(started)
		}
		return c.write(ctx, i, switches)
	})
}

// write makes background write i (see churn).
func (c *Cluster) write(ctx context.Context, i, switches int) error {
	n := i / 4
	switch i % 4 {
	case 0:
		sets := c.r.Kube.AppsV1().StatefulSets("ns")
		s, err := sets.Get(ctx, fmt.Sprintf("db%d", n%Sets), metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status.ObservedGeneration = s.Generation
		s.Status.Replicas, s.Status.ReadyReplicas = 3, int32(n%4)
		_, err = sets.UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err
	case 1:
		nss := c.r.Kube.CoreV1().Namespaces()
		ns, err := nss.Get(ctx, namespaceOf(n%switches), metav1.GetOptions{})
		if err != nil {
			return err
		}
		ns.Labels["churn"] = strconv.Itoa(n)
		_, err = nss.Update(ctx, ns, metav1.UpdateOptions{})
		return err
	case 2:
		ips := c.r.Dyn.Resource(gvrIP)
		u, err := ips.Get(ctx, c.ips[n%len(c.ips)], metav1.GetOptions{})
		if err != nil {
			return err
		}
		node := []string{"n1", "n2"}[n%2]
		if err := unstructured.SetNestedField(u.Object, node, "spec", "nodeName"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, "c"+strconv.Itoa(n), "spec", "containerID"); err != nil {
			return err
		}
		_, err = ips.Update(ctx, u, metav1.UpdateOptions{})
		return err
	default:
		subnets := c.r.Dyn.Resource(gvrSubnet)
		u, err := subnets.Get(ctx, fmt.Sprintf("sub-%d", 1+n%(switches-1)), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, int64(n%1000), "status", "v4usingIPs"); err != nil {
			return err
		}
		_, err = subnets.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	}
}

// StopChurn stops the background writers, if they run, and waits for
// them.
func (c *Cluster) StopChurn() {
	if c.stopChurn != nil {
		close(c.stopChurn)
		c.churnDone.Wait()
		c.stopChurn = nil
	}
	if c.stopPods != nil {
		close(c.stopPods)
		c.podsDone.Wait()
		c.stopPods = nil
	}
}

// Churned returns how many background writes were made and how many
// failed, with the last failure's error, and how many changes the loop
// dropped unread since the writer started (ovn_sync_changes_dropped_total).
func (c *Cluster) Churned() (writes, failed int64, lastErr string, dropped float64) {
	writes, failed, lastErr = c.churned.counts()
	return writes, failed, lastErr, c.r.Metric("ovn_sync_changes_dropped_total") - c.droppedBefore
}

// Metric sums the loop's samples of the named metric whose labels include
// every pair of labels ("name", "value", ...).
func (c *Cluster) Metric(name string, labels ...string) float64 { return c.r.Metric(name, labels...) }

// idleBeforeEvents is how long no pass may end before Start returns.
const idleBeforeEvents = 2 * time.Second

// Do makes one event of kind ev and returns the time until another NB
// client saw its port committed. VMStart on a running vm0 and VMStop on a
// stopped one first change it the other way, untimed, as Migration undoes
// itself after the timing.
func (c *Cluster) Do(ctx context.Context, ev Event) (time.Duration, error) {
	// The fake clients record every call they are given; an API server
	// keeps nothing of them in the client.
	c.r.Kube.ClearActions()
	c.r.Dyn.ClearActions()
	pods := c.r.Kube.CoreV1().Pods("ns")
	switch ev {
	case PodAdd:
		c.pods++
		name := fmt.Sprintf("new%d", c.pods)
		return c.timed(ctx, func() error {
			_, err := pods.Create(ctx, looptest.Pod(name), metav1.CreateOptions{})
			return err
		}, portSeen{name + ".ns", "n1"})
	case VMStart:
		if c.vm0 {
			if _, err := c.Do(ctx, VMStop); err != nil {
				return 0, err
			}
		}
		c.launcher++
		c.vm0 = true
		return c.timed(ctx, func() error {
			if err := c.create(ctx, gvrVMI, looptest.VMI("vm0", "n1")); err != nil {
				return err
			}
			_, err := pods.Create(ctx, looptest.Launcher("vm0", fmt.Sprint(c.launcher), "n1"), metav1.CreateOptions{})
			return err
		}, portSeen{"vm0.ns", "n1"})
	case VMStop:
		if !c.vm0 {
			if _, err := c.Do(ctx, VMStart); err != nil {
				return 0, err
			}
		}
		c.vm0 = false
		return c.timed(ctx, func() error {
			if err := pods.Delete(ctx, fmt.Sprintf("virt-launcher-vm0-%d", c.launcher), metav1.DeleteOptions{}); err != nil {
				return err
			}
			return c.r.Dyn.Resource(gvrVMI).Namespace("ns").Delete(ctx, "vm0", metav1.DeleteOptions{})
		}, portSeen{"vm0.ns", ""})
	case Migration:
		c.migrations++
		name, target := fmt.Sprintf("vm1-migration-%d", c.migrations), fmt.Sprintf("t%d", c.migrations)
		d, err := c.timed(ctx, func() error {
			if err := c.create(ctx, gvrMigration, looptest.Migration("vm1", name, "n1", "n2")); err != nil {
				return err
			}
			_, err := pods.Create(ctx, looptest.Launcher("vm1", target, "n2"), metav1.CreateOptions{})
			return err
		}, portSeen{"vm1.ns", "n1,n2"})
		if err != nil {
			return d, err
		}
		_, err = c.timed(ctx, func() error {
			if err := c.r.Dyn.Resource(gvrMigration).Namespace("ns").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			return pods.Delete(ctx, "virt-launcher-vm1-"+target, metav1.DeleteOptions{})
		}, portSeen{"vm1.ns", "n1"})
		return d, err
	}
	return 0, fmt.Errorf("unknown event %q", ev)
}

// timed runs do and waits until the observer sees want.
func (c *Cluster) timed(ctx context.Context, do func() error, want portSeen) (time.Duration, error) {
	for len(c.seen) > 0 {
		<-c.seen
	}
	t0 := time.Now()
	if err := do(); err != nil {
		return 0, err
	}
	timeout := time.NewTimer(c.timeout)
	defer timeout.Stop()
	for {
		select {
		case got := <-c.seen:
			if got == want {
				return time.Since(t0), nil
			}
		case <-timeout.C:
			return 0, fmt.Errorf("port %s with requested-chassis %q not committed within %s", want.name, want.chassis, c.timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (c *Cluster) create(ctx context.Context, gvr schema.GroupVersionResource, o any) error {
	u, err := looptest.ToUnstructured(o)
	if err != nil {
		return err
	}
	_, err = c.r.Dyn.Resource(gvr).Namespace("ns").Create(ctx, u, metav1.CreateOptions{})
	return err
}

// Close ends the loop and disconnects both NB clients. It reports an
// error if an incremental pass differed from a full Build.
func (c *Cluster) Close() error {
	c.StopChurn()
	if c.obs != nil {
		c.obs.Close()
	}
	return c.r.Close()
}

// Percentile returns the p-quantile (0 ≤ p ≤ 1) of lat, the sample at
// rank ⌊p·len⌋ of the sorted samples; 0 for none.
func Percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
