package publish

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// writeClaim writes a claim's status through the status subresource
// (reconcile.ClaimStatuses says what). The update carries the claim as
// read: its UID is a precondition (a claim deleted and made again under
// its name is not written) and so is its resourceVersion, so a status
// another writer filled meanwhile is never written over. A conflict or a
// claim that is gone is not an error: the next pass computes again from
// what the informer then shows. A condition whose status changes gets the
// time now.
func (p *Publisher) writeClaim(ctx context.Context, cs reconcile.ClaimStatus) {
	c := cs.Claim.DeepCopy()
	c.Status = cs.Status
	now := metav1.Now()
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].LastTransitionTime.IsZero() {
			c.Status.Conditions[i].LastTransitionTime = now
		}
	}
	c.APIVersion, c.Kind = ipamclaimsv1alpha1.GroupVersion.String(), ipamclaimsv1alpha1.Kind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		p.log.Error(err, "encoding an IPAMClaim's status", "object", c.Namespace+"/"+c.Name)
		return
	}
	_, err = p.dyn.Resource(sources.GVRIPAMClaim).Namespace(c.Namespace).UpdateStatus(ctx,
		&unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{FieldManager: "ovn-sync"})
	switch {
	case err == nil:
		p.result("patched")
		p.log.V(1).Info("wrote IPAMClaim status", "object", c.Namespace+"/"+c.Name, "ips", c.Status.IPs)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		p.result("gone")
	case ctx.Err() != nil:
	default:
		p.result("error")
		p.log.Error(err, "writing an IPAMClaim's status failed; the next pass retries", "object", c.Namespace+"/"+c.Name)
	}
}
