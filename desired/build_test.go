package desired

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/internal/statetext"
	"github.com/ovn-sync/ovn-sync/state"
)

func pod(ns, name string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// A Config not made by NewConfig may be unusable. That is a Problem, and the
// default network is then unknown: its ports stay exactly as they are.
func TestBuildUnusableConfig(t *testing.T) {
	have := state.New(1)
	have.Switches["ovn-default"] = &state.Switch{Name: "ovn-default", UUID: "u1", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16"}
	kept := &state.Port{Name: "a.default", UUID: "u2", Switch: "ovn-default", Owner: "Pod/default/a", Network: "default",
		Addresses: []string{"0a:58:0a:10:00:02 10.16.0.2"}, PortSecurity: []string{"0a:58:0a:10:00:02 10.16.0.2"}, RequestedChassis: "node-9"}
	have.Ports.Set(kept.Name, kept)
	in := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil), pod("default", "b", nil)}}

	for _, tc := range []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"no switch", Config{DefaultSubnets: []netip.Prefix{netip.MustParsePrefix("10.16.0.0/16")}}, "logical switch name is empty"},
		{"no subnets", Config{DefaultSwitch: "ovn-default"}, "no subnets"},
		{"two IPv4", Config{DefaultSwitch: "ovn-default", DefaultSubnets: []netip.Prefix{
			netip.MustParsePrefix("10.16.0.0/16"), netip.MustParsePrefix("10.17.0.0/16")}}, "more than one subnet"},
	} {
		want, problems := wantProblems(Build(in, tc.cfg, have))
		if len(problems) != 1 || problems[0].Kind != "Config" || problems[0].Reason != "InvalidConfig" || !strings.Contains(problems[0].Message, tc.msg) {
			t.Errorf("%s: Build problems = %v, want one InvalidConfig %q", tc.name, problems, tc.msg)
		}
		// Kept unchanged: the NB's row itself, or a copy without its UUID.
		if got := want.Ports.Get("a.default"); want.Ports.Len() != 1 || !got.Equal(kept) || got != kept && got.UUID != "" {
			t.Errorf("%s: Build ports = %v, want only a.default kept unchanged", tc.name, want.Ports)
		}
		if s := want.Switches["ovn-default"]; s == nil || !s.Equal(have.Switches["ovn-default"]) || s.UUID != "" {
			t.Errorf("%s: Build switches = %v, want ovn-default kept", tc.name, want.Switches)
		}
	}
}

// Build must not modify have, and ports it keeps unchanged share their
// address slices with have instead of copying them.
func TestBuildLeavesHaveAlone(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil), pod("default", "b", nil)}}
	first, _ := wantProblems(Build(in, cfg, state.State{}))
	have := first.Clone()
	before := statetext.Print(have)
	again, _ := wantProblems(Build(in, cfg, have))
	if after := statetext.Print(have); after != before {
		t.Errorf("Build modified have:\n%s\nwas\n%s", after, before)
	}
	for name, p := range again.Ports.All() {
		if &p.Addresses[0] != &have.Ports.Get(name).Addresses[0] {
			t.Errorf("Build(%s) copied unchanged addresses", name)
		}
	}
}

func TestProblemsSorted(t *testing.T) {
	cfg, _ := NewConfig("ovn-default", []string{"10.16.0.0/24"}, nil)
	in := Inputs{Pods: []*corev1.Pod{
		pod("z", "p", map[string]string{DefaultIPAnnotation: "bad"}),
		pod("a", "q", map[string]string{DefaultMACAnnotation: "bad", annNetworks: "missing"}),
		pod("a", "p", map[string]string{DefaultIPAnnotation: "bad", annNetworks: "missing,missing@x"}),
	}}
	_, problems := wantProblems(Build(in, cfg, state.State{}))
	sorted := slices.IsSortedFunc(problems, func(a, b Problem) int {
		return cmpStrings(a.Kind, b.Kind, a.Namespace, b.Namespace, a.Name, b.Name, a.Reason, b.Reason, a.Message, b.Message)
	})
	if !sorted || len(problems) != 5 {
		t.Errorf("Build problems = %v, want 5, sorted, the duplicate missing-NAD problem once", problems)
	}
	if got, want := problems[0].String(), `Pod a/p: ovn.kubernetes.io/ip_address "bad": not an IP address`; got != want {
		t.Errorf("problems[0].String() = %q, want %q", got, want)
	}
}

func TestPool(t *testing.T) {
	excl := addr.MergeRanges([]netconf.IPRange{
		{From: netip.MustParseAddr("10.0.0.5"), To: netip.MustParseAddr("10.0.0.6")},
		{From: netip.MustParseAddr("10.0.0.1"), To: netip.MustParseAddr("10.0.0.2")},
		{From: netip.MustParseAddr("10.0.0.3"), To: netip.MustParseAddr("10.0.0.3")}, // adjacent: merged with .1-.2
		{From: netip.MustParseAddr("10.0.0.14"), To: netip.MustParseAddr("10.0.0.20")},
	}, true)
	if len(excl) != 3 {
		t.Fatalf("MergeRanges = %v, want 3 ranges", excl)
	}
	p := netip.MustParsePrefix("10.0.0.0/28")
	var r netconf.IPRange
	r.From, r.To = netconf.Usable(p)
	// The gateway, .9, is skipped like an excluded address.
	pl := newPool(&family{prefix: p, usable: r, excl: excl, gateway: netip.MustParseAddr("10.0.0.9")})
	taken := func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.8") }
	var got []string
	for {
		a, ok := pl.Take(taken, nil)
		if !ok {
			break
		}
		got = append(got, a.String())
	}
	if want := []string{"10.0.0.4", "10.0.0.7", "10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13"}; !slices.Equal(got, want) {
		t.Errorf("pool.Take = %v, want %v", got, want)
	}
}

// wantProblems returns r's desired state and problems.
func wantProblems(r Result) (state.State, []Problem) { return r.Want, r.Problems }
