package desired

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/state"
)

// limited returns a config of the default network whose switch takes n
// ports at most.
func limited(t *testing.T, n int) Config {
	t.Helper()
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.switchPorts = n
	return cfg
}

// olderPods returns pods p0..p(n-1) of namespace ns, each created a minute
// after the one before.
func olderPods(ns string, n int) []*corev1.Pod {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ps []*corev1.Pod
	for i := range n {
		p := pod(ns, fmt.Sprintf("p%d", i), nil)
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		ps = append(ps, p)
	}
	return ps
}

func switchFull(r Result) []Problem {
	var out []Problem
	for _, p := range r.Problems {
		if p.Reason == "SwitchFull" {
			out = append(out, p)
		}
	}
	return out
}

// A switch takes as many ports as OVN binds and no more: the older owners
// get them, the others a SwitchFull Problem naming the network and the
// limit, and no port. kube-ovn's ports on the switch count.
func TestSwitchFullRefusesNewPorts(t *testing.T) {
	cfg := limited(t, 4)
	have := state.New(1)
	have.Ports.Set("kovn.ns", (&state.Port{Name: "kovn.ns", UUID: "k1", Addresses: []string{"00:00:00:00:00:01 10.16.0.200"}}).
		SetRare(&state.Rare{Vendor: state.VendorKubeOVN, VendorSwitch: "ovn-default"}))
	r := Build(Inputs{Pods: olderPods("ns", 5)}, cfg, have)
	for i := range 5 {
		name := fmt.Sprintf("p%d.ns", i)
		if got, want := r.Want.Ports.Get(name) != nil, i < 3; got != want {
			t.Errorf("port %s wanted: %v, want %v", name, got, want)
		}
	}
	full := switchFull(r)
	if len(full) != 2 || full[0].Name != "p3" || full[1].Name != "p4" {
		t.Fatalf("SwitchFull problems = %v, want p3 and p4", full)
	}
	if m := full[0].Message; !strings.Contains(m, "the default network") || !strings.Contains(m, `"ovn-default"`) || !strings.Contains(m, "(4)") {
		t.Errorf("message %q does not name the network, the switch and the limit", m)
	}
	if r.Again {
		t.Error("Again set, but no port leaves the switch")
	}
	if n := r.SwitchPorts["ovn-default"]; n != 4 {
		t.Errorf("SwitchPorts[ovn-default] = %d, want 4 (3 of ours and kube-ovn's)", n)
	}
}

// Ports a switch holds are never removed to make room, even for older
// owners, and a port past the limit that someone else wrote stays; one
// leaving makes room for the next pass (Again).
func TestSwitchFullNeverEvicts(t *testing.T) {
	cfg := limited(t, 3)
	pods := olderPods("ns", 4)
	// p1, p2, p3 have their ports; p0, the oldest, has none yet.
	first := Build(Inputs{Pods: pods[1:]}, cfg, state.State{})
	have := first.Want.Clone()
	r := Build(Inputs{Pods: pods}, cfg, have)
	for name, hp := range have.Ports.All() {
		if p := r.Want.Ports.Get(name); p == nil || !p.Equal(hp) {
			t.Errorf("port %s = %v, want kept as %v", name, p, hp)
		}
	}
	if full := switchFull(r); len(full) != 1 || full[0].Name != "p0" || r.Want.Ports.Get("p0.ns") != nil {
		t.Errorf("SwitchFull = %v, p0's port %v: want p0 refused", full, r.Want.Ports.Get("p0.ns"))
	}
	// p3 goes: its port leaves in this pass, and the pass over the applied
	// result gives p0 its port.
	r = Build(Inputs{Pods: pods[:3]}, cfg, have)
	if !r.Again || r.Want.Ports.Get("p0.ns") != nil {
		t.Fatalf("Again = %v, p0's port %v: want p0 to wait for p3's port to go", r.Again, r.Want.Ports.Get("p0.ns"))
	}
	applied := r.Want.Clone()
	r = Build(Inputs{Pods: pods[:3]}, cfg, applied)
	if r.Want.Ports.Get("p0.ns") == nil || len(switchFull(r)) != 0 || r.Again {
		t.Errorf("after p3 went: p0's port %v, problems %v, Again %v", r.Want.Ports.Get("p0.ns"), r.Problems, r.Again)
	}
}

// An owner whose network moves to a full switch keeps its port where it is.
func TestSwitchFullKeepsMovedPort(t *testing.T) {
	cfg := limited(t, 2)
	have := state.New(1)
	old := &state.Port{Name: "p0.ns", UUID: "u0", Switch: "old-switch", Owner: "Pod/ns/p0", Network: "default",
		Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"}}
	have.Ports.Set(old.Name, old)
	for _, n := range []string{"x", "y"} {
		have.Ports.Set(n, (&state.Port{Name: n}).SetRare(&state.Rare{Vendor: state.VendorKubeOVN, VendorSwitch: "ovn-default"}))
	}
	r := Build(Inputs{Pods: olderPods("ns", 1)}, cfg, have)
	if p := r.Want.Ports.Get("p0.ns"); p == nil || p.Switch != "old-switch" {
		t.Errorf("p0's port = %v, want kept on old-switch", p)
	}
	if len(switchFull(r)) != 1 {
		t.Errorf("problems %v, want one SwitchFull", r.Problems)
	}
}

// An incremental Build that would fill a switch gives up: a full Build
// decides who gets its last ports.
func TestSwitchFullIncrementalGivesUp(t *testing.T) {
	cfg := limited(t, 3)
	pods := olderPods("ns", 4)
	var x Engine
	r := x.Full(Inputs{Pods: pods[:2]}, cfg, state.State{})
	have := r.Want.Clone()
	objs := ObjectsOf(Inputs{Pods: pods[:3]})
	r, why := x.Update(objs, []state.ObjectRef{{Kind: state.KindPod, Namespace: "ns", Name: "p2"}}, cfg, have)
	if why.Gave() {
		t.Fatalf("Update of the third port gave up: %s", why)
	}
	have = r.Want.Clone()
	objs = ObjectsOf(Inputs{Pods: pods})
	_, why = x.Update(objs, []state.ObjectRef{{Kind: state.KindPod, Namespace: "ns", Name: "p3"}}, cfg, have)
	if !strings.Contains(why.String(), "ovn-default") || why.Reason != ReasonSwitchFull {
		t.Errorf("Update of the fourth port: why = %q, want it to give up naming the switch", why)
	}
}
