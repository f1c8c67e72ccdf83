package publish

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/reconcile"
)

func TestProblemEventsDeduplicated(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := &Events{log: logr.Discard(), recorder: rec, seen: map[desired.Problem]bool{}}
	in := desired.Inputs{Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u"}}}}
	p := desired.Problem{Kind: "Pod", Namespace: "ns", Name: "bad", Reason: "InvalidAddressRequest", Message: `ovn.kubernetes.io/ip_address "x": not an IP address`}
	cfgProblem := desired.Problem{Kind: "Config", Name: "defaultNetwork", Reason: "X", Message: "y"}
	e.Report([]desired.Problem{p, cfgProblem}, in)
	e.Report([]desired.Problem{p}, in)
	e.Report(nil, in)
	e.Report([]desired.Problem{p}, in)
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "Warning InvalidAddressRequest") {
		t.Errorf("events = %q, want the problem twice (it went away in between), the config problem never", got)
	}
}

func TestPublisherSkipsOnlyUntilTheInformerCatchesUp(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}})
	var results []string
	p := NewPublisher(kube, nil, logr.Discard(), func(r string) { results = append(results, r) })
	live := map[types.UID]bool{"uid-a": true}
	pp := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.2"}}
	ctx := context.Background()
	p.Publish(ctx, []reconcile.Publication{pp}, live)
	p.Publish(ctx, []reconcile.Publication{pp}, live) // the informer still shows version 1
	pp.ResourceVersion = "3"                          // someone removed the annotation since
	p.Publish(ctx, []reconcile.Publication{pp}, live)
	gone := pp
	gone.Name, gone.UID = "b", "uid-b"
	p.Publish(ctx, []reconcile.Publication{gone}, map[types.UID]bool{"uid-b": true})
	if want := []string{"patched", "patched", "gone"}; !slices.Equal(results, want) {
		t.Errorf("publish results = %v, want %v", results, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.2" {
		t.Errorf("pod a = %v, %v; want annotated", got, err)
	}
}

// TestPublisherRetriesWhatFailed: a patch that failed is sent again by the
// next Publish, which (after an incremental pass) may carry nothing for
// that object; a newer patch for it replaces the one that failed.
func TestPublisherRetriesWhatFailed(t *testing.T) {
	kube := kubefake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}})
	failures := 1
	kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("try later")
		}
		return false, nil, nil
	})
	var results []string
	p := NewPublisher(kube, nil, logr.Discard(), func(r string) { results = append(results, r) })
	ctx := context.Background()
	a := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: map[string]string{"ovn.kubernetes.io/ip_address": "10.16.0.2"}}
	b := a
	b.Name, b.UID = "b", "uid-b"
	p.Publish(ctx, []reconcile.Publication{a}, nil)
	p.Publish(ctx, []reconcile.Publication{b}, nil) // a pass that rebuilt b only
	if want := []string{"error", "patched", "patched"}; !slices.Equal(results, want) {
		t.Errorf("publish results = %v, want %v", results, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.2" {
		t.Errorf("pod a = %v, %v; want annotated by the retry", got, err)
	}
}
