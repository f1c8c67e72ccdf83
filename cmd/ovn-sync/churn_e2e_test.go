package main

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestRunIrrelevantChurn writes, against a real kube-apiserver, what a
// busy cluster writes all the time and ovn-sync does not read — a
// StatefulSet's status, a Namespace's labels, 100 rounds of each — and
// requires that it cost nothing: no full build, no transaction, the NB's
// ports as they were. Then a Namespace names a kube-ovn Subnet
// (ovn.kubernetes.io/logical_switch): no full build either, and a pod
// created in it afterwards is on that Subnet's switch.
func TestRunIrrelevantChurn(t *testing.T) {
	e := startEnv(t, envOptions{Namespaces: []string{"shop"}})
	k, nb := e.k, e.nb
	ctx := context.Background()
	run := e.run("--leader-elect=false", "--publish=false")
	run.waitReady()

	sets := k.Kube.AppsV1().StatefulSets("shop")
	set, err := sets.Create(ctx, webStatefulSet("shop"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := pausePod("shop", fmt.Sprintf("web-%d", i), fmt.Sprintf("node-%d", i))
		p.Labels = map[string]string{"app": "web"}
		createPod(t, k, p)
	}
	for i := range 3 {
		portIs(t, nb, fmt.Sprintf("web-%d.shop", i), "present", present)
	}
	// The pass that committed them counts its transactions after the NB
	// shows them, and then what it owns: wait for that count.
	looptest.WaitFor(t, 30*time.Second, "the pass that committed the ports counted", func() error {
		if got, want := run.metric("ovn_sync_owned_ports"), float64(nb.State().OwnedPorts()); got != want {
			return fmt.Errorf("ovn_sync_owned_ports %v, the NB holds %v", got, want)
		}
		return nil
	})
	fulls, txns, passes := run.metric("ovn_sync_builds_total", `kind="full"`), run.metric("ovn_sync_transactions_total"), run.metric("ovn_sync_passes_total")
	ports := shopPorts(nb)

	// What the StatefulSet controller and a GitOps tool write.
	const rounds = 100
	nss := k.Kube.CoreV1().Namespaces()
	for i := range rounds {
		set.Status = appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: int32(1 + i%2), CurrentReplicas: 3, ObservedGeneration: set.Generation}
		if set, err = sets.UpdateStatus(ctx, set, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("round %d: StatefulSet status: %v", i, err)
		}
		ns, err := nss.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels["argocd.argoproj.io/round"] = strconv.Itoa(i)
		if _, err := nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("round %d: Namespace labels: %v", i, err)
		}
	}
	// Every write reached its handler: dropped, or told as a change.
	for _, kind := range []sources.Kind{sources.KindStatefulSet, sources.KindNamespace} {
		looptest.WaitFor(t, 30*time.Second, string(kind)+" writes handled", func() error {
			l := fmt.Sprintf("kind=%q", kind)
			if n := run.metric("ovn_sync_changes_dropped_total", l) + run.metric("ovn_sync_informer_events_total", l); n < rounds {
				return fmt.Errorf("%v of %d", n, rounds)
			}
			return nil
		})
	}
	t.Logf("%d rounds: %v passes, %v full builds, %v transactions; dropped: %v StatefulSet, %v Namespace", rounds,
		run.metric("ovn_sync_passes_total")-passes, run.metric("ovn_sync_builds_total", `kind="full"`)-fulls,
		run.metric("ovn_sync_transactions_total")-txns,
		run.metric("ovn_sync_changes_dropped_total", `kind="StatefulSet"`), run.metric("ovn_sync_changes_dropped_total", `kind="Namespace"`))
	if got := run.metric("ovn_sync_builds_total", `kind="full"`); got != fulls {
		t.Errorf("ovn_sync_builds_total{kind=\"full\"} = %v after %d rounds of writes of nothing read, want %v", got, rounds, fulls)
	}
	if got := run.metric("ovn_sync_transactions_total"); got != txns {
		t.Errorf("ovn_sync_transactions_total = %v after %d rounds of writes of nothing read, want %v", got, rounds, txns)
	}
	if got := shopPorts(nb); !reflect.DeepEqual(got, ports) {
		t.Errorf("the NB's ports changed:\n%v\nwant\n%v", got, ports)
	}

	// A Subnet (a full build: every owner may move) and the Namespace
	// naming it (the owners in it: none moves, they have ports).
	k.Create(sources.GVRSubnet, `
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: sub1}
spec: {cidrBlock: 10.66.0.0/24, gateway: 10.66.0.1}
`)
	looptest.WaitFor(t, 30*time.Second, "the Subnet's full build", func() error {
		if n := run.metric("ovn_sync_builds_total", `kind="full"`, `reason="subnet"`); n < 1 {
			return fmt.Errorf("%v full builds for a Subnet", n)
		}
		return nil
	})
	fulls = run.metric("ovn_sync_builds_total", `kind="full"`)
	incs := run.metric("ovn_sync_builds_total", `kind="incremental"`)
	ns, err := nss.Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Annotations = map[string]string{"ovn.kubernetes.io/logical_switch": "sub1"}
	if _, err := nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "a pass for the Namespace", func() error {
		if n := run.metric("ovn_sync_builds_total", `kind="incremental"`); n <= incs {
			return fmt.Errorf("%v incremental builds", n)
		}
		return nil
	})
	createPod(t, k, pausePod("shop", "late", "node-1"))
	portIs(t, nb, "late.shop", "on switch sub1", func(p *state.Port) error {
		if p == nil {
			return fmt.Errorf("absent")
		}
		if p.Switch != "sub1" {
			return fmt.Errorf("on switch %q", p.Switch)
		}
		return nil
	})
	for i := range 3 {
		name := fmt.Sprintf("web-%d.shop", i)
		if p := nb.State().Ports.Get(name); p == nil || p.Switch != ports[name].Switch || !reflect.DeepEqual(p.Addresses, ports[name].Addresses) {
			t.Errorf("port %s = %+v after the Namespace named sub1, want as it was: %+v", name, p, ports[name])
		}
	}
	if got := run.metric("ovn_sync_builds_total", `kind="full"`); got != fulls {
		t.Errorf("ovn_sync_builds_total{kind=\"full\"} = %v after the Namespace named a Subnet and a pod was created, want %v", got, fulls)
	}
}

// shopPorts is the NB's ports of namespace shop, by name.
func shopPorts(nb *observed.NB) map[string]state.Port {
	out := map[string]state.Port{}
	for name, p := range nb.State().Ports.All() {
		if p.Owned() && len(name) > 5 && name[len(name)-5:] == ".shop" {
			out[name] = *p
		}
	}
	return out
}
