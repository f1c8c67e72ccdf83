package reconcile

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/desired"
)

// ClaimStatus is the status one IPAMClaim needs written: Claim is the
// object as read (its UID and resourceVersion are the update's
// preconditions), Status what it should say. Condition's
// LastTransitionTime is left to the writer, which reads the clock.
type ClaimStatus struct {
	Claim  *ipamclaimsv1alpha1.IPAMClaim
	Status ipamclaimsv1alpha1.IPAMClaimStatus
}

// ClaimStatuses computes, purely from Build's facts, the status of every
// IPAMClaim a port reads that does not say it yet, as ovn-kubernetes fills
// the claims of the networks it manages:
//
//   - status.ips, when empty, is set to the port's addresses (CIDRs with
//     the subnet's prefix). Addresses already there are never changed: a
//     claim whose addresses differ from the port's is a ClaimMismatch
//     Problem, and its status is left alone.
//   - status.ownerPod names the live pod running the owner on its current
//     node (a VM's virt-launcher pod); a stopped VM's claim keeps the last.
//   - the IPsAllocated condition is True (SuccessfulAllocation) when the
//     port holds its addresses, else False with why: SubnetExhausted,
//     IPAddressConflict, MACAddressConflict, or NetworkNotManaged for an
//     OVN network ovn-sync leaves to others.
//
// Claims that need nothing are left out; the result is sorted by namespace
// and name. Like Publications, an incremental result gives the claims of
// the owners it rebuilt.
func ClaimStatuses(r desired.Result) []ClaimStatus {
	var out []ClaimStatus
	for _, f := range r.Claims() {
		c := f.Claim
		st := *c.Status.DeepCopy()
		cond := metav1.Condition{Type: ipamclaimsv1alpha1.ConditionIPsAllocated, ObservedGeneration: c.Generation}
		switch {
		case f.Reason != "":
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, f.Reason, f.Message
		case len(c.Status.IPs) > 0 && !sameAddresses(c.Status.IPs, f.IPs):
			continue // a ClaimMismatch Problem: never written over
		default:
			if len(st.IPs) == 0 {
				st.IPs = slices.Clone(f.IPs)
			}
			cond.Status, cond.Reason = metav1.ConditionTrue, ipamclaimsv1alpha1.ReasonSuccessfulAllocation
			cond.Message = "port " + f.Port + " holds " + strings.Join(f.IPs, ",")
		}
		if name := runningPod(f); name != "" {
			st.OwnerPod = &ipamclaimsv1alpha1.OwnerPod{Name: name}
		}
		setCondition(&st, cond)
		if !sameStatus(c.Status, st) {
			out = append(out, ClaimStatus{Claim: c, Status: st})
		}
	}
	slices.SortFunc(out, func(a, b ClaimStatus) int {
		return strings.Compare(a.Claim.Namespace+"/"+a.Claim.Name, b.Claim.Namespace+"/"+b.Claim.Name)
	})
	return out
}

// runningPod names the live pod that runs f's owner on its current node
// (the first of requested-chassis), "" when none does.
func runningPod(f *desired.ClaimFacts) string {
	node, _, _ := strings.Cut(f.Node, ",")
	if node == "" {
		return ""
	}
	for _, p := range f.Pods {
		if p.Live && p.Node == node {
			return p.Name
		}
	}
	return ""
}

// setCondition puts c in st's conditions, replacing one of its type, and
// keeps the old LastTransitionTime when the condition's status is the same.
func setCondition(st *ipamclaimsv1alpha1.IPAMClaimStatus, c metav1.Condition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// sameStatus reports whether a and b say the same, transition times aside.
func sameStatus(a, b ipamclaimsv1alpha1.IPAMClaimStatus) bool {
	if !slices.Equal(a.IPs, b.IPs) || (a.OwnerPod == nil) != (b.OwnerPod == nil) ||
		a.OwnerPod != nil && a.OwnerPod.Name != b.OwnerPod.Name || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i, x := range a.Conditions {
		y := b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || y.LastTransitionTime.IsZero() {
			return false
		}
	}
	return true
}

// sameAddresses reports whether two lists of status.ips entries name the
// same addresses, prefixes aside.
func sameAddresses(a, b []string) bool {
	strip := func(l []string) []string {
		out := make([]string, len(l))
		for i, v := range l {
			out[i], _, _ = strings.Cut(strings.TrimSpace(v), "/")
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(strip(a), strip(b))
}
