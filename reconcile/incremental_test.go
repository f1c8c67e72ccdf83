package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/diff"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// TestLoopIncrementalPasses drives the loop through pods created and
// deleted, a VM started, migrated and stopped, and checks that the
// passes were incremental, that each agreed with a full Build (looptest
// verifies every one and fails the test on a difference), and that the NB
// ends where a full Build of the cluster says. Verified passes list the
// stores and look objects up in that listing; unverified ones, as run
// mode's, look them up in the informers' stores: the test runs both.
func TestLoopIncrementalPasses(t *testing.T) {
	if looptest.FullPasses() {
		t.Skip("OVN_SYNC_FULL_PASSES: no incremental pass to check")
	}
	for _, passes := range []string{"", "incremental"} {
		name := "verified"
		if passes != "" {
			name = "looked-up"
		}
		t.Run(name, func(t *testing.T) { testLoopIncrementalPasses(t, passes) })
	}
}

func testLoopIncrementalPasses(t *testing.T, passes string) {
	tr := looptest.Start(t, looptest.Options{DynObjs: []runtime.Object{looptest.Unstructured(t, looptest.VM("vm1"))}, Passes: passes})
	ctx := context.Background()
	pods := tr.Kube.CoreV1().Pods("ns")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tr.WaitPorts(t, "the stopped VM's port", 1)
	tr.Pods(t, 0, 20)
	tr.WaitPorts(t, "a port per pod", 21)
	for i := range 5 {
		must(pods.Delete(ctx, fmt.Sprintf("p%d", i), metav1.DeleteOptions{}))
	}
	tr.WaitPorts(t, "the deleted pods' ports gone", 16)
	vmis := tr.Dyn.Resource(sources.GVRVirtualMachineInstance).Namespace("ns")
	migrations := tr.Dyn.Resource(sources.GVRVirtualMachineInstanceMigration).Namespace("ns")
	_, err := vmis.Create(ctx, looptest.Unstructured(t, looptest.VMI("vm1", "n1")), metav1.CreateOptions{})
	must(err)
	_, err = pods.Create(ctx, looptest.Launcher("vm1", "a", "n1"), metav1.CreateOptions{})
	must(err)
	chassis := func(want string) func() error {
		return func() error {
			if p := tr.NB.State().Ports.Get("vm1.ns"); p == nil || p.RequestedChassis != want {
				return fmt.Errorf("vm1.ns %+v, want requested-chassis %q", p, want)
			}
			return nil
		}
	}
	looptest.WaitFor(t, 30*time.Second, "the VM running on n1", chassis("n1"))
	_, err = migrations.Create(ctx, looptest.Unstructured(t, looptest.Migration("vm1", "mig1", "n1", "n2")), metav1.CreateOptions{})
	must(err)
	_, err = pods.Create(ctx, looptest.Launcher("vm1", "b", "n2"), metav1.CreateOptions{})
	must(err)
	looptest.WaitFor(t, 30*time.Second, "the VM migrating", chassis("n1,n2"))
	must(vmis.Delete(ctx, "vm1", metav1.DeleteOptions{}))
	must(migrations.Delete(ctx, "mig1", metav1.DeleteOptions{}))
	for _, s := range []string{"a", "b"} {
		must(pods.Delete(ctx, "virt-launcher-vm1-"+s, metav1.DeleteOptions{}))
	}
	looptest.WaitFor(t, 30*time.Second, "the VM stopped", chassis(""))

	if n := tr.Metric("ovn_sync_builds_total", "kind", "incremental"); n < 5 {
		t.Errorf("%v incremental builds, want most passes incremental", n)
	}
	looptest.WaitFor(t, 30*time.Second, "the NB as a full Build wants it", func() error {
		have := tr.NB.State()
		want := desired.Build(tr.Src.Inputs().Inputs, tr.Config, have).Want
		if p := diff.Compute(want, have, diff.Policy{}); !p.Empty() {
			return fmt.Errorf("pending:\n%s", p)
		}
		return nil
	})
}
