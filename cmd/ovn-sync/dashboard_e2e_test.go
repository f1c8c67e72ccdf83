package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/promcheck"
)

// scrapeLabels are the labels a scrape adds to every series: job and
// instance always, and those prometheus-operator's ServiceMonitor (the
// chart's) attaches from Kubernetes service discovery. The dashboard and
// the alerts may name these and no other label ovn-sync does not export.
var scrapeLabels = []string{"job", "instance", "namespace", "pod", "container", "service", "endpoint"}

// TestDashboardAndAlertMetrics runs ovn-sync as deploy/deployment.yaml
// does (its flags, GOMEMLIMIT and config file, the service account of
// deploy/rbac.yaml, leader election on), makes it show what the dashboard
// shows (passes, pods, a problem and its Event, drift repaired), and checks
// every expression of deploy/grafana/ovn-sync.json and
// deploy/prometheus/alerts.yaml against its /metrics: each metric they
// select must be exported and each label they name carried.
func TestDashboardAndAlertMetrics(t *testing.T) {
	e := startEnv(t, envOptions{RBAC: deployRBAC, Namespaces: []string{"tenant"}})
	k, nbs, nb := e.k, e.nbs, e.nb
	args, memLimit := deploymentFlags(t, "../../deploy/deployment.yaml", "../../deploy/config.yaml")
	run := e.runWith(runOptions{Flags: args, Env: []string{"GOMEMLIMIT=" + memLimit}})
	looptest.WaitFor(t, 60*time.Second, "leading and ready", func() error {
		if run.metric("ovn_sync_leader") != 1 {
			return fmt.Errorf("not leading")
		}
		_, err := run.get("/readyz")
		return err
	})

	pod := func(name string, annotations map[string]string) {
		t.Helper()
		p := pausePod("tenant", name, "node-a")
		p.Annotations = annotations
		createPod(t, k, p)
	}
	pod("web", nil)
	first := portIs(t, nb, "web.tenant", "created", present)
	pod("bad-ip", map[string]string{"ovn.kubernetes.io/ip_address": "999.1.1.1"})
	// The port is deleted once a pass after the one that created it ran:
	// an NB event that leaves a row as the last pass or the one before
	// wanted it is taken for the trailing echo of our own write, not drift.
	looptest.WaitFor(t, 30*time.Second, "the problem reported", func() error {
		body, err := run.get("/metrics")
		if err != nil {
			return err
		}
		if sample(body, "ovn_sync_problems") == 0 {
			return fmt.Errorf("ovn_sync_problems is 0")
		}
		return nil
	})
	nbs.NBCtl("lsp-del", "web.tenant")
	looptest.WaitFor(t, 30*time.Second, "the port back, the problem counted and reported", func() error {
		if p := nb.State().Ports.Get("web.tenant"); p == nil || p.UUID == first.UUID {
			return fmt.Errorf("web.tenant not back in a new row")
		}
		body, err := run.get("/metrics")
		if err != nil {
			return err
		}
		for _, m := range []string{"ovn_sync_problems", "ovn_sync_problem_events_total", "ovn_sync_drift_events_total", "ovn_sync_drift_repairs_total"} {
			if sample(body, m) == 0 {
				return fmt.Errorf("%s is 0", m)
			}
		}
		return nil
	})

	body, err := run.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := promcheck.ParseScrape(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := sample(body, "go_gc_gomemlimit_bytes"); strconv.FormatFloat(got, 'f', -1, 64) != memLimit {
		t.Errorf("go_gc_gomemlimit_bytes = %v, want deploy/deployment.yaml's GOMEMLIMIT %s", got, memLimit)
	}
	c := promcheck.Checker{Exported: exp, Extra: scrapeLabels}
	checked := 0
	for _, e := range dashboardExprs(t, "../../deploy/grafana/ovn-sync.json") {
		checked++
		for _, err := range checkDashboardExpr(c, e.expr) {
			t.Errorf("dashboard %s: %s: %v", e.where, e.expr, err)
		}
	}
	for _, e := range alertExprs(t, "../../deploy/prometheus/alerts.yaml") {
		checked++
		for _, err := range c.Check(e.expr) {
			t.Errorf("alert %s: %s: %v", e.where, e.expr, err)
		}
	}
	t.Logf("%d expressions checked against %d exported series", checked, len(exp))
}

// deploymentFlags returns the flags of the ovn-sync container of a
// Deployment manifest, less those the test sets (--nb, --metrics-addr),
// with --config naming a copy of the config file of a ConfigMap manifest;
// and the container's GOMEMLIMIT.
func deploymentFlags(t *testing.T, deployment, configMap string) ([]string, string) {
	t.Helper()
	var d appsv1.Deployment
	readManifest(t, deployment, &d)
	var cm corev1.ConfigMap
	readManifest(t, configMap, &cm)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(cm.Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "ovn-sync" {
			continue
		}
		if len(c.Args) == 0 || c.Args[0] != "run" {
			t.Fatalf("%s: args %q, want run and its flags", deployment, c.Args)
		}
		var flags []string
		for _, a := range c.Args[1:] {
			name, _, _ := strings.Cut(a, "=")
			switch name {
			case "--nb", "--metrics-addr":
			case "--config":
				flags = append(flags, "--config="+config)
			default:
				flags = append(flags, a)
			}
		}
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				return flags, e.Value
			}
		}
		t.Fatalf("%s: no GOMEMLIMIT", deployment)
	}
	t.Fatalf("%s: no ovn-sync container", deployment)
	return nil, ""
}

func readManifest(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// expr is one PromQL expression of a dashboard or rule file, and where.
type expr struct {
	where, expr string
}

// grafanaPanel is what a Grafana panel holds of interest here; a row's
// panels are nested when it is collapsed.
type grafanaPanel struct {
	Title   string                  `json:"title"`
	Type    string                  `json:"type"`
	Targets []struct{ Expr string } `json:"targets"`
	Panels  []grafanaPanel          `json:"panels"`
}

// dashboardExprs returns the expressions of every panel's targets and of
// every query variable (label_values(...)) of a Grafana dashboard.
func dashboardExprs(t *testing.T, path string) []expr {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []expr
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("dashboard panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out = append(out, expr{fmt.Sprintf("panel %q", p.Title), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil || q.Query == "" {
			var s string
			if err := json.Unmarshal(v.Query, &s); err != nil {
				t.Fatalf("%s: variable %s: query %s", path, v.Name, v.Query)
			}
			q.Query = s
		}
		out = append(out, expr{fmt.Sprintf("variable %s", v.Name), q.Query})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no expression", path)
	}
	return out
}

// labelValues is Grafana's label_values(expr, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// checkDashboardExpr checks a panel's expression, or a variable's
// label_values(expr, label): expr, and label among its result's labels.
func checkDashboardExpr(c promcheck.Checker, e string) []error {
	m := labelValues.FindStringSubmatch(e)
	if m == nil {
		return c.Check(e)
	}
	labels, errs := c.Labels(m[1])
	if len(errs) == 0 && !slices.Contains(labels, m[2]) {
		errs = append(errs, fmt.Errorf("label_values: %s has no label %s (it has %v)", m[1], m[2], labels))
	}
	return errs
}

// alertExprs returns the expression of every rule of a Prometheus rule file.
func alertExprs(t *testing.T, path string) []expr {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	readManifest(t, path, &f)
	var out []expr
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, expr{r.Alert + r.Record, r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rule", path)
	}
	return out
}
