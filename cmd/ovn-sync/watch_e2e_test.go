package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/state"
)

// portLoss records, from the NB's own change feed, every port that was
// deleted or whose addresses changed, so a test can tell afterwards whether
// any of them belonged to an object that still exists. The feed is
// continuous: a port removed and re-created between two samples is caught.
type portLoss struct {
	mu      sync.Mutex
	deleted map[string][]time.Time
	readdr  map[string]string // port → "old → new"
}

func watchPortLoss(nb *observed.NB) *portLoss {
	l := &portLoss{deleted: map[string][]time.Time{}, readdr: map[string]string{}}
	nb.WatchPorts(func(old, cur *state.Port) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case cur == nil:
			l.deleted[old.Name] = append(l.deleted[old.Name], time.Now())
		case old != nil && !slices.Equal(old.Addresses, cur.Addresses):
			l.readdr[cur.Name] = fmt.Sprintf("%q → %q", old.Addresses, cur.Addresses)
		}
	})
	return l
}

// count returns how many port deletions were seen.
func (l *portLoss) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.deleted {
		n += len(at)
	}
	return n
}

// check fails t for every deletion of a port whose pod was not deleted
// before it (pods whose deletion was requested are in deletedAt; those that
// exist at the end are in live), other than the expected ones, and for
// every port whose addresses changed. It returns the number of ports it
// judged.
func (l *portLoss) check(t *testing.T, live map[string]bool, deletedAt map[string]time.Time, expected map[string]int) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for port, at := range l.deleted {
		if n, ok := expected[port]; ok {
			if len(at) != n {
				t.Errorf("port %s deleted %d times (at %v), want %d", port, len(at), at, n)
			}
			continue
		}
		d, requested := deletedAt[port]
		for _, a := range at {
			if live[port] || !requested || a.Before(d) {
				t.Errorf("port %s deleted at %s: its pod exists at the end: %v; deletion requested: %v at %s",
					port, a.Format(time.StampMilli), live[port], requested, d.Format(time.StampMilli))
			}
		}
	}
	for port, change := range l.readdr {
		if _, ok := expected[port]; !ok {
			t.Errorf("port %s changed addresses: %s", port, change)
		}
	}
	return len(live) + len(deletedAt)
}

// churner creates and deletes pods in one namespace, each name used once,
// until stopped. Requests may fail (the API server may be down): the
// truth is what the API server lists afterwards.
type churner struct {
	t    *testing.T
	k    *kubetest.Server
	ns   string
	next atomic.Int64

	mu        sync.Mutex
	live      []string             // pods the churner believes exist, to pick deletes from
	deletedAt map[string]time.Time // port → when its pod's deletion was requested
	stop      chan struct{}
	wg        sync.WaitGroup
	ops       atomic.Int64 // requests that succeeded
}

func (c *churner) create(ctx context.Context) error {
	name := fmt.Sprintf("c-%05d", c.next.Add(1))
	_, err := c.k.Kube.CoreV1().Pods(c.ns).Create(ctx, pausePod(c.ns, name, "node-a"), metav1.CreateOptions{})
	if err == nil {
		c.mu.Lock()
		c.live = append(c.live, name)
		c.mu.Unlock()
		c.ops.Add(1)
	}
	return err
}

func (c *churner) deleteOne(ctx context.Context, rnd *rand.Rand) {
	c.mu.Lock()
	if len(c.live) == 0 {
		c.mu.Unlock()
		return
	}
	i := rnd.IntN(len(c.live))
	name := c.live[i]
	c.live = slices.Delete(c.live, i, i+1)
	c.deletedAt[name+"."+c.ns] = time.Now()
	c.mu.Unlock()
	if err := c.k.Kube.CoreV1().Pods(c.ns).Delete(ctx, name, now); err == nil {
		c.ops.Add(1)
	}
}

// start runs two workers, each creating a pod and, every other time on
// average, deleting a random one, until halt: the set of pods grows and
// changes all the time.
func (c *churner) start() {
	c.stop = make(chan struct{})
	for w := range 2 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), uint64(c.next.Load())))
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = c.create(ctx)
				if rnd.IntN(2) == 0 {
					c.deleteOne(ctx, rnd)
				}
				cancel()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
}

func (c *churner) halt() {
	close(c.stop)
	c.wg.Wait()
}

// truth lists the pods that exist, as the ports ovn-sync should have.
func (c *churner) truth() map[string]bool {
	c.t.Helper()
	l, err := c.k.Kube.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range l.Items {
		want[p.Name+"."+c.ns] = true
	}
	return want
}

// converged waits until the NB holds exactly the ports of want in the
// namespace, and returns how long that took from since.
func converged(t *testing.T, nb *observed.NB, ns string, want map[string]bool, since time.Time, what string) time.Duration {
	t.Helper()
	var took time.Duration
	looptest.WaitFor(t, 30*time.Second, what, func() error {
		var missing, extra []string
		have := map[string]bool{}
		for name, p := range nb.State().Ports.All() {
			if strings.HasSuffix(name, "."+ns) && p.Owned() {
				have[name] = true
				if !want[name] {
					extra = append(extra, name)
				}
			}
		}
		for name := range want {
			if !have[name] {
				missing = append(missing, name)
			}
		}
		if len(missing)+len(extra) > 0 {
			sort.Strings(missing)
			sort.Strings(extra)
			return fmt.Errorf("%d ports missing %v, %d ports of deleted pods left %v", len(missing), head(missing), len(extra), head(extra))
		}
		took = time.Since(since)
		return nil
	})
	return took
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// TestRunAPIWatchBreak breaks ovn-sync's connection to the API server twice
// while pods come and go: first the network between them is cut while the
// API server keeps serving (so pods are created and deleted that ovn-sync
// cannot see), then the API server itself restarts (etcd stays). Through
// both, no port of a pod that exists may be deleted or re-addressed, even
// by the passes run on the informers' stale stores during the gap (forced
// here by deleting one of our ports in the NB again and again); afterwards
// the NB must hold exactly the ports of the pods that exist.
//
// ovn-sync runs with --allow-mass-delete so that the informers' stores
// alone are under test: the mass-delete guard would mask a store emptied by
// the break.
func TestRunAPIWatchBreak(t *testing.T) {
	const ns = "churn"
	e := startEnv(t, envOptions{Namespaces: []string{ns}})
	k, nbs, nb := e.k, e.nbs, e.nb
	proxy := k.Proxy()
	run := e.runWith(runOptions{Kubeconfig: proxy.Kubeconfig, Flags: []string{"--leader-elect=false", "--allow-mass-delete"}})
	loss := watchPortLoss(nb)
	run.waitReady()

	c := &churner{t: t, k: k, ns: ns, deletedAt: map[string]time.Time{}}
	// Pods the churner never deletes: one of them is the drift target.
	for range 30 {
		if err := c.create(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c.live = nil
	const drift = "c-00001." + ns
	expected := map[string]int{}
	converged(t, nb, ns, c.truth(), time.Now(), "initial ports")

	// provoke deletes one of our ports in the NB again and again until the
	// returned func is called, each time waiting for it back: every
	// deletion makes ovn-sync run a pass on whatever its informers hold at
	// that moment. The returned func reports how many times the port was
	// deleted and recreated.
	provoke := func(what string) func() {
		t.Helper()
		stop, done := make(chan struct{}), make(chan error, 1)
		n := 0
		go func() {
			// The watch must have seen the port before it is deleted, and
			// seen it back in a new row before it is deleted again: its
			// cache trails the NB by a few milliseconds. The port is known
			// back by its row, not by its absence in between: ovn-sync may
			// recreate it before the watch looks.
			row, err := waitPort(nb, drift, "")
			for err == nil {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if _, err = nbs.TryNBCtl("lsp-del", drift); err != nil {
					break
				}
				n++
				if row, err = waitPort(nb, drift, row); err != nil {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			done <- err
		}()
		return func() {
			t.Helper()
			close(stop)
			// Not fatal: the deletions check below names what went wrong.
			err := <-done
			expected[drift] += n
			if err != nil {
				t.Errorf("during %s: %v", what, err)
				return
			}
			t.Logf("during %s: %s deleted in the NB %d times, recreated each time", what, drift, n)
		}
	}

	// 1. The network between ovn-sync and the API server is cut; changes
	// continue behind its back.
	c.start()
	time.Sleep(time.Second)
	proxy.Cut()
	cutAt := time.Now()
	done := provoke("the cut")
	time.Sleep(3 * time.Second)
	c.halt()
	want := c.truth()
	done()
	proxy.Restore()
	restored := time.Now()
	took := converged(t, nb, ns, want, restored, "converged after the cut")
	t.Logf("cut for %s (%d API requests succeeded meanwhile or just before): converged %s after the connection came back, %d ports",
		restored.Sub(cutAt).Round(time.Millisecond), c.ops.Load(), took.Round(time.Millisecond), len(want))

	// 2. The API server restarts: churn up to the moment it stops, and
	// again as soon as it is back.
	c.ops.Store(0)
	c.start()
	time.Sleep(time.Second)
	stopAt := time.Now()
	done = provoke("the API server's restart")
	k.StopAPIServer()
	stopped := time.Now()
	c.halt()
	k.StartAPIServer()
	back := time.Now()
	done()
	c.start()
	time.Sleep(time.Second)
	c.halt()
	// Writes work again too: a pod created after the restart is annotated.
	const last = "after-restart"
	createPod(t, k, pausePod(ns, last, "node-a"))
	want = c.truth()
	took = converged(t, nb, ns, want, back, "converged after the API server restarted")
	t.Logf("API server stopped in %s, down for %s: converged %s after it was ready again (%d API requests in the second before and after), %d ports",
		stopped.Sub(stopAt).Round(time.Millisecond), back.Sub(stopAt).Round(time.Millisecond), took.Round(time.Millisecond), c.ops.Load(), len(want))
	looptest.WaitFor(t, 15*time.Second, "pod created after the restart annotated", func() error {
		p, err := k.Kube.CoreV1().Pods(ns).Get(context.Background(), last, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Annotations["ovn.kubernetes.io/allocated"] != "true" {
			return fmt.Errorf("annotations %v", p.Annotations)
		}
		return nil
	})

	c.mu.Lock()
	n := loss.check(t, want, c.deletedAt, expected)
	c.mu.Unlock()
	t.Logf("%d ports judged: none deleted before its pod, none re-addressed; %d deletions seen in the NB", n, loss.count())
}

// waitPort waits up to 15s for nb's cache to hold port name in a row other
// than old (a UUID; "" for any row), and returns that row's UUID.
func waitPort(nb *observed.NB, name, old string) (string, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := nb.State().Ports.Get(name)
		if p != nil && p.UUID != old {
			return p.UUID, nil
		}
		if time.Now().After(deadline) {
			if p != nil {
				return "", fmt.Errorf("port %s still row %s 15s after its deletion", name, old)
			}
			return "", fmt.Errorf("port %s absent for 15s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
