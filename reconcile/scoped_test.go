package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestPassScopedDiff: incremental passes diff only the ports that may
// have changed, and their plans are those of a diff of every port
// (Verify): for a new pod, for a port someone else edited between two
// passes, and for a pass that runs before the NB shows the last one.
func TestPassScopedDiff(t *testing.T) {
	nb := embeddedNB(t)
	ctx := context.Background()
	var x desired.Engine
	opts := Options{Config: config(t), MaxDeleteFraction: 1}
	pods := func(names ...string) desired.Inputs {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\n"+
				"spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}\nstatus: {phase: Running}\n", n)
		}
		return manifests(t, b.String())
	}
	pass := func(in desired.Inputs, changed ...string) Outcome {
		t.Helper()
		var b Builder = Engine{X: &x, List: Listed(in)}
		if changed != nil {
			refs := make([]state.ObjectRef, len(changed))
			for i, n := range changed {
				refs[i] = state.ObjectRef{Kind: "Pod", Namespace: "default", Name: n}
			}
			b = Verify{Changes{Engine: b.(Engine), Changed: refs, Objects: desired.ObjectsOf(in)}}
		}
		out, err := Pass(ctx, nb, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		if out.Mismatch != "" {
			t.Fatalf("Pass(%v): %s", changed, out.Mismatch)
		}
		return out
	}
	creates := func(out Outcome) []string {
		var names []string
		for _, c := range out.Plan.Changes {
			if c.Action == diff.Create {
				names = append(names, c.Name)
			}
		}
		return names
	}

	if out := pass(pods("a", "b", "c")); out.Scoped {
		t.Errorf("first pass: scoped, want a diff of every port")
	}
	waitOwned(t, nb, 3)
	out := pass(pods("a", "b", "c", "d"), "d")
	if !out.Incremental || !out.Scoped || fmt.Sprint(creates(out)) != "[d.default]" {
		t.Errorf("pass for pod d: incremental %v, scoped %v, creates %v; want scoped, creating d.default", out.Incremental, out.Scoped, creates(out))
	}
	waitOwned(t, nb, 4)

	// Someone else edits a.default; the next pass, for another pod, puts it back.
	a := nb.State().Ports.Get("a.default")
	set := &nbdb.LogicalSwitchPort{UUID: a.UUID, Options: map[string]string{"requested-chassis": "node-9"}}
	upd, err := nb.Client().Where(set).Update(set, &set.Options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Client().Transact(ctx, upd...); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); nb.State().Ports.Get("a.default").RequestedChassis != "node-9"; {
		if time.Now().After(deadline) {
			t.Fatal("the edit of a.default not in the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out = pass(pods("a", "b", "c", "d", "e"), "e")
	if !out.Scoped || len(out.Plan.Changes) != 2 || out.Plan.Changes[0].Name != "a.default" || out.Plan.Changes[1].Name != "e.default" {
		t.Errorf("pass for pod e after a.default was edited: scoped %v, plan\n%s\nwant a.default updated and e.default created", out.Scoped, out.Plan)
	}
	// At once, whether or not the cache shows the last pass yet.
	out = pass(pods("a", "b", "c", "d", "e", "f"), "f")
	if !out.Scoped || !strings.Contains(fmt.Sprint(creates(out)), "f.default") {
		t.Errorf("pass for pod f: scoped %v, plan\n%s\nwant f.default created", out.Scoped, out.Plan)
	}
	waitOwned(t, nb, 6)
	if out := pass(pods("a", "b", "c", "d", "e", "f"), "f"); !out.Scoped || !out.Plan.Empty() {
		t.Errorf("pass with nothing to do: scoped %v, plan\n%s", out.Scoped, out.Plan)
	}
}
