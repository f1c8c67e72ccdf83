package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/state"
)

// monitor is what the per-object client's cache follows.
type monitor string

const (
	// monitorNames follows the columns ovn-sync's observed client follows:
	// Logical_Switch without its ports column.
	monitorNames monitor = "names"
	// monitorPorts also follows Logical_Switch.ports, as a controller
	// monitoring whole tables does: every port transaction then ships the
	// switch's whole port set back.
	monitorPorts monitor = "full"
)

// perObjectOptions bounds one run of the per-object pattern.
type perObjectOptions struct {
	monitor monitor
	// budget bounds the part written from an empty NB. When it runs out,
	// ovn-sync preloads all but the last sample ports and the pattern
	// writes those, so that the cost at the top is measured too.
	budget time.Duration
	sample int
}

// perObjectResult is measurement (b): one libovsdb transaction per port.
type perObjectResult struct {
	Monitor monitor `json:"monitor"`
	Ports   int     `json:"ports"`
	// Complete is set when every port was written by the pattern, from an
	// empty NB; Estimate is then simply Measured.
	Complete bool `json:"complete"`
	// Measured ports were written from an empty NB in MeasuredTime.
	Measured     int           `json:"measured"`
	MeasuredTime time.Duration `json:"measured_ns"`
	// LastWindow is the time per port over the last window of the measured
	// part, the cost at fill Measured.
	LastWindow time.Duration `json:"last_window_ns"`
	// Preloaded ports were then written by ovn-sync, and the last Sampled
	// ports by the pattern again, in SampleTime.
	Preloaded  int           `json:"preloaded"`
	Sampled    int           `json:"sampled"`
	SampleTime time.Duration `json:"sample_ns"`
	// Estimate is the time the pattern takes for all ports: measured, plus
	// the preloaded range interpolated linearly between the per-port cost
	// at its two ends, plus the sample. Low and High assume instead the
	// cheaper or the dearer end's cost over the whole preloaded range;
	// since the cost grows with the ports already there, they bound it.
	Estimate time.Duration `json:"estimate_ns"`
	Low      time.Duration `json:"low_ns"`
	High     time.Duration `json:"high_ns"`
	// ServerCPU is ovsdb-server's CPU time over the pattern's own
	// transactions (measured and sampled, not the preload).
	ServerCPU time.Duration `json:"server_cpu_ns"`
	// Curve is (ports written, elapsed) along the measured part.
	Curve []curvePoint `json:"curve"`
}

// curvePoint is one point of the cumulative time curve.
type curvePoint struct {
	Ports   int           `json:"ports"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// perPort is the mean time per port of the pattern's own transactions.
func (r perObjectResult) perPort() time.Duration {
	return (r.MeasuredTime + r.SampleTime) / time.Duration(max(r.Measured+r.Sampled, 1))
}

// method says in words how Estimate was obtained.
func (r perObjectResult) method() string {
	if r.Complete {
		return fmt.Sprintf("measured, all %d ports", r.Ports)
	}
	return fmt.Sprintf("extrapolated: first %d ports measured, next %d preloaded by ovn-sync, last %d measured; range %s-%s",
		r.Measured, r.Preloaded, r.Sampled, seconds(r.Low), seconds(r.High))
}

// runPerObject writes want's ports on a fresh server the way per-object
// controllers do: one transaction per port, inserting it and adding it to
// its switch, waiting for each reply. Switches are created first, by
// ovn-sync. Ports go in name order. The per-object side is given
// addresses computed in advance: its own IPAM is not timed.
func runPerObject(ctx context.Context, want state.State, opts perObjectOptions) (perObjectResult, error) {
	r := perObjectResult{Monitor: opts.monitor, Ports: want.Ports.Len()}
	srv, err := nbtest.Serve()
	if err != nil {
		return r, err
	}
	defer srv.Close()
	if err := syncPorts(ctx, srv, state.State{Switches: want.Switches, Ports: state.NewPorts(0)}); err != nil {
		return r, fmt.Errorf("create switches: %w", err)
	}
	w, err := dialPerObject(ctx, srv, opts.monitor)
	if err != nil {
		return r, err
	}
	defer w.c.Close()

	ports := slices.SortedFunc(maps.Values(want.Ports.Map()), func(a, b *state.Port) int { return cmp.Compare(a.Name, b.Name) })
	sample := min(opts.sample, len(ports))
	cpu0, _ := processCPU(srv.Pid())
	bar := newProgress(fmt.Sprintf("per-object (%s monitor)", opts.monitor), len(ports))
	if err := r.writeFromEmpty(ctx, w, ports, sample, time.Now().Add(opts.budget), bar); err != nil {
		bar.finish()
		return r, err
	}
	cpu1, _ := processCPU(srv.Pid())
	r.ServerCPU = cpu1 - cpu0
	if r.Complete = r.Measured == len(ports); r.Complete {
		bar.finish()
		r.Estimate, r.Low, r.High = r.MeasuredTime, r.MeasuredTime, r.MeasuredTime
		return r, nil
	}

	top := len(ports) - sample
	r.Preloaded = top - r.Measured
	if err := syncPorts(ctx, srv, subset(want, ports[:top])); err != nil {
		bar.finish()
		return r, fmt.Errorf("preload %d ports: %w", r.Preloaded, err)
	}
	cpu2, _ := processCPU(srv.Pid())
	start := time.Now()
	for i, p := range ports[top:] {
		if err := w.create(ctx, p); err != nil {
			bar.finish()
			return r, err
		}
		bar.set(top + i + 1)
	}
	r.SampleTime, r.Sampled = time.Since(start), sample
	cpu3, _ := processCPU(srv.Pid())
	bar.finish()
	r.ServerCPU += cpu3 - cpu2
	r.extrapolate()
	return r, nil
}

// writeFromEmpty writes ports in order until all are written, or until the
// deadline has passed with more than sample still to go. It writes at
// least the first percent, so that the cost at the start is known.
func (r *perObjectResult) writeFromEmpty(ctx context.Context, w *perObjectWriter, ports []*state.Port, sample int, deadline time.Time, bar *progress) error {
	step := max(len(ports)/100, 1)
	start := time.Now()
	var windowStart time.Time
	for i, p := range ports {
		if i%step == 0 {
			now := time.Now()
			if i > 0 {
				r.Curve = append(r.Curve, curvePoint{Ports: i, Elapsed: now.Sub(start)})
				r.LastWindow = now.Sub(windowStart) / time.Duration(step)
			}
			windowStart = now
			if i > 0 && now.After(deadline) && len(ports)-i > sample {
				break
			}
		}
		if err := w.create(ctx, p); err != nil {
			return err
		}
		r.Measured = i + 1
		bar.set(i + 1)
	}
	r.MeasuredTime = time.Since(start)
	r.Curve = append(r.Curve, curvePoint{Ports: r.Measured, Elapsed: r.MeasuredTime})
	return nil
}

// extrapolate sets Estimate, Low and High from the measured part, the
// cost per port at its end, and the sample.
func (r *perObjectResult) extrapolate() {
	atTop := r.SampleTime / time.Duration(r.Sampled)
	atFill := r.LastWindow
	if atFill == 0 {
		atFill = r.MeasuredTime / time.Duration(max(r.Measured, 1))
	}
	known := r.MeasuredTime + r.SampleTime
	mid := time.Duration(r.Preloaded)
	r.Estimate = known + mid*(atFill+atTop)/2
	r.Low = known + mid*min(atFill, atTop)
	r.High = known + mid*max(atFill, atTop)
}

// perObjectWriter writes ports one transaction each.
type perObjectWriter struct {
	c        client.Client
	switches map[string]string // name -> UUID
}

// dialPerObject connects the per-object client. With monitorNames it is
// ovn-sync's own observed client, so that both sides monitor exactly the
// same columns; with monitorPorts, a client monitoring the same columns and
// Logical_Switch.ports.
func dialPerObject(ctx context.Context, srv *nbtest.Server, m monitor) (*perObjectWriter, error) {
	var c client.Client
	switch m {
	case monitorNames:
		nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{srv.Addr()}, LeaderOnly: true})
		if err != nil {
			return nil, err
		}
		c = nb.Client()
	case monitorPorts:
		var err error
		if c, err = dialFullMonitor(ctx, srv); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown monitor %q", m)
	}
	var switches []nbdb.LogicalSwitch
	if err := c.List(ctx, &switches); err != nil {
		c.Close()
		return nil, err
	}
	w := &perObjectWriter{c: c, switches: map[string]string{}}
	for _, s := range switches {
		w.switches[s.Name] = s.UUID
	}
	return w, nil
}

// dialFullMonitor connects a libovsdb client monitoring the columns
// observed.Dial monitors plus Logical_Switch.ports.
func dialFullMonitor(ctx context.Context, srv *nbtest.Server) (client.Client, error) {
	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	discard := logr.Discard()
	c, err := client.NewOVSDBClient(dbModel, client.WithEndpoint(srv.Addr()), client.WithLogger(&discard))
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	lsp := &nbdb.LogicalSwitchPort{}
	ls := &nbdb.LogicalSwitch{}
	if _, err := c.Monitor(ctx, c.NewMonitor(
		client.WithTable(lsp, &lsp.Name, &lsp.Addresses, &lsp.PortSecurity, &lsp.DynamicAddresses, &lsp.Options, &lsp.ExternalIDs),
		client.WithTable(ls, &ls.Name, &ls.ExternalIDs, &ls.OtherConfig, &ls.Ports),
	)); err != nil {
		c.Close()
		return nil, fmt.Errorf("monitor NB: %w", err)
	}
	return c, nil
}

// create writes one port in one transaction, through libovsdb's model API
// as per-object controllers do: insert the row, add it to its switch.
func (w *perObjectWriter) create(ctx context.Context, p *state.Port) error {
	sw, ok := w.switches[p.Switch]
	if !ok {
		return fmt.Errorf("port %q: switch %q not in the NB", p.Name, p.Switch)
	}
	lsp := lspModel(p)
	ops, err := w.c.Create(lsp)
	if err != nil {
		return fmt.Errorf("port %q: %w", p.Name, err)
	}
	ls := &nbdb.LogicalSwitch{UUID: sw}
	mut, err := w.c.Where(ls).Mutate(ls, model.Mutation{Field: &ls.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{lsp.UUID}})
	if err != nil {
		return fmt.Errorf("port %q: %w", p.Name, err)
	}
	ops = append(ops, mut...)
	res, err := w.c.Transact(ctx, ops...)
	if err != nil {
		return fmt.Errorf("port %q: %w", p.Name, err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return fmt.Errorf("port %q: %w", p.Name, err)
	}
	return nil
}

// lspModel is the row ovn-sync would insert for p: the same columns and
// keys, named by diff's field table so both sides write identical rows.
func lspModel(p *state.Port) *nbdb.LogicalSwitchPort {
	lsp := &nbdb.LogicalSwitchPort{
		UUID:         "newport",
		Name:         p.Name,
		Addresses:    p.Addresses,
		PortSecurity: p.PortSecurity,
		Options:      map[string]string{},
		ExternalIDs:  map[string]string{},
	}
	for f := range diff.PortFields.All() {
		col, key := f.Column()
		v := diff.PortKey(p, f)
		if key == "" || v == "" {
			continue
		}
		switch col {
		case "options":
			lsp.Options[key] = v
		case "external_ids":
			lsp.ExternalIDs[key] = v
		}
	}
	return lsp
}

// syncPorts makes the NB hold want's switches and ports with an ovn-sync
// pass through a client of its own.
func syncPorts(ctx context.Context, srv *nbtest.Server, want state.State) error {
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{srv.Addr()}, LeaderOnly: true})
	if err != nil {
		return err
	}
	defer nb.Close()
	plan := diff.Compute(want, nb.State(), diff.Policy{})
	_, err = apply.Apply(ctx, nb.Client(), plan, apply.Options{MaxOpsPerTxn: maxOpsPerTxn})
	return err
}

// subset is want with only the given ports.
func subset(want state.State, ports []*state.Port) state.State {
	s := state.State{Switches: want.Switches, Ports: state.NewPorts(len(ports))}
	for _, p := range ports {
		s.Ports.Set(p.Name, p)
	}
	return s
}
