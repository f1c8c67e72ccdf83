package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// Phases of Apply, in the order it runs them.
const (
	phaseSwitches = iota
	phaseDeletes
	phaseUpserts
	phaseSwitchDeletes
)

// phaseOf tells which phase of Apply sent ops.
func phaseOf(ops []ovsdb.Operation) int {
	op := ops[0]
	switch {
	case op.Table == nbdb.LogicalSwitchPortTable:
		return phaseUpserts
	case op.Op == ovsdb.OperationWait && op.Columns[0] == colPorts:
		return phaseSwitchDeletes
	case op.Op == ovsdb.OperationMutate && op.Mutations[0].Column == colPorts && op.Mutations[0].Mutator == ovsdb.MutateOperationDelete:
		return phaseDeletes
	case op.Op == ovsdb.OperationMutate && op.Mutations[0].Column == colPorts:
		return phaseUpserts // a transaction of port updates and creates ends with these
	default:
		return phaseSwitches
	}
}

// recorder passes transactions on after a delay, long enough for every
// transaction Apply has in flight to be in Transact at once, and checks
// that those in flight together are of one phase and that phases follow
// each other in order.
type recorder struct {
	Transactor
	t     *testing.T
	delay time.Duration

	mu       sync.Mutex
	inFlight map[int]int // phase -> transactions in Transact
	phase    int         // of the last transaction to enter Transact
	max      int         // most transactions in Transact at once
}

func newRecorder(t *testing.T, c Transactor, delay time.Duration) *recorder {
	return &recorder{Transactor: c, t: t, delay: delay, inFlight: map[int]int{}}
}

func (r *recorder) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	p := phaseOf(ops)
	r.mu.Lock()
	for q, n := range r.inFlight {
		if q != p && n > 0 {
			r.t.Errorf("a transaction of phase %d sent while %d of phase %d are in flight", p, n, q)
		}
	}
	if p < r.phase {
		r.t.Errorf("a transaction of phase %d sent after one of phase %d", p, r.phase)
	}
	r.phase = p
	r.inFlight[p]++
	total := 0
	for _, n := range r.inFlight {
		total += n
	}
	r.max = max(r.max, total)
	r.mu.Unlock()

	time.Sleep(r.delay)
	res, err := r.Transactor.Transact(ctx, ops...)

	r.mu.Lock()
	r.inFlight[p]--
	r.mu.Unlock()
	return res, err
}

// TestApplyPipelined runs, with transactions in flight, a plan in which
// every phase depends on the one before: ports move to a switch the plan
// creates (a delete and a create of the same name), new ports go on that
// switch, and the switch they left is deleted.
func TestApplyPipelined(t *testing.T) {
	for _, inFlight := range []int{1, 4} {
		t.Run(fmt.Sprintf("in flight %d", inFlight), func(t *testing.T) {
			forEachNB(t, func(t *testing.T, c client.Client) { testApplyPipelined(t, c, inFlight) })
		})
	}
}

func testApplyPipelined(t *testing.T, c client.Client, inFlight int) {
	opts := Options{MaxOpsPerTxn: 10, InFlight: inFlight}
	one := &state.Switch{Name: "one", Owner: "ovn-sync", Network: "default"}
	two := &state.Switch{Name: "two", Owner: "ovn-sync", Network: "default"}
	admin := &state.Switch{Name: "admin"}
	transact(t, c, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, Row: ovsdb.Row{colName: "admin"}})

	var before []*state.Port
	for i := range 60 {
		before = append(before, port(fmt.Sprintf("p%02d", i), "one", "Pod/ns/p", fmt.Sprintf("addr %d", i), "n1"))
	}
	if _, _, err := converge(t, c, st([]*state.Switch{one, admin}, before...), opts); err != nil {
		t.Fatal(err)
	}
	old := dump(t, c)

	// p00-p49 move to two, p50-p59 go, q00-q29 are new on two; one is
	// deleted, admin (not ours) stays.
	want := st([]*state.Switch{two, admin})
	for i := range 50 {
		p := port(fmt.Sprintf("p%02d", i), "two", "Pod/ns/p", fmt.Sprintf("addr %d", i), "n2")
		want.Ports.Set(p.Name, p)
	}
	for i := range 30 {
		p := port(fmt.Sprintf("q%02d", i), "two", "Pod/ns/q", fmt.Sprintf("addr q%d", i), "n2")
		want.Ports.Set(p.Name, p)
	}
	plan := diff.Compute(want, old.state(), diff.Policy{})
	if n := plan.Counts(); n.Add != 81 || n.Destroy != 61 {
		t.Fatalf("Compute = %+v, want 81 creates (switch two, 50 moves, 30 new) and 61 deletes", n)
	}
	rec := newRecorder(t, c, 20*time.Millisecond)
	res, err := Apply(testCtx(t), rec, plan, opts)
	if err != nil {
		t.Fatalf("Apply(%d changes, in flight %d) = %v", len(plan.Changes), inFlight, err)
	}
	// 1 switch create; 60 port deletes at 10 a transaction; 80 creates at 9
	// and a mutate a transaction; 1 switch delete.
	if len(res.Txns) != 1+6+9+1 || res.Created != 81 || res.Deleted != 61 {
		t.Errorf("Apply = %d txns, %d created, %d deleted; want 17, 81, 61", len(res.Txns), res.Created, res.Deleted)
	}
	if rec.max != inFlight {
		t.Errorf("at most %d transactions were in flight at once, want %d", rec.max, inFlight)
	}

	after := dump(t, c)
	if again := diff.Compute(want, after.state(), diff.Policy{}); !again.Empty() {
		t.Errorf("after Apply, Compute finds more to do:\n%s", again)
	}
	if _, ok := after.switches["one"]; ok {
		t.Errorf("switch one not deleted")
	}
	for name, lsp := range after.ports {
		if sw := after.on[lsp.UUID]; sw != "two" {
			t.Errorf("port %q is on switch %q, want two", name, sw)
		}
		if o, ok := old.ports[name]; ok && o.UUID == lsp.UUID {
			t.Errorf("moved port %q kept its row", name)
		}
	}
	if len(after.ports) != 80 {
		t.Errorf("NB holds %d ports, want 80", len(after.ports))
	}
}

// fakeNB answers transactions without a server: each operation succeeds,
// unless answer says otherwise for the transaction whose first insert is
// of the port it names.
type fakeNB struct {
	// answer, given the name of the first port a transaction inserts,
	// returns how long to take and whether to fail the insert.
	answer func(port string) (time.Duration, bool)

	mu    sync.Mutex
	calls int
}

func (f *fakeNB) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	name, _ := ops[0].Row[colName].(string)
	wait, fail := f.answer(name)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(wait):
	}
	res := make([]ovsdb.OperationResult, len(ops))
	for i, op := range ops {
		switch op.Op {
		case ovsdb.OperationInsert:
			res[i].UUID = ovsdb.UUID{GoUUID: fmt.Sprintf("uuid-%s-%d", name, i)}
		case ovsdb.OperationMutate:
			res[i].Count = 1
		}
	}
	if fail {
		res[0] = ovsdb.OperationResult{Error: "constraint violation", Details: "name taken"}
	}
	return res, nil
}

// creates is a plan of n port creates on the observed switch sw, p00
// first.
func creates(n int) diff.Plan {
	var plan diff.Plan
	for i := range n {
		p := port(fmt.Sprintf("p%02d", i), "sw", "Pod/ns/p", "addr", "n1")
		plan.Changes = append(plan.Changes, diff.Change{Action: diff.Create, Kind: diff.KindPort, Name: p.Name, After: p, SwitchUUID: "LS1"})
	}
	return plan
}

func TestApplyPipelinedFailure(t *testing.T) {
	// Five transactions of 10 ports; three in flight. The third fails at
	// once, the second after a while; the first succeeds last. Apply sends
	// no fourth, waits for all three, and reports the second.
	f := &fakeNB{answer: func(port string) (time.Duration, bool) {
		switch port {
		case "p00":
			return 300 * time.Millisecond, false
		case "p10":
			return 150 * time.Millisecond, true
		case "p20":
			return 0, true
		}
		return 0, false
	}}
	res, err := Apply(testCtx(t), f, creates(50), Options{MaxOpsPerTxn: 11, InFlight: 3})
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "transaction 2 (11 ops)") {
		t.Errorf("Apply = %v, want ErrStale naming transaction 2", err)
	}
	if f.calls != 3 || len(res.Txns) != 3 {
		t.Errorf("Apply sent %d transactions (Result: %d), want 3: none after a failure", f.calls, len(res.Txns))
	}
	if res.Created != 10 || res.Ops != 11 {
		t.Errorf("Apply = %+v, want the first transaction's 10 creates in 11 ops counted", res)
	}
}

// TestApplyPipelinedStale checks against a server that a transaction
// failing among others in flight stops Apply with ErrStale, and that the
// Result counts exactly what the NB holds.
func TestApplyPipelinedStale(t *testing.T) { forEachNB(t, testApplyPipelinedStale) }

func testApplyPipelinedStale(t *testing.T, c client.Client) {
	sw := &state.Switch{Name: "sw", Owner: "ovn-sync"}
	if _, _, err := converge(t, c, st([]*state.Switch{sw}), Options{}); err != nil {
		t.Fatal(err)
	}
	want := st([]*state.Switch{sw})
	for i := range 50 {
		p := port(fmt.Sprintf("p%02d", i), "sw", "Pod/ns/p", fmt.Sprintf("addr %d", i), "n1")
		want.Ports.Set(p.Name, p)
	}
	plan := diff.Compute(want, dump(t, c).state(), diff.Policy{})
	addForeignPort(t, c, "sw", "p15") // in the second transaction

	rec := newRecorder(t, c, 20*time.Millisecond)
	res, err := Apply(testCtx(t), rec, plan, Options{MaxOpsPerTxn: 11, InFlight: 3})
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "transaction 2 (11 ops)") || !strings.Contains(err.Error(), "constraint violation") {
		t.Errorf("Apply(%d creates, p15 taken) = %v, want ErrStale naming transaction 2", len(plan.Changes), err)
	}
	ours := 0
	for _, lsp := range dump(t, c).ports {
		if lsp.ExternalIDs[state.KeyOwner] != "" {
			ours++
		}
	}
	if ours != res.Created || ours%10 != 0 || ours > 40 {
		t.Errorf("NB holds %d of our ports, Apply created %d; want equal, whole transactions, not the failed one", ours, res.Created)
	}
	if len(res.Txns) < 2 || res.Txns[1].Ops != 11 {
		t.Errorf("Apply = %+v, want the failed transaction 2 among those sent", res)
	}
}

func TestApplyPipelinedCancel(t *testing.T) {
	// Every transaction waits for the context; once three are in flight
	// the context is cancelled.
	arrived := make(chan struct{}, 10)
	var mu sync.Mutex
	inFlight := 0
	f := &fakeNB{answer: func(string) (time.Duration, bool) {
		mu.Lock()
		inFlight++
		mu.Unlock()
		arrived <- struct{}{}
		return time.Hour, false
	}}
	g := &gauge{Transactor: f, done: func() { mu.Lock(); inFlight--; mu.Unlock() }}
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		for range 3 {
			<-arrived
		}
		cancel()
	}()
	res, err := Apply(ctx, g, creates(50), Options{MaxOpsPerTxn: 11, InFlight: 3})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Apply, cancelled with 3 in flight = %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if f.calls != 3 || inFlight != 0 || len(res.Txns) != 3 || res.Created != 0 {
		t.Errorf("Apply, cancelled with 3 in flight, sent %d and returned with %d in flight, Result %+v; want 3 sent, all answered, nothing created",
			f.calls, inFlight, res)
	}
}

// gauge calls done when each transaction returns.
type gauge struct {
	Transactor
	done func()
}

func (g *gauge) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	defer g.done()
	return g.Transactor.Transact(ctx, ops...)
}

// TestApplyPipelinedRetries checks that transactions in flight together
// are each retried after client.ErrNotConnected.
func TestApplyPipelinedRetries(t *testing.T) {
	f := &flaky{Transactor: &fakeNB{answer: func(string) (time.Duration, bool) { return 10 * time.Millisecond, false }}, fails: 3}
	quick := func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }
	res, err := Apply(testCtx(t), f, creates(50), Options{MaxOpsPerTxn: 11, InFlight: 3, NewBackOff: quick})
	if err != nil || res.Created != 50 || len(res.Txns) != 5 {
		t.Fatalf("Apply after 3 disconnects = %+v, %v; want 50 created in 5 transactions", res, err)
	}
	attempts := 0
	for _, tx := range res.Txns {
		attempts += tx.Attempts
	}
	if attempts != 5+3 || f.calls != 5+3 {
		t.Errorf("Apply after 3 disconnects: %d attempts, %d calls; want 8", attempts, f.calls)
	}
}
