package reconcile

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/state"
)

// BenchmarkPublications: the publications of a full pass over 30,000
// running pods on one switch. fresh: no pod carries its annotations yet (a
// first start), so every pod gets a patch; annotated: every pod carries
// them (a cluster coming from kube-ovn, or any pass after the first), so
// none does, and a full pass computes that for every port.
func BenchmarkPublications(b *testing.B) {
	const n = 30000
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	in := desired.Inputs{}
	for i := range n {
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%05d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "7"},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%250)},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	fresh := desired.Build(in, cfg, state.New(0))
	pubs := Publications(fresh)
	if len(pubs) != n {
		b.Fatalf("%d publications of %d fresh pods", len(pubs), n)
	}
	for i, p := range pubs {
		pod := *in.Pods[i]
		if pod.Name != p.Name {
			b.Fatalf("publication %d is %s's, want %s's", i, p.Name, pod.Name)
		}
		pod.Annotations = p.Annotations()
		in.Pods[i] = &pod
	}
	annotated := desired.Build(in, cfg, state.New(0))
	if got := Publications(annotated); len(got) != 0 {
		b.Fatalf("%d publications of annotated pods, want none: %+v", len(got), got[0])
	}
	for _, c := range []struct {
		name string
		r    desired.Result
	}{{"fresh", fresh}, {"annotated", annotated}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Publications(c.r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/port")
			// What the publications hold while their patches wait.
			before := liveheap.Bytes()
			kept := Publications(c.r)
			b.ReportMetric(float64(liveheap.Bytes()-before)/n, "kept-B/port")
			runtime.KeepAlive(kept)
		})
	}
}
