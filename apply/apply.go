package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/diff"
)

// DefaultMaxOpsPerTxn is the default of Options.MaxOpsPerTxn.
const DefaultMaxOpsPerTxn = 1000

// Options tunes Apply. The zero value is ready to use.
type Options struct {
	// MaxOpsPerTxn bounds each transaction's operations; a ports delete
	// counts once per port it removes. At least 2; 0 means
	// DefaultMaxOpsPerTxn.
	MaxOpsPerTxn int
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
	// Txns describes every transaction sent, in order.
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
// diff.Plan's order, each in transactions of at most opts.MaxOpsPerTxn
// operations: switch creates and updates; port deletes; port updates and
// creates; then each switch delete on its own. An empty plan sends nothing.
//
// A transaction that fails with client.ErrNotConnected is sent again
// after a backoff; that is safe, as a repeated transaction either does the
// same again or fails on the names and values it expects. Any other
// failure stops Apply: an operation error or a row not found is ErrStale,
// and the caller must recompute. A switch that still has ports is not
// deleted (ErrSwitchInUse) and Apply goes on with the other switches. The
// Result counts what was done up to the error.
func Apply(ctx context.Context, c Transactor, plan diff.Plan, opts Options) (Result, error) {
	var res Result
	if opts.MaxOpsPerTxn == 0 {
		opts.MaxOpsPerTxn = DefaultMaxOpsPerTxn
	}
	if opts.MaxOpsPerTxn < 2 {
		return res, fmt.Errorf("apply: MaxOpsPerTxn %d: a port create takes 2 operations", opts.MaxOpsPerTxn)
	}
	if plan.Empty() {
		return res, nil
	}
	if err := checkSwitches(plan); err != nil {
		return res, fmt.Errorf("apply: %w", err)
	}
	a := applier{c: c, opts: opts, res: &res}

	created := map[string]string{}
	for _, t := range switchTxns(plan, opts.MaxOpsPerTxn) {
		results, err := a.send(ctx, &t)
		if err != nil {
			return res, err
		}
		for i, name := range t.inserted {
			created[name] = results[i].UUID.GoUUID
		}
	}

	txns, err := portTxns(plan, created, opts.MaxOpsPerTxn)
	if err != nil {
		return res, fmt.Errorf("apply: %w", err)
	}
	for _, t := range txns {
		if _, err := a.send(ctx, &t); err != nil {
			return res, err
		}
	}

	for _, t := range switchDeleteTxns(plan) {
		if _, err := a.send(ctx, &t); errors.Is(err, errRefused) {
			res.Refused = append(res.Refused, t.sw)
		} else if err != nil {
			return res, err
		}
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

// send transacts t, retrying on client.ErrNotConnected, and checks every
// result.
func (a *applier) send(ctx context.Context, t *txn) ([]ovsdb.OperationResult, error) {
	n := len(a.res.Txns) + 1
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
	a.res.Txns = append(a.res.Txns, stat)
	if err != nil {
		return nil, fmt.Errorf("apply: transaction %d (%d ops, %d attempts): %w", n, len(t.ops), stat.Attempts, err)
	}
	if err := t.check(results); err != nil {
		if errors.Is(err, errRefused) {
			return nil, err
		}
		return nil, fmt.Errorf("apply: transaction %d (%d ops): %w", n, len(t.ops), err)
	}
	a.res.Ops += len(t.ops)
	a.res.Created += t.created
	a.res.Updated += t.updated
	a.res.Deleted += t.deleted
	return results, nil
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
