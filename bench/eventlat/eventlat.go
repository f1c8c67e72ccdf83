// Package eventlat measures run mode's latency from a Kubernetes event to
// its port committed in the NB, as another NB client sees the commit, with
// N ports already there. The reconcile loop runs in-process on client-go
// fakes read through the real informers (internal/looptest) against a real
// ovsdb-server the caller starts; a real API server would add its own watch
// latency. Publishing is off.
//
// BenchmarkEventToCommit in cmd/ovn-sync and the harness in
// bench/cmd/ovn-sync-bench both run it: Start sets a cluster up and waits
// for its ports to be committed, Do times one event, Close ends it.
package eventlat

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

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
}

// portSeen is a port's name and requested-chassis as an NB client saw
// them in an insert or an update.
type portSeen struct{ name, chassis string }

var (
	gvrVMI       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrMigration = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}
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
	kube := make([]runtime.Object, 0, o.Existing+1)
	for i := range o.Existing {
		p := looptest.Pod(fmt.Sprintf("p%d", i))
		if j := i % max(o.Switches, 1); j > 0 {
			p.Namespace = fmt.Sprintf("ns-%d", j)
		}
		kube = append(kube, p)
	}
	kube = append(kube, looptest.Launcher("vm1", "0", "n1"))
	objs := []any{looptest.VM("vm0"), looptest.VM("vm1"), looptest.VMI("vm1", "n1")}
	resources := looptest.KubeVirtResources
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
	var dyn []runtime.Object
	for _, obj := range objs {
		u, err := looptest.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		dyn = append(dyn, u)
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
	want := o.Existing + 2
	for deadline := time.Now().Add(readyTimeout); c.r.NB.State().OwnedPorts() < want; {
		if time.Now().After(deadline) {
			return c, fmt.Errorf("cold start: %d of %d ports after %s", c.r.NB.State().OwnedPorts(), want, readyTimeout)
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(min(500*time.Millisecond, time.Since(start)/4+10*time.Millisecond)): // State() at 100k is not free
		}
	}
	c.Ready = time.Since(start)
	// Events start once the loop is idle: a cold start's last passes (at
	// 100k ports, a full pass of most of a second after the ports are
	// committed) are the cold start's, not the first event's.
	passes, still := c.r.Metric("ovn_sync_passes_total"), time.Now()
	for deadline := time.Now().Add(readyTimeout); time.Since(still) < idleBeforeEvents; {
		if time.Now().After(deadline) {
			return c, fmt.Errorf("the loop was not idle for %s within %s of the cold start", idleBeforeEvents, readyTimeout)
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if n := c.r.Metric("ovn_sync_passes_total"); n != passes {
			passes, still = n, time.Now()
		}
	}
	return c, nil
}

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
