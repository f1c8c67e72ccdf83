package reconcile

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/ovn-sync/ovn-sync/apply"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
)

// Metrics are run mode's Prometheus metrics, all prefixed ovn_sync_. The
// docs/run-mode.md lists them. The loop keeps most of them; what it does not see
// (informer events, publications, problem events, the lease) is counted
// through the methods below.
type Metrics struct {
	reg *prometheus.Registry

	passes        *prometheus.CounterVec   // kind, result
	passDuration  *prometheus.HistogramVec // kind
	passPhase     *prometheus.HistogramVec // phase
	changes       *prometheus.CounterVec   // object, action
	operations    prometheus.Counter
	transactions  prometheus.Counter
	txnDuration   prometheus.Histogram
	planSize      prometheus.Histogram
	withheld      prometheus.Gauge
	problems      *prometheus.GaugeVec // reason
	driftEvents   *prometheus.CounterVec
	driftRepairs  prometheus.Counter
	synced        *prometheus.GaugeVec // source
	leader        prometheus.Gauge
	nbConnected   prometheus.Gauge
	nbReconnects  prometheus.Counter
	ownedPorts    prometheus.Gauge
	switchPorts   *prometheus.GaugeVec // switch
	switchLimit   prometheus.Gauge
	informerEvent *prometheus.CounterVec // kind
	dropped       *prometheus.CounterVec // kind
	patches       *prometheus.CounterVec // result
	queued        prometheus.Gauge
	kubeEvents    *prometheus.CounterVec // reason
	lastSuccess   prometheus.Gauge
	builds        *prometheus.CounterVec // kind: incremental, full; reason
	mismatches    prometheus.Counter
	pending       *prometheus.GaugeVec // action, difference
}

// NewMetrics registers every metric, and the Go and process collectors, in
// a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.passes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_passes_total",
		Help: "Reconciliation passes by kind (full: startup, resync, reconnect; change: informer events or NB drift) and result (success, error, refused, stale)."},
		[]string{"kind", "result"})
	m.passDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ovn_sync_pass_duration_seconds",
		Help: "Duration of a pass: read the informers and the NB cache, build, diff, apply, publish.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)},
		[]string{"kind"})
	m.passPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ovn_sync_pass_phase_seconds",
		Help: "Duration of each phase of a pass: observe (read the NB cache), build and diff of its last computation, apply over every attempt (0 when the mass-delete guard refused the plan).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20)},
		[]string{"phase"})
	f(m.passPhase)
	for _, p := range phases {
		m.passPhase.WithLabelValues(p)
	}
	m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_changes_total",
		Help: "Plan changes carried out, by object (port, switch, dhcp_options) and action (create, update, delete)."},
		[]string{"object", "action"})
	m.operations = prometheus.NewCounter(prometheus.CounterOpts{Name: "ovn_sync_ovsdb_operations_total", Help: "OVSDB operations in committed transactions."})
	m.transactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "ovn_sync_transactions_total", Help: "OVSDB transactions sent."})
	m.txnDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ovn_sync_transaction_duration_seconds",
		Help: "Round trip of one OVSDB transaction (its last attempt).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	m.planSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ovn_sync_plan_changes",
		Help: "Changes in each pass's plan (0 for a pass that found nothing to do).", Buckets: []float64{0, 1, 10, 100, 1000, 10000, 100000}})
	m.withheld = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_withheld_deletes", Help: "Port deletes the last pass withheld because a source had not synced."})
	m.problems = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ovn_sync_problems",
		Help: "Problems (bad or conflicting input) found by the last pass, by reason."}, []string{"reason"})
	m.driftEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_drift_events_total",
		Help: "NB changes to rows ovn-sync owns that it did not make, by table."}, []string{"table"})
	m.driftRepairs = prometheus.NewCounter(prometheus.CounterOpts{Name: "ovn_sync_drift_repairs_total",
		Help: "Changes carried out that put back what someone else changed in the NB: rows written as the last successful pass wanted them too, or rows of ours deleted that no pass wanted."})
	m.synced = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ovn_sync_synced",
		Help: "1 when a source has synced (an informer per kind, absent CRDs count as synced; nb: connected with its cache loaded)."}, []string{"source"})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_leader", Help: "1 while this process holds the lease and writes."})
	m.nbConnected = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_nb_connected", Help: "1 while connected to the NB."})
	m.nbReconnects = prometheus.NewCounter(prometheus.CounterOpts{Name: "ovn_sync_nb_reconnects_total", Help: "NB reconnections (each followed by a full pass)."})
	m.ownedPorts = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_owned_ports", Help: "Ports ovn-sync owns in the NB, as of the last pass."})
	m.informerEvent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_informer_events_total",
		Help: "Informer events by kind (each only schedules a pass)."}, []string{"kind"})
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_changes_dropped_total",
		Help: "Informer updates dropped as irrelevant, by kind: nothing ovn-sync reads changed (a status, labels, managed fields), so no pass."}, []string{"kind"})
	m.patches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_annotation_patches_total",
		Help: "Annotation patches publishing addresses on pods and VirtualMachines, by result (patched, gone, error; deferred: let go from a full queue, decided again by the next full pass)."}, []string{"result"})
	m.queued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_publications_queued",
		Help: "Annotation patches and IPAMClaim statuses decided by passes and not yet written (a first start on pods without annotations queues one a pod)."})
	m.kubeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_problem_events_total",
		Help: "Kubernetes Events emitted for new problems, by reason."}, []string{"reason"})
	m.lastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_last_success_timestamp_seconds", Help: "Unix time of the last successful pass."})
	m.builds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ovn_sync_builds_total",
		Help: "Desired states built, by kind: incremental (the owners a change touches) or full, and reason: change for an incremental one; " +
			"startup, resync, reconnect, drift, all-changed, mismatch, full-passes (--full-passes), dry-run (--dry-run), or what the change reached (config, nad, subnet, namespace, too-many, port-held, ...) for a full one."},
		[]string{"kind", "reason"})
	m.switchPorts = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ovn_sync_switch_ports",
		Help: "Ports on each logical switch that holds ports, as of the last pass: ovn-sync's, and kube-ovn's by their external_ids:ls."}, []string{"switch"})
	m.switchLimit = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ovn_sync_switch_port_limit",
		Help: "Ports OVN binds on one logical switch (a port's tunnel key is 15 bits, ovn-nb(5)): ovn-sync writes no port past it."})
	m.switchLimit.Set(desired.MaxSwitchPorts)
	m.mismatches = prometheus.NewCounter(prometheus.CounterOpts{Name: "ovn_sync_incremental_mismatches_total",
		Help: "Incremental desired states that differed from a full Build of the same inputs (a bug: the full result was used)."})
	m.pending = newPending()
	for _, c := range []prometheus.Collector{m.builds, m.mismatches, m.pending, m.passes, m.passDuration, m.changes, m.operations, m.transactions, m.txnDuration,
		m.planSize, m.withheld, m.problems, m.driftEvents, m.driftRepairs, m.synced, m.leader, m.nbConnected, m.nbReconnects,
		m.ownedPorts, m.switchPorts, m.switchLimit, m.informerEvent, m.dropped, m.patches, m.queued, m.kubeEvents, m.lastSuccess,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	m.builds.WithLabelValues("incremental", "change")
	m.builds.WithLabelValues("full", "startup")
	for _, a := range []string{"create", "update", "delete"} {
		for _, o := range []string{"port", "switch"} {
			m.changes.WithLabelValues(o, a)
		}
	}
	return m
}

// phases are the values of ovn_sync_pass_phase_seconds's label, in the
// order of a pass.
var phases = []string{"observe", "build", "diff", "apply"}

// observePhases records how long each phase of a pass took.
func (m *Metrics) observePhases(t Timings) {
	for i, d := range []time.Duration{t.Observe, t.Build, t.Diff, t.Apply} {
		m.passPhase.WithLabelValues(phases[i]).Observe(d.Seconds())
	}
}

// observeApply records what one apply did.
func (m *Metrics) observeApply(plan diff.Plan, res apply.Result) {
	m.operations.Add(float64(res.Ops))
	m.transactions.Add(float64(len(res.Txns)))
	for _, t := range res.Txns {
		m.txnDuration.Observe(t.Latency.Seconds())
	}
	// Result counts what was carried out; split it by object as the plan
	// does, in proportion when a pass stopped part way.
	var planned [3][3]int
	for i := range plan.Changes {
		c := &plan.Changes[i]
		o := 0
		switch c.Kind {
		case diff.KindSwitch:
			o = 1
		case diff.KindDHCP:
			o = 2
		}
		switch c.Action {
		case diff.Create:
			planned[o][0]++
		case diff.Update:
			planned[o][1]++
		case diff.Delete:
			planned[o][2]++
		}
	}
	done := [3]int{res.Created, res.Updated, res.Deleted}
	for a, name := range []string{"create", "update", "delete"} {
		ports := min(done[a], planned[0][a])
		dhcp := min(done[a]-ports, planned[2][a])
		m.changes.WithLabelValues("port", name).Add(float64(ports))
		m.changes.WithLabelValues("dhcp_options", name).Add(float64(dhcp))
		m.changes.WithLabelValues("switch", name).Add(float64(done[a] - ports - dhcp))
	}
}

// Mismatches returns how many incremental desired states differed from a
// full Build (ovn_sync_incremental_mismatches_total).
func (m *Metrics) Mismatches() int {
	var d dto.Metric
	if err := m.mismatches.Write(&d); err != nil {
		return 0
	}
	return int(d.GetCounter().GetValue())
}

// Registry is where the metrics are registered, to serve them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// InformerEvent counts one informer event of kind.
func (m *Metrics) InformerEvent(kind string) { m.informerEvent.WithLabelValues(kind).Inc() }

// Kinds makes the series of every informer kind exist at 0 from the
// start, so that rates over them show 0, not nothing, until the first
// event or drop.
func (m *Metrics) Kinds(kinds []string) {
	for _, k := range kinds {
		m.informerEvent.WithLabelValues(k)
		m.dropped.WithLabelValues(k)
	}
}

// ChangeDropped counts one informer update of kind that changed nothing
// ovn-sync reads.
func (m *Metrics) ChangeDropped(kind string) { m.dropped.WithLabelValues(kind).Inc() }

// Publication counts one annotation patch by result (patched, gone, error, deferred).
func (m *Metrics) Publication(result string) { m.patches.WithLabelValues(result).Inc() }

// PublicationsQueued records how many writes wait in the publisher's queue.
func (m *Metrics) PublicationsQueued(n int) { m.queued.Set(float64(n)) }

// ProblemEvent counts one Kubernetes Event emitted for a problem.
func (m *Metrics) ProblemEvent(reason string) { m.kubeEvents.WithLabelValues(reason).Inc() }

// SetLeader records whether this process holds the lease.
func (m *Metrics) SetLeader(leading bool) { m.leader.Set(b2f(leading)) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// setSwitchPorts shows each switch's ports as ports counts them; a switch
// no longer counted goes.
func (m *Metrics) setSwitchPorts(ports map[string]int) {
	m.switchPorts.Reset()
	for sw, n := range ports {
		m.switchPorts.WithLabelValues(sw).Set(float64(n))
	}
}

// newPending is ovn_sync_pending_changes, every series at 0.
func newPending() *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ovn_sync_pending_changes",
		Help: "Changes of the last pass's plan left to make, by action (create, update, delete) and by what they cost a guest " +
			"(address, port, binding, bookkeeping): a dry run's whole plan; none after a pass that applied its plan."},
		[]string{"action", "difference"})
	for _, a := range []diff.Action{diff.Create, diff.Update, diff.Delete} {
		for _, c := range []diff.Cost{diff.CostAddress, diff.CostPort, diff.CostBinding, diff.CostBookkeeping} {
			g.WithLabelValues(a.String(), c.String())
		}
	}
	return g
}

// setPending sets ovn_sync_pending_changes from costs.
func (m *Metrics) setPending(costs diff.Costs) {
	for _, a := range []diff.Action{diff.Create, diff.Update, diff.Delete} {
		for _, c := range []diff.Cost{diff.CostAddress, diff.CostPort, diff.CostBinding, diff.CostBookkeeping} {
			m.pending.WithLabelValues(a.String(), c.String()).Set(float64(costs.ByAction[a][c]))
		}
	}
}
