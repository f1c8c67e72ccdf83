package desired

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestIncrementalFieldManifests replays the upstream manifests of
// testdata/field as informer events, in random order: the networks first
// (as a cluster has them before its workloads), then every pod, VM, VMI and
// migration created one at a time, then VMs stopped and started again,
// objects deleted and created again. After every event Engine.Update
// must give what a full Build of the same inputs and NB gives, and every
// owner keeps its addresses while its objects exist.
func TestIncrementalFieldManifests(t *testing.T) {
	files, err := filepath.Glob("testdata/field/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/field: %v (%d files)", err, len(files))
	}
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var all Inputs
	for _, f := range files {
		appendInputs(&all, readField(t, f))
	}
	var owners []any
	for _, p := range all.Pods {
		owners = append(owners, p)
	}
	for _, vm := range all.VirtualMachines {
		owners = append(owners, vm)
	}
	for _, vmi := range all.VirtualMachineInstances {
		owners = append(owners, vmi)
	}
	for _, m := range all.Migrations {
		owners = append(owners, m)
	}
	var updates, fulls int
	whys := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		c := &cluster{cfg: cfg, objects: map[state.ObjectRef]any{}}
		for _, o := range all.NetworkAttachmentDefinitions {
			c.put(o)
		}
		in := c.inputs()
		in.Subnets, in.Namespaces, in.StatefulSets, in.IPs = all.Subnets, all.Namespaces, all.StatefulSets, all.IPs
		var x Engine
		have := state.New(0)
		r := x.Full(in, cfg, have)
		have = applied(have, r.Want)
		step := func(what string, changed ...state.ObjectRef) {
			in := c.inputs()
			in.Subnets, in.Namespaces, in.StatefulSets, in.IPs = all.Subnets, all.Namespaces, all.StatefulSets, all.IPs
			want := Build(in, cfg, have)
			r, why := x.Update(ObjectsOf(in), changed, cfg, have)
			if why.Gave() {
				whys[why.Reason]++
				fulls++
				r = x.Full(in, cfg, have)
			} else {
				updates++
			}
			if d := Mismatch(r, want); d != "" {
				t.Fatalf("%s %v: incremental and full Build differ: %s", what, changed, d)
			}
			for _, err := range invariants(have, r) {
				t.Fatalf("%s %v: %v", what, changed, err)
			}
			have = applied(have, r.Want)
			if r.Again {
				r = x.Full(in, cfg, have)
				have = applied(have, r.Want)
			}
		}
		for _, o := range rapid.Permutation(owners).Draw(t, "creation order") {
			step("created", c.put(o))
		}
		for range rapid.IntRange(0, 30).Draw(t, "events") {
			refs := slices.SortedFunc(func(yield func(state.ObjectRef) bool) {
				for r := range c.objects {
					if r.Kind != kindNAD && !yield(r) {
						return
					}
				}
			}, func(a, b state.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
			var gone []any
			for _, o := range owners {
				if _, ok := c.objects[refOf(o)]; !ok {
					gone = append(gone, o)
				}
			}
			switch what := rapid.IntRange(0, 2).Draw(t, "what"); {
			case what == 0 && len(refs) > 0:
				step("deleted", c.del(rapid.SampledFrom(refs).Draw(t, "delete")))
			case what == 1 && len(gone) > 0:
				step("created again", c.put(rapid.SampledFrom(gone).Draw(t, "create")))
			case len(all.VirtualMachines) > 0:
				vm := rapid.SampledFrom(all.VirtualMachines).Draw(t, "vm")
				if cur, ok := c.objects[refOf(vm)].(*kubevirtv1.VirtualMachine); ok {
					step("run strategy flipped", c.put(flipRunning(cur)))
				}
			}
		}
	})
	t.Logf("%d updates, %d full Builds instead: %v", updates, fulls, whys)
	if updates == 0 {
		t.Fatal("no event was handled incrementally")
	}
}

// flipRunning returns a copy of vm stopped if it runs, started if not, as
// virtctl stop and start set spec.runStrategy (and clear spec.running).
func flipRunning(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	running := vm.Spec.Running != nil && *vm.Spec.Running
	if s := vm.Spec.RunStrategy; s != nil {
		running = *s != kubevirtv1.RunStrategyHalted
	}
	vm = vm.DeepCopy()
	vm.Spec.Running = nil
	s := kubevirtv1.RunStrategyAlways
	if running {
		s = kubevirtv1.RunStrategyHalted
	}
	vm.Spec.RunStrategy = &s
	return vm
}
