package desired

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestClaimReadByTwoPods: two pods whose network selections name one
// IPAMClaim. The claim is the record of the port that holds its address
// (here the younger pod's, which had it before), and the Problem on the
// claim says which port keeps it and which is refused. A pod that starts
// reading a claim another owner's port reads is for a full Build to settle:
// an Update gives up (ReasonClaimRead).
func TestClaimReadByTwoPods(t *testing.T) {
	for _, holder := range []string{"a", "b"} {
		t.Run("held by "+holder, func(t *testing.T) { testClaimReadByTwoPods(t, holder) })
	}
}

// testClaimReadByTwoPods runs TestClaimReadByTwoPods with pod holder's
// port holding the claim's address before the other pod reads it.
func testClaimReadByTwoPods(t *testing.T, holder string) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "l2"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","name":"tn","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.10.0/24","allowPersistentIPs":true}`}}
	claim := &ipamclaimsv1alpha1.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c"}, Spec: ipamclaimsv1alpha1.IPAMClaimSpec{Network: "tn"},
		Status: ipamclaimsv1alpha1.IPAMClaimStatus{IPs: []string{"192.168.10.7/24"}}}
	ann := map[string]string{annNetworks: `[{"name":"l2","ipam-claim-reference":"c"}]`}
	pods := map[string]*corev1.Pod{"a": pod("t", "a", ann), "b": pod("t", "b", ann)}
	pods["a"].CreationTimestamp, pods["b"].CreationTimestamp = metav1.Unix(1, 0), metav1.Unix(2, 0)
	other := map[string]string{"a": "b", "b": "a"}[holder]
	in := Inputs{Pods: []*corev1.Pod{pods[holder]}, NetworkAttachmentDefinitions: []*nadv1.NetworkAttachmentDefinition{nad},
		IPAMClaims: []*ipamclaimsv1alpha1.IPAMClaim{claim}}
	var x Engine
	r := x.Full(in, cfg, state.New(0))
	have := applied(state.New(0), r.Want)
	port := func(name string) string { return name + ".t.l2.t.ovn" }
	if p := have.Ports.Get(port(holder)); p == nil || !strings.Contains(p.Addresses[0], "192.168.10.7") {
		t.Fatalf("%s's port, alone: %v", holder, p)
	}
	in.Pods = append(in.Pods, pods[other])
	if _, why := x.Update(ObjectsOf(in), []state.ObjectRef{refOf(pods[other])}, cfg, have); why.Reason != ReasonClaimRead {
		t.Errorf("Update for pod %s: why %v, want %s", other, why, ReasonClaimRead)
	}
	full := Build(in, cfg, have)
	// Whatever order the pods come in.
	in.Pods = []*corev1.Pod{pods[other], pods[holder]}
	if d := Mismatch(Build(in, cfg, have), full); d != "" {
		t.Errorf("the pods in the other order: %s", d)
	}
	want := fmt.Sprintf(`referenced by port %q (Pod/t/%s) and by port %q (Pod/t/%s): it is the record of port %q (it holds the claim's address); port %q's reference is refused`,
		port(holder), holder, port(other), other, port(holder), port(other))
	if !slices.ContainsFunc(full.Problems, func(p Problem) bool { return p.Name == "c" && p.Message == want }) {
		t.Errorf("problems %v, want one on the claim: %s", full.Problems, want)
	}
	if p := full.Want.Ports.Get(port(holder)); p == nil || !strings.Contains(p.Addresses[0], "192.168.10.7") {
		t.Errorf("%s's port: %v, want it on the claim's address", holder, p)
	}
	if p := full.Want.Ports.Get(port(other)); p == nil || strings.Contains(p.Addresses[0], "192.168.10.7") {
		t.Errorf("%s's port: %v, want another address", other, p)
	}
}
