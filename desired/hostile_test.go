package desired

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestHostileInput runs the scripts under testdata/hostile. Each starts from
// an NB holding the example cluster (examples/cluster, with
// examples/ovn-sync.yaml) and adds objects of its own. The same scripts run end to end against a real
// NB (cmd/ovn-sync TestHostileInputAgainstRealNB) and must print the same.
// Commands:
//
//	before   Kubernetes YAML: the script's objects, in a good state; one pass
//	after    the same objects, some made hostile; one pass, after which
//	         every row that existed before it must be exactly as it was
//
// Both print the pass's problems and the ports it created ("+ port NAME
// ADDRESSES") or deleted ("- port NAME"). Every pass must also leave nothing
// for a second pass to do.
func TestHostileInput(t *testing.T) {
	base, cfg := exampleCluster(t)
	datadriven.Walk(t, "testdata/hostile", func(t *testing.T, path string) {
		// The example cluster is in the NB already.
		first, _ := wantProblems(Build(base, cfg, state.New(0)))
		have := applied(state.New(0), first)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "before" && d.Cmd != "after" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			in := base
			in.Pods = slices.Clone(base.Pods)
			in.VirtualMachines = slices.Clone(base.VirtualMachines)
			in.VirtualMachineInstances = slices.Clone(base.VirtualMachineInstances)
			in.Migrations = slices.Clone(base.Migrations)
			in.NetworkAttachmentDefinitions = slices.Clone(base.NetworkAttachmentDefinitions)
			if err := decodeObjects(d.Input, &in); err != nil {
				d.Fatalf(t, "objects: %v", err)
			}
			r := Build(in, cfg, have)
			want, problems := r.Want, r.Problems
			for _, err := range invariants(have, r) {
				t.Errorf("%s: %v", d.Pos, err)
			}
			next := applied(have, want)
			if again, _ := wantProblems(Build(in, cfg, next)); diffStates(want, again) != "" {
				t.Errorf("%s: a second pass changes:\n%s", d.Pos, diffStates(want, again))
			}
			var out strings.Builder
			for _, p := range problems {
				fmt.Fprintf(&out, "problem %s %s/%s %s: %s\n", p.Kind, p.Namespace, p.Name, p.Reason, p.Message)
			}
			out.WriteString(portChanges(have, next))
			if d.Cmd == "after" {
				for _, err := range untouched(have, next) {
					t.Errorf("%s: %v", d.Pos, err)
				}
			}
			have = next
			return out.String()
		})
	})
}

// exampleCluster reads examples/cluster and examples/ovn-sync.yaml.
func exampleCluster(t *testing.T) (Inputs, Config) {
	t.Helper()
	var in Inputs
	files, err := filepath.Glob("../examples/cluster/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/cluster: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeObjects(string(data), &in); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	data, err := os.ReadFile("../examples/ovn-sync.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fc fileConfig
	if err := yaml.Unmarshal(data, &fc); err != nil {
		t.Fatal(err)
	}
	cfg, err := fc.config()
	if err != nil {
		t.Fatal(err)
	}
	return in, cfg
}

// portChanges lists, sorted by name, the ports in next but not in prev
// (with their addresses) and those in prev but not in next.
func portChanges(prev, next state.State) string {
	var out strings.Builder
	names := slices.Sorted(next.Ports.Names())
	for _, name := range slices.Sorted(prev.Ports.Names()) {
		if _, ok := next.Ports.Lookup(name); !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		p, q := prev.Ports.Get(name), next.Ports.Get(name)
		switch {
		case p == nil:
			fmt.Fprintf(&out, "+ port %s %s\n", name, strings.Join(q.Addresses, ","))
		case q == nil:
			fmt.Fprintf(&out, "- port %s\n", name)
		}
	}
	return out.String()
}

// untouched returns an error for every row of prev that next lacks or holds
// with a different value.
func untouched(prev, next state.State) []error {
	var errs []error
	for _, name := range slices.Sorted(prev.Ports.Names()) {
		if q := next.Ports.Get(name); q == nil || !q.Equal(prev.Ports.Get(name)) {
			errs = append(errs, fmt.Errorf("port %s was %+v, is %+v", name, prev.Ports.Get(name), q))
		}
	}
	for _, name := range sortedKeys(prev.Switches) {
		if q := next.Switches[name]; q == nil || !q.Equal(prev.Switches[name]) {
			errs = append(errs, fmt.Errorf("switch %s was %+v, is %+v", name, prev.Switches[name], q))
		}
	}
	return errs
}
