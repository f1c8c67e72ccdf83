package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
)

// DefaultMaxOpsPerTxn is the default of Options.MaxOpsPerTxn.
const DefaultMaxOpsPerTxn = 1000

// DefaultInFlight is the default of Options.InFlight.
const DefaultInFlight = 2

// Options tunes Apply. The zero value is ready to use.
type Options struct {
	// MaxOpsPerTxn bounds each transaction's operations; a ports delete
	// counts once per port it removes. At least 2; 0 means
	// DefaultMaxOpsPerTxn.
	MaxOpsPerTxn int
	// InFlight bounds the transactions sent and not yet answered, so that
	// the server commits one while the client encodes the next and decodes
	// the updates of the last. Only transactions of one phase are ever in
	// flight together; the next phase starts once every one of them has
	// been answered. At least 1 (one at a time); 0 means DefaultInFlight.
	InFlight int
	// NewBackOff returns the pacing of the retries of one transaction
	// after client.ErrNotConnected; it must stop eventually. nil means
	// exponential from 100ms, at most 8 retries and 30s.
	NewBackOff func() backoff.BackOff
}

// ErrStale is wrapped by the error Apply returns when an operation failed
// or matched no row: the NB is not what the plan was computed from (a row
// changed or vanished, a name was taken). Re-read the cache and compute a
// new plan; never send the same one again.
var ErrStale = errors.New("NB changed since it was observed")

// ErrSwitchInUse is wrapped by the error Apply returns when it did not
// delete a switch because ports remain on it, which can only be ports
// ovn-sync does not own. Everything else in the plan was carried out.
var ErrSwitchInUse = errors.New("logical switch still has ports")

// Transactor is what Apply needs of an NB connection; a libovsdb
// client.Client is one.
type Transactor interface {
	Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error)
}

// Result says what Apply did.
type Result struct {
	// Created, Updated and Deleted count the plan's changes carried out.
	Created int `json:"created"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
	// Ops counts the operations of the transactions that succeeded.
	Ops int `json:"operations"`
	// Txns describes every transaction sent, in the order Apply issued
	// them (several in flight may reach the server in another order).
	Txns []Txn `json:"transactions"`
	// Refused names the switches not deleted because ports remain on them
	// (or because they vanished).
	Refused []string `json:"refused,omitempty"`
}

// Add adds o's counts and transactions to r, for a caller that applies
// several plans in one pass (after ErrStale, say).
func (r *Result) Add(o Result) {
	r.Created += o.Created
	r.Updated += o.Updated
	r.Deleted += o.Deleted
	r.Ops += o.Ops
	r.Txns = append(r.Txns, o.Txns...)
	r.Refused = append(r.Refused, o.Refused...)
}

// Txn describes one transaction Apply sent.
type Txn struct {
	Ops int `json:"ops"`
	// Attempts is 1, plus one per retry after client.ErrNotConnected.
	Attempts int `json:"attempts"`
	// Latency is the time of the last attempt's round trip.
	Latency time.Duration `json:"latency_ns"`
}

// Apply carries out plan on the NB through c, in the phases of
// diff.Plan's order (documented there), each in transactions of at most
// opts.MaxOpsPerTxn operations, each switch delete in one of its own. An
// empty plan sends nothing.
//
// Up to opts.InFlight transactions of a phase are in flight at once, and a
// phase starts only once every transaction of the one before has been
// answered. The transactions of one phase do not depend on each other:
// they address distinct rows, except a switch's ports, which all of them
// only insert into or all only delete from, in any order. That barrier is
// what orders a moved port's delete before its create, which reuses the
// name, and a new switch's insert before the ports put on it.
//
// A transaction that fails with client.ErrNotConnected is sent again
// after a backoff; that is safe, as a repeated transaction either does the
// same again or fails on the names and values it expects. Any other
// failure stops Apply: it sends no further transaction, waits for the
// answers to those in flight, and returns the failure of the first
// transaction, in the order issued, that failed. An operation error or a row
// not found is ErrStale, and the caller must recompute. A switch that
// still has ports is not deleted (ErrSwitchInUse) and Apply goes on with
// the other switches. The Result counts what was done, which includes the
// transactions in flight with the failed one that succeeded.
func Apply(ctx context.Context, c Transactor, plan diff.Plan, opts Options) (Result, error) {
	var res Result
	if opts.MaxOpsPerTxn == 0 {
		opts.MaxOpsPerTxn = DefaultMaxOpsPerTxn
	}
	if opts.MaxOpsPerTxn < 2 {
		return res, fmt.Errorf("apply: MaxOpsPerTxn %d: a port create takes 2 operations", opts.MaxOpsPerTxn)
	}
	if opts.InFlight == 0 {
		opts.InFlight = DefaultInFlight
	}
	if opts.InFlight < 1 {
		return res, fmt.Errorf("apply: InFlight %d: at least one transaction must be sent", opts.InFlight)
	}
	if plan.Empty() {
		return res, nil
	}
	if err := checkSwitches(plan); err != nil {
		return res, fmt.Errorf("apply: %w", err)
	}
	a := applier{c: c, opts: opts, res: &res}

	created := map[string]string{}
	refs := refs{created: map[string]string{}, observed: plan.DHCPUUIDs}
	err := a.phase(ctx, slices.Values(switchTxns(plan, opts.MaxOpsPerTxn)), func(t *txn, results []ovsdb.OperationResult, err error) error {
		if err == nil {
			for i, name := range t.inserted {
				created[name] = results[i].UUID.GoUUID
			}
			for i, name := range t.insertedDHCP {
				refs.created[name] = results[i].UUID.GoUUID
			}
		}
		return err
	})
	if err != nil {
		return res, err
	}

	deletes, upserts, err := portTxns(plan, created, refs, opts.MaxOpsPerTxn)
	if err != nil {
		return res, fmt.Errorf("apply: %w", err)
	}
	// Deletes and creates are separate phases: a moved port's create
	// reuses the name its delete frees.
	// Our DHCP_Options rows no longer desired go once no port of ours
	// refers to them.
	for _, txns := range []iter.Seq[txn]{deletes, upserts, slices.Values(dhcpDeleteTxns(plan, opts.MaxOpsPerTxn))} {
		if err := a.phase(ctx, txns, nil); err != nil {
			return res, err
		}
	}

	err = a.phase(ctx, slices.Values(switchDeleteTxns(plan)), func(t *txn, _ []ovsdb.OperationResult, err error) error {
		if errors.Is(err, errRefused) {
			res.Refused = append(res.Refused, t.sw)
			return nil
		}
		return err
	})
	if err != nil {
		return res, err
	}
	if len(res.Refused) > 0 {
		return res, fmt.Errorf("apply: %w: not deleted: %s", ErrSwitchInUse, strings.Join(res.Refused, ", "))
	}
	return res, nil
}

// checkSwitches makes sure, before anything is sent, that every port to
// create goes on an observed switch or one the plan creates.
func checkSwitches(plan diff.Plan) error {
	created := map[string]bool{}
	for i := range plan.Changes {
		if c := &plan.Changes[i]; c.Kind == diff.KindSwitch && c.Action == diff.Create {
			created[c.Name] = true
		}
	}
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Kind == diff.KindPort && c.Action == diff.Create && c.SwitchUUID == "" && !created[c.After.Switch] {
			return errNoSwitch(c)
		}
	}
	return nil
}

func errNoSwitch(c *diff.Change) error {
	return fmt.Errorf("port %q: switch %q has no UUID: neither observed nor created", c.Name, c.After.Switch)
}

// errRefused is what send returns for a switch delete whose guard failed.
var errRefused = errors.New("switch delete refused")

type applier struct {
	c    Transactor
	opts Options
	res  *Result
}

func (a *applier) newBackOff() backoff.BackOff {
	if a.opts.NewBackOff != nil {
		return a.opts.NewBackOff()
	}
	return backoff.WithMaxRetries(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxElapsedTime(30*time.Second),
	), 8)
}

// sent is what became of one transaction. Once it has been answered, its
// operations are dropped, and so are its results unless it created
// switches, whose UUIDs they give.
type sent struct {
	t       txn
	stat    Txn
	results []ovsdb.OperationResult
	err     error
}

// phase sends the transactions of txns, which must not depend on each
// other, keeping up to a.opts.InFlight of them in flight, and returns once
// every one sent has been answered. It takes each from txns only when it
// can send it, and sends no more once one has failed with an error other
// than errRefused, or ctx is done. It then accounts for the transactions
// sent in the order it issued them: each is added to a.res, passed to done
// (if not nil) with its error, and counted if done returns nil; the first
// error done returns (by default, the transaction's own) is phase's.
func (a *applier) phase(ctx context.Context, txns iter.Seq[txn], done func(t *txn, results []ovsdb.OperationResult, err error) error) error {
	if done == nil {
		done = func(_ *txn, _ []ovsdb.OperationResult, err error) error { return err }
	}
	first := len(a.res.Txns) + 1 // the number of the phase's first transaction in errors
	slots := make(chan struct{}, a.opts.InFlight)
	var (
		out    []*sent
		wg     sync.WaitGroup
		failed atomic.Bool
		unsent error
	)
	for t := range txns {
		slots <- struct{}{}
		if failed.Load() {
			break
		}
		n := first + len(out)
		if err := ctx.Err(); err != nil {
			unsent = fmt.Errorf("apply: transaction %d and any after it not sent: %w", n, err)
			break
		}
		s := &sent{t: t}
		out = append(out, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stat, s.results, s.err = a.send(ctx, n, &s.t)
			if s.err != nil && !errors.Is(s.err, errRefused) {
				failed.Store(true)
			}
			s.t.ops, s.t.expect = nil, nil
			if s.t.inserted == nil && s.t.insertedDHCP == nil {
				s.results = nil
			}
			<-slots
		}()
	}
	wg.Wait()

	var err error
	for _, s := range out {
		a.res.Txns = append(a.res.Txns, s.stat)
		if e := done(&s.t, s.results, s.err); e != nil {
			err = cmp.Or(err, e)
			continue
		}
		if s.err == nil {
			a.res.Ops += s.stat.Ops
			a.res.Created += s.t.created
			a.res.Updated += s.t.updated
			a.res.Deleted += s.t.deleted
		}
	}
	return cmp.Or(err, unsent)
}

// send transacts t, the n-th transaction of Apply, retrying on
// client.ErrNotConnected, and checks every result.
func (a *applier) send(ctx context.Context, n int, t *txn) (Txn, []ovsdb.OperationResult, error) {
	stat := Txn{Ops: len(t.ops)}
	var results []ovsdb.OperationResult
	err := backoff.Retry(func() error {
		stat.Attempts++
		start := time.Now()
		r, err := a.c.Transact(ctx, t.ops...)
		stat.Latency = time.Since(start)
		if errors.Is(err, client.ErrNotConnected) {
			return err
		}
		if err != nil {
			return backoff.Permanent(err)
		}
		results = r
		return nil
	}, backoff.WithContext(a.newBackOff(), ctx))
	if err != nil {
		return stat, nil, fmt.Errorf("apply: transaction %d (%d ops, %d attempts): %w", n, len(t.ops), stat.Attempts, err)
	}
	if err := t.check(results); err != nil {
		if errors.Is(err, errRefused) {
			return stat, results, err
		}
		return stat, results, fmt.Errorf("apply: transaction %d (%d ops): %w", n, len(t.ops), err)
	}
	return stat, results, nil
}

// check returns nil if every operation of t succeeded as expected, errRefused
// for a switch delete whose guard failed, and otherwise an ErrStale naming
// the first failed operation.
func (t *txn) check(results []ovsdb.OperationResult) error {
	opErrs, err := ovsdb.CheckOperationResults(results, t.ops)
	if err != nil {
		if t.sw != "" {
			// The wait or the delete of a switch failed: it has ports.
			return errRefused
		}
		if len(opErrs) > 0 {
			i := t.index(opErrs[0].Operation())
			return fmt.Errorf("%w: op %d (%s): %w", ErrStale, i, t.describe(i), opErrs[0])
		}
		return fmt.Errorf("%w: %w", ErrStale, err)
	}
	for i, e := range t.expect {
		switch {
		case e == oneRow && results[i].Count != 1:
			return fmt.Errorf("%w: op %d (%s) matched %d rows, want 1", ErrStale, i, t.describe(i), results[i].Count)
		case e == switchDeleted && results[i].Count != 1:
			return errRefused
		}
	}
	return nil
}

// index returns the position of op in t.ops, -1 if it is not one of them.
func (t *txn) index(op *ovsdb.Operation) int {
	for i := range t.ops {
		if &t.ops[i] == op {
			return i
		}
	}
	return -1
}

func (t *txn) describe(i int) string {
	if i < 0 || i >= len(t.ops) {
		return "commit"
	}
	return t.ops[i].Op + " " + t.ops[i].Table
}
