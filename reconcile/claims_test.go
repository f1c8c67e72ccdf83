package reconcile

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

const claimsCluster = `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: vms}
spec:
  config: '{"cniVersion":"0.3.1","name":"tenantnet","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.10.0/24","allowPersistentIPs":true}'
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db, namespace: vms, uid: u-db}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: data, bridge: {}}]}}
      networks: [{name: data, multus: {networkName: l2}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: db
  namespace: vms
  uid: u-vmi
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: db, uid: u-db, controller: true}]
spec:
  domain: {devices: {interfaces: [{name: data, bridge: {}}]}}
  networks: [{name: data, multus: {networkName: l2}}]
status: {phase: Running, nodeName: node-1}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-db-a
  namespace: vms
  labels: {kubevirt.io: virt-launcher}
  annotations: {kubevirt.io/domain: db}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: db, uid: u-vmi, controller: true}]
spec: {nodeName: node-1, containers: [{name: compute, image: i}]}
status: {phase: Running}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: vms, uid: u-web}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: data, bridge: {}}]}}
      networks: [{name: data, multus: {networkName: l2}}]
---
apiVersion: k8s.cni.cncf.io/v1alpha1
kind: IPAMClaim
metadata:
  name: db.data
  namespace: vms
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: db, uid: u-db, controller: true}]
spec: {network: tenantnet, interface: ""}
---
apiVersion: k8s.cni.cncf.io/v1alpha1
kind: IPAMClaim
metadata:
  name: web.data
  namespace: vms
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: web, uid: u-web, controller: true}]
spec: {network: tenantnet, interface: ""}
status: {ips: [192.168.10.40/24]}
`

// TestClaimStatuses: an empty claim is filled with its port's addresses,
// names the launcher pod running the VM and says IPsAllocated True; a
// pre-filled one keeps its addresses and gets the condition alone (no
// owner pod: its VM is stopped); once written, nothing more is written; a
// claim whose addresses differ from the port's is never written.
func TestClaimStatuses(t *testing.T) {
	in := manifests(t, claimsCluster)
	r := desired.Build(in, config(t), state.New(0))
	got := ClaimStatuses(r)
	if len(got) != 2 {
		t.Fatalf("ClaimStatuses = %d statuses, want 2: %+v", len(got), got)
	}
	db, web := got[0], got[1]
	if db.Claim.Name != "db.data" || !slices.Equal(db.Status.IPs, []string{"192.168.10.2/24"}) ||
		db.Status.OwnerPod == nil || db.Status.OwnerPod.Name != "virt-launcher-db-a" {
		t.Errorf("db.data: %+v, want ips [192.168.10.2/24] and owner pod virt-launcher-db-a", db.Status)
	}
	if web.Claim.Name != "web.data" || !slices.Equal(web.Status.IPs, []string{"192.168.10.40/24"}) || web.Status.OwnerPod != nil {
		t.Errorf("web.data: %+v, want ips [192.168.10.40/24] and no owner pod", web.Status)
	}
	for _, cs := range got {
		if len(cs.Status.Conditions) != 1 || cs.Status.Conditions[0].Type != ipamclaimsv1alpha1.ConditionIPsAllocated ||
			cs.Status.Conditions[0].Status != metav1.ConditionTrue || cs.Status.Conditions[0].Reason != ipamclaimsv1alpha1.ReasonSuccessfulAllocation {
			t.Errorf("%s: conditions %+v, want IPsAllocated True SuccessfulAllocation", cs.Claim.Name, cs.Status.Conditions)
		}
	}

	// Written (the writer stamps the time): nothing more to write.
	for i := range in.IPAMClaims {
		for _, cs := range got {
			if cs.Claim.Name == in.IPAMClaims[i].Name {
				st := cs.Status
				st.Conditions[0].LastTransitionTime = metav1.Now()
				in.IPAMClaims[i].Status = st
			}
		}
	}
	if again := ClaimStatuses(desired.Build(in, config(t), state.New(0))); len(again) != 0 {
		t.Errorf("ClaimStatuses after writing = %+v, want none", again)
	}

	// Addresses that differ from the port's (written by someone else, no
	// condition): a Problem, and the claim is not written, not even its
	// condition.
	have := r.Want
	in.IPAMClaims[0].Status = ipamclaimsv1alpha1.IPAMClaimStatus{IPs: []string{"192.168.10.77/24"}}
	r = desired.Build(in, config(t), have)
	if got := ClaimStatuses(r); len(got) != 0 {
		t.Errorf("ClaimStatuses with a mismatch = %+v, want none", got)
	}
	if !slices.ContainsFunc(r.Problems, func(p desired.Problem) bool { return p.Reason == "ClaimMismatch" && p.Name == "db.data" }) {
		t.Errorf("problems %v, want ClaimMismatch on db.data", r.Problems)
	}
}
