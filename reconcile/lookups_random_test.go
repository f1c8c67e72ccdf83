package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// TestLoopLookupsRandom runs the loop as run mode does, passes looking
// objects up in the informers' stores and unchecked, while random
// Kubernetes changes arrive faster than passes end: pods created (some
// asking for an address another may hold) and deleted, and VMs started,
// migrated (a second launcher pod, then the source's gone), failing to
// migrate (the target pod gone at once) and stopped.
// Verified passes (every other loop test) list the stores instead, so
// only this test and TestLoopIncrementalPasses run the lookups against a
// stream of events. Throughout, no port's addresses may change while it
// exists (nothing edits the NB but ovn-sync); whenever the changes pause
// the NB must come to what a full Build of the stores wants; at the end no
// address may be held twice.
func TestLoopLookupsRandom(t *testing.T) {
	if looptest.FullPasses() {
		t.Skip("OVN_SYNC_FULL_PASSES: no incremental pass to check")
	}
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { testLoopLookupsRandom(t, seed) })
	}
}

func testLoopLookupsRandom(t *testing.T, seed uint64) {
	const vms = 4
	var dyn []runtime.Object
	for i := range vms {
		dyn = append(dyn, looptest.Unstructured(t, looptest.VM(fmt.Sprintf("vm%d", i))))
	}
	tr := looptest.Start(t, looptest.Options{DynObjs: dyn, Passes: "incremental"})
	tr.WaitPorts(t, "the stopped VMs' ports", vms)

	// Every snapshot the NB cache hands out: a port keeps its addresses.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string][]string{}
	var changedAddrs []string
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop) // before the runner's: the NB is closed after
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			s := tr.NB.State()
			mu.Lock()
			for name, p := range s.Ports.All() {
				if !p.Owned() {
					continue
				}
				if a, ok := seen[name]; !ok {
					seen[name] = p.Addresses
				} else if !slices.Equal(a, p.Addresses) {
					changedAddrs = append(changedAddrs, fmt.Sprintf("%s: %q, then %q", name, a, p.Addresses))
					seen[name] = p.Addresses
				}
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()

	c := &churn{t: t, tr: tr, r: rand.New(rand.NewPCG(seed, 7)), vms: make([]vmState, vms)}
	for i := range 200 {
		c.step()
		if c.r.IntN(4) == 0 {
			time.Sleep(time.Duration(c.r.IntN(3000)) * time.Microsecond)
		}
		if i%25 == 24 {
			// Quiet for a moment: the NB must come to what a full Build
			// of the stores wants, VMs migrating or not.
			looptest.WaitFor(t, 20*time.Second, "the NB as a full Build of the stores wants it", func() error {
				have := tr.NB.State()
				want := desired.Build(tr.Src.Inputs().Inputs, tr.Config, have).Want
				if p := diff.Compute(want, have, diff.Policy{}); !p.Empty() {
					return fmt.Errorf("pending after step %d:\n%s", i, p)
				}
				return nil
			})
		}
	}
	t.Logf("%d pods created, %d deleted; VMs started %d, migrated %d, failed to migrate %d, stopped %d times",
		c.created, c.deleted, c.started, c.migrated, c.failed, c.stopped)
	stop()
	for _, s := range changedAddrs {
		t.Errorf("a port's addresses changed: %s", s)
	}
	holders := map[string]string{}
	for name, p := range tr.NB.State().Ports.All() {
		for _, a := range p.Addresses {
			for _, w := range strings.Fields(a) {
				if _, err := netip.ParseAddr(w); err != nil {
					continue
				}
				if other, ok := holders[w]; ok {
					t.Errorf("%s is held by both %s and %s", w, other, name)
				}
				holders[w] = name
			}
		}
	}
	if n := tr.Metric("ovn_sync_builds_total", "kind", "incremental"); n < 20 {
		t.Errorf("%v incremental builds: the passes did not look objects up", n)
	}
}

// vmState is where a VM is in its life: stopped (no VMI), running on the
// node of its one launcher pod, or migrating to a second one.
type vmState struct {
	running, migrating bool
	launchers          []string // source first
	nodes              []string
	launched           int // launcher pods made, for their names
	migrations         int
}

// churn makes random changes through the fake clients.
type churn struct {
	t                 *testing.T
	tr                *looptest.Runner
	r                 *rand.Rand
	vms               []vmState
	pods              []string
	created, deleted  int
	started, migrated int
	failed, stopped   int
}

func (c *churn) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *churn) step() {
	ctx := context.Background()
	pods := c.tr.Kube.CoreV1().Pods("ns")
	switch k := c.r.IntN(10); {
	case k < 4 || len(c.pods) == 0: // a pod, a third of them asking for a low address
		name := fmt.Sprintf("p%d", c.created)
		p := looptest.Pod(name)
		if c.r.IntN(3) == 0 {
			p.Annotations = map[string]string{"ovn.kubernetes.io/ip_address": fmt.Sprintf("10.16.0.%d", 2+c.r.IntN(30))}
		}
		_, err := pods.Create(ctx, p, metav1.CreateOptions{})
		c.must(err)
		c.pods = append(c.pods, name)
		c.created++
	case k < 6:
		i := c.r.IntN(len(c.pods))
		c.must(pods.Delete(ctx, c.pods[i], metav1.DeleteOptions{}))
		c.pods = slices.Delete(c.pods, i, i+1)
		c.deleted++
	default:
		c.vmStep(c.r.IntN(len(c.vms)))
	}
}

// vmStep moves VM i on: a stopped VM starts; a running one migrates or
// stops; a migrating one finishes (or stops).
func (c *churn) vmStep(i int) {
	ctx := context.Background()
	vm := fmt.Sprintf("vm%d", i)
	s := &c.vms[i]
	pods := c.tr.Kube.CoreV1().Pods("ns")
	vmis := c.tr.Dyn.Resource(sources.GVRVirtualMachineInstance).Namespace("ns")
	migrations := c.tr.Dyn.Resource(sources.GVRVirtualMachineInstanceMigration).Namespace("ns")
	launch := func(node string) {
		name := fmt.Sprint(s.launched)
		s.launched++
		_, err := pods.Create(ctx, looptest.Launcher(vm, name, node), metav1.CreateOptions{})
		c.must(err)
		s.launchers = append(s.launchers, "virt-launcher-"+vm+"-"+name)
		s.nodes = append(s.nodes, node)
	}
	migration := func() string { return fmt.Sprintf("%s-mig%d", vm, s.migrations) }
	switch {
	case !s.running:
		node := fmt.Sprintf("n%d", 1+c.r.IntN(3))
		_, err := vmis.Create(ctx, looptest.Unstructured(c.t, looptest.VMI(vm, node)), metav1.CreateOptions{})
		c.must(err)
		launch(node)
		s.running = true
		c.started++
	case c.r.IntN(3) == 0: // stop: the VMI, its launcher pods and migration go
		c.must(vmis.Delete(ctx, vm, metav1.DeleteOptions{}))
		for _, l := range s.launchers {
			c.must(pods.Delete(ctx, l, metav1.DeleteOptions{}))
		}
		if s.migrating {
			c.must(migrations.Delete(ctx, migration(), metav1.DeleteOptions{}))
			s.migrations++
		}
		*s = vmState{launched: s.launched, migrations: s.migrations}
		c.stopped++
	case !s.migrating:
		target := fmt.Sprintf("n%d", 4+c.r.IntN(3))
		_, err := migrations.Create(ctx, looptest.Unstructured(c.t, looptest.Migration(vm, migration(), s.nodes[0], target)), metav1.CreateOptions{})
		c.must(err)
		launch(target)
		s.migrating = true
		if c.r.IntN(3) == 0 {
			// It fails at once: the target pod and the migration go,
			// perhaps before a pass was told of them.
			c.must(pods.Delete(ctx, s.launchers[1], metav1.DeleteOptions{}))
			c.must(migrations.Delete(ctx, migration(), metav1.DeleteOptions{}))
			s.launchers, s.nodes = s.launchers[:1], s.nodes[:1]
			s.migrating = false
			s.migrations++
			c.failed++
		}
	default: // the migration succeeds: the VMI runs on the target, the source pod goes
		u, err := vmis.Get(ctx, vm, metav1.GetOptions{})
		c.must(err)
		c.must(unstructured.SetNestedField(u.Object, s.nodes[1], "status", "nodeName"))
		_, err = vmis.Update(ctx, u, metav1.UpdateOptions{})
		c.must(err)
		c.must(pods.Delete(ctx, s.launchers[0], metav1.DeleteOptions{}))
		c.must(migrations.Delete(ctx, migration(), metav1.DeleteOptions{}))
		s.launchers, s.nodes = s.launchers[1:], s.nodes[1:]
		s.migrating = false
		s.migrations++
		c.migrated++
	}
}
