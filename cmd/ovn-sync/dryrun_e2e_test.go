package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/deploy"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// lostPort is the port of the stopped VM vm2 on attachnet that kube-ovn's
// garbage collection deleted, with its IP object (kube-ovn #5556: the
// collector looked only at an annotation a stopped VM has not).
const lostPort = "vm2.tenant.attachnet.default.ovn"

// TestRunDryRunBesideKubeOVN runs "ovn-sync run --dry-run --adopt kube-ovn"
// as the chart's dry-run role allows (list and watch only) beside the NB
// kube-ovn's controller wrote, with a stopped VM's secondary port and IP
// object deleted. It leaves the NB's database file byte for byte as it
// was and every object's resourceVersion unchanged, serves on /plan the
// port it would create, and reports the address at risk as a Problem;
// then "run" without --dry-run, over the same objects and NB, does exactly
// what /plan said: the rows it named as /plan has them, every other row as
// it was.
func TestRunDryRunBesideKubeOVN(t *testing.T) {
	e := startEnv(t, envOptions{RBAC: dryRunRBAC(t)})
	k, nbs := e.k, e.nbs
	writeKubeOVNRows(t, nbs)
	nbs.NBCtl("lsp-del", lostPort)
	applyKubeOVNCluster(t, k, func(doc string) bool { return !strings.Contains(doc, "name: "+lostPort+"\n") })
	before := snapshotNB(t, nbs)
	dbBefore, err := os.ReadFile(nbs.DBFile)
	if err != nil {
		t.Fatal(err)
	}
	versionsBefore := resourceVersions(t, k)

	dry := e.runWith(runOptions{Flags: []string{"--dry-run", "--adopt", "kube-ovn",
		"--default-subnets", "10.16.0.0/16", "--default-gateway", "10.16.0.1"}, OwnPasses: true})
	var plan dryRunPlan
	looptest.WaitFor(t, 60*time.Second, "/plan naming the lost port", func() error {
		body, err := dry.get("/plan?o=json")
		if err != nil {
			return err
		}
		plan = dryRunPlan{}
		if err := json.Unmarshal([]byte(body), &plan); err != nil {
			return err
		}
		if !plan.creates(lostPort) {
			return fmt.Errorf("no create of %s in %s", lostPort, body)
		}
		return nil
	})
	if !slices.ContainsFunc(plan.Problems, func(p desired.Problem) bool {
		return p.Reason == desired.ReasonKubeOVNAddressNotKept && p.Name == "vm2" && strings.Contains(p.Message, lostPort)
	}) {
		t.Errorf("/plan's problems %v: want %s on VirtualMachine tenant/vm2", plan.Problems, desired.ReasonKubeOVNAddressNotKept)
	}
	// Adopting kube-ovn's rows is bookkeeping only: the lost port is the
	// one change that costs a guest anything.
	if n := plan.Costs.Named; len(n) != 1 || n[0].Port != lostPort || n[0].Cost != "port" || plan.Costs.Bookkeeping == 0 {
		t.Errorf("costs %+v: want the lost port's creation alone, and bookkeeping", plan.Costs)
	}
	text, err := dry.get("/plan")
	if err != nil || !strings.Contains(text, `+ logical_switch_port "`+lostPort+`"`) || !strings.Contains(text, "[port] VirtualMachine/tenant/vm2") {
		t.Errorf("/plan as text (%v):\n%s", err, text)
	}
	if n := dry.metric("ovn_sync_pending_changes", `action="create"`, `difference="port"`); n != 1 {
		t.Errorf("pending port creates %v, want 1", n)
	}
	if n := dry.metric("ovn_sync_problems", `reason="`+desired.ReasonKubeOVNAddressNotKept+`"`); n != 1 {
		t.Errorf("%s problems %v, want 1", desired.ReasonKubeOVNAddressNotKept, n)
	}
	// A change in Kubernetes makes another pass, which writes nothing
	// either.
	passes := dry.metric("ovn_sync_passes_total", `result="success"`)
	createPod(t, k, pausePod("default", "late", "node-1"))
	looptest.WaitFor(t, 30*time.Second, "a pass for the new pod", func() error {
		if n := dry.metric("ovn_sync_passes_total", `result="success"`); n <= passes {
			return fmt.Errorf("%v passes", n)
		}
		return nil
	})
	if err := k.Kube.CoreV1().Pods("default").Delete(context.Background(), "late", now); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "/plan without the new pod", func() error {
		body, err := dry.get("/plan?o=json")
		if err != nil || strings.Contains(body, "late.default") {
			return fmt.Errorf("%v %s", err, body)
		}
		plan = dryRunPlan{}
		return json.Unmarshal([]byte(body), &plan)
	})
	dry.stop(syscall.SIGTERM)
	if dbAfter, err := os.ReadFile(nbs.DBFile); err != nil || !bytes.Equal(dbAfter, dbBefore) {
		t.Errorf("the dry run changed the NB's database file (%v)", err)
	}
	for obj, v := range resourceVersions(t, k) {
		if w, ok := versionsBefore[obj]; ok && w != v {
			t.Errorf("the dry run wrote %s (resourceVersion %s, was %s)", obj, v, w)
		}
	}

	// The same objects and NB, written: exactly what /plan said.
	run := e.runWith(runOptions{Kubeconfig: k.Kubeconfig, Flags: []string{"--leader-elect=false", "--adopt", "kube-ovn",
		"--default-subnets", "10.16.0.0/16", "--default-gateway", "10.16.0.1"}})
	looptest.WaitFor(t, 60*time.Second, "converged", func() error {
		body, err := run.get("/plan?o=json")
		if err != nil {
			return err
		}
		var last dryRunPlan
		if err := json.Unmarshal([]byte(body), &last); err != nil {
			return err
		}
		if len(last.Plan.Changes) > 0 {
			return fmt.Errorf("the last pass changed %d rows", len(last.Plan.Changes))
		}
		return nil
	})
	checkDidPlan(t, before, snapshotNB(t, nbs), plan)
}

// planChange is one change of a plan's JSON, as far as the test reads it.
type planChange struct {
	Action string `json:"action"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	After  struct {
		Addresses    []string `json:"addresses"`
		PortSecurity []string `json:"port_security"`
		Owner        string   `json:"owner"`
	} `json:"after"`
}

// dryRunPlan is what /plan?o=json says, as far as the test reads it.
type dryRunPlan struct {
	Plan struct {
		Changes []planChange `json:"changes"`
	} `json:"plan"`
	Costs struct {
		Named []struct {
			Cost, Owner, Port string
		} `json:"named"`
		Bookkeeping int `json:"bookkeeping"`
	} `json:"costs"`
	Problems []desired.Problem `json:"problems"`
}

func (p dryRunPlan) creates(port string) bool {
	return slices.ContainsFunc(p.Plan.Changes, func(c planChange) bool {
		return c.Action == "create" && c.Kind == "logical_switch_port" && c.Name == port
	})
}

// checkDidPlan checks after, the NB once a pass applied, against before
// and plan: the ports plan changes as it has them (addresses, port
// security, owner), the ports it deletes gone, and every other row of
// before exactly as it was.
func checkDidPlan(t *testing.T, before, after nbSnapshot, plan dryRunPlan) {
	t.Helper()
	named := map[string]bool{}
	for _, c := range plan.Plan.Changes {
		if c.Kind != "logical_switch_port" {
			t.Errorf("the plan changes %s %s: the test expects ports only", c.Kind, c.Name)
			continue
		}
		named[c.Name] = true
		row, ok := after["Logical_Switch_Port"][c.Name]
		switch {
		case c.Action == "delete" && ok:
			t.Errorf("port %s: the plan deletes it, the NB still has it", c.Name)
		case c.Action == "delete":
		case !ok:
			t.Errorf("port %s: the plan %ss it, the NB has none", c.Name, c.Action)
		default:
			ids := ovsdbMap(t, row["external_ids"])
			if got := ovsdbSet(t, row["addresses"]); !slices.Equal(got, c.After.Addresses) {
				t.Errorf("port %s: addresses %v, the plan said %v", c.Name, got, c.After.Addresses)
			}
			if got := ovsdbSet(t, row["port_security"]); !slices.Equal(got, c.After.PortSecurity) {
				t.Errorf("port %s: port_security %v, the plan said %v", c.Name, got, c.After.PortSecurity)
			}
			if ids["ovn-sync/owner"] != c.After.Owner {
				t.Errorf("port %s: owner %q, the plan said %q", c.Name, ids["ovn-sync/owner"], c.After.Owner)
			}
			if b, was := before["Logical_Switch_Port"][c.Name]; was && b["_uuid"] != row["_uuid"] {
				t.Errorf("port %s: replaced (UUID %s, was %s), the plan said %s", c.Name, row["_uuid"], b["_uuid"], c.Action)
			}
		}
	}
	for table, rows := range before {
		for name, cols := range rows {
			if table == "Logical_Switch_Port" && named[name] {
				continue
			}
			now, ok := after[table][name]
			if !ok {
				t.Errorf("%s %s: gone, and the plan did not say so", table, name)
				continue
			}
			for col, v := range cols {
				// A switch's ports change with the ports the plan creates.
				if table == "Logical_Switch" && col == "ports" {
					continue
				}
				if now[col] != v {
					t.Errorf("%s %s: %s %s, was %s, and the plan did not say so", table, name, col, now[col], v)
				}
			}
		}
	}
}

// ovsdbSet reads a set column as ovn-nbctl prints it in JSON: one value,
// or ["set", [...]].
func ovsdbSet(t *testing.T, raw string) []string {
	t.Helper()
	var one string
	if json.Unmarshal([]byte(raw), &one) == nil {
		return []string{one}
	}
	var v []json.RawMessage
	var vals []string
	if err := json.Unmarshal([]byte(raw), &v); err != nil || len(v) != 2 || json.Unmarshal(v[1], &vals) != nil {
		t.Fatalf("not an OVSDB set: %s", raw)
	}
	if vals == nil {
		vals = []string{}
	}
	return vals
}

// dryRunRBAC writes the roles of the chart's dry run, for the service
// account ServiceAccountKubeconfig authenticates as, to a file, and
// returns its path.
func dryRunRBAC(t *testing.T) string {
	t.Helper()
	files, err := deploy.Render("../../deploy/chart/ovn-sync", deploy.Release, map[string]any{"dryRun": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(path, []byte(files["rbac.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// resourceVersions maps every object of the kinds ovn-sync reads to its
// resourceVersion.
func resourceVersions(t *testing.T, k *kubetest.Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	for kind, r := range sources.KindResources() {
		l, err := k.Dynamic.Resource(r).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue // a kind not served
		}
		for _, o := range l.Items {
			out[string(kind)+" "+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}
