package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/bench"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// faultPorts is the size of the cold start every fault test interrupts.
const faultPorts = 10_000

// faultNetFlags give ovn-sync the default network of bench.Config, the one
// the checks build the desired state with.
var faultNetFlags = []string{"--default-subnets", "10.0.0.0/8", "--default-exclude-ips", "10.0.0.1"}

// faultCluster is a generated cluster of faultPorts ports, as manifests and
// as the inputs ovn-sync reads from them, with the names of its ports.
type faultCluster struct {
	dir      string
	in       desired.Inputs
	want     map[string]bool // port names
	switches int
}

var (
	generatedOnce sync.Once
	generated     faultCluster
	generatedErr  error
)

// generatedCluster writes bench.Cluster(faultPorts) as one JSON List
// manifest, once per test binary (beside the binary, which TestMain
// removes), and reads it back the way apply does.
func generatedCluster(t *testing.T) faultCluster {
	t.Helper()
	generatedOnce.Do(func() { generated, generatedErr = writeCluster(faultPorts) })
	if generatedErr != nil {
		t.Fatal(generatedErr)
	}
	return generated
}

func writeCluster(ports int) (faultCluster, error) {
	gen := bench.Cluster(ports)
	var items []any
	for _, p := range gen.Pods {
		items = append(items, p)
	}
	for _, vm := range gen.VirtualMachines {
		items = append(items, vm)
	}
	for _, vmi := range gen.VirtualMachineInstances {
		items = append(items, vmi)
	}
	for _, n := range gen.NetworkAttachmentDefinitions {
		items = append(items, n)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return faultCluster{}, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(binary), "fault")
	if err != nil {
		return faultCluster{}, err
	}
	file := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return faultCluster{}, err
	}
	in, _, err := sources.ReadManifests([]string{dir})
	if err != nil {
		return faultCluster{}, fmt.Errorf("read back %s: %w", file, err)
	}
	r := desired.Build(in, bench.Config(), state.New(0))
	want, problems := r.Want, r.Problems
	if len(problems) > 0 {
		return faultCluster{}, fmt.Errorf("generated cluster has %d problems, first: %s", len(problems), problems[0])
	}
	c := faultCluster{dir: dir, in: in, want: make(map[string]bool, want.Ports.Len()), switches: len(want.Switches)}
	for name := range want.Ports.All() {
		c.want[name] = true
	}
	return c, nil
}

// addedWhileDown returns fc with one more pod, and the manifest that adds
// it. The pod sorts before every generated owner (same zero creation time,
// kind Pod, namespace "a"), so new addresses go to it first.
func addedWhileDown(t *testing.T, fc faultCluster) (faultCluster, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "added.yaml")
	pod := `apiVersion: v1
kind: Pod
metadata: {name: added-while-down, namespace: a, uid: added-while-down}
spec: {nodeName: node-0, containers: [{name: app, image: nginx}]}
status: {phase: Running}
`
	if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _, err := sources.ReadManifests([]string{fc.dir, file})
	if err != nil {
		t.Fatal(err)
	}
	out := faultCluster{dir: fc.dir, in: in, want: maps.Clone(fc.want), switches: fc.switches}
	out.want["added-while-down.a"] = true
	return out, file
}

// faultNB is the NB a fault test runs against: a RAFT cluster or a
// standalone server.
type faultNB struct {
	c *nbtest.Cluster
	s *nbtest.Server
}

// startFaultNB starts a 3-member RAFT cluster or a standalone server.
func startFaultNB(t *testing.T, cluster bool) faultNB {
	t.Helper()
	if cluster {
		return faultNB{c: nbtest.StartCluster(t)}
	}
	return faultNB{s: nbtest.Start(t)}
}

func (n faultNB) addr() string {
	if n.c != nil {
		return n.c.Addr()
	}
	return n.s.Addr()
}

// dial connects a client of the test's own, leader-only like ovn-sync's, so
// that what it reads is committed.
func (n faultNB) dial(t *testing.T) *observed.NB {
	t.Helper()
	eps, err := observed.ParseEndpoints(n.addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: eps, LeaderOnly: n.c != nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	return nb
}

// progress connects a client that follows the writes up to the next
// fault. On a cluster it is a follower's, not leader-only: a leader-only
// client loses its connection with the leader and takes its reconnect
// backoff to come back, long enough for the writes to end unseen; the
// leader is the member the next fault kills.
func (n faultNB) progress(t *testing.T) *observed.NB {
	t.Helper()
	if n.c == nil {
		return n.dial(t)
	}
	leader := n.c.Leader()
	for i := range n.c.Members {
		if i == leader || !n.c.Running(i) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{n.c.Members[i].Addr()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nb.Close)
		return nb
	}
	t.Fatal("no running follower")
	return nil
}

// killLeader kills the cluster's leader and starts the killed member again,
// so that the cluster keeps three members for the next kill. The restart
// returns once the member has rejoined, under the new leader.
func killLeader(t *testing.T, n faultNB) {
	t.Helper()
	i := n.c.KillLeader()
	n.c.Restart(i)
}

func restartNB(t *testing.T, n faultNB) { t.Helper(); n.s.Restart() }

// faultGate is a unix-socket proxy in front of every member of an NB. It
// passes a writer's transactions on until those answered without error
// have inserted at least a given number of ports, and from then on holds
// every new one, relaying nothing more its client sends, until the number
// is raised. A fault struck once the test sees that many ports thus comes
// while the writer waits for an answer, however fast the writer and
// however far the test's own view of the NB trails the server.
type faultGate struct {
	socks []string

	mu       sync.Mutex
	until    int
	inserted int               // ports inserted by transactions answered without error
	raised   chan struct{}     // closed when until is raised
	conns    map[net.Conn]bool // nil once the test has ended
}

func startFaultGate(t *testing.T, n faultNB, until int) *faultGate {
	t.Helper()
	upstreams := []*nbtest.Server{n.s}
	if n.c != nil {
		upstreams = n.c.Members
	}
	dir, err := os.MkdirTemp("", "gate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g := &faultGate{until: until, raised: make(chan struct{}), conns: map[net.Conn]bool{}}
	var conns sync.WaitGroup
	// Closed, not opened, at the end: a transaction held for a writer that
	// is gone must not reach the NB.
	t.Cleanup(func() {
		g.mu.Lock()
		for c := range g.conns {
			c.Close()
		}
		g.conns = nil
		g.mu.Unlock()
		conns.Wait()
	})
	for i, up := range upstreams {
		sock := filepath.Join(dir, fmt.Sprintf("nb%d.sock", i))
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		g.socks = append(g.socks, sock)
		conns.Add(1)
		go func() {
			defer conns.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				go func() { defer conns.Done(); g.serve(c, up.Sock) }()
			}
		}()
	}
	return g
}

// addr lists the gate's sockets, one per member, as --nb takes them.
func (g *faultGate) addr() string {
	eps := make([]string, len(g.socks))
	for i, s := range g.socks {
		eps[i] = "unix:" + s
	}
	return strings.Join(eps, ",")
}

// hold raises the number of ports after which transactions are held.
func (g *faultGate) hold(until int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.until = until
	close(g.raised)
	g.raised = make(chan struct{})
}

// open passes every transaction on from now on, those held included: it
// must not be called while a writer that is gone has one held.
func (g *faultGate) open() { g.hold(math.MaxInt) }

// pass waits until a transaction may be passed on; false if closed first.
func (g *faultGate) pass(closed <-chan struct{}) bool {
	for {
		g.mu.Lock()
		ok, raised := g.inserted < g.until, g.raised
		g.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-raised:
		case <-closed:
			return false
		}
	}
}

// serve relays one client connection, message by message, counting the
// ports each transaction inserts once the server has answered it without
// error.
func (g *faultGate) serve(c net.Conn, upstream string) {
	defer c.Close()
	s, err := net.Dial("unix", upstream)
	if err != nil {
		return
	}
	defer s.Close()
	g.mu.Lock()
	if g.conns == nil {
		g.mu.Unlock()
		return
	}
	g.conns[c], g.conns[s] = true, true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.conns, c)
		delete(g.conns, s)
		g.mu.Unlock()
	}()
	closed := make(chan struct{})
	defer close(closed)
	var mu sync.Mutex
	ports := map[string]int{} // by the id of a transaction passed on
	go func() {
		defer s.Close()
		dec := json.NewDecoder(c)
		for {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return
			}
			var m struct {
				Method string            `json:"method"`
				ID     json.RawMessage   `json:"id"`
				Params []json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(raw, &m)
			if m.Method == "transact" {
				if !g.pass(closed) {
					return
				}
				n := 0
				for _, p := range m.Params {
					var op struct{ Op, Table string }
					if json.Unmarshal(p, &op) == nil && op.Op == ovsdb.OperationInsert && op.Table == nbdb.LogicalSwitchPortTable {
						n++
					}
				}
				mu.Lock()
				ports[string(m.ID)] = n
				mu.Unlock()
			}
			if _, err := s.Write(raw); err != nil {
				return
			}
		}
	}()
	dec := json.NewDecoder(s)
	for {
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return
		}
		var m struct {
			Method string                       `json:"method"`
			ID     json.RawMessage              `json:"id"`
			Result []map[string]json.RawMessage `json:"result"`
			Error  json.RawMessage              `json:"error"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Method == "" {
			mu.Lock()
			n, ok := ports[string(m.ID)]
			delete(ports, string(m.ID))
			mu.Unlock()
			committed := ok && (len(m.Error) == 0 || string(m.Error) == "null")
			for _, r := range m.Result {
				if e, ok := r["error"]; ok && string(e) != "null" {
					committed = false
				}
			}
			if committed {
				g.mu.Lock()
				g.inserted += n
				g.mu.Unlock()
			}
		}
		if _, err := c.Write(raw); err != nil {
			return
		}
	}
}

// portAddrs is every port's addresses, by name.
func portAddrs(s state.State) map[string][]string {
	m := make(map[string][]string, s.Ports.Len())
	for name, p := range s.Ports.All() {
		m[name] = p.Addresses
	}
	return m
}

// portsConverged returns nil if nb holds exactly the cluster's ports, each
// once, no two of them with the same IP or MAC on a switch, and every port
// of before with the addresses it had then.
func portsConverged(nb *observed.NB, fc faultCluster, before map[string][]string) error {
	if n := nb.PortRows(); n < len(fc.want) {
		return fmt.Errorf("%d ports, want %d", n, len(fc.want))
	}
	// The Index lists every row, two of one name too.
	rows := nb.State().Index.Entries()
	var errs []error
	seen := make(map[string]int, len(rows))
	holder := map[string]string{} // switch/address -> port
	for _, e := range rows {
		p := e.Port
		if !p.Owned() {
			continue
		}
		if seen[p.Name]++; seen[p.Name] > 1 {
			errs = append(errs, fmt.Errorf("port %s: %d rows", p.Name, seen[p.Name]))
		}
		if !fc.want[p.Name] {
			errs = append(errs, fmt.Errorf("port %s is not desired", p.Name))
		}
		for _, a := range p.Addresses {
			// "MAC IP...": each is the port's alone on its switch.
			for _, mi := range strings.Fields(a) {
				k := p.Switch + "/" + mi
				if other, ok := holder[k]; ok && other != p.Name {
					errs = append(errs, fmt.Errorf("ports %s and %s share %s", other, p.Name, k))
				}
				holder[k] = p.Name
			}
		}
		if b, ok := before[p.Name]; ok && !slices.Equal(b, p.Addresses) {
			errs = append(errs, fmt.Errorf("port %s addresses %q, before the fault %q", p.Name, p.Addresses, b))
		}
	}
	missing := 0
	for name := range fc.want {
		if seen[name] == 0 {
			if missing++; missing <= 3 {
				errs = append(errs, fmt.Errorf("port %s missing", name))
			}
		}
	}
	if missing > 0 {
		errs = append(errs, fmt.Errorf("%d of %d ports missing", missing, len(fc.want)))
	}
	if len(errs) > 10 {
		errs = append(errs[:10], fmt.Errorf("and %d more", len(errs)-10))
	}
	return errors.Join(errs...)
}

// checkConverged asserts portsConverged on a fresh client, and that a plan of
// the cluster against it, as "ovn-sync plan" makes it, finds nothing to do:
// every column of every row is as desired.
func checkConverged(t *testing.T, n faultNB, fc faultCluster, before map[string][]string) {
	t.Helper()
	nb := n.dial(t)
	if err := portsConverged(nb, fc, before); err != nil {
		t.Fatalf("NB after the faults:\n%v", err)
	}
	if plan := reconcile.Compute(nb, reconcile.All(fc.in), reconcile.Options{Config: bench.Config()}).Plan; !plan.Empty() {
		t.Fatalf("plan after the faults is not empty:\n%s", faultTail(plan.String(), 2000))
	}
}

func faultTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// waitRows waits until nb holds at least n ports, failing if done
// is closed first: the fault must come while the cold start is under way.
func waitRows(t *testing.T, nb *observed.NB, n int, done <-chan struct{}, what string, why func() string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	table := nb.PortRows
	for table() < n {
		select {
		case <-done:
			t.Fatalf("%s finished with %d ports before the fault at %d ports: %s", what, table(), n, why())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d ports after 90s, waiting for %d", what, table(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// applyProc is an "ovn-sync apply -o json" child process.
type applyProc struct {
	*child
	stdout, stderr bytes.Buffer
}

func startApply(t *testing.T, fc faultCluster, addr string, extra ...string) *applyProc {
	t.Helper()
	args := append(append([]string{"apply", "-f", fc.dir, "--nb", addr, "-o", "json"}, faultNetFlags...), extra...)
	p := &applyProc{}
	p.child = startChild(t, append([]string{binary}, args...), nil, &p.stdout, &p.stderr)
	return p
}

func (p *applyProc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.exit
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("apply did not finish within %s\nstderr:\n%s", timeout, faultTail(p.stderr.String(), 3000))
		return 0
	}
}

// report reads an apply's JSON report: the transactions sent, those sent
// more than once, and the ports created by transactions that were answered.
func (p *applyProc) report(t *testing.T) (txns, retried, created int) {
	t.Helper()
	var r struct{ Applied *apply.Result }
	if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, faultTail(p.stdout.String(), 2000))
	}
	for _, x := range r.Applied.Txns {
		if x.Attempts > 1 {
			retried++
		}
	}
	return len(r.Applied.Txns), retried, r.Applied.Created
}

// TestFaultApply interrupts a one-shot cold start of 10k ports. When the NB
// fails (its RAFT leader killed, a standalone server restarted) the same
// apply run survives and exits 0; when apply itself is killed, a second run
// completes the work. Either way the NB ends with every desired port exactly
// once, no IP twice, and every port that existed before the fault with the
// addresses it had.
func TestFaultApply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		// at are the fractions of the ports written at which fault strikes.
		at []float64
		// slow, when set, are flags that make smaller transactions, so
		// that the cold start lasts past two leader changes.
		slow  []string
		fault func(*testing.T, faultNB, *applyProc)
		// rerun: the fault ends apply; a second run must converge.
		rerun bool
	}{
		{name: "cluster-leader-killed", cluster: true, at: []float64{0.2, 0.5}, slow: []string{"--max-ops-per-txn", "400"},
			fault: func(t *testing.T, n faultNB, _ *applyProc) { killLeader(t, n) }},
		{name: "nb-restarted", at: []float64{0.3},
			fault: func(t *testing.T, n faultNB, _ *applyProc) { restartNB(t, n) }},
		{name: "apply-killed", at: []float64{0.4}, rerun: true,
			fault: func(t *testing.T, _ faultNB, p *applyProc) { _ = p.cmd.Process.Kill(); <-p.done }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := generatedCluster(t)
			n := startFaultNB(t, tc.cluster)
			at := func(i int) int { return int(tc.at[i] * float64(len(fc.want))) }
			g := startFaultGate(t, n, at(0))
			start := time.Now()
			p := startApply(t, fc, g.addr(), tc.slow...)
			before := map[string][]string{}
			var last time.Time
			for i := range tc.at {
				watch := n.progress(t)
				waitRows(t, watch, at(i), p.done, "apply", func() string {
					return fmt.Sprintf("exit %d; NB: %v\nstderr:\n%s", p.exit, portsConverged(n.dial(t), fc, nil), faultTail(p.stderr.String(), 3000))
				})
				maps := portAddrs(watch.State())
				for k, v := range maps {
					before[k] = v
				}
				tc.fault(t, n, p)
				last = time.Now()
				t.Logf("fault at %d ports, %s into the apply", len(maps), last.Sub(start).Round(time.Millisecond))
				switch {
				case i+1 < len(tc.at):
					g.hold(at(i + 1))
				case !tc.rerun: // a killed apply's held transaction stays held
					g.open()
				}
			}
			code := p.wait(t, 90*time.Second)
			if tc.rerun {
				if code != -1 {
					t.Fatalf("killed apply exited %d, want killed by a signal", code)
				}
				// What the killed run committed is what must be kept.
				before = portAddrs(n.dial(t).State())
				t.Logf("apply killed with %d ports written", len(before))
				// A pod appeared meanwhile, first in allocation order: were
				// addresses not sticky, every port would move up one.
				var file string
				fc, file = addedWhileDown(t, fc)
				p = startApply(t, fc, n.addr(), "-f", file)
				code = p.wait(t, 90*time.Second)
			}
			if code != 0 {
				t.Fatalf("apply after the faults: exit %d\nstderr:\n%s", code, faultTail(p.stderr.String(), 3000))
			}
			txns, retried, created := p.report(t)
			t.Logf("%d ports; %d faults; converged %s after the last; %d transactions, %d retried after a lost connection",
				len(fc.want), len(tc.at), time.Since(last).Round(time.Millisecond), txns, retried)
			if !tc.rerun {
				// What this run wrote but does not count as created was
				// committed by a transaction whose answer was lost.
				t.Logf("%d ports and switches committed by transactions whose answer was lost", len(fc.want)+fc.switches-created)
			}
			checkConverged(t, n, fc, before)
		})
	}
}

// TestFaultRun interrupts run mode's cold start of 10k ports: the reconcile
// loop, fed by fake Kubernetes clients and connected as "ovn-sync run"
// connects, rides out the NB's failure and converges as in TestFaultApply.
func TestFaultRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		at      []float64
		fault   func(*testing.T, faultNB)
	}{
		{name: "cluster-leader-killed", cluster: true, at: []float64{0.2, 0.6}, fault: killLeader},
		{name: "nb-restarted", at: []float64{0.3}, fault: restartNB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := generatedCluster(t)
			n := startFaultNB(t, tc.cluster)
			watch := n.dial(t)
			at := func(i int) int { return int(tc.at[i] * float64(len(fc.want))) }
			g := startFaultGate(t, n, at(0))
			start := time.Now()
			r := startFaultRunner(t, g.addr(), fc.in)
			before := map[string][]string{}
			var last time.Time
			for i, f := range tc.at {
				progress := n.progress(t)
				waitRows(t, progress, at(i), nil, "run", nil)
				maps := portAddrs(progress.State())
				if len(maps) >= len(fc.want) {
					t.Fatalf("run wrote all %d ports before the fault at %.0f%%", len(maps), 100*f)
				}
				for k, v := range maps {
					before[k] = v
				}
				tc.fault(t, n)
				last = time.Now()
				t.Logf("fault at %d ports, %s into the run", len(maps), last.Sub(start).Round(time.Millisecond))
				if i+1 < len(tc.at) {
					g.hold(at(i + 1))
				} else {
					g.open()
				}
			}
			looptest.WaitFor(t, 90*time.Second, "run converges", func() error {
				if ok, why := r.Loop.Ready(); !ok {
					return errors.New(why)
				}
				return portsConverged(watch, fc, before)
			})
			t.Logf("%d ports; %d faults; converged %s after the last; %v reconnects seen",
				len(fc.want), len(tc.at), time.Since(last).Round(time.Millisecond), r.Metric("ovn_sync_nb_reconnects_total"))
			checkConverged(t, n, fc, before)
		})
	}
}

// startFaultRunner runs the reconcile loop in-process on fake Kubernetes
// clients holding in, connected to the NB at addr with the flags and code
// path of "ovn-sync run".
func startFaultRunner(t *testing.T, addr string, in desired.Inputs) *looptest.Runner {
	t.Helper()
	kubeObjs, dynObjs, nads := looptest.Objects(t, in)
	rf := newRunFlags(io.Discard)
	rf.nb.addr = addr
	cfg := bench.Config()
	return looptest.Start(t, looptest.Options{
		KubeObjs: kubeObjs, DynObjs: dynObjs, NADs: nads, Config: &cfg, Coalesce: 10 * time.Millisecond,
		Resources: append(slices.Clone(looptest.KubeVirtResources), looptest.MultusResources),
		Dial:      rf.nb.connect,
	})
}

// answerDropper is a unix-socket proxy in front of an NB that lets the n-th
// transact of all its connections reach the server, then drops that
// connection without passing on anything the server sends from then on,
// the transaction's answer and updates included: the transaction commits
// and its client never hears of it. Later connections pass through.
type answerDropper struct {
	sock     string
	upstream string
	n        int32
	seen     atomic.Int32
	dropped  atomic.Bool
}

func startAnswerDropper(t *testing.T, upstream string, n int32) *answerDropper {
	t.Helper()
	dir, err := os.MkdirTemp("", "drop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &answerDropper{sock: filepath.Join(dir, "nb.sock"), upstream: upstream, n: n}
	l, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); d.serve(c) }()
		}
	}()
	return d
}

func (d *answerDropper) addr() string { return "unix:" + d.sock }

// serve relays one client connection, message by message.
func (d *answerDropper) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("unix", d.upstream)
	if err != nil {
		return
	}
	defer s.Close()
	var mu sync.Mutex
	var target json.RawMessage // the id of the transact whose answer is dropped
	go func() {
		defer s.Close()
		dec := json.NewDecoder(c)
		for {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return
			}
			var m struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(raw, &m)
			if m.Method == "transact" && !d.dropped.Load() && d.seen.Add(1) == d.n {
				mu.Lock()
				target = m.ID
				mu.Unlock()
			}
			if _, err := s.Write(raw); err != nil {
				return
			}
		}
	}()
	dec := json.NewDecoder(s)
	for {
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return
		}
		mu.Lock()
		dropping := target != nil
		mu.Unlock()
		if !dropping {
			if _, err := c.Write(raw); err != nil {
				return
			}
			continue
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(raw, &m)
		if bytes.Equal(m.ID, target) {
			// Committed and answered: the client gets neither.
			d.dropped.Store(true)
			return
		}
	}
}

// TestFaultApplyAnswerLost loses the answer of a transaction that
// committed, as when a server dies between commit and reply. Apply sends it
// again after reconnecting; the retry fails on the names the first one took,
// which must count as a stale plan, recomputed from the refreshed cache: no
// port twice, none with a second set of addresses, and apply exits 0.
func TestFaultApplyAnswerLost(t *testing.T) {
	fc := generatedCluster(t)
	s := nbtest.Start(t)
	// The first transaction creates the switches; the third is well into
	// the ports.
	d := startAnswerDropper(t, s.Sock, 3)
	start := time.Now()
	p := startApply(t, fc, d.addr())
	if code := p.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("apply: exit %d\nstderr:\n%s", code, faultTail(p.stderr.String(), 3000))
	}
	if !d.dropped.Load() {
		t.Fatalf("apply sent %d transactions: no answer was dropped", d.seen.Load())
	}
	txns, retried, created := p.report(t)
	lost := len(fc.want) + fc.switches - created
	t.Logf("%d ports in %s; %d transactions, %d retried; %d ports committed by the transaction whose answer was lost",
		len(fc.want), time.Since(start).Round(time.Millisecond), txns, retried, lost)
	if retried == 0 || lost == 0 {
		t.Errorf("retried %d transactions and found %d ports created unanswered; want both > 0", retried, lost)
	}
	checkConverged(t, faultNB{s: s}, fc, nil)
}
