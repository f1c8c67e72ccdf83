package desired

import (
	"net/netip"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// FuzzBuildHostileInput feeds arbitrary annotations and NAD configs to a
// pod beside a good one. Whatever the input, Build must not panic, the good
// pod's existing port must come out unchanged, and no address may be shared.
// `go test` runs the seeds; `go test -fuzz FuzzBuildHostileInput ./desired/`
// searches further.
func FuzzBuildHostileInput(f *testing.F) {
	f.Add("10.16.0.10", "00:00:00:00:00:01", "tenant/net@eth1", `{"type":"kube-ovn","subnets":"10.20.0.0/24"}`)
	f.Add("999.1.1.1", "zz", `[{"name":"net","namespace":"tenant","ips":["10.20.0.5"]}]`, `{"type":"ovn-k8s-cni-overlay","subnets":"10.20.0.0/24,fd00::/64"}`)
	f.Add("10.16.0.2", "0a:58:0a:10:00:02", "[", `{"type":"kube-ovn","subnets":`)
	f.Add("10.16.0.2,10.16.0.3", "", "net,net,net", `{"type":"kube-ovn","subnets":"10.16.0.0/16","logical_switch":"ovn-default"}`)
	f.Add("fd00:10:16::5", "ff:ff:ff:ff:ff:ff", `[{"name":""}]`, `{"type":"macvlan"}`)
	f.Fuzz(func(t *testing.T, ip, mac, networks, nadConfig string) {
		cfg := Config{
			DefaultSwitch:  "ovn-default",
			DefaultSubnets: []netip.Prefix{netip.MustParsePrefix("10.16.0.0/16")},
			DefaultExclude: []netconf.IPRange{{From: netip.MustParseAddr("10.16.0.1"), To: netip.MustParseAddr("10.16.0.1")}},
		}
		good := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: "tenant"},
			Spec:       corev1.PodSpec{NodeName: "node-1"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		hostile := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hostile", Namespace: "tenant", Annotations: map[string]string{
				"ovn.kubernetes.io/ip_address":             ip,
				"ovn.kubernetes.io/mac_address":            mac,
				"k8s.v1.cni.cncf.io/networks":              networks,
				"net.tenant.ovn.kubernetes.io/ip_address":  ip,
				"net.tenant.ovn.kubernetes.io/mac_address": mac,
			}},
			Spec:   corev1.PodSpec{NodeName: "node-2"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		nad := &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "net", Namespace: "tenant"},
			Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: nadConfig},
		}
		in := Inputs{Pods: []*corev1.Pod{good}, NetworkAttachmentDefinitions: []*nadv1.NetworkAttachmentDefinition{nad}}
		first, _ := wantProblems(Build(in, cfg, state.New(0)))
		goodPort := first.Ports.Get("good.tenant")
		if goodPort == nil {
			t.Fatalf("good pod has no port before the hostile one arrives")
		}
		have := state.State{Switches: first.Switches, Ports: state.PortsOf(map[string]*state.Port{})}
		for n, p := range first.Ports.All() {
			q := *p
			q.UUID = "uuid-" + n
			have.Ports.Set(n, &q)
		}

		in.Pods = append(in.Pods, hostile)
		r := Build(in, cfg, have)
		want := r.Want
		if got := want.Ports.Get("good.tenant"); got == nil || !got.Equal(goodPort) {
			t.Fatalf("hostile input changed the good port:\nbefore %+v\nafter  %+v", goodPort, got)
		}
		for _, err := range invariants(have, r) {
			t.Error(err)
		}
	})
}
